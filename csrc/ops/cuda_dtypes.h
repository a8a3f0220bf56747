// Operators for which CUDA accepts dtypes that the CPU kernel refuses.
//
// Accelerator code is written against CUDA: transformers' mixture-of-experts
// routing calls torch.histc on int32 expert ids on every device but the CPU
// and MPS, because CUDA's histc takes integers. Axon is an accelerator, so it
// accepts what CUDA accepts and returns CUDA's result; other dtypes run the
// generic kernel (the CPU's behaviour and errors).
#pragma once

#include <ATen/core/Tensor.h>

namespace axon {

// histc on integer inputs: counts per bin, in the input's dtype (as CUDA).
at::Tensor histc(const at::Tensor& self, int64_t bins, const at::Scalar& min, const at::Scalar& max);
at::Tensor& histc_out(const at::Tensor& self, int64_t bins, const at::Scalar& min, const at::Scalar& max,
                      at::Tensor& out);

}  // namespace axon
