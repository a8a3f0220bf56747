#include "host_execution/direct_scatter_gather.h"

#include <c10/core/WrapDimMinimal.h>

#include <array>
#include <cstring>
#include <optional>

#include "core/copy_on_write.h"
#include "host_execution/direct_launch.h"
#include "host_execution/scatter_gather_rows.h"

namespace axon {
namespace {

using direct::DirectOperator;

// An int64 index on `device`, contiguous, with elements, whose memory is its
// own: a direct launch gives every operand shared with a lazy clone its own
// copy (direct_launch.h), and an index is only read.
bool direct_index(const at::Tensor& index, c10::Device device) {
  return index.defined() && index.is_privateuseone() && index.layout() == c10::kStrided &&
         index.scalar_type() == at::kLong && index.device() == device && index.is_contiguous() && index.numel() > 0 &&
         !is_copy_on_write(index.storage());
}

// The shape axon's kernels take: `data` (gathered from, or scattered into)
// and the index contiguous, of one rank, with equal sizes outside `dim`
// (where the CPU also allows an index smaller than the data), and with
// elements. Anything else goes to the generic kernel, which raises the
// CPU's errors where it refuses the call.
std::optional<ScatterGatherShape> direct_shape(const at::Tensor& data, int64_t dim, const at::Tensor& index) {
  if (!direct::direct_operand(data) || data.dim() == 0 || data.numel() == 0 || !data.is_contiguous() ||
      !direct::direct_device(data.device()) || !direct_index(index, data.device()) || index.dim() != data.dim()) {
    return std::nullopt;
  }
  const int64_t wrapped = c10::maybe_wrap_dim(dim, data.dim());
  ScatterGatherShape shape{1, index.size(wrapped), data.size(wrapped), 1, wrapped, false};
  for (int64_t d = 0; d < data.dim(); ++d) {
    if (d == wrapped) continue;
    if (index.size(d) != data.size(d)) return std::nullopt;
    (d < wrapped ? shape.outer : shape.inner) *= data.size(d);
  }
  shape.rows_checked_first = shape.inner == 1 && wrapped != data.dim() - 1;
  return shape;
}

// A scatter_add_ axon's kernel takes: a float or double destination, a
// source of its dtype and of the index's sizes, contiguous, neither of them
// sharing the destination's memory (the CPU refuses that overlap).
std::optional<ScatterGatherShape> direct_scatter_shape(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                                                       const at::Tensor& src) {
  if ((self.scalar_type() != at::kFloat && self.scalar_type() != at::kDouble) || !direct::direct_operand(src) ||
      src.scalar_type() != self.scalar_type() || src.device() != self.device() || !src.is_contiguous() ||
      !src.sizes().equals(index.sizes())) {
    return std::nullopt;
  }
  const auto apart = [&](const at::Tensor& other) { return !other.storage().is_alias_of(self.storage()); };
  if (!apart(index) || !apart(src)) return std::nullopt;
  return direct_shape(self, dim, index);
}

// Queues the scatter of `src` into `destination`, first copying `self`
// there when the two differ (the functional scatter_add).
void queue_scatter_add(const char* name, const at::Tensor& self, const at::Tensor& index, const at::Tensor& src,
                       const at::Tensor& destination, const ScatterGatherShape& shape) {
  direct::queue_over_aliases<4>(name, self.device(), {&self, &index, &src, &destination},
                                [shape](std::array<at::Tensor, 4>& t) {
                                  if (t[3].data_ptr() != t[0].data_ptr()) {
                                    std::memcpy(t[3].mutable_data_ptr(), t[0].const_data_ptr(), t[0].nbytes());
                                  }
                                  scatter_add_rows(t[3].mutable_data_ptr(), t[1].const_data_ptr<int64_t>(),
                                                   t[2].const_data_ptr(), t[3].scalar_type() == at::kDouble, shape);
                                });
}

}  // namespace

at::Tensor direct_gather(const at::Tensor& self, int64_t dim, const at::Tensor& index, bool sparse_grad) {
  static const DirectOperator op("gather");
  if (const auto shape = direct_shape(self, dim, index)) {
    const c10::DeviceGuard guard(self.device());
    at::Tensor out = direct::fresh(index.sizes(), self.scalar_type());
    direct::queue_over_aliases<3>(op.kernel_name(), self.device(), {&self, &index, &out},
                                  [shape = *shape](std::array<at::Tensor, 3>& t) {
                                    gather_rows(t[0].const_data_ptr(), t[1].const_data_ptr<int64_t>(),
                                                t[2].mutable_data_ptr(), t[0].element_size(), shape);
                                  });
    return out;
  }
  return op.generic(self, dim, index, sparse_grad).toTensor();
}

at::Tensor direct_scatter_add(const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& src) {
  static const DirectOperator op("scatter_add");
  if (const auto shape = direct_scatter_shape(self, dim, index, src)) {
    const c10::DeviceGuard guard(self.device());
    at::Tensor out = direct::fresh(self.sizes(), self.scalar_type());
    queue_scatter_add(op.kernel_name(), self, index, src, out, *shape);
    return out;
  }
  return op.generic(self, dim, index, src).toTensor();
}

at::Tensor& direct_scatter_add_(at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& src) {
  static const DirectOperator op("scatter_add_");
  if (const auto shape = direct_scatter_shape(self, dim, index, src)) {
    const c10::DeviceGuard guard(self.device());
    queue_scatter_add(op.kernel_name(), self, index, src, self, *shape);
    return self;
  }
  op.generic(self, dim, index, src);
  return self;
}

}  // namespace axon
