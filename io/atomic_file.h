// Files that appear whole or not at all: written beside the target, then renamed.
#pragma once

#include <string>

namespace perfsift::io {

// Throws std::runtime_error naming the path and what to check.
void write_file_atomically(const std::string &path, const std::string &text);

}  // namespace perfsift::io
