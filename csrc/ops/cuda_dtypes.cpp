#include "ops/cuda_dtypes.h"

#include <ATen/core/dispatch/Dispatcher.h>

#include "ops/stream_kernel.h"

namespace axon {
namespace {

// Runs aten::histc (overload "" or "out") through the generic kernel.
c10::IValue run_generic(const char* overload, torch::jit::Stack stack) {
  static const auto functional = c10::Dispatcher::singleton().findSchemaOrThrow("aten::histc", "");
  static const auto out = c10::Dispatcher::singleton().findSchemaOrThrow("aten::histc", "out");
  stream_kernel(std::string(overload).empty() ? functional : out, &stack);
  return stack.back();
}

// Integer values lie on exact points of a float64 line, so counting them
// there puts each in the bin CUDA's integer arithmetic puts it in.
at::Tensor as_counted(const at::Tensor& self) {
  return at::isIntegralType(self.scalar_type(), /*includeBool=*/false) ? self.to(at::kDouble) : self;
}

}  // namespace

at::Tensor histc(const at::Tensor& self, int64_t bins, const at::Scalar& min, const at::Scalar& max) {
  const at::Tensor counts = run_generic("", {as_counted(self), bins, min, max}).toTensor();
  return counts.scalar_type() == self.scalar_type() ? counts : counts.to(self.scalar_type());
}

at::Tensor& histc_out(const at::Tensor& self, int64_t bins, const at::Scalar& min, const at::Scalar& max,
                      at::Tensor& out) {
  if (as_counted(self).is_same(self)) {
    run_generic("out", {self, bins, min, max, out});
    return out;
  }
  TORCH_CHECK(out.scalar_type() == self.scalar_type(), "torch.histogram: input tensor and hist tensor should ",
              "have the same dtype, but got input ", self.scalar_type(), " and hist ", out.scalar_type());
  const at::Tensor counts = histc(self, bins, min, max);
  out.resize_(counts.sizes());
  out.copy_(counts);
  return out;
}

}  // namespace axon
