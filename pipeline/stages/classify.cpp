// Stage `classify` (Vetter, ICS 2000): every matched message gets one of the seven
// classes and a confidence from the C4.5 tree `perfsift train` learnt on this machine;
// counts per (sender call site, receiver call site) pair as the paper's Table 4; each
// pair whose transfers are mostly of one inefficient class becomes a finding with the
// paper's advice. The tree is tied to the platform that trained it: a store from another
// MPI library or other hosts gets a warning.
//
// Cost: one all-to-all of the messages' send sides (pipeline/replay/matched_messages.h), then
// O(messages x tree depth) work spread over the receivers' owners and their threads;
// the pair tables (pairs x 7 counts) meet on every process.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include "kernels/message_class.h"
#include "kernels/rank_set.h"
#include "pipeline/format/text.h"
#include "pipeline/classifier/trained_classifier.h"
#include "pipeline/replay/matched_messages.h"
#include "pipeline/engine/stage_info.h"
#include "pipeline/whatif/fix_questions.h"

namespace perfsift::pipeline {

namespace vt = kernels::vetter;

namespace {

// A pair's tally, plain data for the gather.
struct PairTally {
  uint64_t send_site = 0, recv_site = 0;
  int64_t counts[vt::kClasses] = {};
  // Integers, so sums do not depend on how messages are split over processes.
  int64_t confidence_ppb = 0;            // sum over its messages, in 1e-9
  int64_t excess_ns[vt::kClasses] = {};  // time in the calls beyond normal, per class
};
// A rank taking part in a pair, on one side.
struct PairRank {
  uint64_t send_site, recv_site;
  int32_t receiving, rank;
  bool operator<(const PairRank &o) const {
    return std::tie(send_site, recv_site, receiving, rank) < std::tie(o.send_site, o.recv_site, o.receiving, o.rank);
  }
};

// Vetter's optional post-filter (spec A7): a class that names an operation the transfer
// did not use becomes its counterpart that did (late send <-> late send post, ...).
int32_t fold_to_operations(int32_t cls, const vt::TransferTiming &t) {
  switch (cls) {
    case vt::kLateSend:
      return t.send_nonblocking ? vt::kLateSendPost : cls;
    case vt::kLateSendPost:
      return t.send_nonblocking ? cls : vt::kLateSend;
    case vt::kLateSendWait:
      return t.send_nonblocking ? cls : vt::kLateSend;
    case vt::kLateRecv:
      return t.recv_nonblocking ? vt::kLateRecvPost : cls;
    case vt::kLateRecvPost:
      return t.recv_nonblocking ? cls : vt::kLateRecv;
    case vt::kLateRecvWait:
      return t.recv_nonblocking ? cls : vt::kLateRecv;
    default:
      return cls;
  }
}

// Time the transfer's calls took beyond what normal ones of its kind and size take (ns).
int64_t excess_ns(const vt::Normalizer &n, const std::array<double, vt::kFeatures> &raw) {
  double s = 0;
  for (int32_t f : {vt::kSendDur, vt::kSendWaitDur, vt::kRecvDur, vt::kRecvWaitDur}) {
    const int32_t kind = f == vt::kSendDur || f == vt::kSendWaitDur ? raw[vt::kSendType] != 0 : raw[vt::kRecvType] != 0;
    s += std::max(0.0, raw[static_cast<size_t>(f)] - n.baseline(f, kind, raw[vt::kMsgSize]));
  }
  return std::llround(s);
}

// Each matched message's class, the tree's confidence and its calls' time beyond normal
// (ns); the normalised features only when the per-message rows are written.
struct MessageClasses {
  std::vector<int32_t> cls;
  std::vector<double> conf;
  std::vector<int64_t> extra;
  std::vector<std::array<double, vt::kFeatures>> features;
};

MessageClasses classify_messages(Context &ctx, const TrainedClassifier &model, const MatchedMessageTable &messages,
                                 bool fold, bool keep_rows) {
  ctx.progress().begin("classify: classifying");
  MessageClasses m;
  m.cls.resize(messages.size());
  m.conf.resize(messages.size());
  m.extra.resize(messages.size());
  m.features.resize(keep_rows ? messages.size() : 0);
#pragma omp parallel for schedule(static)
  for (size_t i = 0; i < messages.size(); ++i) {
    const auto raw = vt::raw_features(messages[i].timing);
    const auto f = model.normalizer.normalise(raw);
    if (keep_rows) m.features[i] = f;
    int32_t c = model.tree.classify(f.data(), &m.conf[i]);
    if (fold) c = fold_to_operations(c, messages[i].timing);
    m.cls[i] = c;
    m.extra[i] = excess_ns(model.normalizer, raw);
  }
  ctx.progress().end();
  return m;
}

using SitePair = std::pair<uint64_t, uint64_t>;  // (sender call site, receiver call site)
using PairRanks = std::map<SitePair, std::array<std::vector<int32_t>, 2>>;

// The ranks taking part in each pair, gathered: [0] the senders, [1] the receivers.
PairRanks pair_ranks(Context &ctx, const MatchedMessageTable &messages) {
  std::set<PairRank> local_ranks;
  for (const auto &m : messages) {
    local_ranks.insert({m.send_site, m.recv_site, 0, m.src});
    local_ranks.insert({m.send_site, m.recv_site, 1, m.dst});
  }
  PairRanks ranks;
  for (const PairRank &r : ctx.allgatherv(std::vector<PairRank>(local_ranks.begin(), local_ranks.end())))
    ranks[{r.send_site, r.recv_site}][static_cast<size_t>(r.receiving)].push_back(r.rank);
  return ranks;
}

// Every pair's tally, gathered.
std::map<SitePair, PairTally> pair_tallies(Context &ctx, const MatchedMessageTable &messages,
                                           const MessageClasses &mc) {
  std::map<SitePair, PairTally> mine;
  for (size_t i = 0; i < messages.size(); ++i) {
    const auto &m = messages[i];
    PairTally &p = mine[{m.send_site, m.recv_site}];
    p.send_site = m.send_site;
    p.recv_site = m.recv_site;
    ++p.counts[mc.cls[i]];
    p.confidence_ppb += std::llround(mc.conf[i] * 1e9);
    p.excess_ns[mc.cls[i]] += mc.extra[i];
  }
  std::vector<PairTally> local;
  for (const auto &kv : mine) local.push_back(kv.second);
  std::map<SitePair, PairTally> all;
  for (const PairTally &p : ctx.allgatherv(local)) {  // process order: the same sums everywhere
    PairTally &a = all[{p.send_site, p.recv_site}];
    a.send_site = p.send_site;
    a.recv_site = p.recv_site;
    for (int c = 0; c < vt::kClasses; ++c) {
      a.counts[c] += p.counts[c];
      a.excess_ns[c] += p.excess_ns[c];
    }
    a.confidence_ppb += p.confidence_ppb;
  }
  return all;
}

// A (sender call site, receiver call site) pair: its tally and who took part.
struct PairSummary {
  PairTally tally;
  int64_t transfers = 0;
  int32_t top = 0;                               // the most frequent class
  std::string sender{}, receiver{};              // call-site labels
  std::string sender_ranks{}, receiver_ranks{};  // as the /classify tables print them
  CallSiteName sender_site{}, receiver_site{};
  kernels::RankRanges sender_set{}, receiver_set{};
};

std::vector<PairSummary> summarise_pairs(Context &ctx, const std::map<SitePair, PairTally> &all, PairRanks &ranks) {
  const auto &sites = ctx.store().callsites();
  std::vector<PairSummary> pairs;
  for (const auto &[key, p] : all) {
    PairSummary s{p};
    for (int c = 0; c < vt::kClasses; ++c) {
      s.transfers += p.counts[c];
      if (p.counts[c] > p.counts[s.top]) s.top = c;
    }
    s.sender = site_label(sites, p.send_site);
    s.receiver = site_label(sites, p.recv_site);
    if (p.send_site < sites.size()) s.sender_site = call_site_name(sites[p.send_site]);
    if (p.recv_site < sites.size()) s.receiver_site = call_site_name(sites[p.recv_site]);
    const auto &r = ranks[key];
    s.sender_set = kernels::to_ranges(r[0]);
    s.receiver_set = kernels::to_ranges(r[1]);
    s.sender_ranks = kernels::format_ranges_brief(s.sender_set);
    s.receiver_ranks = kernels::format_ranges_brief(s.receiver_set);
    pairs.push_back(std::move(s));
  }
  return pairs;
}

// What the stage found: the model, each local message's class, and the pairs' tallies.
struct ClassifyResult {
  std::string model_path;
  TrainedClassifier model;
  bool same_platform = false;
  const MatchedMessageTable *messages = nullptr;  // the local ones
  int64_t total = 0;                              // messages of the run
  bool keep_rows = false;                         // write the per-message rows
  MessageClasses classes;
  std::vector<PairSummary> pairs;  // every pair, on every process
  std::vector<int64_t> totals;     // transfers per class
};

ClassifyResult compute_classify(Context &ctx, const config::Values &cfg, const std::string &path) {
  ClassifyResult r;
  r.model_path = path;
  r.model = load_classifier(path);
  const Platform here = platform_of(ctx.store().run());
  r.same_platform = here == r.model.platform;
  if (!r.same_platform)
    ctx.warnings.push_back("classify: the model " + path + " was trained on " + r.model.platform.mpi_library + " (" +
                           r.model.platform.host_pattern + "), this run used " + here.mpi_library + " (" +
                           here.host_pattern +
                           "); its classes may be wrong here: train it again with `perfsift train` on this platform");
  const bool fold = cfg.get_bool("classify.fold_to_operations");
  r.messages = &ctx.products().get<MatchedMessages>().items;
  const auto &messages = *r.messages;
  std::vector<int64_t> n_local = {static_cast<int64_t>(messages.size())};
  ctx.allreduce_sum(n_local);
  r.total = n_local[0];
  r.keep_rows = r.total <= cfg.get_int("classify.max_message_rows");
  r.classes = classify_messages(ctx, r.model, messages, fold, r.keep_rows);
  auto ranks = pair_ranks(ctx, messages);
  const auto all = pair_tallies(ctx, messages, r.classes);
  r.pairs = summarise_pairs(ctx, all, ranks);
  r.totals.assign(vt::kClasses, 0);
  for (const PairSummary &p : r.pairs)
    for (int c = 0; c < vt::kClasses; ++c) r.totals[static_cast<size_t>(c)] += p.tally.counts[c];
  return r;
}

// Per-message rows: who, which class, how sure, and the normalised features.
void write_message_rows(const ClassifyResult &r, StageOutput &out) {
  const auto &messages = *r.messages;
  const auto &mc = r.classes;
  io::Table rows;
  rows.description = "every matched message: its class and the tree's confidence (Vetter's Fig. 7)";
  auto &src = rows.ints("sender", "", "sending rank"), &dst = rows.ints("receiver", "", "receiving rank");
  auto &sev = rows.ints("send_event", "", "the send call's index within the sender's events");
  auto &rev = rows.ints("recv_event", "", "the receive call's index within the receiver's events");
  auto &c = rows.strings("class", "Vetter's class");
  auto &cf = rows.floats("confidence", "", "the leaf's pessimistic accuracy");
  auto &bytes = rows.ints("bytes", "B", "message size");
  auto &md = rows.floats("msg_dur_s", "s", "receive completion minus send start");
  // The tree's inputs: durations in multiples of a normal transfer's (Vetter's Fig. 7).
  const auto attrs = vt::empty_dataset().attributes;
  std::vector<std::vector<double> *> normalised;
  for (int32_t a : {vt::kSendDur, vt::kSendWaitDur, vt::kRecvDur, vt::kRecvWaitDur, vt::kMsgDur, vt::kPostGap})
    normalised.push_back(
        &rows.floats(attrs[static_cast<size_t>(a)] + "_norm", "",
                     attrs[static_cast<size_t>(a)] + " over a normal transfer's of the same kind and size"));
  for (size_t i = 0; i < messages.size(); ++i) {
    src.push_back(messages[i].src);
    dst.push_back(messages[i].dst);
    sev.push_back(messages[i].send_event);
    rev.push_back(messages[i].recv_event);
    c.push_back(vt::class_keys()[static_cast<size_t>(mc.cls[i])]);
    cf.push_back(mc.conf[i]);
    bytes.push_back(messages[i].timing.bytes);
    md.push_back(static_cast<double>(vt::message_duration(messages[i].timing)) * 1e-9);
    size_t k = 0;
    for (int32_t a : {vt::kSendDur, vt::kSendWaitDur, vt::kRecvDur, vt::kRecvWaitDur, vt::kMsgDur, vt::kPostGap})
      normalised[k++]->push_back(mc.features[i][static_cast<size_t>(a)]);
  }
  out.table_rows("messages", rows);
}

// Transfers per pair and class (Vetter's Table 4); without pairs, the empty table.
void write_pairs_table(const std::vector<PairSummary> &pairs, StageOutput &out) {
  io::Table t;
  t.description = "transfers per (sender call site, receiver call site) and class (Vetter's Table 4)";
  auto &sender = t.strings("sender", "sender's call site, function+offset");
  auto &receiver = t.strings("receiver", "receiver's call site");
  auto &sender_id = t.ints("sender_site", "", "call-site id (/callsites of the trace store)");
  auto &receiver_id = t.ints("receiver_site", "", "call-site id");
  std::vector<std::vector<int64_t> *> count_cols;
  for (const char *k : vt::class_keys()) count_cols.push_back(&t.ints(k, "", std::string("transfers classified ") + k));
  auto &predominant = t.strings("predominant", "the most frequent class");
  auto &confidence = t.floats("mean_confidence", "", "mean confidence of the tree's answers");
  auto &excess = t.floats("excess_s", "s", "time in the pair's MPI calls beyond normal transfers, summed");
  auto &senders = t.strings("senders", "sending ranks");
  auto &receivers = t.strings("receivers", "receiving ranks");
  for (const PairSummary &s : pairs) {
    const PairTally &p = s.tally;
    sender.push_back(s.sender);
    receiver.push_back(s.receiver);
    sender_id.push_back(static_cast<int64_t>(p.send_site));
    receiver_id.push_back(static_cast<int64_t>(p.recv_site));
    for (int c = 0; c < vt::kClasses; ++c) count_cols[static_cast<size_t>(c)]->push_back(p.counts[c]);
    predominant.push_back(vt::class_keys()[static_cast<size_t>(s.top)]);
    const int64_t n = s.transfers;
    confidence.push_back(n ? static_cast<double>(p.confidence_ppb) * 1e-9 / static_cast<double>(n) : 0);
    int64_t ex = 0;
    for (int c = 0; c < vt::kClasses; ++c) ex += p.excess_ns[c];
    excess.push_back(static_cast<double>(ex) * 1e-9);
    senders.push_back(s.sender_ranks);
    receivers.push_back(s.receiver_ranks);
  }
  out.table("pairs", t);
}

void write_classify(const config::Values &cfg, const ClassifyResult &r, StageOutput &out) {
  if (r.keep_rows) {
    write_message_rows(r, out);
  } else {
    out.attribute("messages_table_skipped", "the run has " + std::to_string(r.total) +
                                                " messages, more than classify.max_message_rows = " +
                                                std::to_string(cfg.get_int("classify.max_message_rows")));
  }
  out.attribute("model", r.model_path);
  out.attribute("model_trained_at", r.model.trained_at);
  out.attribute("model_platform", r.model.platform.mpi_library + " (" + r.model.platform.host_pattern + ")");
  out.attribute("platform_matches", static_cast<int64_t>(r.same_platform));
  out.attribute("model_cross_validation_accuracy", r.model.cross_validation_accuracy);
  out.attribute("messages", r.total);
  for (int c = 0; c < vt::kClasses; ++c)
    out.attribute(std::string("count_") + vt::class_keys()[static_cast<size_t>(c)], r.totals[static_cast<size_t>(c)]);
  write_pairs_table(r.pairs, out);
}

// A finding per pair whose transfers are mostly of one inefficient class that cost time.
void classify_findings(Context &ctx, const config::Values &cfg, const ClassifyResult &r) {
  const double min_share = cfg.get_float("classify.min_share");
  const int64_t min_messages = cfg.get_int("classify.min_messages");
  const double min_lost = cfg.get_float("classify.min_lost_share");
  for (const PairSummary &s : r.pairs) {
    const PairTally &p = s.tally;
    const int64_t n = s.transfers;
    // The predominant inefficiency of the pair: the most frequent non-normal class.
    int32_t worst = -1;
    for (int c = 1; c < vt::kClasses; ++c)
      if (p.counts[c] > 0 && (worst < 0 || p.counts[c] > p.counts[worst])) worst = c;
    const double worst_s = worst < 0 ? 0.0 : static_cast<double>(p.excess_ns[worst]) * 1e-9;
    if (worst < 0 || n < min_messages || static_cast<double>(p.counts[worst]) < min_share * static_cast<double>(n) ||
        worst_s < min_lost * ctx.program_time_s())
      continue;
    Finding f;
    f.kind = transfer_class_kind(worst);
    f.place.type = Place::Type::Transfer;
    f.place.label = s.sender + " -> " + s.receiver;
    f.place.site = s.sender_site;
    f.place.peer = s.receiver_site;
    const bool receiver_waits = worst == vt::kLateSend || worst == vt::kLateSendPost;
    f.culprits.ranks = receiver_waits ? s.receiver_set : s.sender_set;
    // Priced by removing the waiting where it is spent: the replay then says whether that
    // buys anything, and whether another problem's fix removes it (one cause, one problem).
    const uint64_t waiting_site = receiver_waits ? s.tally.recv_site : s.tally.send_site;
    if (waiting_site < ctx.store().callsites().size())
      f.fix = callsite_fix(Fix::Action::ZeroWait, ctx.store().callsites(), static_cast<int64_t>(waiting_site));
    f.lost_s = worst_s;
    f.cause = std::to_string(p.counts[worst]) + " of " + std::to_string(n) + " transfers (" +
              format_percent(static_cast<double>(p.counts[worst]) / static_cast<double>(n)) + ") from ranks " +
              s.sender_ranks + " to " + s.receiver_ranks + " are " + vt::class_keys()[static_cast<size_t>(worst)] +
              ": " + vt::class_advice(worst) + "; they spent " + format_seconds(worst_s) +
              " in MPI beyond normal transfers";
    ctx.findings.push_back(f);
  }
}

void run_classify(Context &ctx, const config::Values &cfg, StageOutput &out) {
  const std::string path = cfg.get_string("classify.model");
  if (path.empty()) {
    out.attribute("skipped", std::string("no classifier model: train one on this machine with "
                                         "`perfsift train -o classifier.model -- mpirun -n 2` and set classify.model"));
    write_pairs_table({}, out);
    return;
  }
  const ClassifyResult r = compute_classify(ctx, cfg, path);
  write_classify(cfg, r, out);
  classify_findings(ctx, cfg, r);
}

// Set-up: the classifier model reads back.
void check_classify(const config::Values &cfg, const io::TraceStore &) {
  if (const std::string path = cfg.get_string("classify.model"); !path.empty()) load_classifier(path);
}

}  // namespace

StageInfo classify_stage() {
  StageInfo s{
      "classify",
      "Vetter's decision-tree classification of every matched message (normal, late send, late receive, late "
      "send/receive post or wait), counted per sender/receiver call-site pair, with the paper's advice",
      {{"model", config::Type::String, std::string(""), "",
        "classifier written by `perfsift train` on this platform (empty: the stage says how to make one)", 0, 0},
       {"fold_to_operations", config::Type::Bool, true, "",
        "a class naming an operation the transfer did not use becomes its counterpart (late send <-> late send post)",
        0, 0},
       {"min_share", config::Type::Float, 0.5, "",
        "a pair becomes a finding when this share of its transfers has one inefficient class", 0, 1},
       {"min_messages", config::Type::Int, int64_t{4}, "", "... and it carries at least this many transfers", 1, 1e12},
       {"min_lost_share", config::Type::Float, 0.01, "",
        "... and they spent this share of the run's wall time in MPI beyond normal transfers", 0, 1e6},
       {"max_message_rows", config::Type::Int, int64_t{1000000}, "",
        "write the per-message table (classify/messages) up to this many messages", 0, 1e12}},
      run_classify};
  s.requires_products = {product_name<MatchedMessages>()};
  s.check = check_classify;
  return s;
}

}  // namespace perfsift::pipeline
