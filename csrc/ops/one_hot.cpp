// one_hot on axon: class values checked at the call, as on the CPU.
//
// one_hot is composite: zeros, then scatter_ of ones at the class values.
// ATen checks the values against num_classes (reading their minimum and
// maximum back) on the CPU only; on CUDA, XLA, MPS and PrivateUse1 it leaves
// an out-of-range value to scatter_'s own check. On axon that check runs on
// the device's worker and is reported by a later call (an unrelated one, in
// PyTorch's test_one_hot), so axon makes the CPU's checks at the call, with
// its messages, then runs the composite with num_classes known. The minimum
// and maximum come back in one transfer; the CPU reads them in two.
// Registered for PrivateUse1, and for AutogradPrivateUse1, which a composite
// call reaches first while autograd is on.
#include <ATen/ops/aminmax.h>
#include <ATen/ops/one_hot_native.h>
#include <ATen/ops/stack.h>
#include <torch/library.h>

namespace axon {
namespace {

at::Tensor one_hot(const at::Tensor& self, int64_t num_classes) {
  // Tensors without data skip the checks: fake and functional tensors reach
  // this kernel first while torch.compile traces (AutogradPrivateUse1 comes
  // before the Python key), and symbolic sizes have no element count to ask.
  // Not at::isTensorSubclassLike: that is also true for real tensors under
  // any dispatch mode (a FlopCounterMode), whose values can be checked.
  const bool has_data =
      !self.unsafeGetTensorImpl()->has_symbolic_sizes_strides() &&
      !self.key_set().has_any(c10::DispatchKeySet({c10::DispatchKey::Python, c10::DispatchKey::Functionalize}));
  // Other dtypes and empty inputs: the composite's own checks and messages.
  if (has_data && self.scalar_type() == at::kLong && self.numel() > 0) {
    const auto [smallest, largest] = at::aminmax(self);
    const at::Tensor range = at::stack({smallest, largest}).cpu();
    const int64_t min_value = range[0].item<int64_t>();
    const int64_t max_value = range[1].item<int64_t>();
    TORCH_CHECK(min_value >= 0, "Class values must be non-negative.");
    if (num_classes == -1) {
      num_classes = max_value + 1;
    } else {
      TORCH_CHECK(num_classes > max_value, "Class values must be smaller than num_classes.");
    }
  }
  return at::native::one_hot(self, num_classes);
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) { m.impl("one_hot", TORCH_FN(one_hot)); }

TORCH_LIBRARY_IMPL(aten, AutogradPrivateUse1, m) { m.impl("one_hot", TORCH_FN(one_hot)); }

}  // namespace
}  // namespace axon
