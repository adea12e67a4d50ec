#include "config/schema.h"

#include <toml++/toml.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace perfsift::config {

const char *type_name(Type t) {
  switch (t) {
    case Type::Bool:
      return "bool";
    case Type::Int:
      return "integer";
    case Type::Float:
      return "float";
    case Type::String:
      return "string";
    case Type::StringList:
      return "array of strings";
  }
  return "?";
}

std::string to_string(const Value &v) {
  std::ostringstream os;
  std::visit(
      [&](const auto &x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, bool>)
          os << (x ? "true" : "false");
        else if constexpr (std::is_same_v<T, std::string>)
          os << '"' << x << '"';
        else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
          os << '[';
          for (size_t i = 0; i < x.size(); ++i) os << (i ? ", " : "") << '"' << x[i] << '"';
          os << ']';
        } else
          os << x;
      },
      v);
  return os.str();
}

const Value &Values::at(const std::string &key) const {
  auto it = m_values.find(key);
  if (it == m_values.end()) throw ConfigError("internal: configuration key '" + key + "' not defined");
  return it->second;
}
bool Values::get_bool(const std::string &k) const { return std::get<bool>(at(k)); }
int64_t Values::get_int(const std::string &k) const { return std::get<int64_t>(at(k)); }
double Values::get_float(const std::string &k) const { return std::get<double>(at(k)); }
const std::string &Values::get_string(const std::string &k) const { return std::get<std::string>(at(k)); }
const std::vector<std::string> &Values::get_list(const std::string &k) const {
  return std::get<std::vector<std::string>>(at(k));
}

std::string Values::where(const std::string &key) const {
  auto it = m_where.find(key);
  return it == m_where.end() || it->second.empty() ? "default" : it->second;
}

EnvLookup process_environment() {
  return [](const std::string &name) -> std::optional<std::string> {
    const char *v = std::getenv(name.c_str());
    if (!v) return std::nullopt;
    return std::string(v);
  };
}

static size_t edit_distance(const std::string &a, const std::string &b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string nearest(const std::string &word, const std::vector<std::string> &candidates) {
  std::string best;
  size_t best_d = SIZE_MAX;
  for (const auto &c : candidates) {
    size_t d = edit_distance(word, c);
    if (d < best_d) best_d = d, best = c;
  }
  return best;
}

namespace {

std::string where(const std::string &path, const toml::source_region &src) {
  std::ostringstream os;
  os << (path.empty() ? "<config>" : path) << ':' << src.begin.line << ':' << src.begin.column;
  return os.str();
}

std::vector<std::string> split_list(const std::string &s) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == ',') {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else if (c != ' ') {
      cur += c;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

Value from_env(const KeyDef &def, const std::string &text) {
  try {
    switch (def.type) {
      case Type::Bool:
        return text == "1" || text == "true" || text == "yes" || text == "on";
      case Type::Int:
        return static_cast<int64_t>(std::stoll(text));
      case Type::Float:
        return std::stod(text);
      case Type::String:
        return text;
      case Type::StringList:
        return split_list(text);
    }
  } catch (const std::exception &) {}
  throw ConfigError("environment variable " + def.env + "='" + text + "': expected " + type_name(def.type) + " (" +
                    def.help + ")");
}

Value from_node(const KeyDef &def, const toml::node &node, const std::string &path) {
  auto wrong = [&]() {
    return ConfigError(where(path, node.source()) + ": key '" + def.key + "' must be " + type_name(def.type) +
                       ", e.g. " + def.key + " = " + to_string(def.default_value));
  };
  switch (def.type) {
    case Type::Bool:
      if (auto v = node.value_exact<bool>()) return *v;
      throw wrong();
    case Type::Int:
      if (auto v = node.value_exact<int64_t>()) return *v;
      throw wrong();
    case Type::Float:
      if (auto v = node.value<double>()) return *v;
      throw wrong();
    case Type::String:
      if (auto v = node.value_exact<std::string>()) return *v;
      throw wrong();
    case Type::StringList: {
      const auto *arr = node.as_array();
      if (!arr) throw wrong();
      std::vector<std::string> out;
      for (const auto &el : *arr) {
        auto v = el.value_exact<std::string>();
        if (!v) throw wrong();
        out.push_back(*v);
      }
      return out;
    }
  }
  throw wrong();
}

// Range and choice checks shared by file values and environment overrides.
void check_value(const KeyDef &def, const Value &v, const std::string &place) {
  double x = 0;
  if (const auto *i = std::get_if<int64_t>(&v))
    x = static_cast<double>(*i);
  else if (const auto *f = std::get_if<double>(&v))
    x = *f;
  else if (const auto *s = std::get_if<std::string>(&v)) {
    if (def.choices.empty() || std::find(def.choices.begin(), def.choices.end(), *s) != def.choices.end()) return;
    std::string list;
    for (const auto &c : def.choices) list += (list.empty() ? "" : ", ") + c;
    throw ConfigError(place + ": key '" + def.key + "' is \"" + *s + "\"; expected one of: " + list +
                      " (did you mean '" + nearest(*s, def.choices) + "'?)");
  } else
    return;
  if (!(x >= def.min && x <= def.max)) {  // NaN too: it compares false with any bound
    std::ostringstream os;
    os << place << ": key '" << def.key << "' is " << x << "; it must be between " << def.min << " and " << def.max
       << " (" << def.help << ")";
    throw ConfigError(os.str());
  }
}

void walk(const toml::table &table, const std::string &prefix, const std::vector<KeyDef> &keys, const std::string &path,
          Values &out, std::vector<std::string> &names, const std::vector<std::string> &sections) {
  for (const auto &[k, node] : table) {
    std::string full = prefix.empty() ? std::string(k.str()) : prefix + "." + std::string(k.str());
    auto def = std::find_if(keys.begin(), keys.end(), [&](const KeyDef &d) { return d.key == full; });
    if (def != keys.end()) {
      Value v = from_node(*def, node, path);
      check_value(*def, v, where(path, node.source()));
      out.set(full, std::move(v), where(path, node.source()));
      continue;
    }
    bool is_section =
        std::any_of(keys.begin(), keys.end(), [&](const KeyDef &d) { return d.key.rfind(full + ".", 0) == 0; });
    if (is_section && node.is_table()) {
      walk(*node.as_table(), full, keys, path, out, names, sections);
      continue;
    }
    if (prefix.empty() && !sections.empty() && node.is_table())
      throw ConfigError(where(path, k.source()) + ": unknown stage '" + full + "'; did you mean '" +
                        nearest(full, sections) + "'? (`perfsift stages` lists every stage and its keys)");
    throw ConfigError(
        where(path, k.source()) + ": unknown key '" + full + "'; did you mean '" + nearest(full, names) + "'? " +
        (sections.empty() ? "(perfsift lists every key with --help)" : "(`perfsift stages` lists every key)"));
  }
}

}  // namespace

Values parse(const std::vector<KeyDef> &keys, const std::string &text, const std::string &path, const EnvLookup &env,
             const std::vector<std::string> &sections) {
  Values out;
  std::vector<std::string> names;
  for (const auto &d : keys) {
    out.set(d.key, d.default_value);
    names.push_back(d.key);
  }
  out.source_text = text;
  out.source_path = path;
  if (!text.empty()) {
    toml::table table;
    try {
      table = toml::parse(text, path);
    } catch (const toml::parse_error &e) {
      throw ConfigError(where(path, e.source()) + ": " + std::string(e.description()));
    }
    walk(table, "", keys, path, out, names, sections);
  }
  for (const auto &d : keys)
    if (!d.env.empty())
      if (auto v = env(d.env)) {
        Value x = from_env(d, *v);
        check_value(d, x, "environment variable " + d.env);
        out.set(d.key, std::move(x), "environment " + d.env);
      }
  return out;
}

Values parse_file(const std::vector<KeyDef> &keys, const std::string &path, const EnvLookup &env,
                  const std::vector<std::string> &sections) {
  std::ifstream in(path);
  if (!in) throw ConfigError(path + ": cannot open the configuration file (check the path)");
  std::stringstream ss;
  ss << in.rdbuf();
  return parse(keys, ss.str(), path, env, sections);
}

std::string describe(const std::vector<KeyDef> &keys) {
  std::ostringstream os;
  for (const auto &d : keys) {
    os << "  " << d.key << " (" << type_name(d.type) << ", default " << to_string(d.default_value) << ")";
    if (!d.env.empty()) os << " [env " << d.env << "]";
    const bool numeric = d.type == Type::Int || d.type == Type::Float;
    if (numeric && (d.min > -1e300 || d.max < 1e300)) os << " range " << d.min << ".." << d.max;
    if (!d.choices.empty()) {
      os << " one of";
      for (const auto &c : d.choices) os << ' ' << c;
    }
    os << "\n      " << d.help << "\n";
  }
  return os.str();
}

}  // namespace perfsift::config
