#!/usr/bin/env bash
# Sourced by the README's commands: makes sure the Debian 12 packages perfsift needs
# are installed. As root it installs what is missing; otherwise it prints the exact
# apt-get line and stops.
PERFSIFT_DEBIAN_PACKAGES=(
  build-essential cmake gfortran python3 pkg-config binutils
  openmpi-bin libopenmpi-dev libhdf5-openmpi-dev hdf5-tools
  libpapi-dev papi-tools libeigen3-dev libboost-serialization-dev
  libtomlplusplus-dev libcli11-dev libgtest-dev libbenchmark-dev
  python3-h5py python3-pandas time zlib1g-dev libopen-trace-format2-dev otf2-tools chromium clang-format git
)
# Only for the MPICH build (README: "Choosing the MPI"; CI: tests/mpich/run.sh). They install
# beside Open MPI's; Debian's alternatives keep mpicc, mpirun and h5pcc Open MPI's.
PERFSIFT_MPICH_PACKAGES=(mpich libmpich-dev libhdf5-mpich-dev)
# Only for tests/fuzz/run_fuzzers.sh (not CI): clang with libFuzzer, ASan and UBSan, and its OpenMP.
PERFSIFT_FUZZ_PACKAGES=(clang libclang-rt-14-dev libomp-dev)
# Only for the real-application corpus (tests/corpus/run_all.sh, docs/corpus.md): Debian's
# MPI applications and their example inputs. CI runs the cases whose packages are present.
PERFSIFT_CORPUS_PACKAGES=(lammps lammps-examples hpcc quantum-espresso quantum-espresso-data netpipe-openmpi meep-openmpi)

# Extra packages may follow: perfsift_ensure_deps "${PERFSIFT_FUZZ_PACKAGES[@]}" (or the corpus's).
perfsift_ensure_deps() {
  local missing=()
  for p in "${PERFSIFT_DEBIAN_PACKAGES[@]}" "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "$(id -u)" = 0 ]; then
    echo "perfsift: installing ${missing[*]}" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  else
    echo "perfsift: missing Debian packages. Run as root:" >&2
    echo "  apt-get update && apt-get install -y --no-install-recommends ${missing[*]}" >&2
    exit 1
  fi
}

# Open MPI refuses root and more ranks than cores unless told; CI and containers run as root.
perfsift_mpi_env() {
  if [ "$(id -u)" = 0 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  fi
  export OMPI_MCA_rmaps_base_oversubscribe=1
}

# The test drivers' MPI environment (tests/harness.py sets the same for the Python ones):
# also, ranks that wait yield the core, so that the sleeping and computing ranks of an
# oversubscribed test keep their pace.
perfsift_test_mpi_env() {
  perfsift_mpi_env
  export OMPI_MCA_mpi_yield_when_idle=1
}

perfsift_build() {
  local src=$1 build=$2
  # PERFSIFT_CMAKE_ARGS: extra settings, e.g. -DPERFSIFT_WERROR=ON (CI)
  # shellcheck disable=SC2086
  cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo ${PERFSIFT_CMAKE_ARGS:-} >/dev/null
  cmake --build "$build" -j"$(nproc)"
}

# What both README commands do first: packages, MPI environment, build.
# Sets PERFSIFT_ROOT and PERFSIFT_BUILD (default ROOT/build, or $PERFSIFT_BUILD_DIR).
perfsift_prepare() {
  PERFSIFT_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  PERFSIFT_BUILD=${PERFSIFT_BUILD_DIR:-$PERFSIFT_ROOT/build}
  perfsift_ensure_deps
  perfsift_mpi_env
  perfsift_build "$PERFSIFT_ROOT" "$PERFSIFT_BUILD"
}
