// One definition per configuration key: its TOML name, type, default, environment
// override and help text. Tables of KeyDef drive parsing, validation, `--help`
// listings and documentation, so the four can never disagree.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

namespace perfsift::config {

enum class Type { Bool, Int, Float, String, StringList };
const char *type_name(Type t);

using Value = std::variant<bool, int64_t, double, std::string, std::vector<std::string>>;

struct KeyDef {
  std::string key;  // dotted TOML path, e.g. "papi.events"
  Type type;
  Value default_value;
  std::string env;  // environment override, e.g. "PERFSIFT_PAPI_EVENTS"; may be empty
  std::string help;
  double min = -1e300, max = 1e300;    // numeric keys: accepted range
  std::vector<std::string> choices{};  // string keys: accepted values (empty: any); {} for aggregate init
};

// A configuration error: `file:line:col: message` in one line, with the fix.
class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Parsed values by key, defaults filled in, environment overrides applied.
class Values {
 public:
  bool get_bool(const std::string &key) const;
  int64_t get_int(const std::string &key) const;
  double get_float(const std::string &key) const;
  const std::string &get_string(const std::string &key) const;
  const std::vector<std::string> &get_list(const std::string &key) const;
  void set(const std::string &key, Value v, std::string where = "") {
    m_values[key] = std::move(v);
    m_where[key] = std::move(where);
  }
  // Where a key's value came from: "file:line:col", "environment NAME" or "default".
  std::string where(const std::string &key) const;
  std::string source_text;  // the file's text, recorded with results
  std::string source_path;

 private:
  const Value &at(const std::string &key) const;
  std::map<std::string, Value> m_values;
  std::map<std::string, std::string> m_where;
};

using EnvLookup = std::function<std::optional<std::string>(const std::string &)>;
EnvLookup process_environment();

// Parse TOML text against `keys`: unknown keys, wrong types and bad syntax throw
// ConfigError naming file:line:col and the nearest valid key.
// `sections`, when given, names the top-level tables (pipeline stages): an unknown
// table is then reported as an unknown stage.
Values parse(const std::vector<KeyDef> &keys, const std::string &text, const std::string &path, const EnvLookup &env,
             const std::vector<std::string> &sections = {});
Values parse_file(const std::vector<KeyDef> &keys, const std::string &path, const EnvLookup &env,
                  const std::vector<std::string> &sections = {});

// Nearest candidate by edit distance, for "did you mean" hints.
std::string nearest(const std::string &word, const std::vector<std::string> &candidates);

// Human-readable listing of keys (name, type, default, env, help).
std::string describe(const std::vector<KeyDef> &keys);
std::string to_string(const Value &v);

}  // namespace perfsift::config
