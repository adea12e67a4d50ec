! A rank ends the job with MPI_ABORT, in Fortran (mpif.h): the Fortran binding of Open MPI
! calls PMPI_Abort, past a C wrapper. Every rank makes 20 MPI_ALLREDUCE calls, then rank 1
! calls MPI_ABORT(MPI_COMM_WORLD, 5) while the others wait in MPI_BARRIER.
! Known answer: as tests/apps/abort_run.c with N = 20 and CODE = 5.
program abort_run
  implicit none
  include 'mpif.h'
  integer :: ierr, rank, i
  double precision :: one, total
  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  one = 1.0d0
  do i = 1, 20
    call MPI_ALLREDUCE(one, total, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  end do
  if (rank == 1) call MPI_ABORT(MPI_COMM_WORLD, 5, ierr)
  call MPI_BARRIER(MPI_COMM_WORLD, ierr)
  call MPI_FINALIZE(ierr)
end program abort_run
