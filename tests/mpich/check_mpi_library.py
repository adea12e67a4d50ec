#!/usr/bin/env python3
"""check_mpi_library.py STORE FAMILY: the store's `mpi_library` attribute (the collector's
MPI_Get_library_version) names the MPI perfsift is built against: FAMILY openmpi or mpich
(other: only non-empty). Prints the attribute's first line."""
import sys

import h5py

store, family = sys.argv[1], sys.argv[2]
with h5py.File(store, "r") as f:
    lib = f.attrs["mpi_library"]
lib = lib.decode() if isinstance(lib, bytes) else str(lib)
first = lib.split("\n")[0]
print(f"{store}: mpi_library: {first}")
expect = {"openmpi": "Open MPI", "mpich": "MPICH"}.get(family)
if not lib.strip():
    sys.exit("mpi_library is empty")
if expect and not lib.startswith(expect):
    sys.exit(f"mpi_library does not name {expect}, the MPI perfsift is built against: {first!r}")
if lib != lib.strip():
    sys.exit(f"mpi_library has surrounding white space: {lib!r}")
