// How wide the CPU's vectorized ATen kernels compute on this host, for axon
// kernels that must round exactly as they do (batch_norm_statistics.h,
// batch_norm_gradients.h).
#pragma once

namespace axon {

// The float lanes of the vectors ATen's CPU kernels run with here: ATen builds
// each kernel for AVX-512 (16), AVX2 (8) and a baseline (0 here), and picks one
// when it loads (at::get_cpu_capability, which ATEN_CPU_CAPABILITY can lower).
int cpu_kernel_float_lanes();

// Whether those kernels fuse their multiply-adds: the vectorized builds do
// (their FMA intrinsics), the baseline does not.
inline bool cpu_kernels_fuse_multiply_adds() { return cpu_kernel_float_lanes() > 0; }

}  // namespace axon
