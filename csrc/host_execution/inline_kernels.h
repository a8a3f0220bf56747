// Elementwise kernels on tensors so small that queuing them costs more than
// computing them: the calling thread computes them in the device's place when
// the device has nothing unfinished (axon_stream_run_host_function_if_idle).
//
// Why: handing a launch to the device's worker costs the calling thread about
// 0.4–0.6 µs (the launch record, the driver's queue, and cache lines moving
// between the two cores), while adding two 16-element tensors takes a few
// nanoseconds. With the launch dropped, a tiny add costs the calling thread
// about what the CPU's whole call does (docs/benchmarks.md, 2026-12-05).
//
// Order is kept: the driver runs the kernel only while everything queued on
// the device has finished, and starts nothing queued meanwhile, so the kernel
// runs where a queued one would have, at once. A busy device, a recording
// profiler, memory the host cannot address, or a driver without the call gets
// the queued kernel as before.
//
// Values: the element loops are the ones proven on this machine to give the
// CPU kernel's bits (element_loop_proofs.h; an operator's proof, about 1–1.6
// ms, runs at its first inline call in a process); relu, fill and zero are
// exact by construction. Each function returns false, having done nothing,
// where it does not apply; the caller then queues the kernel.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Scalar.h>

#include <cstdint>

namespace axon {

// The most bytes each operand of an inline kernel may have. Why so few: the
// worker usually wrote the inputs and reads the result next, so an inline
// kernel moves its operands' cache lines between the cores twice. At 1,024
// floats that cost Hugging Face decoding 2% per token against queuing
// everything; at 64 it cost nothing measurable (docs/benchmarks.md).
constexpr int64_t kInlineOperandBytesMax = 256;

enum class InlineBinary { kAdd, kSub, kMul, kDiv };

// out = self `op` other (alpha times other for add and sub), where other is a
// tensor of self's dtype and sizes or, when `other` is null, `number` (alpha
// then 1). self, other and out are contiguous axon tensors of one device;
// out is fresh (overlaps neither).
bool inline_binary(InlineBinary op, const at::Tensor& out, const at::Tensor& self, const at::Tensor* other,
                   const c10::Scalar& number, const c10::Scalar& alpha);

// self `op` number, in place (mul_ and add_ with alpha 1, sub_, div_).
bool inline_binary_in_place(InlineBinary op, const at::Tensor& self, const c10::Scalar& number);

// out = relu(self), for contiguous float and double tensors.
bool inline_relu(const at::Tensor& out, const at::Tensor& self);

// Fills self, a non-overlapping axon tensor of a direct dtype, with `value`
// (zero_ is a fill with 0); the value was checked to fit the dtype.
bool inline_fill(const at::Tensor& self, const c10::Scalar& value);

// out = self · mat2 for float matrices in row-major layout, of a shape
// proven to give the CPU's bits (small_matrix_products.h); out is fresh.
bool inline_mm(const at::Tensor& out, const at::Tensor& self, const at::Tensor& mat2);

// Calls that ran inline so far; for tests.
int64_t inline_kernel_runs();

}  // namespace axon
