// What the steps of the OTF2 export (io/otf2_export.h) share: the archive being written,
// the plan its definitions are written from (gathered while the events are written), each
// rank's clock model, and the ids of the strings and call-site attributes. Internal to io/.
#pragma once

#include <otf2/otf2.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <set>
#include <string>
#include <system_error>
#include <unordered_map>
#include <utility>
#include <vector>

#include "io/clock_correction.h"
#include "io/otf2_export.h"
#include "io/otf2_messages.h"
#include "io/trace_store.h"

namespace perfsift::io::otf2_write {

namespace fs = std::filesystem;

inline OTF2_FlushType pre_flush(void *, OTF2_FileType, OTF2_LocationRef, void *, bool) { return OTF2_FLUSH; }
inline OTF2_TimeStamp post_flush(void *, OTF2_FileType, OTF2_LocationRef) { return 0; }

constexpr uint32_t kNoRank = OTF2_UNDEFINED_UINT32;
constexpr uint32_t kCommandString = 1;  // global string 0 is "", 1 the run's command
constexpr uint32_t kSiteStrings = 2;    // then the call sites' files, functions and modules

// The attributes of an MPI call's Enter that carry its call site (the store's /callsites
// row); only those with a value are written. perfsift's import reads them back.
enum SiteAttribute : uint32_t {
  kSiteLocation,
  kSiteFunction,
  kSiteModule,
  kSiteOffset,
  kSiteFunctionOffset,
  kSiteAttrs
};
struct SiteAttributeDef {
  const char *name, *description;
  OTF2_Type type;
};

// The archive being written; on any way out but finish() it is closed and its
// temporary directory removed.
class Writer {
 public:
  Writer(const std::string &tmp, const std::string &dir) : m_tmp(tmp), m_dir(dir) {
    m_ar = OTF2_Archive_Open(tmp.c_str(), "traces", OTF2_FILEMODE_WRITE, 1024 * 1024, 4 * 1024 * 1024,
                             OTF2_SUBSTRATE_POSIX, OTF2_COMPRESSION_NONE);
    if (!m_ar) fail("cannot create the archive", "check that the directory is writable");
    m_flush = {pre_flush, post_flush};
    ok(OTF2_Archive_SetFlushCallbacks(m_ar, &m_flush, nullptr), "setting up the archive");
    ok(OTF2_Archive_SetSerialCollectiveCallbacks(m_ar), "setting up the archive");
    ok(OTF2_Archive_SetCreator(m_ar, "perfsift export (measured run)"), "setting up the archive");
    ok(OTF2_Archive_SetDescription(m_ar, "a perfsift trace store written as Score-P lays out a run"),
       "setting up the archive");
  }
  ~Writer() {
    if (m_ar) OTF2_Archive_Close(m_ar);
    if (!m_done) {
      std::error_code ec;
      fs::remove_all(m_tmp, ec);
    }
  }
  Writer(const Writer &) = delete;
  Writer &operator=(const Writer &) = delete;

  OTF2_Archive *get() const { return m_ar; }
  [[noreturn]] void fail(const std::string &what, const std::string &fix) const {
    std::string m = m_dir + ": writing the OTF2 archive: " + what + Otf2MessageCapture::quoted();
    throw Error(m + "; " + fix + "; nothing was written");
  }
  void ok(OTF2_ErrorCode e, const char *what) const {
    if (e == OTF2_SUCCESS) return;
    Otf2MessageCapture::quoted(e);
    fail(what, "check the free space and permissions of the directory");
  }
  // Closes the archive and renames it into place.
  void finish() {
    const OTF2_ErrorCode e = OTF2_Archive_Close(m_ar);
    m_ar = nullptr;
    ok(e, "closing the archive");
    // A previous archive at DIR steps aside until the new one is in place.
    std::error_code ec;
    const std::string old = m_dir + ".old-" + std::to_string(::getpid());
    const bool replace = fs::exists(m_dir, ec);
    if (replace) {
      fs::remove_all(old, ec);
      fs::rename(m_dir, old, ec);
      if (ec) throw Error(m_dir + ": cannot replace the previous archive (" + ec.message() + "); nothing was written");
    }
    fs::rename(m_tmp, m_dir, ec);
    if (ec) {
      std::error_code back;
      if (replace) fs::rename(old, m_dir, back);
      throw Error(m_dir + ": cannot move the archive into place (" + ec.message() + "); nothing was written");
    }
    m_done = true;
    if (replace) fs::remove_all(old, ec);
  }

 private:
  Otf2MessageCapture m_messages;  // constructed before the archive opens, restored after it closes
  std::string m_tmp, m_dir;
  OTF2_Archive *m_ar = nullptr;
  OTF2_FlushCallbacks m_flush{};
  bool m_done = false;
};

// Everything the archive's definitions need, gathered while the events are written.
struct Plan {
  Plan(const TraceStore &st, Otf2Export &out) : st(st), out(out) {}
  const TraceStore &st;
  Otf2Export &out;
  int64_t start = 0;                  // the global clock's value at the store's time 0 (the clock's global offset)
  int64_t t_max = 0;                  // the largest global time written
  std::vector<std::string> counters;  // PAPI and other counters of the profile
  std::unordered_map<std::string, uint32_t> names;  // user region name -> OTF2 region
  std::vector<std::string> region_names;            // OTF2 region -> name (user regions, then ops)
  std::vector<uint32_t> region_of;                  // store region -> OTF2 region
  std::vector<bool> comm_written;                   // store comm -> defined in the archive
  struct Location {
    uint64_t id;
    int32_t rank, thread;
    uint64_t events;
  };
  std::vector<Location> locations;
  std::vector<std::vector<ClockRecord>> clock_points;  // per location: (time, offset) as local ClockOffsets
  std::set<int32_t> created;                           // store comms a CommCreate record names
  std::set<std::string> silent_ops;                    // ops whose partner or communicator has no record
  int64_t silent_calls = 0;
  // Call sites: the strings their attributes name (global string kSiteStrings + k), and
  // per store call site its SourceCodeLocation (when it has a file or line) and strings.
  std::vector<std::string> site_strings;
  std::unordered_map<std::string, uint32_t> site_string_ref;
  struct Site {
    uint32_t location = OTF2_UNDEFINED_SOURCE_CODE_LOCATION;
    uint32_t function = OTF2_UNDEFINED_STRING, module = OTF2_UNDEFINED_STRING, file = OTF2_UNDEFINED_STRING;
  };
  std::vector<Site> sites;
  std::vector<std::pair<uint32_t, uint32_t>> locations_written;  // SourceCodeLocation: (file string, line)
  int64_t sited_calls = 0;

  uint32_t site_string(const std::string &s) {
    auto [it, fresh] = site_string_ref.emplace(s, kSiteStrings + static_cast<uint32_t>(site_strings.size()));
    if (fresh) site_strings.push_back(s);
    return it->second;
  }
  void plan_sites() {
    for (const CallSite &c : st.callsites()) {
      Site s;
      if (!c.file.empty() || c.line > 0) {
        s.file = site_string(c.file);
        s.location = static_cast<uint32_t>(locations_written.size());
        locations_written.emplace_back(s.file, static_cast<uint32_t>(std::max(c.line, 0)));
      }
      if (!c.function.empty()) s.function = site_string(c.function);
      if (!c.module.empty()) s.module = site_string(c.module);
      sites.push_back(s);
    }
  }

  uint32_t op_region(uint16_t op) const { return static_cast<uint32_t>(region_names.size() - st.ops().size()) + op; }
};

// One rank's clock: global = local + offset(local), the store's linear model.
struct Clock {
  ClockRecord c;
  bool any = false;
  int64_t start = 0;
  // The local time whose corrected time is store time t.
  int64_t local(int64_t t) const {
    const int64_t g = t + start;
    if (!any) return g;
    int64_t l = g - c.offset_init_ns;
    for (int k = 0; k < 3; ++k) l = g - clock_offset_at(c, l);
    return l;
  }
};

// The parts of `s` between `sep`s, empty ones left out, appended to `out`.
inline void split(const std::string &s, char sep, std::vector<std::string> &out) {
  size_t b = 0;
  while (b <= s.size()) {
    size_t e = s.find(sep, b);
    if (e == std::string::npos) e = s.size();
    if (e > b) out.push_back(s.substr(b, e - b));
    b = e + 1;
  }
}

// The collective of an MPI operation, or of a nonblocking one (MPI_Iallreduce ->
// MPI_Allreduce); null for other operations.
const OTF2_CollectiveOp *collective_of(const std::string &op);
// The region role of an MPI operation's region.
OTF2_RegionRole role_of(const std::string &op);

// Rank `rank`'s events, one location per thread that made calls (thread 0 always, with
// the regions and counters; `profile` is its row of each counter), written to the archive.
void write_rank(Plan &p, const Writer &wr, int32_t rank, const std::vector<Event> &ev,
                const std::vector<RequestRecord> &requests, const std::vector<CompletionRecord> &completions,
                std::vector<StepRecord> steps, const Clock &clock, bool truncated, const std::vector<double> &profile);

// The archive's definitions, local (clock offsets) and global, from the plan.
void write_definitions(const Writer &wr, const Plan &p);

}  // namespace perfsift::io::otf2_write
