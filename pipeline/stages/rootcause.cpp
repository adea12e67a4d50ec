// Stage `rootcause` (AutoAnalyzer 4.4): why the bottlenecks of `dissimilarity` and
// `disparity` are bottlenecks, by rough sets. Attributes: L1 and L2 miss rates, disk
// I/O bytes, network bytes, instructions retired, and what the OS records without
// hardware counters: involuntary and voluntary context switches per second (descheduled,
// blocking), major and minor page faults per second outside MPI, the time off the CPU (1 - thread
// CPU / wall) and memory growth — those without data are dropped and named.
//  - Dissimilarity: objects are ranks; an attribute's value is the rank's cluster when
//    the ranks are clustered (simplified OPTICS) by that attribute per region; the
//    decision is the rank's cluster by time. One table over all regions, and one per
//    CCCR restricted to that region.
//  - Disparity: objects are regions; an attribute is 1 when the region's mean value is
//    high or very high (exact 1-D k-means), the decision 1 for a CCR.
// Each table gives the core (attributes in every reduct), all reducts (the prime
// implicants of the discernibility function — what the paper calls "core
// attributions") and a minimal reduct, which names each bottleneck's causes.
//
// Cost: a clustering per attribute (as in `dissimilarity`); decision rows are collapsed
// into equivalence classes on each process and only the classes are exchanged.
#include <algorithm>
#include <set>

#include "kernels/kmeans1d.h"
#include "kernels/rough_set.h"
#include "pipeline/format/text.h"
#include "pipeline/engine/mpi_reducer.h"
#include "pipeline/engine/stage_info.h"

namespace perfsift::pipeline {

namespace {

struct Attribute {
  std::string name, cause_high, cause_differs;
  std::vector<double> values;  // [owned][nregions]
};

// The OS's figures per region (no PMU needed): rates per second of the region's wall
// time, its time off the CPU and its memory growth. Stores written before the collector
// recorded them, and imported or synthetic ones (all zero thread CPU time), have none.
// Collective (every process learns whether any rank recorded them).
void os_attributes(Context &ctx, std::vector<Attribute> &out, std::vector<std::string> &dropped) {
  const int32_t nreg = ctx.nregions();
  const size_t cells = static_cast<size_t>(ctx.owned()) * nreg;
  const char *os_metrics[] = {"thread_cpu",        "ctx_switches_involuntary", "ctx_switches_voluntary",
                              "page_faults_major", "page_faults_minor",        "max_rss_growth"};
  bool have = true;
  for (const char *m : os_metrics) have = have && ctx.has_metric(m);
  std::vector<int64_t> recorded(1, 0);
  if (have)
    for (double x : ctx.profile("thread_cpu")) recorded[0] += x > 0;
  ctx.allreduce_sum(recorded);
  const auto &wall = ctx.profile(io::kMetricNames[io::kWall]);
  // Rates below kMinRate count as none: a few switches or faults in a region are noise
  // that would otherwise split ranks that do the same.
  constexpr double kMinRate = 10.0;
  // Switches per second of the region's wall time (a rank is descheduled or blocks inside
  // MPI too); page faults per second of its time outside MPI, where the rank's own work
  // touches memory: a rank with twice the cells faults twice as often in twice the time, a
  // bystander of its extra work, not a cause (per wall second it read as one).
  const auto &mpi = ctx.profile(io::kMetricNames[io::kMpiTime]);
  auto per_second = [&](const char *m, bool of_work) {
    std::vector<double> v(cells, 0.0);
    const auto &x = ctx.profile(m);
    for (size_t i = 0; i < cells && i < x.size() && i < wall.size(); ++i) {
      const double t = of_work && i < mpi.size() && wall[i] > mpi[i] ? wall[i] - mpi[i] : wall[i];
      const double rate = t > 0 && x[i] > 0 ? x[i] / t : 0.0;
      v[i] = rate >= kMinRate ? rate : 0.0;
    }
    return v;
  };
  struct Os {
    const char *name, *metric, *high, *differs;
    bool of_work;
  };
  const Os rates[] = {
      {"involuntary context switches per second", "ctx_switches_involuntary",
       "descheduled: many involuntary context switches (other work on its CPU)",
       "involuntary context switches (descheduling) differ between rank groups", false},
      {"voluntary context switches per second", "ctx_switches_voluntary",
       "blocking: many voluntary context switches (I/O, sleep, blocking waits)",
       "voluntary context switches (blocking) differ between rank groups", false},
      {"major page faults per second outside MPI", "page_faults_major", "many major page faults (pages read from disk)",
       "major page faults differ between rank groups", true},
      {"minor page faults per second outside MPI", "page_faults_minor",
       "many minor page faults (first touch of fresh or released memory)",
       "minor page faults differ between rank groups", true},
  };
  const std::string why = have ? " (thread CPU time zero everywhere: not recorded, as in synthetic or imported stores)"
                               : " (no OS figures in the store: written before the collector recorded them)";
  if (recorded[0] == 0) {
    for (const auto &r : rates) dropped.push_back(r.name + why);
    dropped.push_back("time off the CPU" + why);
    dropped.push_back("memory growth" + why);
    return;
  }
  for (const auto &r : rates) out.push_back({r.name, r.high, r.differs, per_second(r.metric, r.of_work)});
  {
    std::vector<double> v(cells, 0.0);
    const auto &cpu = ctx.profile("thread_cpu");
    for (size_t i = 0; i < cells && i < cpu.size() && i < wall.size(); ++i)
      if (wall[i] > 0 && !std::isnan(cpu[i])) v[i] = std::clamp(1.0 - cpu[i] / wall[i], 0.0, 1.0);
    out.push_back({"time off the CPU", "waiting off the CPU (low thread CPU / wall)",
                   "thread CPU / wall differs between rank groups", v});
  }
  {
    // In MiB; less than 1 MiB counts as none (page tables, an allocator's arena): noise
    // that would otherwise split ranks that do the same.
    std::vector<double> v(cells, 0.0);
    const auto &grow = ctx.profile("max_rss_growth");
    for (size_t i = 0; i < cells && i < grow.size(); ++i)
      if (grow[i] >= 1048576.0) v[i] = grow[i] / 1048576.0;
    out.push_back({"memory growth", "memory growth (the resident-set high-water mark rises)",
                   "memory growth differs between rank groups", v});
  }
}

// The attributes this store has data for; the others are named in `dropped`.
std::vector<Attribute> attributes(Context &ctx, std::vector<std::string> &dropped) {
  const int32_t nreg = ctx.nregions();
  const size_t cells = static_cast<size_t>(ctx.owned()) * nreg;
  auto metric = [&](const std::string &m) -> const std::vector<double> * {
    return ctx.has_metric(m) ? &ctx.profile(m) : nullptr;
  };
  auto ratio = [&](const std::vector<double> *num, const std::vector<double> *den) {
    std::vector<double> v(cells, 0.0);
    for (size_t i = 0; i < cells; ++i) v[i] = (*den)[i] > 0 ? (*num)[i] / (*den)[i] : 0.0;
    return v;
  };
  std::vector<Attribute> out;
  // Miss rate = misses / accesses; per instruction when the access counter is missing.
  auto miss_rate = [&](const std::string &label, std::initializer_list<std::pair<const char *, const char *>> pairs) {
    for (auto [miss, access] : pairs)
      if (metric(miss) && metric(access)) {
        out.push_back(
            {label, "high " + label, label + " differs between rank groups", ratio(metric(miss), metric(access))});
        return;
      }
    for (auto [miss, access] : pairs)
      if (metric(miss) && metric("PAPI_TOT_INS")) {
        out.push_back({label, "high " + label + " (misses per instruction)", label + " differs between rank groups",
                       ratio(metric(miss), metric("PAPI_TOT_INS"))});
        return;
      }
    dropped.push_back(label + " (no " + std::string(pairs.begin()->first) + " counter)");
  };
  miss_rate("L1 miss rate", {{"PAPI_L1_DCM", "PAPI_L1_DCA"}, {"PAPI_L1_TCM", "PAPI_L1_TCA"}});
  miss_rate("L2 miss rate", {{"PAPI_L2_DCM", "PAPI_L2_DCA"}, {"PAPI_L2_TCM", "PAPI_L2_TCA"}});
  {
    std::vector<double> v(cells, 0.0);
    const auto *r = metric("io_bytes_read"), *w = metric("io_bytes_written");
    for (size_t i = 0; i < cells; ++i) v[i] = (r ? (*r)[i] : 0) + (w ? (*w)[i] : 0);
    out.push_back({"disk I/O bytes", "heavy disk I/O", "disk I/O differs between rank groups", v});
  }
  {
    std::vector<double> v(cells, 0.0);
    const auto *s = metric("mpi_bytes_sent"), *r = metric("mpi_bytes_recv");
    for (size_t i = 0; i < cells; ++i) v[i] = (s ? (*s)[i] : 0) + (r ? (*r)[i] : 0);
    out.push_back({"network bytes", "heavy network traffic", "network traffic differs between rank groups", v});
  }
  if (const auto *i = metric("PAPI_TOT_INS"))
    out.push_back(
        {"instructions retired", "many instructions retired", "instructions retired differ between rank groups", *i});
  else
    dropped.push_back("instructions retired (no PAPI_TOT_INS counter)");
  os_attributes(ctx, out, dropped);
  for (auto &a : out)
    for (auto &x : a.values)
      if (std::isnan(x)) x = 0;
  return out;
}

// Collapses local rows into classes and gathers them: every process gets the same table
// of distinct rows (weighted by count), in a deterministic order.
kernels::DecisionTable gather_classes(Context &ctx, const kernels::DecisionTable &local,
                                      std::vector<int64_t> &first_object) {
  std::map<std::pair<std::vector<int64_t>, int64_t>, int64_t> mine;  // (conditions, decision) -> first object
  for (size_t i = 0; i < local.decision.size(); ++i) {
    auto key = std::make_pair(local.conditions[i], local.decision[i]);
    auto it = mine.find(key);
    if (it == mine.end()) mine.emplace(key, first_object[i]);
  }
  const size_t na = local.attributes.size();
  std::vector<int64_t> flat;
  for (const auto &[k, obj] : mine) {
    flat.insert(flat.end(), k.first.begin(), k.first.end());
    flat.push_back(k.second);
    flat.push_back(obj);
  }
  const std::vector<int64_t> all = ctx.allgatherv(flat);
  std::map<std::pair<std::vector<int64_t>, int64_t>, int64_t> merged;
  for (size_t p = 0; p + na + 2 <= all.size(); p += na + 2) {
    std::vector<int64_t> cond(all.begin() + p, all.begin() + p + na);
    auto key = std::make_pair(cond, all[p + na]);
    auto it = merged.find(key);
    if (it == merged.end() || all[p + na + 1] < it->second) merged[key] = all[p + na + 1];
  }
  // Objects in order of their first member: the tables read like the paper's.
  std::vector<std::pair<int64_t, std::pair<std::vector<int64_t>, int64_t>>> rows;
  for (const auto &[k, obj] : merged) rows.push_back({obj, k});
  std::sort(rows.begin(), rows.end());
  kernels::DecisionTable t;
  t.attributes = local.attributes;
  first_object.clear();
  for (const auto &[obj, k] : rows)
    t.conditions.push_back(k.first), t.decision.push_back(k.second), first_object.push_back(obj);
  return t;
}

std::vector<std::string> names(const std::vector<Attribute> &attrs, const std::vector<int> &idx) {
  std::vector<std::string> v;
  for (int i : idx) v.push_back(attrs[i].name);
  return v;
}

// A decision table over all processes, the first object of each of its rows and its
// rough-set analysis.
struct Analysis {
  kernels::DecisionTable table;
  std::vector<int64_t> objects;  // a rank (dissimilarity) or a region id (disparity)
  kernels::RoughSetResult result;
};

// The causes found for one kind of bottleneck, in the bottlenecks' order.
struct Causes {
  std::vector<Place> places;
  std::vector<std::string> words;
  std::vector<uint8_t> explained;  // the words name a cause (else they say why none is named)
};

void write_analysis(StageOutput &out, const std::string &prefix, const std::string &what,
                    const std::vector<Attribute> &attrs, const Analysis &analysis) {
  const auto &t = analysis.table;
  const auto &objects = analysis.objects;
  const auto &r = analysis.result;
  out.attribute(prefix + "_core", names(attrs, r.core));
  out.attribute(prefix + "_minimal_reduct", names(attrs, r.minimal_reduct));
  std::vector<std::string> reducts;
  for (const auto &red : r.reducts) {
    std::string s;
    for (const auto &n : names(attrs, red)) s += (s.empty() ? "" : " + ") + n;
    reducts.push_back(s.empty() ? "(none needed)" : s);
  }
  out.attribute(prefix + "_reducts", reducts);
  out.attribute(prefix + "_objects", r.objects);
  out.attribute(prefix + "_classes", r.classes);
  io::Table tab;
  tab.description = "the " + what + " decision table (distinct rows; object: the first with those values)";
  auto &obj = tab.ints("object", "", prefix == "dissimilarity" ? "rank" : "region id");
  std::vector<io::IntColumn *> cols;
  for (const auto &a : attrs) {
    std::string id;  // a dataset name: no spaces or slashes
    for (char ch : a.name)
      id += (ch == ' ' || ch == '/') ? '_' : static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    cols.push_back(&tab.ints(
        id, "",
        a.name + (prefix == "dissimilarity" ? ": cluster of ranks by this attribute" : ": 1 when high or very high")));
  }
  auto &dec = tab.ints("decision", "", prefix == "dissimilarity" ? "cluster by time" : "1 for a disparity CCR");
  for (size_t i = 0; i < t.decision.size(); ++i) {
    obj.push_back(objects[i]);
    for (size_t a = 0; a < attrs.size(); ++a) cols[a]->push_back(t.conditions[i][a]);
    dec.push_back(t.decision[i]);
  }
  out.table(prefix + "_table", tab);
  io::Table inc;
  inc.description =
      "inconsistent objects: equal attributes, different decisions (first object of the class, the other)";
  auto &a = inc.ints("object", "", "first object of an equivalence class with more than one decision");
  auto &b = inc.ints("conflicting_object", "", "an object of that class whose decision differs from the first's");
  for (auto [x, y] : r.inconsistent) a.push_back(objects[x]), b.push_back(objects[y]);
  out.table(prefix + "_inconsistent", inc);
}

void write_causes(StageOutput &out, const std::string &name, const std::string &description,
                  const std::string &causes_description, const Causes &found) {
  io::Table per;
  per.description = description;
  auto &path = per.strings("path", "region");
  auto &causes = per.strings("causes", causes_description);
  for (size_t i = 0; i < found.places.size(); ++i) {
    path.push_back(found.places[i].label);
    causes.push_back(found.words[i]);
  }
  out.table(name, per);
}

// Only causes go to the findings: "no attribute explains it" is the rootcause section's to say.
void add_root_causes(RootCauses &root_causes, ProblemKind kind, const Causes &found) {
  for (size_t i = 0; i < found.places.size(); ++i)
    if (found.explained[i]) root_causes.words[{kind, found.places[i]}] = found.words[i];
}

// The region a bottleneck is at; 0 (the program) when not a region (a call-site region).
int32_t region_of(const Finding &b) { return b.place.type == Place::Type::Region ? b.place.region_id : 0; }

// Dissimilarity: the objects are the clustered ranks, the decision their cluster by time.
struct RankTables {
  Context &ctx;
  const config::Values &cfg;
  const std::vector<Attribute> &attrs;
  const RankClusters &clusters;
  std::vector<int64_t> ids;  // the clustered owned ranks

  RankTables(Context &c, const config::Values &v, const std::vector<Attribute> &a, const RankClusters &k)
      : ctx(c), cfg(v), attrs(a), clusters(k) {
    for (int32_t l = 0; l < ctx.owned(); ++l)
      if (clusters.cluster_of_owned[l] >= 0) ids.push_back(ctx.first() + l);
  }

  // Collective: labels of the clustered ranks by attribute `a` over the region columns `cols`.
  std::vector<int64_t> cluster_by(const Attribute &a, const std::vector<int32_t> &cols) const {
    const int32_t nreg = ctx.nregions(), first = ctx.first();
    kernels::RowMatrix m(static_cast<Eigen::Index>(ids.size()), static_cast<Eigen::Index>(cols.size()));
    for (size_t i = 0; i < ids.size(); ++i)
      for (size_t c = 0; c < cols.size(); ++c)
        m(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(c)) =
            a.values[static_cast<size_t>(ids[i] - first) * nreg + cols[c]];
    const std::vector<uint8_t> all(cols.size(), 1);
    const kernels::OpticsParams p = optics_params(ctx, cfg, m, all);
    kernels::PivotDistances pd(m, all);
    return kernels::simplified_optics(pd, ids, {}, p, MpiReducer{ctx.comm(), m, ids});
  }

  // Collective: the decision table over the region columns `cols`, gathered and analysed.
  Analysis analyse(const std::vector<int32_t> &cols) const {
    kernels::DecisionTable local;
    for (const auto &a : attrs) local.attributes.push_back(a.name);
    std::vector<std::vector<int64_t>> labels;
    for (const auto &a : attrs) labels.push_back(cluster_by(a, cols));
    for (size_t i = 0; i < ids.size(); ++i) {
      std::vector<int64_t> row;
      for (const auto &l : labels) row.push_back(l[i]);
      local.conditions.push_back(row);
      local.decision.push_back(clusters.cluster_of_owned[ids[i] - ctx.first()]);
    }
    Analysis out;
    out.objects = ids;
    out.table = gather_classes(ctx, local, out.objects);
    out.result = kernels::analyse_decision_table(out.table);
    return out;
  }
};

// Collective: per region, the context switches of all ranks, voluntary and involuntary
// (empty without the OS's figures).
struct Switches {
  std::vector<int64_t> voluntary, involuntary;
};
Switches region_switches(const Context &ctx) {
  Switches s;
  if (!ctx.has_metric("ctx_switches_voluntary") || !ctx.has_metric("ctx_switches_involuntary")) return s;
  const int32_t nreg = ctx.nregions();
  s.voluntary.assign(static_cast<size_t>(nreg), 0);
  s.involuntary.assign(static_cast<size_t>(nreg), 0);
  const auto &v = ctx.profile("ctx_switches_voluntary"), &iv = ctx.profile("ctx_switches_involuntary");
  for (int32_t l = 0; l < ctx.owned(); ++l)
    if (!ctx.missing(ctx.first() + l))
      for (int32_t g = 0; g < nreg; ++g) {
        const size_t at = static_cast<size_t>(l) * nreg + g;
        if (at < v.size() && v[at] > 0) s.voluntary[g] += static_cast<int64_t>(v[at]);
        if (at < iv.size() && iv[at] > 0) s.involuntary[g] += static_cast<int64_t>(iv[at]);
      }
  ctx.allreduce_sum(s.voluntary);
  ctx.allreduce_sum(s.involuntary);
  return s;
}

// Time off the CPU is descheduling when the thread rarely blocked there: off the CPU
// while runnable, every switch away an involuntary one. Otherwise it blocked.
std::string off_cpu_words(const Attribute &a, const Switches &sw, int32_t g) {
  if (a.name != "time off the CPU" || static_cast<size_t>(g) >= sw.involuntary.size()) return a.cause_differs;
  if (sw.involuntary[g] > 0 && sw.involuntary[g] >= sw.voluntary[g])
    return a.cause_differs + ": descheduled while runnable (involuntary context switches " +
           std::to_string(sw.involuntary[g]) + ", voluntary " + std::to_string(sw.voluntary[g]) + ")";
  if (sw.voluntary[g] > 0)
    return a.cause_differs + ": blocked (voluntary context switches " + std::to_string(sw.voluntary[g]) +
           ", involuntary " + std::to_string(sw.involuntary[g]) + ")";
  return a.cause_differs;
}

// An attribute's mean over a bottleneck's culprit ranks and over the other ranks, in one
// region: whether it points the way of the excess.
struct Sides {
  double culprits = 0, others = 0;
  bool higher_on_culprits() const { return culprits > others; }
};

// Collective: each attribute's Sides in region g for the culprits of `b`.
std::vector<Sides> attribute_sides(const RankTables &tables, const Finding &b, int32_t g) {
  const Context &ctx = tables.ctx;
  const int32_t nreg = ctx.nregions();
  const size_t n = tables.attrs.size();
  std::vector<kernels::FixedSum> sums(2 * n);
  std::vector<int64_t> counts(2, 0);
  for (int32_t l = 0; l < ctx.owned(); ++l) {
    const int32_t rank = ctx.first() + l;
    if (ctx.missing(rank)) continue;
    bool culprit = b.culprits.all;
    for (const auto &[lo, hi] : b.culprits.ranks) culprit = culprit || (rank >= lo && rank <= hi);
    ++counts[culprit ? 0 : 1];
    for (size_t a = 0; a < n; ++a)
      sums[2 * a + (culprit ? 0 : 1)].add(tables.attrs[a].values[static_cast<size_t>(l) * nreg + g]);
  }
  ctx.allreduce(sums);
  ctx.allreduce_sum(counts);
  std::vector<Sides> sides(n);
  for (size_t a = 0; a < n; ++a) {
    if (counts[0] > 0) sides[a].culprits = sums[2 * a].value() / static_cast<double>(counts[0]);
    if (counts[1] > 0) sides[a].others = sums[2 * a + 1].value() / static_cast<double>(counts[1]);
  }
  return sides;
}

std::string figure(double x) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3g", x);
  return b;
}

// Collective: per dissimilarity bottleneck, the attributes of a minimal reduct of the
// table restricted to its region that are higher on the ranks that carry the excess: an
// attribute that separates the groups the other way (rank 0 writing the output while
// rank 2 computes more) is a bystander, said as such, never as the cause.
Causes dissimilarity_causes(const RankTables &tables, const std::vector<Finding> &bottlenecks,
                            const std::vector<std::string> &dropped) {
  const Switches sw = region_switches(tables.ctx);
  Causes found;
  for (const auto &b : bottlenecks) {
    if (b.kind != ProblemKind::Dissimilarity) continue;
    // A call-site region has no profile of its own: the whole program's column stands in.
    const int32_t g = region_of(b);
    const auto rg = tables.analyse({g}).result;
    // The attributes of every smallest reduct: equally good explanations (a minimal
    // reduct alone would name whichever comes first).
    std::set<int> in_smallest;
    for (const auto &red : rg.reducts)
      if (red.size() == rg.minimal_reduct.size())
        for (int a : red) in_smallest.insert(a);
    if (in_smallest.empty()) in_smallest.insert(rg.minimal_reduct.begin(), rg.minimal_reduct.end());
    const std::vector<Sides> sides = attribute_sides(tables, b, g);
    const std::string culprits = "ranks " + b.culprits.text();
    std::string words, bystanders;
    for (int a : in_smallest) {
      const Sides &side = sides[static_cast<size_t>(a)];
      if (side.higher_on_culprits())
        words += (words.empty() ? "" : "; ") + off_cpu_words(tables.attrs[a], sw, g) + " (" + culprits + ": " +
                 figure(side.culprits) + " against " + figure(side.others) + ")";
      else
        bystanders += (bystanders.empty() ? "" : ", ") + tables.attrs[a].name;
    }
    const bool explained = !words.empty();
    if (!words.empty() && g == 0) words += " (whole program: call-site regions have no counters of their own)";
    if (words.empty() && !bystanders.empty())
      words = "no recorded attribute is higher on the ranks that carry the excess (" + bystanders +
              " separates the groups the other way: a bystander, not the cause)";
    else if (words.empty())
      words = dropped.empty() ? "none of the recorded attributes differs between the rank groups"
                              : "none of the recorded attributes differs between the rank groups (" +
                                    std::to_string(dropped.size()) + " not recorded)";
    found.places.push_back(b.place);
    found.words.push_back(words);
    found.explained.push_back(explained);
  }
  return found;
}

// Collective: disparity's table, one object per region; an attribute is 1 where the
// region's mean value is high or very high, the decision 1 for a CCR.
Analysis disparity_analysis(Context &ctx, const std::vector<Attribute> &attrs, const RegionSeverity &severity) {
  const int32_t nreg = ctx.nregions(), first = ctx.first(), owned = ctx.owned();
  Analysis out;
  auto &t = out.table;
  for (const auto &a : attrs) t.attributes.push_back(a.name);
  std::vector<std::vector<int>> high(attrs.size());
  for (size_t a = 0; a < attrs.size(); ++a) {
    std::vector<kernels::FixedSum> sum(static_cast<size_t>(nreg));
    std::vector<int64_t> count(static_cast<size_t>(nreg), 0);
    for (int32_t l = 0; l < owned; ++l)
      if (!ctx.missing(first + l))
        for (int32_t g = 1; g < nreg; ++g) sum[g].add(attrs[a].values[static_cast<size_t>(l) * nreg + g]), ++count[g];
    ctx.allreduce(sum);
    ctx.allreduce_sum(count);
    std::vector<double> mean;
    for (int32_t g = 1; g < nreg; ++g) mean.push_back(count[g] ? sum[g].value() / static_cast<double>(count[g]) : 0.0);
    const auto sev = kernels::severity_categories(mean);
    for (int s : sev) high[a].push_back(s > 2);  // higher than medium
  }
  for (int32_t g = 1; g < nreg; ++g) {
    std::vector<int64_t> row;
    for (size_t a = 0; a < attrs.size(); ++a) row.push_back(high[a][g - 1]);
    t.conditions.push_back(row);
    t.decision.push_back(severity.ccr[g]);
    out.objects.push_back(g);
  }
  out.result = kernels::analyse_decision_table(t);
  return out;
}

// Per disparity bottleneck: the high attributes of every smallest reduct.
Causes disparity_causes(const std::vector<Attribute> &attrs, const Analysis &analysis,
                        const std::vector<Finding> &bottlenecks) {
  Causes found;
  for (const auto &b : bottlenecks) {
    const int32_t g = b.kind == ProblemKind::Disparity ? region_of(b) : 0;
    if (g == 0) continue;  // disparity bottlenecks are code regions
    // The high attributes of every smallest reduct: equally good explanations.
    std::string words;
    for (int a : kernels::explaining_attributes(analysis.result, analysis.table.conditions[g - 1], 1))
      words += (words.empty() ? "" : "; ") + attrs[a].cause_high;
    if (words.empty()) words = "none of the recorded attributes is high here: its own amount of work";
    found.places.push_back(b.place);
    found.words.push_back(words);
    found.explained.push_back(1);
  }
  return found;
}

void write_attribute_names(StageOutput &out, const std::vector<Attribute> &attrs,
                           const std::vector<std::string> &dropped) {
  std::vector<int> all(attrs.size());
  for (size_t i = 0; i < attrs.size(); ++i) all[i] = static_cast<int>(i);
  out.attribute("attributes", names(attrs, all));
  out.attribute("dropped", dropped);
}

// Each kind: its table is computed, written, then explains its bottlenecks. Collective
// computations and results writes alternate in the same order on every process.
void run_rootcause(Context &ctx, const config::Values &cfg, StageOutput &out) {
  std::vector<std::string> dropped;
  const auto attrs = attributes(ctx, dropped);
  write_attribute_names(out, attrs, dropped);
  const auto *clusters = ctx.products().find<RankClusters>();
  const auto *severity = ctx.products().find<RegionSeverity>();
  const std::vector<Finding> none;
  const auto *found = ctx.products().find<Bottlenecks>();
  const auto &bottlenecks = found ? found->items : none;
  RootCauses root_causes;
  if (clusters) {
    const RankTables tables(ctx, cfg, attrs, *clusters);
    std::vector<int32_t> all_regions;
    for (int32_t g = 1; g < ctx.nregions(); ++g) all_regions.push_back(g);
    write_analysis(out, "dissimilarity", "dissimilarity (ranks)", attrs, tables.analyse(all_regions));
    const Causes causes = dissimilarity_causes(tables, bottlenecks, dropped);
    write_causes(out, "dissimilarity_per_region",
                 "per dissimilarity CCCR: the attributes of a minimal reduct of its own decision table",
                 "attributes that separate the rank groups in this region, joined by ';'", causes);
    add_root_causes(root_causes, ProblemKind::Dissimilarity, causes);
  }
  if (severity) {
    const Analysis analysis = disparity_analysis(ctx, attrs, *severity);
    write_analysis(out, "disparity", "disparity (regions)", attrs, analysis);
    const Causes causes = disparity_causes(attrs, analysis, bottlenecks);
    write_causes(out, "disparity_per_region",
                 "per disparity CCCR: the attributes of the smallest reducts that are high in it",
                 "plain words, joined by ';'", causes);
    add_root_causes(root_causes, ProblemKind::Disparity, causes);
  }
  ctx.products().publish(std::move(root_causes));
}

}  // namespace

StageInfo rootcause_stage() {
  StageInfo s{"rootcause",
              "AutoAnalyzer's rough-set root causes of the dissimilarity and disparity bottlenecks: decision tables, "
              "discernibility, core, all reducts and a minimal one, and each bottleneck's causes in plain words",
              {},
              run_rootcause};
  s.uses_products = {product_name<RankClusters>(), product_name<RegionSeverity>(), product_name<Bottlenecks>()};
  s.provides_products = {product_name<RootCauses>()};
  return s;
}

}  // namespace perfsift::pipeline
