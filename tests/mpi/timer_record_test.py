#!/usr/bin/python3
"""The store records the collector's timer and its cost: timer_record_test.py PERFSIFT APP WORK_DIR

Collects tests/apps/halo_open_ends on 2 ranks. Known answer: the store names the timer
the collector chose at start-up, the time-stamp counter exactly where this machine's
counter is invariant (CPU flags constant_tsc and nonstop_tsc) and the kernel vouches for
it (clocksource tsc, or the flag tsc_reliable), a clock_gettime clock elsewhere; with a
positive cost per read and per recorded call, which `perfsift info` prints.
"""
import json
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/
import harness  # noqa: E402

TSC_TIMERS = {"rdtsc", "rdtscp", "lfence+rdtsc"}
CLOCK_TIMERS = {"clock_gettime(CLOCK_MONOTONIC)", "clock_gettime(CLOCK_MONOTONIC_RAW)"}


def tsc_usable():
    flags = next((line.split() for line in open("/proc/cpuinfo") if line.startswith("flags")), [])
    source = Path("/sys/devices/system/clocksource/clocksource0/current_clocksource")
    vouched = (source.exists() and source.read_text().split() == ["tsc"]) or "tsc_reliable" in flags
    return "constant_tsc" in flags and "nonstop_tsc" in flags and vouched


def main(perfsift_binary, app, work):
    work = harness.work_dir(work)
    perfsift = harness.Perfsift(perfsift_binary)
    store = work / "halo.h5"
    perfsift.collect(store, 2, app, 20, out=work / "collect.txt", err=harness.STDOUT)
    timer = json.loads(perfsift("info", store, "--json", out=harness.CAPTURE).stdout).get("timer")
    text = perfsift("info", store, out=harness.CAPTURE).stdout
    print(f"timer: {timer}")
    errors = []
    if not timer:
        return harness.verdict([f"perfsift info --json: no timer recorded ({timer})"])
    expected = TSC_TIMERS if tsc_usable() else CLOCK_TIMERS
    if timer["name"] not in expected:
        errors.append(f"timer {timer['name']}, expected one of {sorted(expected)} on this machine")
    for key in ("read_ns", "collector_call_ns"):
        value = timer.get(key)
        if not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
            errors.append(f"timer {key} = {value}, expected a positive number of ns")
    line = next((line for line in text.splitlines() if line.strip().startswith("timer")), "")
    if timer["name"] not in line or "a read" not in line or "a call" not in line:
        errors.append(f"perfsift info does not say what a call cost:\n{text}")
    return harness.verdict(errors)


if __name__ == "__main__":
    harness.run_script(main, 3, __doc__)
