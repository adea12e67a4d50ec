#include "pipeline/engine/op_traits.h"

#include "ops.h"

namespace perfsift::pipeline {

bool is_init_op(const std::string &name) { return name == "MPI_Init" || name == "MPI_Init_thread"; }
bool is_lifecycle_op(const std::string &name) { return is_init_op(name) || name == "MPI_Finalize"; }

// From the generated operation table (collect/mpi_functions.toml), by name.
std::vector<OpTraits> classify_ops(const std::vector<std::string> &names) {
  std::vector<OpTraits> out(names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    out[i].init = is_init_op(names[i]);
    for (const auto &info : collect::kOps) {
      if (names[i] != info.name) continue;
      const std::string kind = info.kind, flow = info.flow;
      OpTraits &t = out[i];
      if (kind == "send")
        t.cls = OpClass::Send;
      else if (kind == "recv" || kind == "mrecv")
        t.cls = OpClass::Recv;
      else if (kind == "sendrecv" || kind == "sendrecv_replace")
        t.cls = OpClass::Sendrecv;
      else if (kind == "isend" || kind == "irecv" || kind == "imrecv" || kind == "start" || kind == "startall" ||
               kind == "icoll")
        t.cls = OpClass::Post;
      else if (kind == "send_init" || kind == "recv_init")
        t.templ = true;
      else if (kind.rfind("wait", 0) == 0 || kind.rfind("test", 0) == 0)
        t.cls = OpClass::Completion;
      else if (kind == "coll" || (kind == "comm_new" && names[i] != "MPI_Comm_create_group"))
        t.cls = OpClass::Collective;
      else if (names[i] == "MPI_Finalize")
        t.cls = OpClass::Finalize;
      if (flow == "from-root")
        t.flow = kernels::CollectiveFlow::FromRoot;
      else if (flow == "to-root")
        t.flow = kernels::CollectiveFlow::ToRoot;
      t.linear = flow == "linear";
      break;
    }
  }
  return out;
}

}  // namespace perfsift::pipeline
