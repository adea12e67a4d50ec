#!/usr/bin/env python3
"""The layout's arrows, checked on every #include: a folder includes only the folders the
architecture map allows (see the table below and ARCHITECTURE.md beside the repository).

Usage: check_layering.py SOURCE_ROOT. Prints each forbidden include as file:line and exits 1."""
import re
import sys
from pathlib import Path

# folder -> folders its files may include ("ops.h" is the generated operation table).
SHARED_PRODUCTS = ["pipeline/replay", "pipeline/whatif", "pipeline/classifier", "pipeline/knowledge"]
ALLOWED = {
    "collect": ["collect", "io", "config", "ops.h"],
    "io": ["io"],
    "config": ["config"],
    "kernels": ["kernels"],
    "pipeline/format": ["pipeline/format", "io"],
    "pipeline/engine": ["pipeline/engine", "pipeline/format", "io", "config", "kernels", "ops.h"],
    **{p: ["pipeline/engine", "pipeline/format", "io", "config", "kernels", "ops.h"] + SHARED_PRODUCTS
       for p in SHARED_PRODUCTS},
    # A stage never includes another stage; its own folder (stages/diagnosis/) is its own.
    "pipeline/stages": ["pipeline/engine", "pipeline/format", "io", "config", "kernels", "ops.h"] + SHARED_PRODUCTS,
    # The report renders each stage's results through the registry's hooks, never a stage's internals.
    "pipeline/report": ["pipeline/report", "pipeline/format", "pipeline/stages/registry.h", "pipeline/engine",
                        "io", "config", "kernels"],
    "pipeline/cli": ["pipeline", "io", "config", "kernels", "collect/include", "ops.h"],
}
PROJECT_DIRS = ("collect/", "io/", "config/", "kernels/", "pipeline/")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
SYSTEM_INCLUDE = re.compile(r'^\s*#\s*include\s+<([^>]+)>')
# Libraries a folder must not see (principle 2: kernels know nothing of MPI or HDF5;
# nothing above io knows the HDF5 API). The build refuses most of these too: kernels
# and config link neither MPI nor HDF5, so their headers are not on the include path.
FORBIDDEN_SYSTEM = {
    "kernels": ("mpi.h", "hdf5.h", "H5"),
    "config": ("mpi.h", "hdf5.h", "H5"),
    **{folder: ("hdf5.h", "H5") for folder in ALLOWED if folder.startswith("pipeline/")},
}


def owner(rel: str) -> str:
    """The most specific folder of ALLOWED holding rel."""
    best = ""
    for folder in ALLOWED:
        if rel.startswith(folder + "/") and len(folder) > len(best):
            best = folder
    return best


def allowed(src: str, folder: str, target: str) -> bool:
    if folder == "pipeline/stages":
        here = str(Path(src).parent)
        # a stage's own subfolder (stages/diagnosis/*) and the registry's own files
        if here != "pipeline/stages" and target.startswith(here + "/"):
            return True
        if Path(src).name.startswith("registry.") and target.startswith("pipeline/stages/registry"):
            return True
    for a in ALLOWED[folder]:
        if target == a or target.startswith(a + "/"):
            return True
    return False


def main() -> int:
    root = Path(sys.argv[1])
    bad = []
    for path in sorted(root.rglob("*")):
        if path.suffix not in (".h", ".cpp", ".c", ".in") or "build" in path.relative_to(root).parts[:1]:
            continue
        rel = str(path.relative_to(root))
        folder = owner(rel)
        if not folder:
            continue  # tests/, bench/: anything
        for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            s = SYSTEM_INCLUDE.match(line)
            if s and any(s.group(1).startswith(f) for f in FORBIDDEN_SYSTEM.get(folder, ())):
                bad.append(f"{rel}:{n}: {folder}/ may not include <{s.group(1)}>")
                continue
            m = INCLUDE.match(line)
            if not m:
                continue
            target = m.group(1)
            if not target.startswith(PROJECT_DIRS) and target != "ops.h":
                # a header beside the file (collect's private ones) or a third-party one
                continue
            if not allowed(rel, folder, target):
                bad.append(f"{rel}:{n}: {folder}/ may not include \"{target}\" (allowed: {', '.join(ALLOWED[folder])})")
    for b in bad:
        print(b)
    if bad:
        print(f"check_layering: {len(bad)} includes cross the layout", file=sys.stderr)
        return 1
    print("check_layering: every include follows the layout")
    return 0


if __name__ == "__main__":
    sys.exit(main())
