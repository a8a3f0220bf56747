#include "host_execution/variance_rows.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace axon {
namespace {

// Partial sums kept apart so that the compiler can keep them in vector lanes
// (a single running double sum would add one element per cycle's latency).
constexpr int kLanes = 8;

double lane_total(const double (&lanes)[kLanes]) {
  double total = 0.0;
  for (double lane : lanes) total += lane;
  return total;
}

// The mean the CPU's Welford update gives where the exact mean is infinite:
// it stays infinite only if the infinity is the last element it meets (an
// element after it, finite or not, turns the running mean into NaN), so
// anything but a lone infinity at the end gives NaN. Its variance is NaN
// either way, as here.
double welford_mean_when_infinite(double mean, const float* x, int64_t count, int64_t stride) {
  for (int64_t i = 0; i + 1 < count; ++i) {
    if (!std::isfinite(x[i * stride])) return std::nan("");
  }
  return std::isinf(x[(count - 1) * stride]) ? mean : std::nan("");
}

// Mean and sum of squared deviations of `count` contiguous floats.
void row_moments(const float* x, int64_t count, double& mean, double& deviations) {
  double lanes[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= count; i += kLanes) {
    for (int l = 0; l < kLanes; ++l) lanes[l] += static_cast<double>(x[i + l]);
  }
  for (; i < count; ++i) lanes[i % kLanes] += static_cast<double>(x[i]);
  mean = lane_total(lanes) / static_cast<double>(count);
  if (std::isinf(mean)) mean = welford_mean_when_infinite(mean, x, count, 1);
  double squares[kLanes] = {};
  for (i = 0; i + kLanes <= count; i += kLanes) {
    for (int l = 0; l < kLanes; ++l) {
      const double d = static_cast<double>(x[i + l]) - mean;
      squares[l] += d * d;
    }
  }
  for (; i < count; ++i) {
    const double d = static_cast<double>(x[i]) - mean;
    squares[i % kLanes] += d * d;
  }
  deviations = lane_total(squares);
}

float finish(double deviations, double divisor, bool take_sqrt) {
  const double variance = deviations / divisor;
  return static_cast<float>(take_sqrt ? std::sqrt(variance) : variance);
}

// Columns [first, last) of one outer slice: the rows are walked in order, each
// column's sums carried in a double array the width of the block.
void column_moments(const float* slice, const VarianceShape& shape, int64_t first, int64_t last, double divisor,
                    bool take_sqrt, float* variance, float* mean) {
  const int64_t width = last - first;
  std::vector<double> sums(width, 0.0), squares(width, 0.0);
  for (int64_t r = 0; r < shape.extent; ++r) {
    const float* row = slice + r * shape.inner + first;
    for (int64_t c = 0; c < width; ++c) sums[c] += static_cast<double>(row[c]);
  }
  const double count = static_cast<double>(shape.extent);
  for (int64_t c = 0; c < width; ++c) {
    sums[c] /= count;
    if (std::isinf(sums[c]))
      sums[c] = welford_mean_when_infinite(sums[c], slice + first + c, shape.extent, shape.inner);
  }
  for (int64_t r = 0; r < shape.extent; ++r) {
    const float* row = slice + r * shape.inner + first;
    for (int64_t c = 0; c < width; ++c) {
      const double d = static_cast<double>(row[c]) - sums[c];
      squares[c] += d * d;
    }
  }
  for (int64_t c = 0; c < width; ++c) {
    variance[first + c] = finish(squares[c], divisor, take_sqrt);
    if (mean != nullptr) mean[first + c] = static_cast<float>(sums[c]);
  }
}

}  // namespace

void variance_rows(const float* data, const VarianceShape& shape, double correction, bool take_sqrt, float* variance,
                   float* mean) {
  const double divisor = static_cast<double>(shape.extent) - correction;
  if (shape.inner == 1) {
    // One result per contiguous row; at least 32K elements per task.
    const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 15) / shape.extent);
    at::parallel_for(0, shape.outer, grain, [&](int64_t begin, int64_t end) {
      for (int64_t o = begin; o < end; ++o) {
        double row_mean = 0.0, deviations = 0.0;
        row_moments(data + o * shape.extent, shape.extent, row_mean, deviations);
        variance[o] = finish(deviations, divisor, take_sqrt);
        if (mean != nullptr) mean[o] = static_cast<float>(row_mean);
      }
    });
    return;
  }
  // Blocks of up to 512 columns of one outer slice, each a task.
  constexpr int64_t kBlock = 512;
  const int64_t blocks = (shape.inner + kBlock - 1) / kBlock;
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 15) / (shape.extent * std::min(kBlock, shape.inner)));
  at::parallel_for(0, shape.outer * blocks, grain, [&](int64_t begin, int64_t end) {
    for (int64_t task = begin; task < end; ++task) {
      const int64_t o = task / blocks;
      const int64_t first = (task % blocks) * kBlock;
      const int64_t last = std::min(first + kBlock, shape.inner);
      column_moments(data + o * shape.extent * shape.inner, shape, first, last, divisor, take_sqrt,
                     variance + o * shape.inner, mean == nullptr ? nullptr : mean + o * shape.inner);
    }
  });
}

}  // namespace axon
