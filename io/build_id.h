// Build-ids: the note (NT_GNU_BUILD_ID) the linker gives a module, equal in an executable,
// its stripped copy and its separated debug file, so that a store's call sites can be
// resolved later against debug symbols (perfsift info --resolve).
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace perfsift::io {

// The build-id of the ELF file at `path` in hex, or "" when the file is not 64-bit ELF,
// cannot be read, or has none.
std::string elf_build_id(const std::string &path);

// Where debug symbols for a module of build-id `id` live under `dir`, as debuggers look
// them up: DIR/.build-id/xx/rest.debug; else `module`'s file name in DIR when its build-id
// is `id`. "" when neither is.
std::string debug_file_for(const std::string &dir, const std::string &module, const std::string &id);

// The modules of a trace store's call sites, each with its build-id (/modules); empty for
// a store written before they were kept. Throws io::Error for a file that is no store.
std::vector<std::pair<std::string, std::string>> read_module_build_ids(const std::string &store);

}  // namespace perfsift::io
