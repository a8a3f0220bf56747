#include "host_execution/batch_norm_statistics.h"

#include <ATen/Parallel.h>

#include <cmath>
#include <vector>

#include "host_execution/cpu_kernel_vectors.h"
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

// The saved and running statistics of channel `c` from its mean and its sum
// of squared deviations, with the CPU's float and double steps.
void finish_channel(const BatchNormOperands& operands, int64_t c, float mean, float deviations, int64_t count,
                    double momentum, double eps) {
  const double variance = static_cast<double>(deviations / static_cast<float>(count));
  const double invstd = (variance != 0.0 || eps != 0.0) ? 1.0 / std::sqrt(variance + eps) : 0.0;
  operands.save_mean[c] = mean;
  operands.save_invstd[c] = static_cast<float>(invstd);
  if (operands.running_mean != nullptr) {
    // The momentum rounded to float first. The mean's update is in float, each product and the sum rounded
    // apart. The variance's adds in double the new term (the unbiased variance divided in float, times the
    // momentum) and the old one (a float product).
    const float weight_new = static_cast<float>(momentum), weight_old = 1.0f - weight_new;
    operands.running_mean[c] = weight_new * mean + weight_old * operands.running_mean[c];
    const double unbiased = static_cast<double>(deviations / static_cast<float>(count - 1));
    operands.running_var[c] = static_cast<float>(static_cast<double>(weight_new) * unbiased +
                                                 static_cast<double>(weight_old * operands.running_var[c]));
  }
}

// The output's per-channel scale and shift, as the CPU computes them.
void output_terms(const BatchNormOperands& operands, int64_t c, bool fused, float* alpha, float* beta) {
  const float weight = operands.weight != nullptr ? operands.weight[c] : 1.0f;
  const float bias = operands.bias != nullptr ? operands.bias[c] : 0.0f;
  *alpha = operands.save_invstd[c] * weight;
  *beta = fused ? std::fma(-operands.save_mean[c], *alpha, bias) : bias - operands.save_mean[c] * *alpha;
}

// Channels-last sums keep a block of channels' accumulators in registers
// while they walk the rows: accumulating in memory row after row chains each
// add to the previous row's store (about 8 cycles a vector). Each channel's
// adds stay in row order, so the sums are those of the plain loop.
constexpr int64_t kRegisterChannels = 32;

// accumulator[c] = add(accumulator[c], row, c) for each row of [begin, end) in order.
template <class Add>
__attribute__((always_inline)) inline void accumulate_rows(int64_t channels, int64_t begin, int64_t end,
                                                           float* accumulator, Add add) {
  int64_t c0 = 0;
  for (; c0 + kRegisterChannels <= channels; c0 += kRegisterChannels) {
    float block[kRegisterChannels];
    for (int64_t j = 0; j < kRegisterChannels; ++j) block[j] = accumulator[c0 + j];
    for (int64_t row = begin; row < end; ++row) {
      for (int64_t j = 0; j < kRegisterChannels; ++j) block[j] = add(block[j], row, c0 + j);
    }
    for (int64_t j = 0; j < kRegisterChannels; ++j) accumulator[c0 + j] = block[j];
  }
  for (int64_t row = begin; row < end; ++row) {
    for (int64_t c = c0; c < channels; ++c) accumulator[c] = add(accumulator[c], row, c);
  }
}

// accumulator[c] += row[c] over the rows [begin, end).
AXON_PER_INSTRUCTION_SET
void add_rows(const float* input, int64_t channels, int64_t begin, int64_t end, float* accumulator) {
  accumulate_rows(channels, begin, end, accumulator,
                  [=](float sum, int64_t row, int64_t c) { return sum + input[row * channels + c]; });
}

// accumulator[c] += (row[c] - mean[c])^2 over the rows [begin, end), the
// square and the add in one rounding where the CPU's vector code fuses them.
AXON_PER_INSTRUCTION_SET
void add_squared_deviations(const float* input, const float* mean, int64_t channels, int64_t begin, int64_t end,
                            bool fused, float* accumulator) {
  if (fused) {
    accumulate_rows(channels, begin, end, accumulator, [=](float sum, int64_t row, int64_t c) {
      const float d = input[row * channels + c] - mean[c];
      return std::fma(d, d, sum);
    });
  } else {
    accumulate_rows(channels, begin, end, accumulator, [=](float sum, int64_t row, int64_t c) {
      const float d = input[row * channels + c] - mean[c];
      return sum + d * d;
    });
  }
}

// output = input * alpha[c] + beta[c] over the rows [begin, end).
AXON_PER_INSTRUCTION_SET
void scale_rows(const float* input, float* output, int64_t channels, int64_t begin, int64_t end, const float* alpha,
                const float* beta, bool fused) {
  for (int64_t row = begin; row < end; ++row) {
    const float* x = input + row * channels;
    float* y = output + row * channels;
    if (fused) {
      for (int64_t c = 0; c < channels; ++c) y[c] = std::fma(x[c], alpha[c], beta[c]);
    } else {
      for (int64_t c = 0; c < channels; ++c) y[c] = x[c] * alpha[c] + beta[c];
    }
  }
}

// Each thread's sums (one row of `partials` per thread) of `add` over its
// share of the rows, split as the CPU splits them; then per channel their
// double total.
template <class Add>
void channel_totals(int64_t rows, int64_t channels, int threads, std::vector<float>& partials, double* totals,
                    Add add) {
  std::fill(partials.begin(), partials.end(), 0.0f);
  at::parallel_for(0, rows, 1, [&](int64_t begin, int64_t end) {
    add(begin, end, partials.data() + static_cast<int64_t>(at::get_thread_num()) * channels);
  });
  for (int64_t c = 0; c < channels; ++c) {
    double total = 0.0;
    for (int t = 0; t < threads; ++t) total += partials[t * channels + c];
    totals[c] = total;
  }
}

}  // namespace

void batch_norm_training_channels_last(const BatchNormOperands& operands, const ChannelShape& shape, double momentum,
                                       double eps) {
  const bool fused = cpu_kernels_fuse_multiply_adds();
  const int64_t channels = shape.channels, rows = shape.batch * shape.positions;
  const int threads = at::get_num_threads();
  std::vector<float> means(channels), deviations(channels);
  std::vector<double> totals(channels);
  if (rows > threads) {
    std::vector<float> partials(static_cast<size_t>(threads) * channels);
    channel_totals(rows, channels, threads, partials, totals.data(), [&](int64_t begin, int64_t end, float* sums) {
      add_rows(operands.input, channels, begin, end, sums);
    });
    for (int64_t c = 0; c < channels; ++c) means[c] = static_cast<float>(totals[c] / static_cast<double>(rows));
    channel_totals(rows, channels, threads, partials, totals.data(), [&](int64_t begin, int64_t end, float* sums) {
      add_squared_deviations(operands.input, means.data(), channels, begin, end, fused, sums);
    });
    for (int64_t c = 0; c < channels; ++c) deviations[c] = static_cast<float>(totals[c]);
  } else {
    // Fewer rows than threads: the CPU sums each channel in double, one row after another.
    for (int64_t c = 0; c < channels; ++c) {
      double sum = 0.0;
      for (int64_t row = 0; row < rows; ++row) sum += operands.input[row * channels + c];
      means[c] = static_cast<float>(sum / static_cast<double>(rows));
      double squares = 0.0;
      for (int64_t row = 0; row < rows; ++row) {
        const float d = operands.input[row * channels + c] - means[c];
        squares += d * d;
      }
      deviations[c] = static_cast<float>(squares);
    }
  }
  std::vector<float> alpha(channels), beta(channels);
  for (int64_t c = 0; c < channels; ++c) {
    finish_channel(operands, c, means[c], deviations[c], rows, momentum, eps);
    output_terms(operands, c, fused, &alpha[c], &beta[c]);
  }
  at::parallel_for(0, rows, 1, [&](int64_t begin, int64_t end) {
    scale_rows(operands.input, operands.output, channels, begin, end, alpha.data(), beta.data(), fused);
  });
}

void batch_norm_training(const BatchNormOperands& operands, const ChannelShape& shape, double momentum, double eps) {
  // The CPU's vectorized kernels (AVX2 and up) fuse the output's multiply-adds; its baseline one does not.
  const bool fused = cpu_kernels_fuse_multiply_adds();
  const int64_t count = shape.batch * shape.positions;
  // Per channel, as the CPU's contiguous kernels compute it.
  at::parallel_for(0, shape.channels, 1, [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) {
      const float mean = static_cast<float>(channel_sum(operands.input, shape, c) / static_cast<double>(count));
      const float deviations = static_cast<float>(channel_deviations(operands.input, shape, c, mean));
      finish_channel(operands, c, mean, deviations, count, momentum, eps);
    }
  });
  at::parallel_for(0, shape.batch * shape.channels, 1, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const int64_t c = row % shape.channels;
      float alpha, beta;
      output_terms(operands, c, fused, &alpha, &beta);
      scale_row(operands.input + row * shape.positions, operands.output + row * shape.positions, shape.positions, alpha,
                beta, fused);
    }
  });
}

}  // namespace axon
