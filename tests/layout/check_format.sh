#!/usr/bin/env bash
# Every C and C++ file of the repository is formatted by .clang-format (clang-format 14,
# Debian 12's). Prints the files that differ and how to fix them.
set -euo pipefail
root=${1:?usage: check_format.sh SOURCE_ROOT}
cd "$root"
fmt=$(command -v clang-format-14 || command -v clang-format || true)
if [ -z "$fmt" ]; then
  echo "check_format: clang-format is not installed (apt-get install clang-format)"; exit 1
fi
mapfile -t files < <(git ls-files '*.c' '*.cpp' '*.h' 2>/dev/null || find collect io config kernels pipeline tests bench -name '*.[ch]' -o -name '*.cpp')
# The files in batches on every core: one clang-format process a file is most of the time.
mapfile -t bad < <(printf '%s\0' "${files[@]}" | xargs -0 -n 16 -P "$(nproc)" sh -c \
  'for f; do "$0" --style=file "$f" | cmp -s - "$f" || echo "$f"; done' "$fmt" | sort)
if [ ${#bad[@]} -gt 0 ]; then
  printf 'check_format: not formatted: %s\n' "${bad[@]}"
  echo "check_format: fix with: clang-format -i ${bad[*]}"
  exit 1
fi
echo "check_format: ${#files[@]} files formatted ($("$fmt" --version | head -1))"
