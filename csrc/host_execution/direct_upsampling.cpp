#include "host_execution/direct_upsampling.h"

#include <array>

#include "host_execution/direct_launch.h"
#include "host_execution/nearest_planes.h"

namespace axon {
namespace {

// The dtypes the CPU's nearest kernels take (it refuses integers other than
// uint8, and booleans).
bool nearest_dtype(at::ScalarType type) {
  switch (type) {
    case at::kFloat:
    case at::kDouble:
    case at::kHalf:
    case at::kBFloat16:
    case at::kByte:
      return true;
    default:
      return false;
  }
}

// A resize axon's kernel takes: a contiguous 4-D input with elements, whose
// layout the CPU keeps (not one that also reads as channels-last), to an
// output of two positive sizes.
std::optional<NearestResize> direct_resize(const at::Tensor& input, at::IntArrayRef output_size,
                                           std::optional<double> scales_h, std::optional<double> scales_w, bool exact) {
  if (!direct::direct_operand(input) || !nearest_dtype(input.scalar_type()) || input.dim() != 4 || input.numel() == 0 ||
      !input.is_contiguous() || input.suggest_memory_format() != c10::MemoryFormat::Contiguous ||
      !direct::direct_device(input.device()) || output_size.size() != 2 || output_size[0] < 1 || output_size[1] < 1) {
    return std::nullopt;
  }
  return NearestResize{input.size(2), input.size(3), output_size[0], output_size[1], scales_h, scales_w, exact};
}

at::Tensor resize(const direct::DirectOperator& op, const at::Tensor& input, at::IntArrayRef output_size,
                  std::optional<double> scales_h, std::optional<double> scales_w, bool exact) {
  if (const auto shape = direct_resize(input, output_size, scales_h, scales_w, exact)) {
    const c10::DeviceGuard guard(input.device());
    at::Tensor out =
        direct::fresh({input.size(0), input.size(1), shape->out_height, shape->out_width}, input.scalar_type());
    direct::queue_over_aliases<2>(
        op.kernel_name(), input.device(), {&input, &out},
        [resize = *shape, planes = input.size(0) * input.size(1)](std::array<at::Tensor, 2>& t) {
          nearest_planes(t[0].const_data_ptr(), t[1].mutable_data_ptr(), planes, t[0].element_size(), resize);
        });
    return out;
  }
  return op.generic(input, output_size, scales_h, scales_w).toTensor();
}

// A gradient axon's kernel takes: a float or double gradient, contiguous in
// the layout the CPU's kernel reads as NCHW (not also channels-last), of the
// sizes the resize gave (the CPU checks them; others go to it and raise).
std::optional<NearestResize> direct_gradient(const at::Tensor& grad_output, at::IntArrayRef output_size,
                                             at::IntArrayRef input_size, std::optional<double> scales_h,
                                             std::optional<double> scales_w, bool exact) {
  if (!direct::direct_operand(grad_output) ||
      (grad_output.scalar_type() != at::kFloat && grad_output.scalar_type() != at::kDouble) || grad_output.dim() != 4 ||
      grad_output.numel() == 0 || !grad_output.is_contiguous() ||
      grad_output.is_contiguous(c10::MemoryFormat::ChannelsLast) ||
      grad_output.suggest_memory_format() != c10::MemoryFormat::Contiguous ||
      !direct::direct_device(grad_output.device()) || output_size.size() != 2 || input_size.size() != 4) {
    return std::nullopt;
  }
  const std::array<int64_t, 4> expected = {input_size[0], input_size[1], output_size[0], output_size[1]};
  if (!grad_output.sizes().equals(expected) || input_size[2] < 1 || input_size[3] < 1) return std::nullopt;
  return NearestResize{input_size[2], input_size[3], output_size[0], output_size[1], scales_h, scales_w, exact};
}

at::Tensor gradient(const direct::DirectOperator& op, const at::Tensor& grad_output, at::IntArrayRef output_size,
                    at::IntArrayRef input_size, std::optional<double> scales_h, std::optional<double> scales_w,
                    bool exact) {
  if (const auto shape = direct_gradient(grad_output, output_size, input_size, scales_h, scales_w, exact)) {
    const c10::DeviceGuard guard(grad_output.device());
    at::Tensor grad_input = direct::fresh(input_size, grad_output.scalar_type());
    direct::queue_over_aliases<2>(
        op.kernel_name(), grad_output.device(), {&grad_output, &grad_input},
        [resize = *shape, planes = input_size[0] * input_size[1]](std::array<at::Tensor, 2>& t) {
          nearest_gradient_planes(t[0].const_data_ptr(), t[1].mutable_data_ptr(), planes,
                                  t[0].scalar_type() == at::kDouble, resize);
        });
    return grad_input;
  }
  return op.generic(grad_output, output_size, input_size, scales_h, scales_w).toTensor();
}

}  // namespace

at::Tensor direct_upsample_nearest2d(const at::Tensor& input, at::IntArrayRef output_size,
                                     std::optional<double> scales_h, std::optional<double> scales_w) {
  static const direct::DirectOperator op("upsample_nearest2d");
  return resize(op, input, output_size, scales_h, scales_w, /*exact=*/false);
}

at::Tensor direct_upsample_nearest_exact2d(const at::Tensor& input, at::IntArrayRef output_size,
                                           std::optional<double> scales_h, std::optional<double> scales_w) {
  static const direct::DirectOperator op("_upsample_nearest_exact2d");
  return resize(op, input, output_size, scales_h, scales_w, /*exact=*/true);
}

at::Tensor direct_upsample_nearest2d_backward(const at::Tensor& grad_output, at::IntArrayRef output_size,
                                              at::IntArrayRef input_size, std::optional<double> scales_h,
                                              std::optional<double> scales_w) {
  static const direct::DirectOperator op("upsample_nearest2d_backward");
  return gradient(op, grad_output, output_size, input_size, scales_h, scales_w, /*exact=*/false);
}

at::Tensor direct_upsample_nearest_exact2d_backward(const at::Tensor& grad_output, at::IntArrayRef output_size,
                                                    at::IntArrayRef input_size, std::optional<double> scales_h,
                                                    std::optional<double> scales_w) {
  static const direct::DirectOperator op("_upsample_nearest_exact2d_backward");
  return gradient(op, grad_output, output_size, input_size, scales_h, scales_w, /*exact=*/true);
}

}  // namespace axon
