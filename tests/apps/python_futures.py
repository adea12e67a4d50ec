"""An mpi4py.futures program (`python3 -m mpi4py.futures python_futures.py`): a pool of the
other ranks maps a function over a few items, within a region of the master; prints the
results, for tests/mpi/python_sites_test.py."""
from mpi4py.futures import MPIPoolExecutor

import perfsift


def square(x):
    return x * x


if __name__ == "__main__":
    with perfsift.region("map"), MPIPoolExecutor() as pool:
        print("results", list(pool.map(square, range(6))))
