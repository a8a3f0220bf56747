// Operators for which CUDA accepts dtypes that the CPU kernel refuses.
//
// Accelerator code is written against CUDA: transformers' mixture-of-experts
// routing calls torch.histc on int32 expert ids on every device but the CPU
// and MPS, because CUDA's histc takes integers. Axon is an accelerator, so it
// accepts what CUDA accepts and returns CUDA's result; other dtypes run the
// generic kernel (the CPU's behaviour and errors).
//
// Most such gaps are narrow floating dtypes (float16, bfloat16, complex32)
// that CUDA computes in float32 anyway ("opmath"): axon does the same,
// widening those arguments, running the CPU kernel and narrowing the results
// to the dtypes the operator's meta kernel gives. OpInfo's dtypesIfCUDA
// minus its CPU dtypes lists them; tests/test_cuda_dtypes.py checks each.
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/core/boxing/BoxedKernel.h>
#include <ATen/core/dispatch/Dispatcher.h>

#include <string_view>

namespace axon {

// Whether calls of operator `name` ("acos", "acos_", "acos.out") with narrow
// dtypes are widened (then they go through widening_kernel).
bool widens_narrow_dtypes(std::string_view name);

// Boxed kernel for those operators: widens, runs the generic stream kernel,
// narrows; calls without narrow dtypes go straight to the generic kernel.
void widening_kernel(const c10::OperatorHandle& op, torch::jit::Stack* stack);

// The boxed kernel the generic registration gives operator `name`
// (registration.cpp): widening_kernel where narrow dtypes widen, else the
// generic stream kernel. The direct kernels fall back to the same.
c10::BoxedKernel generic_boxed_kernel(std::string_view name);

// nansum of complex inputs (CUDA's: a NaN in either part counts as zero).
at::Tensor nansum(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                  std::optional<at::ScalarType> dtype);
at::Tensor& nansum_out(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                       std::optional<at::ScalarType> dtype, at::Tensor& out);

// histc on integer inputs: counts per bin, in the input's dtype (as CUDA).
at::Tensor histc(const at::Tensor& self, int64_t bins, const at::Scalar& min, const at::Scalar& max);
at::Tensor& histc_out(const at::Tensor& self, int64_t bins, const at::Scalar& min, const at::Scalar& max,
                      at::Tensor& out);

}  // namespace axon
