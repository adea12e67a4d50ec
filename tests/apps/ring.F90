! Ring exchange in Fortran, built twice: with mpif.h and (-DUSE_MPI_MODULE) with
! `use mpi`. Each rank sends ROUNDS messages of
! 256 integers to rank+1 and receives from rank-1, inside region "ring" (use perfsift).
! Known answer per rank: 10 MPI_Send, 10 MPI_Recv of 1024 bytes, 1 MPI_Barrier.
program ring
  use perfsift
#ifdef USE_MPI_MODULE
  use mpi
#endif
  implicit none
#ifndef USE_MPI_MODULE
  include 'mpif.h'
#endif
  integer :: ierr, rank, nprocs, nxt, prv, i
  integer :: status(MPI_STATUS_SIZE)
  integer :: buf(256), inb(256)
  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, nprocs, ierr)
  nxt = mod(rank + 1, nprocs)
  prv = mod(rank + nprocs - 1, nprocs)
  buf = rank
  call perfsift_region_begin("ring")
  do i = 1, 10
    if (mod(rank, 2) == 0) then
      call MPI_SEND(buf, 256, MPI_INTEGER, nxt, i, MPI_COMM_WORLD, ierr)
      call MPI_RECV(inb, 256, MPI_INTEGER, prv, i, MPI_COMM_WORLD, status, ierr)
    else
      call MPI_RECV(inb, 256, MPI_INTEGER, MPI_ANY_SOURCE, i, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
      call MPI_SEND(buf, 256, MPI_INTEGER, nxt, i, MPI_COMM_WORLD, ierr)
    end if
  end do
  call perfsift_region_end("ring")
  call MPI_BARRIER(MPI_COMM_WORLD, ierr)
  call MPI_FINALIZE(ierr)
end program ring
