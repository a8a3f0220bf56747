#include "host_execution/batch_norm_gradients.h"

#include <ATen/Parallel.h>

#include <cmath>
#include <vector>

#include "host_execution/cpu_kernel_vectors.h"
#include "host_execution/per_instruction_set.h"

namespace axon {
namespace {

// Both sums keep a block of channels in registers while they walk the rows
// (in memory, each row's add waits on the previous row's store); each
// channel's adds stay in row order.
constexpr int64_t kRegisterChannels = 32;

// Over the rows [begin, end): sums[c] += dy and dots[c] += (x - mean) * dy,
// the product and its add in one rounding where the CPU's vector code fuses
// them.
template <bool kFused>
__attribute__((always_inline)) inline void add_gradient_rows_of(const float* grad_output, const float* input,
                                                                const float* mean, int64_t channels, int64_t begin,
                                                                int64_t end, float* sums, float* dots) {
  auto dot = [](float x, float mean, float dy, float total) {
    return kFused ? std::fma(x - mean, dy, total) : total + (x - mean) * dy;
  };
  int64_t c0 = 0;
  for (; c0 + kRegisterChannels <= channels; c0 += kRegisterChannels) {
    float sum[kRegisterChannels], products[kRegisterChannels], centre[kRegisterChannels];
    for (int64_t j = 0; j < kRegisterChannels; ++j) {
      sum[j] = sums[c0 + j];
      products[j] = dots[c0 + j];
      centre[j] = mean[c0 + j];
    }
    for (int64_t row = begin; row < end; ++row) {
      const float* dy = grad_output + row * channels + c0;
      const float* x = input + row * channels + c0;
      for (int64_t j = 0; j < kRegisterChannels; ++j) {
        sum[j] = sum[j] + dy[j];
        products[j] = dot(x[j], centre[j], dy[j], products[j]);
      }
    }
    for (int64_t j = 0; j < kRegisterChannels; ++j) {
      sums[c0 + j] = sum[j];
      dots[c0 + j] = products[j];
    }
  }
  for (int64_t row = begin; row < end; ++row) {
    const float* dy = grad_output + row * channels;
    const float* x = input + row * channels;
    for (int64_t c = c0; c < channels; ++c) {
      sums[c] = sums[c] + dy[c];
      dots[c] = dot(x[c], mean[c], dy[c], dots[c]);
    }
  }
}

AXON_PER_INSTRUCTION_SET
void add_gradient_rows(const float* grad_output, const float* input, const float* mean, int64_t channels, int64_t begin,
                       int64_t end, bool fused, float* sums, float* dots) {
  if (fused) {
    add_gradient_rows_of<true>(grad_output, input, mean, channels, begin, end, sums, dots);
  } else {
    add_gradient_rows_of<false>(grad_output, input, mean, channels, begin, end, sums, dots);
  }
}

// dx = ((dy - grad_mean) - (x - mean) * k) * invstd * weight over the rows
// [begin, end), the CPU's float steps in its order. Its vector code fuses
// the product and the difference in whole vectors of channels but not in the
// last, partial one (found bit for bit on AVX2): `fused_channels` are fused.
AXON_PER_INSTRUCTION_SET
void input_gradient_rows(const float* grad_output, const float* input, const float* mean, const float* k,
                         const float* grad_mean, const float* invstd, const float* weight, int64_t channels,
                         int64_t begin, int64_t end, int64_t fused_channels, float* grad_input) {
  for (int64_t row = begin; row < end; ++row) {
    const float* dy = grad_output + row * channels;
    const float* x = input + row * channels;
    float* dx = grad_input + row * channels;
    int64_t c = 0;
    for (; c < fused_channels; ++c) {
      const float centered = dy[c] - grad_mean[c];
      dx[c] = std::fma(-(x[c] - mean[c]), k[c], centered) * invstd[c] * weight[c];
    }
    for (; c < channels; ++c) {
      const float centered = dy[c] - grad_mean[c];
      dx[c] = (centered - (x[c] - mean[c]) * k[c]) * invstd[c] * weight[c];
    }
  }
}

}  // namespace

void batch_norm_backward_channels_last(const BatchNormGradientOperands& operands, int64_t rows, int64_t channels) {
  const int lanes = cpu_kernel_float_lanes();
  const bool fused = lanes > 0;
  const int threads = at::get_num_threads();
  std::vector<float> partial_sums(static_cast<size_t>(threads) * channels, 0.0f);
  std::vector<float> partial_dots(static_cast<size_t>(threads) * channels, 0.0f);
  at::parallel_for(0, rows, 1, [&](int64_t begin, int64_t end) {
    const int64_t offset = static_cast<int64_t>(at::get_thread_num()) * channels;
    add_gradient_rows(operands.grad_output, operands.input, operands.save_mean, channels, begin, end, fused,
                      partial_sums.data() + offset, partial_dots.data() + offset);
  });
  // Per channel: the threads' sums in double, rounded to float as the CPU stores them; then its per-lane terms.
  std::vector<float> sum(channels), dot(channels), k(channels), grad_mean(channels), weight(channels, 1.0f);
  const float count = static_cast<float>(rows);
  for (int64_t c = 0; c < channels; ++c) {
    double total_sum = 0.0, total_dot = 0.0;
    for (int t = 0; t < threads; ++t) {
      total_sum += partial_sums[t * channels + c];
      total_dot += partial_dots[t * channels + c];
    }
    sum[c] = static_cast<float>(total_sum);
    dot[c] = static_cast<float>(total_dot);
    const float invstd = operands.save_invstd[c];
    k[c] = dot[c] * invstd * invstd / count;
    grad_mean[c] = sum[c] / count;
    if (operands.weight != nullptr) weight[c] = operands.weight[c];
    if (operands.grad_weight != nullptr) operands.grad_weight[c] = dot[c] * invstd;
    if (operands.grad_bias != nullptr) operands.grad_bias[c] = sum[c];
  }
  if (operands.grad_input == nullptr) return;
  at::parallel_for(0, rows, 1, [&](int64_t begin, int64_t end) {
    input_gradient_rows(operands.grad_output, operands.input, operands.save_mean, k.data(), grad_mean.data(),
                        operands.save_invstd, weight.data(), channels, begin, end,
                        fused ? channels - channels % lanes : 0, operands.grad_input);
  });
}

}  // namespace axon
