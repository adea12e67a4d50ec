#!/usr/bin/python3
"""The round trip of a measured run through `perfsift export --format otf2`: test apps
collected under real mpirun, each trace store exported as an OTF2 archive laid out as
Score-P writes one, the archive read whole by otf2-print, then `perfsift analyze` of the
store and of the archive give the same findings. Also: hostile region names, the PAPI
counters of a profile, threads, and damaged stores (one line, no archive).

usage: export_test.py PERFSIFT APPS_DIR HOSTILE_APP WRITE_ARCHIVES WORK_DIR

APPS_DIR holds the tests/apps programs (app_late_sender, ...). The work directory is
emptied first and every command runs inside it. Debian's /usr/bin/python3 (h5py).

Tolerances: every event's enter and exit time comes back to within 1 us (the clock offsets
are written as Score-P does and applied by the OTF2 reader: a few ns of rounding); the
wait-state totals per pattern and rank to within 1 ms; counts (calls, messages, findings'
kinds, places and ranks) exactly.
"""
import glob
import os
import shutil
import sys
import unittest
from pathlib import Path

import h5py

from otf2_common import (ARGS, analyze, assert_same_findings, events, findings, perfsift, perfsift_lines, streams,
                         text)

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import harness  # noqa: E402  tests/harness.py

# app -> ranks. late_sender: point-to-point waiting; master_worker: wildcard receives and
# a master bottleneck; families: every send mode, Isend/Irecv/Wait/Test, Sendrecv,
# collectives; hostile: region names of any bytes.
NONBLOCKING_COLLECTIVES = {"MPI_Ibarrier", "MPI_Ibcast", "MPI_Ireduce", "MPI_Iallreduce", "MPI_Igather",
                           "MPI_Iscatter", "MPI_Iallgather", "MPI_Ialltoall"}
APPS = {"late_sender": 2, "master_worker": 3, "families": 4, "hostile": 2}


def places(report, n=3):
    """Where the first n problems are and where their evidence and symptoms (the waiting a
    problem causes, e.g. a master-worker's Late Sender at its call site) are, as one string."""
    out = []
    for f in report["findings"][:n]:
        out += [f["where"]] + [e["where"] for e in f.get("evidence", []) + f.get("symptoms", [])]
    return " ".join(out)


def call_sites(store):
    """The call sites the store's calls name: {(function, function offset, file, line)}."""
    with h5py.File(store, "r") as f:
        c = f["callsites"]
        if not c["line"].shape or not c["line"].shape[0]:  # none (an empty dataset)
            return set()
        rows = list(zip((text(x) for x in c["function"][...]), (int(x) for x in c["function_offset"][...]),
                        (text(x) for x in c["file"][...]), (int(x) for x in c["line"][...])))
        return {rows[int(e["callsite"])] for e in f["events"][...] if 0 <= int(e["callsite"]) < len(rows)}


def sited_calls(store):
    """How many calls name a call site."""
    with h5py.File(store, "r") as f:
        n = f["callsites/line"].shape[0] if f["callsites/line"].shape else 0
        return sum(1 for e in f["events"][...] if 0 <= int(e["callsite"]) < n)


def messages(report):
    return sum(m["messages"] for m in report["profile"]["messages"])


def collect(app, ranks, exe):
    store = f"{app}.h5"
    streams([ARGS["perfsift"], "collect", "-o", store, "--", "mpirun", "-n", ranks, exe])
    return store


def export(store, out):
    """perfsift export STORE --format otf2 -o OUT; its warnings."""
    _, err = perfsift("export", store, "--format", "otf2", "-o", out)
    return [l for l in perfsift_lines(err) if "warning" in l]


class ExportTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.stores = {}
        for app, ranks in APPS.items():
            exe = ARGS["hostile"] if app == "hostile" else os.path.join(ARGS["apps"], f"app_{app}")
            cls.stores[app] = collect(app, ranks, exe)

    def round_trip(self, app, import_warning=None, has_findings=True):
        """Export, otf2-print, import, analyse store and archive: the same calls, call
        sites, top three findings (kind, where with the call site, ranks; time at stake to
        1 ms), messages and wait states per rank."""
        store = self.stores[app]
        warnings = export(store, f"{app}-otf2")
        self.assertLessEqual(len(warnings), 1, warnings)  # what is not written: one line
        anchor = f"{app}-otf2/traces.otf2"
        self.assertTrue(os.path.isfile(anchor))
        self.assertEqual(glob.glob(f"{app}-otf2.tmp-*"), [], "no temporary directory left")
        if shutil.which("otf2-print"):
            streams(["otf2-print", "--silent", "-Werror", anchor])  # valid, without a warning
            out, _ = streams(["otf2-print", anchor])
            ev = events(store)
            sends = sum(1 for r in ev for e in r if e[0] in ("MPI_Send", "MPI_Ssend", "MPI_Bsend", "MPI_Rsend")
                        and e[3] >= 0)
            self.assertGreaterEqual(out.count("\nMPI_SEND "), sends, anchor)
            out, _ = streams(["otf2-print", "-G", anchor])
            for want in ("COMM_LOCATIONS", "MPI_COMM_WORLD", "CLOCK_PROPERTIES", "MPI Rank 1"):
                self.assertTrue(want in out, want)
            # call sites: an attribute of type SOURCE_CODE_LOCATION (file, line) and the
            # function, module and offsets on each MPI call's Enter
            if call_sites(store):
                for want in ('Name: "perfsift::call_site" <', 'Type: SOURCE_CODE_LOCATION\n', "\nSOURCE_CODE_LOCATION ",
                             'Name: "perfsift::call_site_function" <'):
                    self.assertTrue(want in out, want)
                out, _ = streams(["otf2-print", anchor])
                sited = out.count('ADDITIONAL ATTRIBUTES: ("perfsift::call_site" <0>; SOURCE_CODE_LOCATION; "')
                self.assertGreater(sited, 0)
                self.assertRegex(out, r'SOURCE_CODE_LOCATION; "[^"]*\.c:[0-9]+" <')
        # The archive imports without loss of what the analysis reads: the same calls,
        # times (1 us), partners, tags, sizes, regions.
        _, err = perfsift("import", anchor, "-o", f"{app}-back.h5")
        lines = perfsift_lines(err)
        if import_warning:
            self.assertEqual(len(lines), 1, err)
            self.assertIn(import_warning, lines[0])
        else:
            self.assertEqual(lines, [], "the archive imports whole")
        a, b = events(store), events(f"{app}-back.h5")
        self.assertEqual([[e[0] for e in r] for r in a], [[e[0] for e in r] for r in b])
        # a receive posted for MPI_ANY_SOURCE (-2): OTF2 records no posted source, the
        # import gives the matched one (docs/otf2.md)
        posted = lambda e, o: o[3] if e[3] == -2 and e[0].startswith("MPI_I") else e[3]
        # calls whose partner the export's warning names as not written (MPI_Probe, ...),
        # and nonblocking collectives when the import says it does not map their records
        lossy = set()
        for w in warnings:
            if "without an OTF2 record for them (" in w:
                lossy |= set(w.split("without an OTF2 record for them (")[1].split(")")[0].split(", "))
        keep = lambda e: e[0] not in lossy and not (import_warning and e[0] in NONBLOCKING_COLLECTIVES)
        self.assertEqual([[(posted(e, o), e[4], e[5], e[6]) for e, o in zip(r, q) if keep(e)] for r, q in zip(a, b)],
                         [[(e[3], e[4], e[5], e[6]) for e in r if keep(e)] for r in b])
        for ra, rb in zip(a, b):
            for ea, eb in zip(ra, rb):
                self.assertAlmostEqual(ea[1], eb[1], delta=1000)
                self.assertAlmostEqual(ea[2], eb[2], delta=1000)
        self.assertEqual(call_sites(store), call_sites(f"{app}-back.h5"))
        self.assertEqual(sited_calls(store), sited_calls(f"{app}-back.h5"))
        # The same findings from the store and from the archive.
        orig = analyze(store, f"{app}-orig")
        back = analyze(anchor, f"{app}-archive")
        print(f"\n{app}: store:  ", findings(orig), f"\n{app}: archive:", findings(back))
        if has_findings:
            self.assertTrue(orig["findings"], "the app has a problem to find")
        assert_same_findings(self, orig, back)
        self.assertEqual(messages(orig), messages(back))
        for pattern, w in orig["waitstates"].items():
            if isinstance(w, dict) and "by_rank" in w:
                for x, y in zip(w["by_rank"], back["waitstates"][pattern]["by_rank"]):
                    self.assertAlmostEqual(x, y, delta=0.001, msg=pattern)
        self.assertEqual(orig["run"]["ranks"], back["run"]["ranks"])
        self.assertEqual(glob.glob("*otf2-import*"), [])
        return orig, back

    def test_late_sender(self):
        """Late Sender on rank 0: the same findings and 4 x 50 ms of waiting."""
        orig, back = self.round_trip("late_sender")
        self.assertGreater(orig["waitstates"]["late_sender"]["by_rank"][0], 0.15)

    def test_master_worker(self):
        """Wildcard receives at the master: the same top three findings, the Late Sender
        ones (the master-worker problem's symptoms, or problems of their own) at their call sites (`(program) > main (master_worker.c:26)`), messages and
        Late Sender waiting."""
        orig, back = self.round_trip("master_worker")
        self.assertIn("(master_worker.c:", places(orig))

    def test_call_sites_without_perfsift_attributes(self):
        """An archive whose calls carry a source location under another attribute name (as
        another tool might write one): findings name file:line (the function is the
        enclosing region's, here none: '?'). An archive without call-site attributes
        (written as Score-P writes one without unwinding): '(no call site)'."""
        if "master_worker" not in self.stores:
            self.skipTest("no store")
        export(self.stores["master_worker"], "other-otf2")
        definitions = Path("other-otf2/traces.def").read_bytes()
        self.assertEqual(definitions.count(b"perfsift::call_site"), 5)
        Path("other-otf2/traces.def").write_bytes(definitions.replace(b"perfsift::call_site", b"othertool::location"))
        if shutil.which("otf2-print"):
            streams(["otf2-print", "--silent", "-Werror", "other-otf2/traces.otf2"])
        orig = analyze(self.stores["master_worker"], "other-orig")
        back = analyze("other-otf2/traces.otf2", "other-archive")
        where = lambda f: f["where"].replace(" > main (", " > ? (")  # main: the function, not a region
        assert_same_findings(self, orig, back, where)
        self.assertIn("(master_worker.c:", places(back))
        # no call-site attributes at all
        streams([ARGS["write_archives"], "plain"])
        _, err = perfsift("import", "plain/late_sender/traces.otf2", "-o", "plain.h5")
        self.assertEqual(call_sites("plain.h5"), set())
        self.assertEqual(sited_calls("plain.h5"), 0)
        report = analyze("plain/late_sender/traces.otf2", "plain")
        late = [f for f in report["findings"] + report["notes"] if f["kind"] == "late-sender"]
        self.assertTrue(late)
        self.assertTrue(all(f["where"].endswith(" > (no call site)") for f in late), late)

    def test_families(self):
        """Every send mode, nonblocking requests with their completions and tests,
        Sendrecv, collectives: the same findings at regions (if any: its waiting is short),
        the same wait states per rank and 40 messages matched. Its nonblocking collectives' request records are written as Score-P does;
        the import does not map them (one warning, docs/otf2.md)."""
        orig, _ = self.round_trip("families", import_warning="16 nonblocking-collective events", has_findings=None)
        self.assertEqual(messages(orig), 40)
        warning = export("families.h5", "families-otf2-again")[0]
        for what in ("MPI_Probe", "MPI_Send_init", "wildcard marks of receives"):
            self.assertIn(what, warning)
        self.assertNotIn("call site", warning)
        with h5py.File("families.h5", "r") as f, h5py.File("families-back.h5", "r") as g:
            # sends and receives activated (not the persistent *_init templates), cancelled ones
            ops = [text(o) for o in f["ops"][...]]
            ev, off = f["events"][...], f["events_offsets"][...]
            started = [q for q in f["requests"][...] if q["kind"] in (1, 2) and
                       not ops[ev[off[q["rank"]] + q["event"]]["op"]].endswith("_init")]
            self.assertEqual(sorted((int(q["rank"]), int(q["kind"]), int(q["tag"]), int(q["bytes"])) for q in started),
                             sorted((int(q["rank"]), int(q["kind"]), int(q["tag"]), int(q["bytes"]))
                                    for q in g["requests"][...]))
            self.assertEqual(sum(int(c["cancelled"]) for c in f["completions"]),
                             sum(int(c["cancelled"]) for c in g["completions"]))
            test = lambda h: sum(1 for e in h["events"] if e["flags"] & 8)  # calls that completed nothing
            self.assertEqual(test(f), test(g))

    def test_hostile_region_names(self):
        """Region names with spaces, quotes, slashes, a backslash and UTF-8 bytes come back
        byte for byte; the finding names the same region path."""
        self.round_trip("hostile")
        with h5py.File("hostile.h5", "r") as f, h5py.File("hostile-back.h5", "r") as g:
            self.assertEqual(sorted(bytes(n) for n in f["regions/name"]), sorted(bytes(n) for n in g["regions/name"]))
            self.assertEqual(sorted(bytes(n) for n in f["regions/path"]), sorted(bytes(n) for n in g["regions/path"]))
            names = [bytes(n) for n in g["regions/name"]]
            self.assertIn("k\u00e9rnel \u2713 \\ a/b \"q\"".encode(), names)
            self.assertIn(b"outer loop / \"phase\" 'one'", names)

    def test_counters(self):
        """Stores imported from Score-P-style archives (this machine has no PAPI counters):
        one with a PAPI counter in its profile, one whose times the archive's ClockOffsets
        corrected (its /clocks are zero). Exported, the counter comes back per region path
        (to one count per visit), the command and host, and the times (1 us)."""
        streams([ARGS["write_archives"], "archives"])
        perfsift("import", "archives/late_sender/traces.otf2", "-o", "papi.h5")
        perfsift("import", "archives/imbalance/traces.otf2", "-o", "skew.h5")
        for store in ("papi.h5", "skew.h5"):
            export(store, f"{store}-otf2")
            perfsift("import", f"{store}-otf2/traces.otf2", "-o", f"{store}-back.h5")
            a, b = events(store), events(f"{store}-back.h5")
            self.assertEqual([[e[0] for e in r] for r in a], [[e[0] for e in r] for r in b])
            for ra, rb in zip(a, b):
                for ea, eb in zip(ra, rb):
                    self.assertAlmostEqual(ea[1], eb[1], delta=1000)
                    self.assertAlmostEqual(ea[2], eb[2], delta=1000)
        if shutil.which("otf2-print"):
            out, _ = streams(["otf2-print", "-G", "papi.h5-otf2/traces.otf2"])
            self.assertTrue("PAPI_TOT_CYC" in out)
            out, _ = streams(["otf2-print", "papi.h5-otf2/traces.otf2"])
            self.assertTrue("\nMETRIC " in out, "counter samples")
        with h5py.File("papi.h5", "r") as f, h5py.File("papi.h5-back.h5", "r") as g:
            self.assertEqual([text(c) for c in g.attrs["counters_recorded"]], ["PAPI_TOT_CYC"])
            pf = dict(zip((text(p) for p in f["regions/path"]), f["profile/PAPI_TOT_CYC"][...].T))
            pg = dict(zip((text(p) for p in g["regions/path"]), g["profile/PAPI_TOT_CYC"][...].T))
            visits = dict(zip((text(p) for p in f["regions/path"]), f["profile/visits"][...].T))
            self.assertEqual(sorted(pf), sorted(pg))
            for path, row in pf.items():
                for r, (x, y) in enumerate(zip(row, pg[path])):
                    self.assertAlmostEqual(x, y, delta=1 + visits[path][r], msg=f"{path} rank {r}")
            self.assertEqual(text(f.attrs["command"]), text(g.attrs["command"]))
            self.assertEqual(text(f.attrs["hosts"]), text(g.attrs["hosts"]))

    def test_clock_skew(self):
        """Ranks whose clocks run apart (the collector's test skew: 5 ms and 50 ppm per
        rank): the archive holds each rank's raw clock with its offsets as ClockOffset
        definitions; the OTF2 reader's correction gives the store's times back (1 us)."""
        store = "skew_ring.h5"
        p = harness.captured([ARGS["perfsift"], "collect", "-o", store, "--", "mpirun", "-n", "4",
                              os.path.join(ARGS["apps"], "app_ring")], env={"PERFSIFT_TEST_CLOCK_SKEW": "5000000:50"})
        self.assertEqual(p.returncode, 0, p.stderr)
        with h5py.File(store, "r") as f:
            offsets = [int(c["offset_init_ns"]) for c in f["clocks"][...]]
        self.assertGreater(max(abs(o) for o in offsets), 1000000, "the clocks are skewed by milliseconds")
        export(store, "skew-otf2")
        if shutil.which("otf2-print"):
            out, _ = streams(["otf2-print", "-C", "skew-otf2/traces.otf2"])
            rank3 = [l.split("Offset: ")[1].split(",")[0] for l in out.splitlines()
                     if l.startswith("CLOCK_OFFSET") and l.split()[1] == "3"]
            self.assertGreaterEqual(len(rank3), 2, "rank 3's clock offsets (init and finalize)")
            self.assertTrue(all(abs(int(o)) > 1000000 for o in rank3), rank3)
            streams(["otf2-print", "--silent", "-Werror", "skew-otf2/traces.otf2"])
        _, err = perfsift("import", "skew-otf2/traces.otf2", "-o", "skew-back.h5")
        self.assertEqual(perfsift_lines(err), [])
        a, b = events(store), events("skew-back.h5")
        self.assertEqual([[e[0] for e in r] for r in a], [[e[0] for e in r] for r in b])
        for ra, rb in zip(a, b):
            for ea, eb in zip(ra, rb):
                self.assertAlmostEqual(ea[1], eb[1], delta=1000)
                self.assertAlmostEqual(ea[2], eb[2], delta=1000)

    def test_crashed_run(self):
        """A run whose rank 1 dies (tests/apps/crash.c; the collector recovers the store,
        ranks 0, 2, 3 end inside a call): the archive leaves their calls open, with the
        measurement switched off at the time of death; the import marks the same ranks
        truncated and the same calls interrupted, with their durations."""
        p = harness.captured([ARGS["perfsift"], "collect", "-o", "crash.h5", "--", "mpirun", "-n", "4",
                              os.path.join(ARGS["apps"], "app_crash")])
        self.assertNotEqual(p.returncode, 0)
        self.assertTrue(os.path.isfile("crash.h5"), p.stderr)
        warnings = export("crash.h5", "crash-otf2")
        self.assertEqual(len(warnings), 1)
        self.assertIn("ranks without data", warnings[0])
        if shutil.which("otf2-print"):
            streams(["otf2-print", "--silent", "crash-otf2/traces.otf2"])
        _, err = perfsift("import", "crash-otf2/traces.otf2", "-o", "crash-back.h5")
        self.assertIn("measurement on/off markers", err)

        def died(store):
            with h5py.File(store, "r") as f:
                truncated = sorted(int(r) for r in f.attrs["truncated_ranks"])
                ev = f["events"][...]
                return truncated, [(int(e["rank"]), int(e["t_exit"] - e["t_enter"])) for e in ev if e["flags"] & 64]

        (ta, ia), (tb, ib) = died("crash.h5"), died("crash-back.h5")
        self.assertEqual(ta, tb)
        self.assertTrue(ia)
        self.assertEqual([r for r, _ in ia], [r for r, _ in ib])
        for (_, x), (_, y) in zip(ia, ib):
            self.assertAlmostEqual(x, y, delta=1000)

    def test_threads(self):
        """A run whose ranks call MPI from three threads: one location per thread in each
        rank's location group; the import reads thread 0 and names the others' events."""
        store = collect("threads", 2, os.path.join(ARGS["apps"], "app_hybrid_threads"))
        export(store, "threads-otf2")
        out, _ = streams(["otf2-print", "-G", "threads-otf2/traces.otf2"]) if shutil.which("otf2-print") else ("", "")
        if out:
            self.assertTrue("Pthread thread 2" in out)
        _, err = perfsift("import", "threads-otf2/traces.otf2", "-o", "threads-back.h5")
        self.assertIn("events of threads besides each rank's first", err)
        with h5py.File(store, "r") as f:
            thread = f["events_thread"][...]
            main = sum(1 for t in thread if t == 0)
        self.assertEqual(sum(len(r) for r in events("threads-back.h5")), main)

    def test_damaged_stores(self):
        """A truncated store, a store with a damaged chunk of /events, a results store
        exported as a measured run, an output directory that does not exist: one line naming
        the file and the fix, exit 2, no archive and no temporary directory."""
        src = self.stores["families"]
        size = os.path.getsize(src)
        shutil.copy(src, "trunc.h5")
        with open("trunc.h5", "r+b") as fh:
            fh.truncate(size * 2 // 3)
        shutil.copy(src, "chunk.h5")
        with h5py.File("chunk.h5", "r") as f:
            info = f["events"].id.get_chunk_info(0)
        with open("chunk.h5", "r+b") as fh:
            fh.seek(info.byte_offset + 8)
            fh.write(b"\xde\xad\xbe\xef" * 16)
        cases = (("trunc.h5", "trunc.h5: HDF5 cannot open it"), ("chunk.h5", "chunk.h5:"))
        for store, says in cases:
            _, err = perfsift("export", store, "--format", "otf2", "-o", "broken", expect=2)
            lines = [l for l in err.splitlines() if l.strip()]
            self.assertEqual(len(lines), 1, err)
            self.assertIn(says, lines[0])
            self.assertFalse(os.path.exists("broken"), "no archive")
            self.assertEqual(glob.glob("broken.tmp-*"), [], "no temporary directory")
        _, err = perfsift("export", src, "--format", "otf2", "-o", "nodir/x", expect=2)
        self.assertEqual(perfsift_lines(err), ["perfsift: nodir/x: the directory nodir does not exist; "
                                               "create it or choose another -o"])
        _, err = perfsift("export", src, "--format", "chrome", "-o", "x.json", expect=2)
        self.assertEqual(len(perfsift_lines(err)), 1, err)
        self.assertIn("--format otf2", err)
        # A directory of the user's is never replaced.
        os.mkdir("mine")
        Path("mine/notes.txt").write_text("keep me\n")
        _, err = perfsift("export", src, "--format", "otf2", "-o", "mine", expect=2)
        self.assertIn("holds other files than an OTF2 archive (notes.txt)", err)
        self.assertEqual(Path("mine/notes.txt").read_text(), "keep me\n")
        # ... nor the current directory; a previous archive is replaced (a trailing / is the same)
        _, err = perfsift("export", src, "--format", "otf2", "-o", ".", expect=2)
        self.assertIn("name a new directory", err)
        export(src, "again/")
        Path("again/traces/stale.evt").write_text("from before\n")
        export(src, "again")
        self.assertFalse(os.path.exists("again/traces/stale.evt"))
        self.assertTrue(os.path.isfile("again/traces.otf2"))
        self.assertEqual(glob.glob("again.*"), [])


def main(argv):
    if len(argv) != 6:
        print(__doc__, file=sys.stderr)
        return 2
    ARGS.update(perfsift=os.path.abspath(argv[1]), apps=os.path.abspath(argv[2]), hostile=os.path.abspath(argv[3]),
                write_archives=os.path.abspath(argv[4]))
    os.chdir(harness.work_dir(argv[5]))
    result = unittest.main(argv=[argv[0], "-v"], exit=False).result
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
