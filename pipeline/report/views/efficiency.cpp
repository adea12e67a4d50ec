// The efficiency stage in the reports: the POP factors after the answer (text), each factor
// below 0.8 with the problem that costs it most (text and JSON), the least efficient regions.
// A factor's problems are told by the fix the replay priced (balance: load balance; a
// faster network: transfer; removing waiting: serialisation), else by the kind's stage.
#include "pipeline/report/views/efficiency.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ostream>

#include "pipeline/engine/problem_kinds.h"
#include "pipeline/format/results_view.h"
#include "pipeline/format/text.h"
#include "pipeline/report/views/stage_views.h"

namespace perfsift::pipeline {

namespace {

enum class Family { LoadBalance, Serialisation, Transfer, Other };

Family family_of(const std::string &kind_id, const std::string &fix_action) {
  if (fix_action == "balance") return Family::LoadBalance;
  if (fix_action == "ideal-network") return Family::Transfer;
  if (fix_action == "zero-wait") return Family::Serialisation;
  const auto kind = find_problem_kind(kind_id);
  if (!kind) return Family::Other;
  if (*kind == ProblemKind::MpiTime) return Family::Transfer;
  if (*kind == ProblemKind::LoadImbalance || *kind == ProblemKind::Dissimilarity || *kind == ProblemKind::Disparity)
    return Family::LoadBalance;
  const std::string_view stage = kind_info(*kind).stage;
  if (stage == "waitstates" || stage == "classify" || stage == "diagnosis") return Family::Serialisation;
  return Family::Other;
}

// "#2 load imbalance in solve on ranks 2-3 (20 ms at stake)"
std::string problem_words(const io::Table &p, size_t r) {
  const std::string &id = column<std::string>(p, "kind")[r];
  const auto kind = find_problem_kind(id);
  const std::string &ranks = column<std::string>(p, "ranks")[r];
  return "#" + std::to_string(r + 1) + " " + (kind ? std::string(kind_info(*kind).name) : id) + " in " +
         clip(column<std::string>(p, "where")[r], 50) + " on " +
         (ranks == "all"
              ? "all ranks"
              : std::string(ranks.find_first_of(",-") == std::string::npos ? "rank " : "ranks ") + clip(ranks, 30)) +
         " (" + format_seconds(column<double>(p, "lost_s")[r]) + " at stake)";
}

// The first problem in ranking order of each family; -1 when none.
struct FirstOfFamily {
  int64_t load_balance = -1, serialisation = -1, transfer = -1, communication = -1, any = -1;
};

FirstOfFamily first_of_family(const io::Table &p) {
  FirstOfFamily f;
  const auto &kind = column<std::string>(p, "kind");
  const auto *action = p.find("fix_action");
  for (size_t r = 0; r < p.rows(); ++r) {
    const auto i = static_cast<int64_t>(r);
    const Family fam = family_of(kind[r], action ? column<std::string>(p, "fix_action")[r] : "");
    if (f.any < 0) f.any = i;
    if (fam == Family::LoadBalance && f.load_balance < 0) f.load_balance = i;
    if (fam == Family::Serialisation && f.serialisation < 0) f.serialisation = i;
    if (fam == Family::Transfer && f.transfer < 0) f.transfer = i;
    if ((fam == Family::Serialisation || fam == Family::Transfer) && f.communication < 0) f.communication = i;
  }
  return f;
}

void efficiency_json(JsonWriter &j, const io::ResultsStore &rs) {
  j.key("problems").begin_object();
  for (const auto &f : efficiency_factors(rs)) {
    j.key(f.key);
    if (!f.problem) {
      j.null();
      continue;
    }
    j.begin_object().key("problem").value(static_cast<int64_t>(*f.problem)).key("text").value(f.problem_words);
    j.end_object();
  }
  j.end_object();
  j.key("acceptable").value(kAcceptableEfficiency);
}

// The two regions losing most to their inefficiency ((1 - parallel) x their time), below
// 0.8: "solve/smooth 0.44 (load balance 0.44)", with the lower of its two factors.
std::string worst_regions(const io::ResultsStore &rs) {
  if (!has_child(rs, "efficiency", "regions")) return "";
  const auto t = rs.table("efficiency/regions");
  const auto &path = column<std::string>(t, "region");
  const auto &lb = column<double>(t, "load_balance"), &comm = column<double>(t, "communication"),
             &par = column<double>(t, "parallel"), &time = column<double>(t, "time_max_s");
  std::vector<size_t> order;
  for (size_t r = 0; r < t.rows(); ++r)
    if (par[r] < kAcceptableEfficiency) order.push_back(r);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return (1 - par[a]) * time[a] > (1 - par[b]) * time[b]; });
  std::string s;
  for (size_t i = 0; i < order.size() && i < 2; ++i) {
    const size_t r = order[i];
    s += (i ? ", " : "") + clip(path[r], 30) + " " + format_ratio(par[r], "n/a") +
         (lb[r] <= comm[r] ? " (load balance " + format_ratio(lb[r], "n/a")
                           : " (communication " + format_ratio(comm[r], "n/a")) +
         ")";
  }
  if (order.size() > 2) s += "; " + std::to_string(order.size() - 2) + " more in efficiency/regions";
  return s;
}

}  // namespace

std::vector<EfficiencyFactor> efficiency_factors(const io::ResultsStore &rs) {
  if (!has_child(rs, "", "efficiency")) return {};
  const auto a = rs.attributes("efficiency");
  const io::Table p = rs.table("problems");
  const FirstOfFamily first = first_of_family(p);
  const double nan = std::nan("");
  std::vector<EfficiencyFactor> out = {
      {"parallel", "parallel", attr_or<double>(a, "parallel", nan), {}, {}},
      {"load_balance", "load balance", attr_or<double>(a, "load_balance", nan), {}, {}},
      {"communication", "communication", attr_or<double>(a, "communication", nan), {}, {}},
      {"serialisation", "serialisation", attr_or<double>(a, "serialisation", nan), {}, {}},
      {"transfer", "transfer", attr_or<double>(a, "transfer", nan), {}, {}}};
  const int64_t row_of[] = {first.any, first.load_balance, first.communication, first.serialisation, first.transfer};
  for (size_t k = 0; k < out.size(); ++k)
    if (out[k].value < kAcceptableEfficiency && row_of[k] >= 0) {
      out[k].problem = static_cast<size_t>(row_of[k]) + 1;
      out[k].problem_words = problem_words(p, static_cast<size_t>(row_of[k]));
    }
  return out;
}

std::vector<std::string> efficiency_lines(const io::ResultsStore &rs, size_t width) {
  const auto factors = efficiency_factors(rs);
  if (factors.empty()) return {};
  const auto value = [&](const char *key) {
    for (const auto &f : factors)
      if (f.key == key) return format_ratio(f.value, "n/a");
    return std::string("n/a");
  };
  std::vector<std::string> lines =
      wrap("POP: parallel " + value("parallel") + " = load balance " + value("load_balance") + " x communication " +
               value("communication") + " (serialisation " + value("serialisation") + " x transfer " +
               value("transfer") + ")",
           width, 2);
  // A product's problem is named only when none of its factors names the same: parallel is
  // load balance x communication, communication is serialisation x transfer.
  const auto named_by_a_factor_of = [&](const EfficiencyFactor &product) {
    const bool parallel = product.key == "parallel", communication = product.key == "communication";
    return std::any_of(factors.begin(), factors.end(), [&](const EfficiencyFactor &f) {
      const bool factor_of =
          (parallel && f.key != "parallel") || (communication && (f.key == "serialisation" || f.key == "transfer"));
      return factor_of && f.problem && *f.problem == *product.problem;
    });
  };
  for (const auto &f : factors)
    if (f.problem && !named_by_a_factor_of(f))
      for (const auto &w : wrap(f.label + " " + format_ratio(f.value, "n/a") + ": " + f.problem_words, width - 2, 4))
        lines.push_back("  " + w);
  if (const std::string regions = worst_regions(rs); !regions.empty())
    for (const auto &w :
         wrap("regions below " + format_ratio(kAcceptableEfficiency, "n/a") + ": " + regions, width - 2, 2))
      lines.push_back("  " + w);
  if (const auto note = attr_or<std::string>(rs.attributes("efficiency"), "note", ""); !note.empty())
    for (const auto &w : wrap("note: " + note, width - 2, 4)) lines.push_back("  " + w);
  return lines;
}

StageView efficiency_view() { return {"efficiency", nullptr, efficiency_json}; }

}  // namespace perfsift::pipeline
