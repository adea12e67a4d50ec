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
bad=()
for f in "${files[@]}"; do
  "$fmt" --style=file "$f" | cmp -s - "$f" || bad+=("$f")
done
if [ ${#bad[@]} -gt 0 ]; then
  printf 'check_format: not formatted: %s\n' "${bad[@]}"
  echo "check_format: fix with: clang-format -i ${bad[*]}"
  exit 1
fi
echo "check_format: ${#files[@]} files formatted ($("$fmt" --version | head -1))"
