"""Two Python threads calling MPI (mpi4py, MPI_THREAD_MULTIPLE), for
tests/mpi/python_sites_test.py: a thread exchanges ROUNDS messages around the ring while
the main thread runs Python code (holding the GIL) and meets the other ranks in barriers.
Lines marked `# site: NAME` are the sites the test expects."""
import sys
import threading

from mpi4py import MPI

ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 200
comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
ring = comm.Dup()


def poll():
    out, got = bytearray(8), bytearray(8)
    for _ in range(ROUNDS):
        ring.Sendrecv(out, (rank + 1) % size, 1, got, (rank - 1) % size, 1)  # site: thread_sendrecv


poller = threading.Thread(target=poll)
poller.start()
total = 0
for i in range(400_000):
    total += i
    if i % 100_000 == 0:
        comm.Barrier()  # site: main_barrier
poller.join()
print("threads done", rank, MPI.Query_thread() == MPI.THREAD_MULTIPLE)
