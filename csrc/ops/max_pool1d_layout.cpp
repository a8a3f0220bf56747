// max_pool1d on axon: the CPU's result layout.
//
// max_pool1d is composite. On the CPU, a call that needs no gradient (no
// input requiring one while grad mode is on, no forward-mode tangent, no
// tensor subclass) runs a kernel of its own into a new contiguous tensor.
// On every other device the composite returns max_pool1d_with_indices'
// values instead, which keep the input's layout (max_pool2d over an
// unsqueezed view). A strided input then gave axon other strides than the
// CPU (the conformance harness's layout check). Axon runs the composite and,
// where the CPU would have used its own kernel, returns the result
// contiguous, as the CPU does (a copy only when it is not contiguous
// already). Registered for PrivateUse1, and for AutogradPrivateUse1 so that
// gradients still flow through the composite's operators.
#include <ATen/TensorSubclassLikeUtils.h>
#include <ATen/core/grad_mode.h>
#include <ATen/ops/max_pool1d_native.h>
#include <torch/library.h>

namespace axon {
namespace {

at::Tensor max_pool1d(const at::Tensor& self, at::IntArrayRef kernel_size, at::IntArrayRef stride,
                      at::IntArrayRef padding, at::IntArrayRef dilation, bool ceil_mode) {
  at::Tensor result = at::native::max_pool1d(self, kernel_size, stride, padding, dilation, ceil_mode);
  const bool cpu_own_kernel = !(self.requires_grad() && at::GradMode::is_enabled()) &&
                              !self._fw_grad(/*level=*/0).defined() && !at::isTensorSubclassLike(self);
  return cpu_own_kernel ? result.contiguous() : result;
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) { m.impl("max_pool1d", TORCH_FN(max_pool1d)); }

TORCH_LIBRARY_IMPL(aten, AutogradPrivateUse1, m) { m.impl("max_pool1d", TORCH_FN(max_pool1d)); }

}  // namespace
}  // namespace axon
