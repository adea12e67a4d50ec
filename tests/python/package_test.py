"""The python package (python/perfsift) against real stores: a synthetic run with a known
imbalance and a non-UTF-8 region name is analysed under mpirun, then read back.
Usage: package_test.py PERFSIFT_BINARY WORKDIR"""
import os
import shutil
import sys
import unittest

import h5py
import numpy as np

import perfsift

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import harness  # noqa: E402  tests/harness.py

PERFSIFT, WORK = sys.argv[1], sys.argv[2]
HOT = "solve/main loop"
ODD = b"io\xff"  # a name that is not UTF-8: it must come back byte for byte


def analyze(store, out, pipeline=None):
    config = ["--config", pipeline] if pipeline else []
    harness.Perfsift(PERFSIFT).analyze(store, out, *config, out=harness.CAPTURE, err=harness.CAPTURE)


class Package(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        os.makedirs(WORK, exist_ok=True)
        cls.store = os.path.join(WORK, "run.h5")
        cls.results = os.path.join(WORK, "run.results.h5")
        regions = b"solve," + HOT.encode() + b"," + ODD
        harness.captured([PERFSIFT, "synth", "-o", cls.store, "--ranks", "4", "--events-per-rank", "400", "--regions",
                          regions, "--inject", f"imbalance:region={HOT},ranks=2,factor=3"], expect=0)
        analyze(cls.store, cls.results)

    def test_findings_name_the_injected_imbalance(self):
        r = perfsift.load(self.results)
        top = r.problems.iloc[0]
        self.assertIn(HOT, top["where"])
        self.assertIn("2", str(top["ranks"]))
        self.assertGreater(top["lost_s"], 0)
        self.assertEqual(r.problems.attrs["units"]["lost_s"], "s")
        self.assertEqual(list(r.problems.columns[:3]), ["rank", "kind", "where"])  # the writer's order
        self.assertEqual(top["place"], "region")  # the problem's identity, typed
        self.assertEqual(top["place_region"], top["where"])
        self.assertEqual(top["fix_action"], "balance")

    def second_run(self):
        """The same synthetic program with its imbalance halved, analysed."""
        store, results = os.path.join(WORK, "rerun.h5"), os.path.join(WORK, "rerun.results.h5")
        if not os.path.exists(results):
            harness.captured([PERFSIFT, "synth", "-o", store, "--ranks", "4", "--events-per-rank", "400", "--regions",
                              b"solve," + HOT.encode() + b"," + ODD, "--inject",
                              f"imbalance:region={HOT},ranks=2,factor=1.5"], expect=0)
            analyze(store, results)
        return results

    def test_stack_puts_many_runs_in_one_frame(self):
        rerun = self.second_run()
        runs = perfsift.stack([self.results, rerun])
        self.assertEqual(list(runs.columns[:8]), ["results", *("run_" + k for k in perfsift.RUN_COLUMNS)])
        self.assertEqual(set(runs["results"]), {self.results, rerun})
        self.assertTrue((runs["run_ranks"] == 4).all())
        self.assertIn("kind", runs.columns)
        self.assertIn("ranks", runs.columns)  # the problems' culprits, beside the run's rank count
        regions = perfsift.stack([self.results, rerun], table="profile/regions")
        self.assertEqual(len(regions), 2 * len(perfsift.load(self.results).profile.regions))
        self.assertIn("wall_mean_s", regions.columns)

    def test_compare_runs_the_program_and_returns_frames(self):
        c = perfsift.compare(self.results, self.second_run(), perfsift=PERFSIFT)
        self.assertEqual(c["format"], "perfsift-comparison")
        self.assertLess(c["program_time_s"]["after"], c["program_time_s"]["before"])
        row = c["problems"][(c["problems"]["kind"] == "load-imbalance") & (c["problems"]["where"] == HOT)]
        self.assertEqual(len(row), 1, c["problems"][["status", "kind", "where", "ranks"]])
        self.assertIn(row.iloc[0]["status"], ("persists", "gone"))
        self.assertIn("wall_s.change", c["regions"].columns)
        with self.assertRaises(RuntimeError) as failed:
            perfsift.compare(self.results, os.path.join(WORK, "absent.h5"), perfsift=PERFSIFT)
        self.assertIn("absent.h5", str(failed.exception))

    def test_stage_tables_and_matrices(self):
        r = perfsift.load(self.results)
        self.assertIn("profile", r.stages)
        wall = r.profile.rank_region_wall_s
        self.assertEqual(wall.shape[0], 4)
        self.assertEqual(wall.index.name, "rank")
        self.assertIn(HOT, list(wall.columns))
        # rank 2 computes three times as long in the hot region (its wall time holds the
        # others' waiting for it too)
        comp = r.profile.rank_region_comp_s
        self.assertGreater(comp.loc[2, HOT], 2.0 * comp[HOT].drop(index=2).mean())
        q = r.whatif.questions
        self.assertIn("baseline", set(q["question"]))
        self.assertIn("baseline_error", r.whatif.attrs)
        self.assertEqual(r.dissimilarity.distance.shape, (4, 4))

    def test_non_utf8_names_round_trip(self):
        r = perfsift.load(self.results)
        paths = list(r.profile.regions["path"])
        self.assertIn(ODD, [p.encode("utf-8", "surrogateescape") for p in paths])
        with perfsift.open_trace(self.store) as t:
            names = [n.encode("utf-8", "surrogateescape") for n in t.regions["name"]]
            self.assertIn(ODD, names)

    def test_trace_events_whole_and_chunked(self):
        with perfsift.open_trace(self.store) as t:
            everything = t.events()
            self.assertEqual(len(everything), int(t._offsets[-1]))
            chunks = list(t.events(chunk_rows=333))
            self.assertTrue(all(len(c) <= 333 for c in chunks))
            self.assertEqual(sum(len(c) for c in chunks), len(everything))
            self.assertTrue(np.array_equal(np.concatenate([c["t_enter"] for c in chunks]), everything["t_enter"]))
            self.assertIn("MPI_Allreduce", set(everything["op"].astype(str)))
            rank2 = t.events(ranks=[2])
            self.assertTrue((rank2["rank"] == 2).all())
            busy = everything.groupby("region_path")["t_exit"].count()
            self.assertIn(HOT, busy.index)
            self.assertEqual(t.profile("wall").shape, (4, len(t.regions)))
            with self.assertRaises(KeyError):
                t.profile("PAPI_NOPE")
            with self.assertRaises(IndexError):
                t.events(ranks=[9])

    def test_stages_that_did_not_run_say_so(self):
        pipeline = os.path.join(WORK, "profile_only.toml")
        with open(pipeline, "w") as f:
            f.write('[pipeline]\nstages = ["profile"]\n')
        out = os.path.join(WORK, "profile_only.results.h5")
        analyze(self.store, out, pipeline)
        r = perfsift.load(out)
        self.assertIn("profile", r)
        with self.assertRaisesRegex(AttributeError, "did not run"):
            r.whatif

    def test_wrong_files_are_one_clear_error(self):
        with self.assertRaisesRegex(perfsift.FormatError, "perfsift analyze -o"):
            perfsift.load(self.store)  # a trace store, not results
        with self.assertRaisesRegex(perfsift.FormatError, "perfsift collect"):
            perfsift.open_trace(self.results)
        junk = os.path.join(WORK, "junk.h5")
        with open(junk, "wb") as f:
            f.write(b"not hdf5 at all")
        with self.assertRaises(perfsift.FormatError):
            perfsift.load(junk)
        with self.assertRaises(FileNotFoundError):
            perfsift.load(os.path.join(WORK, "absent.h5"))

    def test_results_of_another_version_are_refused_in_one_line(self):
        for version in (3, 0, 5):
            other = os.path.join(WORK, f"version{version}.results.h5")
            shutil.copy(self.results, other)
            with h5py.File(other, "r+") as f:
                f.attrs.modify("version", version)
            line = (f"{other}: results version {version}; this perfsift reads results version 4: "
                    "analyse the trace store again with `perfsift analyze`")
            with self.assertRaises(perfsift.FormatError) as refused:
                perfsift.load(other)
            self.assertEqual(str(refused.exception), line.replace("this perfsift", "this package"))
            for fmt in ("text", "json", "html"):
                written = os.path.join(WORK, f"version{version}.{fmt}")
                for output in ([], ["-o", written]):
                    r = harness.Perfsift(PERFSIFT).report(other, "--format", fmt, *output, out=harness.CAPTURE,
                                                          err=harness.CAPTURE, expect=2)
                    self.assertEqual(r.stderr, f"perfsift: {line}\n", (fmt, output))
                    self.assertEqual(r.stdout, "", (fmt, output))
                    self.assertFalse(os.path.exists(written), (fmt, output))

        current = harness.Perfsift(PERFSIFT).report(self.results, "--format", "json", out=harness.CAPTURE)
        self.assertIn('"version": 4', current.stdout)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
