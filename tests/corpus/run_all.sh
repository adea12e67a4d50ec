#!/usr/bin/env bash
# run_all.sh [PERFSIFT [WORK_DIR [CASE...]]]: the whole real-application corpus
# (docs/corpus.md). Installs the Debian packages its applications come in
# (PERFSIFT_CORPUS_PACKAGES in jobs/deps.sh; as root, else it prints the apt-get line),
# builds perfsift when no PERFSIFT is given, then runs every case (or the CASEs named)
# through corpus.py and writes the corpus table to WORK_DIR/table.md.
# Also: cmake --build build --target corpus.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../../jobs/deps.sh
source "$here/../../jobs/deps.sh"
if [ $# -ge 1 ]; then
  perfsift_ensure_deps "${PERFSIFT_CORPUS_PACKAGES[@]}"
  perfsift_mpi_env
  perfsift=$1
  shift
else
  perfsift_prepare  # packages, MPI environment, build
  perfsift_ensure_deps "${PERFSIFT_CORPUS_PACKAGES[@]}"
  perfsift=$PERFSIFT_BUILD/pipeline/perfsift
fi
work=${1:-$(dirname "$perfsift")/../tests/corpus/work}
shift || true
cases=("$@")
[ ${#cases[@]} -gt 0 ] || cases=(lammps_melt lammps_melt_4 lammps_unbalanced hpcc qe_si netpipe meep)
mkdir -p "$work"
exec /usr/bin/python3 "$here/corpus.py" "$perfsift" "$work" "${cases[@]}" --table "$work/table.md"
