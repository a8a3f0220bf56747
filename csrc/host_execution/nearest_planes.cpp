#include "host_execution/nearest_planes.h"

#include <ATen/Parallel.h>
#include <ATen/native/UpSample.h>

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "host_execution/host_avx2.h"

namespace axon {
namespace {

// Which input row (column) each output row (column) reads, by the CPU
// kernel's own rule.
struct NearestMaps {
  int64_t height, width;         // of an input plane
  std::vector<int64_t> rows;     // one per output row
  std::vector<int64_t> columns;  // one per output column
  bool doubles_width;            // columns[j] == j / 2 for 2 × width columns

  explicit NearestMaps(const NearestResize& r)
      : height(r.height), width(r.width), rows(r.out_height), columns(r.out_width) {
    const auto source = r.exact ? &at::native::nearest_exact_idx : &at::native::nearest_idx;
    for (int64_t i = 0; i < r.out_height; ++i) rows[i] = source(i, r.height, r.out_height, r.scale_h);
    doubles_width = r.out_width == 2 * r.width;
    for (int64_t j = 0; j < r.out_width; ++j) {
      columns[j] = source(j, r.width, r.out_width, r.scale_w);
      doubles_width = doubles_width && columns[j] == j / 2;
    }
  }
};

// Doubles a row of `width` elements: output 2i and 2i + 1 are input i.
template <typename Element>
void double_row(const Element* in, Element* out, int64_t width) {
  for (int64_t i = 0; i < width; ++i) {
    out[2 * i] = in[i];
    out[2 * i + 1] = in[i];
  }
}

#if defined(__x86_64__)
// Four-byte elements, eight at a time: each unpacked against itself.
__attribute__((target("avx2"))) void double_row_avx2(const uint32_t* in, uint32_t* out, int64_t width) {
  int64_t i = 0;
  for (; i + 8 <= width; i += 8) {
    const __m256 v = _mm256_loadu_ps(reinterpret_cast<const float*>(in + i));
    const __m256 low = _mm256_unpacklo_ps(v, v);   // 0 0 1 1 | 4 4 5 5
    const __m256 high = _mm256_unpackhi_ps(v, v);  // 2 2 3 3 | 6 6 7 7
    _mm256_storeu_ps(reinterpret_cast<float*>(out + 2 * i), _mm256_permute2f128_ps(low, high, 0x20));
    _mm256_storeu_ps(reinterpret_cast<float*>(out + 2 * i + 8), _mm256_permute2f128_ps(low, high, 0x31));
  }
  double_row(in + i, out + 2 * i, width - i);
}

// The gradient of a doubled row: element i adds output 2i, then 2i + 1.
__attribute__((target("avx2"))) void add_pairs_avx2(const float* grad_out, float* grad_in, int64_t width) {
  int64_t i = 0;
  for (; i + 8 <= width; i += 8) {
    const __m256 low = _mm256_loadu_ps(grad_out + 2 * i);
    const __m256 high = _mm256_loadu_ps(grad_out + 2 * i + 8);
    // Evens and odds, in order: 0 2 8 10 | 4 6 12 14 and 1 3 9 11 | 5 7 13 15, then lanes 0 1 2 3.
    const __m256 evens =
        _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(low, high, 0x88)), 0xD8));
    const __m256 odds =
        _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(low, high, 0xDD)), 0xD8));
    const __m256 sum = _mm256_add_ps(_mm256_add_ps(_mm256_loadu_ps(grad_in + i), evens), odds);
    _mm256_storeu_ps(grad_in + i, sum);
  }
  for (; i < width; ++i) {
    grad_in[i] += grad_out[2 * i];
    grad_in[i] += grad_out[2 * i + 1];
  }
}

#endif

template <typename Element>
void nearest_plane(const Element* in, Element* out, const NearestMaps& maps) {
  const int64_t out_width = static_cast<int64_t>(maps.columns.size());
  const int64_t out_height = static_cast<int64_t>(maps.rows.size());
  for (int64_t row = 0; row < out_height; ++row) {
    Element* to = out + row * out_width;
    if (row > 0 && maps.rows[row] == maps.rows[row - 1]) {
      std::memcpy(to, to - out_width, out_width * sizeof(Element));
      continue;
    }
    const Element* from = in + maps.rows[row] * maps.width;
    if (maps.doubles_width) {
#if defined(__x86_64__)
      if constexpr (sizeof(Element) == 4) {
        if (host_has_avx2()) {
          double_row_avx2(from, to, maps.width);
          continue;
        }
      }
#endif
      double_row(from, to, maps.width);
      continue;
    }
    for (int64_t column = 0; column < out_width; ++column) to[column] = from[maps.columns[column]];
  }
}

// The gradient of one plane, as the CPU's kernel sums it: every input
// element starts at +0 and adds the gradients of the outputs that read it,
// in output order (row by row, left to right). The maps never decrease, so
// the output rows reading input row r are consecutive, and the kernel can
// finish one input row before the next; within it, the same order.
template <typename Element>
void nearest_gradient_plane(const Element* grad_out, Element* grad_in, const NearestMaps& maps) {
  const int64_t out_width = static_cast<int64_t>(maps.columns.size());
  const int64_t out_height = static_cast<int64_t>(maps.rows.size());
  std::fill(grad_in, grad_in + maps.height * maps.width, Element(0));
  for (int64_t row = 0; row < out_height; ++row) {
    Element* to = grad_in + maps.rows[row] * maps.width;
    const Element* from = grad_out + row * out_width;
#if defined(__x86_64__)
    if constexpr (std::is_same_v<Element, float>) {
      if (maps.doubles_width && host_has_avx2()) {
        add_pairs_avx2(from, to, maps.width);
        continue;
      }
    }
#endif
    for (int64_t column = 0; column < out_width; ++column) to[maps.columns[column]] += from[column];
  }
}

// Runs `plane_body(p)` for each of `planes` planes, split among the OpenMP
// team.
template <class PlaneBody>
void for_each_plane(int64_t planes, int64_t plane_out, const PlaneBody& plane_body) {
  // At least 64K output elements per task: smaller copies are not worth a second thread.
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 16) / std::max<int64_t>(1, plane_out));
  at::parallel_for(0, planes, grain, [&](int64_t begin, int64_t end) {
    for (int64_t plane = begin; plane < end; ++plane) plane_body(plane);
  });
}

template <typename Element>
void nearest_planes_of(const void* input, void* output, int64_t planes, const NearestMaps& maps) {
  const int64_t plane_in = maps.height * maps.width;
  const int64_t plane_out = static_cast<int64_t>(maps.rows.size() * maps.columns.size());
  for_each_plane(planes, plane_out, [&](int64_t plane) {
    nearest_plane(static_cast<const Element*>(input) + plane * plane_in,
                  static_cast<Element*>(output) + plane * plane_out, maps);
  });
}

template <typename Element>
void nearest_gradient_planes_of(const Element* grad_output, Element* grad_input, int64_t planes,
                                const NearestMaps& maps) {
  const int64_t plane_in = maps.height * maps.width;
  const int64_t plane_out = static_cast<int64_t>(maps.rows.size() * maps.columns.size());
  for_each_plane(planes, plane_out, [&](int64_t plane) {
    nearest_gradient_plane(grad_output + plane * plane_out, grad_input + plane * plane_in, maps);
  });
}

}  // namespace

void nearest_planes(const void* input, void* output, int64_t planes, int64_t element_size,
                    const NearestResize& resize) {
  const NearestMaps maps(resize);
  switch (element_size) {
    case 1:
      return nearest_planes_of<uint8_t>(input, output, planes, maps);
    case 2:
      return nearest_planes_of<uint16_t>(input, output, planes, maps);
    case 4:
      return nearest_planes_of<uint32_t>(input, output, planes, maps);
    default:
      return nearest_planes_of<uint64_t>(input, output, planes, maps);
  }
}

void nearest_gradient_planes(const void* grad_output, void* grad_input, int64_t planes, bool is_double,
                             const NearestResize& resize) {
  const NearestMaps maps(resize);
  if (is_double) {
    return nearest_gradient_planes_of(static_cast<const double*>(grad_output), static_cast<double*>(grad_input), planes,
                                      maps);
  }
  nearest_gradient_planes_of(static_cast<const float*>(grad_output), static_cast<float*>(grad_input), planes, maps);
}

}  // namespace axon
