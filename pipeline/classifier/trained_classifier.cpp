// Saving and loading the message classifier with Boost.Serialization.
#include "pipeline/classifier/trained_classifier.h"

#include <boost/archive/detail/archive_serializer_map.hpp>
#include <boost/archive/impl/archive_serializer_map.ipp>
#include <boost/archive/impl/basic_text_iarchive.ipp>
#include <boost/archive/impl/text_iarchive_impl.ipp>
#include <boost/archive/text_iarchive.hpp>
#include <boost/archive/text_oarchive.hpp>
#include <boost/serialization/string.hpp>
#include <boost/serialization/vector.hpp>
#include <algorithm>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>

#include "io/atomic_file.h"

namespace perfsift::pipeline {
// Boost's text archive, reading the same files, except that every string length and
// element count is checked against the file's size before anything is allocated: a
// damaged count would otherwise make the load allocate (and fill) what it claims.
class BoundedTextIArchive : public boost::archive::text_iarchive_impl<BoundedTextIArchive> {
 public:
  BoundedTextIArchive(std::istream &is, std::size_t limit)
      : boost::archive::text_iarchive_impl<BoundedTextIArchive>(is, 0), m_limit(limit) {
    init();
  }

 protected:
  friend class boost::archive::detail::interface_iarchive<BoundedTextIArchive>;
  friend class boost::archive::load_access;
  template <class T>
  void load(T &t) {
    boost::archive::text_iarchive_impl<BoundedTextIArchive>::load(t);
  }
  void load(boost::serialization::collection_size_type &t) {
    std::size_t n = 0;
    boost::archive::text_iarchive_impl<BoundedTextIArchive>::load(n);
    check(n);
    t = boost::serialization::collection_size_type(n);
  }
  void load(std::string &s) {
    std::size_t n = 0;
    boost::archive::text_iarchive_impl<BoundedTextIArchive>::load(n);
    check(n);
    is.get();  // the separating space
    s.resize(n);
    if (n > 0) is.read(s.data(), static_cast<std::streamsize>(n));
    if (!is) throw boost::archive::archive_exception(boost::archive::archive_exception::input_stream_error);
  }

 private:
  void check(std::size_t n) const {
    if (n > m_limit)
      throw std::length_error("a count of " + std::to_string(n) + " in a file of " + std::to_string(m_limit) +
                              " bytes");
  }
  std::size_t m_limit;
};
}  // namespace perfsift::pipeline

template class boost::archive::detail::archive_serializer_map<perfsift::pipeline::BoundedTextIArchive>;
template class boost::archive::basic_text_iarchive<perfsift::pipeline::BoundedTextIArchive>;
template class boost::archive::text_iarchive_impl<perfsift::pipeline::BoundedTextIArchive>;

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

// What a loaded model breaks of what classifying relies on ("" when nothing): baselines
// for every feature, kind and size bucket; every test on a feature; every child after
// its parent (no cycles) and inside the tree; every label a class.
std::string damage(const TrainedClassifier &m) {
  namespace vt = kernels::vetter;
  const size_t baselines = static_cast<size_t>(vt::kFeatures) * 4 * vt::Normalizer::kBuckets;
  if (m.normalizer.sum.size() != baselines || m.normalizer.count.size() != baselines)
    return std::to_string(m.normalizer.sum.size()) + " baselines, expected " + std::to_string(baselines);
  if (!(m.tree.cf > 0 && m.tree.cf <= 1)) return "confidence factor " + std::to_string(m.tree.cf) + " not in (0, 1]";
  const auto &nodes = m.tree.nodes;
  for (size_t n = 0; n < nodes.size(); ++n) {
    const auto &node = nodes[n];
    const std::string at = "node " + std::to_string(n) + ": ";
    if (node.label < 0 || node.label >= vt::kClasses) return at + "class " + std::to_string(node.label);
    if (!node.counts.empty() && static_cast<size_t>(node.label) >= node.counts.size())
      return at + "class " + std::to_string(node.label) + " without a count";
    if (node.attribute < 0) continue;
    if (node.attribute >= vt::kFeatures) return at + "feature " + std::to_string(node.attribute);
    if (node.children.empty() || (node.continuous && node.children.size() != 2))
      return at + std::to_string(node.children.size()) + " branches";
    for (int32_t c : node.children)
      if (c <= static_cast<int32_t>(n) || static_cast<size_t>(c) >= nodes.size())
        return at + "child " + std::to_string(c) + " outside the tree";
  }
  return "";
}
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
    const std::streamoff start = in.tellg();
    in.seekg(0, std::ios::end);
    const auto bytes = static_cast<std::size_t>(std::max<std::streamoff>(in.tellg(), 0));
    in.seekg(start);
    BoundedTextIArchive ar(in, bytes);
    ar >> m;
  } catch (const std::exception &e) {
    throw std::runtime_error(path + ": the classifier model is damaged (" + e.what() +
                             "); train it again with `perfsift train`");
  }
  if (m.tree.nodes.empty() || m.normalizer.sum.size() != m.normalizer.count.size())
    throw std::runtime_error(path + ": the classifier model holds no tree; train it again with `perfsift train`");
  if (const std::string bad = damage(m); !bad.empty())
    throw std::runtime_error(path + ": the classifier model is damaged (" + bad +
                             "); train it again with `perfsift train`");
  return m;
}

}  // namespace perfsift::pipeline
