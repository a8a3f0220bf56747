// Axon's kernel for the variance of float32 data along one dimension (var,
// std, var_mean and std_mean over a single dim; direct_variance.h decides
// which calls come here).
//
// Why a kernel of its own: the CPU reduces along a dimension with Welford's
// update, one element at a time in double precision, about 1.6 GB/s on the
// hosts measured (1.2-1.3 ms for 512x1024 floats, 80x its own mean's time);
// its whole-tensor variance already takes two vectorized passes, at 10 GB/s.
// This kernel takes two passes along the dimension too (the mean, then the
// squared deviations from it), each summed in double precision in vector
// lanes, so the result is as accurate as the CPU's (both carry double
// precision into the float rounding; they differ in the last bit of a float
// rarely) at about the speed of the mean.
#pragma once

#include <cstdint>

namespace axon {

// Contiguous data viewed as [outer, extent, inner], reduced along `extent`.
struct VarianceShape {
  int64_t outer = 1;
  int64_t extent = 1;
  int64_t inner = 1;
};

// Writes outer*inner results (row-major [outer, inner]) to `variance` (the
// square root when `take_sqrt`) and, when `mean` is not null, the means. The
// divisor is extent - correction, which the caller keeps above 0. Splits
// the work with at::parallel_for: call it on the device's worker.
void variance_rows(const float* data, const VarianceShape& shape, double correction, bool take_sqrt, float* variance,
                   float* mean);

}  // namespace axon
