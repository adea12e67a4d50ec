// Typed products: what a stage hands to the stages after it. A product type names itself
// (`static constexpr std::string_view kProduct`), a stage declares the products it
// requires, uses when present and provides (StageInfo), the set-up check proves every
// requirement is met before any work, and later stages fetch a product by its type.
// Shared products no stage provides (the matched run, the matched messages) have a
// builder that the pipeline runs collectively at a stage boundary (ProductBuilder).
#pragma once

#include <algorithm>
#include <concepts>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <typeindex>
#include <vector>

#include "pipeline/engine/check.h"

namespace perfsift::pipeline {

template <class T>
concept Product = requires {
  { T::kProduct } -> std::convertible_to<std::string_view>;
};

template <Product T>
constexpr std::string_view product_name() {
  return T::kProduct;
}

// The figures of a run that decide whether a stage reads a product made on request.
struct RunShape {
  int64_t events = 0;
  int64_t threaded_ranks = 0;  // ranks calling MPI from several threads
};

// A stage's request for a product an earlier stage makes only when asked (the baseline
// replay's state): on which runs it reads it. The plan hands each request to the step
// that provides the product (PlanStep::requests), from the requesting stage's
// configuration (StageInfo::requests); the providing stage asks Products::requested.
struct ProductRequest {
  std::string_view product;
  std::function<bool(const RunShape &)> reads_on;
};

class Products {
 public:
  // Publishes (or replaces) the product of type T; returns the stored value.
  template <Product T>
  T &publish(T value) {
    auto p = std::make_shared<T>(std::move(value));
    m_items[std::type_index(typeid(T))] = p;
    m_names[std::type_index(typeid(T))] = T::kProduct;
    return *p;
  }
  // Drops the product named `name` (its memory goes once no stage's result shares it).
  void release(std::string_view name) {
    for (auto it = m_names.begin(); it != m_names.end(); ++it)
      if (it->second == name) {
        m_items.erase(it->first);
        m_names.erase(it);
        return;
      }
  }
  // The product, or null when no stage published it.
  template <Product T>
  T *find() const {
    const auto it = m_items.find(std::type_index(typeid(T)));
    return it == m_items.end() ? nullptr : static_cast<T *>(it->second.get());
  }
  // A required product: the set-up check guaranteed it, so its absence is a bug.
  template <Product T>
  T &get() const {
    T *p = find<T>();
    PERFSIFT_CHECK(p, "the product '" + std::string(T::kProduct) + "' was required but never published");
    return *p;
  }
  // The product moved out and dropped (null when none was published): for the one user
  // of a product (a builder's by-product), which then holds its memory alone.
  template <Product T>
  std::unique_ptr<T> take() {
    T *p = find<T>();
    if (!p) return nullptr;
    auto out = std::make_unique<T>(std::move(*p));
    release(T::kProduct);
    return out;
  }
  // Set before each step of the plan runs: what later steps ask it for (PlanStep::requests).
  void set_requests(std::vector<ProductRequest> requests) { m_requests = std::move(requests); }
  // Whether a later step reads product T, which the running step makes only on request,
  // on a run of this shape.
  template <Product T>
  bool requested(const RunShape &run) const {
    return std::any_of(m_requests.begin(), m_requests.end(),
                       [&](const ProductRequest &r) { return r.product == T::kProduct && r.reads_on(run); });
  }
  // A product several stages add to (the bottlenecks): published empty on first use.
  template <Product T>
  T &get_or_publish() {
    if (T *p = find<T>()) return *p;
    return publish(T{});
  }

 private:
  std::map<std::type_index, std::shared_ptr<void>> m_items;
  std::map<std::type_index, std::string_view> m_names;
  std::vector<ProductRequest> m_requests;
};

// ---- small products of the AutoAnalyzer stages (no folder of their own)

// dissimilarity: the cluster (its pivot rank) of each owned rank, -1 when not clustered.
struct RankClusters {
  static constexpr std::string_view kProduct = "rank clusters";
  std::vector<int64_t> cluster_of_owned;
};

// disparity: per region, severity 0..4 and whether it is a critical code region (CCR).
struct RegionSeverity {
  static constexpr std::string_view kProduct = "region severities";
  std::vector<int> severity;
  std::vector<uint8_t> ccr;
};

}  // namespace perfsift::pipeline
