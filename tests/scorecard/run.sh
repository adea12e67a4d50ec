#!/bin/sh
# The full scorecard: N generated cases (default 60) from seed S (default 1000), the table
# of verdicts and precision/recall per kind. BUILD: the build directory (default build).
# usage: tests/scorecard/run.sh [N [S]]
set -e
here=$(cd "$(dirname "$0")" && pwd)
build=${BUILD:-$here/../../build}
n=${1:-60}
seed=${2:-1000}
cmake --build "$build" --target perfsift scorecard_apps >/dev/null
exec /usr/bin/python3 "$here/scorecard.py" --perfsift "$build/pipeline/perfsift" --apps "$build/tests/scorecard/apps" \
  --work "$build/tests/scorecard/full" --cases "$n" --seed "$seed" --json "$build/tests/scorecard/full/verdicts.json"
