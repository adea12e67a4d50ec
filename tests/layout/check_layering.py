#!/usr/bin/env python3
"""The layout's arrows, checked on every #include: a folder includes only what the layering
table of docs/architecture.md allows it, and none of the system headers the table forbids.

Usage: check_layering.py SOURCE_ROOT [--map FILE] (default: SOURCE_ROOT/docs/architecture.md).
Prints each forbidden include as file:line and exits 1; exits 2 when the map has no
well-formed layering table."""
import re
import sys
from pathlib import Path

# The table follows this line of the map.
TABLE_MARKER = "<!-- layering rules:"
HEADER = ["folder", "may include", "must not include"]
PROJECT_DIRS = ("collect/", "io/", "config/", "kernels/", "pipeline/")
GENERATED = ("ops.h",)  # the operation table generated from collect/mpi_functions.toml
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
SYSTEM_INCLUDE = re.compile(r'^\s*#\s*include\s+<([^>]+)>')
NAME = re.compile(r"^`([A-Za-z0-9_./-]+)`$")


class MapError(Exception):
    pass


def cells(line: str) -> list:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def names(cell: str, where: str) -> list:
    """A cell's comma-separated `names`; an empty cell is no names."""
    if not cell:
        return []
    out = []
    for item in cell.split(","):
        m = NAME.match(item.strip())
        if not m:
            raise MapError(f"{where}: '{item.strip()}' is not a `name` in backticks")
        out.append(m.group(1))
    return out


def read_rules(path: Path):
    """The layering table: {folder: (may include, must not include)}, in the map's order."""
    if not path.is_file():
        raise MapError(f"{path}: no such file; the layering rules live in docs/architecture.md")
    lines = path.read_text(encoding="utf-8").splitlines()
    start = next((n for n, line in enumerate(lines) if line.strip().startswith(TABLE_MARKER)), None)
    if start is None:
        raise MapError(f"{path}: no layering table: the line '{TABLE_MARKER} ... -->' followed by a table "
                       f"| {' | '.join(HEADER)} | is missing")
    n = start + 1
    if n >= len(lines) or cells(lines[n]) != HEADER:
        raise MapError(f"{path}:{n + 1}: the layering table must open with | {' | '.join(HEADER)} |")
    n += 1
    if n >= len(lines) or not all(re.fullmatch(r":?-+:?", c) for c in cells(lines[n])) or len(cells(lines[n])) != 3:
        raise MapError(f"{path}:{n + 1}: the layering table's header needs its |---|---|---| line")
    rules = {}
    for n in range(n + 1, len(lines)):
        line = lines[n]
        if not line.strip().startswith("|"):
            break
        where = f"{path}:{n + 1}"
        row = cells(line)
        if len(row) != 3:
            raise MapError(f"{where}: a layering row has {len(row)} cells, expected 3 ({', '.join(HEADER)})")
        folder = names(row[0], where)
        if len(folder) != 1:
            raise MapError(f"{where}: the folder cell names one folder, e.g. `pipeline/report`")
        if folder[0] in rules:
            raise MapError(f"{where}: folder `{folder[0]}` has a second row")
        may = names(row[1], where)
        if not may:
            raise MapError(f"{where}: `{folder[0]}` may include nothing, not even its own folder")
        rules[folder[0]] = (may, names(row[2], where))
    if not rules:
        raise MapError(f"{path}:{start + 1}: the layering table has no rows")
    return rules


def owner(rules: dict, rel: str) -> str:
    """The most specific folder of the table holding rel."""
    best = ""
    for folder in rules:
        if rel.startswith(folder + "/") and len(folder) > len(best):
            best = folder
    return best


def allowed(rules: dict, src: str, folder: str, target: str) -> bool:
    here = Path(src).parent
    # a file's own header, and a subfolder's own files (a stage's own folder, stages/diagnosis/)
    if str(Path(target).parent) == str(here) and Path(target).stem == Path(src).stem:
        return True
    if str(here) != folder and target.startswith(str(here) + "/"):
        return True
    return any(target == a or target.startswith(a + "/") for a in rules[folder][0])


def violations(root: Path, rules: dict) -> list:
    bad = []
    for path in sorted(root.rglob("*")):
        if path.suffix not in (".h", ".cpp", ".c", ".in") or path.relative_to(root).parts[0].startswith("build"):
            continue
        rel = path.relative_to(root).as_posix()
        folder = owner(rules, rel)
        if not folder:
            continue  # tests/, bench/: anything
        may, must_not = rules[folder]
        for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            s = SYSTEM_INCLUDE.match(line)
            if s and any(s.group(1).startswith(f) for f in must_not):
                bad.append(f"{rel}:{n}: {folder}/ may not include <{s.group(1)}>")
                continue
            m = INCLUDE.match(line)
            if not m:
                continue
            target = m.group(1)
            if not target.startswith(PROJECT_DIRS) and target not in GENERATED:
                continue  # a header beside the file (collect's private ones) or a third-party one
            if not allowed(rules, rel, folder, target):
                bad.append(f"{rel}:{n}: {folder}/ may not include \"{target}\" (allowed: {', '.join(may)})")
    return bad


def main(argv: list) -> int:
    args = argv[1:]
    map_path = None
    if "--map" in args:
        i = args.index("--map")
        if i + 1 >= len(args):
            print("usage: check_layering.py SOURCE_ROOT [--map FILE]", file=sys.stderr)
            return 2
        map_path = Path(args[i + 1])
        del args[i:i + 2]
    if len(args) != 1:
        print("usage: check_layering.py SOURCE_ROOT [--map FILE]", file=sys.stderr)
        return 2
    root = Path(args[0])
    try:
        rules = read_rules(map_path or root / "docs" / "architecture.md")
    except MapError as e:
        print(f"check_layering: {e}", file=sys.stderr)
        return 2
    bad = violations(root, rules)
    for b in bad:
        print(b)
    if bad:
        print(f"check_layering: {len(bad)} includes cross the layout (docs/architecture.md, layering rules)",
              file=sys.stderr)
        return 1
    print(f"check_layering: every include follows the layout ({len(rules)} folders in docs/architecture.md)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
