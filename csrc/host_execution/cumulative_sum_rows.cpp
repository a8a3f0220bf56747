#include "host_execution/cumulative_sum_rows.h"

#include <ATen/Parallel.h>

#include <algorithm>

#include "host_execution/per_instruction_set.h"

namespace axon {
namespace {

// Columns summed together along a strided dimension: their running sums (in
// double, 2 KiB) stay in the first-level cache while the rows go by.
constexpr int64_t kBlockColumns = 256;

// Lines summed in step along the innermost dimension: independent additions
// that hide each other's latency (one running sum adds an element per
// addition's latency, about four cycles). Four and eight took the same time
// on 4096x1024 floats; sixteen took eight times as long, its lines' loads
// and stores agreeing in their low 12 bits (1024 floats apart).
constexpr int64_t kLinesInStep = 4;

// At least this many elements per parallel task, as ATen's own grain.
constexpr int64_t kGrainElements = int64_t{1} << 15;

// Columns [first, last) of one outer slice, rows in order.
template <typename T>
AXON_PER_INSTRUCTION_SET void column_block(const T* slice, T* out, int64_t extent, int64_t inner, int64_t first,
                                           int64_t last) {
  double sums[kBlockColumns] = {};
  const int64_t width = last - first;
  for (int64_t r = 0; r < extent; ++r) {
    const T* row = slice + r * inner + first;
    T* written = out + r * inner + first;
    for (int64_t c = 0; c < width; ++c) {
      sums[c] += static_cast<double>(row[c]);
      written[c] = static_cast<T>(sums[c]);
    }
  }
}

// Lines [first, first + kLinesInStep) of contiguous length `extent`.
template <typename T>
void lines_in_step(const T* data, T* out, int64_t extent) {
  double sums[kLinesInStep] = {};
  for (int64_t i = 0; i < extent; ++i) {
    for (int64_t l = 0; l < kLinesInStep; ++l) {
      sums[l] += static_cast<double>(data[l * extent + i]);
      out[l * extent + i] = static_cast<T>(sums[l]);
    }
  }
}

template <typename T>
void one_line(const T* data, T* out, int64_t extent) {
  double sum = 0.0;
  for (int64_t i = 0; i < extent; ++i) {
    sum += static_cast<double>(data[i]);
    out[i] = static_cast<T>(sum);
  }
}

template <typename T>
void sums_of(const T* data, const ScanShape& shape, T* result) {
  if (shape.inner == 1) {
    const int64_t groups = (shape.outer + kLinesInStep - 1) / kLinesInStep;
    const int64_t grain = std::max<int64_t>(1, kGrainElements / (shape.extent * kLinesInStep));
    at::parallel_for(0, groups, grain, [&](int64_t begin, int64_t end) {
      for (int64_t g = begin; g < end; ++g) {
        const int64_t first = g * kLinesInStep;
        const T* lines = data + first * shape.extent;
        T* out = result + first * shape.extent;
        if (first + kLinesInStep <= shape.outer) {
          lines_in_step(lines, out, shape.extent);
        } else {
          for (int64_t l = first; l < shape.outer; ++l) {
            one_line(lines + (l - first) * shape.extent, out + (l - first) * shape.extent, shape.extent);
          }
        }
      }
    });
    return;
  }
  const int64_t blocks = (shape.inner + kBlockColumns - 1) / kBlockColumns;
  const int64_t grain = std::max<int64_t>(1, kGrainElements / (shape.extent * std::min(kBlockColumns, shape.inner)));
  const int64_t slice_size = shape.extent * shape.inner;
  at::parallel_for(0, shape.outer * blocks, grain, [&](int64_t begin, int64_t end) {
    for (int64_t task = begin; task < end; ++task) {
      const int64_t o = task / blocks;
      const int64_t first = (task % blocks) * kBlockColumns;
      const int64_t last = std::min(first + kBlockColumns, shape.inner);
      column_block(data + o * slice_size, result + o * slice_size, shape.extent, shape.inner, first, last);
    }
  });
}

}  // namespace

void cumulative_sums(const float* data, const ScanShape& shape, float* result) { sums_of(data, shape, result); }

void cumulative_sums(const double* data, const ScanShape& shape, double* result) { sums_of(data, shape, result); }

}  // namespace axon
