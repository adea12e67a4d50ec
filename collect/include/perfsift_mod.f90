! perfsift region API for Fortran:  use perfsift
!   call perfsift_region_begin("solve") ... call perfsift_region_end("solve")
!   call perfsift_step_begin("exchange") ... call perfsift_step_end("exchange")
module perfsift
  use, intrinsic :: iso_c_binding, only: c_char, c_null_char
  implicit none
  private
  public :: perfsift_region_begin, perfsift_region_end, perfsift_step_begin, perfsift_step_end

  interface
    subroutine c_region_begin(name) bind(C, name="perfsift_region_begin")
      import :: c_char
      character(kind=c_char), dimension(*), intent(in) :: name
    end subroutine
    subroutine c_region_end(name) bind(C, name="perfsift_region_end")
      import :: c_char
      character(kind=c_char), dimension(*), intent(in) :: name
    end subroutine
    subroutine c_step_begin(name) bind(C, name="perfsift_step_begin")
      import :: c_char
      character(kind=c_char), dimension(*), intent(in) :: name
    end subroutine
    subroutine c_step_end(name) bind(C, name="perfsift_step_end")
      import :: c_char
      character(kind=c_char), dimension(*), intent(in) :: name
    end subroutine
  end interface

contains

  subroutine perfsift_region_begin(name)
    character(len=*), intent(in) :: name
    call c_region_begin(trim(name)//c_null_char)
  end subroutine

  subroutine perfsift_region_end(name)
    character(len=*), intent(in) :: name
    call c_region_end(trim(name)//c_null_char)
  end subroutine

  subroutine perfsift_step_begin(name)
    character(len=*), intent(in) :: name
    call c_step_begin(trim(name)//c_null_char)
  end subroutine

  subroutine perfsift_step_end(name)
    character(len=*), intent(in) :: name
    call c_step_end(trim(name)//c_null_char)
  end subroutine

end module perfsift
