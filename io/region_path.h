// Region paths: the names from the root down, joined by '/'. Any byte string is a region name,
// so a name that holds '/', starts with '"' or is empty is written in double quotes (with \" and
// \\ escaped): a path then names exactly one chain of regions, and every other name appears as
// it is. The parent ids stored beside the paths stay the truth; these functions only read
// and write the text.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace perfsift::io {

inline bool region_name_needs_quotes(std::string_view name) {
  return name.empty() || name.front() == '"' || name.find('/') != std::string_view::npos;
}

// One path component: the name itself, or the name in quotes.
inline std::string region_path_component(std::string_view name) {
  if (!region_name_needs_quotes(name)) return std::string(name);
  std::string q = "\"";
  for (char c : name) {
    if (c == '"' || c == '\\') q += '\\';
    q += c;
  }
  return q + '"';
}

// The path of region `name` below `parent_path`; children of the root start a path.
inline std::string child_region_path(std::string_view parent_path, bool parent_is_root, std::string_view name) {
  if (parent_is_root) return region_path_component(name);
  std::string p(parent_path);
  p += '/';
  p += region_path_component(name);
  return p;
}

namespace region_path_detail {
// Where the component starting at `i` ends (its '/' or the end); `name` gets its bytes.
// A quote that is not closed right before a '/' or the end was no quoting: the component
// is then read as it stands, so any text splits somewhere and nothing throws.
inline size_t read_component(std::string_view path, size_t i, std::string *name) {
  if (i < path.size() && path[i] == '"') {
    std::string n;
    for (size_t k = i + 1; k < path.size(); ++k) {
      if (path[k] == '\\' && k + 1 < path.size() && (path[k + 1] == '"' || path[k + 1] == '\\')) {
        n += path[++k];
      } else if (path[k] == '"') {
        if (k + 1 == path.size() || path[k + 1] == '/') {
          if (name) *name = std::move(n);
          return k + 1;
        }
        break;
      } else {
        n += path[k];
      }
    }
  }
  size_t end = path.find('/', i);
  if (end == std::string_view::npos) end = path.size();
  if (name) name->assign(path.substr(i, end - i));
  return end;
}
}  // namespace region_path_detail

// The names along a path, unquoted: split_region_path("a/\"io/read\"") is {"a", "io/read"}.
inline std::vector<std::string> split_region_path(std::string_view path) {
  std::vector<std::string> names;
  for (size_t i = 0;;) {
    std::string n;
    i = region_path_detail::read_component(path, i, &n);
    names.push_back(std::move(n));
    if (i >= path.size()) break;
    ++i;  // the '/'
  }
  return names;
}

// Where the parent's path ends (the last separating '/'), or npos for a child of the root.
inline size_t region_path_parent_end(std::string_view path) {
  size_t last = std::string_view::npos;
  for (size_t i = region_path_detail::read_component(path, 0, nullptr); i < path.size();
       i = region_path_detail::read_component(path, i + 1, nullptr))
    last = i;
  return last;
}

// The name a whole component's text stands for: unquoted if it is one quoted component,
// else as it stands (text that is no quoted component, such as a name with a bare '/').
inline std::string region_name_of_component(std::string_view text) {
  std::string name;
  if (!text.empty() && text.front() == '"' && region_path_detail::read_component(text, 0, &name) == text.size())
    return name;
  return std::string(text);
}

// The region's own name, unquoted.
inline std::string region_leaf_name(std::string_view path) {
  const size_t cut = region_path_parent_end(path);
  std::string name;
  region_path_detail::read_component(path, cut == std::string_view::npos ? 0 : cut + 1, &name);
  return name;
}

}  // namespace perfsift::io
