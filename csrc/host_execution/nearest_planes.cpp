#include "host_execution/nearest_planes.h"

#include <ATen/Parallel.h>
#include <ATen/native/UpSample.h>

#include <algorithm>
#include <cstring>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

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

bool has_avx2() {
  static const bool avx2 = __builtin_cpu_supports("avx2");
  return avx2;
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
        if (has_avx2()) {
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

template <typename Element>
void nearest_planes_of(const void* input, void* output, int64_t planes, const NearestMaps& maps) {
  const int64_t plane_in = maps.height * maps.width;
  const int64_t plane_out = static_cast<int64_t>(maps.rows.size() * maps.columns.size());
  // At least 64K output elements per task: smaller copies are not worth a second thread.
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 16) / std::max<int64_t>(1, plane_out));
  at::parallel_for(0, planes, grain, [&](int64_t begin, int64_t end) {
    for (int64_t plane = begin; plane < end; ++plane) {
      nearest_plane(static_cast<const Element*>(input) + plane * plane_in,
                    static_cast<Element*>(output) + plane * plane_out, maps);
    }
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

}  // namespace axon
