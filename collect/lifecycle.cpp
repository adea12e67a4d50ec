// The hand-written wrappers listed under `manual` in mpi_functions.toml: start-up,
// shut-down, MPI_Abort and MPI_Pcontrol markers (C and Fortran), the region API, and the
// paths that save a rank's data when it dies.
#include <dirent.h>
#include <sys/syscall.h>
#include <dlfcn.h>
#include <fnmatch.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdarg>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "perfsift.h"
#include "recorder.h"
#include "runtime.h"
#include "tick_clock.h"

using namespace perfsift::collect;

namespace {

// A dying rank's data is saved by a watcher thread, not in the signal handler: the
// handler may have interrupted malloc or the loader while they held a lock, and saving
// needs both. The handler only writes the signal number to a pipe (async-signal-safe),
// waits for the watcher's acknowledgement, then lets the signal take its course: the
// previous handler (Open MPI's stack trace, the program's own) or the default action.
// The thread that initialised MPI is the one stopped meanwhile: a termination signal
// that lands on another thread is passed to it. Other threads may go on recording: the
// flush copies their records out (Runtime::emergency_flush).
int g_request_pipe[2] = {-1, -1};
int g_ack_pipe[2] = {-1, -1};
pthread_t g_traced_thread;

// Faults: handled whatever was installed before (then chained to it).
constexpr int kFaultSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGSYS};
// Termination (mpirun, srun, scancel, a time limit, a closed terminal): handled only where
// the default action would kill the rank; a program that handles one itself keeps it.
constexpr int kTerminationSignals[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGXCPU, SIGUSR1, SIGUSR2, SIGALRM, SIGPIPE};
constexpr int kMaxSignal = 65;
struct sigaction g_previous[kMaxSignal];

bool is_fault(int sig) {
  for (int f : kFaultSignals)
    if (f == sig) return true;
  return false;
}

void watcher() {
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, nullptr);  // never run the handler on this thread
  int sig = 0;
  for (;;) {
    pollfd p{g_request_pipe[0], POLLIN, 0};
    const int r = poll(&p, 1, 1000);
    if (r > 0 && read(g_request_pipe[0], &sig, sizeof sig) == sizeof sig) break;
    if (r == 0) runtime().idle_flush();
    if (r < 0 && errno != EINTR) {  // no timed waits: wait for a signal only
      while (read(g_request_pipe[0], &sig, sizeof sig) < 0 && errno == EINTR) {}
      break;
    }
  }
  runtime().emergency_flush(true);
  (void)!write(g_ack_pipe[1], &sig, sizeof sig);
}

void on_signal(int sig, siginfo_t *info, void *) {
  const int saved_errno = errno;
  // A termination signal on another thread: the traced thread takes it (its handler
  // runs there; this one returns). A fault must be handled where it happened.
  if (!is_fault(sig) && !pthread_equal(pthread_self(), g_traced_thread) && (!info || info->si_code <= 0) &&
      pthread_kill(g_traced_thread, sig) == 0) {
    errno = saved_errno;
    return;
  }
  static volatile sig_atomic_t flushing = 0;
  if (!flushing) {
    flushing = 1;
    if (g_request_pipe[1] >= 0 && write(g_request_pipe[1], &sig, sizeof sig) == sizeof sig) {
      pollfd p{g_ack_pipe[0], POLLIN, 0};
      while (poll(&p, 1, 10000) < 0 && errno == EINTR) {}
    }
  }
  // The previous disposition takes over: a fault returns to the faulting instruction and
  // raises again; a raised or sent signal, pending while this handler runs, follows.
  sigaction(sig, &g_previous[sig], nullptr);
  if (!is_fault(sig) || (info && info->si_code <= 0)) raise(sig);
  errno = saved_errno;
}

void install_crash_handlers() {
  static bool installed = false;
  if (installed) return;
  installed = true;
  g_traced_thread = pthread_self();
  if (pipe2(g_request_pipe, O_CLOEXEC) == 0 && pipe2(g_ack_pipe, O_CLOEXEC) == 0) std::thread(watcher).detach();
  auto install = [](int sig, bool only_over_default) {
    struct sigaction sa {
    }, old{};
    if (sig >= kMaxSignal || sigaction(sig, nullptr, &old) != 0) return;
    if (old.sa_handler == SIG_IGN && !(old.sa_flags & SA_SIGINFO)) return;  // respect ignored signals
    if (only_over_default && (old.sa_flags & SA_SIGINFO || old.sa_handler != SIG_DFL)) return;
    g_previous[sig] = old;
    sa.sa_sigaction = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigaction(sig, &sa, nullptr);
  };
  for (int sig : kFaultSignals) install(sig, false);
  for (int sig : kTerminationSignals) install(sig, true);
  std::atexit([] { runtime().emergency_flush(false); });  // exit() without MPI_Finalize
}

void after_init(int64_t t0, Op op, void *site) {
  runtime().start(t0, op, site);  // this thread becomes thread 0
  if (runtime().active()) install_crash_handlers();
}

// ---- Hydra's grace period. When a rank dies, MPICH's Hydra proxy (hydra_pmi_proxy) kills the
// others with SIGKILL at once, which no rank survives to save its data; Open MPI's mpirun sends
// SIGTERM first, and collect gives it 3 s (odls_base_sigkill_timeout). The collector is
// preloaded into the proxy too (Hydra passes the whole environment on), so there, in a
// collected run only, the first SIGKILL becomes SIGTERM to every child, up to
// kHydraGraceNs for them to save and end, and then the SIGKILL as asked.
using KillFn = int (*)(pid_t, int);
KillFn g_real_kill = nullptr;
KillFn g_real_killpg = nullptr;
bool g_in_collected_hydra_proxy = false;
std::atomic<bool> g_grace_given{false};
constexpr int64_t kHydraGraceNs = 3'000'000'000;

// What follows may run inside the proxy's signal handler (Hydra kills the ranks from its
// SIGPIPE handler when mpiexec is gone): no malloc, no stdio, system calls only.

// The state letter and parent of process `pid` from /proc/PID/stat ('\0' when it is gone).
char process_state(pid_t pid, pid_t *parent) {
  char path[32] = "/proc/", digits[16];
  int n = 0;
  for (auto v = static_cast<unsigned>(pid); n == 0 || v; v /= 10) digits[n++] = static_cast<char>('0' + v % 10);
  size_t at = 6;
  while (n) path[at++] = digits[--n];
  std::memcpy(path + at, "/stat", 6);
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return '\0';
  char buf[512];
  const ssize_t got = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (got <= 0) return '\0';
  buf[got] = '\0';
  // "pid (comm) S ppid ...": the command name may hold spaces and parentheses.
  const char *p = std::strrchr(buf, ')');
  if (!p || p[1] != ' ' || !p[2] || p[3] != ' ') return '\0';
  const char state = p[2];
  long ppid = 0;
  for (p += 4; *p >= '0' && *p <= '9'; ++p) ppid = ppid * 10 + (*p - '0');
  if (parent) *parent = static_cast<pid_t>(ppid);
  return state;
}

constexpr int kMaxChildren = 4096;

// This process's live children (the ranks a Hydra proxy started), up to kMaxChildren.
int live_children(pid_t *out) {
  const int dir = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) return 0;
  const pid_t self = getpid();
  int count = 0;
  alignas(8) char buf[8192];
  for (long got; count < kMaxChildren && (got = syscall(SYS_getdents64, dir, buf, sizeof buf)) > 0;)
    for (long off = 0; off < got && count < kMaxChildren;) {
      const auto *d = reinterpret_cast<const struct dirent64 *>(buf + off);
      off += d->d_reclen;
      long pid = 0;
      const char *c = d->d_name;
      for (; *c >= '0' && *c <= '9'; ++c) pid = pid * 10 + (*c - '0');
      if (*c || pid <= 0) continue;
      pid_t parent = 0;
      const char state = process_state(static_cast<pid_t>(pid), &parent);
      if (parent == self && state != '\0' && state != 'Z') out[count++] = static_cast<pid_t>(pid);
    }
  close(dir);
  return count;
}

void give_children_grace() {
  if (g_grace_given.exchange(true)) return;
  static pid_t children[kMaxChildren];  // static: no allocation, and the proxy's stack may be small
  const int n = live_children(children);
  for (int i = 0; i < n; ++i) {
    const pid_t group = getpgid(children[i]);
    if (group > 0 && group != getpgrp())
      g_real_killpg(group, SIGTERM);
    else
      g_real_kill(children[i], SIGTERM);
  }
  timespec start{}, now{};
  clock_gettime(CLOCK_MONOTONIC, &start);
  for (;;) {
    bool alive = false;
    for (int i = 0; i < n && !alive; ++i) {
      const char state = process_state(children[i], nullptr);
      alive = state != '\0' && state != 'Z';
    }
    clock_gettime(CLOCK_MONOTONIC, &now);
    const int64_t waited = (now.tv_sec - start.tv_sec) * 1'000'000'000LL + (now.tv_nsec - start.tv_nsec);
    if (!alive || waited > kHydraGraceNs) return;
    const timespec pause{0, 10'000'000};
    nanosleep(&pause, nullptr);
  }
}

// A collector built against one MPI, preloaded into a program that loads the other, would
// call the program's MPI with its own handle layout (MPICH's integers, Open MPI's pointers)
// and crash inside it; its wrappers cannot stand aside either (they take the arguments in
// their own types). So it refuses before main, in one line per process: both libraries in
// one process means exactly this mix.
#if defined(OMPI_MAJOR_VERSION)
constexpr const char *kBuiltAgainst = "Open MPI";
#elif defined(MPICH_VERSION)
constexpr const char *kBuiltAgainst = "MPICH";
#else
constexpr const char *kBuiltAgainst = nullptr;
#endif

__attribute__((constructor)) void refuse_a_foreign_mpi() {
  g_real_kill = reinterpret_cast<KillFn>(dlsym(RTLD_NEXT, "kill"));
  g_real_killpg = reinterpret_cast<KillFn>(dlsym(RTLD_NEXT, "killpg"));
  if (char exe[512]; std::getenv("PERFSIFT_OUTPUT")) {
    const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
      exe[n] = '\0';
      const char *slash = std::strrchr(exe, '/');
      g_in_collected_hydra_proxy = std::strcmp(slash ? slash + 1 : exe, "hydra_pmi_proxy") == 0;
    }
  }
  const bool open_mpi = dlsym(RTLD_DEFAULT, "ompi_mpi_comm_world") != nullptr;
  const bool mpich = dlsym(RTLD_DEFAULT, "MPII_Version_string") || dlsym(RTLD_DEFAULT, "MPIR_Version_string");
  if (!kBuiltAgainst || !open_mpi || !mpich) return;
  const char *other = std::strcmp(kBuiltAgainst, "MPICH") == 0 ? "Open MPI" : "MPICH";
  char exe[512] = "this program";
  if (const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1); n > 0) exe[n] = '\0';
  char line[1024];
  const int len = std::snprintf(line, sizeof line,
                                "perfsift: %s loads %s, but this collector (LD_PRELOAD) is built against %s; "
                                "its calls would crash: collect with a perfsift built against %s\n",
                                exe, other, kBuiltAgainst, other);
  if (len > 0 && write(STDERR_FILENO, line, std::min<size_t>(len, sizeof line - 1)) < 0) {}
  _exit(2);
}

}  // namespace

// ---------------------------------------------------------------- kill (Hydra's proxy)

extern "C" PERFSIFT_EXPORT int kill(pid_t pid, int sig) {
  if (!g_real_kill) g_real_kill = reinterpret_cast<KillFn>(dlsym(RTLD_NEXT, "kill"));
  if (g_in_collected_hydra_proxy && sig == SIGKILL) give_children_grace();
  return g_real_kill(pid, sig);
}

extern "C" PERFSIFT_EXPORT int killpg(pid_t group, int sig) {
  if (!g_real_killpg) g_real_killpg = reinterpret_cast<KillFn>(dlsym(RTLD_NEXT, "killpg"));
  if (g_in_collected_hydra_proxy && sig == SIGKILL) give_children_grace();
  return g_real_killpg(group, sig);
}

// ---------------------------------------------------------------- C

extern "C" PERFSIFT_EXPORT int MPI_Init(int *argc, char ***argv) {
  clock_origin();
  const int64_t t0 = now_ticks();
  const int rc = PMPI_Init(argc, argv);
  if (rc == MPI_SUCCESS) after_init(t0, Op::MPI_Init, __builtin_return_address(0));
  return rc;
}

extern "C" PERFSIFT_EXPORT int MPI_Init_thread(int *argc, char ***argv, int required, int *provided) {
  clock_origin();
  const int64_t t0 = now_ticks();
  const int rc = PMPI_Init_thread(argc, argv, required, provided);
  if (rc == MPI_SUCCESS) after_init(t0, Op::MPI_Init_thread, __builtin_return_address(0));
  return rc;
}

extern "C" PERFSIFT_EXPORT int MPI_Finalize(void) {
  runtime().finish(__builtin_return_address(0));
  return PMPI_Finalize();
}

extern "C" PERFSIFT_EXPORT int MPI_Abort(MPI_Comm comm, int error_code) {
  if (!t_in_call) runtime().record_abort(comm, error_code, __builtin_return_address(0));
  return PMPI_Abort(comm, error_code);
}

// Levels: 1 begin region NAME, -1 end it; 2 begin step of NAME, -2 end it. Other
// levels carry no name (the MPI standard leaves them to tools) and are passed on.
extern "C" PERFSIFT_EXPORT int MPI_Pcontrol(const int level, ...) {
  if (!t_in_call && on_thread0() && runtime().active() && (level == 1 || level == -1 || level == 2 || level == -2)) {
    va_list ap;
    va_start(ap, level);
    const char *name = va_arg(ap, const char *);
    va_end(ap);
    if (level > 0)
      runtime().region_begin(name, level == 2);
    else
      runtime().region_end(name, level == -2);
  }
  return PMPI_Pcontrol(level);
}

// ---------------------------------------------------------------- region API

extern "C" PERFSIFT_EXPORT void perfsift_region_begin(const char *name) {
  if (!t_in_call && on_thread0()) runtime().region_begin(name, false);
}
extern "C" PERFSIFT_EXPORT void perfsift_region_end(const char *name) {
  if (!t_in_call && on_thread0()) runtime().region_end(name, false);
}
extern "C" PERFSIFT_EXPORT void perfsift_step_begin(const char *region) {
  if (!t_in_call && on_thread0()) runtime().region_begin(region, true);
}
extern "C" PERFSIFT_EXPORT void perfsift_step_end(const char *region) {
  if (!t_in_call && on_thread0()) runtime().region_end(region, true);
}

// ---------------------------------------------------------------- Fortran

extern "C" {
void pmpi_init_(MPI_Fint *ierr);
void pmpi_init_thread_(MPI_Fint *required, MPI_Fint *provided, MPI_Fint *ierr);
void pmpi_finalize_(MPI_Fint *ierr);
void pmpi_pcontrol_(MPI_Fint *level, MPI_Fint *ierr);
void pmpi_abort_(MPI_Fint *comm, MPI_Fint *error_code, MPI_Fint *ierr);
}

#define PERFSIFT_FORTRAN_ALIASES(lower, upper, params)                                 \
  extern "C" PERFSIFT_EXPORT void lower##__ params __attribute__((alias(#lower "_"))); \
  extern "C" PERFSIFT_EXPORT void lower params __attribute__((alias(#lower "_")));     \
  extern "C" PERFSIFT_EXPORT void upper params __attribute__((alias(#lower "_")));

extern "C" PERFSIFT_EXPORT void mpi_init_(MPI_Fint *ierr) {
  clock_origin();
  const int64_t t0 = now_ticks();
  pmpi_init_(ierr);
  if (*ierr == MPI_SUCCESS) after_init(t0, Op::MPI_Init, __builtin_return_address(0));
}
PERFSIFT_FORTRAN_ALIASES(mpi_init, MPI_INIT, (MPI_Fint * ierr))

extern "C" PERFSIFT_EXPORT void mpi_init_thread_(MPI_Fint *required, MPI_Fint *provided, MPI_Fint *ierr) {
  clock_origin();
  const int64_t t0 = now_ticks();
  pmpi_init_thread_(required, provided, ierr);
  if (*ierr == MPI_SUCCESS) after_init(t0, Op::MPI_Init_thread, __builtin_return_address(0));
}
PERFSIFT_FORTRAN_ALIASES(mpi_init_thread, MPI_INIT_THREAD, (MPI_Fint * required, MPI_Fint *provided, MPI_Fint *ierr))

extern "C" PERFSIFT_EXPORT void mpi_finalize_(MPI_Fint *ierr) {
  runtime().finish(__builtin_return_address(0));
  pmpi_finalize_(ierr);
}
PERFSIFT_FORTRAN_ALIASES(mpi_finalize, MPI_FINALIZE, (MPI_Fint * ierr))

// Open MPI's Fortran MPI_ABORT calls PMPI_Abort, past the C wrapper: wrapped here too.
extern "C" PERFSIFT_EXPORT void mpi_abort_(MPI_Fint *comm, MPI_Fint *error_code, MPI_Fint *ierr) {
  if (!t_in_call) runtime().record_abort(MPI_Comm_f2c(*comm), *error_code, __builtin_return_address(0));
  pmpi_abort_(comm, error_code, ierr);
}
PERFSIFT_FORTRAN_ALIASES(mpi_abort, MPI_ABORT, (MPI_Fint * comm, MPI_Fint *error_code, MPI_Fint *ierr))

// Fortran MPI_PCONTROL has no name argument; Fortran codes use `use perfsift` instead.
extern "C" PERFSIFT_EXPORT void mpi_pcontrol_(MPI_Fint *level, MPI_Fint *ierr) { pmpi_pcontrol_(level, ierr); }
PERFSIFT_FORTRAN_ALIASES(mpi_pcontrol, MPI_PCONTROL, (MPI_Fint * level, MPI_Fint *ierr))

// ---------------------------------------------------------------- -finstrument-functions

namespace {

// Address -> region name, or empty when the filter rejects the function.
const std::string &function_region(void *fn) {
  static std::unordered_map<void *, std::string> cache;
  auto it = cache.find(fn);
  if (it != cache.end()) return it->second;
  std::string name;
  Dl_info info{};
  if (dladdr(fn, &info) && info.dli_sname) {
    const auto &cfg = runtime().config();
    bool keep = false;
    for (const auto &p : cfg.function_include)
      if (fnmatch(p.c_str(), info.dli_sname, 0) == 0) keep = true;
    for (const auto &p : cfg.function_exclude)
      if (fnmatch(p.c_str(), info.dli_sname, 0) == 0) keep = false;
    if (keep) name = info.dli_sname;
  }
  return cache.emplace(fn, std::move(name)).first->second;
}

}  // namespace

extern "C" PERFSIFT_EXPORT __attribute__((no_instrument_function)) void __cyg_profile_func_enter(void *fn, void *) {
  if (t_in_call || !on_thread0() || !runtime().active() || !runtime().config().function_regions) return;
  const std::string &name = function_region(fn);
  if (!name.empty()) runtime().region_begin(name.c_str(), false);
}

extern "C" PERFSIFT_EXPORT __attribute__((no_instrument_function)) void __cyg_profile_func_exit(void *fn, void *) {
  if (t_in_call || !on_thread0() || !runtime().active() || !runtime().config().function_regions) return;
  const std::string &name = function_region(fn);
  if (!name.empty()) runtime().region_end(name.c_str(), false);
}
