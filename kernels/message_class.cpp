// Vetter's message classes, features and training figures (see message_class.h).
#include "kernels/message_class.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace perfsift::kernels::vetter {

const std::array<const char *, kClasses> &class_keys() {
  static const std::array<const char *, kClasses> k = {
      "normal", "late_send", "late_recv", "late_send_post", "late_send_wait", "late_recv_post", "late_recv_wait"};
  return k;
}

const char *class_advice(int32_t cls) {
  switch (cls) {
    case kNormal:
      return "the transfers appear normal";
    case kLateSend:
      return "the send appears late: move the MPI_Send earlier in the sender's control flow";
    case kLateRecv:
      return "the receive appears late: move the MPI_Recv earlier in the receiver's control flow";
    case kLateSendPost:
      return "the send is posted late: move the MPI_Isend earlier in the sender's control flow";
    case kLateSendWait:
      return "the wait for the send appears late: move it earlier, giving the sender earlier access to its send buffer";
    case kLateRecvPost:
      return "the receive is posted late: move the MPI_Irecv earlier in the receiver's control flow";
    case kLateRecvWait:
      return "the wait for the receive appears late: move it earlier, giving the receiver earlier access to the data";
    default:
      return "";
  }
}

int64_t send_duration(const TransferTiming &t) { return t.send_exit - t.send_enter; }
int64_t send_wait_duration(const TransferTiming &t) {
  return t.send_wait_enter < 0 ? 0 : t.send_wait_exit - t.send_wait_enter;
}
int64_t recv_duration(const TransferTiming &t) { return t.recv_exit - t.recv_enter; }
int64_t recv_wait_duration(const TransferTiming &t) {
  return t.recv_wait_enter < 0 ? 0 : t.recv_wait_exit - t.recv_wait_enter;
}
int64_t message_duration(const TransferTiming &t) {
  const int64_t done = t.recv_nonblocking && t.recv_wait_exit >= 0 ? t.recv_wait_exit : t.recv_exit;
  return done - t.send_enter;
}

c45::Dataset empty_dataset(int32_t attributes) {
  c45::Dataset d;
  d.attributes = {"send_type",     "send_dur", "send_wait_dur", "recv_type", "recv_dur",
                  "recv_wait_dur", "msg_size", "msg_dur",       "post_gap"};
  d.nominal = {1, 0, 0, 1, 0, 0, 0, 0, 0};
  d.values = {{"send", "isend"}, {}, {}, {"recv", "irecv"}, {}, {}, {}, {}, {}};
  d.attributes.resize(static_cast<size_t>(attributes));
  d.nominal.resize(static_cast<size_t>(attributes));
  d.values.resize(static_cast<size_t>(attributes));
  d.classes.assign(class_keys().begin(), class_keys().end());
  return d;
}

std::array<double, kFeatures> raw_features(const TransferTiming &t) {
  std::array<double, kFeatures> f{};
  f[kSendType] = t.send_nonblocking ? 1 : 0;
  f[kSendDur] = static_cast<double>(send_duration(t));
  f[kSendWaitDur] = static_cast<double>(send_wait_duration(t));
  f[kRecvType] = t.recv_nonblocking ? 1 : 0;
  f[kRecvDur] = static_cast<double>(recv_duration(t));
  f[kRecvWaitDur] = static_cast<double>(recv_wait_duration(t));
  f[kMsgSize] = static_cast<double>(t.bytes);
  f[kMsgDur] = static_cast<double>(message_duration(t));
  f[kPostGap] = static_cast<double>(t.recv_enter - t.send_enter);
  return f;
}

int32_t size_bucket(double bytes) {
  if (bytes < 2) return 0;
  return std::min<int32_t>(Normalizer::kBuckets - 1, static_cast<int32_t>(std::floor(std::log2(bytes))));
}

int32_t Normalizer::kind_of(int32_t feature, const std::array<double, kFeatures> &raw) {
  const int32_t s = raw[kSendType] != 0, r = raw[kRecvType] != 0;
  switch (feature) {
    case kSendDur:
    case kSendWaitDur:
      return s;
    case kRecvDur:
    case kRecvWaitDur:
      return r;
    default:
      return s * 2 + r;
  }
}

// The baseline a feature divides by: the post gap has no normal mean of its own (it is
// about zero), so it is measured in normal message durations.
static int32_t baseline_feature(int32_t f) { return f == kPostGap ? kMsgDur : f; }

namespace {
constexpr std::array<int32_t, 5> kDurations = {kSendDur, kSendWaitDur, kRecvDur, kRecvWaitDur, kMsgDur};
}

void Normalizer::add_normal(const std::array<double, kFeatures> &raw) {
  const int32_t b = size_bucket(raw[kMsgSize]);
  for (int32_t f : kDurations) {
    sum[at(f, kind_of(f, raw), b)] += raw[static_cast<size_t>(f)];
    count[at(f, kind_of(f, raw), b)] += 1;
  }
}

void Normalizer::finish() {
  for (size_t i = 0; i < sum.size(); ++i)
    if (count[i] > 0) {
      sum[i] /= count[i];
      count[i] = 1;
    }
}

bool Normalizer::empty() const {
  return std::all_of(count.begin(), count.end(), [](double c) { return c == 0; });
}

double Normalizer::baseline(int32_t feature, int32_t kind, double bytes) const {
  const double p = bytes < 1 ? 0 : std::log2(bytes);
  int32_t lo = -1, hi = -1;
  for (int32_t b = 0; b < kBuckets; ++b) {
    if (count[at(feature, kind, b)] == 0) continue;
    if (b <= p) lo = b;
    if (b >= p && hi < 0) hi = b;
  }
  if (lo < 0 && hi < 0) return 0;
  if (lo < 0) return sum[at(feature, kind, hi)];
  if (hi < 0 || hi == lo) return sum[at(feature, kind, lo)];
  const double w = (p - lo) / (hi - lo);
  return (1 - w) * sum[at(feature, kind, lo)] + w * sum[at(feature, kind, hi)];
}

std::array<double, kFeatures> Normalizer::normalise(const std::array<double, kFeatures> &raw) const {
  std::array<double, kFeatures> f = raw;
  for (int32_t k : {kSendDur, kSendWaitDur, kRecvDur, kRecvWaitDur, kMsgDur, kPostGap}) {
    const double b = baseline(baseline_feature(k), kind_of(k, raw), raw[kMsgSize]);
    f[static_cast<size_t>(k)] = b > 0 ? raw[static_cast<size_t>(k)] / b : 0;
  }
  return f;
}

int64_t ConfusionMatrix::total() const {
  int64_t t = 0;
  for (const auto &r : n) t += std::accumulate(r.begin(), r.end(), int64_t{0});
  return t;
}
int64_t ConfusionMatrix::correct() const {
  int64_t c = 0;
  for (size_t i = 0; i < n.size(); ++i) c += n[i][i];
  return c;
}
double ConfusionMatrix::accuracy() const {
  return total() ? static_cast<double>(correct()) / static_cast<double>(total()) : 0;
}
int64_t ConfusionMatrix::row_total(size_t c) const { return std::accumulate(n[c].begin(), n[c].end(), int64_t{0}); }
int64_t ConfusionMatrix::column_total(size_t c) const {
  int64_t t = 0;
  for (const auto &r : n) t += r[c];
  return t;
}
double ConfusionMatrix::recall(size_t c) const {
  const int64_t t = row_total(c);
  return t ? static_cast<double>(n[c][c]) / static_cast<double>(t) : 0;
}
double ConfusionMatrix::precision(size_t c) const {
  const int64_t t = column_total(c);
  return t ? static_cast<double>(n[c][c]) / static_cast<double>(t) : 0;
}

ConfusionMatrix evaluate(const c45::Tree &tree, const c45::Dataset &d) {
  ConfusionMatrix m(d.classes.size());
  for (size_t c = 0; c < d.cases(); ++c) m.add(d.y[c], tree.classify(&d.x[c * d.attributes.size()]));
  return m;
}

ConfusionMatrix cross_validate(const c45::Dataset &d, int folds, const c45::Options &opt) {
  ConfusionMatrix m(d.classes.size());
  // Stratified: the i-th case of each class goes to fold i mod k.
  std::vector<int32_t> fold(d.cases());
  std::vector<int32_t> seen(d.classes.size(), 0);
  for (size_t c = 0; c < d.cases(); ++c) fold[c] = seen[static_cast<size_t>(d.y[c])]++ % folds;
  const size_t a = d.attributes.size();
  for (int f = 0; f < folds; ++f) {
    c45::Dataset train_set = d, test_set = d;
    train_set.x.clear();
    train_set.y.clear();
    test_set.x.clear();
    test_set.y.clear();
    for (size_t c = 0; c < d.cases(); ++c) {
      c45::Dataset &to = fold[c] == f ? test_set : train_set;
      to.x.insert(to.x.end(), d.x.begin() + static_cast<long>(c * a), d.x.begin() + static_cast<long>((c + 1) * a));
      to.y.push_back(d.y[c]);
    }
    if (train_set.cases() == 0 || test_set.cases() == 0) continue;
    const c45::Tree t = c45::train(train_set, opt);
    for (size_t c = 0; c < test_set.cases(); ++c) m.add(test_set.y[c], t.classify(&test_set.x[c * a]));
  }
  return m;
}

}  // namespace perfsift::kernels::vetter
