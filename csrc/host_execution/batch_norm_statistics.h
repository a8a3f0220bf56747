// Axon's kernel for batch norm's training forward on contiguous float32
// data (direct_batch_norm.h decides which calls come here).
//
// Why a kernel of its own: the CPU gathers each channel's statistics one
// element at a time, in a single running double sum (twice: the mean, then
// the squared deviations), about 1.6 GB/s on the hosts measured: its batch
// norm forward over 32x32x32x32 floats took 650-700 us, of which 72% was
// the statistics, against 220 us for the same data channels-last, whose
// statistics it vectorizes. This kernel keeps the CPU's arithmetic (double
// sums, each squared deviation rounded to float first; the float and double
// steps of its updates) with the sums split over vector lanes, so the
// statistics differ from the CPU's in the last bit of a float rarely, and
// writes the output as the CPU does.
#pragma once

#include <cstdint>

namespace axon {

// Contiguous data viewed as [batch, channels, positions].
struct ChannelShape {
  int64_t batch = 1;
  int64_t channels = 1;
  int64_t positions = 1;
};

// The per-channel operands; weight, bias and the running statistics may be
// null (the running ones together).
struct BatchNormOperands {
  const float* input = nullptr;
  const float* weight = nullptr;
  const float* bias = nullptr;
  float* running_mean = nullptr;
  float* running_var = nullptr;
  float* output = nullptr;
  float* save_mean = nullptr;
  float* save_invstd = nullptr;
};

// native_batch_norm(training=True) for batch*positions >= 2 elements per
// channel. Splits the work with at::parallel_for: call it on the device's worker.
void batch_norm_training(const BatchNormOperands& operands, const ChannelShape& shape, double momentum, double eps);

// The same for channels-last data: `shape.batch * shape.positions` rows of
// `shape.channels` floats. The CPU sums each thread's share of the rows in
// float per channel and adds the threads' sums in double, so its statistics
// depend on how at::parallel_for splits the rows; this kernel splits them the
// same way (its results equal the CPU's run with the team's thread count). Why
// axon's own: the CPU's kernel calls a vector helper per row and makes its
// buffers as tensors, 2.5-3.5x the time of the passes over memory themselves.
void batch_norm_training_channels_last(const BatchNormOperands& operands, const ChannelShape& shape, double momentum,
                                       double eps);

}  // namespace axon
