// C4.5 (see c45.h).
#include "kernels/c45.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace perfsift::kernels::c45 {

namespace {

constexpr double kEpsilon = 1e-3;

std::vector<double> class_counts(const Dataset &d, const std::vector<int32_t> &cases) {
  std::vector<double> c(d.classes.size(), 0.0);
  for (int32_t i : cases) c[static_cast<size_t>(d.y[static_cast<size_t>(i)])] += 1;
  return c;
}

int32_t majority(const std::vector<double> &counts) {
  return static_cast<int32_t>(std::max_element(counts.begin(), counts.end()) - counts.begin());
}

double split_info(const std::vector<double> &sizes, double total) {
  double s = 0;
  for (double n : sizes)
    if (n > 0) s -= n / total * std::log2(n / total);
  return s;
}

struct Test {
  int32_t attribute = -1;
  double gain = 0, ratio = 0, threshold = 0;
  bool usable = false;
};

struct Builder {
  const Dataset &d;
  const Options &opt;
  std::vector<std::vector<double>> sorted_values;  // per continuous attribute: all training values, sorted
  Tree tree;

  // The best test of a continuous attribute: the cut with the largest gain (Release 8
  // penalises by log2(candidates)/|S|); the threshold becomes a training value.
  Test continuous(const std::vector<int32_t> &cases, int32_t a, double info) const {
    std::vector<std::pair<double, int32_t>> v;
    v.reserve(cases.size());
    for (int32_t i : cases)
      v.emplace_back(d.at(static_cast<size_t>(i), static_cast<size_t>(a)), d.y[static_cast<size_t>(i)]);
    std::sort(v.begin(), v.end());
    const double n = static_cast<double>(v.size());
    const size_t k = d.classes.size();
    std::vector<double> left(k, 0.0), right(k, 0.0);
    for (const auto &p : v) right[static_cast<size_t>(p.second)] += 1;
    Test best;
    best.attribute = a;
    int candidates = 0;
    double best_gain = -1, best_cut = 0, best_left = 0;
    for (size_t i = 0; i + 1 < v.size(); ++i) {
      left[static_cast<size_t>(v[i].second)] += 1;
      right[static_cast<size_t>(v[i].second)] -= 1;
      if (v[i].first == v[i + 1].first) continue;
      const double nl = static_cast<double>(i + 1), nr = n - nl;
      if (nl < opt.min_objs || nr < opt.min_objs) continue;
      ++candidates;
      const double g = info - (nl / n * entropy(left) + nr / n * entropy(right));
      if (g > best_gain + 1e-12) {
        best_gain = g;
        best_cut = (v[i].first + v[i + 1].first) / 2;
        best_left = nl;
      }
    }
    if (candidates == 0) return best;
    best.gain = best_gain - std::log2(static_cast<double>(candidates)) / n;
    if (best.gain <= 0) return best;
    const double si = split_info({best_left, n - best_left}, n);
    best.ratio = si > kEpsilon ? best.gain / si : 0;
    // The largest value of the attribute in the whole training set not above the cut.
    const auto &all = sorted_values[static_cast<size_t>(a)];
    auto it = std::upper_bound(all.begin(), all.end(), best_cut);
    best.threshold = it == all.begin() ? best_cut : *(it - 1);
    best.usable = true;
    return best;
  }

  Test nominal(const std::vector<int32_t> &cases, int32_t a, double info) const {
    const size_t nv = d.values[static_cast<size_t>(a)].size();
    std::vector<std::vector<double>> counts(nv, std::vector<double>(d.classes.size(), 0.0));
    std::vector<double> sizes(nv, 0.0);
    for (int32_t i : cases) {
      const size_t v = static_cast<size_t>(d.at(static_cast<size_t>(i), static_cast<size_t>(a)));
      counts[v][static_cast<size_t>(d.y[static_cast<size_t>(i)])] += 1;
      sizes[v] += 1;
    }
    Test t;
    t.attribute = a;
    const double n = static_cast<double>(cases.size());
    int big = 0;
    double rest = 0;
    for (size_t v = 0; v < nv; ++v) {
      big += sizes[v] >= opt.min_objs;
      rest += sizes[v] / n * entropy(counts[v]);
    }
    if (big < 2) return t;
    t.gain = info - rest;
    const double si = split_info(sizes, n);
    t.ratio = si > kEpsilon ? t.gain / si : 0;
    t.usable = t.gain > 0;
    return t;
  }

  int32_t grow(const std::vector<int32_t> &cases) {
    const int32_t id = static_cast<int32_t>(tree.nodes.size());
    tree.nodes.emplace_back();
    Node node;
    node.counts = class_counts(d, cases);
    node.label = majority(node.counts);
    const double n = static_cast<double>(cases.size());
    const bool pure = node.counts[static_cast<size_t>(node.label)] == n;
    if (pure || n < 2 * opt.min_objs) {
      tree.nodes[static_cast<size_t>(id)] = std::move(node);
      return id;
    }
    const double info = entropy(node.counts);
    std::vector<Test> tests;
    for (int32_t a = 0; a < static_cast<int32_t>(d.attributes.size()); ++a)
      tests.push_back(d.nominal[static_cast<size_t>(a)] ? nominal(cases, a, info) : continuous(cases, a, info));
    // Gain ratio among the tests whose gain is at least the average gain.
    double sum = 0;
    int usable = 0;
    for (const auto &t : tests)
      if (t.usable) sum += t.gain, ++usable;
    const Test *best = nullptr;
    if (usable) {
      const double average = sum / usable;
      for (const auto &t : tests)
        if (t.usable && t.gain >= average - 1e-9 && (!best || t.ratio > best->ratio + 1e-12)) best = &t;
    }
    if (!best || best->ratio <= 0) {
      tree.nodes[static_cast<size_t>(id)] = std::move(node);
      return id;
    }
    node.attribute = best->attribute;
    node.continuous = !d.nominal[static_cast<size_t>(best->attribute)];
    node.threshold = best->threshold;
    std::vector<std::vector<int32_t>> parts;
    if (d.nominal[static_cast<size_t>(best->attribute)]) {
      parts.resize(d.values[static_cast<size_t>(best->attribute)].size());
      for (int32_t i : cases)
        parts[static_cast<size_t>(d.at(static_cast<size_t>(i), static_cast<size_t>(best->attribute)))].push_back(i);
    } else {
      parts.resize(2);
      for (int32_t i : cases)
        parts[d.at(static_cast<size_t>(i), static_cast<size_t>(best->attribute)) <= best->threshold ? 0 : 1].push_back(
            i);
    }
    for (const auto &part : parts) {
      int32_t child;
      if (part.empty()) {  // an empty branch is a leaf of the parent's majority
        child = static_cast<int32_t>(tree.nodes.size());
        Node leaf;
        leaf.counts.assign(d.classes.size(), 0.0);
        leaf.label = node.label;
        tree.nodes.push_back(std::move(leaf));
      } else {
        child = grow(part);
      }
      node.children.push_back(child);
    }
    tree.nodes[static_cast<size_t>(id)] = std::move(node);
    return id;
  }

  int32_t route(int32_t n, int32_t i) const {
    const Node &node = tree.nodes[static_cast<size_t>(n)];
    const double v = d.at(static_cast<size_t>(i), static_cast<size_t>(node.attribute));
    return node.continuous ? node.children[v <= node.threshold ? 0 : 1] : node.children[static_cast<size_t>(v)];
  }

  // Predicted errors of the subtree at `n` on `cases`.
  double estimate(int32_t n, const std::vector<int32_t> &cases) const {
    const Node &node = tree.nodes[static_cast<size_t>(n)];
    if (node.attribute < 0) {
      double e = 0;
      for (int32_t i : cases) e += d.y[static_cast<size_t>(i)] != node.label;
      const double N = static_cast<double>(cases.size());
      return N > 0 ? e + add_errors(N, e, opt.cf) : 0;
    }
    std::vector<std::vector<int32_t>> parts(node.children.size());
    for (int32_t i : cases) {
      const int32_t c = route(n, i);
      const auto it = std::find(node.children.begin(), node.children.end(), c);
      parts[static_cast<size_t>(it - node.children.begin())].push_back(i);
    }
    double e = 0;
    for (size_t k = 0; k < parts.size(); ++k) e += estimate(node.children[k], parts[k]);
    return e;
  }

  // Bottom-up pruning of the subtree at `n` with the cases reaching it.
  void prune(int32_t n, const std::vector<int32_t> &cases) {
    Node &node = tree.nodes[static_cast<size_t>(n)];
    if (node.attribute < 0) return;
    {
      std::vector<std::vector<int32_t>> parts(node.children.size());
      for (int32_t i : cases) {
        const int32_t c = route(n, i);
        const auto it = std::find(node.children.begin(), node.children.end(), c);
        parts[static_cast<size_t>(it - node.children.begin())].push_back(i);
      }
      for (size_t k = 0; k < parts.size(); ++k) prune(tree.nodes[static_cast<size_t>(n)].children[k], parts[k]);
    }
    Node &self = tree.nodes[static_cast<size_t>(n)];
    const double N = static_cast<double>(cases.size());
    const auto counts = class_counts(d, cases);
    const int32_t label = N > 0 ? majority(counts) : self.label;
    const double leaf_errors = N - (N > 0 ? counts[static_cast<size_t>(label)] : 0);
    const double leaf_estimate = N > 0 ? leaf_errors + add_errors(N, leaf_errors, opt.cf) : 0;
    const double tree_estimate = estimate(n, cases);
    // The largest branch, on all of this node's cases.
    int32_t largest = -1;
    double most = -1;
    for (int32_t c : self.children) {
      double size = 0;
      for (double x : tree.nodes[static_cast<size_t>(c)].counts) size += x;
      if (size > most) most = size, largest = c;
    }
    const double branch_estimate = largest >= 0 ? estimate(largest, cases) : 1e300;
    if (leaf_estimate <= tree_estimate + 0.1 && leaf_estimate <= branch_estimate + 0.1) {
      self.attribute = -1;
      self.children.clear();
      self.label = label;
      self.counts = counts;
    } else if (branch_estimate <= tree_estimate + 0.1) {
      // Subtree raising: the largest branch takes the node's place, then is pruned again.
      Node raised = tree.nodes[static_cast<size_t>(largest)];
      tree.nodes[static_cast<size_t>(n)] = raised;
      tree.nodes[static_cast<size_t>(n)].counts = counts;
      prune(n, cases);
    }
  }
};

// The normal deviates C4.5 Release 8 interpolates from.
constexpr double kVal[] = {0, 0.001, 0.005, 0.01, 0.05, 0.10, 0.20, 0.40, 1.00};
constexpr double kDev[] = {4.0, 3.09, 2.58, 2.33, 1.65, 1.28, 0.84, 0.25, 0.00};

}  // namespace

double entropy(const std::vector<double> &counts) {
  double n = 0, h = 0;
  for (double c : counts) n += c;
  if (n <= 0) return 0;
  for (double c : counts)
    if (c > 0) h -= c / n * std::log2(c / n);
  return h;
}

double deviate(double cf) {
  int i = 0;
  while (i < 8 && cf > kVal[i]) ++i;
  if (i == 0) return kDev[0];
  return kDev[i - 1] + (kDev[i] - kDev[i - 1]) * (cf - kVal[i - 1]) / (kVal[i] - kVal[i - 1]);
}

double add_errors(double n, double e, double cf) {
  if (e < 1e-6) return n * (1 - std::exp(std::log(cf) / n));
  if (e < 0.9999) {
    const double v0 = n * (1 - std::exp(std::log(cf) / n));
    return v0 + e * (add_errors(n, 1.0, cf) - v0);
  }
  if (e + 0.5 >= n) return 0.67 * (n - e);
  const double z = deviate(cf), z2 = z * z;
  const double pr = (e + 0.5 + z2 / 2 + std::sqrt(z2 * ((e + 0.5) * (1 - (e + 0.5) / n) + z2 / 4))) / (n + z2);
  return n * pr - e;
}

Tree train(const Dataset &d, const Options &opt) {
  Builder b{d, opt, {}, {}};
  b.tree.cf = opt.cf;
  b.sorted_values.resize(d.attributes.size());
  for (size_t a = 0; a < d.attributes.size(); ++a) {
    if (d.nominal[a]) continue;
    auto &v = b.sorted_values[a];
    for (size_t c = 0; c < d.cases(); ++c) v.push_back(d.at(c, a));
    std::sort(v.begin(), v.end());
  }
  std::vector<int32_t> all(d.cases());
  std::iota(all.begin(), all.end(), 0);
  if (all.empty()) {
    b.tree.nodes.emplace_back();
    b.tree.nodes.back().counts.assign(d.classes.size(), 0.0);
    return b.tree;
  }
  b.grow(all);
  if (opt.prune) b.prune(0, all);
  // Drop nodes no longer reachable (pruned away), keeping ids dense.
  std::vector<int32_t> remap(b.tree.nodes.size(), -1);
  std::vector<Node> kept;
  std::vector<int32_t> stack = {0};
  std::vector<int32_t> order;
  while (!stack.empty()) {
    const int32_t n = stack.back();
    stack.pop_back();
    remap[static_cast<size_t>(n)] = static_cast<int32_t>(order.size());
    order.push_back(n);
    const auto &ch = b.tree.nodes[static_cast<size_t>(n)].children;
    for (auto it = ch.rbegin(); it != ch.rend(); ++it) stack.push_back(*it);
  }
  for (int32_t n : order) {
    Node node = b.tree.nodes[static_cast<size_t>(n)];
    for (auto &c : node.children) c = remap[static_cast<size_t>(c)];
    kept.push_back(std::move(node));
  }
  b.tree.nodes = std::move(kept);
  return b.tree;
}

int32_t Tree::classify(const double *x, double *confidence) const {
  int32_t n = 0;
  while (nodes[static_cast<size_t>(n)].attribute >= 0) {
    const Node &node = nodes[static_cast<size_t>(n)];
    const double v = x[node.attribute];
    n = node.continuous ? node.children[v <= node.threshold ? 0 : 1]
                        : node.children[static_cast<size_t>(
                              std::clamp<double>(v, 0, static_cast<double>(node.children.size() - 1)))];
  }
  const Node &leaf = nodes[static_cast<size_t>(n)];
  if (confidence) {
    double N = 0;
    for (double c : leaf.counts) N += c;
    const double e = N - (N > 0 ? leaf.counts[static_cast<size_t>(leaf.label)] : 0);
    *confidence = N > 0 ? 1 - (e + add_errors(N, e, cf)) / N : 0;
  }
  return leaf.label;
}

int32_t Tree::depth() const {
  std::vector<int32_t> d(nodes.size(), 0);
  int32_t top = 0;
  for (size_t n = 0; n < nodes.size(); ++n)
    for (int32_t c : nodes[n].children) {
      d[static_cast<size_t>(c)] = d[n] + 1;
      top = std::max(top, d[static_cast<size_t>(c)]);
    }
  return top;
}

int32_t Tree::leaves() const {
  int32_t k = 0;
  for (const auto &n : nodes) k += n.attribute < 0;
  return k;
}

}  // namespace perfsift::kernels::c45
