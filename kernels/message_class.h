// Vetter's classification of message transfers (ICS 2000), the pure part: the seven
// classes with the paper's advice, a transfer's eight features (Fig. 6), their
// normalisation by what a normal transfer of the same kind and size costs on this
// machine, and the confusion-matrix and cross-validation figures training reports.
//
// Durations are nanoseconds on the collector's corrected clock. Msg Dur spans two ranks:
// (Recv.exit) - Send.enter for a blocking receive, (Wait.exit) - Send.enter when the
// receive was nonblocking (Wait: the call that completed it).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/c45.h"
#include "kernels/message_match.h"

namespace perfsift::kernels::vetter {

// Table 1, in the order of the JSON keys.
enum MessageClass : int32_t {
  kNormal,
  kLateSend,
  kLateRecv,
  kLateSendPost,
  kLateSendWait,
  kLateRecvPost,
  kLateRecvWait,
  kClasses
};
// "normal", "late_send", ... (JSON keys and microbenchmark phase labels).
const std::array<const char *, kClasses> &class_keys();
// The paper's diagnosis of each class, in plain words.
const char *class_advice(int32_t cls);

using kernels::TransferTiming;  // kernels/message_match.h

// A3's formulas.
int64_t send_duration(const TransferTiming &t);
int64_t send_wait_duration(const TransferTiming &t);
int64_t recv_duration(const TransferTiming &t);
int64_t recv_wait_duration(const TransferTiming &t);
int64_t message_duration(const TransferTiming &t);

// Fig. 6's columns: send type, send dur, send wait dur, recv type, recv dur, recv wait
// dur, msg size (bytes, raw), msg dur; then one of ours, post gap: the receive's post
// minus the send's start (normalised like Msg Dur). Without it a late-posted Irecv and a
// late Wait on an early Irecv look alike whenever the data fits the eager buffer — the
// paper's main confusion (Table 2: 182 of its 419 errors).
enum Feature : int32_t {
  kSendType,
  kSendDur,
  kSendWaitDur,
  kRecvType,
  kRecvDur,
  kRecvWaitDur,
  kMsgSize,
  kMsgDur,
  kPostGap,
  kFeatures
};
constexpr int32_t kPaperFeatures = kPostGap;  // the first eight
// An empty data set with the attributes (all, or the paper's eight) and seven classes.
c45::Dataset empty_dataset(int32_t attributes = kFeatures);
// The raw feature vector (durations in ns).
std::array<double, kFeatures> raw_features(const TransferTiming &t);

// Mean of each duration feature over normal transfers, per operation kind and
// size bucket floor(log2(bytes)); durations divide by it, interpolated in log2(size)
// between the buckets measured, clamped beyond them. Kind: the send type for send
// features, the receive type for receive features, both for Msg Dur.
class Normalizer {
 public:
  static constexpr int kBuckets = 48;
  void add_normal(const std::array<double, kFeatures> &raw);
  void finish();  // sums -> means; call once after the last add_normal
  std::array<double, kFeatures> normalise(const std::array<double, kFeatures> &raw) const;
  // The mean for a feature, kind (0..3) and size (bytes); 0 when nothing was measured.
  double baseline(int32_t feature, int32_t kind, double bytes) const;
  bool empty() const;

  // Persistent state: [feature][kind][bucket] sums and counts.
  std::vector<double> sum, count;
  Normalizer() : sum(kFeatures * 4 * kBuckets, 0.0), count(kFeatures * 4 * kBuckets, 0.0) {}

 private:
  static size_t at(int32_t f, int32_t kind, int32_t b) {
    return (static_cast<size_t>(f) * 4 + static_cast<size_t>(kind)) * kBuckets + static_cast<size_t>(b);
  }
  static int32_t kind_of(int32_t feature, const std::array<double, kFeatures> &raw);
};
int32_t size_bucket(double bytes);

// Rows: actual class, columns: predicted.
struct ConfusionMatrix {
  explicit ConfusionMatrix(size_t k = kClasses) : n(k, std::vector<int64_t>(k, 0)) {}
  std::vector<std::vector<int64_t>> n;
  void add(int32_t actual, int32_t predicted) { ++n[static_cast<size_t>(actual)][static_cast<size_t>(predicted)]; }
  int64_t total() const;
  int64_t correct() const;
  double accuracy() const;
  double recall(size_t cls) const;     // of the actual cls, predicted cls
  double precision(size_t cls) const;  // of the predicted cls, actually cls
  int64_t row_total(size_t cls) const;
  int64_t column_total(size_t cls) const;
};

// The tree's resubstitution figures on its own training data.
ConfusionMatrix evaluate(const c45::Tree &tree, const c45::Dataset &d);
// k-fold cross-validation: cases dealt to folds stratified by class (deterministic),
// a tree trained on k-1 folds classifies the held-out one.
ConfusionMatrix cross_validate(const c45::Dataset &d, int folds, const c45::Options &opt = {});

}  // namespace perfsift::kernels::vetter
