#include "host_execution/small_matrix_products.h"

#include <ATen/ATen.h>
#include <ATen/ops/mm_cpu_dispatch.h>
#include <c10/core/InferenceMode.h>

#include <cmath>
#include <cstring>
#include <mutex>
#include <unordered_map>

#include "host_execution/one_host_thread.h"

namespace axon {
namespace {

// Shapes remembered at most; later shapes are not proven (they queue).
constexpr std::size_t kShapesRemembered = 4096;

// The fused summation, with the fused multiply-add as one instruction where
// the host has it (std::fma is exact everywhere, but a library call).
template <class FusedMultiplyAdd>
inline void fused_product_loop(const float* a, const float* b, float* c, int64_t m, int64_t k, int64_t n,
                               FusedMultiplyAdd fma) {
  for (int64_t i = 0; i < m; ++i) {
    const float* row = a + i * k;
    for (int64_t j = 0; j < n; ++j) {
      float sum = row[0] * b[j];
      for (int64_t p = 1; p < k; ++p) sum = fma(row[p], b[p * n + j], sum);
      c[i * n + j] = sum;
    }
  }
}

__attribute__((target("fma"))) void fused_with_fma_instructions(const float* a, const float* b, float* c, int64_t m,
                                                                int64_t k, int64_t n) {
  fused_product_loop(a, b, c, m, k, n, [](float x, float y, float z) { return __builtin_fmaf(x, y, z); });
}

void fused_with_library_fma(const float* a, const float* b, float* c, int64_t m, int64_t k, int64_t n) {
  fused_product_loop(a, b, c, m, k, n, [](float x, float y, float z) { return std::fma(x, y, z); });
}

// This file is compiled with -ffp-contract=off, so the compiler keeps the
// product's rounding here instead of fusing it into the add.
void rounded_from_zero(const float* a, const float* b, float* c, int64_t m, int64_t k, int64_t n) {
  for (int64_t i = 0; i < m; ++i) {
    const float* row = a + i * k;
    for (int64_t j = 0; j < n; ++j) {
      float sum = 0.0f;
      for (int64_t p = 0; p < k; ++p) sum = sum + row[p] * b[p * n + j];
      c[i * n + j] = sum;
    }
  }
}

constexpr ProductSummation kSummations[] = {ProductSummation::kFusedAfterFirstProduct,
                                            ProductSummation::kRoundedFromZero};

// Deterministic probe values: a spread of magnitudes and signs, with zeros of
// both signs, infinities and NaNs where `awkward` asks for them.
void fill_probe(float* values, int64_t count, uint32_t seed, bool awkward, float scale) {
  uint32_t state = seed * 2654435761u + 1;
  for (int64_t i = 0; i < count; ++i) {
    state = state * 1664525u + 1013904223u;
    const float unit = static_cast<float>(state >> 8) / static_cast<float>(1u << 24);  // [0, 1)
    float value = (unit * 4.0f - 2.0f) * scale;
    if (awkward) {
      switch (state % 11) {
        case 0:
          value = 0.0f;
          break;
        case 1:
          value = -0.0f;
          break;
        case 2:
          value = state % 2 ? INFINITY : -INFINITY;
          break;
        case 3:
          value = (state >> 3) % 5 == 0 ? NAN : value;
          break;
        default:
          break;
      }
    }
    values[i] = value;
  }
}

bool same_bits(const float* left, const float* right, int64_t count) {
  for (int64_t i = 0; i < count; ++i) {
    if (std::memcmp(&left[i], &right[i], sizeof(float)) != 0 && !(std::isnan(left[i]) && std::isnan(right[i]))) {
      return false;
    }
  }
  return true;
}

bool same_as_cpu(ProductSummation summation, int64_t m, int64_t k, int64_t n) {
  // Probe tensors are plain CPU temporaries, on one thread (one_host_thread.h:
  // a parallel region here would give the dispatching thread an OpenMP team).
  c10::InferenceMode inference;
  const OneHostThreadScope one_thread;
  const auto options = at::TensorOptions().dtype(at::kFloat);
  struct Probe {
    bool awkward;
    float a_scale, b_scale;
    int64_t offset;  // elements before each operand in its buffer: alignment other than the allocator's
  };
  constexpr Probe kProbes[] = {{false, 1.0f, 1.0f, 0}, {true, 1.0f, 1.0f, 0},      {false, 1e30f, 1e-30f, 1},
                               {true, 3.0f, 0.5f, 3},  {false, 1e-20f, 1e-20f, 0}, {true, 1.0f, 1.0f, 5}};
  uint32_t seed = 1;
  for (const Probe& probe : kProbes) {
    at::Tensor a_buffer = at::empty({probe.offset + m * k}, options);
    at::Tensor b_buffer = at::empty({probe.offset + k * n}, options);
    fill_probe(a_buffer.mutable_data_ptr<float>(), a_buffer.numel(), seed++, probe.awkward, probe.a_scale);
    fill_probe(b_buffer.mutable_data_ptr<float>(), b_buffer.numel(), seed++, probe.awkward, probe.b_scale);
    const at::Tensor a = a_buffer.narrow(0, probe.offset, m * k).view({m, k});
    const at::Tensor b = b_buffer.narrow(0, probe.offset, k * n).view({k, n});
    const at::Tensor expected = at::cpu::mm(a, b);
    at::Tensor looped = at::empty({m, n}, options);
    small_matrix_product(summation, a.const_data_ptr<float>(), b.const_data_ptr<float>(),
                         looped.mutable_data_ptr<float>(), m, k, n);
    if (!expected.is_contiguous() ||
        !same_bits(expected.const_data_ptr<float>(), looped.const_data_ptr<float>(), m * n)) {
      return false;
    }
  }
  return true;
}

std::optional<ProductSummation> prove(int64_t m, int64_t k, int64_t n) {
  for (const ProductSummation summation : kSummations) {
    if (same_as_cpu(summation, m, k, n)) return summation;
  }
  return std::nullopt;
}

}  // namespace

std::optional<ProductSummation> proven_product_summation(int64_t m, int64_t k, int64_t n) {
  if (m < 1 || n < 1 || k < 1 || m * n > kSmallProductResultsMax || k > kSmallProductTermsMax) return std::nullopt;
  static std::mutex mutex;
  static std::unordered_map<int64_t, std::optional<ProductSummation>> verdicts;
  const int64_t key = (m * (kSmallProductResultsMax + 1) + n) * (kSmallProductTermsMax + 1) + k;
  const std::lock_guard<std::mutex> lock(mutex);
  const auto found = verdicts.find(key);
  if (found != verdicts.end()) return found->second;
  if (verdicts.size() >= kShapesRemembered) return std::nullopt;
  const std::optional<ProductSummation> proven = prove(m, k, n);
  verdicts.emplace(key, proven);
  return proven;
}

void small_matrix_product(ProductSummation summation, const float* a, const float* b, float* c, int64_t m, int64_t k,
                          int64_t n) {
  if (summation == ProductSummation::kRoundedFromZero) {
    rounded_from_zero(a, b, c, m, k, n);
    return;
  }
  static const bool has_fma = __builtin_cpu_supports("fma");
  if (has_fma) {
    fused_with_fma_instructions(a, b, c, m, k, n);
  } else {
    fused_with_library_fma(a, b, c, m, k, n);
  }
}

}  // namespace axon
