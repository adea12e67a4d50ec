// C4.5 decision trees (Quinlan; Release 8 defaults), for Vetter's message classifier.
//
// Gain ratio among tests whose gain is at least the average; nominal attributes branch
// per value; continuous ones test A <= t, with Release 8's log2(candidates)/|S| penalty on
// the gain and t the largest training value not above the chosen midpoint. A node is a
// leaf when pure, when it holds fewer than 2 * min_objs cases, or when no test gives two
// branches of min_objs cases. Error-based pruning at confidence cf: the predicted errors
// of N cases with E errors are E + add_errors(N, E); a subtree becomes a leaf, or its
// largest branch (subtree raising), when that predicts no more errors (+0.1).
//
// Cost: O(attributes x cases log cases) per tree level; pruning re-routes each node's
// cases once per level.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace perfsift::kernels::c45 {

struct Dataset {
  std::vector<std::string> attributes;
  std::vector<uint8_t> nominal;                  // per attribute
  std::vector<std::vector<std::string>> values;  // nominal attributes: value names
  std::vector<std::string> classes;
  std::vector<double> x;   // [cases][attributes]; a nominal value is its index
  std::vector<int32_t> y;  // class per case
  size_t cases() const { return y.size(); }
  double at(size_t c, size_t a) const { return x[c * attributes.size() + a]; }
};

struct Node {
  int32_t attribute = -1;         // -1: a leaf
  bool continuous = false;        // a test A <= threshold (else one branch per value)
  double threshold = 0;           // continuous tests: left child takes A <= threshold
  std::vector<int32_t> children;  // nominal: one per value; continuous: {<=, >}
  std::vector<double> counts;     // training cases per class reaching the node
  int32_t label = 0;              // majority class
};

struct Options {
  double cf = 0.25;
  int32_t min_objs = 2;
  bool prune = true;
};

struct Tree {
  std::vector<Node> nodes;  // nodes[0] is the root
  double cf = 0.25;
  // The class of a case and its confidence: the leaf's pessimistic accuracy
  // 1 - (E + add_errors(N, E)) / N.
  int32_t classify(const double *x, double *confidence = nullptr) const;
  int32_t depth() const;
  int32_t leaves() const;
};

// Information in bits of a class distribution.
double entropy(const std::vector<double> &counts);
// The normal deviate C4.5 interpolates for a confidence factor (0.6925 at 0.25).
double deviate(double cf);
// Extra errors C4.5 predicts for N cases with E training errors.
double add_errors(double n, double e, double cf);

Tree train(const Dataset &d, const Options &opt = {});

}  // namespace perfsift::kernels::c45
