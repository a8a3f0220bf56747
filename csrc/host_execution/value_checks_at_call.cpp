#include "host_execution/value_checks_at_call.h"

#include <ATen/ATen.h>

#include "host_execution/stream_kernel.h"

namespace axon {
namespace {

// The CPU's check (ATen's CHECK_NORMAL_TENSOR_STD), with its messages.
void check_normal_std(const at::Tensor& std) {
  TORCH_CHECK(!std.is_complex(), "normal expects standard deviation to be non-complex");
  TORCH_CHECK(std.numel() == 0 || std.min().ge(0).item<bool>(), "normal expects all elements of std >= 0.0");
}

}  // namespace

at::Tensor normal_tensor_tensor(const at::Tensor& mean, const at::Tensor& std, std::optional<at::Generator> generator) {
  check_normal_std(std);
  return stream_kernel_by_name("aten::normal", "Tensor_Tensor", {mean, std, generator}).toTensor();
}

at::Tensor& normal_tensor_tensor_out(const at::Tensor& mean, const at::Tensor& std,
                                     std::optional<at::Generator> generator, at::Tensor& out) {
  check_normal_std(std);
  stream_kernel_by_name("aten::normal", "Tensor_Tensor_out", {mean, std, generator, out});
  return out;
}

at::Tensor normal_float_tensor(double mean, const at::Tensor& std, std::optional<at::Generator> generator) {
  check_normal_std(std);
  return stream_kernel_by_name("aten::normal", "float_Tensor", {mean, std, generator}).toTensor();
}

at::Tensor& normal_float_tensor_out(double mean, const at::Tensor& std, std::optional<at::Generator> generator,
                                    at::Tensor& out) {
  check_normal_std(std);
  stream_kernel_by_name("aten::normal", "float_Tensor_out", {mean, std, generator, out});
  return out;
}

at::Tensor& masked_scatter_(at::Tensor& self, const at::Tensor& mask, const at::Tensor& source) {
  // Only where the source may be short: a source with an element for every
  // element of self cannot run out, and needs no read-back. Malformed calls
  // (a mask of another dtype or shape) get the kernel's own checks.
  if (mask.scalar_type() == at::kBool && at::is_expandable_to(mask.sizes(), self.sizes()) &&
      source.numel() < self.numel()) {
    const int64_t ones = mask.expand(self.sizes()).sum().item<int64_t>();
    TORCH_CHECK(ones <= source.numel(), "Number of elements of source < number of ones in mask");
  }
  stream_kernel_by_name("aten::masked_scatter_", "", {self, mask, source});
  return self;
}

void check_histc_range(const at::Tensor& self, int64_t bins, const at::Scalar& min, const at::Scalar& max) {
  if (bins <= 0 || self.numel() == 0 || min.toDouble() != max.toDouble()) return;
  if (!at::isFloatingType(self.scalar_type()) || at::isfinite(self).all().item<bool>()) return;
  // Not finite: the CPU kernel on the data raises its own message.
  at::histc(self.cpu(), bins, min, max);
}

}  // namespace axon
