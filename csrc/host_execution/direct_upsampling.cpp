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

}  // namespace axon
