// main() for the fuzz targets outside libFuzzer, built by the ordinary (and the sanitized)
// build with any compiler. Two modes:
//   fuzz_<target>_replay FILE|DIR...                runs LLVMFuzzerTestOneInput once on every
//       file (directories: every file in them, sorted): CTest replays the seed corpus
//       (tests/fuzz/corpus/<target>/, the regression inputs of every fixed finding among them).
//   fuzz_<target>_replay --mutate SECONDS [--seed N] FILE|DIR...   random mutations of those
//       inputs for SECONDS: the bounded CI run of every target (under ASan + UBSan in the
//       sanitized tier). Not coverage-guided: libFuzzer (PERFSIFT_FUZZ=ON, run_fuzzers.sh) is
//       the long run. A crash, sanitizer report or hang (10 s per input) leaves the input in
//       ./fuzz-crash-<target> and names it.
#include <signal.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
// Sanitizer runtimes call this before they abort (absent without sanitizers: weak).
extern "C" void __sanitizer_set_death_callback(void (*callback)(void)) __attribute__((weak));

namespace {

// The input being run, for the crash paths (set before each call).
const std::string *g_input = nullptr;
char g_crash_path[512] = "fuzz-crash";

// Async-signal-safe: open, write, close.
void save_input() {
  if (!g_input) return;
  const int fd = open(g_crash_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return;
  for (size_t done = 0; done < g_input->size();) {
    const ssize_t n = write(fd, g_input->data() + done, g_input->size() - done);
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  close(fd);
  static const char msg[] = "fuzz: the failing input is in ";
  (void)!write(2, msg, sizeof msg - 1);
  (void)!write(2, g_crash_path, std::strlen(g_crash_path));
  (void)!write(2, "\n", 1);
}

void on_fatal(int sig) {
  if (sig == SIGALRM) {
    static const char msg[] = "fuzz: an input ran longer than 10 s (a hang)\n";
    (void)!write(2, msg, sizeof msg - 1);
  }
  save_input();
  signal(sig, SIG_DFL);
  raise(sig == SIGALRM ? SIGABRT : sig);
}

std::vector<std::string> read_inputs(const std::vector<std::string> &args) {
  std::vector<std::filesystem::path> files;
  for (const auto &a : args) {
    if (std::filesystem::is_directory(a)) {
      for (const auto &e : std::filesystem::directory_iterator(a))
        if (e.is_regular_file()) files.push_back(e.path());
    } else {
      files.emplace_back(a);
    }
  }
  std::sort(files.begin(), files.end());
  std::vector<std::string> inputs;
  for (const auto &f : files) {
    std::ifstream in(f, std::ios::binary);
    if (!in) {
      std::fprintf(stderr, "%s: cannot read\n", f.c_str());
      std::exit(1);
    }
    inputs.emplace_back((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }
  return inputs;
}

// One to eight random edits: bytes flipped, set, inserted, erased, repeated; the input cut;
// tokens the readers parse (quotes, slashes, huge and negative numbers, nan); a splice.
std::string mutate(const std::vector<std::string> &corpus, std::mt19937_64 &rng) {
  static const std::vector<std::string> tokens = {
      "\"", "\\", "/", "-1",  "nan", "inf", "2147483648",         "1e308", "0", "\xff\xff\xff\xff", "\x00",
      "[",  "]",  "=", "and", " ",   "\n",  "9223372036854775807"};
  std::string s = corpus[rng() % corpus.size()];
  const auto pos = [&](size_t extra) { return static_cast<size_t>(rng() % (s.size() + extra)); };
  for (int edits = 1 + static_cast<int>(rng() % 8); edits > 0; --edits) {
    switch (rng() % 8) {
      case 0:
        if (!s.empty()) s[pos(0)] ^= static_cast<char>(1u << (rng() % 8));
        break;
      case 1:
        if (!s.empty()) s[pos(0)] = static_cast<char>(rng());
        break;
      case 2:
        s.insert(pos(1), 1 + rng() % 8, static_cast<char>(rng()));
        break;
      case 3:
        if (!s.empty()) {
          const size_t at = pos(0);
          s.erase(at, 1 + rng() % std::min<size_t>(64, s.size() - at));
        }
        break;
      case 4:
        if (!s.empty()) {
          const size_t at = pos(0), n = 1 + rng() % std::min<size_t>(64, s.size() - at);
          s.insert(pos(1), s.substr(at, n));
        }
        break;
      case 5:
        s.resize(pos(1));
        break;
      case 6:
        s.insert(pos(1), tokens[rng() % tokens.size()]);
        break;
      default: {
        const std::string &other = corpus[rng() % corpus.size()];
        if (!other.empty()) s = s.substr(0, pos(1)) + other.substr(rng() % other.size());
      }
    }
  }
  return s;
}

int replay(const std::vector<std::string> &args) {
  const auto inputs = read_inputs(args);
  for (const auto &in : inputs) {
    g_input = &in;
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t *>(in.data()), in.size());
  }
  g_input = nullptr;  // (the death callback may run at exit, after `inputs` is gone)
  std::printf("%zu inputs, no crash\n", inputs.size());
  return inputs.empty() ? 1 : 0;
}

int fuzz(double seconds, uint64_t seed, const std::vector<std::string> &args) {
  const auto corpus = read_inputs(args);
  if (corpus.empty()) return 1;
  std::mt19937_64 rng(seed);
  std::printf("mutating %zu seed inputs for %.0f s, seed %llu\n", corpus.size(), seconds,
              static_cast<unsigned long long>(seed));
  std::fflush(stdout);
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  int64_t runs = 0;
  std::string input;
  while (std::chrono::steady_clock::now() < end) {
    input = mutate(corpus, rng);
    g_input = &input;
    alarm(10);
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t *>(input.data()), input.size());
    alarm(0);
    ++runs;
  }
  g_input = nullptr;
  std::printf("%lld mutated inputs, no crash\n", static_cast<long long>(runs));
  return 0;
}

}  // namespace

int main(int argc, char **argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  const std::string name = std::filesystem::path(argv[0]).filename().string();
  std::snprintf(g_crash_path, sizeof g_crash_path, "fuzz-crash-%s", name.c_str());
  if (__sanitizer_set_death_callback) __sanitizer_set_death_callback(save_input);
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGALRM}) signal(sig, on_fatal);
  if (args.size() >= 2 && args[0] == "--mutate") {
    const double seconds = std::atof(args[1].c_str());
    uint64_t seed = std::random_device{}();
    args.erase(args.begin(), args.begin() + 2);
    if (args.size() >= 2 && args[0] == "--seed") {
      seed = std::strtoull(args[1].c_str(), nullptr, 10);
      args.erase(args.begin(), args.begin() + 2);
    }
    return fuzz(seconds, seed, args);
  }
  return replay(args);
}
