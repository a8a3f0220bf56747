#include "host_execution/convolution_meta_results.h"

#include <ATen/ops/empty.h>

#include <vector>

namespace axon {
namespace {

// Python's floor division, for a positive divisor.
int64_t floor_divide(int64_t numerator, int64_t divisor) {
  const int64_t quotient = numerator / divisor;
  return (numerator % divisor != 0 && numerator < 0) ? quotient - 1 : quotient;
}

}  // namespace

std::optional<std::vector<int64_t>> per_axis(c10::IntArrayRef values, int64_t axes) {
  if (values.size() == 1) return std::vector<int64_t>(axes, values[0]);
  if (static_cast<int64_t>(values.size()) != axes) return std::nullopt;
  return values.vec();
}

std::optional<at::Tensor> convolution_meta_result(const at::Tensor& input, const at::Tensor& weight,
                                                  c10::IntArrayRef stride, c10::IntArrayRef padding,
                                                  c10::IntArrayRef dilation, bool transposed,
                                                  c10::IntArrayRef output_padding, int64_t groups) {
  const int64_t axes = input.dim() - 2;
  if (axes < 1 || weight.dim() != input.dim()) return std::nullopt;
  const auto strides = per_axis(stride, axes), paddings = per_axis(padding, axes), dilations = per_axis(dilation, axes);
  if (!strides || !paddings || !dilations) return std::nullopt;
  // The Python kernel takes the transposed formula only where it was given an
  // output padding (a transposed call always is, as a list per axis).
  std::optional<std::vector<int64_t>> output_paddings;
  if (transposed && !output_padding.empty()) {
    output_paddings = per_axis(output_padding, axes);
    if (!output_paddings) return std::nullopt;
  }
  std::vector<int64_t> sizes{input.size(0), transposed ? groups * weight.size(1) : weight.size(0)};
  if (!transposed && weight.size(1) * groups != input.size(1)) return std::nullopt;  // "Invalid channel dimensions"
  bool any_positive = false;
  for (int64_t axis = 0; axis < axes; ++axis) {
    const int64_t length = input.size(2 + axis), kernel = weight.size(2 + axis);
    const int64_t s = (*strides)[axis], p = (*paddings)[axis], d = (*dilations)[axis];
    if (s <= 0) return std::nullopt;
    // "Kernel size can't be greater than actual input size"
    if (!transposed && length + 2 * p < d * (kernel - 1) + 1) return std::nullopt;
    const int64_t size = output_paddings ? (length - 1) * s - 2 * p + d * (kernel - 1) + (*output_paddings)[axis] + 1
                                         : floor_divide(length + 2 * p - d * (kernel - 1) - 1, s) + 1;
    if (size < 0) return std::nullopt;  // the kernel's new_empty would refuse it
    any_positive = any_positive || size > 0;
    sizes.push_back(size);
  }
  if (!any_positive) return std::nullopt;  // "Output size is too small" (refused unless some axis is positive)
  if (input.size(1) == 0) sizes[1] = 0;
  return at::empty(sizes, input.options().device(c10::kMeta));
}

std::array<at::Tensor, 3> convolution_backward_meta_results(const at::Tensor& grad_output, const at::Tensor& input,
                                                            const at::Tensor& weight, c10::IntArrayRef bias_sizes,
                                                            std::array<bool, 3> output_mask) {
  // The gradients of the input and the weight in channels-last order where
  // either operand suggests it, as the Python kernel converts them.
  const auto of_input = input.suggest_memory_format(), of_weight = weight.suggest_memory_format();
  auto format = c10::MemoryFormat::Contiguous;
  if (of_input == c10::MemoryFormat::ChannelsLast || of_weight == c10::MemoryFormat::ChannelsLast) {
    format = c10::MemoryFormat::ChannelsLast;
  } else if (of_input == c10::MemoryFormat::ChannelsLast3d || of_weight == c10::MemoryFormat::ChannelsLast3d) {
    format = c10::MemoryFormat::ChannelsLast3d;
  }
  const auto options = grad_output.options().device(c10::kMeta);
  std::array<at::Tensor, 3> results;
  if (output_mask[0]) results[0] = at::empty(input.sizes(), options.memory_format(format));
  if (output_mask[1]) results[1] = at::empty(weight.sizes(), options.memory_format(format));
  if (output_mask[2]) results[2] = at::empty(bias_sizes, options);
  return results;
}

}  // namespace axon
