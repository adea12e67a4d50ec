// Call sites of Python programs. An MPI call that a Python extension module makes (mpi4py's
// MPI.*.so) on a thread that runs Python is placed at the Python code that asked for it: the
// innermost Python frame outside the module's own package (file, line, function), read
// through CPython's API found at run time (the collector does not link libpython; a program
// without an interpreter pays one branch a call).
//
// At call time a site is a key (call_sites.h, call_site_key): the call's return address,
// or, for a Python call, a Python site's index with bit 62 set (user-space return addresses
// never have it).
// Whether a return address lies in an extension module is decided once per address;
// the Python site of a frame once per (code object, instruction offset).
#pragma once

#include <cstdint>

#include "io/trace_model.h"

namespace perfsift::collect {

extern bool g_python_sites;  // a CPython interpreter runs in this process

// Looks for a running interpreter in the process; sets g_python_sites. Once, at MPI_Init.
void detect_python();

inline constexpr uint64_t kPythonSiteBit = uint64_t{1} << 62;  // bit 63 tags call paths (call_sites.h)
inline bool is_python_site(uint64_t key) { return (key & kPythonSiteBit) != 0; }

// The key of the site of a call returning to `return_address` (see above): the return
// address itself when the call is not Python's.
uint64_t python_site_key(uint64_t return_address);

// The site a Python key stands for: module and file are the Python file, offset and line the
// line, function the code's qualified name.
io::CallSite python_call_site(uint64_t key);

}  // namespace perfsift::collect
