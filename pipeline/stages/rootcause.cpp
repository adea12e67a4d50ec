// Stage `rootcause` (AutoAnalyzer 4.4): why the bottlenecks of `dissimilarity` and
// `disparity` are bottlenecks, by rough sets. Attributes: L1 and L2 miss rates, disk
// I/O bytes, network bytes, instructions retired — those without data are dropped and
// named.
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
#include <ostream>
#include <set>

#include "kernels/kmeans1d.h"
#include "kernels/rough_set.h"
#include "pipeline/format/json_writer.h"
#include "pipeline/format/text.h"
#include "pipeline/engine/mpi_reducer.h"
#include "pipeline/format/results_view.h"
#include "pipeline/engine/stage_info.h"

namespace perfsift::pipeline {

namespace {

struct Attribute {
  std::string name, cause_high, cause_differs;
  std::vector<double> values;  // [owned][nregions]
};

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
        out.push_back({label, "high " + label, label + " differs between rank groups", ratio(metric(miss), metric(access))});
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
  if (const auto *i = metric("PAPI_TOT_INS")) out.push_back({"instructions retired", "many instructions retired", "instructions retired differ between rank groups", *i});
  else dropped.push_back("instructions retired (no PAPI_TOT_INS counter)");
  for (auto &a : out)
    for (auto &x : a.values)
      if (std::isnan(x)) x = 0;
  return out;
}

// Collapses local rows into classes and gathers them: every process gets the same table
// of distinct rows (weighted by count), in a deterministic order.
kernels::DecisionTable gather_classes(Context &ctx, const kernels::DecisionTable &local, std::vector<int64_t> &first_object) {
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
  for (const auto &[obj, k] : rows) t.conditions.push_back(k.first), t.decision.push_back(k.second), first_object.push_back(obj);
  return t;
}

std::vector<std::string> names(const std::vector<Attribute> &attrs, const std::vector<int> &idx) {
  std::vector<std::string> v;
  for (int i : idx) v.push_back(attrs[i].name);
  return v;
}

void write_analysis(StageOutput &out, const std::string &prefix, const std::string &what, const std::vector<Attribute> &attrs,
                    const kernels::DecisionTable &t, const std::vector<int64_t> &objects, const kernels::RoughSetResult &r) {
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
    for (char ch : a.name) id += (ch == ' ' || ch == '/') ? '_' : static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    cols.push_back(&tab.ints(id, "", a.name + (prefix == "dissimilarity" ? ": cluster of ranks by this attribute" : ": 1 when high or very high")));
  }
  auto &dec = tab.ints("decision", "", prefix == "dissimilarity" ? "cluster by time" : "1 for a disparity CCR");
  for (size_t i = 0; i < t.decision.size(); ++i) {
    obj.push_back(objects[i]);
    for (size_t a = 0; a < attrs.size(); ++a) cols[a]->push_back(t.conditions[i][a]);
    dec.push_back(t.decision[i]);
  }
  out.table(prefix + "_table", tab);
  io::Table inc;
  inc.description = "inconsistent objects: equal attributes, different decisions (first object of the class, the other)";
  auto &a = inc.ints("object", "", "first object of an equivalence class with more than one decision");
  auto &b = inc.ints("conflicting_object", "", "an object of that class whose decision differs from the first's");
  for (auto [x, y] : r.inconsistent) a.push_back(objects[x]), b.push_back(objects[y]);
  out.table(prefix + "_inconsistent", inc);
}

void run_rootcause(Context &ctx, const config::Values &cfg, StageOutput &out) {
  const auto &regions = ctx.store().regions();
  const int32_t nreg = ctx.nregions(), first = ctx.first(), owned = ctx.owned();
  std::vector<std::string> dropped;
  const auto attrs = attributes(ctx, dropped);
  auto region_of = [&](const std::string &path) {  // 0 (the program) when not a region
    for (int32_t k = 1; k < nreg; ++k)
      if (regions[k].path == path) return k;
    return int32_t{0};
  };
  out.attribute("attributes", names(attrs, [&] {
                  std::vector<int> v;
                  for (size_t i = 0; i < attrs.size(); ++i) v.push_back(static_cast<int>(i));
                  return v;
                }()));
  out.attribute("dropped", dropped);

  const auto *clusters = ctx.products().find<RankClusters>();
  const auto *severity = ctx.products().find<RegionSeverity>();
  const std::vector<Bottleneck> none;
  const auto *found = ctx.products().find<Bottlenecks>();
  const auto &bottlenecks = found ? found->items : none;
  RootCauses root_causes;

  // ---- dissimilarity: ranks
  if (clusters) {
    kernels::OpticsParams params{cfg.get_float("dissimilarity.radius_fraction"), cfg.get_int("dissimilarity.count_threshold")};
    std::vector<int64_t> ids;
    for (int32_t l = 0; l < owned; ++l)
      if (clusters->cluster_of_owned[l] >= 0) ids.push_back(first + l);
    // Labels of the clustered ranks by attribute `a` over the region columns `cols`.
    auto cluster_by = [&](const Attribute &a, const std::vector<int32_t> &cols) {
      kernels::RowMatrix m(static_cast<Eigen::Index>(ids.size()), static_cast<Eigen::Index>(cols.size()));
      for (size_t i = 0; i < ids.size(); ++i)
        for (size_t c = 0; c < cols.size(); ++c) m(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(c)) = a.values[static_cast<size_t>(ids[i] - first) * nreg + cols[c]];
      const std::vector<uint8_t> all(cols.size(), 1);
      kernels::OpticsParams p = params;
      p.length_floor = radius_floor(ctx, cfg.get_string("dissimilarity.radius_reference"), m, all);
      kernels::PivotDistances pd(m, all);
      return kernels::simplified_optics(pd, ids, {}, p, MpiReducer{ctx.comm(), m, ids});
    };
    auto table_for = [&](const std::vector<int32_t> &cols, std::vector<int64_t> &objects) {
      kernels::DecisionTable local;
      for (const auto &a : attrs) local.attributes.push_back(a.name);
      std::vector<std::vector<int64_t>> labels;
      for (const auto &a : attrs) labels.push_back(cluster_by(a, cols));
      objects = ids;
      for (size_t i = 0; i < ids.size(); ++i) {
        std::vector<int64_t> row;
        for (const auto &l : labels) row.push_back(l[i]);
        local.conditions.push_back(row);
        local.decision.push_back(clusters->cluster_of_owned[ids[i] - first]);
      }
      return gather_classes(ctx, local, objects);
    };
    std::vector<int32_t> all_cols;
    for (int32_t g = 1; g < nreg; ++g) all_cols.push_back(g);
    std::vector<int64_t> objects;
    const auto table = table_for(all_cols, objects);
    const auto r = kernels::analyse_decision_table(table);
    write_analysis(out, "dissimilarity", "dissimilarity (ranks)", attrs, table, objects, r);
    // Per bottleneck region: the table restricted to its column.
    io::Table per;
    per.description = "per dissimilarity CCCR: the attributes of a minimal reduct of its own decision table";
    auto &path = per.strings("path", "region");
    auto &causes = per.strings("causes", "attributes that separate the rank groups in this region, joined by ';'");
    for (const auto &b : bottlenecks) {
      if (b.kind != "dissimilarity") continue;
      // A call-site region has no profile of its own: the whole program's column stands in.
      const int32_t g = region_of(b.where);
      std::vector<int64_t> objs;
      const auto tg = table_for({g}, objs);
      const auto rg = kernels::analyse_decision_table(tg);
      std::string words;
      for (int a : rg.minimal_reduct) words += (words.empty() ? "" : "; ") + attrs[a].cause_differs;
      if (!words.empty() && g == 0) words += " (whole program: call-site regions have no counters of their own)";
      if (words.empty())
        words = dropped.empty() ? "none of the recorded attributes differs between the rank groups"
                                : "none of the recorded attributes differs between the rank groups (" +
                                      std::to_string(dropped.size()) + " not recorded)";
      path.push_back(b.where);
      causes.push_back(words);
      root_causes.words[{"dissimilarity", b.where}] = words;
    }
    out.table("dissimilarity_per_region", per);
  }

  // ---- disparity: regions
  if (severity) {
    kernels::DecisionTable t;
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
    std::vector<int64_t> objects;
    for (int32_t g = 1; g < nreg; ++g) {
      std::vector<int64_t> row;
      for (size_t a = 0; a < attrs.size(); ++a) row.push_back(high[a][g - 1]);
      t.conditions.push_back(row);
      t.decision.push_back(severity->ccr[g]);
      objects.push_back(g);
    }
    const auto r = kernels::analyse_decision_table(t);
    write_analysis(out, "disparity", "disparity (regions)", attrs, t, objects, r);
    io::Table per;
    per.description = "per disparity CCCR: the attributes of the smallest reducts that are high in it";
    auto &path = per.strings("path", "region");
    auto &causes = per.strings("causes", "plain words, joined by ';'");
    for (const auto &b : bottlenecks) {
      const int32_t g = b.kind == "disparity" ? region_of(b.where) : 0;
      if (g == 0) continue;  // disparity bottlenecks are code regions
      // The high attributes of every smallest reduct: equally good explanations.
      std::string words;
      for (int a : kernels::explaining_attributes(r, t.conditions[g - 1], 1)) words += (words.empty() ? "" : "; ") + attrs[a].cause_high;
      if (words.empty()) words = "none of the recorded attributes is high here: its own amount of work";
      path.push_back(b.where);
      causes.push_back(words);
      root_causes.words[{"disparity", b.where}] = words;
    }
    out.table("disparity_per_region", per);
  }
  ctx.products().publish(std::move(root_causes));
}


// "a + b" -> {a, b}; "(none needed)" -> {}.
std::vector<std::string> split(const std::string &s, const std::string &sep) {
  std::vector<std::string> out;
  if (s.empty() || s == "(none needed)") return out;
  size_t a = 0;
  for (size_t b; (b = s.find(sep, a)) != std::string::npos; a = b + sep.size()) out.push_back(s.substr(a, b - a));
  out.push_back(s.substr(a));
  return out;
}

void rootcause_text(std::ostream &os, const io::ResultsStore &rs) {
  const auto a = rs.attributes("rootcause");
  const auto dropped = attr_or<std::vector<std::string>>(a, "dropped", {});
  os << "\nRoot causes (rough sets):";
  if (!dropped.empty()) os << " " << dropped.size() << " attribute(s) lack data";
  os << "\n";
  for (const char *kind : {"dissimilarity", "disparity"}) {
    const std::string k = kind;
    const auto reducts = attr_or<std::vector<std::string>>(a, k + "_reducts", {});
    if (reducts.empty()) continue;
    std::string core;
    for (const auto &c : attr_or<std::vector<std::string>>(a, k + "_core", {})) core += (core.empty() ? "" : ", ") + c;
    std::string all;
    for (const auto &r : reducts) all += (all.empty() ? "" : " | ") + r;
    if (reducts.size() == 1 && reducts[0] == "(none needed)") os << "  " << k << ": no recorded attribute separates the decisions\n";
    else os << "  " << k << ": core {" << core << "}, reducts (the paper's \"core attributions\") " << clip(all, 50) << "\n";
  }
}

void rootcause_json(JsonWriter &j, const io::ResultsStore &rs) {
  const auto a = rs.attributes("rootcause");
  std::set<std::string> groups;
  for (const auto &c : rs.children("rootcause")) groups.insert(c.name);
  for (const char *kind : {"dissimilarity", "disparity"}) {
    const std::string k = kind;
    if (!groups.count(k + "_table")) continue;
    j.key(k).begin_object();
    j.key("core").values(attr_or<std::vector<std::string>>(a, k + "_core", {}));
    j.key("reducts").begin_array();
    for (const auto &r : attr_or<std::vector<std::string>>(a, k + "_reducts", {})) j.values(split(r, " + "));
    j.end_array();
    j.key("minimal_reduct").values(attr_or<std::vector<std::string>>(a, k + "_minimal_reduct", {}));
    j.key("per_region").begin_object();
    const auto per = rs.table("rootcause/" + k + "_per_region");
    const auto &path = column<std::string>(per, "path"), &causes = column<std::string>(per, "causes");
    for (size_t i = 0; i < path.size(); ++i) {
      j.key(path[i]).values(split(causes[i], "; "));
    }
    j.end_object();
    j.end_object();
  }
}

}  // namespace

StageInfo rootcause_stage() {
  StageInfo s{"rootcause",
              "AutoAnalyzer's rough-set root causes of the dissimilarity and disparity bottlenecks: decision tables, "
              "discernibility, core, all reducts and a minimal one, and each bottleneck's causes in plain words",
              {},
              run_rootcause, rootcause_text, rootcause_json};
  s.uses_products = {product_name<RankClusters>(), product_name<RegionSeverity>(), product_name<Bottlenecks>()};
  s.provides_products = {product_name<RootCauses>()};
  return s;
}

}  // namespace perfsift::pipeline
