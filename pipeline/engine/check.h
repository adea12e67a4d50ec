// Internal-error checks. A failed check is a bug in perfsift, not a mistake of the user:
// it says so, names the source line, and exits with its own code (3), apart from the
// user errors (exit 2: bad input, wrong option) that every command reports in one line.
#pragma once

#include <stdexcept>
#include <string>

namespace perfsift {

inline constexpr int kExitUserError = 2;
inline constexpr int kExitInternalError = 3;

// Thrown by PERFSIFT_CHECK; main() turns it into exit code 3 (and MPI_Abort with 3 in an
// MPI job), where any other std::exception is a user error (exit 2).
class InternalError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

[[noreturn]] inline void internal_error(const char *file, int line, const std::string &what) {
  throw InternalError(std::string("internal error at ") + file + ":" + std::to_string(line) + ": " + what +
                      " (a bug in perfsift: please report it with the command line)");
}

}  // namespace perfsift

// PERFSIFT_CHECK(condition, message): an invariant the code relies on.
#define PERFSIFT_CHECK(cond, msg)                                       \
  do {                                                                  \
    if (!(cond)) ::perfsift::internal_error(__FILE__, __LINE__, (msg)); \
  } while (false)
