"""A Python (mpi4py) program with known call sites, regions and a slow rank, for
tests/mpi/python_sites_test.py. Lines marked `# site: NAME` are the sites the test expects
(found by their mark, not by number). Rank 1 sleeps SLOW seconds in region "solve" before
the barrier in relax(): the others wait there."""
import sys
import time

from mpi4py import MPI

import perfsift

SLOW = float(sys.argv[1]) if len(sys.argv) > 1 else 0.5
comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()


@perfsift.region("exchange")
def exchange(rounds):
    buf, got = bytearray(8), bytearray(8)
    for _ in range(rounds):
        comm.Sendrecv(buf, (rank + 1) % size, 0, got, (rank - 1) % size, 0)  # site: sendrecv


def relax():
    if rank == 1:
        time.sleep(SLOW)
    comm.Barrier()  # site: relax_barrier


for iteration in range(2):
    exchange(4)
    with perfsift.region("solve"):
        relax()
comm.Barrier()  # site: final_barrier
