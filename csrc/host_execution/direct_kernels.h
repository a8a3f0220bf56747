// Unboxed axon kernels for the operators small models call most often.
//
// The generic kernel (stream_kernel.h) serves every operator through the
// boxed calling convention: the dispatcher packs the arguments into a stack,
// the kernel looks up the operator's plan and the call shape's cached meta
// result, and describes every argument by walking IValues. For a tiny
// operator that bookkeeping costs more than the CPU's whole call
// (docs/benchmarks.md). The kernels here take their arguments unboxed and
// serve the common cases whose result needs no meta kernel: operands on one
// axon device in memory the host can address, equal sizes, one dtype,
// contiguous layouts (so the result's layout is the CPU's: contiguous).
// They allocate the result and queue the CPU kernel itself (at::cpu::*) on
// the current stream over aliases the worker makes (DeferredAliases);
// pooling, nearest resizing, gather and scatter_add (direct_pooling.h,
// direct_upsampling.h, direct_scatter_gather.h) queue axon's own kernels
// instead, faster than the CPU's and equal to them bit for bit; the CPU's flash attention operators queue axon's
// block kernels (direct_attention.h), faster at short sequences and equal
// to them within float rounding; float matrix products (mm, and addmm as
// nn.Linear calls it) from 8M multiply-adds up queue oneDNN's matmul
// (matrix_products.h), faster than the CPU's MKL here and equal to it within
// float rounding. Tiny elementwise calls on an idle device are computed
// at once on the calling thread instead (inline_kernels.h); the in-place
// arithmetic kernels (add_, sub_, mul_, div_) take only that case, with a
// Python number.
// Every other call (broadcasting, mixed dtypes, strided layouts, private
// device memory, compiled eager kernels, calls the CPU refuses) goes to the
// generic kernel unchanged, so errors and results stay the generic kernel's.
#pragma once

#include <torch/library.h>

#include <cstdint>
#include <string_view>

namespace axon {

// Registers the direct kernels on the PrivateUse1 library of aten.
void register_direct_kernels(torch::Library& library);

// Whether `name` (e.g. "add.Tensor") has a direct kernel, so that the
// generic registration leaves it alone.
bool has_direct_kernel(std::string_view name);

// How many calls so far the direct kernels took themselves, queued or run
// inline (the rest went to the generic kernel); for tests.
int64_t direct_kernel_launches();

}  // namespace axon
