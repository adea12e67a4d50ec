# Sourced by the benchmark scripts: Open MPI as root and oversubscribed, a work folder
# ($dir: PERFSIFT_BENCH_DIR, kept between runs, else a temporary one removed at exit), and
# wall-clock helpers (start=$(now); ... $(since "$start") prints the seconds since).
export OMPI_MCA_rmaps_base_oversubscribe=1
[ "$(id -u)" = 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
dir=${PERFSIFT_BENCH_DIR:-$(mktemp -d)}
mkdir -p "$dir"
[ -n "${PERFSIFT_BENCH_DIR:-}" ] || trap 'rm -rf "$dir"' EXIT
now() { date +%s.%N; }
since() { awk -v s="$1" -v e="$(now)" 'BEGIN{printf "%.2f", e-s}'; }
