#!/usr/bin/python3
"""The collector's times keep CLOCK_MONOTONIC's pace: clock_drift_test.py PERFSIFT APP WORK_DIR

Collects tests/apps/clock_drift on 2 ranks for 3 s: every 50 ms a rank reads
CLOCK_MONOTONIC on both sides of an MPI_Barrier on MPI_COMM_SELF. The store's entry of
each such call minus the reading before it is one constant per rank (the store's origin,
the rank's offset, the wrapper's own cost) plus noise; its slope over the run is the
tick-to-time conversion's error. Known answer: under 0.2 us a second on every rank
(conversion errors of a microsecond a second read as clocks disagreeing by tens of us
on a 30 s run).

PERFSIFT_TEST_CLOCK_SKEW=0:0 restarts the clock's origin just before the start-up clock
measurement, so the first tick rate the collector can measure spans milliseconds: a
conversion that kept it for the run would be off by tens of us a second.
"""
import sys
from pathlib import Path

import h5py
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/
import harness  # noqa: E402

MAX_SLOPE_NS_PER_S = 200


def slope(t, y):
    """Theil-Sen: the median of the slopes between samples at least 0.5 s apart (a call a
    descheduled rank made late moves one sample, not the estimate)."""
    s = [(y[j] - y[i]) / (t[j] - t[i]) for i in range(len(t)) for j in range(i + 1, len(t)) if t[j] - t[i] > 0.5]
    return float(np.median(s))


def main(perfsift_binary, app, work):
    work = harness.work_dir(work)
    perfsift = harness.Perfsift(perfsift_binary)
    store, prefix = work / "drift.h5", work / "readings"
    perfsift.collect(store, 2, app, prefix, 3, out=work / "collect.txt", err=harness.STDOUT,
                     env={"PERFSIFT_TEST_CLOCK_SKEW": "0:0"})
    errors = []
    with h5py.File(store, "r") as f:
        ops = [o.decode() for o in f["ops"][:]]
        off = f["events_offsets"][:]
        for r in range(2):
            ev = f["events"][off[r] : off[r + 1]]
            readings = np.loadtxt(f"{prefix}.{r}", dtype=np.int64)
            calls = ev[ev["op"] == ops.index("MPI_Barrier")][: len(readings)]
            # The first calls pay for lazy set-up (the wrapper's and MPI's): left out.
            shift = (calls["t_enter"] - readings[:, 0]).astype(float)[3:]
            t = (readings[3:, 0] - readings[3, 0]) * 1e-9
            s = slope(t, shift)
            print(f"rank {r}: {len(shift)} calls over {t[-1]:.2f} s, store minus CLOCK_MONOTONIC moves {s:+.1f} ns/s "
                  f"(10-90 % spread {np.percentile(shift, 90) - np.percentile(shift, 10):.0f} ns)")
            if abs(s) > MAX_SLOPE_NS_PER_S:
                errors.append(f"rank {r}: the store's times drift {s:+.1f} ns/s from CLOCK_MONOTONIC "
                              f"(at most {MAX_SLOPE_NS_PER_S})")
    return harness.verdict(errors)


if __name__ == "__main__":
    harness.run_script(main, 3, __doc__)
