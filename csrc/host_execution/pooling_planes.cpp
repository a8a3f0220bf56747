#include "host_execution/pooling_planes.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "host_execution/host_avx2.h"

namespace axon {
namespace {

constexpr float kMinusInfinity = -std::numeric_limits<float>::infinity();

// ---- one output at a time, as the CPU's kernels compute it ----------------
// (the fallback on hosts without AVX2, and the vector paths' edge columns)

// The input rows (or columns) one window covers along an axis, from `first`
// (inside the input) up to `end`, every `dilation` elements.
struct MaxWindow {
  int64_t first, end;
};

MaxWindow max_window(int64_t out, int64_t stride, int64_t pad, int64_t kernel, int64_t dilation, int64_t size) {
  int64_t first = out * stride - pad;
  const int64_t end = std::min(first + (kernel - 1) * dilation + 1, size);
  while (first < 0) first += dilation;
  return {first, end};
}

// Compares in float, as the CPU's kernel does for bfloat16 too, and converts
// the maximum back as it does (a bfloat16 NaN becomes 0x7FC0).
template <typename Element>
inline void max_one(const Element* plane, const PoolGeometry& g, MaxWindow rows, int64_t out_column, Element* value,
                    int64_t* index) {
  const MaxWindow columns = max_window(out_column, g.stride_w, g.pad_w, g.kernel_w, g.dilation_w, g.width);
  int64_t best_index = rows.first * g.width + columns.first;
  float best = kMinusInfinity;
  for (int64_t row = rows.first; row < rows.end; row += g.dilation_h) {
    for (int64_t column = columns.first; column < columns.end; column += g.dilation_w) {
      const int64_t at = row * g.width + column;
      const float candidate = static_cast<float>(plane[at]);
      if (candidate > best || std::isnan(candidate)) {
        best = candidate;
        best_index = at;
      }
    }
  }
  *value = static_cast<Element>(best);
  *index = best_index;
}

// An average window along an axis: [first, end) inside the input, and
// `size`, its extent counting the padding it covers.
struct AverageWindow {
  int64_t first, end, size;
};

AverageWindow average_window(int64_t out, int64_t stride, int64_t pad, int64_t kernel, int64_t input_size) {
  const int64_t start = out * stride - pad;
  const int64_t stop = std::min(start + kernel, input_size + pad);
  return {std::max<int64_t>(start, 0), std::min(stop, input_size), stop - start};
}

int64_t divide_factor(const AverageDivisor& divide, AverageWindow rows, AverageWindow columns) {
  if (divide.divisor.has_value()) return *divide.divisor;
  return divide.count_include_pad ? rows.size * columns.size : (rows.end - rows.first) * (columns.end - columns.first);
}

inline float average_one(const float* plane, const PoolGeometry& g, const AverageDivisor& divide, AverageWindow rows,
                         int64_t out_column) {
  const AverageWindow columns = average_window(out_column, g.stride_w, g.pad_w, g.kernel_w, g.width);
  if (rows.first >= rows.end || columns.first >= columns.end) return 0.0f;
  float sum = 0.0f;
  for (int64_t row = rows.first; row < rows.end; ++row) {
    for (int64_t column = columns.first; column < columns.end; ++column) sum += plane[row * g.width + column];
  }
  // The CPU's kernel adds the quotient to its zeroed output: -0 becomes +0.
  return 0.0f + sum / static_cast<float>(divide_factor(divide, rows, columns));
}

template <typename Element>
void max_plane_scalar(const Element* plane, Element* output, int64_t* indices, const PoolGeometry& g) {
  for (int64_t out_row = 0; out_row < g.out_height; ++out_row) {
    const MaxWindow rows = max_window(out_row, g.stride_h, g.pad_h, g.kernel_h, g.dilation_h, g.height);
    for (int64_t out_column = 0; out_column < g.out_width; ++out_column) {
      const int64_t at = out_row * g.out_width + out_column;
      max_one(plane, g, rows, out_column, output + at, indices + at);
    }
  }
}

void average_plane_scalar(const float* plane, float* output, const PoolGeometry& g, const AverageDivisor& divide) {
  for (int64_t out_row = 0; out_row < g.out_height; ++out_row) {
    const AverageWindow rows = average_window(out_row, g.stride_h, g.pad_h, g.kernel_h, g.height);
    for (int64_t out_column = 0; out_column < g.out_width; ++out_column) {
      output[out_row * g.out_width + out_column] = average_one(plane, g, divide, rows, out_column);
    }
  }
}

// The gradient of average pooling, as the CPU's kernel computes it: the
// input plane zeroed, then each output's gradient divided by its divisor and
// added to every element of its window, output by output.
void average_gradient_plane_scalar(const float* grad_out, float* grad_in, const PoolGeometry& g,
                                   const AverageDivisor& divide) {
  std::fill(grad_in, grad_in + g.height * g.width, 0.0f);
  for (int64_t out_row = 0; out_row < g.out_height; ++out_row) {
    const AverageWindow rows = average_window(out_row, g.stride_h, g.pad_h, g.kernel_h, g.height);
    for (int64_t out_column = 0; out_column < g.out_width; ++out_column) {
      const AverageWindow columns = average_window(out_column, g.stride_w, g.pad_w, g.kernel_w, g.width);
      const float delta =
          grad_out[out_row * g.out_width + out_column] / static_cast<float>(divide_factor(divide, rows, columns));
      for (int64_t row = rows.first; row < rows.end; ++row) {
        for (int64_t column = columns.first; column < columns.end; ++column) grad_in[row * g.width + column] += delta;
      }
    }
  }
}

#if defined(__x86_64__)

// ---- eight outputs of a row at a time (AVX2) ------------------------------

// The output columns [begin, end) whose windows lie wholly inside the input
// columns, so that every tap of a vector of them is a real element.
struct InnerColumns {
  int64_t begin, end;
};

InnerColumns inner_columns(const PoolGeometry& g) {
  const int64_t begin = std::min((g.pad_w + g.stride_w - 1) / g.stride_w, g.out_width);
  // The last column whose window's last tap is at most width - 1.
  const int64_t last_start = g.width - 1 + g.pad_w - (g.kernel_w - 1) * g.dilation_w;
  const int64_t end = last_start < 0 ? begin : std::clamp(last_start / g.stride_w + 1, begin, g.out_width);
  return {begin, end};
}

// Reads one tap of a vector of up to eight consecutive outputs of a row:
// element `at` for the first lane, and stride_w elements further per lane.
class LaneTaps {
 public:
  __attribute__((target("avx2"))) LaneTaps(const PoolGeometry& g, int64_t lanes)
      : stride_(g.stride_w), plane_elements_(g.height * g.width), lanes_(lanes), full_(lanes == 8) {
    const __m256i numbers = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    offsets_ = _mm256_mullo_epi32(numbers, _mm256_set1_epi32(static_cast<int32_t>(stride_)));
    live_ = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int32_t>(lanes)), numbers);
  }

  __attribute__((target("avx2"))) __m256 load(const float* plane, int64_t at) const {
    if (full_ && stride_ == 1) return _mm256_loadu_ps(plane + at);
    if (full_ && stride_ == 2 && at + 16 <= plane_elements_) {
      // Sixteen consecutive elements, the even ones in order.
      const __m256 evens = _mm256_shuffle_ps(_mm256_loadu_ps(plane + at), _mm256_loadu_ps(plane + at + 8), 0x88);
      return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(evens), 0xD8));  // 0 2 8 10 4 6 12 14 -> in order
    }
    // Other strides, and the row's last lanes: only live lanes are read.
    return _mm256_mask_i32gather_ps(_mm256_setzero_ps(), plane + at, offsets_, _mm256_castsi256_ps(live_), 4);
  }

  // bfloat16 elements, widened to float (exactly: a bfloat16 is a float's
  // upper half).
  __attribute__((target("avx2"))) __m256 load(const c10::BFloat16* plane, int64_t at) const {
    const auto* bits = reinterpret_cast<const uint16_t*>(plane) + at;
    if (full_ && stride_ == 1) return widen(_mm_loadu_si128(reinterpret_cast<const __m128i*>(bits)));
    if (full_ && stride_ == 2 && at + 16 <= plane_elements_) {
      const __m256i sixteen = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bits));
      const __m256 low = widen(_mm256_castsi256_si128(sixteen));
      const __m256 high = widen(_mm256_extracti128_si256(sixteen, 1));
      const __m256 evens = _mm256_shuffle_ps(low, high, 0x88);
      return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(evens), 0xD8));
    }
    alignas(32) float live[8] = {};
    for (int64_t lane = 0; lane < lanes_; ++lane) live[lane] = static_cast<float>(plane[at + lane * stride_]);
    return _mm256_load_ps(live);
  }

  // Each lane's element offset for a tap at `at`.
  __attribute__((target("avx2"))) __m256i offsets_from(int64_t at) const {
    return _mm256_add_epi32(_mm256_set1_epi32(static_cast<int32_t>(at)), offsets_);
  }

  __attribute__((target("avx2"))) void store(float* out, __m256 values) const {
    if (full_) {
      _mm256_storeu_ps(out, values);
    } else {
      _mm256_maskstore_ps(out, live_, values);
    }
  }

  // Maxima of bfloat16 elements: each is exactly an input element, so its
  // upper half, except NaNs, which the CPU's conversion makes 0x7FC0.
  __attribute__((target("avx2"))) void store(c10::BFloat16* out, __m256 values) const {
    __m256i bits = _mm256_srli_epi32(_mm256_castps_si256(values), 16);
    const __m256 nan = _mm256_cmp_ps(values, values, _CMP_UNORD_Q);
    bits = _mm256_blendv_epi8(bits, _mm256_set1_epi32(0x7FC0), _mm256_castps_si256(nan));
    // Eight 32-bit lanes to eight 16-bit ones, in order (packs work within 128-bit halves).
    const __m128i halves = _mm256_castsi256_si128(_mm256_permute4x64_epi64(_mm256_packus_epi32(bits, bits), 0xD8));
    if (full_) {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out), halves);
    } else {
      alignas(16) uint16_t each[8];
      _mm_store_si128(reinterpret_cast<__m128i*>(each), halves);
      std::memcpy(out, each, static_cast<std::size_t>(lanes_) * sizeof(uint16_t));
    }
  }

  __attribute__((target("avx2"))) void store(int64_t* out, __m256i offsets) const {
    auto* to = reinterpret_cast<long long*>(out);
    const __m256i low = _mm256_cvtepi32_epi64(_mm256_castsi256_si128(offsets));
    const __m256i high = _mm256_cvtepi32_epi64(_mm256_extracti128_si256(offsets, 1));
    if (full_) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(to), low);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(to + 4), high);
    } else {
      _mm256_maskstore_epi64(to, _mm256_cvtepi32_epi64(_mm256_castsi256_si128(live_)), low);
      _mm256_maskstore_epi64(to + 4, _mm256_cvtepi32_epi64(_mm256_extracti128_si256(live_, 1)), high);
    }
  }

 private:
  __attribute__((target("avx2"))) static __m256 widen(__m128i bfloat16s) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(bfloat16s), 16));
  }

  int64_t stride_, plane_elements_, lanes_;
  bool full_;
  __m256i offsets_, live_;
};

// Per tap, a compare (larger, or NaN) and two blends (value and index)
// replace the CPU's branch.
template <typename Element>
__attribute__((target("avx2"))) void max_plane_avx2(const Element* plane, Element* output, int64_t* indices,
                                                    const PoolGeometry& g) {
  const InnerColumns inner = inner_columns(g);
  const LaneTaps full(g, 8);
  for (int64_t out_row = 0; out_row < g.out_height; ++out_row) {
    const MaxWindow rows = max_window(out_row, g.stride_h, g.pad_h, g.kernel_h, g.dilation_h, g.height);
    Element* values_row = output + out_row * g.out_width;
    int64_t* indices_row = indices + out_row * g.out_width;
    for (int64_t column = 0; column < inner.begin; ++column) {
      max_one(plane, g, rows, column, values_row + column, indices_row + column);
    }
    for (int64_t column = inner.end; column < g.out_width; ++column) {
      max_one(plane, g, rows, column, values_row + column, indices_row + column);
    }
    for (int64_t column = inner.begin; column < inner.end; column += 8) {
      const int64_t lanes = std::min<int64_t>(8, inner.end - column);
      const LaneTaps taps = lanes == 8 ? full : LaneTaps(g, lanes);
      const int64_t first_tap = column * g.stride_w - g.pad_w;
      __m256 best = _mm256_set1_ps(kMinusInfinity);
      __m256i best_index = taps.offsets_from(rows.first * g.width + first_tap);
      for (int64_t row = rows.first; row < rows.end; row += g.dilation_h) {
        for (int64_t tap = 0; tap < g.kernel_w; ++tap) {
          const int64_t at = row * g.width + first_tap + tap * g.dilation_w;
          const __m256 candidate = taps.load(plane, at);
          const __m256 takes = _mm256_or_ps(_mm256_cmp_ps(candidate, best, _CMP_GT_OQ),
                                            _mm256_cmp_ps(candidate, candidate, _CMP_UNORD_Q));
          best = _mm256_blendv_ps(best, candidate, takes);
          best_index = _mm256_castps_si256(
              _mm256_blendv_ps(_mm256_castsi256_ps(best_index), _mm256_castsi256_ps(taps.offsets_from(at)), takes));
        }
      }
      taps.store(values_row + column, best);
      taps.store(indices_row + column, best_index);
    }
  }
}

// Per tap, one vector add; the inner columns of a row share the window's
// rows, so they share its divisor.
__attribute__((target("avx2"))) void average_plane_avx2(const float* plane, float* output, const PoolGeometry& g,
                                                        const AverageDivisor& divide) {
  const InnerColumns inner = inner_columns(g);
  const LaneTaps full(g, 8);
  for (int64_t out_row = 0; out_row < g.out_height; ++out_row) {
    const AverageWindow rows = average_window(out_row, g.stride_h, g.pad_h, g.kernel_h, g.height);
    float* values_row = output + out_row * g.out_width;
    const bool vectors = rows.first < rows.end;
    for (int64_t column = 0; column < g.out_width; ++column) {
      if (!vectors || column < inner.begin || column >= inner.end) {
        values_row[column] = average_one(plane, g, divide, rows, column);
      }
    }
    if (!vectors) continue;
    // An inner column's window: kernel_w columns, none of them padding.
    const AverageWindow columns{0, g.kernel_w, g.kernel_w};
    const __m256 divisor = _mm256_set1_ps(static_cast<float>(divide_factor(divide, rows, columns)));
    for (int64_t column = inner.begin; column < inner.end; column += 8) {
      const int64_t lanes = std::min<int64_t>(8, inner.end - column);
      const LaneTaps taps = lanes == 8 ? full : LaneTaps(g, lanes);
      const int64_t first_tap = column * g.stride_w - g.pad_w;
      __m256 sum = _mm256_setzero_ps();
      for (int64_t row = rows.first; row < rows.end; ++row) {
        for (int64_t tap = 0; tap < g.kernel_w; ++tap) {
          sum = _mm256_add_ps(sum, taps.load(plane, row * g.width + first_tap + tap));
        }
      }
      taps.store(values_row + column, _mm256_add_ps(_mm256_setzero_ps(), _mm256_div_ps(sum, divisor)));
    }
  }
}

// The gradient where windows do not overlap (stride at least the kernel on
// both axes), so each input element gets at most one output's share: that
// share added to +0, as in the CPU's kernel. Eight outputs' shares are one
// vector division; 2-wide windows 2 apart write each window row as one
// unpacked vector pair.
__attribute__((target("avx2"))) void average_gradient_plane_avx2(const float* grad_out, float* grad_in,
                                                                 const PoolGeometry& g, const AverageDivisor& divide) {
  std::fill(grad_in, grad_in + g.height * g.width, 0.0f);
  const InnerColumns inner = inner_columns(g);
  const bool pairs = g.kernel_w == 2 && g.stride_w == 2;
  for (int64_t out_row = 0; out_row < g.out_height; ++out_row) {
    const AverageWindow rows = average_window(out_row, g.stride_h, g.pad_h, g.kernel_h, g.height);
    const float* shares_row = grad_out + out_row * g.out_width;
    for (int64_t column = 0; column < g.out_width; ++column) {
      if (column >= inner.begin && column < inner.end) continue;
      const AverageWindow columns = average_window(column, g.stride_w, g.pad_w, g.kernel_w, g.width);
      const float share = 0.0f + shares_row[column] / static_cast<float>(divide_factor(divide, rows, columns));
      for (int64_t row = rows.first; row < rows.end; ++row) {
        for (int64_t c = columns.first; c < columns.end; ++c) grad_in[row * g.width + c] = share;
      }
    }
    if (rows.first >= rows.end) continue;
    const AverageWindow inner_window{0, g.kernel_w, g.kernel_w};
    const __m256 divisor = _mm256_set1_ps(static_cast<float>(divide_factor(divide, rows, inner_window)));
    for (int64_t column = inner.begin; column < inner.end; column += 8) {
      const int64_t lanes = std::min<int64_t>(8, inner.end - column);
      const __m256i live =
          _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int32_t>(lanes)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
      const __m256 shares =
          _mm256_add_ps(_mm256_setzero_ps(), _mm256_div_ps(_mm256_maskload_ps(shares_row + column, live), divisor));
      const int64_t first_column = column * g.stride_w - g.pad_w;
      if (pairs && lanes == 8) {
        const __m256 low = _mm256_unpacklo_ps(shares, shares);   // 0 0 1 1 | 4 4 5 5
        const __m256 high = _mm256_unpackhi_ps(shares, shares);  // 2 2 3 3 | 6 6 7 7
        const __m256 first = _mm256_permute2f128_ps(low, high, 0x20);
        const __m256 second = _mm256_permute2f128_ps(low, high, 0x31);
        for (int64_t row = rows.first; row < rows.end; ++row) {
          float* to = grad_in + row * g.width + first_column;
          _mm256_storeu_ps(to, first);
          _mm256_storeu_ps(to + 8, second);
        }
        continue;
      }
      alignas(32) float each[8];
      _mm256_store_ps(each, shares);
      for (int64_t row = rows.first; row < rows.end; ++row) {
        float* to = grad_in + row * g.width + first_column;
        for (int64_t lane = 0; lane < lanes; ++lane) {
          for (int64_t tap = 0; tap < g.kernel_w; ++tap) to[lane * g.stride_w + tap] = each[lane];
        }
      }
    }
  }
}

#else

// Never chosen (host_has_avx2 is false): the scalar kernels stand in for the names.
template <typename Element>
constexpr auto* max_plane_avx2 = &max_plane_scalar<Element>;
constexpr auto* average_plane_avx2 = &average_plane_scalar;
constexpr auto* average_gradient_plane_avx2 = &average_gradient_plane_scalar;

#endif

// Runs `body(p)` for each of `planes` planes, split among the OpenMP team.
template <class Body>
void for_each_plane(int64_t planes, const PoolGeometry& g, const Body& body) {
  // At least 32K input elements per task: smaller pools are not worth a second thread.
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 15) / (g.height * g.width));
  at::parallel_for(0, planes, grain, [&](int64_t begin, int64_t end) {
    for (int64_t plane = begin; plane < end; ++plane) body(plane);
  });
}

}  // namespace

bool pooling_planes_supported(const PoolGeometry& g) {
  return g.height > 0 && g.width > 0 && g.height * g.width <= std::numeric_limits<int32_t>::max() &&
         g.stride_w * 8 <= std::numeric_limits<int32_t>::max();
}

template <typename Element>
void max_pool2d_planes_of(const Element* input, Element* output, int64_t* indices, int64_t planes,
                          const PoolGeometry& g) {
  const auto plane_kernel = host_has_avx2() ? max_plane_avx2<Element> : max_plane_scalar<Element>;
  const int64_t plane_in = g.height * g.width;
  const int64_t plane_out = g.out_height * g.out_width;
  for_each_plane(planes, g, [&](int64_t plane) {
    plane_kernel(input + plane * plane_in, output + plane * plane_out, indices + plane * plane_out, g);
  });
}

void max_pool2d_planes(const float* input, float* output, int64_t* indices, int64_t planes, const PoolGeometry& g) {
  max_pool2d_planes_of(input, output, indices, planes, g);
}

void max_pool2d_planes(const c10::BFloat16* input, c10::BFloat16* output, int64_t* indices, int64_t planes,
                       const PoolGeometry& g) {
  max_pool2d_planes_of(input, output, indices, planes, g);
}

void avg_pool2d_planes(const float* input, float* output, int64_t planes, const PoolGeometry& g,
                       const AverageDivisor& divide) {
  const auto plane_kernel = host_has_avx2() ? average_plane_avx2 : average_plane_scalar;
  const int64_t plane_out = g.out_height * g.out_width;
  const int64_t plane_in = g.height * g.width;
  for_each_plane(planes, g,
                 [&](int64_t plane) { plane_kernel(input + plane * plane_in, output + plane * plane_out, g, divide); });
}

bool avg_pool2d_gradient_vectorized(const PoolGeometry& g) {
  return g.stride_h >= g.kernel_h && g.stride_w >= g.kernel_w;
}

void avg_pool2d_gradient_planes(const float* grad_output, float* grad_input, int64_t planes, const PoolGeometry& g,
                                const AverageDivisor& divide) {
  const auto plane_kernel = host_has_avx2() && avg_pool2d_gradient_vectorized(g) ? average_gradient_plane_avx2
                                                                                 : average_gradient_plane_scalar;
  const int64_t plane_in = g.height * g.width;
  const int64_t plane_out = g.out_height * g.out_width;
  for_each_plane(planes, g, [&](int64_t plane) {
    plane_kernel(grad_output + plane * plane_out, grad_input + plane * plane_in, g, divide);
  });
}

}  // namespace axon
