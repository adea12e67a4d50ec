// LogGPS parameter files (`perfsift calibrate` writes them, `whatif.loggps` reads them)
// and the parameters as /whatif attributes: one table of fields drives all three.
#include "pipeline/replay/loggps_file.h"

#include <cstdio>
#include <optional>
#include <sstream>

#include "config/schema.h"
#include "io/atomic_file.h"

namespace perfsift::pipeline {

namespace {
// Every LogGPS parameter once: its key in a parameter file, its attribute in /whatif, its
// help and range. Defaults come from kernels::LogGPS.
struct LogGPSField {
  const char *key, *attribute, *help;
  double kernels::LogGPS::*real;  // one of the two is set
  int64_t kernels::LogGPS::*integer;
  double min, max;
};
const std::vector<LogGPSField> &loggps_fields() {
  using P = kernels::LogGPS;
  static const std::vector<LogGPSField> fields = {
      {"L_ns", "L_ns", "latency, ns", &P::L, nullptr, 0, 1e12},
      {"os0_ns", "os_ns", "send overhead per message, ns", &P::os0, nullptr, 0, 1e12},
      {"os1_ns_per_byte", "os_ns_per_byte", "send overhead per byte, ns", &P::os1, nullptr, 0, 1e6},
      {"or0_ns", "or_ns", "receive overhead per message, ns", &P::or0, nullptr, 0, 1e12},
      {"or1_ns_per_byte", "or_ns_per_byte", "receive overhead per byte, ns", &P::or1, nullptr, 0, 1e6},
      {"g_ns", "g_ns", "gap between injections, ns", &P::g, nullptr, 0, 1e12},
      {"G_ns_per_byte", "G_ns_per_byte", "gap per byte, ns", &P::G, nullptr, 0, 1e6},
      {"S_bytes", "S_bytes", "eager to rendezvous threshold, bytes", nullptr, &P::S, 0, 9e18},
      {"s_bytes", "s_bytes", "packet size threshold, bytes", nullptr, &P::s, 1, 9e18},
  };
  return fields;
}

const std::vector<config::KeyDef> &loggps_keys() {
  static const std::vector<config::KeyDef> keys = [] {
    const kernels::LogGPS defaults;
    std::vector<config::KeyDef> k;
    for (const auto &f : loggps_fields())
      k.push_back({std::string("loggps.") + f.key, f.real ? config::Type::Float : config::Type::Int,
                   f.real ? config::Value(defaults.*f.real) : config::Value(defaults.*f.integer), "", f.help, f.min,
                   f.max});
    return k;
  }();
  return keys;
}

// TOML floats need a decimal point or exponent.
std::string toml_float(double v) {
  char b[64];
  std::snprintf(b, sizeof b, "%.6g", v);
  std::string s = b;
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return s;
}
}  // namespace

kernels::LogGPS read_loggps(const std::string &path) {
  const auto v =
      config::parse_file(loggps_keys(), path, [](const std::string &) { return std::optional<std::string>{}; });
  kernels::LogGPS p;
  for (const auto &f : loggps_fields()) {
    const std::string key = std::string("loggps.") + f.key;
    if (f.real)
      p.*f.real = v.get_float(key);
    else
      p.*f.integer = v.get_int(key);
  }
  p.source = path;
  return p;
}

void write_loggps(const std::string &path, const kernels::LogGPS &p, const std::string &comment) {
  std::ostringstream os;
  os << "# LogGPS parameters for perfsift's replay (perfsift calibrate).\n# " << comment << "\n[loggps]\n";
  for (const auto &f : loggps_fields()) {
    os << f.key << " = ";
    if (f.real)
      os << toml_float(p.*f.real) << "\n";
    else
      os << p.*f.integer << "\n";
  }
  io::write_file_atomically(path, os.str());
}

std::vector<std::pair<std::string, io::AttrValue>> loggps_attributes(const kernels::LogGPS &p) {
  std::vector<std::pair<std::string, io::AttrValue>> out = {{"loggps_source", p.source}};
  for (const auto &f : loggps_fields())
    out.emplace_back(std::string("loggps_") + f.attribute,
                     f.real ? io::AttrValue(p.*f.real) : io::AttrValue(p.*f.integer));
  return out;
}

}  // namespace perfsift::pipeline
