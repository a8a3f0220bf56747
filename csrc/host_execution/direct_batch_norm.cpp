#include "host_execution/direct_batch_norm.h"

#include <c10/core/DeviceGuard.h>

#include <algorithm>

#include "host_execution/batch_norm_statistics.h"
#include "host_execution/direct_launch.h"

namespace axon {
namespace {

using direct::DirectOperator;

bool defined(const std::optional<at::Tensor>& operand) { return operand.has_value() && operand->defined(); }

// An optional per-channel operand the kernel takes: absent, or a contiguous
// float32 vector of `channels` on the input's device.
bool takes_channel_operand(const std::optional<at::Tensor>& operand, const at::Tensor& input, int64_t channels) {
  if (!defined(operand)) return true;
  return direct::direct_operand(*operand) && operand->scalar_type() == at::kFloat && operand->dim() == 1 &&
         operand->size(0) == channels && operand->is_contiguous() && operand->device() == input.device();
}

std::optional<ChannelShape> direct_shape(const at::Tensor& input, const std::optional<at::Tensor>& weight,
                                         const std::optional<at::Tensor>& bias,
                                         const std::optional<at::Tensor>& running_mean,
                                         const std::optional<at::Tensor>& running_var, bool training) {
  if (!training || !direct::direct_operand(input) || input.scalar_type() != at::kFloat || input.dim() < 3 ||
      !input.is_contiguous() || !direct::direct_device(input.device())) {
    return std::nullopt;
  }
  ChannelShape shape;
  shape.batch = input.size(0);
  shape.channels = input.size(1);
  shape.positions = input.numel() / std::max<int64_t>(1, shape.batch * shape.channels);
  // One element per channel (the unbiased variance divides by zero) or none: the CPU's own rules.
  if (input.numel() == 0 || shape.batch * shape.positions < 2) return std::nullopt;
  if (defined(running_mean) != defined(running_var)) return std::nullopt;
  for (const auto* operand : {&weight, &bias, &running_mean, &running_var}) {
    if (!takes_channel_operand(*operand, input, shape.channels)) return std::nullopt;
  }
  return shape;
}

}  // namespace

std::tuple<at::Tensor, at::Tensor, at::Tensor> direct_native_batch_norm(const at::Tensor& input,
                                                                        const std::optional<at::Tensor>& weight,
                                                                        const std::optional<at::Tensor>& bias,
                                                                        const std::optional<at::Tensor>& running_mean,
                                                                        const std::optional<at::Tensor>& running_var,
                                                                        bool training, double momentum, double eps) {
  static const DirectOperator op("native_batch_norm");
  const auto shape = direct_shape(input, weight, bias, running_mean, running_var, training);
  if (!shape) {
    auto results = op.generic_results(input, weight, bias, running_mean, running_var, training, momentum, eps);
    return {results[0].toTensor(), results[1].toTensor(), results[2].toTensor()};
  }
  const c10::DeviceGuard guard(input.device());
  at::Tensor output = direct::fresh(input.sizes(), at::kFloat);
  at::Tensor save_mean = direct::fresh({shape->channels}, at::kFloat);
  at::Tensor save_invstd = direct::fresh({shape->channels}, at::kFloat);
  // Absent operands stand in the input's slot (a tensor given twice gets one alias) and reach the kernel as null.
  const bool has_weight = defined(weight), has_bias = defined(bias), has_running = defined(running_mean);
  const at::Tensor& weight_slot = has_weight ? *weight : input;
  const at::Tensor& bias_slot = has_bias ? *bias : input;
  const at::Tensor& mean_slot = has_running ? *running_mean : input;
  const at::Tensor& var_slot = has_running ? *running_var : input;
  direct::queue_over_aliases<8>(
      op.kernel_name(), input.device(),
      {&input, &weight_slot, &bias_slot, &mean_slot, &var_slot, &output, &save_mean, &save_invstd},
      [shape = *shape, momentum, eps, has_weight, has_bias, has_running](auto& t) {
        BatchNormOperands operands;
        operands.input = t[0].template const_data_ptr<float>();
        operands.weight = has_weight ? t[1].template const_data_ptr<float>() : nullptr;
        operands.bias = has_bias ? t[2].template const_data_ptr<float>() : nullptr;
        operands.running_mean = has_running ? t[3].template mutable_data_ptr<float>() : nullptr;
        operands.running_var = has_running ? t[4].template mutable_data_ptr<float>() : nullptr;
        operands.output = t[5].template mutable_data_ptr<float>();
        operands.save_mean = t[6].template mutable_data_ptr<float>();
        operands.save_invstd = t[7].template mutable_data_ptr<float>();
        batch_norm_training(operands, shape, momentum, eps);
      });
  return {output, save_mean, save_invstd};
}

}  // namespace axon
