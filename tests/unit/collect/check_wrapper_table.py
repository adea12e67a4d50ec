#!/usr/bin/env python3
"""Diff the wrapper table against the installed mpi.h so gaps are visible.

Usage: check_wrapper_table.py [--generator GEN_WRAPPERS_PY] SPEC MPI_INCLUDE_DIR...

Fails when the table names a function mpi.h lacks (a typo or a removed function), or
when mpi.h has a function of a family the collector promises to cover (point-to-point,
completion, probe, collective, communicator constructor) that the table does not wrap.
Prints every other unwrapped function as information. The wrapped functions are the
generator's own expansion of the table (gen_wrappers.expand), by default the
gen_wrappers.py beside SPEC."""
import argparse
import importlib
import re
import sys
import tomllib
from pathlib import Path

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--generator", type=Path, help="path of gen_wrappers.py (default: beside SPEC)")
parser.add_argument("spec", type=Path)
parser.add_argument("include_dirs", nargs="*", type=Path)
args = parser.parse_args()

generator = args.generator or args.spec.parent / "gen_wrappers.py"
if not generator.is_file():
    sys.exit(f"check_wrapper_table: no generator at {generator}")
sys.path.insert(0, str(generator.resolve().parent))
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
gen_wrappers = importlib.import_module(generator.stem)

spec = tomllib.loads(args.spec.read_text())
headers = [d / "mpi.h" for d in args.include_dirs if (d / "mpi.h").exists()]
if not headers:
    sys.exit("check_wrapper_table: no mpi.h in " + " ".join(map(str, args.include_dirs)))
text = headers[0].read_text()
declared = set(re.findall(r"\bint\s+(MPI_[A-Za-z_0-9]+)\s*\(", text))

names = set(spec["manual"]) | {fn["name"] for fn in gen_wrappers.expand(spec)}

promised = re.compile(
    r"^MPI_(I?[BSR]?send|Recv|Irecv|[BSR]?send_init|Recv_init|Start|Startall|Sendrecv(_replace)?|"
    r"I?m?probe|I?mrecv|Wait(all|any|some)?|Test(all|any|some)?|Request_free|Cancel|"
    r"I?(barrier|bcast|gather|gatherv|scatter|scatterv|allgather|allgatherv|alltoall|alltoallv|alltoallw|"
    r"reduce|allreduce|reduce_scatter|reduce_scatter_block|scan|exscan)|"
    r"I?(neighbor_allgather|neighbor_allgatherv|neighbor_alltoall|neighbor_alltoallv|neighbor_alltoallw)|"
    r"Comm_(dup|dup_with_info|idup|split|split_type|create|create_group|free)|Intercomm_(create|merge)|"
    r"Init|Init_thread|Finalize|Abort|Pcontrol)$", re.IGNORECASE)

unknown = sorted(n for n in names if n not in declared)
missing = sorted(n for n in declared if promised.match(n) and n not in names)
others = sorted(n for n in declared if not promised.match(n) and n not in names and not n.startswith("MPI_T_"))
print(f"wrapper table: {len(names)} functions; mpi.h ({headers[0]}): {len(declared)} functions")
print(f"not wrapped (outside the promised families): {len(others)}")
print("  " + " ".join(others))
if unknown:
    print("ERROR: in the table but not in mpi.h:", " ".join(unknown))
if missing:
    print("ERROR: promised family members missing from the table:", " ".join(missing))
sys.exit(1 if unknown or missing else 0)
