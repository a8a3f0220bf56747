// torch.autocast("axon"): the same per-operator precision policies CUDA
// uses (lower precision for matmul/conv, float32 for reductions, losses and
// normalization, type promotion for mixed inputs), taken from the op lists
// ATen publishes for backends in ATen/autocast_mode.h. The default autocast
// dtype for PrivateUse1 is float16; torch.set_autocast_dtype("axon", ...)
// changes it. Kept in its own file: ATen/autocast_mode.h pulls in all of
// ATen, and only this translation unit pays for that.
#include <ATen/autocast_mode.h>

// The AT_FORALL_* lists name types unqualified (Tensor, ScalarType, ...), as
// ATen expands them inside at::autocast; so do we.
namespace at::autocast {
namespace {

Tensor axon_binary_cross_entropy_banned(const Tensor&, const Tensor&, const std::optional<Tensor>&, int64_t) {
  TORCH_CHECK(false,
              "torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast on axon "
              "(as on CUDA). Use torch.nn.functional.binary_cross_entropy_with_logits or "
              "torch.nn.BCEWithLogitsLoss, which are safe; or disable autocast for the region.");
}

TORCH_LIBRARY_IMPL(_, AutocastPrivateUse1, m) { m.fallback(torch::CppFunction::makeFallthrough()); }

TORCH_LIBRARY_IMPL(aten, AutocastPrivateUse1, m) {
#define AXON_AUTOCAST_LOWER_PRECISION(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, lower_precision_fp)
#define AXON_AUTOCAST_FP32(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, fp32)
#define AXON_AUTOCAST_FP32_SET_OPT_DTYPE(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, fp32_set_opt_dtype)
#define AXON_AUTOCAST_PROMOTE(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, promote)
  AT_FORALL_LOWER_PRECISION_FP(AXON_AUTOCAST_LOWER_PRECISION)
  AT_FORALL_FP32(AXON_AUTOCAST_FP32)
  AT_FORALL_FP32_SET_OPT_DTYPE(AXON_AUTOCAST_FP32_SET_OPT_DTYPE)
  AT_FORALL_DIFFERENT_REDISPATCH_SIGNATURE(KERNEL_DIFFERENT_REDISPATCH_SIGNATURE_PRIVATEUSEONE)
  AT_FORALL_PROMOTE(AXON_AUTOCAST_PROMOTE)
#undef AXON_AUTOCAST_LOWER_PRECISION
#undef AXON_AUTOCAST_FP32
#undef AXON_AUTOCAST_FP32_SET_OPT_DTYPE
#undef AXON_AUTOCAST_PROMOTE
  // As on CUDA: binary_cross_entropy is unsafe in low precision.
  m.impl(TORCH_SELECTIVE_NAME("aten::binary_cross_entropy"), TORCH_FN((&axon_binary_cross_entropy_banned)));
}

}  // namespace
}  // namespace at::autocast
