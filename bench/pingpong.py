"""8-byte messaging from Python (mpi4py), for the collector's per-call cost in a Python program;
bench/pingpong.c's twin. 2 ranks: ping-pong, ITER round trips, 2 calls per rank per round
trip. 1 rank: ITER self-messages (Isend + Recv + Wait: 3 calls).
Prints: pingpong ITER SECONDS CALLS_PER_RANK CPU_SECONDS (rank 0's; the calling thread's CPU
time: what the calls cost, whatever else runs on the machine)"""
import sys
import time

from mpi4py import MPI


def main(iterations):
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    send, recv = bytearray(8), bytearray(8)
    comm.Barrier()
    t0, cpu0 = MPI.Wtime(), time.thread_time()
    calls = 2 * iterations
    if size == 1:
        calls = 3 * iterations
        for _ in range(iterations):
            request = comm.Isend(send, 0, 0)
            comm.Recv(recv, 0, 0)
            request.Wait()
    elif rank == 0:
        for _ in range(iterations):
            comm.Send(send, 1, 0)
            comm.Recv(recv, 1, 0)
    elif rank == 1:
        for _ in range(iterations):
            comm.Recv(recv, 0, 0)
            comm.Send(send, 0, 0)
    elapsed, cpu = MPI.Wtime() - t0, time.thread_time() - cpu0
    if rank == 0:
        print(f"pingpong {iterations} {elapsed:.9f} {calls} {cpu:.9f}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 100000)
