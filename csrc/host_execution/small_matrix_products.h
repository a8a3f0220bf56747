// Float matrix products small enough to compute on the calling thread
// (inline_kernels.h), equal to the CPU's mm bit for bit, shape by shape.
//
// Why: a 4×4 mm queued on the device costs the caller more than the CPU's
// whole call. PyTorch's CPU mm reaches MKL's sgemm through a function it does
// not export, so axon cannot call the same code. MKL's small kernels sum each
// element's products in order of k, but how they round depends on the host:
// measured on an Intel host, the first product then one fused multiply-add per
// later term; on an AMD host (MKL's generic path there), a product rounded and
// then added, starting from +0. Not for every shape either: where one side is
// a vector (1×256 by 256×4, say), MKL splits the sum over several
// accumulators. So each shape is proven before use: the first call of a shape
// runs the CPU's mm and each summation below on probe matrices (signed zeros,
// infinities, NaNs, large and small magnitudes, operands off their usual
// alignment), and a shape is computed here only in a summation whose every
// element matched; other shapes are queued to the CPU's own kernel.
#pragma once

#include <cstdint>
#include <optional>

namespace axon {

// The largest shapes taken: m·n results and k terms each (larger products
// are worth handing to the device, which computes in parallel with the caller).
constexpr int64_t kSmallProductResultsMax = 1024;
constexpr int64_t kSmallProductTermsMax = 512;

// How each result element sums its k products, in order of k.
enum class ProductSummation {
  kFusedAfterFirstProduct,  // the first product, then fma(a, b, sum) per later term
  kRoundedFromZero,         // +0, then sum + a·b, the product rounded before the add
};

// The summation proven to give the CPU's bits for an (m×k)·(k×n) product of
// contiguous row-major float matrices, or none (proving it now, on the first
// call of the shape; a bounded number of shapes is remembered).
std::optional<ProductSummation> proven_product_summation(int64_t m, int64_t k, int64_t n);

// c (m×n) = a (m×k) · b (k×n), all contiguous row-major; no size limit.
void small_matrix_product(ProductSummation summation, const float* a, const float* b, float* c, int64_t m, int64_t k,
                          int64_t n);

}  // namespace axon
