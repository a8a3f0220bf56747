#include "host_execution/direct_batch_norm.h"

#include <c10/core/DeviceGuard.h>

#include <algorithm>

#include "host_execution/batch_norm_gradients.h"
#include "host_execution/batch_norm_statistics.h"
#include "host_execution/direct_launch.h"

namespace axon {
namespace {

using direct::DirectOperator;

bool defined(const std::optional<at::Tensor>& operand) { return operand.has_value() && operand->defined(); }

// An optional per-channel operand the kernels take: absent, or a contiguous
// float32 vector of `channels` on the input's device.
bool takes_channel_operand(const std::optional<at::Tensor>& operand, const at::Tensor& input, int64_t channels) {
  if (!defined(operand)) return true;
  return direct::direct_operand(*operand) && operand->scalar_type() == at::kFloat && operand->dim() == 1 &&
         operand->size(0) == channels && operand->is_contiguous() && operand->device() == input.device();
}

// Dense channels-last data that is not also contiguous (where it is both, the CPU takes its contiguous path).
bool channels_last_only(const at::Tensor& tensor) {
  const auto format = tensor.dim() == 4 ? c10::MemoryFormat::ChannelsLast : c10::MemoryFormat::ChannelsLast3d;
  return (tensor.dim() == 4 || tensor.dim() == 5) && !tensor.is_contiguous() && tensor.is_contiguous(format);
}

// float32 data of 3 or more dimensions on a direct device.
bool direct_data(const at::Tensor& tensor) {
  return direct::direct_operand(tensor) && tensor.scalar_type() == at::kFloat && tensor.dim() >= 3 &&
         direct::direct_device(tensor.device());
}

ChannelShape channel_shape(const at::Tensor& input) {
  ChannelShape shape;
  shape.batch = input.size(0);
  shape.channels = input.size(1);
  shape.positions = input.numel() / std::max<int64_t>(1, shape.batch * shape.channels);
  return shape;
}

struct ForwardCall {
  ChannelShape shape;
  bool channels_last = false;
};

std::optional<ForwardCall> direct_forward(const at::Tensor& input, const std::optional<at::Tensor>& weight,
                                          const std::optional<at::Tensor>& bias,
                                          const std::optional<at::Tensor>& running_mean,
                                          const std::optional<at::Tensor>& running_var, bool training) {
  if (!training || !direct_data(input)) return std::nullopt;
  ForwardCall call;
  if (!input.is_contiguous()) {
    if (!channels_last_only(input)) return std::nullopt;
    call.channels_last = true;
  }
  call.shape = channel_shape(input);
  // One element per channel (the unbiased variance divides by zero) or none: the CPU's own rules.
  if (input.numel() == 0 || call.shape.batch * call.shape.positions < 2) return std::nullopt;
  if (defined(running_mean) != defined(running_var)) return std::nullopt;
  for (const auto* operand : {&weight, &bias, &running_mean, &running_var}) {
    if (!takes_channel_operand(*operand, input, call.shape.channels)) return std::nullopt;
  }
  return call;
}

// Queues axon's forward kernel for `call`; returns output, saved mean and
// saved inverse standard deviation (the running statistics are updated in place).
std::tuple<at::Tensor, at::Tensor, at::Tensor> queue_forward(
    const DirectOperator& op, const ForwardCall& call, const at::Tensor& input, const std::optional<at::Tensor>& weight,
    const std::optional<at::Tensor>& bias, const std::optional<at::Tensor>& running_mean,
    const std::optional<at::Tensor>& running_var, double momentum, double eps) {
  const c10::DeviceGuard guard(input.device());
  // The CPU lays the output out as the input suggests: the same bytes as the kernel's layout, the CPU's strides.
  at::Tensor output = direct::fresh(input.sizes(), at::kFloat, input.suggest_memory_format());
  at::Tensor save_mean = direct::fresh({call.shape.channels}, at::kFloat);
  at::Tensor save_invstd = direct::fresh({call.shape.channels}, at::kFloat);
  // Absent operands stand in the input's slot (a tensor given twice gets one alias) and reach the kernel as null.
  const bool has_weight = defined(weight), has_bias = defined(bias), has_running = defined(running_mean);
  const at::Tensor& weight_slot = has_weight ? *weight : input;
  const at::Tensor& bias_slot = has_bias ? *bias : input;
  const at::Tensor& mean_slot = has_running ? *running_mean : input;
  const at::Tensor& var_slot = has_running ? *running_var : input;
  direct::queue_over_aliases<8>(
      op.kernel_name(), input.device(),
      {&input, &weight_slot, &bias_slot, &mean_slot, &var_slot, &output, &save_mean, &save_invstd},
      [call, momentum, eps, has_weight, has_bias, has_running](auto& t) {
        BatchNormOperands operands;
        operands.input = t[0].template const_data_ptr<float>();
        operands.weight = has_weight ? t[1].template const_data_ptr<float>() : nullptr;
        operands.bias = has_bias ? t[2].template const_data_ptr<float>() : nullptr;
        operands.running_mean = has_running ? t[3].template mutable_data_ptr<float>() : nullptr;
        operands.running_var = has_running ? t[4].template mutable_data_ptr<float>() : nullptr;
        operands.output = t[5].template mutable_data_ptr<float>();
        operands.save_mean = t[6].template mutable_data_ptr<float>();
        operands.save_invstd = t[7].template mutable_data_ptr<float>();
        if (call.channels_last) {
          batch_norm_training_channels_last(operands, call.shape, momentum, eps);
        } else {
          batch_norm_training(operands, call.shape, momentum, eps);
        }
      });
  return {output, save_mean, save_invstd};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> three_tensors(const torch::jit::Stack& results) {
  auto tensor = [&](size_t i) { return results[i].isNone() ? at::Tensor() : results[i].toTensor(); };
  return {tensor(0), tensor(1), tensor(2)};
}

// A forward call: axon's kernel where it takes the call, else `generic()`.
template <class Generic>
std::tuple<at::Tensor, at::Tensor, at::Tensor> forward(const DirectOperator& op, const at::Tensor& input,
                                                       const std::optional<at::Tensor>& weight,
                                                       const std::optional<at::Tensor>& bias,
                                                       const std::optional<at::Tensor>& running_mean,
                                                       const std::optional<at::Tensor>& running_var, bool training,
                                                       double momentum, double eps, Generic generic) {
  const auto call = direct_forward(input, weight, bias, running_mean, running_var, training);
  if (!call) return three_tensors(generic());
  return queue_forward(op, *call, input, weight, bias, running_mean, running_var, momentum, eps);
}

}  // namespace

std::tuple<at::Tensor, at::Tensor, at::Tensor> direct_native_batch_norm(const at::Tensor& input,
                                                                        const std::optional<at::Tensor>& weight,
                                                                        const std::optional<at::Tensor>& bias,
                                                                        const std::optional<at::Tensor>& running_mean,
                                                                        const std::optional<at::Tensor>& running_var,
                                                                        bool training, double momentum, double eps) {
  static const DirectOperator op("native_batch_norm");
  return forward(op, input, weight, bias, running_mean, running_var, training, momentum, eps, [&] {
    return op.generic_results(input, weight, bias, running_mean, running_var, training, momentum, eps);
  });
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> direct_native_batch_norm_legit(
    const at::Tensor& input, const std::optional<at::Tensor>& weight, const std::optional<at::Tensor>& bias,
    at::Tensor& running_mean, at::Tensor& running_var, bool training, double momentum, double eps) {
  static const DirectOperator op("_native_batch_norm_legit");
  return forward(op, input, weight, bias, running_mean, running_var, training, momentum, eps, [&] {
    return op.generic_results(input, weight, bias, running_mean, running_var, training, momentum, eps);
  });
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> direct_native_batch_norm_legit_no_stats(
    const at::Tensor& input, const std::optional<at::Tensor>& weight, const std::optional<at::Tensor>& bias,
    bool training, double momentum, double eps) {
  static const DirectOperator op("_native_batch_norm_legit.no_stats");
  return forward(op, input, weight, bias, std::nullopt, std::nullopt, training, momentum, eps,
                 [&] { return op.generic_results(input, weight, bias, training, momentum, eps); });
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> direct_native_batch_norm_backward(
    const at::Tensor& grad_output, const at::Tensor& input, const std::optional<at::Tensor>& weight,
    const std::optional<at::Tensor>& running_mean, const std::optional<at::Tensor>& running_var,
    const std::optional<at::Tensor>& save_mean, const std::optional<at::Tensor>& save_invstd, bool training, double eps,
    std::array<bool, 3> output_mask) {
  static const DirectOperator op("native_batch_norm_backward");
  // Training calls on channels-last float32 data whose gradient is laid out alike; the saved statistics given.
  const bool direct = training && direct_data(input) && channels_last_only(input) && input.numel() > 0 &&
                      direct::direct_operand(grad_output) && grad_output.scalar_type() == at::kFloat &&
                      grad_output.sizes() == input.sizes() && channels_last_only(grad_output) &&
                      grad_output.device() == input.device() && defined(save_mean) && defined(save_invstd) &&
                      takes_channel_operand(weight, input, input.size(1)) &&
                      takes_channel_operand(save_mean, input, input.size(1)) &&
                      takes_channel_operand(save_invstd, input, input.size(1));
  if (!direct) {
    return three_tensors(op.generic_results(grad_output, input, weight, running_mean, running_var, save_mean,
                                            save_invstd, training, eps, output_mask));
  }
  const c10::DeviceGuard guard(input.device());
  const int64_t channels = input.size(1), rows = input.numel() / channels;
  at::Tensor grad_input, grad_weight, grad_bias;
  if (output_mask[0]) grad_input = direct::fresh(input.sizes(), at::kFloat, input.suggest_memory_format());
  if (output_mask[1]) grad_weight = direct::fresh({channels}, at::kFloat);
  if (output_mask[2]) grad_bias = direct::fresh({channels}, at::kFloat);
  const bool has_weight = defined(weight);
  const at::Tensor& weight_slot = has_weight ? *weight : input;
  const at::Tensor& input_slot = grad_input.defined() ? grad_input : input;
  const at::Tensor& weight_grad_slot = grad_weight.defined() ? grad_weight : input;
  const at::Tensor& bias_grad_slot = grad_bias.defined() ? grad_bias : input;
  direct::queue_over_aliases<8>(
      op.kernel_name(), input.device(),
      {&grad_output, &input, &weight_slot, &*save_mean, &*save_invstd, &input_slot, &weight_grad_slot, &bias_grad_slot},
      [rows, channels, has_weight, output_mask](auto& t) {
        BatchNormGradientOperands operands;
        operands.grad_output = t[0].template const_data_ptr<float>();
        operands.input = t[1].template const_data_ptr<float>();
        operands.weight = has_weight ? t[2].template const_data_ptr<float>() : nullptr;
        operands.save_mean = t[3].template const_data_ptr<float>();
        operands.save_invstd = t[4].template const_data_ptr<float>();
        operands.grad_input = output_mask[0] ? t[5].template mutable_data_ptr<float>() : nullptr;
        operands.grad_weight = output_mask[1] ? t[6].template mutable_data_ptr<float>() : nullptr;
        operands.grad_bias = output_mask[2] ? t[7].template mutable_data_ptr<float>() : nullptr;
        batch_norm_backward_channels_last(operands, rows, channels);
      });
  return {grad_input, grad_weight, grad_bias};
}

}  // namespace axon
