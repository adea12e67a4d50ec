// Typed access to a results store for the reports and their views of each stage.
#pragma once

#include <string>
#include <variant>
#include <vector>

#include "io/results_store.h"

namespace perfsift::pipeline {

using Attrs = std::vector<std::pair<std::string, io::AttrValue>>;

template <class T>
T attr_or(const Attrs &attrs, const std::string &name, T fallback) {
  for (const auto &[k, v] : attrs)
    if (k == name && std::holds_alternative<T>(v)) return std::get<T>(v);
  return fallback;
}

// The time base of the run's shares and percentages, from its /run attributes: the program
// proper (MPI_Init's end to MPI_Finalize's start; the wall time where that is unknown).
inline double program_time_s(const Attrs &run) { return attr_or<double>(run, "program_time_s", 0); }

// Whether `group` holds an object named `name` (a stage writes some tables only sometimes).
inline bool has_child(const io::ResultsStore &rs, const std::string &group, const std::string &name) {
  for (const auto &c : rs.children(group))
    if (c.name == name) return true;
  return false;
}

// A table column of type T (IntColumn, FloatColumn, StringColumn); empty when absent.
template <class T>
const std::vector<T> &column(const io::Table &t, const std::string &name) {
  static const std::vector<T> empty;
  const auto *c = t.find(name);
  if (!c || !std::holds_alternative<std::vector<T>>(c->values)) return empty;
  return std::get<std::vector<T>>(c->values);
}

}  // namespace perfsift::pipeline
