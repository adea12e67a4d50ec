#include "python_frames.h"

#include <dlfcn.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

namespace perfsift::collect {

bool g_python_sites = false;

namespace {

// ---------------------------------------------------------------- CPython's API, found at run time
using PyObj = void;  // PyObject, opaque: only pointers pass through

struct CPython {
  int (*is_initialized)() = nullptr;
  int (*is_finalizing)() = nullptr;  // optional: _Py_IsFinalizing (3.7+), Py_IsFinalizing (3.13+)
  void *(*this_thread_state)() = nullptr;
  int (*gil_held)() = nullptr;
  int (*gil_ensure)() = nullptr;  // PyGILState_STATE is an int-sized enum
  void (*gil_release)(int) = nullptr;
  PyObj *(*thread_frame)(void *) = nullptr;  // new references from here
  PyObj *(*frame_code)(PyObj *) = nullptr;
  PyObj *(*frame_back)(PyObj *) = nullptr;
  int (*frame_line)(PyObj *) = nullptr;
  int (*frame_lasti)(PyObj *) = nullptr;  // optional: 3.11+
  void (*incref)(PyObj *) = nullptr;
  void (*decref)(PyObj *) = nullptr;
  PyObj *(*get_attr)(PyObj *, const char *) = nullptr;
  const char *(*utf8)(PyObj *) = nullptr;
  PyObj *(*sys_object)(const char *) = nullptr;          // borrowed
  PyObj *(*dict_item)(PyObj *, const char *) = nullptr;  // borrowed
  void (*err_clear)() = nullptr;
  void (*err_fetch)(PyObj **, PyObj **, PyObj **) = nullptr;
  void (*err_restore)(PyObj *, PyObj *, PyObj *) = nullptr;
};

template <class F>
bool find_symbol(F &f, const char *name) {
  f = reinterpret_cast<F>(dlsym(RTLD_DEFAULT, name));
  return f != nullptr;
}

bool find_cpython(CPython &p) {
  bool all = find_symbol(p.is_initialized, "Py_IsInitialized");
  all = all && find_symbol(p.this_thread_state, "PyGILState_GetThisThreadState") &&
        find_symbol(p.gil_held, "PyGILState_Check") && find_symbol(p.gil_ensure, "PyGILState_Ensure") &&
        find_symbol(p.gil_release, "PyGILState_Release") && find_symbol(p.thread_frame, "PyThreadState_GetFrame") &&
        find_symbol(p.frame_code, "PyFrame_GetCode") && find_symbol(p.frame_back, "PyFrame_GetBack") &&
        find_symbol(p.frame_line, "PyFrame_GetLineNumber") && find_symbol(p.incref, "Py_IncRef") &&
        find_symbol(p.decref, "Py_DecRef") && find_symbol(p.get_attr, "PyObject_GetAttrString") &&
        find_symbol(p.utf8, "PyUnicode_AsUTF8") && find_symbol(p.sys_object, "PySys_GetObject") &&
        find_symbol(p.dict_item, "PyDict_GetItemString") && find_symbol(p.err_clear, "PyErr_Clear") &&
        find_symbol(p.err_fetch, "PyErr_Fetch") && find_symbol(p.err_restore, "PyErr_Restore");
  if (!find_symbol(p.is_finalizing, "Py_IsFinalizing")) find_symbol(p.is_finalizing, "_Py_IsFinalizing");
  find_symbol(p.frame_lasti, "PyFrame_GetLasti");
  return all;
}

CPython g_py;

bool starts_with(const std::string &s, const std::string &prefix) {
  return !prefix.empty() && s.compare(0, prefix.size(), prefix) == 0;
}

// ---------------------------------------------------------------- return addresses

// The module a call returns into, as far as Python sites care.
struct CallerModule {
  bool python = false;  // an extension module (or libffi, which ctypes calls through)
  std::string package;  // its package's directory with a trailing '/'; "" when in none
};

CallerModule examine_module(const std::string &path) {
  CallerModule m;
  const size_t slash = path.rfind('/');
  const std::string base = path.substr(slash == std::string::npos ? 0 : slash + 1);
  if (base.rfind("libffi", 0) == 0) {
    m.python = true;
    return m;
  }
  // An extension module exports its initialiser, PyInit_ and the name before the first dot.
  void *handle = path.empty() ? nullptr : dlopen(path.c_str(), RTLD_LAZY | RTLD_NOLOAD);
  if (!handle) return m;
  m.python = dlsym(handle, ("PyInit_" + base.substr(0, base.find('.'))).c_str()) != nullptr;
  dlclose(handle);
  if (m.python && slash != std::string::npos) {
    const std::string dir = path.substr(0, slash + 1);
    if (access((dir + "__init__.py").c_str(), F_OK) == 0) m.package = dir;
  }
  return m;
}

// Return address -> its module, decided once per address. Read without a lock: a slot's
// module is stored before its address is published. Addresses beyond the table's room
// (a program with thousands of distinct MPI call instructions) are looked up under the lock.
class CallerModules {
 public:
  const CallerModule *find(uint64_t address) {
    size_t i = slot(address);
    for (size_t probe = 0; probe < kProbes; ++probe, i = (i + 1) & (kSlots - 1)) {
      const uint64_t a = m_address[i].load(std::memory_order_acquire);
      if (a == address) return m_module[i].load(std::memory_order_relaxed);
      if (a == 0) break;
    }
    return classify(address);
  }

 private:
  static constexpr size_t kSlots = 4096, kProbes = 16;
  static size_t slot(uint64_t address) { return static_cast<size_t>((address * 0x9E3779B97F4A7C15ull) >> 52); }

  const CallerModule *classify(uint64_t address) {
    const std::lock_guard<std::mutex> lock(m_mutex);
    size_t i = slot(address), free_slot = kSlots;
    for (size_t probe = 0; probe < kProbes; ++probe, i = (i + 1) & (kSlots - 1)) {
      const uint64_t a = m_address[i].load(std::memory_order_relaxed);
      if (a == address) return m_module[i].load(std::memory_order_relaxed);
      if (a == 0) {
        free_slot = i;
        break;
      }
    }
    if (auto it = m_overflow.find(address); it != m_overflow.end()) return it->second;
    const CallerModule *m = module_of(address);
    if (free_slot == kSlots) {
      m_overflow.emplace(address, m);
    } else {
      m_module[free_slot].store(m, std::memory_order_relaxed);
      m_address[free_slot].store(address, std::memory_order_release);
    }
    return m;
  }

  const CallerModule *module_of(uint64_t address) {
    Dl_info info{};
    const std::string path = dladdr(reinterpret_cast<void *>(address), &info) && info.dli_fname ? info.dli_fname : "";
    auto [it, fresh] = m_modules.try_emplace(path);
    if (fresh) it->second = std::make_unique<CallerModule>(examine_module(path));
    return it->second.get();
  }

  std::atomic<uint64_t> m_address[kSlots] = {};
  std::atomic<const CallerModule *> m_module[kSlots] = {};
  std::mutex m_mutex;
  std::unordered_map<uint64_t, const CallerModule *> m_overflow;
  std::map<std::string, std::unique_ptr<CallerModule>> m_modules;  // by path
};

// ---------------------------------------------------------------- Python sites

struct CodeFacts {
  std::string file, function;
  bool frozen = false;  // "<frozen importlib._bootstrap>": the import machinery, never the program
  bool stdlib = false;  // in the standard library's directory
};

struct PythonSite {
  std::string file, function;
  int32_t line = 0;
};

struct InstructionHash {
  size_t operator()(const std::pair<PyObj *, int> &k) const {
    return std::hash<PyObj *>()(k.first) ^ (static_cast<size_t>(k.second) * 0x9E3779B97F4A7C15ull);
  }
};

// What the frame walk keeps. `codes` and `by_instruction` are used under the GIL alone; the
// site table also by the threads that resolve sites (flushes), under `table_mutex`.
struct PythonState {
  CallerModules callers;
  std::unordered_map<PyObj *, CodeFacts> codes;  // each code object referenced: its address stays its own
  std::unordered_map<std::pair<PyObj *, int>, uint32_t, InstructionHash> by_instruction;
  std::string stdlib_dir;  // with a trailing '/'
  bool stdlib_known = false;
  std::mutex table_mutex;
  std::vector<PythonSite> table;
  std::map<std::tuple<std::string, int32_t, std::string>, uint32_t> table_index;
};

PythonState *const g_state = new PythonState();  // never destroyed: calls may come at exit

constexpr int kMaxDepth = 256;

// A str attribute of `object` as UTF-8 ("" when missing or not text; the error cleared).
std::string str_attr(PyObj *object, const char *name) {
  std::string s;
  PyObj *value = object ? g_py.get_attr(object, name) : nullptr;
  const char *text = value ? g_py.utf8(value) : nullptr;
  if (text) s = text;
  if (value) g_py.decref(value);
  if (!text) g_py.err_clear();
  return s;
}

// The standard library's directory with a trailing '/' (sys._stdlib_dir, 3.11+; before,
// the directory of the os module).
const std::string &stdlib_dir() {
  PythonState &st = *g_state;
  if (!st.stdlib_known) {
    st.stdlib_known = true;
    PyObj *dir = g_py.sys_object("_stdlib_dir");
    const char *text = dir ? g_py.utf8(dir) : nullptr;
    std::string d = text ? text : "";
    if (!text) g_py.err_clear();
    if (PyObj *modules = d.empty() ? g_py.sys_object("modules") : nullptr) {
      const std::string os_file = str_attr(g_py.dict_item(modules, "os"), "__file__");
      d = os_file.substr(0, os_file.rfind('/') == std::string::npos ? 0 : os_file.rfind('/'));
    }
    if (!d.empty()) st.stdlib_dir = d + "/";
  }
  return st.stdlib_dir;
}

const CodeFacts &code_facts(PyObj *code) {
  PythonState &st = *g_state;
  auto it = st.codes.find(code);
  if (it != st.codes.end()) return it->second;
  PyObj *type = nullptr, *value = nullptr, *traceback = nullptr;
  g_py.err_fetch(&type, &value, &traceback);  // an exception the program has set stays set
  CodeFacts f;
  f.file = str_attr(code, "co_filename");
  f.function = str_attr(code, "co_qualname");  // 3.11+
  if (f.function.empty()) f.function = str_attr(code, "co_name");
  f.frozen = f.file.rfind("<frozen ", 0) == 0;
  f.stdlib = starts_with(f.file, stdlib_dir());
  g_py.err_restore(type, value, traceback);
  g_py.incref(code);
  return st.codes.emplace(code, std::move(f)).first->second;
}

uint32_t intern_site(const CodeFacts &facts, int32_t line) {
  PythonState &st = *g_state;
  const std::lock_guard<std::mutex> lock(st.table_mutex);
  auto [it, fresh] =
      st.table_index.try_emplace({facts.file, line, facts.function}, static_cast<uint32_t>(st.table.size()));
  if (fresh) st.table.push_back({facts.file, facts.function, line});
  return it->second;
}

// The key of the site of `frame`, running `code`: once per instruction (the line number is
// found by a walk of the code's line table), per line where the interpreter has no
// instruction offset to give.
uint64_t site_of(PyObj *frame, PyObj *code, const CodeFacts &facts) {
  PythonState &st = *g_state;
  const int lasti = g_py.frame_lasti ? g_py.frame_lasti(frame) : -1;
  const int line = lasti < 0 ? g_py.frame_line(frame) : 0;
  const std::pair<PyObj *, int> instruction{code, lasti >= 0 ? lasti : -1 - line};
  auto it = st.by_instruction.find(instruction);
  if (it == st.by_instruction.end())
    it = st.by_instruction.emplace(instruction, intern_site(facts, lasti >= 0 ? g_py.frame_line(frame) : line)).first;
  return kPythonSiteBit | it->second;
}

// Under the GIL: the site of the innermost frame of this thread outside the calling module's
// package and the import machinery; frames in the package only when the code outside it is
// the standard library's (a thread's or runpy's start: mpi4py.futures' own calls); 0 when
// the thread runs no Python frame.
uint64_t frame_site(const CallerModule &caller, void *thread_state) {
  uint64_t site = 0, in_package = 0;
  PyObj *frame = g_py.thread_frame(thread_state);
  for (int depth = 0; frame && !site && depth < kMaxDepth; ++depth) {
    PyObj *code = g_py.frame_code(frame);
    const CodeFacts &facts = code_facts(code);  // keeps the code alive
    g_py.decref(code);
    const bool packaged = starts_with(facts.file, caller.package);
    if (packaged && !in_package) in_package = site_of(frame, code, facts);
    if (!packaged && !facts.frozen) site = facts.stdlib && in_package ? in_package : site_of(frame, code, facts);
    PyObj *back = site ? nullptr : g_py.frame_back(frame);
    g_py.decref(frame);
    frame = back;
  }
  if (frame) g_py.decref(frame);
  return site ? site : in_package;
}

}  // namespace

void detect_python() {
  if (!find_cpython(g_py) || !g_py.is_initialized()) return;
  g_python_sites = true;
}

uint64_t python_site_key(uint64_t return_address) {
  const CallerModule &caller = *g_state->callers.find(return_address);
  if (!caller.python) return return_address;
  void *thread_state = g_py.this_thread_state();
  if (!thread_state || !g_py.is_initialized() || (g_py.is_finalizing && g_py.is_finalizing())) return return_address;
  // mpi4py releases the GIL around blocking calls: take it back for the walk (this thread
  // holds no lock of the collector's or of MPI's here, so whoever holds the GIL can go on).
  const bool held = g_py.gil_held();
  const int gil = held ? 0 : g_py.gil_ensure();
  const uint64_t site = frame_site(caller, thread_state);
  if (!held) g_py.gil_release(gil);
  return site ? site : return_address;
}

io::CallSite python_call_site(uint64_t key) {
  io::CallSite cs;
  PythonState &st = *g_state;
  // A rank saved on a signal resolves its sites on the watcher thread while the thread that
  // took the signal waits, perhaps holding the lock: then the site stays unnamed.
  std::unique_lock<std::mutex> lock(st.table_mutex, std::try_to_lock);
  for (int tries = 0; !lock && tries < 200; ++tries) {
    usleep(1000);
    lock.try_lock();
  }
  if (!lock) return cs;
  const uint64_t index = key & ~kPythonSiteBit;
  if (index >= st.table.size()) return cs;
  const PythonSite &p = st.table[index];
  cs.module = cs.file = p.file;
  cs.offset = static_cast<uint64_t>(p.line);
  cs.function = p.function;
  cs.line = p.line;
  return cs;
}

}  // namespace perfsift::collect
