# Sourced by tests/sanitize/run.sh (and by hand before running ctest in a sanitized
# build): how ASan, LSan and UBSan report. Every finding fails the process that has it.
PERFSIFT_SANITIZE_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# abort_on_error=0: an error exits with code 1 (no core dump); the report names the place.
# fast_unwind_on_malloc=0: Open MPI's libraries have no frame pointers, so only the slow
# unwinder sees them in an allocation's stack and lsan.supp can tell their leaks from ours.
export ASAN_OPTIONS="detect_leaks=1:fast_unwind_on_malloc=0:abort_on_error=0:detect_odr_violation=0:strict_init_order=1:check_initialization_order=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export LSAN_OPTIONS="suppressions=$PERFSIFT_SANITIZE_DIR/lsan.supp:print_suppressions=0${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
