#include "host_execution/direct_cumulative_sum.h"

#include <c10/core/DeviceGuard.h>
#include <c10/core/WrapDimMinimal.h>

#include "host_execution/cumulative_sum_rows.h"
#include "host_execution/direct_launch.h"

namespace axon {
namespace {

using direct::DirectOperator;

// The shape axon's kernel sums, where it takes the call.
std::optional<ScanShape> direct_call(const at::Tensor& self, int64_t dim, std::optional<at::ScalarType> dtype) {
  const at::ScalarType type = self.scalar_type();
  if (!direct::direct_operand(self) || (type != at::kFloat && type != at::kDouble) ||
      (dtype.has_value() && *dtype != type) || self.dim() == 0 || self.numel() == 0 || !self.is_contiguous() ||
      !direct::direct_device(self.device())) {
    return std::nullopt;
  }
  // Out of range: the generic kernel raises the CPU's IndexError.
  if (dim < -self.dim() || dim >= self.dim()) return std::nullopt;
  const int64_t wrapped = c10::maybe_wrap_dim(dim, self.dim());
  ScanShape shape;
  shape.extent = self.size(wrapped);
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (d < wrapped) shape.outer *= self.size(d);
    if (d > wrapped) shape.inner *= self.size(d);
  }
  return shape;
}

}  // namespace

at::Tensor direct_cumsum(const at::Tensor& self, int64_t dim, std::optional<at::ScalarType> dtype) {
  static const DirectOperator op("cumsum");
  const std::optional<ScanShape> shape = direct_call(self, dim, dtype);
  if (!shape) return op.generic(self, dim, dtype).toTensor();
  const c10::DeviceGuard guard(self.device());
  at::Tensor result = direct::fresh(self.sizes(), self.scalar_type());
  direct::queue_over_aliases<2>(op.kernel_name(), self.device(), {&self, &result}, [shape = *shape](auto& t) {
    if (t[0].scalar_type() == at::kFloat) {
      cumulative_sums(t[0].template const_data_ptr<float>(), shape, t[1].template mutable_data_ptr<float>());
    } else {
      cumulative_sums(t[0].template const_data_ptr<double>(), shape, t[1].template mutable_data_ptr<double>());
    }
  });
  return result;
}

}  // namespace axon
