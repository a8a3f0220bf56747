#include "ops/absent_meta_kernels.h"

#include <ATen/core/Tensor.h>
#include <ATen/core/stack.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/empty.h>
#include <c10/core/WrapDimMinimal.h>

namespace axon {
namespace {

using at::Tensor;

// Operators that return nothing and leave every argument's shape as it is
// (their mutable arguments are sized by the caller: cummax's values and
// indices, an optimizer's parameters and states): the meta kernel has nothing
// to do. PyTorch's Python meta kernel of _fused_adam_ does the same.
void leaves_arguments_as_they_are(const c10::OperatorHandle& op, c10::DispatchKeySet /*keys*/,
                                  torch::jit::Stack* stack) {
  torch::jit::drop(*stack, op.schema().arguments().size());
}

// logcumsumexp's result: the input's shape and dtype, contiguous, as the CPU
// kernel allocates it. The dimension is wrapped with the CPU's check.
Tensor logcumsumexp(const Tensor& self, int64_t dim) {
  c10::maybe_wrap_dim(dim, self.dim());
  return at::empty(self.sizes(), self.options());
}

Tensor& logcumsumexp_out(const Tensor& self, int64_t dim, Tensor& out) {
  c10::maybe_wrap_dim(dim, self.dim());
  at::native::resize_output(out, self.sizes());
  return out;
}

// A result of the shape and dtype of argument `Like`, contiguous, as the CPU
// kernels below allocate it (a gradient shaped like the input it is of, a
// sample shaped like its parameters); the out= overload resizes its out
// argument (the last) so.
template <size_t Like>
void shaped_like_argument(const c10::OperatorHandle& op, c10::DispatchKeySet /*keys*/, torch::jit::Stack* stack) {
  const size_t count = op.schema().arguments().size();
  const Tensor like = torch::jit::peek(*stack, Like, count).toTensor();
  Tensor result = at::empty(like.sizes(), like.options());
  torch::jit::drop(*stack, count);
  torch::jit::push(*stack, std::move(result));
}

template <size_t Like>
void shaped_like_argument_out(const c10::OperatorHandle& op, c10::DispatchKeySet /*keys*/, torch::jit::Stack* stack) {
  const size_t count = op.schema().arguments().size();
  const Tensor like = torch::jit::peek(*stack, Like, count).toTensor();
  Tensor out = torch::jit::peek(*stack, count - 1, count).toTensor();
  at::native::resize_output(out, like.sizes());
  torch::jit::drop(*stack, count);
  torch::jit::push(*stack, std::move(out));
}

MetaKernelEntry no_op(const char* name, const char* overload) {
  return {name, overload, c10::KernelFunction::makeFromBoxedFunction<&leaves_arguments_as_they_are>()};
}

template <size_t Like>
MetaKernelEntry shaped_like(const char* name, const char* overload) {
  return {name, overload, c10::KernelFunction::makeFromBoxedFunction<&shaped_like_argument<Like>>()};
}

template <size_t Like>
MetaKernelEntry shaped_like_out(const char* name, const char* overload) {
  return {name, overload, c10::KernelFunction::makeFromBoxedFunction<&shaped_like_argument_out<Like>>()};
}

}  // namespace

std::vector<MetaKernelEntry> absent_meta_kernel_entries() {
  return {
      no_op("aten::_cummax_helper", ""),
      no_op("aten::_cummin_helper", ""),
      no_op("aten::_fused_sgd_", ""),
      no_op("aten::_fused_sgd_", "tensor_lr"),
      no_op("aten::_fused_adagrad_", ""),
      no_op("aten::_fused_adagrad_", "tensor_lr"),
      no_op("aten::_fused_adam_", "tensor_lr"),
      no_op("aten::_fused_adamw_", "tensor_lr"),
      {"aten::_logcumsumexp", "", c10::KernelFunction::makeFromUnboxedFunction(TORCH_FN(logcumsumexp))},
      {"aten::_logcumsumexp", "out", c10::KernelFunction::makeFromUnboxedFunction(TORCH_FN(logcumsumexp_out))},
      // (grad, log_probs, ...): log_probs' gradient. The forward with lengths
      // as tensors stays synchronous: its log_alpha's size is the longest
      // target length, a value in a tensor.
      shaped_like<1>("aten::_ctc_loss_backward", ""),
      shaped_like<1>("aten::_ctc_loss_backward", "Tensor"),
      // (grad_output, self, ...): self's gradient.
      shaped_like<1>("aten::multi_margin_loss_backward", ""),
      shaped_like_out<1>("aten::multi_margin_loss_backward", "grad_input"),
      shaped_like<1>("aten::multilabel_margin_loss_backward", ""),
      shaped_like_out<1>("aten::multilabel_margin_loss_backward", "grad_input"),
      // Samples and reparameterized gradients of the Binomial, Dirichlet and
      // Gamma distributions, shaped like their first argument.
      shaped_like<0>("aten::binomial", ""),
      shaped_like<0>("aten::_sample_dirichlet", ""),
      shaped_like<0>("aten::_standard_gamma_grad", ""),
      shaped_like<0>("aten::_dirichlet_grad", ""),
  };
}

}  // namespace axon
