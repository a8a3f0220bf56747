// Whether the host running kernels has AVX2, asked once per process: the
// hand-vectorized kernels (pooling_planes.cpp, nearest_planes.cpp) take
// their AVX2 paths only where it does, and their scalar twins elsewhere.
#pragma once

namespace axon {

inline bool host_has_avx2() {
#if defined(__x86_64__)
  static const bool avx2 = __builtin_cpu_supports("avx2");
  return avx2;
#else
  return false;
#endif
}

}  // namespace axon
