#!/usr/bin/env python3
"""check_layering.py itself: it reads its rules from the map, refuses a map without a
well-formed table, and finds each kind of crossing in a small tree.

Usage: test_check_layering.py SOURCE_ROOT"""
import sys
import tempfile
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import check_layering as cl  # noqa: E402

ROOT = Path(sys.argv.pop(1)) if len(sys.argv) > 1 else Path(__file__).resolve().parents[2]

TABLE = """# map
<!-- layering rules: read by the check -->
| folder | may include | must not include |
|---|---|---|
| `kernels` | `kernels` | `mpi.h`, `H5` |
| `pipeline/stages` | `pipeline/engine`, `kernels` | |
| `pipeline/report` | `pipeline/report`, `io` | |
"""


def write(root: Path, rel: str, text: str) -> None:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)


def map_with(text: str) -> Path:
    d = Path(tempfile.mkdtemp())
    write(d, "architecture.md", text)
    return d / "architecture.md"


class Rules(unittest.TestCase):
    def test_the_repository_map_has_the_table(self):
        rules = cl.read_rules(ROOT / "docs" / "architecture.md")
        self.assertIn("pipeline/report", rules)
        self.assertNotIn("pipeline/stages", rules["pipeline/report"][0])
        self.assertIn("mpi.h", rules["kernels"][1])

    def test_a_map_without_the_table_is_refused(self):
        with self.assertRaisesRegex(cl.MapError, "no layering table"):
            cl.read_rules(map_with("# map\n\n| folder | may include | must not include |\n"))

    def test_a_row_with_a_missing_cell_is_refused(self):
        bad = TABLE.replace("| `pipeline/report` | `pipeline/report`, `io` | |", "| `pipeline/report` | `io` |")
        with self.assertRaisesRegex(cl.MapError, r"architecture.md:7: a layering row has 2 cells"):
            cl.read_rules(map_with(bad))

    def test_a_name_without_backticks_is_refused(self):
        with self.assertRaisesRegex(cl.MapError, "'io' is not a `name`"):
            cl.read_rules(map_with(TABLE.replace("`pipeline/report`, `io`", "`pipeline/report`, io")))

    def test_a_wrong_header_is_refused(self):
        with self.assertRaisesRegex(cl.MapError, "must open with"):
            cl.read_rules(map_with(TABLE.replace("| may include |", "| uses |")))


class Crossings(unittest.TestCase):
    def test_each_kind_of_crossing_is_found_and_nothing_else(self):
        rules = cl.read_rules(map_with(TABLE))
        root = Path(tempfile.mkdtemp())
        write(root, "kernels/a.cpp", '#include "kernels/a.h"\n#include <mpi.h>\n#include <H5Cpp.h>\n#include <vector>\n')
        write(root, "pipeline/stages/registry.cpp", '#include "pipeline/stages/registry.h"\n')
        write(root, "pipeline/stages/whatif.cpp", '#include "pipeline/stages/domino.h"\n#include "kernels/a.h"\n')
        write(root, "pipeline/stages/diagnosis/stage.cpp", '#include "pipeline/stages/diagnosis/diagnosis.h"\n')
        write(root, "pipeline/report/report.cpp", '#include "pipeline/stages/registry.h"\n#include "io/x.h"\n')
        write(root, "tests/t.cpp", '#include "pipeline/stages/registry.h"\n')
        found = cl.violations(root, rules)
        self.assertEqual(found, [
            "kernels/a.cpp:2: kernels/ may not include <mpi.h>",
            "kernels/a.cpp:3: kernels/ may not include <H5Cpp.h>",
            'pipeline/report/report.cpp:1: pipeline/report/ may not include "pipeline/stages/registry.h" '
            "(allowed: pipeline/report, io)",
            'pipeline/stages/whatif.cpp:1: pipeline/stages/ may not include "pipeline/stages/domino.h" '
            "(allowed: pipeline/engine, kernels)",
        ])


if __name__ == "__main__":
    unittest.main()
