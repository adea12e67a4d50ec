"""Read perfsift's HDF5 outputs into pandas DataFrames.

    import perfsift
    r = perfsift.load("run.results.h5")     # what `perfsift analyze -o` wrote
    r.problems                              # the ranked problems, a DataFrame
    r.profile.regions                       # a stage's table
    r.profile.rank_region_wall_s            # a [rank x region] matrix
    r.whatif.attrs["baseline_error"]        # a stage's figures
    t = perfsift.open_trace("run.h5")       # what `perfsift collect` wrote
    for events in t.events(chunk_rows=1_000_000): ...
    runs = perfsift.stack(["a.results.h5", "b.results.h5"])   # many runs, one DataFrame
    c = perfsift.compare("before.h5", "after.h5")             # `perfsift compare` as DataFrames

    with perfsift.region("solve"): ...      # in a program under `perfsift collect` (perfsift/regions.py)

Every table's units are in ``df.attrs["units"]`` (column -> unit) and its meaning in
``df.attrs["description"]``. Strings are decoded as UTF-8; bytes that are not UTF-8 (a
region name may hold any byte but NUL) are kept as surrogate escapes, so
``name.encode("utf-8", "surrogateescape")`` gives back the stored bytes.
See docs/python.md.
"""

from __future__ import annotations

import importlib
import json
import os
import shutil
import subprocess
import tempfile
from typing import Iterator, Optional, Sequence, Union

from .regions import collected, region, step

__all__ = ["load", "open_trace", "stack", "compare", "Results", "Section", "Trace", "FormatError", "region", "step",
           "collected"]


class _OnFirstUse:
    """A module imported when first used: a program that only marks regions imports no h5py or pandas."""

    def __init__(self, name):
        self._name = name

    def __getattr__(self, attribute):
        module = importlib.import_module(self._name)
        self.__dict__.update(module.__dict__)
        return getattr(module, attribute)


h5py = _OnFirstUse("h5py")
np = _OnFirstUse("numpy")
pd = _OnFirstUse("pandas")

RESULTS_FORMAT = "perfsift-results"
RESULTS_VERSION = 4  # io/results_store.h: kResultsVersion
TRACE_FORMAT = "perfsift-trace"


class FormatError(ValueError):
    """The file is not what perfsift wrote, or of a version this package does not read."""


def _text(value):
    if isinstance(value, bytes):
        return value.decode("utf-8", "surrogateescape")
    if isinstance(value, np.ndarray) and value.dtype.kind in "OS":
        return [_text(v) for v in value]
    return value


def _attrs(obj) -> dict:
    return {k: _text(v) for k, v in obj.attrs.items()}


def _column(ds) -> np.ndarray:
    """A dataset as a column: fixed-width byte strings become str."""
    if ds.shape is None:  # an empty table's column (HDF5 null dataspace)
        return np.array([], dtype=object if ds.dtype.kind in "OS" else ds.dtype)
    data = ds[()]
    if ds.dtype.kind == "S":
        return np.array([v.decode("utf-8", "surrogateescape") for v in data], dtype=object)
    if ds.dtype.kind == "O":
        return np.array([_text(v) for v in data], dtype=object)
    return data


def _open(path: str, expected: str, writer: str) -> h5py.File:
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path}: no such file")
    try:
        f = h5py.File(path, "r")
    except OSError as e:
        raise FormatError(f"{path}: not an HDF5 file or damaged ({e}); {writer}") from None
    fmt = _text(f.attrs.get("format", ""))
    if fmt != expected:
        f.close()
        raise FormatError(f"{path}: format is '{fmt}', expected '{expected}'; {writer}")
    return f


def _table(group: h5py.Group) -> pd.DataFrame:
    """A results table: one dataset per column (h5py lists them in the writer's order:
    tables track creation order)."""
    names = list(group.keys())
    df = pd.DataFrame({n: _column(group[n]) for n in names}, columns=names)
    df.attrs["description"] = _text(group.attrs.get("description", ""))
    df.attrs["units"] = {n: _text(group[n].attrs.get("units", "")) for n in names}
    df.attrs["descriptions"] = {n: _text(group[n].attrs.get("description", "")) for n in names}
    return df


def _matrix(ds: h5py.Dataset) -> pd.DataFrame:
    """A [rows x columns] results matrix, labelled by its dims and column_labels."""
    data = ds[()] if ds.shape is not None else np.empty((0, 0))
    data = np.atleast_2d(data)
    a = _attrs(ds)
    dims = a.get("dims") or ["row", "column"]
    labels = a.get("column_labels")
    columns = labels if labels is not None and len(labels) == data.shape[1] else None
    df = pd.DataFrame(data, columns=columns)
    df.index.name = dims[0]
    df.columns.name = dims[1] if len(dims) > 1 else None
    df.attrs["description"] = a.get("description", "")
    df.attrs["units"] = a.get("units", "")
    return df


def _item(obj):
    if isinstance(obj, h5py.Group):
        return _table(obj) if _text(obj.attrs.get("kind", "")) == "table" else Section(obj)
    if obj.ndim == 2:
        return _matrix(obj)
    return pd.Series(_column(obj), name=obj.name.rsplit("/", 1)[-1])


class Section:
    """A stage's results: its tables and matrices as attributes, its figures in ``attrs``."""

    def __init__(self, group: h5py.Group):
        self.name = group.name.strip("/")
        self.attrs = _attrs(group)
        self._items = {k: _item(group[k]) for k in group.keys()}

    def __getattr__(self, key):
        items = self.__dict__.get("_items", {})
        if key in items:
            return items[key]
        raise AttributeError(f"{self.__dict__.get('name', '')} has no table '{key}' (it has: {', '.join(items)})")

    def __getitem__(self, key):
        return self._items[key]

    def __contains__(self, key):
        return key in self._items

    def __dir__(self):
        return list(self._items) + ["attrs", "name", "tables"]

    def tables(self) -> list:
        return list(self._items)

    def __repr__(self):
        return f"<perfsift section {self.name}: {', '.join(self._items)}>"


class Results:
    """A results store (`perfsift analyze -o`). Top-level tables (problems, notes,
    evidence) are DataFrames; each stage that ran is a Section."""

    def __init__(self, path: str):
        self.path = path
        with _open(path, RESULTS_FORMAT, "a results store is written by `perfsift analyze -o`") as f:
            version = int(f.attrs.get("version", 0))
            if version != RESULTS_VERSION:  # docs/results.md, "Compatibility"
                raise FormatError(f"{path}: results version {version}; this package reads results version "
                                  f"{RESULTS_VERSION}: analyse the trace store again with `perfsift analyze`")
            self.attrs = _attrs(f)
            self._items = {k: _item(f[k]) for k in f.keys()}
        self.stages = list(self.attrs.get("stages") or [])

    def __getattr__(self, key):
        items = self.__dict__.get("_items", {})
        if key in items:
            return items[key]
        stages = self.__dict__.get("stages", [])
        why = "the stage did not run (pipeline.stages)" if key not in stages else "the stage wrote no results"
        raise AttributeError(f"{self.__dict__.get('path', '')}: no '{key}': {why}; present: {', '.join(items)}")

    def __getitem__(self, key):
        return self._items[key]

    def __contains__(self, key):
        return key in self._items

    def __dir__(self):
        return list(self._items) + ["attrs", "path", "stages"]

    def __repr__(self):
        return f"<perfsift results {self.path}: {', '.join(self._items)}>"


def load(path: str) -> Results:
    """Loads a results store written by `perfsift analyze -o` (everything but the trace:
    results stores are small)."""
    return Results(path)


RUN_COLUMNS = ["command", "ranks", "start_time", "hosts", "mpi_library", "program_time_s", "wall_time_s"]


def stack(paths: Sequence[str], table: str = "problems") -> pd.DataFrame:
    """Many runs' results stores in one DataFrame: `table` of each ("problems", or a stage's
    table such as "profile/regions"), each row with its run's `results` path and its
    metadata in front as run_command, run_ranks, run_start_time, run_hosts,
    run_mpi_library, run_program_time_s, run_wall_time_s (the table's own columns, such as
    a problem's culprit `ranks`, keep their names), the runs in the order given. A run whose store lacks the table
    contributes its metadata alone (one row, the table's columns empty)."""
    frames = []
    for path in paths:
        r = load(path)
        run = r.run.attrs if "run" in r else {}
        part = r
        for key in table.split("/"):
            part = part[key] if key in part else None
            if part is None:
                break
        df = part.copy() if isinstance(part, pd.DataFrame) else pd.DataFrame(index=[0])
        meta = {"results": path, **{"run_" + k: run.get(k) for k in RUN_COLUMNS}}
        for k, v in reversed(list(meta.items())):
            df.insert(0, k, [v] * len(df))
        frames.append(df)
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=["results", *("run_" + k for k in RUN_COLUMNS)])


def compare(before: Union[str, Sequence[str]], after: Union[str, Sequence[str]], perfsift: Optional[str] = None,
            config: Optional[str] = None) -> dict:
    """`perfsift compare` of one run or several on each side (results stores, trace stores or
    OTF2 archives; docs/compare.md), run by the perfsift program (`perfsift`: its path;
    default: $PERFSIFT, else the one on PATH). Returns its JSON report as a dict whose
    "problems" and "regions" are DataFrames and "operations" the rows' DataFrame; a failure
    raises RuntimeError with perfsift's one-line message."""
    binary = perfsift or os.environ.get("PERFSIFT") or shutil.which("perfsift")
    if not binary:
        raise RuntimeError("perfsift.compare: no perfsift program (give perfsift=PATH, set $PERFSIFT or put it on PATH)")
    sides = [[before] if isinstance(before, str) else list(before), [after] if isinstance(after, str) else list(after)]
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "compare.json")
        cmd = [binary, "compare", "--before", *sides[0], "--after", *sides[1], "--json", out]
        if config:
            cmd += ["--config", config]
        done = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True, errors="replace")
        if done.returncode not in (0, 1) or not os.path.exists(out):
            lines = [line for line in done.stderr.splitlines() if line.strip()]
            raise RuntimeError(lines[-1] if lines else f"perfsift compare exited with code {done.returncode}")
        with open(out) as f:
            d = json.load(f)
    d["problems"] = pd.DataFrame(d["problems"])
    d["regions"] = pd.json_normalize(d["regions"])
    d["operations"] = pd.json_normalize(d["operations"]["rows"])
    return d


class Trace:
    """A trace store (`perfsift collect`), read lazily: events can be far larger than memory."""

    def __init__(self, path: str):
        self.path = path
        self._f = _open(path, TRACE_FORMAT, "a trace store is written by `perfsift collect`")
        self.attrs = _attrs(self._f)
        self.nranks = int(self.attrs.get("nranks", 0))
        self.ops = _column(self._f["ops"]).tolist()
        self.regions = _table_of_columns(self._f["regions"])
        self._offsets = self._f["events_offsets"][()]

    def close(self):
        self._f.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def metrics(self) -> list:
        return list(self._f["profile"].keys())

    def profile(self, metric: str = "wall") -> pd.DataFrame:
        """A profile metric as a [rank x region path] DataFrame (NaN: a missing rank)."""
        if metric not in self._f["profile"]:
            raise KeyError(f"{self.path}: no profile metric '{metric}' (it has: {', '.join(self.metrics())})")
        ds = self._f["profile"][metric]
        df = pd.DataFrame(ds[()], columns=self.regions["path"].tolist())
        df.index.name, df.columns.name = "rank", "region"
        df.attrs["units"] = _text(ds.attrs.get("units", ""))
        return df

    def _frame(self, rows: np.ndarray) -> pd.DataFrame:
        df = pd.DataFrame(rows)
        ops = np.array(self.ops, dtype=object)
        df["op"] = pd.Categorical.from_codes(df["op"].astype(np.int64), categories=ops) \
            if len(df) and df["op"].max() < len(ops) else df["op"]
        paths = self.regions["path"].to_numpy(dtype=object)
        ok = (df["region"] >= 0) & (df["region"] < len(paths))
        df["region_path"] = np.where(ok, paths[df["region"].clip(0, max(len(paths) - 1, 0))], None) \
            if len(paths) else None
        df.attrs["units"] = {"t_enter": "ns", "t_exit": "ns", "bytes": "B", "bytes_recv": "B"}
        return df

    def events(self, ranks: Optional[Sequence[int]] = None,
               chunk_rows: Optional[int] = None):
        """The MPI events of `ranks` (all by default) as one DataFrame, or, with
        `chunk_rows`, an iterator of DataFrames of at most that many rows each (for stores
        larger than memory). `op` is categorical with the operation names; `region_path`
        names each event's innermost region."""
        ranks = range(self.nranks) if ranks is None else ranks
        for r in ranks:
            if not 0 <= r < self.nranks:
                raise IndexError(f"{self.path}: rank {r} is not in 0..{self.nranks - 1}")
        spans = []
        for r in ranks:  # adjacent ranks' rows are adjacent: one span, one read
            a, b = int(self._offsets[r]), int(self._offsets[r + 1])
            if spans and spans[-1][1] == a:
                spans[-1] = (spans[-1][0], b)
            else:
                spans.append((a, b))
        if chunk_rows is None:
            parts = [self._f["events"][a:b] for a, b in spans if b > a]
            rows = np.concatenate(parts) if parts else np.empty(0, dtype=self._f["events"].dtype)
            return self._frame(rows)
        if chunk_rows <= 0:
            raise ValueError("chunk_rows must be positive")
        return self._chunks(spans, chunk_rows)

    def _chunks(self, spans, chunk_rows) -> Iterator[pd.DataFrame]:
        for a, b in spans:
            for start in range(a, b, chunk_rows):
                yield self._frame(self._f["events"][start:min(b, start + chunk_rows)])

    def __repr__(self):
        return f"<perfsift trace {self.path}: {self.nranks} ranks, {int(self._offsets[-1])} events>"


def _table_of_columns(group: h5py.Group) -> pd.DataFrame:
    return pd.DataFrame({k: _column(group[k]) for k in group.keys()})


def open_trace(path: str) -> Trace:
    """Opens a trace store written by `perfsift collect` (or `perfsift synth`)."""
    return Trace(path)
