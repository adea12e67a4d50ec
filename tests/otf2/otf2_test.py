#!/usr/bin/python3
"""OTF2 input: archives laid out as Score-P writes them (written by write_archives), checked
with otf2-print, imported and analysed; broken archives; a results store's predicted trace
through `perfsift export --format otf2` and back. (The round trip of trace stores, findings
and all, is export_test.py.)

usage: otf2_test.py PERFSIFT WRITE_ARCHIVES WORK_DIR MEASURED_STORE

The work directory is emptied first and every command runs inside it. Debian's
/usr/bin/python3 (h5py).
"""
import glob
import os
import shutil
import sys
import unittest
from pathlib import Path

import h5py

from otf2_common import ARGS, analyze, events, perfsift, perfsift_lines, streams, text
from otf2_common import findings as top

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import harness  # noqa: E402  tests/harness.py

class Otf2Test(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        streams([ARGS["write_archives"], "archives"])
        cls.late = "archives/late_sender/traces.otf2"
        cls.imbalance = "archives/imbalance/traces.otf2"

    def test_archives_are_valid_otf2(self):
        """otf2-print reads the test archives whole (they are valid OTF2)."""
        if not shutil.which("otf2-print"):
            self.skipTest("otf2-print not installed")
        for a, sends, recvs in ((self.late, 4 + 2, 4 + 2), (self.imbalance, 0, 0)):
            out, _ = streams(["otf2-print", a])
            self.assertEqual(out.count("\nMPI_SEND "), sends, a)
            self.assertEqual(out.count("\nMPI_RECV "), recvs, a)
        out, _ = streams(["otf2-print", "-G", self.late])
        for want in ("COMM_LOCATIONS", "MPI_COMM_WORLD", "PAPI_TOT_CYC", "MPI Rank 1"):
            self.assertIn(want, out)

    def test_import_late_sender(self):
        """The late-sender archive: ranks, one event per MPI call with its times in ns,
        peers, tags, bytes, requests and completions, the region tree by call path
        (a name with '/' and quotes), the PAPI counter in the profile, the run's facts;
        one warning naming what is not mapped (the second thread, the OpenMP fork)."""
        out, err = perfsift("import", self.late, "-o", "late.h5")
        self.assertIn("late.h5: 2 ranks, 27 MPI calls", out)
        warnings = perfsift_lines(err)
        self.assertEqual(len(warnings), 1, err)
        self.assertIn("not mapped:", warnings[0])
        self.assertIn("4 events of threads besides each rank's first", warnings[0])
        self.assertIn("1 OpenMP and thread events", warnings[0])
        ev = events("late.h5")
        ops0 = [e[0] for e in ev[0]]
        ops1 = [e[0] for e in ev[1]]
        exchange = ["MPI_Irecv", "MPI_Isend", "MPI_Test", "MPI_Waitall", "MPI_Sendrecv"]
        self.assertEqual(ops0, ["MPI_Init"] + ["MPI_Recv"] * 4 + exchange +
                         ["MPI_Irecv", "MPI_Cancel", "MPI_Wait", "MPI_Barrier", "MPI_Finalize"])
        self.assertEqual(ops1, ["MPI_Init"] + ["MPI_Send"] * 4 + exchange + ["MPI_Barrier", "MPI_Finalize"])
        for e in ev[0][1:5]:  # each receive waits 50 ms + 20 us for the late sender
            self.assertEqual((e[3], e[5], e[6]), (1, 4, "main"))
            self.assertAlmostEqual((e[2] - e[1]) * 1e-9, 0.05002, delta=1e-6)
        self.assertEqual([e[4] for e in ev[1][1:5]], [0, 1, 2, 3])
        self.assertEqual(ev[0][0][1], 0)  # times count from the clock's global offset, in ns
        self.assertEqual(ev[0][0][2], 1000000)
        with h5py.File("late.h5", "r") as f:
            self.assertEqual(int(f.attrs["nranks"]), 2)
            self.assertEqual(text(f.attrs["command"]), "./app --size=1024")
            self.assertEqual(text(f.attrs["start_time"]), "2026-01-01T00:00:00Z")
            self.assertEqual(text(f.attrs["hosts"]), "node01")
            paths = [text(p) for p in f["regions/path"][...]]
            names = [text(n) for n in f["regions/name"][...]]
            self.assertIn("main/compute", paths)
            self.assertIn('main/"io/write \\"x\\""', paths)
            self.assertIn('io/write "x"', names)
            cyc = f["profile/PAPI_TOT_CYC"][...]
            compute = paths.index("main/compute")
            self.assertAlmostEqual(cyc[1][compute], 4 * 0.05e9 * 2.5, delta=1)
            wall = f["profile/wall"][...]
            self.assertAlmostEqual(wall[1][compute], 0.2, delta=1e-6)
            # Irecv posted (request), Waitall completes both; the receive's source from the completion.
            req = f["requests"][...]
            # the cancelled receive never learns its source: -2 (posted, source unknown)
            self.assertEqual(sorted((int(r["rank"]), int(r["kind"]), int(r["peer"]), int(r["bytes"])) for r in req),
                             [(0, 1, 1, 64), (0, 2, -2, 0), (0, 2, 1, 64), (1, 1, 0, 64), (1, 2, 0, 64)])
            comp = f["completions"][...]
            got = sorted((int(c["rank"]), int(c["request"]), int(c["source"]), int(c["bytes"]), int(c["cancelled"]))
                         for c in comp)
            # per rank: the Sendrecv's receive half (request -1), the Irecv (0) and the Isend (1);
            # rank 0's cancelled receive (2)
            self.assertEqual(got, [(0, -1, 1, 8, 0), (0, 0, 1, 64, 0), (0, 1, -1, 0, 0), (0, 2, -1, 0, 1),
                                   (1, -1, 0, 8, 0), (1, 0, 0, 64, 0), (1, 1, -1, 0, 0)])
            test = [e for e in f["events"][...] if text(f["ops"][e["op"]]) == "MPI_Test"]
            self.assertTrue(all(e["flags"] & 8 for e in test), "a Test that completed nothing is flagged")
        # In parallel (each process reads its block of ranks; with 3, one reads none): the same store.
        streams(["mpirun", "-n", "3", ARGS["perfsift"], "import", self.late, "-o", "late3.h5"])
        with h5py.File("late.h5", "r") as f, h5py.File("late3.h5", "r") as g:
            for table in ("events", "requests", "completions", "steps", "regions/path", "comms/key", "ops",
                          "profile/PAPI_TOT_CYC"):
                self.assertEqual(f[table][...].tobytes(), g[table][...].tobytes(), table)

    def test_analyze_late_sender(self):
        """analyze finds the Late Sender on rank 0 with 4 x 50 ms of waiting, caused by rank
        1's computation in main/compute (the problem: rank 0 never enters it, so no replay
        prices moving work there; removing rank 0's waiting alone gains nothing, a note);
        analysing the archive directly gives the same findings and leaves no temporary store."""
        perfsift("import", self.late, "-o", "late2.h5")
        d = analyze("late2.h5", "late_r")
        ls = d["waitstates"]["late_sender"]
        self.assertAlmostEqual(ls["by_rank"][0], 4 * 0.05002, delta=0.002)
        self.assertAlmostEqual(ls["by_rank"][1], 0, delta=0.002)
        f = d["findings"][0]
        self.assertEqual((f["kind"], f["where"], f["ranks"]), ("load-imbalance", "main/compute", "1"))
        self.assertIsNone(f["predicted_gain_s"])
        self.assertIn("rank 0 never enters it", f["cause"])
        n = [n for n in d["notes"] if n["kind"] == "late-sender"][0]
        self.assertEqual((n["where"], n["ranks"]), ("main > (no call site)", "0"))
        self.assertAlmostEqual(n["lost_s"], 0.2, delta=0.002)
        direct = analyze(self.late, "late_direct")
        self.assertEqual(top(direct, 10), top(d, 10))
        self.assertEqual(glob.glob("*otf2-import*"), [])

    def test_analyze_imbalance(self):
        """The imbalance archive: ranks 0-1 compute 100 ms per iteration in main/solve, ranks
        2-3 20 ms, then wait 80 ms in MPI_Allreduce: first the load imbalance of main/solve
        on ranks 0,1 (5 x 40 ms above the mean, all of it gained by balancing), then the
        wait at N x N on ranks 2,3 (5 x 80 ms each), a symptom of it: the replay of the
        balance removes that waiting. Rank 3's clock offset is applied."""
        perfsift("import", self.imbalance, "-o", "imb_store.h5")
        ev = events("imb_store.h5")
        # rank 3's clock runs 3 ms ahead; its ClockOffset records bring it onto rank 2's times
        self.assertEqual([e[1:3] for e in ev[3]], [e[1:3] for e in ev[2]])
        # the broadcast: root 1 (as world rank) on every rank; the root sends 1 KiB, the others receive it
        bcast = [[e for e in r if e[0] == "MPI_Bcast"] for r in ev]
        self.assertEqual([[(e[3], e[5]) for e in b] for b in bcast], [[(1, 1024)]] * 4)
        d = analyze(self.imbalance, "imb")
        f = d["findings"][0]
        self.assertEqual((f["kind"], f["where"], f["ranks"]), ("load-imbalance", "main/solve", "0,1"))
        self.assertAlmostEqual(f["lost_s"], 0.2, delta=0.002)
        self.assertAlmostEqual(f["predicted_gain_s"], 0.2, delta=0.005)
        g = [s for s in f["symptoms"] if s["kind"] == "wait-at-nxn"][0]
        self.assertEqual(g["ranks"], "2,3")
        self.assertAlmostEqual(g["lost_s"], 0.4, delta=0.002)
        solve = [r for r in d["profile"]["regions"] if r["path"] == "main/solve"][0]
        self.assertAlmostEqual(solve["wall_max_s"], 0.5, delta=1e-3)

    def test_killed_rank(self):
        """A rank whose records end inside MPI_Allreduce (killed): imported as truncated, its
        open call flagged as interrupted and closed at its last record; analyze says so."""
        perfsift("import", "archives/killed/traces.otf2", "-o", "killed.h5")
        streams(["mpirun", "-n", "2", ARGS["perfsift"], "import", "archives/killed/traces.otf2", "-o", "killed2.h5"])
        for store in ("killed.h5", "killed2.h5"):  # in parallel, process 1 reads rank 1
            with h5py.File(store, "r") as f:
                self.assertEqual(list(f.attrs["truncated_ranks"]), [1], store)
        last = events("killed.h5")[1][-1]
        self.assertEqual(last[0], "MPI_Allreduce")
        self.assertEqual(last[2] - last[1], 5000000)
        with h5py.File("killed.h5", "r") as f:
            rank1 = [e for e in f["events"][...] if e["rank"] == 1]
            self.assertTrue(rank1[-1]["flags"] & 64, "the open call is flagged: the rank died inside it")
            self.assertFalse(any(e["flags"] & 64 for e in rank1[:-1]))
        d = analyze("killed.h5", "killed_r")
        self.assertTrue(any("stop early" in w for w in d["warnings"]), d["warnings"])

    def test_no_mpi(self):
        """A trace without MPI calls imports with a warning saying so, and analyses."""
        _, err = perfsift("import", "archives/no_mpi", "-o", "nompi.h5")
        self.assertIn("no MPI calls in the archive", err)
        self.assertEqual([len(r) for r in events("nompi.h5")], [0])
        analyze("nompi.h5", "nompi_r")

    def test_broken_archives(self):
        """A missing .def, a truncated event file, a file that is not OTF2, a path that does
        not exist, an output directory that does not exist: one line naming the file and the
        fix, exit 2, no output (import and analyze)."""
        shutil.copytree("archives/late_sender", "nodef")
        os.remove("nodef/traces.def")
        shutil.copytree("archives/late_sender", "trunc")
        evt = "trunc/traces/1.evt"
        size = os.path.getsize(evt)
        with open(evt, "r+b") as fh:
            fh.truncate(size // 2)
        Path("garbage.otf2").write_text("this is not an OTF2 anchor file\n")
        cases = (("nodef/traces.otf2", "nodef/traces.def: missing"), ("trunc/traces.otf2", "1.evt) is truncated"),
                 ("garbage.otf2", "garbage.otf2: not an OTF2 archive"), ("absent.otf2", "absent.otf2: no such file"))
        for archive, says in cases:
            _, err = perfsift("import", archive, "-o", "broken.h5", expect=2)
            lines = [l for l in err.splitlines() if l.strip()]
            self.assertEqual(len(lines), 1, err)
            self.assertIn(says, lines[0])
            self.assertFalse(glob.glob("broken.h5*"), "no output")
            _, err = streams(["mpirun", "-n", "2", ARGS["perfsift"], "analyze", archive, "-o", "broken-r.h5"], expect=2)
            self.assertEqual(len(perfsift_lines(err)), 1, err)
            self.assertIn(says, err)
            self.assertFalse(glob.glob("broken-r.h5*"), "no output")
        # an output directory that does not exist
        for cmd in ([ARGS["perfsift"], "import", self.late, "-o", "nodir/x.h5"],
                    ["mpirun", "-n", "2", ARGS["perfsift"], "analyze", self.late, "-o", "nodir/r.h5"]):
            _, err = streams(cmd, expect=2)
            self.assertEqual(perfsift_lines(err), ["perfsift: nodir/" + cmd[-1].split("/")[-1] +
                                                   ": the directory nodir does not exist; create it or choose another -o"])


    def test_round_trip_export(self):
        """A measured store (tests/apps/late_sender under the collector), analysed, its
        *results* exported with `perfsift export --format otf2 --question measured` and
        imported: the same MPI calls per rank in the same order with the same durations (to
        1 us). That export holds Enter/Leave records only (no message records, no region
        nesting: docs/otf2.md), so its findings are not compared; the export of the trace
        store itself keeps them (export_test.py)."""
        store = ARGS["store"]
        analyze(store, "orig")
        perfsift("export", "orig.h5", "--format", "otf2", "--question", "measured", "-o", "rt")
        if shutil.which("otf2-print"):
            streams(["otf2-print", "rt/traces.otf2"])
        perfsift("import", "rt/traces.otf2", "-o", "rt.h5")
        a, b = events(store), events("rt.h5")
        self.assertEqual([len(r) for r in a], [len(r) for r in b])
        for ra, rb in zip(a, b):
            self.assertEqual([e[0] for e in ra], [e[0] for e in rb])
            for ea, eb in zip(ra, rb):
                self.assertAlmostEqual(ea[2] - ea[1], eb[2] - eb[1], delta=1000)


def main(argv):
    if len(argv) != 5:
        print(__doc__, file=sys.stderr)
        return 2
    ARGS.update(perfsift=os.path.abspath(argv[1]), write_archives=os.path.abspath(argv[2]),
                store=os.path.abspath(argv[4]))
    os.chdir(harness.work_dir(argv[3]))
    result = unittest.main(argv=[argv[0], "-v"], exit=False).result
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
