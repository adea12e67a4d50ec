"""Regions from a Python program, through the collector's region API (collect/include/perfsift.h).

    import perfsift

    with perfsift.region("solve"):      # a region: a node of the store's region tree
        ...

    @perfsift.region("exchange")        # a decorator: every call of the function is a visit
    def exchange(): ...

    @perfsift.region                    # named after the function: "Solver.step"
    def step(self): ...

    for it in range(n):
        with perfsift.step("iteration"):    # a step region: executions numbered 0, 1, ...
            ...

Under `perfsift collect` the collector is preloaded into the program and these reach it
(ctypes, nothing compiled); regions nest as in C and belong to the thread that called
MPI_Init, as there. Without the collector each is a no-op, and the first says so once.
Standard library only: the package's other modules (h5py, pandas) are not imported.
"""

import ctypes
import functools
import warnings

__all__ = ["region", "step", "collected"]

_API = ("perfsift_region_begin", "perfsift_region_end", "perfsift_step_begin", "perfsift_step_end")
_functions = None  # resolved on first use: [begin, end, step begin, step end], or () without the collector


def _collector():
    global _functions
    if _functions is None:
        try:
            process = ctypes.CDLL(None)  # the program and what is loaded with it: LD_PRELOAD's libraries
            found = [getattr(process, name) for name in _API]
        except (OSError, AttributeError):
            found = ()
            warnings.warn("perfsift: the collector is not loaded (run the program under `perfsift collect`); "
                          "regions are not recorded", RuntimeWarning, stacklevel=3)
        for f in found:
            f.argtypes = [ctypes.c_char_p]
            f.restype = None
        _functions = found
    return _functions


def collected():
    """True when the program runs with perfsift's collector loaded (under `perfsift collect`)."""
    return bool(_collector())


def _c_name(name):
    if isinstance(name, str):
        name = name.encode("utf-8", "surrogateescape")
    if not isinstance(name, bytes) or not name:
        raise TypeError(f"perfsift: a region's name is a non-empty str or bytes, not {name!r}")
    if b"\0" in name:
        raise ValueError(f"perfsift: a region's name cannot hold a NUL character: {name!r}")
    return name


class _Region:
    """A region or step: a context manager, and a decorator whose function's every call is an execution."""

    def __init__(self, name, first):
        self.name = _c_name(name)
        self._first = first  # index of its begin function in _API; end follows it

    def __enter__(self):
        api = _collector()
        if api:
            api[self._first](self.name)
        return self

    def __exit__(self, *exc):
        api = _collector()
        if api:
            api[self._first + 1](self.name)
        return False

    def __call__(self, function):
        @functools.wraps(function)
        def within(*args, **kwargs):
            with self:
                return function(*args, **kwargs)

        return within

    def __repr__(self):
        kind = "step" if self._first else "region"
        return f"perfsift.{kind}({self.name.decode('utf-8', 'surrogateescape')!r})"


def _made(name, first):
    if callable(name):  # @perfsift.region without a name: the function's own
        return _Region(name.__qualname__, first)(name)
    return _Region(name, first)


def region(name):
    """A region named `name` (str or bytes): `with perfsift.region("solve"):`, or a decorator
    (`@perfsift.region("solve")`, or `@perfsift.region` for the function's qualified name)."""
    return _made(name, 0)


def step(name):
    """A step region: as region(), and each execution numbered (what-if questions can name one)."""
    return _made(name, 2)
