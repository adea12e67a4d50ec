// Typed products: what a stage hands to the stages after it. A product type names itself
// (`static constexpr std::string_view kProduct`), a stage declares the products it
// requires, uses when present and provides (StageInfo), the set-up check proves every
// requirement is met before any work, and later stages fetch a product by its type.
// Shared products no stage provides (the matched run, the matched messages) have a
// builder that the pipeline runs collectively at a stage boundary (ProductBuilder).
#pragma once

#include <concepts>
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
  // A product several stages add to (the bottlenecks): published empty on first use.
  template <Product T>
  T &get_or_publish() {
    if (T *p = find<T>()) return *p;
    return publish(T{});
  }

 private:
  std::map<std::type_index, std::shared_ptr<void>> m_items;
  std::map<std::type_index, std::string_view> m_names;
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
