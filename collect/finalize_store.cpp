// MPI_Finalize: the rank's last records, then the trace store, written together by all
// ranks; when that fails anywhere, every rank keeps its whole trace in a spill file for
// `perfsift recover`.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "io/atomic_file.h"
#include "io/clock_correction.h"
#include "network_probe.h"
#include "runtime.h"
#include "store_module.h"
#include "store_writers.h"
#include "tick_clock.h"

namespace perfsift::collect {

namespace {
constexpr int kGatherTag = 7002;
constexpr int kProbeTag = 7003;
}  // namespace

void Runtime::finish(void *site) {
  if (!m_active || m_finished) return;
  close_tracing(site);
  checkpoint();
  m_active = false;
  m_finished = true;
  const int64_t entered = mono_ns();
  const ClockOffset measured = measure_clock();
  const int64_t synchronised = mono_ns();
  m_clock.offset_fin_ns = measured.offset_ns;
  // Times are the offset plus a tick conversion: the bound holds both (tick_clock.h).
  m_clock.error_fin_ns = measured.error_ns + g_clock.pair_error_ns;
  m_clock.local_fin_ns = measured.local_ns;
  if (m_cfg.network_probe) m_run.network_probe = measure_network(m_private, m_run.rank_hosts, kProbeTag);
  const int64_t probed = mono_ns();
  warn_about_run_problems();
  write_store();
  PMPI_Comm_free(&m_private);
  if (m_rank == 0 && std::getenv("PERFSIFT_REPORT_TIMING"))
    std::fprintf(
        stderr, "perfsift: shut-down %.1f ms on rank 0: clock offsets %.1f, network measurement %.1f, the store %.1f\n",
        (mono_ns() - entered) * 1e-6, (synchronised - entered) * 1e-6, (probed - synchronised) * 1e-6,
        (mono_ns() - probed) * 1e-6);
}

// Records MPI_Finalize, closes regions left open and stops the counters.
void Runtime::close_tracing(void *site) {
  io::Event fin;
  fin.op = static_cast<uint16_t>(Op::MPI_Finalize);
  fin.site = reinterpret_cast<uint64_t>(site);
  fin.t_enter = now_ticks();
  m_program_os = m_window_os.close();
  fin.comm = 0;
  m_regions.close_user_regions();
  fin.t_exit = now_ticks();
  commit(fin);
  // The other threads' MPI time and bytes count in the whole program's profile (they
  // have left MPI: MPI_Finalize may not overlap other calls).
  int64_t *totals = m_threads.main().cum;
  for (int k = 1; k < m_threads.count(); ++k)
    for (int m = 0; m < io::kBuiltinMetricCount; ++m) totals[m] += m_threads[k].cum[m];
  m_regions.close_top();  // the root region
  g_tracing = false;
  m_papi.stop();
}

// Collective: what went wrong on any rank, said once by rank 0.
void Runtime::warn_about_run_problems() {
  const int64_t local_mismatches = m_regions.mismatches(), local_failures = m_spill.failures(),
                local_untraced = m_threads.untraced();
  int64_t mismatches = 0;
  PMPI_Reduce(&local_mismatches, &mismatches, 1, MPI_INT64_T, MPI_SUM, 0, m_private);
  if (mismatches > 0)
    m_warnings.say(std::to_string(mismatches) +
                   " region begin/end calls did not nest (ends without a matching begin, or regions left open); they "
                   "were closed at the nearest match");
  int64_t failures = 0;
  PMPI_Reduce(&local_failures, &failures, 1, MPI_INT64_T, MPI_SUM, 0, m_private);
  if (failures > 0)
    m_warnings.say("the spill file could not be written " + std::to_string(failures) +
                   " times; events were kept in memory instead");
  int64_t untraced = 0;
  PMPI_Reduce(&local_untraced, &untraced, 1, MPI_INT64_T, MPI_SUM, 0, m_private);
  if (untraced > 0)
    m_warnings.say(std::to_string(untraced) + " threads calling MPI could not be given event buffers (more than " +
                   std::to_string(ThreadRegistry::kMaxThreads) +
                   " threads, or out of memory); their calls are not in the trace");
}

// The whole rank: what the spill file holds, then every thread's records still in
// memory, merged into one stream (io::merge_thread_streams).
io::RankTrace Runtime::build_trace() {
  io::SpillState st = snapshot_state(true);
  io::RankTrace t = std::move(st.profile_part);
  const int n = m_threads.count();
  bool spilled = false;
  for (int k = 0; k < n; ++k) {
    const ThreadState &ts = m_threads[k];
    spilled |= ts.spilled_events > 0 || ts.written_events > 0 || ts.written_requests > 0 || ts.written_completions > 0;
  }
  if (spilled) {
    m_spill.file().close();
    try {
      io::SpillContents back = io::read_spill(m_spill.file().path(), false);
      t.events = std::move(back.trace.events);
      t.requests = std::move(back.trace.requests);
      t.completions = std::move(back.trace.completions);
      t.steps = std::move(back.trace.steps);
    } catch (const std::exception &e) {
      m_warnings.say(std::string("reading back spilled events failed: ") + e.what());
    }
  }
  for (int k = 0; k < n; ++k) {
    ThreadState &ts = m_threads[k];
    m_spill.prepare_for_disk(ts);
    t.events.insert(t.events.end(), ts.events.begin() + ts.written_events, ts.events.end());
    t.requests.insert(t.requests.end(), ts.requests.begin() + ts.written_requests, ts.requests.end());
    t.completions.insert(t.completions.end(), ts.completions.begin() + ts.written_completions, ts.completions.end());
  }
  t.steps.insert(t.steps.end(), m_regions.executions().begin(), m_regions.executions().end());
  t.callsites = m_sites.table();
  io::merge_thread_streams(t);
  return t;
}

namespace {

// The store writer's error as one line, without the store's name in front.
std::string one_line(std::string error, const std::string &output) {
  if (error.empty()) error = "unknown error";
  if (error.rfind(output + ": ", 0) == 0) error.erase(0, output.size() + 2);
  while (!error.empty() && (error.back() == '\n' || error.back() == ' ')) error.pop_back();
  for (auto &c : error)
    if (c == '\n') c = ' ';
  return error;
}

}  // namespace

// Collective: the store, written together; when that fails anywhere, every rank keeps its
// whole trace in a spill file for `perfsift recover`.
void Runtime::write_store() {
  io::RankTrace trace = build_trace();
  io::correct_times(trace, m_start_ns);
  const int64_t t_write = mono_ns();
  StoreWriters plan;
  plan_store_writers(m_private, record_bytes(trace), static_cast<uint64_t>(m_cfg.aggregate_mb) << 20, plan);
  std::vector<io::RankTrace> mine;  // this rank's trace first, then those it writes for others
  mine.push_back(std::move(trace));
  gather_traces(m_private, plan, mine, kGatherTag);
  std::string error;
  int ok = 1;
  const io::FileSizeSignalIgnored guard;  // a store past `ulimit -f` fails with EFBIG instead of killing the rank
  try {
    std::vector<std::string> op_names;
    for (const auto &o : kOps) op_names.emplace_back(o.name);
    if (plan.writer) {
      const WriteStoreFn write = load_store_writer(reinterpret_cast<const void *>(&load_store_writer), &error);
      const StoreWrite args{plan.writers, &m_cfg.output, &m_run, &mine, &op_names};
      if (!write || !write(&args, &error)) ok = 0;
    }
  } catch (const std::exception &e) {
    ok = 0;
    error = e.what();
  }
  // The lowest failing rank, or nranks when every rank succeeded.
  int mine_failed = ok ? m_nranks : m_rank, first_failed = m_nranks;
  PMPI_Allreduce(&mine_failed, &first_failed, 1, MPI_INT, MPI_MIN, m_private);
  if (first_failed == m_nranks) {
    if (m_rank == 0 && std::getenv("PERFSIFT_REPORT_TIMING"))
      std::fprintf(stderr, "perfsift: store written in %.3f s by %d of %d processes\n", (mono_ns() - t_write) * 1e-9,
                   plan.group_count, m_nranks);
    m_spill.file().close();
    std::remove(m_spill.file().path().c_str());
    PMPI_Barrier(m_private);
    if (m_rank == 0) {
      std::error_code ec;
      std::filesystem::remove(m_cfg.spill_dir, ec);  // only if empty
    }
    return;
  }
  const bool saved = spill_whole_rank(mine.front());
  int all_saved = 0, mine_saved = saved ? 1 : 0;
  PMPI_Allreduce(&mine_saved, &all_saved, 1, MPI_INT, MPI_MIN, m_private);
  // One line, by the first rank that failed: the reason, and what to run once it is fixed.
  if (m_rank == first_failed) {
    error = one_line(error, m_cfg.output);
    const bool no_room = error.find("no room") != std::string::npos || error.find("No space") != std::string::npos ||
                         error.find("too large") != std::string::npos;
    std::fprintf(stderr, "perfsift: writing %s failed (%s); %s in %s; %s run `perfsift recover %s -o %s`\n",
                 m_cfg.output.c_str(), error.c_str(),
                 all_saved ? "every rank's data is kept" : "the ranks' data is kept as far as it could be written",
                 m_cfg.spill_dir.c_str(), no_room ? "once there is room" : "once that is fixed",
                 m_cfg.spill_dir.c_str(), m_cfg.output.c_str());
  }
}

// The whole rank, with its corrected times and final clock record, into a fresh spill file
// that replaces the one written so far only once it is whole (on a full disk the old one,
// checkpointed at MPI_Finalize, stays). True when the rank's data is in a spill file.
bool Runtime::spill_whole_rank(io::RankTrace &t) {
  m_spill.file().close();
  io::SpillWriter w;
  // Start 0 and a zero clock record: the times below are already corrected.
  bool ok = w.open(m_cfg.spill_dir, io::make_spill_header(m_rank, m_nranks, 0), nullptr, true) &&
            w.write_records(t.events, t.requests, t.completions, t.steps);
  if (ok) {
    io::SpillState st;
    st.run = m_run;
    st.profile_part = std::move(t);
    st.profile_part.events.clear();  // written above; the state chunk carries the rest
    st.profile_part.clock = io::ClockRecord{};
    ok = w.write_state(st) && w.publish();
  }
  if (!ok) w.discard();
  return ok || m_checkpointed;
}

}  // namespace perfsift::collect
