// The direct kernel of cumsum (direct_kernels.h): a contiguous float32 or
// float64 tensor summed in its own dtype runs axon's kernel
// (cumulative_sum_rows.h), the CPU's values bit for bit; every other call
// (other dtypes, a dtype to sum in, strided tensors) goes to the
// generic kernel, which gives the CPU's results, warnings and errors.
#pragma once

#include <ATen/core/Tensor.h>

#include <optional>

namespace axon {

at::Tensor direct_cumsum(const at::Tensor& self, int64_t dim, std::optional<at::ScalarType> dtype);

}  // namespace axon
