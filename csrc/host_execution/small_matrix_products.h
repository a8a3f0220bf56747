// Float matrix products small enough to compute on the calling thread
// (inline_kernels.h), equal to the CPU's mm bit for bit, shape by shape.
//
// Why: a 4×4 mm queued on the device costs the caller more than the CPU's
// whole call. PyTorch's CPU mm reaches MKL's sgemm through a function it does
// not export, so axon cannot call the same code. Measured on this host, MKL's
// small products compute each element as its first product, then one fused
// multiply-add per later term in order of k (the loop here). Not for every
// shape: where one side is a vector (1×256 by 256×4, say), MKL splits the sum
// over several accumulators. So each shape is proven before use: the first
// call of a shape runs the CPU's mm and the loop on probe matrices (signed
// zeros, infinities, NaNs, large and small magnitudes, operands off their
// usual alignment), and only a shape whose every element matched is computed
// here; the rest are queued to the CPU's own kernel.
#pragma once

#include <cstdint>

namespace axon {

// The largest shapes taken: m·n results and k terms each (larger products
// are worth handing to the device, which computes in parallel with the caller).
constexpr int64_t kSmallProductResultsMax = 1024;
constexpr int64_t kSmallProductTermsMax = 512;

// Whether an (m×k)·(k×n) product of contiguous row-major float matrices is
// proven to give the CPU's bits (proving it now, on the first call of the
// shape; a bounded number of shapes is remembered).
bool small_matrix_product_proven(int64_t m, int64_t k, int64_t n);

// c (m×n) = a (m×k) · b (k×n), all contiguous row-major; no size limit.
void small_matrix_product(const float* a, const float* b, float* c, int64_t m, int64_t k, int64_t n);

}  // namespace axon
