// perfsift collect: set the collector's environment, run the launcher, check the store.
#include <dlfcn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "config/collect_config.h"
#include "io/trace_store.h"
#include "pipeline/cli/commands.h"

namespace fs = std::filesystem;

#ifdef __SANITIZE_ADDRESS__
extern "C" void __asan_init();
#endif
// The MPI perfsift is built against and its launcher's name (top CMakeLists.txt).
#ifndef PERFSIFT_MPI_FAMILY
#define PERFSIFT_MPI_FAMILY "other"
#endif
#ifndef PERFSIFT_LAUNCHER
#define PERFSIFT_LAUNCHER "mpirun"
#endif
// Where the python package is installed, relative to the prefix (top CMakeLists.txt).
#ifndef PERFSIFT_PYTHON_DIR
#define PERFSIFT_PYTHON_DIR "lib/python3/dist-packages"
#endif

namespace perfsift::cli {

std::string collector_library() {
  if (const char *env = std::getenv("PERFSIFT_COLLECT_LIB")) return env;
  fs::path exe = fs::read_symlink("/proc/self/exe").parent_path();
  for (const auto &candidate : {exe / "../lib/libperfsift_collect.so", exe / "../collect/libperfsift_collect.so",
                                exe / "../lib64/libperfsift_collect.so"})
    if (fs::exists(candidate)) return fs::canonical(candidate).string();
  throw std::runtime_error("cannot find libperfsift_collect.so beside " + exe.string() +
                           " (set PERFSIFT_COLLECT_LIB to its path)");
}

namespace {

// The directory that holds the perfsift python package, whose region API a Python program
// under collection imports (`import perfsift`): beside the program in the build tree
// (build/python), under the prefix once installed; "" when neither is there.
std::string python_package_dir() {
  const fs::path exe = fs::read_symlink("/proc/self/exe").parent_path();
  for (const auto &candidate : {exe / "../python", exe / ".." / PERFSIFT_PYTHON_DIR}) {
    std::error_code ec;
    if (fs::exists(candidate / "perfsift" / "regions.py", ec)) return fs::canonical(candidate, ec).string();
  }
  return "";
}

// `word` as one shell word, whatever it holds (spaces, quotes, `$`).
std::string shell_word(const std::string &word) {
  std::string out = "'";
  for (char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string capture(const std::string &cmd) {
  std::string out;
  FILE *p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return out;
  std::array<char, 512> buf;
  while (std::fgets(buf.data(), buf.size(), p)) out += buf.data();
  pclose(p);
  return out;
}

// The preload list: in an AddressSanitizer build the collector needs the ASan runtime
// loaded first, also into programs that are not instrumented themselves.
std::string preload_list(const std::string &lib) {
#ifdef __SANITIZE_ADDRESS__
  Dl_info info{};
  if (dladdr(reinterpret_cast<void *>(&__asan_init), &info) && info.dli_fname && *info.dli_fname)
    return std::string(info.dli_fname) + ":" + lib;
#endif
  return lib;
}

// The MPI whose launcher `launcher` is: "openmpi", "mpich" (Hydra), or "" (srun, a
// wrapper script, or a launcher that does not say).
std::string launcher_family(const std::string &launcher) {
  const std::string base = fs::path(launcher).filename().string();
  if (base != "mpirun" && base != "mpiexec" && base != "orterun" && base != "mpiexec.openmpi" &&
      base != "mpirun.openmpi" && base != "mpiexec.mpich" && base != "mpirun.mpich" && base != "mpiexec.hydra")
    return "";
  const std::string v = capture(shell_word(launcher) + " --version");
  if (v.find("Open MPI") != std::string::npos || v.find("OpenRTE") != std::string::npos) return "openmpi";
  if (v.find("HYDRA") != std::string::npos) return "mpich";
  return "";
}

const char *family_name(const std::string &family) { return family == "openmpi" ? "Open MPI" : "MPICH"; }

// The program the launcher starts: the first of its arguments that is an ELF executable
// (given as a path or found on PATH); "" when there is none (a script, a wrapper).
std::string launched_program(const std::vector<std::string> &launch) {
  for (size_t i = 1; i < launch.size(); ++i) {
    const std::string &arg = launch[i];
    if (arg.empty() || arg[0] == '-') continue;
    std::vector<fs::path> candidates;
    if (arg.find('/') != std::string::npos) {
      candidates.emplace_back(arg);
    } else if (const char *path = std::getenv("PATH")) {
      std::string dirs = path;
      for (size_t a = 0, b; a <= dirs.size(); a = b + 1) {
        b = dirs.find(':', a);
        if (b == std::string::npos) b = dirs.size();
        candidates.push_back(fs::path(dirs.substr(a, b - a)) / arg);
      }
    }
    for (const auto &c : candidates) {
      std::error_code ec;
      if (!fs::is_regular_file(c, ec) || access(c.c_str(), X_OK) != 0) continue;
      char magic[4] = {};
      FILE *f = std::fopen(c.c_str(), "rb");
      if (!f) continue;
      const size_t n = std::fread(magic, 1, 4, f);
      std::fclose(f);
      if (n == 4 && std::memcmp(magic,
                                "\x7f"
                                "ELF",
                                4) == 0)
        return c.string();
    }
  }
  return "";
}

// The MPI a program loads, from the libraries the dynamic loader resolves for it: "openmpi",
// "mpich" (or its ABI: Intel MPI, Cray MPICH), or "" (none, static, or not resolvable).
std::string program_family(const std::string &program) {
  const std::string libs = capture("ldd " + shell_word(program));
  const bool open_mpi = libs.find("libmpi.so.40") != std::string::npos || libs.find("libopen-pal") != std::string::npos;
  const bool mpich = libs.find("libmpich") != std::string::npos || libs.find("libmpi.so.12") != std::string::npos;
  return open_mpi == mpich ? "" : open_mpi ? "openmpi" : "mpich";
}

}  // namespace

int run_command(std::vector<std::string> argv_s) {
  std::vector<char *> argv;
  for (auto &s : argv_s) argv.push_back(s.data());
  argv.push_back(nullptr);
  pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed: " + std::string(std::strerror(errno)));
  if (pid == 0) {
    execvp(argv[0], argv.data());
    std::fprintf(stderr, "perfsift: cannot run '%s': %s\n", argv[0], std::strerror(errno));
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int run_collect(const CollectOptions &o) {
  if (o.launch.empty())
    throw std::runtime_error(std::string("collect: give the launcher after --, e.g. -- ") + PERFSIFT_LAUNCHER +
                             " -n 4 ./app");
  const std::string output = fs::absolute(o.output).string();
  std::string config_path;
  if (!o.config.empty()) {
    config_path = fs::absolute(o.config).string();
    config::load_collect_config(config_path, [](const std::string &) { return std::nullopt; });  // validate now
  }
  const std::string lib = collector_library();
  const std::string spill = output + ".spill";
  std::error_code ec;
  if (fs::exists(output)) {
    std::fprintf(stderr, "perfsift: replacing existing %s\n", output.c_str());
    fs::remove(output, ec);
  }
  fs::remove_all(spill, ec);

  setenv("PERFSIFT_OUTPUT", output.c_str(), 1);
  if (!config_path.empty()) setenv("PERFSIFT_CONFIG", config_path.c_str(), 1);
  // A Python program imports the region API from here, and nothing is installed into it.
  const std::string python_dir = python_package_dir();
  if (!python_dir.empty()) {
    const char *old = std::getenv("PYTHONPATH");
    setenv("PYTHONPATH", (old && *old ? python_dir + ":" + old : python_dir).c_str(), 1);
  }
  std::vector<std::string> argv_s = o.launch;
  const std::string family = launcher_family(o.launch.front());
  const std::string built = PERFSIFT_MPI_FAMILY;
  const bool built_known = built == "openmpi" || built == "mpich";
  // Refused before the run: with the other MPI's launcher the ranks would not form one job;
  // with a program linked against the other MPI the preloaded collector would crash it.
  if (!family.empty() && built_known && family != built)
    throw std::runtime_error(o.launch.front() + " is " + family_name(family) +
                             "'s launcher, but perfsift and its collector are built against " + family_name(built) +
                             ": the ranks would not form one job; launch with " + PERFSIFT_LAUNCHER +
                             " (or use a perfsift built against " + family_name(family) + ")");
  if (const std::string program = launched_program(o.launch); built_known && !program.empty()) {
    const std::string linked = program_family(program);
    if (!linked.empty() && linked != built)
      throw std::runtime_error(program + " is linked against " + family_name(linked) +
                               " (ldd), but perfsift and its collector are built against " + family_name(built) +
                               ": the preloaded collector would crash it; collect with a perfsift built against " +
                               family_name(linked) + " (see the README, \"Choosing the MPI\")");
  }
  if (family == "openmpi") {
    // Open MPI does not forward the environment to remote nodes by default; -x does.
    std::vector<std::string> extra = {"-x", "LD_PRELOAD=" + preload_list(lib), "-x", "PERFSIFT_OUTPUT"};
    // When a rank dies, Open MPI sends the others SIGTERM and, 1 s later, SIGKILL; give
    // them time to save their data (unless the user chose a grace period).
    if (!std::getenv("OMPI_MCA_odls_base_sigkill_timeout"))
      extra.insert(extra.end(), {"--mca", "odls_base_sigkill_timeout", "3"});
    if (!config_path.empty()) extra.insert(extra.end(), {"-x", "PERFSIFT_CONFIG"});
    if (!python_dir.empty()) extra.insert(extra.end(), {"-x", "PYTHONPATH"});
    for (const char *v : {"PERFSIFT_BUFFER_MB", "PERFSIFT_PAPI_EVENTS", "PERFSIFT_MPI_GROUPS",
                          "PERFSIFT_TEST_CLOCK_SKEW", "PERFSIFT_PYTHON_SITES", "PERFSIFT_FUNCTION_REGIONS",
                          "PERFSIFT_FUNCTION_INCLUDE", "PERFSIFT_FUNCTION_EXCLUDE"})
      if (std::getenv(v)) extra.insert(extra.end(), {"-x", v});
    argv_s.insert(argv_s.begin() + 1, extra.begin(), extra.end());
  } else {
    // srun and Hydra (MPICH's mpiexec) pass the whole environment on; preload through it.
    std::string pre = preload_list(lib);
    if (const char *old = std::getenv("LD_PRELOAD"); old && *old) pre += std::string(":") + old;
    setenv("LD_PRELOAD", pre.c_str(), 1);
  }

  const int app_rc = run_command(argv_s);

  if (fs::exists(output)) {
    io::TraceStore store(output);
    std::fprintf(stderr, "perfsift: wrote %s (%d ranks, %lld events)\n", output.c_str(), store.nranks(),
                 static_cast<long long>(store.event_offsets().back()));
    return app_rc;
  }
  if (fs::exists(spill) && !fs::is_empty(spill)) {
    std::fprintf(stderr, "perfsift: the run ended without writing %s (exit code %d); recovering from %s\n",
                 output.c_str(), app_rc, spill.c_str());
    RecoverOptions r{spill, output};
    run_recover(r);
    return app_rc ? app_rc : 1;
  }
  std::fprintf(stderr,
               "perfsift: no trace store was written (exit code %d). Is the program an MPI program that reached "
               "MPI_Init? Statically linked MPI cannot be preloaded; link with -lperfsift_collect instead.\n",
               app_rc);
  return app_rc ? app_rc : 1;
}

}  // namespace perfsift::cli
