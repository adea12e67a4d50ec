// Variable-length strings in HDF5 files live in global heap collections. HDF5 1.10
// trusts the size each heap object claims and copies that many bytes when a string is
// read, so a damaged size crashes the reader (h5dump too). Both stores check their
// collections with this before reading any string. Internal to io/.
#pragma once

#include <hdf5.h>

#include <string>

namespace perfsift::io::h5 {

// What is wrong with the global heap collections of the open `file` (at `path`), or ""
// when nothing is. Only the file's metadata is searched: datasets' raw data (nearly all
// of a trace store's bytes) is skipped, so the check reads a few
// kilobytes whatever the store's size.
std::string damaged_global_heap(const std::string &path, hid_t file);

}  // namespace perfsift::io::h5
