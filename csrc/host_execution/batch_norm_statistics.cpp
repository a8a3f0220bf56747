#include "host_execution/batch_norm_statistics.h"

#include <ATen/Parallel.h>
#include <ATen/Version.h>

#include <cmath>

#include "host_execution/per_instruction_set.h"

namespace axon {
namespace {

// Partial sums kept apart so that the compiler can keep them in vector lanes.
constexpr int kLanes = 8;

// The sum in double of `term` over one channel's elements, split over
// vector lanes. Inlined into each caller's per-instruction-set copies.
template <class Term>
__attribute__((always_inline)) inline double channel_total(const float* input, const ChannelShape& shape,
                                                           int64_t channel, Term term) {
  double lanes[kLanes] = {};
  for (int64_t n = 0; n < shape.batch; ++n) {
    const float* x = input + (n * shape.channels + channel) * shape.positions;
    int64_t i = 0;
    for (; i + kLanes <= shape.positions; i += kLanes) {
      for (int l = 0; l < kLanes; ++l) lanes[l] += term(x[i + l]);
    }
    for (; i < shape.positions; ++i) lanes[0] += term(x[i]);
  }
  double total = 0.0;
  for (const double lane : lanes) total += lane;
  return total;
}

// The sum of one channel's elements.
AXON_PER_INSTRUCTION_SET
double channel_sum(const float* input, const ChannelShape& shape, int64_t channel) {
  return channel_total(input, shape, channel, [](float x) { return static_cast<double>(x); });
}

// The sum of one channel's squared deviations from `mean`, each deviation
// and its square rounded to float as the CPU's kernel rounds them.
AXON_PER_INSTRUCTION_SET
double channel_deviations(const float* input, const ChannelShape& shape, int64_t channel, float mean) {
  return channel_total(input, shape, channel, [mean](float x) {
    const float d = x - mean;
    return static_cast<double>(d * d);
  });
}

// output = input * alpha + beta over one [batch, channel] row, in one
// rounding (a fused multiply-add) where the CPU's kernel fuses it.
AXON_PER_INSTRUCTION_SET
void scale_row(const float* x, float* y, int64_t count, float alpha, float beta, bool fused) {
  if (fused) {
    for (int64_t i = 0; i < count; ++i) y[i] = std::fma(x[i], alpha, beta);
  } else {
    for (int64_t i = 0; i < count; ++i) y[i] = x[i] * alpha + beta;
  }
}

}  // namespace

void batch_norm_training(const BatchNormOperands& operands, const ChannelShape& shape, double momentum, double eps) {
  // The CPU's vectorized kernels (AVX2 and up) fuse the output's multiply-adds; its baseline one does not.
  static const bool fused = at::get_cpu_capability() != "DEFAULT";
  const int64_t count = shape.batch * shape.positions;
  // Per channel, as the CPU's contiguous kernels compute it.
  at::parallel_for(0, shape.channels, 1, [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) {
      const float mean = static_cast<float>(channel_sum(operands.input, shape, c) / static_cast<double>(count));
      const float deviations = static_cast<float>(channel_deviations(operands.input, shape, c, mean));
      const double variance = static_cast<double>(deviations / static_cast<float>(count));
      const double invstd = (variance != 0.0 || eps != 0.0) ? 1.0 / std::sqrt(variance + eps) : 0.0;
      operands.save_mean[c] = mean;
      operands.save_invstd[c] = static_cast<float>(invstd);
      if (operands.running_mean != nullptr) {
        // The momentum rounded to float first. The mean's update is in float, each product and the sum
        // rounded apart. The variance's adds in double the new term (the unbiased variance divided in
        // float, times the momentum) and the old one (a float product).
        const float weight_new = static_cast<float>(momentum), weight_old = 1.0f - weight_new;
        operands.running_mean[c] = weight_new * mean + weight_old * operands.running_mean[c];
        const double unbiased = static_cast<double>(deviations / static_cast<float>(count - 1));
        operands.running_var[c] = static_cast<float>(static_cast<double>(weight_new) * unbiased +
                                                     static_cast<double>(weight_old * operands.running_var[c]));
      }
    }
  });
  at::parallel_for(0, shape.batch * shape.channels, 1, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const int64_t c = row % shape.channels;
      const float weight = operands.weight != nullptr ? operands.weight[c] : 1.0f;
      const float bias = operands.bias != nullptr ? operands.bias[c] : 0.0f;
      const float alpha = operands.save_invstd[c] * weight;
      const float beta = fused ? std::fma(-operands.save_mean[c], alpha, bias) : bias - operands.save_mean[c] * alpha;
      scale_row(operands.input + row * shape.positions, operands.output + row * shape.positions, shape.positions, alpha,
                beta, fused);
    }
  });
}

}  // namespace axon
