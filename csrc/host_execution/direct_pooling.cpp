#include "host_execution/direct_pooling.h"

#include <ATen/native/Pool.h>

#include <array>
#include <limits>
#include <utility>

#include "host_execution/direct_launch.h"
#include "host_execution/pooling_planes.h"

namespace axon {
namespace {

using direct::DirectOperator;

// One pooling argument for both spatial axes: one value for both, or two.
// `fallback` stands for an empty list (stride's default, the kernel size).
std::optional<std::array<int64_t, 2>> axis_pair(at::IntArrayRef list, std::optional<std::array<int64_t, 2>> fallback) {
  if (list.empty()) return fallback;
  if (list.size() > 2) return std::nullopt;
  const std::array<int64_t, 2> pair = {list[0], list.back()};
  for (const int64_t value : pair) {
    if (value < 0 || value > std::numeric_limits<int32_t>::max()) return std::nullopt;
  }
  return pair;
}

// The geometry of a pooling call that axon's own kernels compute: a
// contiguous float (or, where `bfloat16_too`, bfloat16) input of 3 or 4
// non-empty dimensions whose layout the CPU keeps (not one that also reads
// as channels-last), and arguments the CPU's meta kernel accepts (positive
// kernel, stride and dilation, padding at most half the kernel, an output of
// at least one element). Anything else goes to the generic kernel, which
// raises the CPU's errors at the call.
std::optional<PoolGeometry> direct_geometry(const at::Tensor& input, at::IntArrayRef kernel_size,
                                            at::IntArrayRef stride, at::IntArrayRef padding, at::IntArrayRef dilation,
                                            bool ceil_mode, bool bfloat16_too = false) {
  const bool dtype = input.scalar_type() == at::kFloat || (bfloat16_too && input.scalar_type() == at::kBFloat16);
  if (!direct::direct_operand(input) || !dtype || (input.dim() != 3 && input.dim() != 4) || input.numel() == 0 ||
      !input.is_contiguous() || input.suggest_memory_format() != c10::MemoryFormat::Contiguous ||
      !direct::direct_device(input.device())) {
    return std::nullopt;
  }
  const auto kernel = axis_pair(kernel_size, std::nullopt);
  if (!kernel.has_value()) return std::nullopt;
  const auto step = axis_pair(stride, kernel);
  const auto pad = axis_pair(padding, std::nullopt);
  const auto dilate = axis_pair(dilation, std::nullopt);
  if (!step || !pad || !dilate) return std::nullopt;
  for (int axis = 0; axis < 2; ++axis) {
    if ((*kernel)[axis] < 1 || (*step)[axis] < 1 || (*dilate)[axis] < 1 || (*pad)[axis] > (*kernel)[axis] / 2) {
      return std::nullopt;
    }
  }
  PoolGeometry g{};
  g.height = input.size(-2);
  g.width = input.size(-1);
  g.kernel_h = (*kernel)[0], g.kernel_w = (*kernel)[1];
  g.stride_h = (*step)[0], g.stride_w = (*step)[1];
  g.pad_h = (*pad)[0], g.pad_w = (*pad)[1];
  g.dilation_h = (*dilate)[0], g.dilation_w = (*dilate)[1];
  g.out_height =
      at::native::pooling_output_shape<int64_t>(g.height, g.kernel_h, g.pad_h, g.stride_h, g.dilation_h, ceil_mode);
  g.out_width =
      at::native::pooling_output_shape<int64_t>(g.width, g.kernel_w, g.pad_w, g.stride_w, g.dilation_w, ceil_mode);
  if (g.out_height < 1 || g.out_width < 1 || !pooling_planes_supported(g)) return std::nullopt;
  return g;
}

// The pooling's output sizes: `input`'s leading sizes and the geometry's plane.
c10::SmallVector<int64_t, 4> output_sizes(const at::Tensor& input, const PoolGeometry& g) {
  c10::SmallVector<int64_t, 4> sizes(input.sizes().begin(), input.sizes().end());
  sizes[sizes.size() - 2] = g.out_height;
  sizes[sizes.size() - 1] = g.out_width;
  return sizes;
}

at::Tensor fresh_output(const at::Tensor& input, const PoolGeometry& g, at::ScalarType dtype) {
  return direct::fresh(output_sizes(input, g), dtype);
}

int64_t planes_of(const at::Tensor& input, const PoolGeometry& g) { return input.numel() / (g.height * g.width); }

// The geometry of an average pooling call (forward or gradient) axon's kernels take: no dilation, and no
// zero divisor (the CPU refuses one, at the call, through the generic kernel).
std::optional<PoolGeometry> average_geometry(const at::Tensor& input, at::IntArrayRef kernel_size,
                                             at::IntArrayRef stride, at::IntArrayRef padding, bool ceil_mode,
                                             std::optional<int64_t> divisor_override) {
  if (divisor_override.has_value() && *divisor_override == 0) return std::nullopt;
  const std::array<int64_t, 1> no_dilation = {1};
  return direct_geometry(input, kernel_size, stride, padding, no_dilation, ceil_mode);
}

}  // namespace

std::tuple<at::Tensor, at::Tensor> direct_max_pool2d_with_indices(const at::Tensor& input, at::IntArrayRef kernel_size,
                                                                  at::IntArrayRef stride, at::IntArrayRef padding,
                                                                  at::IntArrayRef dilation, bool ceil_mode) {
  static const DirectOperator op("max_pool2d_with_indices");
  if (const auto geometry =
          direct_geometry(input, kernel_size, stride, padding, dilation, ceil_mode, /*bfloat16_too=*/true)) {
    const c10::DeviceGuard guard(input.device());
    at::Tensor values = fresh_output(input, *geometry, input.scalar_type());
    at::Tensor indices = fresh_output(input, *geometry, at::kLong);
    direct::queue_over_aliases<3>(op.kernel_name(), input.device(), {&input, &values, &indices},
                                  [g = *geometry, planes = planes_of(input, *geometry)](std::array<at::Tensor, 3>& t) {
                                    int64_t* indices = t[2].mutable_data_ptr<int64_t>();
                                    if (t[0].scalar_type() == at::kBFloat16) {
                                      max_pool2d_planes(t[0].const_data_ptr<c10::BFloat16>(),
                                                        t[1].mutable_data_ptr<c10::BFloat16>(), indices, planes, g);
                                    } else {
                                      max_pool2d_planes(t[0].const_data_ptr<float>(), t[1].mutable_data_ptr<float>(),
                                                        indices, planes, g);
                                    }
                                  });
    return {std::move(values), std::move(indices)};
  }
  torch::jit::Stack results = op.generic_results(input, kernel_size, stride, padding, dilation, ceil_mode);
  return {std::move(results[0]).toTensor(), std::move(results[1]).toTensor()};
}

at::Tensor direct_avg_pool2d(const at::Tensor& input, at::IntArrayRef kernel_size, at::IntArrayRef stride,
                             at::IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                             std::optional<int64_t> divisor_override) {
  static const DirectOperator op("avg_pool2d");
  if (const auto geometry = average_geometry(input, kernel_size, stride, padding, ceil_mode, divisor_override)) {
    const c10::DeviceGuard guard(input.device());
    at::Tensor values = fresh_output(input, *geometry, at::kFloat);
    direct::queue_over_aliases<2>(
        op.kernel_name(), input.device(), {&input, &values},
        [g = *geometry, planes = planes_of(input, *geometry),
         divide = AverageDivisor{count_include_pad, divisor_override}](std::array<at::Tensor, 2>& t) {
          avg_pool2d_planes(t[0].const_data_ptr<float>(), t[1].mutable_data_ptr<float>(), planes, g, divide);
        });
    return values;
  }
  return op.generic(input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override).toTensor();
}

at::Tensor direct_avg_pool2d_backward(const at::Tensor& grad_output, const at::Tensor& input,
                                      at::IntArrayRef kernel_size, at::IntArrayRef stride, at::IntArrayRef padding,
                                      bool ceil_mode, bool count_include_pad, std::optional<int64_t> divisor_override) {
  static const DirectOperator op("avg_pool2d_backward");
  const auto geometry = average_geometry(input, kernel_size, stride, padding, ceil_mode, divisor_override);
  // The gradient: float, on the input's device, contiguous, of the pooling's output sizes (the CPU checks
  // them; other gradients go to it and raise).
  if (geometry && avg_pool2d_gradient_vectorized(*geometry) && direct::direct_operand(grad_output) &&
      grad_output.scalar_type() == at::kFloat && grad_output.device() == input.device() &&
      grad_output.is_contiguous() && grad_output.suggest_memory_format() == c10::MemoryFormat::Contiguous &&
      grad_output.sizes().equals(output_sizes(input, *geometry))) {
    const c10::DeviceGuard guard(input.device());
    at::Tensor grad_input = direct::fresh(input.sizes(), at::kFloat);
    direct::queue_over_aliases<2>(
        op.kernel_name(), input.device(), {&grad_output, &grad_input},
        [g = *geometry, planes = planes_of(input, *geometry),
         divide = AverageDivisor{count_include_pad, divisor_override}](std::array<at::Tensor, 2>& t) {
          avg_pool2d_gradient_planes(t[0].const_data_ptr<float>(), t[1].mutable_data_ptr<float>(), planes, g, divide);
        });
    return grad_input;
  }
  return op.generic(grad_output, input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)
      .toTensor();
}

}  // namespace axon
