// perfsift info --resolve DIR: the call sites a store could not name by a source line (a
// stripped binary's), resolved later against debug symbols found under DIR by their
// module's build-id, with addr2line.
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

#include "io/build_id.h"
#include "io/trace_store.h"
#include "pipeline/cli/commands.h"
#include "pipeline/format/text.h"

namespace perfsift::cli {

namespace {

std::string shell_quoted(const std::string &s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// "function (file:line)" for `offset` into `debug_file`, or "" when addr2line cannot say.
std::string addr2line(const std::string &debug_file, uint64_t offset) {
  char where[32];
  // The return address points after the call; step back into it.
  std::snprintf(where, sizeof where, " 0x%llx", static_cast<unsigned long long>(offset ? offset - 1 : 0));
  const std::string cmd = "LD_PRELOAD= addr2line -C -f -e " + shell_quoted(debug_file) + where + " 2>/dev/null";
  FILE *p = popen(cmd.c_str(), "r");
  if (!p) return "";
  char fn[4096] = "", loc[4096] = "";
  const bool read = std::fgets(fn, sizeof fn, p) && std::fgets(loc, sizeof loc, p);
  pclose(p);
  std::string f(fn), l(loc);
  while (!f.empty() && f.back() == '\n') f.pop_back();
  while (!l.empty() && l.back() == '\n') l.pop_back();
  if (!read || f == "??") return "";
  const auto colon = l.rfind(':');
  const int line = colon == std::string::npos ? 0 : std::atoi(l.c_str() + colon + 1);
  return pipeline::site_words(f, line > 0 ? l.substr(0, colon) : "", line, 0);
}

}  // namespace

int print_resolved_sites(const InfoOptions &o) {
  const io::TraceStore store(o.store);
  std::map<std::string, std::string> build_id;
  for (auto &[module, id] : io::read_module_build_ids(o.store)) build_id[module] = id;
  const auto &sites = store.callsites();
  int resolved = 0, unresolved = 0;
  std::printf("call sites without a source line, resolved against %s:\n", o.resolve_dir.c_str());
  for (size_t k = 0; k < sites.size(); ++k) {
    const io::CallSite &c = sites[k];
    if (c.line > 0 || c.module.empty()) continue;
    const auto id = build_id.find(c.module);
    const std::string label = pipeline::site_label(sites, k);
    if (id == build_id.end() || id->second.empty()) {
      std::printf("  %s: the store has no build-id for %s\n", label.c_str(), c.module.c_str());
      ++unresolved;
      continue;
    }
    const std::string debug = io::debug_file_for(o.resolve_dir, c.module, id->second);
    const std::string where = debug.empty() ? "" : addr2line(debug, c.offset);
    if (where.empty()) {
      std::printf("  %s: no debug symbols for build-id %s under %s\n", label.c_str(), id->second.c_str(),
                  o.resolve_dir.c_str());
      ++unresolved;
    } else {
      std::printf("  %s = %s\n", label.c_str(), where.c_str());
      ++resolved;
    }
  }
  std::printf("%d resolved, %d not\n", resolved, unresolved);
  return 0;
}

}  // namespace perfsift::cli
