// Which host library computes a float matrix product.
//
// ATen's CPU kernels compute float matrix products with MKL's sgemm. On
// x86 hosts with AVX-512, oneDNN's matmul (which PyTorch links as well, for
// its reduced-precision products) is faster once a product is large enough:
// 1.1-1.6x at a GPT's and an MLP's layer shapes on the 2-core AMD EPYC of
// docs/benchmarks.md, slower below about 8M multiply-adds, where its fixed
// cost per call dominates. Axon's mm and addmm and their out= forms
// (direct_kernels.cpp) send the products above that size here.
//
// What changes for a user: such products equal the CPU's within float
// rounding, not bit for bit. oneDNN sums each result's k terms in one pass
// (MKL's error is that of blocks of 128 terms), so its rounding error is
// 1.4-2.2x MKL's (RMS against float64, docs/benchmarks.md), within the bound of any
// float32 summation order. Every call checks sizes, layouts, dtype and
// torch.backends.mkldnn.enabled; whether a shape may use one of the
// process's 32 oneDNN shapes is decided at its first call. So repeated
// calls under the same settings give identical results. Products smaller
// than the bound (all of PyTorch's OpInfo samples) stay the CPU's bit for bit.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>

#include "host_execution/stream_launch.h"

namespace axon {

// Whether the product mat1 @ mat2 (2-D float operands, contiguous or
// transposed-contiguous, at least 2 rows and 16 columns), plus a result's
// values where `accumulate`, goes to oneDNN: decided at the call, from sizes,
// strides and settings the calling thread sees, and for at most 32 distinct
// products per process (host memory; matrix_products.cpp). Callers ask last,
// once every other condition of theirs holds.
bool onednn_takes_product(const at::Tensor& mat1, const at::Tensor& mat2, bool accumulate);

// On the worker, over host aliases: result = mat1 @ mat2, plus result's
// current values where `accumulate` (an addmm's bias, copied there first).
// Only for operands onednn_takes_product accepted.
void onednn_product(const at::Tensor& result, const at::Tensor& mat1, const at::Tensor& mat2, bool accumulate);

// What a float product of `batch` (m×k)·(k×n) matrices asks of the worker's
// OpenMP team (launch_on_stream's TeamUse).
//  - kForResults for a single product of kSplitSumsFromElements terms and
//    more: MKL splits such a sum over k among its threads, so only the CPU's
//    thread count gives the CPU's values (batched products are split by
//    matrix, and are the same on any count).
//  - kForWork from 8 rows and columns and half a million multiply-adds:
//    below 1 MiB of operands a kernel runs on one thread, but a product's
//    work grows with m·k·n, not its bytes: MKL on two threads took 53 µs for
//    a 16×256 by 256×768 product against 80 µs on one, and 0.7-0.8× one
//    thread's time from there up (a recurrent network's step products,
//    docs/benchmarks.md, stop 55); below 8 rows or columns (matrix-vector
//    products) two threads are slower.
TeamUse product_team_use(int64_t batch, int64_t m, int64_t k, int64_t n);

// The multiply-adds from which a product runs with the team (and attention,
// whose blocks are products: direct_attention.cpp).
constexpr double kTeamMinimumMultiplyAdds = 512.0 * 1024.0;

// False: every product takes ATen's CPU kernel, for comparisons (tests,
// benchmarks).
void set_onednn_products_enabled(bool enabled);

// Products oneDNN computed so far, in this process; for tests.
int64_t onednn_product_runs();

// Forgets which products went to oneDNN, so that the next 32 distinct ones
// do (oneDNN's own caches keep theirs); for tests.
void forget_onednn_product_shapes();

}  // namespace axon
