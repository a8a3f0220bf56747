// The direct kernels of gather, scatter_add and scatter_add_ (direct_kernels.h):
// calls on contiguous operands whose sizes agree outside `dim` run axon's
// own kernels (scatter_gather_rows.h), which equal the CPU's bit for bit
// and read the index row by row; every other call goes to the generic
// kernel, and so do calls the CPU would refuse, which then raise its errors
// at the call. An index out of bounds raises the CPU's error at the next
// synchronizing call, as the generic kernel's run-time checks do.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>

namespace axon {

at::Tensor direct_gather(const at::Tensor& self, int64_t dim, const at::Tensor& index, bool sparse_grad);

at::Tensor direct_scatter_add(const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& src);

at::Tensor& direct_scatter_add_(at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& src);

}  // namespace axon
