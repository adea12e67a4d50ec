// Saving and loading the message classifier with Boost.Serialization.
#include "pipeline/classifier/trained_classifier.h"

#include <boost/archive/text_iarchive.hpp>
#include <boost/archive/text_oarchive.hpp>
#include <boost/serialization/string.hpp>
#include <boost/serialization/vector.hpp>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>

#include "io/atomic_file.h"

namespace boost::serialization {

template <class Archive>
void serialize(Archive &ar, perfsift::kernels::c45::Node &n, unsigned) {
  ar &n.attribute &n.continuous &n.threshold &n.children &n.counts &n.label;
}
template <class Archive>
void serialize(Archive &ar, perfsift::kernels::c45::Tree &t, unsigned) {
  ar &t.nodes &t.cf;
}
template <class Archive>
void serialize(Archive &ar, perfsift::kernels::vetter::Normalizer &n, unsigned) {
  ar &n.sum &n.count;
}
template <class Archive>
void serialize(Archive &ar, perfsift::pipeline::Platform &p, unsigned) {
  ar &p.mpi_library &p.host_pattern;
}
template <class Archive>
void serialize(Archive &ar, perfsift::pipeline::TrainedClassifier &m, unsigned) {
  ar &m.tree &m.normalizer &m.platform &m.trained_at &m.launcher &m.cases_per_class &m.training_accuracy &m
      .cross_validation_accuracy;
}

}  // namespace boost::serialization

namespace perfsift::pipeline {

namespace {
// First line of the file: what it is, so a wrong file gets a clear error, not an archive exception.
constexpr const char *kMagic = "perfsift message classifier (Vetter C4.5), format 1";
}  // namespace

Platform platform_of(const io::RunInfo &run) {
  Platform p;
  p.mpi_library = run.mpi_library.substr(0, run.mpi_library.find('\n'));
  std::set<std::string> patterns;
  std::stringstream hosts(run.hostname_list);
  for (std::string h; std::getline(hosts, h, ',');)
    if (!h.empty()) patterns.insert(std::regex_replace(h, std::regex("[0-9]+"), "[0-9]+"));
  for (const auto &h : patterns) p.host_pattern += (p.host_pattern.empty() ? "" : ",") + h;
  return p;
}

void save_classifier(const std::string &path, const TrainedClassifier &m) {
  std::ostringstream os;
  os << kMagic << "\n";
  {
    boost::archive::text_oarchive ar(os);
    ar << m;
  }
  io::write_file_atomically(path, os.str());
}

TrainedClassifier load_classifier(const std::string &path) {
  std::ifstream in(path);
  if (!in)
    throw std::runtime_error(path + ": cannot open the classifier model; write one with `perfsift train -o " + path +
                             " -- mpirun -n 2`");
  std::string magic;
  std::getline(in, magic);
  if (magic != kMagic)
    throw std::runtime_error(path + ": line 1: not a perfsift classifier model (expected \"" + kMagic +
                             "\"); write one with `perfsift train`");
  TrainedClassifier m;
  try {
    boost::archive::text_iarchive ar(in);
    ar >> m;
  } catch (const std::exception &e) {
    throw std::runtime_error(path + ": the classifier model is damaged (" + e.what() +
                             "); train it again with `perfsift train`");
  }
  if (m.tree.nodes.empty() || m.normalizer.sum.size() != m.normalizer.count.size())
    throw std::runtime_error(path + ": the classifier model holds no tree; train it again with `perfsift train`");
  return m;
}

}  // namespace perfsift::pipeline
