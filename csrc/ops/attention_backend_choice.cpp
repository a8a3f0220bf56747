// scaled_dot_product_attention's backend choice on axon: the CPU's.
//
// ATen's scaled_dot_product_attention asks _fused_sdp_choice_stub which
// kernel to run, and takes the math decomposition for any device the stub
// has no entry for. Without this entry axon would always decompose (matmul,
// softmax, matmul: slower than the CPU's fused flash-attention kernel), also
// under fake tensors, so torch.compile would too, and it would ignore
// torch.nn.attention.sdpa_kernel: a backend the CPU refuses ("No viable
// backend") would silently run. Axon's kernels are the CPU's, so the CPU's
// choice is right for them. That choice reads only the tensors' metadata and
// the enabled-backend flags, so it is asked about CPU tensors with the same
// sizes, strides and dtypes over no data (the CPU's stub entry itself is not
// exported from libtorch; its operator, _fused_sdp_choice, is).
#include <ATen/SDPBackend.h>
#include <ATen/core/LegacyTypeDispatch.h>
#include <ATen/native/DispatchStub.h>
#include <ATen/native/transformers/attention.h>
#include <ATen/ops/_fused_sdp_choice.h>
#include <ATen/ops/from_blob.h>
#include <c10/core/impl/LocalDispatchKeySet.h>

namespace at::native {
namespace {

// A CPU tensor with `tensor`'s metadata over a dummy address nothing reads.
Tensor metadata_only_cpu_tensor(const Tensor& tensor) {
  static char nothing = 0;
  return at::from_blob(&nothing, tensor.sizes(), tensor.strides(), tensor.options().device(c10::kCPU))
      .set_requires_grad(tensor.requires_grad());
}

int64_t axon_fused_sdp_choice(const Tensor& query, const Tensor& key, const Tensor& value,
                              const std::optional<Tensor>& attn_mask, double dropout_p, bool is_causal,
                              std::optional<double> scale, bool enable_gqa) {
  for (const Tensor* tensor : {&query, &key, &value}) {
    // Symbolic sizes (a dynamic-shape trace) have no concrete metadata to ask about: decompose.
    if (tensor->is_nested() || tensor->unsafeGetTensorImpl()->has_symbolic_sizes_strides()) {
      return static_cast<int64_t>(SDPBackend::math);
    }
  }
  std::optional<Tensor> cpu_mask;
  if (attn_mask.has_value() && attn_mask->defined()) {
    if (attn_mask->unsafeGetTensorImpl()->has_symbolic_sizes_strides()) return static_cast<int64_t>(SDPBackend::math);
    cpu_mask = metadata_only_cpu_tensor(*attn_mask);
  }
  // Straight to the CPU kernel: no autograd, and no Python mode either (under FakeTensorMode, as when
  // torch.compile traces, the mode would refuse these real tensors).
  const at::AutoDispatchBelowAutograd no_autograd;
  const c10::impl::ExcludeDispatchKeyGuard no_python_modes(
      c10::DispatchKeySet({c10::DispatchKey::Python, c10::DispatchKey::PythonTLSSnapshot}));
  return at::_fused_sdp_choice(metadata_only_cpu_tensor(query), metadata_only_cpu_tensor(key),
                               metadata_only_cpu_tensor(value), cpu_mask, dropout_p, is_causal, scale, enable_gqa);
}

}  // namespace

REGISTER_PRIVATEUSE1_DISPATCH(_fused_sdp_choice_stub, &axon_fused_sdp_choice)

}  // namespace at::native
