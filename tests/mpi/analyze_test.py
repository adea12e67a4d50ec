#!/usr/bin/python3
"""perfsift analyze under real mpirun, one test per mode.

usage: analyze_test.py MODE PERFSIFT WORK_DIR [STORE | APP_DIR] [MESSAGES]

MODE selects the test AnalyzeTest.test_MODE (its docstring says what it checks); the
work directory is emptied first and every command runs inside it. Run with Debian's
/usr/bin/python3, which has h5py. tests/CMakeLists.txt registers each mode as a CTest
test (analyze_<mode>, analyze_store_<app>, whatif_baselines, apart_waitstates,
hercule_models, hercule_idioms).
"""
import difflib
import glob
import json
import os
import re
import shutil
import sys
import unittest
from pathlib import Path

import h5py
import numpy as np

import check_results as cr  # tests/mpi/check_results.py, next to this file

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
import harness  # noqa: E402  tests/harness.py
from harness import DEVNULL, STDOUT, exit_code, run  # noqa: E402

ARGS = {"perfsift": "", "work": "", "store": "", "messages": ""}  # set by main()
perfsift = harness.Perfsift("")  # set by main(); every command runs in the work directory


# ---- helpers: commands, files, checks ----------------------------------------------

def mpirun(n, *args, **kw):
    """mpirun -n N perfsift ARGS: perfsift on N analysis ranks."""
    return perfsift.mpirun(n, *args, **kw)


def collect(store, ranks, app, *app_args, **kw):
    """perfsift collect -o STORE -- mpirun -n RANKS APP ARGS, both streams to STORE's
    .collect.txt unless told otherwise."""
    kw.setdefault("out", Path(store).stem + ".collect.txt")
    kw.setdefault("err", STDOUT)
    return perfsift.collect(store, ranks, app, *app_args, **kw)


def read(path):
    return Path(path).read_text(errors="replace")


def write(path, text):
    Path(path).write_text(text)


def load(path):
    with open(path) as f:
        return json.load(f)


def same_bytes(a, b):
    return Path(a).read_bytes() == Path(b).read_bytes()


def error_lines(text):
    """The lines starting 'perfsift:' (perfsift's one-line errors)."""
    return [line for line in text.split("\n") if line.startswith("perfsift:")]


def line_count(path):
    """As `wc -l`: newline characters."""
    return Path(path).read_bytes().count(b"\n")


def outputs(prefix):
    """Files the work directory holds whose names start with prefix (as `ls PREFIX*`)."""
    return sorted(glob.glob(glob.escape(prefix) + "*"))


def replay_verdict(report, max_error):
    """check_results.whatif's verdict: "ok", "not checkable" (the ranks waited for a core at
    least as long as the replay misses by) or "wrong", printed with its figures."""
    try:
        print(cr.whatif(report, max_error), flush=True)
        return "ok"
    except cr.NotCheckable as e:
        print(f"NOT CHECKABLE HERE: {e}", flush=True)
        return "not checkable"
    except AssertionError as e:
        print(f"wrong: {e}", flush=True)
        return "wrong"


def passes(check, *args):
    """Run a check of check_results.py; True when it holds, else print why and return
    False (for the tests that collect a disturbed run again)."""
    try:
        check(*args)
        return True
    except Exception as e:  # any failure of the check, as its exit code did in a shell
        print(f"{check.__name__} does not hold: {type(e).__name__}: {e}", flush=True)
        return False


def text_of(values):
    return [v.decode() if isinstance(v, bytes) else v for v in values]


# ---- the tests ----------------------------------------------------------------------

class AnalyzeTest(unittest.TestCase):
    longMessage = False  # assertion messages say what went wrong on their own

    def setUp(self):
        print(flush=True)  # the runner's "test (docstring) ..." line, then the test's own output
        work = os.path.abspath(ARGS["work"])
        os.chdir(harness.work_dir(work))
        self.work = work
        self.store = ARGS["store"]

    def check(self, cond, msg):
        self.assertTrue(cond, msg)

    # -- synthetic stores ------------------------------------------------------------

    def test_determinism(self):
        """One synthetic store analysed on K = 1, 2, 4 ranks, with 1 or 2 threads, and by
        the plain H5Dread path: identical JSON, text (but its Details line) and results
        store; the injected imbalance is found first on the injected region and ranks; the
        results contract holds; `perfsift report` reproduces both reports; the text report
        has at most 75 lines and no finding's cause wider than 100 columns."""
        perfsift("synth", "-o", "s.h5", "--ranks", 24, "--regions", "solve,solve/smooth,solve/restrict,io",
                 "--events-per-rank", 40000, "--inject", "imbalance:region=solve/smooth,ranks=5-8,factor=3")
        # Reads of 65,536 rows: many per analysis rank; OpenMP splits each rank's slice. The
        # domino search (960,000 events) has its budget cut to keep the test short.
        rows = {"PERFSIFT_ROWS_PER_READ": "65536", "PERFSIFT_DOMINO_MAX_REPLAYS": "300"}
        mpirun(1, "analyze", "s.h5", "-o", "k1.h5", "--json", "k1.json", out="k1.txt", env={**rows, "OMP_NUM_THREADS": "1"})
        mpirun(2, "analyze", "s.h5", "-o", "k2.h5", "--json", "k2.json", out="k2.txt", env={**rows, "OMP_NUM_THREADS": "2"})
        mpirun(4, "analyze", "s.h5", "-o", "k4.h5", "--json", "k4.json", out="k4.txt", env={**rows, "OMP_NUM_THREADS": "1"})
        # The search gathered whole (the run is small) and distributed (resumed from the
        # baseline state the whatif stage kept) finds the same paths.
        mpirun(3, "analyze", "s.h5", "-o", "d3.h5", env={**rows, "PERFSIFT_DOMINO_GATHER_EVENTS": "0"})
        self.check(exit_code(["h5diff", "k1.h5", "d3.h5", "/domino", "/domino"]) == 0,
                   "the distributed domino search on K = 3 differs from the gathered one on K = 1")
        # One process, two threads: the whatif questions replay two at a time side by side.
        perfsift("analyze", "s.h5", "-o", "t2.h5", "--json", "t2.json", out="t2.txt", env={**rows, "OMP_NUM_THREADS": "2"})
        # The plain H5Dread path (used for stores of other layouts) gives the same results.
        mpirun(2, "analyze", "s.h5", "-o", "h2.h5", "--json", "h2.json", out="h2.txt", env={**rows, "PERFSIFT_HDF5_READ": "1"})

        def without_details(path):
            return [line for line in read(path).split("\n") if not line.startswith("Details")]
        for v in ("k2", "k4", "t2", "h2"):
            self.check(same_bytes("k1.json", f"{v}.json"), f"JSON report of {v} differs from K=1")
            diff = list(difflib.unified_diff(without_details("k1.txt"), without_details(f"{v}.txt"), "k1.txt", f"{v}.txt", lineterm=""))
            self.check(not diff, f"text report of {v} differs from K=1:\n" + "\n".join(diff))
            self.check(exit_code(["h5diff", "k1.h5", f"{v}.h5"]) == 0, f"results store of {v} differs from K=1")
        print("identical results for K = 1, 2, 4, 1 or 2 threads, raw-chunk and H5Dread scans")
        # K = 2 and 4 search the 24 ranks' clusters locally (dissimilarity.local_max_cells);
        # the search together, a few reductions per clustering, finds the same.
        write("together.toml", "[dissimilarity]\nlocal_max_cells = 0\n")
        mpirun(4, "analyze", "s.h5", "-c", "together.toml", "-o", "d4.h5", "--json", "d4.json", out="d4.txt", env=rows)
        self.check(exit_code(["h5diff", "k1.h5", "d4.h5", "/dissimilarity", "/dissimilarity"]) == 0,
                   "the dissimilarity search together on K = 4 differs from K = 1")
        for key in ("findings", "dissimilarity"):
            self.check(json.load(open("d4.json"))[key] == json.load(open("k1.json"))[key],
                       f"{key} of the search together on K = 4 differ from K = 1")
        cr.finding("k1.json", "load-imbalance", "solve/smooth", "5-8")
        cr.contract("k1.h5", "k1.json")
        perfsift("report", "k1.h5", "--format", "json", "-o", "again.json", env=rows)
        self.check(same_bytes("k1.json", "again.json"), "perfsift report --format json differs from analyze --json")
        perfsift("report", "k1.h5", out="again.txt", env=rows)
        self.check(same_bytes("k1.txt", "again.txt"), "perfsift report differs from analyze's text report")
        print("report round trip: JSON and text identical")
        # About 40 lines of AutoAnalyzer results and findings (3 lines each), 10 of the replay's
        # (what if, bounds, domino), 7 of the wait states, message classes and model diagnosis,
        # 3 of the POP efficiencies, 1 of the network parameters the replay used.
        lines = line_count("k1.txt")
        self.check(lines <= 79, f"text report has {lines} lines (79 at most expected)")
        # Width in bytes, as mawk counts it; header lines are exempt, causes are indented 6.
        exempt = re.compile(rb"^(perfsift analysis of|command:|Details:|counters not recorded)")
        wide = [line for line in Path("k1.txt").read_bytes().split(b"\n")
                if len(line) > 100 and not exempt.match(line) and line.startswith(b"      ")]
        self.check(not wide, f"a finding's cause is wider than the report's 100 columns: {wide}")

    def test_synth(self):
        """The synthetic store holds what was injected: the counters recorded and the one
        unavailable, a 10x L2 miss rate on ranks 0-3, 1e9 instructions/s in io, rank 6
        waiting longest for rank 5's late message; a misspelt --inject: exit 2, named."""
        mpirun(2, "synth", "-o", "s.h5", "--ranks", 8, "--regions", "solve,solve/smooth,io", "--events-per-rank", 300,
               "--counters", "PAPI_TOT_CYC,PAPI_TOT_INS,PAPI_L2_TCM", "--inject", "cache-miss:region=solve/smooth,ranks=0-3,factor=10",
               "--inject", "counter:name=PAPI_TOT_INS,region=io,ranks=all,rate=1e9", "--inject", "late-sender:region=io,ranks=5,delay=0.002")
        with h5py.File("s.h5", "r") as f:
            paths = text_of(f["regions/path"][...])
            recorded = text_of(f.attrs["counters_recorded"])
            self.check(recorded == ["PAPI_TOT_CYC", "PAPI_TOT_INS", "PAPI_L2_TCM"], recorded)
            unavail = text_of(f.attrs["counters_unavailable"])
            self.check(unavail == ["PAPI_L1_DCM"], unavail)
            smooth, io = paths.index("solve/smooth"), paths.index("io")
            ratio = f["profile/PAPI_L2_TCM"][:, smooth] / f["profile/PAPI_TOT_INS"][:, smooth]
            self.check(np.allclose(ratio[:4], 10 * ratio[4:].mean()) and np.allclose(ratio[4:], 0.004), ratio)
            rate = f["profile/PAPI_TOT_INS"][:, io] / f["profile/cpu"][:, io]
            self.check(np.allclose(rate, 1e9), rate)
            # Rank 6 receives rank 5's late message in io: its MPI time there is the largest.
            mpi = f["profile/mpi_time"][:, io]
            self.check(int(np.argmax(mpi)) == 6, mpi)
        print("synth: counters recorded and unavailable, 10x miss rate on ranks 0-3, rate 1e9/s, rank 6 waits for rank 5")
        # Threads per analysis rank (said with --progress): the setting, else OMP_NUM_THREADS,
        # else the node's cores shared among its analysis ranks (unbound ranks each see every
        # core: a thread per core in each would oversubscribe).
        unbound = {"OMPI_MCA_hwloc_base_binding_policy": "none"}
        cores = len(os.sched_getaffinity(0))
        for env, want in (({}, max(1, cores // 2)), ({"OMP_NUM_THREADS": "3"}, 3), ({"PERFSIFT_THREADS": "5"}, 5)):
            mpirun(2, "analyze", "s.h5", "-o", "t.h5", "--progress", env={**unbound, **env}, err="t.err")
            said = re.search(r"perfsift: (\d+) analysis ranks, (\d+) threads? each", read("t.err"))
            got = (int(said[1]), int(said[2])) if said else None
            self.check(got == (2, want), f"analysis ranks and threads {got}, want (2, {want}) with {env or 'defaults'}")
        rc = perfsift("synth", "-o", "x.h5", "--ranks", 4, "--inject", "imbalanse:ranks=1", err="err.txt", expect=None).returncode
        self.check(rc == 2 and "unknown behaviour 'imbalanse'" in read("err.txt"), f"bad --inject: {read('err.txt')}")

    def test_rootcauses(self):
        """A cache-heavy region (40x misses) and an I/O-heavy one (10 MB per iteration at
        1 GB/s): both disparity bottlenecks (CCCR), io for heavy disk I/O and solve/smooth
        for a high L2 miss rate, in the per-region causes and the findings."""
        perfsift("synth", "-o", "rc.h5", "--ranks", 8, "--regions", "setup,solve,solve/smooth,solve/restrict,io,halo",
                 "--events-per-rank", 400, "--counters", "PAPI_TOT_CYC,PAPI_TOT_INS,PAPI_L1_DCM,PAPI_L2_TCM",
                 "--inject", "cache-miss:region=solve/smooth,ranks=all,factor=40", "--inject", "io:region=io,ranks=all,bytes=1e7")
        mpirun(2, "analyze", "rc.h5", "-o", "rc-results.h5", "--json", "rc.json", out="rc.txt")
        print(read("rc.txt"), end="")
        d = load("rc.json")
        self.check(sorted(d["disparity"]["cccr"]) == ["io", "solve/smooth"], d["disparity"])
        per = d["rootcause"]["disparity"]["per_region"]
        self.check(per["io"] == ["heavy disk I/O"], per)
        self.check("high L2 miss rate (misses per instruction)" in per["solve/smooth"], per)
        causes = {f["where"]: f["cause"] for f in cr.reported(d) if f["kind"] == "disparity"}
        self.check("root cause: heavy disk I/O" in causes["io"] and "L2 miss rate" in causes["solve/smooth"], causes)
        print("root causes: io -> heavy disk I/O; solve/smooth -> high L1 and L2 miss rates")
        # A bystander: rank 0 writes a little in solve while rank 2 computes three times as
        # much there. The disk I/O separates the ranks, the other way round: never the cause.
        perfsift("synth", "-o", "by.h5", "--ranks", 8, "--regions", "solve,io", "--events-per-rank", 400,
                 "--inject", "imbalance:region=solve,ranks=2,factor=3", "--inject", "io:region=solve,ranks=0,bytes=2e5")
        mpirun(2, "analyze", "by.h5", "-o", "by-results.h5", "--json", "by.json", out="by.txt")
        d = load("by.json")
        per = d["rootcause"]["dissimilarity"]["per_region"]
        self.check(any("bystander" in c and "disk I/O" in c for c in per["solve"]), per)
        said = [f["cause"] for f in d["findings"]] + [e["cause"] for f in d["findings"] for e in f["evidence"]]
        self.check(not any("disk I/O differs" in c for c in said), said)
        self.check("bystander" in " ".join(read("by.txt").split()), "the rootcause section names the bystander")
        print("bystander: rank 0's disk I/O is not the cause of rank 2's excess in solve")

    def test_commbound(self):
        """20 MB ring messages (4 ms each at 5 GB/s) against 1-4 ms of computation: every
        rank is communication-bound. The first finding is mpi-time on (program), ranks 0-7;
        no imbalance or dissimilarity is reported; one rank cluster."""
        perfsift("synth", "-o", "c.h5", "--ranks", 8, "--regions", 4, "--events-per-rank", 400, "--message-bytes", 20000000)
        mpirun(2, "analyze", "c.h5", "-o", "c-results.h5", "--json", "c.json", out="c.txt")
        d = load("c.json")
        kinds = [f["kind"] for f in d["findings"]]
        self.check(kinds[0] == "mpi-time" and not {"load-imbalance", "dissimilarity"} & set(kinds), kinds)
        self.check(d["dissimilarity"]["clusters"] == [list(range(8))], d["dissimilarity"]["clusters"])
        f = d["findings"][0]
        self.check(f["where"] == "(program)" and f["ranks"] == "0-7", f)
        print("communication-bound run: mpi-time first on ranks 0-7, lost %.3f s; one rank cluster" % f["lost_s"])

    def test_startup(self):
        """A 3 s MPI_Init (a slow launcher) before a short program with an imbalance: the run
        is reported as its program (MPI_Init's end to MPI_Finalize's start), start-up and
        shut-down apart; the answer's percentages, the what-if error and the thresholds use
        the program's time; the HTML page opens its timelines where the program starts."""
        perfsift("synth", "-o", "s.h5", "--ranks", 4, "--regions", "solve", "--events-per-rank", 300, "--startup", 3,
                 "--inject", "imbalance:region=solve,ranks=1,factor=3")
        mpirun(2, "analyze", "s.h5", "-o", "s-results.h5", "--json", "s.json", out="s.txt")
        perfsift("report", "s-results.h5", "--format", "html", "-o", "s.html")
        d, text = load("s.json"), read("s.txt")
        run = d["run"]
        program, wall = run["program_time_s"], run["wall_time_s"]
        self.check(abs(run["startup_s"] - 3) < 1e-6 and abs(program + run["startup_s"] + run["shutdown_s"] - wall) < 1e-3,
                   f"start-up {run['startup_s']} + program {program} + shut-down {run['shutdown_s']} != wall {wall}")
        self.check(" program (start-up 3.00 s and shut-down " in text, "the run line does not give the program's time")
        f = d["findings"][0]
        share = round(100 * f["lost_s"] / program)
        answer = text.split("\n")[1] + text.split("\n")[2]
        self.check(f["where"] == "solve" and f["ranks"] == "1", f)
        self.check(f"({share}% of the run)" in answer and share >= 20, f"answer not in the program's terms: {answer}")
        w = d["whatif"][0]
        self.check(abs(w["error"]) < 0.05 and abs(w["program_measured_s"] - program) < 1e-6, w)
        self.check(abs(w["run_error"]) < abs(w["error"]) or w["error"] == 0, w)
        page = read("s.html")
        self.check('"program_start_s":3' in page.replace(" ", "") and re.search(r'"lifecycle_ops":\[[01,]*1', page) is not None, "the page does not fold start-up")
        print(f"start-up 3 s apart: program {program:.3f} s of {wall:.3f} s wall; the answer says {share}% of the run")

    def test_missing(self):
        """A store with rank 3 of 6 lost: a warning on stderr and in the report, a partial
        result over the other 5 ranks, exit 0."""
        perfsift("synth", "-o", "m.h5", "--ranks", 6, "--regions", 4, "--events-per-rank", 500, "--inject", "missing:ranks=3")
        mpirun(2, "analyze", "m.h5", "-o", "m-results.h5", "--json", "m.json", out="m.txt", err="m.err")
        print(read("m.err"), end="")
        self.check("warning: ranks 3 have no data" in read("m.err"), "no warning for the missing rank")
        self.check("warning: ranks 3 have no data" in read("m.txt"), "the report does not name the missing rank")
        cr.missing("m.json", "3", "6")

    def test_stuck(self):
        """A rank whose Allreduce record lost its communicator (as a crash leaves the call in
        progress): the others wait in it for good. Every replay releases them at its own
        fixpoint: questions that replay in one pass fall back to one at a time, and
        the answers are the same on K = 1, 2 and 3 (every question replayed distributed)."""
        perfsift("synth", "-o", "st.h5", "--ranks", 6, "--regions", "solve,solve/a,solve/b,io",
                 "--events-per-rank", 600, "--inject", "imbalance:region=solve/a,ranks=1-2,factor=3")
        with h5py.File("st.h5", "r+") as f:
            ops = [o.decode() for o in f["ops"][:]]
            off = f["events_offsets"][:]
            rows = f["events"][off[4]:off[5]]
            calls = [i for i, x in enumerate(rows) if ops[x["op"]] == "MPI_Allreduce"]
            k = int(off[4]) + calls[len(calls) // 2]
            row = f["events"][k]
            row["comm"] = -1
            f["events"][k] = row
        env = {"PERFSIFT_WHATIF_SPREAD_MAX_EVENTS": "0", "OMP_NUM_THREADS": "1"}
        for k in (1, 2, 3):
            mpirun(k, "analyze", "st.h5", "-o", f"k{k}.h5", "--progress", env=env, err=f"k{k}.err")
        self.check("done" in read("k1.err") and ", " in read("k1.err"), "no one-pass replay was tried:\n" + read("k1.err"))
        for k in (2, 3):
            self.check(exit_code(["h5diff", "k1.h5", f"k{k}.h5"]) == 0, f"results on K = {k} differ from K = 1")
        with h5py.File("k1.h5") as f:
            q = f["whatif/questions"]
            released = dict(zip([x.decode() for x in q["question"][:]], q["released"][:]))
        print(released)
        self.check(released["baseline"] > 0, "the baseline replay released nothing")
        shared = [t for t in released if t.startswith("zero-wait region") or t.startswith("balance region")]
        self.check(len(shared) >= 2 and all(released[t] == released["baseline"] for t in shared),
                   f"questions replayed one at a time after the pass stopped released otherwise: {released}")

    def test_corrupt(self):
        """Truncated, foreign, absent and garbled stores: a nonzero exit, one error line
        naming the file, no output. Bad configurations (stage, key, type, range, pipeline):
        exit 2, exactly the expected one line, no output, and `perfsift config check`
        rejects them with the same line; a good one passes; `perfsift stages` lists keys."""
        perfsift("synth", "-o", "good.h5", "--ranks", 4, "--regions", 3, "--events-per-rank", 2000)
        good = Path("good.h5").read_bytes()
        Path("truncated.h5").write_bytes(good[:len(good) // 2])
        write("foreign.h5", "not a store\n")
        for bad in ("truncated.h5", "foreign.h5", "absent.h5"):
            rc = mpirun(2, "analyze", bad, "-o", "out.h5", out="out.txt", err="err.txt", expect=None).returncode
            err = read("err.txt")
            self.check(rc != 0, f"{bad}: exit code 0")
            self.check(len(error_lines(err)) == 1, f"{bad}: expected one error line:\n{err}")
            self.check(any(re.match(rf"perfsift: .*{re.escape(bad)}", line) for line in error_lines(err)),
                       f"{bad}: the error does not name the file:\n{err}")
            self.check(not outputs("out.h5"), f"{bad}: output written: {outputs('out.h5')}")
            print(f"{bad}: {error_lines(err)[0]}")
        write("stage.toml", "[profil]\nmin_waste_share = 0.1\n")
        write("key.toml", "[profile]\nmin_waste_shar = 0.1\n")
        write("type.toml", '[profile]\nmin_waste_share = "big"\n')
        write("range.toml", "[profile]\nmin_waste_share = 3.0\n")
        write("list.toml", '[pipeline]\nstages = ["profile", "replya"]\n')
        write("order.toml", '[pipeline]\nstages = ["profile", "bounds", "whatif"]\n')
        # The first chunk of events overwritten in its middle: found while analysing; no output.
        shutil.copyfile("good.h5", "garbled.h5")
        with h5py.File("garbled.h5", "r") as f:
            info = f["events"].id.get_chunk_info(0)
        with open("garbled.h5", "r+b") as out:
            out.seek(info.byte_offset + info.size // 2)
            out.write(b"\xff" * 256)
        rc = mpirun(2, "analyze", "garbled.h5", "-o", "out.h5", out="out.txt", err="err.txt", expect=None).returncode
        err = read("err.txt")
        self.check(rc != 0, "garbled.h5: exit code 0")
        self.check(re.search(r"^perfsift: .*garbled\.h5: .*corrupt", err, re.M), f"garbled.h5: no error naming the file:\n{err}")
        self.check(not outputs("out.h5"), f"garbled.h5: output written: {outputs('out.h5')}")
        print(f"garbled.h5: {error_lines(err)[0]}")

        def expect(toml, message):
            """analyze with a bad configuration: exit 2, exactly MESSAGE, no output; config check too."""
            rc = mpirun(2, "analyze", "good.h5", "-c", toml, "-o", "out.h5", out="out.txt", err="err.txt", expect=None).returncode
            self.check(rc == 2, f"{toml}: exit code {rc}, expected 2")
            lines = error_lines(read("err.txt"))
            self.check("\n".join(lines) == message, f"{toml}: got '{read('err.txt')}', expected '{message}'")
            self.check(len(lines) == 1, f"{toml}: more than one line")
            self.check(not outputs("out.h5"), f"{toml}: output written: {outputs('out.h5')}")
            self.check(perfsift("config", "check", toml, err="check.txt", expect=None).returncode != 0, f"config check accepted {toml}")
            self.check(read("check.txt").rstrip("\n") == message, f"config check {toml}: '{read('check.txt')}'")
            print(f"{toml}: {message}")
        expect("stage.toml", "perfsift: stage.toml:1:2: unknown stage 'profil'; did you mean 'profile'? "
                             "(`perfsift stages` lists every stage and its keys)")
        expect("key.toml", "perfsift: key.toml:2:1: unknown key 'profile.min_waste_shar'; did you mean 'profile.min_waste_share'? "
                           "(`perfsift stages` lists every key)")
        expect("type.toml", "perfsift: type.toml:2:19: key 'profile.min_waste_share' must be float, e.g. profile.min_waste_share = 0.05")
        expect("range.toml", "perfsift: range.toml:2:19: key 'profile.min_waste_share' is 3; it must be between 0 and 1 "
                             "(report a region whose imbalance wastes at least this share of the run (wall time without MPI start-up))")
        expect("list.toml", "perfsift: list.toml:2:10: unknown stage 'replya' in pipeline.stages; did you mean 'profile'? "
                            "(`perfsift stages` lists every stage)")
        # A stage whose product only a later stage provides: refused at set-up, not mid-run.
        expect("order.toml", "perfsift: order.toml:2:10: stage 'bounds' needs the replay baseline, which 'whatif' "
                             "provides: add 'whatif' before 'bounds' in pipeline.stages "
                             "(`perfsift stages` lists what each stage needs)")
        write("ok.toml", "[profile]\nmin_waste_share = 0.2\n")
        perfsift("config", "check", "ok.toml", out="checked.txt")
        self.check("valid; stages: profile" in read("checked.txt"), f"config check: {read('checked.txt')}")
        perfsift("stages", out="stages.txt")
        self.check("min_waste_share (float, default 0.05)" in read("stages.txt"), "perfsift stages lacks profile.min_waste_share")
        self.check("    requires: replay baseline" in read("stages.txt"), "perfsift stages lacks the products of bounds")

    # -- stores of the tests/apps programs -------------------------------------------

    def test_nested_sleep(self):
        """AutoAnalyzer on tests/apps/nested_imbalance.c as an uninstrumented binary: with
        call-site regions (wall time; the work is sleeping, which oversubscription does not
        blur) two groups [[0, 1], [2, 3]] and a CCCR of 'compute before #' sites; with
        metric comp (computation outside MPI per user region) the same groups, CCCR
        solve/smooth."""
        write("cs.toml", '[dissimilarity]\nregions = "call-sites"\n')
        mpirun(2, "analyze", self.store, "-c", "cs.toml", "-o", "cs.h5", "--json", "cs.json", out="cs.txt")
        print(read("cs.txt"), end="")
        c = load("cs.json")["dissimilarity"]
        self.check(c["clusters"] == [[0, 1], [2, 3]] and c["regions_from"].startswith("call sites"), c)
        self.check(c["cccr"] and all(p.startswith("compute before #") for p in c["cccr"]), c["cccr"])
        print("as an uninstrumented binary (call-site regions): two groups [[0, 1], [2, 3]], CCCR", c["cccr"])
        # Computation outside MPI per user region: sleeping counts, waiting does not.
        write("comp.toml", '[dissimilarity]\nmetric = "comp"\n')
        mpirun(2, "analyze", self.store, "-c", "comp.toml", "-o", "comp.h5", "--json", "comp.json", out="comp.txt")
        c = load("comp.json")["dissimilarity"]
        self.check(c["clusters"] == [[0, 1], [2, 3]] and c["cccr"] == ["solve/smooth"], c)
        print("metric comp: two groups [[0, 1], [2, 3]], CCCR solve/smooth")
        # The default (auto) sees that the work does not burn CPU: computation outside MPI,
        # and the finding names the ranks that carry the excess, not the ranks that wait.
        mpirun(2, "analyze", self.store, "-o", "auto.h5", "--json", "auto.json", out="auto.txt")
        d = load("auto.json")
        c = d["dissimilarity"]
        self.check(c["metric"] == "comp" and c["metric_why"].startswith("auto:"), (c["metric"], c["metric_why"]))
        self.check(c["clusters"] == [[0, 1], [2, 3]], c["clusters"])
        found = [x for x in cr.reported(d) if x["kind"] == "dissimilarity"]
        self.check(found and all(x["ranks"] == "2,3" for x in found), found)
        print("default metric:", c["metric_why"])
        # The answer first: the report's second line names the problem, where, who, the cost
        # and what the fix buys; the HTML page opens with the same lines.
        first = read("auto.txt").split("\n")[1:5]
        self.check(first[0].startswith("Answer: ") and "solve/smooth" in first[0] and "ranks 2,3" in first[0]
                   and "at stake" in first[0] and "predicted to save" in " ".join(first), first)
        perfsift("report", "auto.h5", "--format", "html", "-o", "auto.html")
        page = read("auto.html")
        self.check('<div id="answer"' in page and page.index('id="answer"') < page.index('id="findings"'), "no answer")
        print("answer first:", first[0])

    def test_nested_imbalance(self):
        """AutoAnalyzer on tests/apps/nested_imbalance.c: rank groups [[0, 1], [2, 3]], CCR
        solve, CCCR solve/smooth, a dissimilarity finding at solve/smooth on ranks 2,3; full
        OPTICS finds the same groups, identically on K = 1 and 2; the contract holds."""
        self.nested(imbalanced=True)

    def test_nested_balanced(self):
        """AutoAnalyzer on the balanced tests/apps/nested_imbalance.c: one group, no CCR, no
        dissimilarity finding; full OPTICS the same, identically on K = 1 and 2; the
        contract holds."""
        self.nested(imbalanced=False)

    def nested(self, imbalanced):
        mpirun(2, "analyze", self.store, "-o", "r.h5", "--json", "r.json", out="r.txt")
        print(read("r.txt"), end="")
        write("op.toml", '[dissimilarity]\nalgorithm = "optics"\n')
        mpirun(1, "analyze", self.store, "-c", "op.toml", "-o", "op1.h5", "--json", "op1.json", out="op1.txt")
        mpirun(2, "analyze", self.store, "-c", "op.toml", "-o", "op2.h5", "--json", "op2.json", out="op2.txt")
        self.check(same_bytes("op1.json", "op2.json"), "full OPTICS: K=1 and K=2 differ")
        cr.contract("r.h5", "r.json")
        d = load("r.json")
        dis = d["dissimilarity"]
        found = [x for x in cr.reported(d) if x["kind"] == "dissimilarity"]
        self.check(dis["metric"] == "cpu", (dis["metric"], dis["metric_why"]))  # the work burns CPU
        if imbalanced:
            self.check(dis["clusters"] == [[0, 1], [2, 3]], dis["clusters"])
            self.check(dis["cccr"] == ["solve/smooth"] and "solve" in dis["ccr"], dis)
            self.check(found and found[0]["where"] == "solve/smooth" and found[0]["ranks"] == "2,3", found)
            print("nested imbalance: clusters [[0, 1], [2, 3]], CCR solve, CCCR solve/smooth")
        else:
            self.check(dis["clusters"] == [[0, 1, 2, 3]], dis["clusters"])
            self.check(dis["ccr"] == [] and not found, (dis["ccr"], found))
            print("balanced: one cluster, no dissimilarity bottleneck")
        o = load("op1.json")["dissimilarity"]
        want = [[0, 1], [2, 3]] if imbalanced else [[0, 1, 2, 3]]
        self.check(o["clusters"] == want and len(o["optics_ordering"]) == 4, o["clusters"])
        print("full OPTICS: the same clusters, identical for K = 1 and 2")

    def test_real(self):
        """A store collected from a tests/apps program analyses cleanly on 2 ranks (the
        results contract holds), identically on 5 (some analysis ranks own no application
        rank), and with MESSAGES its message matrix holds that many point-to-point
        messages."""
        mpirun(2, "analyze", self.store, "-o", "r.h5", "--json", "r.json", out="r.txt")
        print(read("r.txt"), end="")
        cr.contract("r.h5", "r.json")
        # More analysis ranks than application ranks: some own nothing; same results. Not
        # under MPICH: its ch4:ucx polls without yielding, and 5 analysis processes on the
        # CI's 2 cores take 23 s (0.4 s at K = 2); what is checked does not depend on the MPI.
        if load("r.json")["run"].get("mpi_library", "").startswith("MPICH"):
            print("K=5: not run under MPICH (oversubscribed polling)")
        else:
            mpirun(5, "analyze", self.store, "-o", "r5.h5", "--json", "r5.json", out="r5.txt")
            self.check(same_bytes("r.json", "r5.json"), "K=5 differs from K=2")
            print("K=5 (some analysis ranks own no application rank): identical results")
        if ARGS["messages"]:
            got = str(sum(m["messages"] for m in load("r.json")["profile"]["messages"]))
            self.check(got == ARGS["messages"], f"message matrix holds {got} messages, expected {ARGS['messages']}")
            print(f"message matrix: {got} messages (blocking, nonblocking, persistent, Sendrecv)")

    def test_whatif(self):
        """PerWiz on the binary-swap compositing app: K = 1, 2, 4 identical; contract; the
        baseline replay within 5 %; the balance questions' gains within 1 ms (plus the replay's
        miss) of the app's arithmetic on the measured computation; the user question priced at least the step-1
        balance; findings priced and ranked; domino paths and composite bounds consistent;
        predicted traces as Chrome JSON (4 ranks, the question's ending earlier) and OTF2
        (otf2-print shows 16 MPI_Sendrecv records); bad questions: one line, exit 2, no output."""
        q1 = "balance step 1 of composite and ideal-network"
        for k in (1, 2, 4):
            mpirun(k, "analyze", self.store, "-o", f"k{k}.h5", "--json", f"k{k}.json", "--whatif", q1, out=f"k{k}.txt")
        print(read("k2.txt"), end="")
        for k in (2, 4):
            self.check(same_bytes("k1.json", f"k{k}.json"), f"K={k} differs from K=1")
        print("identical results for K = 1, 2, 4")
        cr.contract("k2.h5", "k2.json")
        self.check(replay_verdict("k2.json", 0.05) != "wrong", "the baseline replay of binary_swap is wrong")
        expected = binary_swap_gains(self.store)
        write("expected.txt", "".join(f"{q}\t{g}\n" for q, g in expected))
        # The arithmetic takes messages as free and the measured run as it went; the replay
        # models the messages: the two agree within 1 ms plus what the replay misses of the run
        # (a rank descheduled inside MPI_Sendrecv shifts the arithmetic's partners, not the replay's).
        base = load("k2.json")["whatif"][0]
        tolerance = 0.001 + abs(base["predicted_s"] - base["measured_s"])
        for question, gain in expected:
            cr.gain("k2.json", question, gain, tolerance)

        d = load("k2.json")
        user = [q for q in d["whatif"] if q["origin"] == "user"]
        self.check([q["question"] for q in user] == [q1], user)
        # The step-1 balance and a free network: the replay is monotone, so at least the balance's gain.
        step1 = [q for q in d["whatif"] if q["question"] == "balance step 1 of composite"][0]
        self.check(user[0]["gain_s"] >= step1["gain_s"] - 1e-9, (user[0], step1))
        priced = [f for f in d["findings"] if f["predicted_gain_s"] is not None]
        self.check(priced, "no finding was priced")
        self.check(d["findings"][0]["predicted_gain_s"] is not None, "findings are not ranked by predicted gain")
        # Domino paths exist only where some wait holds up the end (start-up skew can decide it).
        paths = [p for p in d["domino"] if p["kind"] == "domino"]
        base = d["whatif"][0]["predicted_s"]
        self.check(all(p["predicted_s"] <= base for p in paths), d["domino"])
        self.check(not paths or any(p["reaches_best"] for p in paths), d["domino"])
        self.check(any(p["kind"] == "longest-wait" for p in d["domino"]), d["domino"])
        b = d["bounds"]["composite"]
        self.check(b["steps"] == 2 and b["Q1 and Q2 and Q3"] <= b["none"], b)
        print(f"user question priced ({user[0]['gain_s'] * 1e3:.2f} ms), {len(priced)} findings priced, "
              f"{len(paths)} domino paths, composite bounds {b['none'] * 1e3:.1f} -> {b['Q1 and Q2 and Q3'] * 1e3:.1f} ms")

        # Predicted traces: Chrome JSON (Perfetto) and OTF2 (otf2-print reads it).
        perfsift("export", "k2.h5", "-o", "base.json")
        perfsift("export", "k2.h5", "--question", q1, "-o", "q1.json")
        perfsift("export", "k2.h5", "--question", q1, "--format", "otf2", "-o", "q1.otf2")
        traces = [load(f)["traceEvents"] for f in ("base.json", "q1.json")]
        for name, ev in zip(("base.json", "q1.json"), traces):
            mpi = [e for e in ev if e.get("cat") == "mpi"]
            self.check(len({e["tid"] for e in mpi}) == 4 and any(e["name"] == "MPI_Sendrecv" for e in mpi), name)
        end = [max(e["ts"] + e["dur"] for e in ev if e.get("ph") == "X") for ev in traces]
        self.check(end[1] < end[0], f"the balanced prediction should end earlier: {end}")
        print(f"chrome traces: baseline ends {end[0] / 1e3:.1f} ms, question ends {end[1] / 1e3:.1f} ms")
        run(["otf2-print", "q1.otf2/traces.otf2"], out="q1.otf2.txt")
        n = sum("MPI_Sendrecv" in line for line in read("q1.otf2.txt").splitlines())
        self.check(n >= 16, f"otf2-print shows {n} MPI_Sendrecv records, expected 16 (8 enter + 8 leave)")
        print(f"otf2-print reads the archive: {n} MPI_Sendrecv enter/leave records")

        # Bad questions: one line naming the question and the fix, exit 2, no output file.
        for bad in ("balance stpe 1 of composite", "balance step 1 of compost", "zero-wait", "balance event 1:2"):
            rc = mpirun(2, "analyze", self.store, "-o", "bad.h5", "--whatif", bad, out=DEVNULL, err="err.txt", expect=None).returncode
            self.check(rc == 2, f"--whatif '{bad}': exit {rc}, expected 2")
            lines = error_lines(read("err.txt"))
            self.check(len(lines) == 1, f"--whatif '{bad}': expected one line, got: {read('err.txt')}")
            self.check(not os.path.exists("bad.h5"), f"--whatif '{bad}' left an output file")
            print(f"rejected: {lines[0]}")

    # -- programs collected here, one at a time --------------------------------------

    def test_ring_cost(self):
        """A ring of 3,000 rounds of 8-byte messages on 4 ranks (APP_DIR/app_ring: 24,000
        events, every rank's message to the next crossing processes on 2 analysis
        processes): analysed on 1 and 2 processes, the same predictions (baseline, domino
        best and longest wait), and at 2 the whatif stage's baseline costs a few all-to-alls,
        not one a round (it made 3,004: a stage must not cost more on more processes)."""
        collect("ring.h5", 4, Path(self.store) / "app_ring", "3000", "8", what="ring: collection failed")
        write("p.toml", '[whatif]\nstandard_questions = false\n[pipeline]\nstages = ["whatif", "domino"]\n')
        for k in (1, 2):
            mpirun(k, "analyze", "ring.h5", "-c", "p.toml", "-o", f"ring{k}.r.h5", "--json", f"ring{k}.json",
                   "--progress", out=f"ring{k}.txt", err=f"ring{k}.err", what=f"ring: analyze on {k} failed")
        one, two = load("ring1.json"), load("ring2.json")
        self.assertEqual(one["whatif"][0]["predicted_s"], two["whatif"][0]["predicted_s"])
        self.assertEqual(one["domino"], two["domino"])
        # The stage's line names its all-to-alls when it made any.
        line = re.search(r"stage whatif done in [^\n]*", read("ring2.err"))
        self.assertIsNotNone(line, read("ring2.err"))
        rounds = re.search(r"(\d+) all-to-alls", line.group(0))
        count = int(rounds.group(1)) if rounds else 0
        print(f"whatif at K = 2: {count} all-to-alls", flush=True)
        self.assertLess(count, 100)

    def test_baselines(self):
        """No calibration: each tests/apps program (APP_DIR), collected here one at a time (a
        run that shares the cores with other tests measures the scheduler, not MPI), replays
        on the network its own run shows (its messages' LogGPS parameters, its collectives as
        measured) its program (start-up apart) within 5 % of its measured time or 2 ms
        (check_results.whatif; the collective-heavy small_collectives within 3 %), and its
        lower bounds (PerWiz F3) are at most the replayed time of their region and of the
        run; all 13 are checked. A run
        that misses by more is collected again, up to three times. A miss no larger than the
        time the ranks waited for a core inside the program (/program_os: 4 ranks on 2 cores
        wait longer than a program of a few ms of messages lasts) is not checkable here and
        said so; a miss larger than that fails."""
        apps = Path(self.store)  # the directory holding the app_* executables
        write("p.toml", '[whatif]\nstandard_questions = false\n[pipeline]\nstages = ["profile", "whatif", "bounds"]\n')
        programs = [  # name, ranks, executable, arguments
            ("ring", 4, "app_ring"),
            ("late_sender", 2, "app_late_sender"),
            ("late_receiver", 2, "app_late_receiver"),
            ("wait_barrier", 3, "app_wait_barrier"),
            ("master_worker", 3, "app_master_worker"),
            ("wavefront", 4, "app_wavefront"),
            ("binary_swap", 4, "app_binary_swap"),
            ("families", 4, "app_families"),
            ("nested", 3, "app_nested"),
            ("nested_sleep", 4, "app_nested_imbalance", "sleep"),
            ("ring_fortran", 4, "app_ring_f"),
            ("spill", 2, "app_ring", "20000", "8"),
            ("small_collectives", 4, "app_small_collectives"),
        ]
        # Known limit: 40,000 messages of 8 bytes in about 20 ms (0.5 us each) replay some
        # 50-80 % slow: the calibrated per-message costs (o_s + L + o_r ~ 0.75 us from the
        # ping-pong) exceed what a 2-rank ring pipelines. This case checks that spilling
        # keeps every event (its 40,000 sends matched); its replay is held to twice the
        # program (against the whole run, start-up in, 5 % was 12.4 ms: the 12.5-12.8 ms it
        # missed by in one CI run depended on that run's calibration).
        max_error = {"spill": 1.0, "small_collectives": 0.03}
        checked, not_checkable = 0, []
        for name, ranks, app, *app_args in programs:
            verdicts = []
            for attempt in (1, 2, 3):
                env = {"PERFSIFT_BUFFER_MB": "1"} if name == "spill" else {}
                collect(f"{name}.h5", ranks, apps / app, *app_args, env=env, what=f"{name}: collection failed")
                mpirun(2, "analyze", f"{name}.h5", "-c", "p.toml", "-o", f"{name}.r.h5", "--json", f"{name}.json",
                       out=f"{name}.txt", err=f"{name}.err", what=f"{name}: analyze failed")
                print(f"{name} (run {attempt}): ", end="", flush=True)
                network = load(f"{name}.json")["whatif"][0]["loggps"]
                print(network["summary"], flush=True)
                # Each parameter says where it came from and on how many samples it rests: the
                # spill case's 40,000 sends give o_s from the run; every collective of the
                # collective-heavy program is priced as the run performed it.
                self.check(all(network[f"origin_{p}"] in ("this run", "the collector's measurement", "defaults")
                               for p in ("o_s", "o_r", "g", "G", "L")),
                           f"{name}: parameters without their origin: {network}")
                if name == "spill":
                    self.check(network["origin_o_s"] == "this run" and network["messages_o_s"] >= 30, f"spill: {network}")
                if name == "small_collectives":
                    self.check(network["collective_calls_measured"] == network["collective_calls"] > 1000,
                               f"small_collectives: {network}")
                verdicts.append(replay_verdict(f"{name}.json", max_error.get(name, 0.05)))
                cr.contract(f"{name}.r.h5", f"{name}.json")  # bounds at most the baseline
                if verdicts[-1] == "ok":
                    break
            if "ok" not in verdicts and "wrong" in verdicts:
                self.fail(f"{name}: the baseline replay is off by more than 5 % and more than the ranks waited for "
                          f"a core, in {verdicts.count('wrong')} of three runs (the others: not checkable)")
            if "ok" not in verdicts:
                not_checkable.append(name)
            checked += 1
        self.check(checked == 13, f"only {checked} of 13 apps were checked")
        print(f"{checked - len(not_checkable)} apps replay within 5 %; not checkable here (the ranks waited for a "
              f"core longer than the replay misses by, in three runs): {not_checkable or 'none'}")

    def test_apart(self):
        """Vetter's classifier trained here: 10-fold cross-validation at least 90 % (a
        second training with 5-10 ms delays if a busy machine blurred the first). Then the
        APART properties of tests/apps/apart.c, collected here one at a time: each wait
        state where injected within 20 %, nothing elsewhere, Vetter's class where it is
        clear (a disturbed run collected once more); K = 1 and 3 analysis ranks agree; the
        text report shows both stages; skewed clocks are reported; a store from another
        platform warns; a file that is not a model: one line, exit 2, no results."""
        apps = Path(self.store)
        # The tree must have learnt the classes (the paper: 87.5 % on its training data). A machine
        # busy with other work blurs the default 0.5-2 ms delays (87 % with one busy loop on this
        # VM's two cores; train then warns): the second training injects 5-10 ms instead (96 %).
        sharp = ["--min-delay-us", 5000, "--delay-variance-us", 5000]

        cv = None

        def train(delays):
            nonlocal cv
            for attempt in (1, 2):
                perfsift("train", "-o", "classifier.model", *delays, "--", "mpirun", "-n", 2,
                         out="train.txt", err=STDOUT, what="perfsift train failed")
                print(read("train.txt"), end="")
                cv = cross_validation(read("train.txt"))
                if accuracy_at_least(cv, 90):
                    return delays
                delays = sharp
            self.fail(f"10-fold cross-validation accuracy {cv} % < 90 % in two trainings")

        delays = train([])
        write("p.toml", f'[classify]\nmodel = "{self.work}/classifier.model"\n')
        # Ranks per property: 4 on the 2 cores, except `none`. When all four wake at once, two
        # wait for a core behind two polling ranks, and that is real waiting of 2-20 ms per run
        # (measured here with the old and the new app alike), not an injected property; with one
        # rank per core there is none to find.
        properties = [  # property, ranks, Vetter's classes where clear
            ("late_sender", 4, "late_send"),
            ("late_sender_irecv", 4, None),
            ("late_receiver", 4, "late_recv"),
            ("wrong_order", 4, "late_send,late_recv"),
            ("imbalance_at_mpi_barrier", 4, None),
            ("imbalance_at_mpi_alltoall", 4, None),
            ("late_broadcast", 4, None),
            ("early_reduce", 4, None),
            ("sendrecv_pair", 4, "late_send,late_recv"),
            ("sendrecv_ring", 4, "normal,late_send,late_recv"),
            ("none", 2, None),
        ]
        n = 0
        for prop, ranks, cls in properties:
            for attempt in (1, 2, 3):
                collect(f"{prop}.h5", ranks, apps / "app_apart", prop, what=f"{prop}: collection failed")
                mpirun(2, "analyze", f"{prop}.h5", "-c", "p.toml", "-o", f"{prop}.r.h5", "--json", f"{prop}.json",
                       out=f"{prop}.txt", err=f"{prop}.err", what=f"{prop}: analyze failed")
                # A run the shared machine disturbed (a rank descheduled for tens of ms) is collected once more.
                if passes(cr.apart, f"{prop}.json", prop, ranks, *([cls] if cls else [])):
                    break
                # Wrong classes twice with a tree from the default delays: a machine busy while it
                # trained blurred them; the third run uses a tree trained on 5-10 ms delays.
                if attempt == 2 and cls and delays != sharp:
                    delays = train(sharp)
                elif attempt == 2:
                    self.fail(f"{prop}: wrong in two runs")
            else:
                self.fail(f"{prop}: wrong in three runs, the last with a tree trained on 5-10 ms delays")
            n += 1
        self.check(n == len(properties), f"only {n} of {len(properties)} properties were checked")
        # Any number of analysis ranks gives the same classes, counts and sums (the ring's Late
        # Receivers meet their call's Late Sender at the sender's owner).
        for prop in ("late_sender", "sendrecv_ring"):
            mpirun(1, "analyze", f"{prop}.h5", "-c", "p.toml", "-o", "k1.r.h5", "--json", "k1.json", out=DEVNULL)
            mpirun(3, "analyze", f"{prop}.h5", "-c", "p.toml", "-o", "k3.r.h5", "--json", "k3.json", out=DEVNULL)
            a, b = load("k1.json"), load("k3.json")
            self.check(all(a[k] == b[k] for k in ("classification", "waitstates", "findings")),
                       f"{prop}: K = 1 and K = 3 analysis ranks disagree on classes or wait states")
        # The text report shows both stages.
        self.check("Wait states (Scalasca patterns): late_sender" in read("late_sender.txt"), "no wait states in the text report")
        self.check("Message classes (Vetter)" in read("late_sender.txt"), "no message classes in the text report")
        # Rank 0's clock 300 ms ahead: its three sends "start" after rank 1 received them.
        shutil.copyfile("late_sender.h5", "skewed.h5")
        with h5py.File("skewed.h5", "r+") as f:
            ev, off = f["events"], f["events_offsets"]
            rows = ev[off[0]:off[1]]
            rows["t_enter"] += 300_000_000
            rows["t_exit"] += 300_000_000
            ev[off[0]:off[1]] = rows
        mpirun(2, "analyze", "skewed.h5", "-c", "p.toml", "-o", "skewed.r.h5", "--json", "skewed.json",
               out=DEVNULL, err=STDOUT, what="analyze failed on a skewed store")
        d = load("skewed.json")
        v = d["waitstates"]["clock_violations"]
        print("skewed clocks:", v)
        self.check(v["p2p"] == 3 and abs(v["max_s"] - 0.3) < 0.05 and any("clocks disagree" in w for w in d["warnings"]),
                   f"clock-condition violations not reported: {v}, warnings {d['warnings']}")
        # Another platform: a warning, still a result.
        shutil.copyfile("late_sender.h5", "elsewhere.h5")
        with h5py.File("elsewhere.h5", "r+") as f:
            f.attrs["hosts"] = "node001,node002"
        perfsift("analyze", "elsewhere.h5", "-c", "p.toml", "-o", "elsewhere.r.h5", "--json", "elsewhere.json",
                 out=DEVNULL, err=STDOUT, what="analyze failed on a store from another platform")
        w = load("elsewhere.json")["warnings"]
        self.check(any("trained on" in x and "node[0-9]+" in x for x in w), f"no platform warning: {w}")
        # A file that is not a model: one line naming it, exit 2, no results file.
        write("bad.model", "not a model\n")
        write("bad.toml", f'[classify]\nmodel = "{self.work}/bad.model"\n')
        rc = perfsift("analyze", "late_sender.h5", "-c", "bad.toml", "-o", "bad.r.h5", out="bad.txt", err=STDOUT, expect=None).returncode
        self.check(rc == 2, f"a bad model gave exit code {rc}")
        self.check(line_count("bad.txt") == 1 and "bad.model: line 1: not a perfsift classifier model" in read("bad.txt"),
                   f"bad model message: {read('bad.txt')}")
        self.check(not os.path.exists("bad.r.h5"), "a results file was written with a bad model")
        print(f"{n} APART properties found where injected, within 20 %; classifier trained at {cv} % (10-fold)")

    def test_hercule(self):
        """Hercule's model-based diagnosis of the tests/apps programs (APP_DIR), collected
        here: master-worker recognised and explained (and in the text report); wavefront on
        2 x 2 and 2 x 4 grids, the deeper one relative to the other; divide and conquer;
        binary swap taken for divide-and-conquer, a ring for no model (sleep-based runs
        disturbed by the shared machine are collected once more); events mapped to the
        app's regions give the same split, a missing region stops at set-up; --model none
        skips; a knowledge file with an unknown metric: one line, exit 2, no results; an
        edited knowledge text reaches the narrative."""
        apps = Path(self.store)
        # Master-worker: rank 0 sets up each task for 4 s ms, workers compute 10 s ms (tests/apps/master_worker.c).
        collect("mw.h5", 4, apps / "app_master_worker", what="collection failed")
        mpirun(2, "analyze", "mw.h5", "-o", "mw.r.h5", "--json", "mw.json", out="mw.txt", err="mw.err", what="analyze failed")
        cr.master_worker("mw.json", 0)
        cr.shares_bounded("mw.json", "mw.r.h5")
        self.check("Model diagnosis (Hercule): master-worker" in read("mw.txt"), "no diagnosis in the text report")
        # Wavefront on a 2 x 2 and a 2 x 4 grid (tests/apps/wavefront.c); the deeper one relative to the other.
        # Sleep-based apps on a shared machine: a disturbed run is collected once more.
        for attempt in (1, 2):
            for n in (4, 8):
                collect(f"wf{n}.h5", n, apps / "app_wavefront", what=f"wavefront {n}: collection failed")
            mpirun(2, "analyze", "wf4.h5", "-o", "wf4.r.h5", "--json", "wf4.json", out="wf4.txt", err=STDOUT,
                   what="wavefront 4: analyze failed")
            mpirun(2, "analyze", "wf8.h5", "--reference", "wf4.h5", "-o", "wf8.r.h5", "--json", "wf8.json", out="wf8.txt",
                   err=STDOUT, what="wavefront 8: analyze failed")
            if passes(cr.wavefront, "wf8.json", "wf4.json") and passes(cr.shares_bounded, "wf8.json", "wf8.r.h5"):
                break
        else:
            self.fail("wavefront: wrong in two runs")
        self.check("against wf4.h5 (weak scaling): the increase of pipeline depth" in read("wf8.txt"),
                   "no relative diagnosis in the text report")
        # Divide and conquer (tests/apps/divide_conquer.c), and binary-swap compositing, a recursive halving too.
        for attempt in (1, 2):
            collect("dc.h5", 4, apps / "app_divide_conquer", what="divide_conquer: collection failed")
            mpirun(2, "analyze", "dc.h5", "-o", "dc.r.h5", "--json", "dc.json", out="dc.txt", err=STDOUT,
                   what="divide_conquer: analyze failed")
            if passes(cr.divide_conquer, "dc.r.h5", "dc.json") and passes(cr.shares_bounded, "dc.json", "dc.r.h5"):
                break
        else:
            self.fail("divide_conquer: wrong in two runs")
        # Each program is taken for its own model, and a ring for none.
        for app, model in (("ring", "none"), ("binary_swap", "divide-and-conquer")):
            collect(f"{app}.h5", 4, apps / f"app_{app}", out=DEVNULL, what=f"{app}: collection failed")
            mpirun(2, "analyze", f"{app}.h5", "-o", f"{app}.r.h5", "--json", f"{app}.json", out=DEVNULL,
                   err=STDOUT, what=f"{app}: analyze failed")
            models = [x["model"] for x in load(f"{app}.json")["diagnosis"]]
            self.check(models == ([] if model == "none" else [model]), f"{app} not diagnosed as {model}: {models}")
        # Events mapped to the app's regions give the same split; a region the store lacks stops at set-up.
        write("ev.toml", '[diagnosis]\nevents = ["Setup=master_setup", "Compute=worker_compute"]\n')
        mpirun(2, "analyze", "mw.h5", "-c", "ev.toml", "-o", "ev.r.h5", "--json", "ev.json", out=DEVNULL,
               err=STDOUT, what="analyze with mapped events failed")
        a, b = (load(f)["diagnosis"][0]["metrics"] for f in ("mw.json", "ev.json"))
        print(f"mapped events: setup {b['all_t_w_setup_s'] * 1e3:.1f} ms (derived {a['all_t_w_setup_s'] * 1e3:.1f} ms), "
              f"waiting {b['all_t_wait_s'] * 1e3:.1f} ms")
        self.check(abs(b["all_t_w_setup_s"] - a["all_t_w_setup_s"]) <= 0.1 * a["all_t_w_setup_s"]
                   and abs(b["all_t_wait_s"] - a["all_t_wait_s"]) <= 1e-6, "mapped setup region disagrees with the derived setup")
        write("ev2.toml", '[diagnosis]\nevents = ["Setup=master_stup"]\n')
        rc = perfsift("analyze", "mw.h5", "-c", "ev2.toml", "-o", "ev2.r.h5", out="ev2.txt", err=STDOUT, expect=None).returncode
        self.check(rc == 2 and line_count("ev2.txt") == 1 and "no region 'master_stup'" in read("ev2.txt"),
                   f"a mapping to a missing region: exit {rc}: {read('ev2.txt')}")
        # --model none skips; a knowledge file with an unknown metric stops at set-up: one line, exit 2.
        perfsift("analyze", "mw.h5", "--model", "none", "-o", "none.r.h5", "--json", "none.json", out=DEVNULL,
                 err=STDOUT, what="analyze --model none failed")
        self.check(load("none.json")["diagnosis"] == [], "--model none still diagnosed")
        os.makedirs("kb", exist_ok=True)
        model = read(HERE / "../../pipeline/knowledge/master-worker.toml")
        write("kb/master-worker.toml", re.sub(r'^id = "t_w-bn"', 'id = "t_w-bottleneck"', model, flags=re.M))
        write("kb.toml", f'[diagnosis]\nknowledge = "{self.work}/kb"\n')
        rc = perfsift("analyze", "mw.h5", "-c", "kb.toml", "-o", "kb.r.h5", out="kb.txt", err=STDOUT, expect=None).returncode
        self.check(rc == 2 and line_count("kb.txt") == 1
                   and re.search(r"kb/master-worker\.toml:[0-9]*:[0-9]*: perfsift cannot compute metric 't_w-bottleneck'", read("kb.txt")),
                   f"a bad knowledge file: exit {rc}: {read('kb.txt')}")
        self.check(not os.path.exists("kb.r.h5"), "results written with a bad knowledge file")
        # A knowledge file can change the texts: the narrative follows it.
        write("kb/master-worker.toml", "\n".join(line.replace("is least utilized, whose efficiency is", "is the least busy worker, efficiency", 1)
                                                 for line in model.split("\n")))
        perfsift("analyze", "mw.h5", "-c", "kb.toml", "-o", "kb.r.h5", "--json", "kb.json", out=DEVNULL,
                 err=STDOUT, what="analyze with an edited knowledge file failed")
        self.check("is the least busy worker, efficiency" in read("kb.json"), "the edited text is not in the narrative")
        print("hercule: master-worker, wavefront and divide-and-conquer recognised and explained; "
              "binary swap is divide-and-conquer, a ring none; knowledge files checked")

    def test_hercule_idioms(self):
        """Hercule on idioms written the way other programs write them (tests/apps, APP_DIR):
        three messages per task (mw3.c, 5 ranks), a task farm with two tasks in flight whose
        results are the next requests, any-source and two tags, the master's 4 ms setup the
        bottleneck (task_farm.c, 6 ranks), a four-corner sweep with Irecv/Isend on a 2 x 3 grid
        (sweep4.c, 6 ranks), recursive bisection on 6 ranks (divide_conquer6.c): each recognised, its injected cause the largest, every share in
        [0, 1] and each entity's terms within its lost time (a disturbed run is collected
        once more)."""
        apps = Path(self.store)
        cases = (("mw3", 5, "master-worker", 0.9, ("final_imbalance",)),
                 ("task_farm", 6, "master-worker", 0.8, ("master_bottleneck", "master_setup")),
                 ("sweep4", 6, "wavefront", 0.6, ("direction_change", "fill_up")),
                 ("divide_conquer6", 6, "divide-and-conquer", 0.7, ("merge_wait",)))
        for app, ranks, model, confidence, named in cases:
            for attempt in (1, 2):
                collect(f"{app}.h5", ranks, apps / f"app_{app}", what=f"{app}: collection failed")
                mpirun(2, "analyze", f"{app}.h5", "-o", f"{app}.r.h5", "--json", f"{app}.json", out=f"{app}.txt",
                       err=STDOUT, what=f"{app}: analyze failed")
                if passes(cr.model_idiom, f"{app}.json", f"{app}.r.h5", model, confidence, *named):
                    break
            else:
                self.fail(f"{app}: wrong in two runs")
            self.check(not re.search("shown clamped|more than all of it", read(f"{app}.txt")),
                       f"{app}: the last guard on the shares fired: {read(f'{app}.txt')}")
        # The task farm: the master's setup is named, at its 4 ms per task.
        g = load("task_farm.json")["diagnosis"][0]
        self.check("master_setup" in {c["id"] for c in g["causes"]}, f"the master's setup not named: {g['causes']}")
        self.check(0.003 <= g["metrics"]["setup_per_task_s"] <= 0.0055,
                   f"setup per task {g['metrics']['setup_per_task_s'] * 1e3:.2f} ms, expected 4 ms")
        # The sweep on the app's 2 x 3 grid.
        m = load("sweep4.json")["diagnosis"][0]["metrics"]
        self.check((int(m["px"]), int(m["py"])) == (2, 3), f"grid {m['px']} x {m['py']}, expected 2 x 3")
        print("hercule idioms: three messages per task, tasks in flight, a four-corner sweep, bisection on 6 ranks "
              "recognised and explained")


# ---- expectations computed from a store -----------------------------------------------

def binary_swap_gains(store):
    """The arithmetic of the compositing app, with the measured computation of each rank
    and stage (nominally (8 + 8 (r % 3)) / 2^s ms): pairs (0,1),(2,3) exchange, compute,
    then pairs (0,2),(1,3); the run ends when the last rank finishes stage 1. Returns
    (question, expected gain in s, as text with 6 decimals) for the three balance questions."""
    with h5py.File(store, "r") as f:
        paths = text_of(f["regions"]["path"][...])
        ops = text_of(f["ops"][...])
        composite = paths.index("composite")
        so, eo = f["steps_offsets"][...], f["events_offsets"][...]
        steps, events = f["steps"][...], f["events"][...]
    n = 4
    start, comp = [0] * n, [[0, 0] for _ in range(n)]
    for r in range(n):
        ev = events[eo[r]:eo[r + 1]]
        sr = [e for e in ev if ops[e["op"]] == "MPI_Sendrecv"]
        start[r] = int(sr[0]["t_enter"])
        for x in steps[so[r]:so[r + 1]]:
            if x["region"] == composite:
                s = int(x["step"])
                comp[r][s] = int(x["t_end"] - x["t_begin"]) - int(sr[s]["t_exit"] - sr[s]["t_enter"])

    def end(c):
        e0 = [max(start[r], start[r ^ 1]) + c[r][0] for r in range(n)]
        return max(max(e0[r], e0[r ^ 2]) + c[r][1] for r in range(n))
    base = end(comp)
    gains = []
    for name, stages in (("balance step 0 of composite", [0]), ("balance step 1 of composite", [1]), ("balance steps of composite", [0, 1])):
        c = [row[:] for row in comp]
        for s in stages:
            m = sum(c[r][s] for r in range(n)) / n
            for r in range(n):
                c[r][s] = m
        gains.append((name, f"{(base - end(c)) * 1e-9:.6f}"))
    return gains


def cross_validation(train_output):
    """The accuracy perfsift train prints on its '10-fold cross-validation' line (the third
    word, '%' dropped; '' when there is none), as awk read it."""
    for line in train_output.splitlines():
        if re.search(r"10-fold cross-validation +[0-9]", line):
            words = line.split()
            return words[2].replace("%", "", 1) if len(words) > 2 else ""
    return ""


def accuracy_at_least(text, percent):
    try:
        return float(text) >= percent
    except ValueError:
        return False


def main(argv):
    if len(argv) < 4:
        print(__doc__, file=sys.stderr)
        return 2
    mode = argv[1]
    ARGS.update(perfsift=argv[2], work=argv[3], store=argv[4] if len(argv) > 4 else "", messages=argv[5] if len(argv) > 5 else "")
    if not hasattr(AnalyzeTest, f"test_{mode}"):
        print(f"FAIL: unknown mode {mode}")
        return 1
    global perfsift
    perfsift = harness.Perfsift(argv[2])
    sys.stdout.reconfigure(line_buffering=True)  # in order with the commands' output
    result = unittest.TextTestRunner(stream=sys.stdout, verbosity=2).run(AnalyzeTest(f"test_{mode}"))
    print("PASS" if result.wasSuccessful() else "FAIL")
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
