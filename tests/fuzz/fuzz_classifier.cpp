// libFuzzer target for classifier model files (classify.model, written by `perfsift
// train`): any bytes must load or throw std::runtime_error naming the file and the fix
// (load_classifier's documented error), and a model that loads must classify any
// message without crashing or looping. Seeds (corpus/classifier/): small real models.
#include <array>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "pipeline/classifier/trained_classifier.h"
#include "tests/fuzz/fuzz_util.h"

using namespace perfsift;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string &path = fuzz::scratch_path("fuzz_classifier", ".model");
  if (!fuzz::write_input(path, data, size)) return 0;
  pipeline::TrainedClassifier m;
  try {
    m = pipeline::load_classifier(path);
  } catch (const std::runtime_error &) {
    return 0;
  }
  // What stage classify does with every matched message.
  for (double scale : {0.0, 1.0, 1e6}) {
    std::array<double, kernels::vetter::kFeatures> raw{};
    for (size_t k = 0; k < raw.size(); ++k) raw[k] = scale * static_cast<double>(k + 1);
    const auto f = m.normalizer.normalise(raw);
    double confidence = 0;
    const int32_t c = m.tree.classify(f.data(), &confidence);
    PERFSIFT_FUZZ_CHECK(c >= 0 && c < kernels::vetter::kClasses);
    m.normalizer.baseline(0, 0, scale);
  }
  m.tree.depth();
  m.tree.leaves();
  return 0;
}
