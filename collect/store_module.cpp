// libperfsift_store_writer.so: see store_module.h.
#include "store_module.h"

#include <exception>

#include "io/trace_store.h"

extern "C" __attribute__((visibility("default"))) int perfsift_write_store(const perfsift::collect::StoreWrite *w,
                                                                           std::string *error) noexcept {
  try {
    perfsift::io::write_trace_store(w->comm, *w->path, *w->run, *w->owned, *w->op_names);
    return 1;
  } catch (const std::exception &e) {
    *error = e.what();
  } catch (...) {
    *error = "unknown error";
  }
  return 0;
}
