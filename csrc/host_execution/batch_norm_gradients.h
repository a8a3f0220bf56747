// Axon's kernel for batch norm's training backward on channels-last float32
// data (direct_batch_norm.h decides which calls come here).
//
// Why a kernel of its own: the CPU's channels-last backward calls a vector
// helper per row for each of its two sums and makes its buffers as tensors;
// at 32x32x32x32 it took 410-580 us where its passes over memory alone take
// about 170. This kernel keeps the CPU's arithmetic: each thread's share of
// the rows (split as at::parallel_for splits them) summed in float per
// channel, the threads' sums added in double, and the input gradient's
// float steps, fused where the CPU's vector code fuses them; so its results
// equal the CPU's run with the team's thread count.
#pragma once

#include <cstdint>

namespace axon {

// `rows` rows of `channels` floats; `weight` may be null (ones), and each
// result may be null (not asked for).
struct BatchNormGradientOperands {
  const float* grad_output = nullptr;
  const float* input = nullptr;
  const float* weight = nullptr;
  const float* save_mean = nullptr;
  const float* save_invstd = nullptr;
  float* grad_input = nullptr;
  float* grad_weight = nullptr;
  float* grad_bias = nullptr;
};

// native_batch_norm_backward(train=True) on channels-last data. Splits the
// work with at::parallel_for: call it on the device's worker.
void batch_norm_backward_channels_last(const BatchNormGradientOperands& operands, int64_t rows, int64_t channels);

}  // namespace axon
