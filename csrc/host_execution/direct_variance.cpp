#include "host_execution/direct_variance.h"

#include <c10/core/DeviceGuard.h>
#include <c10/core/WrapDimMinimal.h>

#include <array>
#include <vector>

#include "host_execution/direct_launch.h"
#include "host_execution/variance_rows.h"

namespace axon {
namespace {

using direct::DirectOperator;

// A call axon's kernel takes: its shape, correction and result sizes.
struct VarianceCall {
  VarianceShape shape;
  double correction = 1.0;
  std::vector<int64_t> result_sizes;
};

std::optional<VarianceCall> direct_call(const at::Tensor& self, at::OptionalIntArrayRef dim,
                                        const std::optional<at::Scalar>& correction, bool keepdim) {
  if (!direct::direct_operand(self) || self.scalar_type() != at::kFloat || self.dim() == 0 || self.numel() == 0 ||
      !self.is_contiguous() || !direct::direct_device(self.device()) || !dim.has_value() || dim->size() != 1) {
    return std::nullopt;
  }
  VarianceCall call;
  const int64_t wrapped = c10::maybe_wrap_dim((*dim)[0], self.dim());
  call.correction = correction.has_value() ? correction->toDouble() : 1.0;
  call.shape.extent = self.size(wrapped);
  // Not positive (or NaN): the CPU warns about the degrees of freedom and divides by it; the generic kernel does that.
  if (!(static_cast<double>(call.shape.extent) - call.correction > 0.0)) return std::nullopt;
  // One result: the CPU reduces the whole tensor in two passes of its own, in float, already at its full speed;
  // the generic kernel gives its bits.
  if (call.shape.extent == self.numel()) return std::nullopt;
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (d != wrapped) {
      (d < wrapped ? call.shape.outer : call.shape.inner) *= self.size(d);
      call.result_sizes.push_back(self.size(d));
    } else if (keepdim) {
      call.result_sizes.push_back(1);
    }
  }
  return call;
}

// Queues the kernel; returns the variance (or standard deviation) and, when
// `with_mean`, the mean.
std::array<at::Tensor, 2> queue_variance(const char* name, const at::Tensor& self, const VarianceCall& call,
                                         bool take_sqrt, bool with_mean) {
  const c10::DeviceGuard guard(self.device());
  at::Tensor variance = direct::fresh(call.result_sizes, at::kFloat);
  at::Tensor mean = with_mean ? direct::fresh(call.result_sizes, at::kFloat) : at::Tensor();
  // Without a mean the variance stands in its slot (a tensor given twice gets one alias) and the kernel gets null.
  const at::Tensor& mean_slot = with_mean ? mean : variance;
  direct::queue_over_aliases<3>(name, self.device(), {&self, &variance, &mean_slot},
                                [shape = call.shape, correction = call.correction, take_sqrt, with_mean](auto& t) {
                                  variance_rows(t[0].template const_data_ptr<float>(), shape, correction, take_sqrt,
                                                t[1].template mutable_data_ptr<float>(),
                                                with_mean ? t[2].template mutable_data_ptr<float>() : nullptr);
                                });
  return {variance, mean};
}

// var or std: axon's kernel where it takes the call, else the generic kernel.
at::Tensor alone(const DirectOperator& op, bool take_sqrt, const at::Tensor& self, at::OptionalIntArrayRef dim,
                 const std::optional<at::Scalar>& correction, bool keepdim) {
  if (const auto call = direct_call(self, dim, correction, keepdim)) {
    return queue_variance(op.kernel_name(), self, *call, take_sqrt, false)[0];
  }
  return op.generic(self, dim, correction, keepdim).toTensor();
}

// var_mean or std_mean, likewise.
std::tuple<at::Tensor, at::Tensor> with_mean(const DirectOperator& op, bool take_sqrt, const at::Tensor& self,
                                             at::OptionalIntArrayRef dim, const std::optional<at::Scalar>& correction,
                                             bool keepdim) {
  if (const auto call = direct_call(self, dim, correction, keepdim)) {
    auto [spread, mean] = queue_variance(op.kernel_name(), self, *call, take_sqrt, true);
    return {spread, mean};
  }
  auto results = op.generic_results(self, dim, correction, keepdim);
  return {results[0].toTensor(), results[1].toTensor()};
}

}  // namespace

at::Tensor direct_var(const at::Tensor& self, at::OptionalIntArrayRef dim, const std::optional<at::Scalar>& correction,
                      bool keepdim) {
  static const DirectOperator op("var.correction");
  return alone(op, false, self, dim, correction, keepdim);
}

at::Tensor direct_std(const at::Tensor& self, at::OptionalIntArrayRef dim, const std::optional<at::Scalar>& correction,
                      bool keepdim) {
  static const DirectOperator op("std.correction");
  return alone(op, true, self, dim, correction, keepdim);
}

std::tuple<at::Tensor, at::Tensor> direct_var_mean(const at::Tensor& self, at::OptionalIntArrayRef dim,
                                                   const std::optional<at::Scalar>& correction, bool keepdim) {
  static const DirectOperator op("var_mean.correction");
  return with_mean(op, false, self, dim, correction, keepdim);
}

std::tuple<at::Tensor, at::Tensor> direct_std_mean(const at::Tensor& self, at::OptionalIntArrayRef dim,
                                                   const std::optional<at::Scalar>& correction, bool keepdim) {
  static const DirectOperator op("std_mean.correction");
  return with_mean(op, true, self, dim, correction, keepdim);
}

}  // namespace axon
