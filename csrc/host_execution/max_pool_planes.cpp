#include "host_execution/max_pool_planes.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <limits>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace axon {
namespace {

constexpr float kMinusInfinity = -std::numeric_limits<float>::infinity();

// The input rows one output row's windows cover: from `first` (the first
// window row inside the input) up to `end`, every dilation_h rows.
struct WindowRows {
  int64_t first, end;
};

WindowRows window_rows(const MaxPoolGeometry& g, int64_t out_row) {
  int64_t first = out_row * g.stride_h - g.pad_h;
  const int64_t end = std::min(first + (g.kernel_h - 1) * g.dilation_h + 1, g.height);
  while (first < 0) first += g.dilation_h;
  return {first, end};
}

// One output, exactly as the CPU's kernel computes it (also the fallback on
// hosts without AVX2, and the vector path's edges).
inline void pool_one(const float* plane, const MaxPoolGeometry& g, WindowRows rows, int64_t out_column, float* value,
                     int64_t* index) {
  int64_t first_column = out_column * g.stride_w - g.pad_w;
  const int64_t end_column = std::min(first_column + (g.kernel_w - 1) * g.dilation_w + 1, g.width);
  while (first_column < 0) first_column += g.dilation_w;
  int64_t best_index = rows.first * g.width + first_column;
  float best = kMinusInfinity;
  for (int64_t row = rows.first; row < rows.end; row += g.dilation_h) {
    for (int64_t column = first_column; column < end_column; column += g.dilation_w) {
      const int64_t at = row * g.width + column;
      const float candidate = plane[at];
      if (candidate > best || std::isnan(candidate)) {
        best = candidate;
        best_index = at;
      }
    }
  }
  *value = best;
  *index = best_index;
}

void pool_plane_scalar(const float* plane, float* output, int64_t* indices, const MaxPoolGeometry& g) {
  for (int64_t out_row = 0; out_row < g.out_height; ++out_row) {
    const WindowRows rows = window_rows(g, out_row);
    for (int64_t out_column = 0; out_column < g.out_width; ++out_column) {
      const int64_t at = out_row * g.out_width + out_column;
      pool_one(plane, g, rows, out_column, output + at, indices + at);
    }
  }
}

#if defined(__x86_64__)

// The output columns [begin, end) whose windows lie wholly inside the input
// columns, so every tap of a vector of them is a real element.
struct InnerColumns {
  int64_t begin, end;
};

InnerColumns inner_columns(const MaxPoolGeometry& g) {
  const int64_t begin = std::min((g.pad_w + g.stride_w - 1) / g.stride_w, g.out_width);
  // The last column whose window's last tap is at most width - 1.
  const int64_t last_start = g.width - 1 + g.pad_w - (g.kernel_w - 1) * g.dilation_w;
  const int64_t end = last_start < 0 ? begin : std::clamp(last_start / g.stride_w + 1, begin, g.out_width);
  return {begin, end};
}

// Eight outputs of a row at a time, each lane one output: per tap, a compare
// (larger, or NaN) and two blends (value and index) replace the CPU's branch.
__attribute__((target("avx2"))) void pool_plane_avx2(const float* plane, float* output, int64_t* indices,
                                                     const MaxPoolGeometry& g) {
  const InnerColumns inner = inner_columns(g);
  const int64_t plane_elements = g.height * g.width;
  const __m256i lane_numbers = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  // A lane's offset from the first lane's tap: lane × stride_w elements.
  const __m256i lane_offsets = _mm256_mullo_epi32(lane_numbers, _mm256_set1_epi32(static_cast<int32_t>(g.stride_w)));
  for (int64_t out_row = 0; out_row < g.out_height; ++out_row) {
    const WindowRows rows = window_rows(g, out_row);
    float* values_row = output + out_row * g.out_width;
    int64_t* indices_row = indices + out_row * g.out_width;
    for (int64_t column = 0; column < inner.begin; ++column) {
      pool_one(plane, g, rows, column, values_row + column, indices_row + column);
    }
    for (int64_t column = inner.end; column < g.out_width; ++column) {
      pool_one(plane, g, rows, column, values_row + column, indices_row + column);
    }
    for (int64_t column = inner.begin; column < inner.end; column += 8) {
      const int64_t lanes = std::min<int64_t>(8, inner.end - column);
      const __m256i live = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int32_t>(lanes)), lane_numbers);
      const int64_t first_tap = column * g.stride_w - g.pad_w;
      __m256 best = _mm256_set1_ps(kMinusInfinity);
      __m256i best_index =
          _mm256_add_epi32(_mm256_set1_epi32(static_cast<int32_t>(rows.first * g.width + first_tap)), lane_offsets);
      for (int64_t row = rows.first; row < rows.end; row += g.dilation_h) {
        for (int64_t tap = 0; tap < g.kernel_w; ++tap) {
          const int64_t at = row * g.width + first_tap + tap * g.dilation_w;
          __m256 candidate;
          if (lanes == 8 && g.stride_w == 1) {
            candidate = _mm256_loadu_ps(plane + at);
          } else if (lanes == 8 && g.stride_w == 2 && at + 16 <= plane_elements) {
            // Sixteen consecutive elements, the even ones in order.
            const __m256 low = _mm256_loadu_ps(plane + at);
            const __m256 high = _mm256_loadu_ps(plane + at + 8);
            const __m256 evens = _mm256_shuffle_ps(low, high, 0x88);  // 0 2 8 10 | 4 6 12 14
            candidate = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(evens), 0xD8));
          } else {
            // Other strides, and the row's last lanes: read only live lanes.
            candidate =
                _mm256_mask_i32gather_ps(_mm256_setzero_ps(), plane + at, lane_offsets, _mm256_castsi256_ps(live), 4);
          }
          const __m256 takes = _mm256_or_ps(_mm256_cmp_ps(candidate, best, _CMP_GT_OQ),
                                            _mm256_cmp_ps(candidate, candidate, _CMP_UNORD_Q));
          best = _mm256_blendv_ps(best, candidate, takes);
          const __m256i tap_index = _mm256_add_epi32(_mm256_set1_epi32(static_cast<int32_t>(at)), lane_offsets);
          best_index = _mm256_castps_si256(
              _mm256_blendv_ps(_mm256_castsi256_ps(best_index), _mm256_castsi256_ps(tap_index), takes));
        }
      }
      const __m256i indices_low = _mm256_cvtepi32_epi64(_mm256_castsi256_si128(best_index));
      const __m256i indices_high = _mm256_cvtepi32_epi64(_mm256_extracti128_si256(best_index, 1));
      auto* index_out = reinterpret_cast<long long*>(indices_row + column);
      if (lanes == 8) {
        _mm256_storeu_ps(values_row + column, best);
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(index_out), indices_low);
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(index_out + 4), indices_high);
      } else {
        _mm256_maskstore_ps(values_row + column, live, best);
        _mm256_maskstore_epi64(index_out, _mm256_cvtepi32_epi64(_mm256_castsi256_si128(live)), indices_low);
        _mm256_maskstore_epi64(index_out + 4, _mm256_cvtepi32_epi64(_mm256_extracti128_si256(live, 1)), indices_high);
      }
    }
  }
}

#endif

using PlaneKernel = void (*)(const float*, float*, int64_t*, const MaxPoolGeometry&);

PlaneKernel plane_kernel() {
#if defined(__x86_64__)
  static const PlaneKernel kernel = __builtin_cpu_supports("avx2") ? &pool_plane_avx2 : &pool_plane_scalar;
  return kernel;
#else
  return &pool_plane_scalar;
#endif
}

}  // namespace

bool max_pool_planes_supported(const MaxPoolGeometry& g) {
  return g.height > 0 && g.width > 0 && g.height * g.width <= std::numeric_limits<int32_t>::max() &&
         g.stride_w * 8 <= std::numeric_limits<int32_t>::max();
}

void max_pool2d_planes(const float* input, float* output, int64_t* indices, int64_t planes,
                       const MaxPoolGeometry& geometry) {
  const int64_t plane_in = geometry.height * geometry.width;
  const int64_t plane_out = geometry.out_height * geometry.out_width;
  const PlaneKernel kernel = plane_kernel();
  // At least 32K input elements per task: smaller pools are not worth a second thread.
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 15) / plane_in);
  at::parallel_for(0, planes, grain, [&](int64_t begin, int64_t end) {
    for (int64_t plane = begin; plane < end; ++plane) {
      kernel(input + plane * plane_in, output + plane * plane_out, indices + plane * plane_out, geometry);
    }
  });
}

}  // namespace axon
