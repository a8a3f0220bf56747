#include "host_execution/direct_kernels.h"

#include <ATen/Dispatch.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/ops/add_cpu_dispatch.h>
#include <ATen/ops/clamp_min_cpu_dispatch.h>
#include <ATen/ops/div_cpu_dispatch.h>
#include <ATen/ops/fill_cpu_dispatch.h>
#include <ATen/ops/mm_cpu_dispatch.h>
#include <ATen/ops/mul_cpu_dispatch.h>
#include <ATen/ops/scalar_tensor.h>
#include <ATen/ops/sub_cpu_dispatch.h>
#include <ATen/ops/sum_cpu_dispatch.h>
#include <ATen/ops/zero_cpu_dispatch.h>
#include <c10/core/DeviceGuard.h>
#include <c10/util/strides.h>

#include <algorithm>
#include <array>
#include <optional>
#include <string_view>
#include <utility>

#include "core/device.h"
#include "host_execution/cuda_dtypes.h"
#include "host_execution/direct_attention.h"
#include "host_execution/direct_batch_norm.h"
#include "host_execution/direct_cumulative_sum.h"
#include "host_execution/direct_launch.h"
#include "host_execution/direct_pooling.h"
#include "host_execution/direct_scatter_gather.h"
#include "host_execution/direct_upsampling.h"
#include "host_execution/direct_variance.h"
#include "host_execution/inline_kernels.h"
#include "host_execution/matrix_products.h"
#include "ops/tensor_factories.h"

namespace axon {
namespace {

using direct::direct_device;
using direct::direct_dtype;
using direct::direct_operand;
using direct::DirectOperator;
using direct::fresh;
using direct::queue_over_aliases;

// A Python number passed as a binary operator's operand (ATen wraps it in a
// 0-dim CPU tensor), when it leaves the result in `self_dtype`: integers
// with any dtype, floating numbers with floating dtypes.
std::optional<c10::Scalar> python_number(const at::Tensor& other, at::ScalarType self_dtype) {
  if (!other.defined() || !other.unsafeGetTensorImpl()->is_wrapped_number() || !other.is_cpu()) return std::nullopt;
  switch (other.scalar_type()) {
    case at::kLong:
      return c10::Scalar(*other.const_data_ptr<int64_t>());
    case at::kDouble:
      if (!at::isFloatingType(self_dtype)) return std::nullopt;
      return c10::Scalar(*other.const_data_ptr<double>());
    default:
      return std::nullopt;  // booleans and complex numbers may promote
  }
}

// The number on the worker, wrapped as ATen wraps it at the call.
at::Tensor wrapped(const c10::Scalar& number) {
  at::Tensor tensor = at::scalar_tensor(number, number.isFloatingPoint() ? at::kDouble : at::kLong);
  tensor.unsafeGetTensorImpl()->set_wrapped_number(true);
  return tensor;
}

// Counts a call that ran inline (inline_kernels.h) among the direct launches.
bool counted(bool ran_inline) {
  if (ran_inline) direct::launches_queued.fetch_add(1, std::memory_order_relaxed);
  return ran_inline;
}

// Contiguous with the strides a fresh tensor of its sizes gets, which a
// direct call's fresh contiguous result matches. A tensor can be contiguous
// with other strides where a dimension has size 1 (a channels-last
// (N, C, 1, 1) tensor): the CPU's result keeps those strides, so such calls
// take the generic kernel, which finds the CPU's layout.
bool row_major(const at::Tensor& tensor) { return tensor.strides().equals(c10::contiguous_strides(tensor.sizes())); }

// The second operand of a direct elementwise call with `self`: an axon
// tensor of self's device, dtype and sizes, row-major like self; or a
// Python number (number has a value).
bool direct_other(const at::Tensor& self, const at::Tensor& other, std::optional<c10::Scalar>& number) {
  if (other.is_privateuseone()) {
    return direct_operand(other) && other.device() == self.device() && other.scalar_type() == self.scalar_type() &&
           other.sizes().equals(self.sizes()) && row_major(other);
  }
  number = python_number(other, self.scalar_type());
  return number.has_value();
}

// Whether `alpha` is accepted by add/sub for `dtype` without a check failing.
// An alpha the dtype cannot hold (1000 for int8) raises here, at the call,
// with the CPU kernel's own conversion error, not later on the worker.
bool direct_alpha(const c10::Scalar& alpha, at::ScalarType dtype) {
  const bool kind = alpha.isIntegral(/*includeBool=*/false) || (alpha.isFloatingPoint() && at::isFloatingType(dtype));
  if (kind && direct_dtype(dtype)) {
    AT_DISPATCH_ALL_TYPES_AND2(at::kHalf, at::kBFloat16, dtype, "add", [&] { (void)alpha.to<scalar_t>(); });
  }
  return kind;
}

// A binary elementwise call the direct path takes: self and other as
// direct_other says, result in self's dtype and sizes, contiguous.
// Tiny calls on an idle stream run at once on the calling thread
// (inline_kernels.h) as `inline_op` with `alpha`; the rest are queued.
template <class Compute>
std::optional<at::Tensor> binary(const char* name, InlineBinary inline_op, const c10::Scalar& alpha,
                                 const at::Tensor& self, const at::Tensor& other, Compute compute) {
  if (!direct_operand(self) || self.scalar_type() == at::kBool || !row_major(self)) return std::nullopt;
  std::optional<c10::Scalar> number;
  if (!direct_other(self, other, number) || !direct_device(self.device())) return std::nullopt;
  const c10::DeviceGuard guard(self.device());
  at::Tensor out = fresh(self.sizes(), self.scalar_type());
  if (counted(inline_binary(inline_op, out, self, number.has_value() ? nullptr : &other, number.value_or(c10::Scalar()),
                            alpha))) {
    return out;
  }
  if (number.has_value()) {
    queue_over_aliases<2>(
        name, self.device(), {&self, &out},
        [compute, number = *number](std::array<at::Tensor, 2>& t) { compute(t[1], t[0], wrapped(number)); });
  } else {
    queue_over_aliases<3>(name, self.device(), {&self, &other, &out},
                          [compute](std::array<at::Tensor, 3>& t) { compute(t[2], t[0], t[1]); });
  }
  return out;
}

// ---- the kernels ----------------------------------------------------------

// add and sub: their CPU out variant, and an alpha the dtype accepts.
using WithAlphaOut = at::Tensor& (*)(at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Scalar&);

at::Tensor with_alpha(const DirectOperator& op, InlineBinary inline_op, WithAlphaOut cpu_out, const at::Tensor& self,
                      const at::Tensor& other, const at::Scalar& alpha) {
  if (direct_alpha(alpha, self.scalar_type())) {
    auto out = binary(
        op.kernel_name(), inline_op, alpha, self, other,
        [alpha, cpu_out](at::Tensor& out, const at::Tensor& a, const at::Tensor& b) { cpu_out(out, a, b, alpha); });
    if (out.has_value()) return *std::move(out);
  }
  return op.generic(self, other, alpha).toTensor();
}

at::Tensor add(const at::Tensor& self, const at::Tensor& other, const at::Scalar& alpha) {
  static const DirectOperator op("add.Tensor");
  return with_alpha(op, InlineBinary::kAdd, &at::cpu::add_out, self, other, alpha);
}

at::Tensor sub(const at::Tensor& self, const at::Tensor& other, const at::Scalar& alpha) {
  static const DirectOperator op("sub.Tensor");
  return with_alpha(op, InlineBinary::kSub, &at::cpu::sub_out, self, other, alpha);
}

at::Tensor mul(const at::Tensor& self, const at::Tensor& other) {
  static const DirectOperator op("mul.Tensor");
  auto out = binary(op.kernel_name(), InlineBinary::kMul, 1, self, other,
                    [](at::Tensor& out, const at::Tensor& a, const at::Tensor& b) { at::cpu::mul_out(out, a, b); });
  if (out.has_value()) return *std::move(out);
  return op.generic(self, other).toTensor();
}

at::Tensor div(const at::Tensor& self, const at::Tensor& other) {
  static const DirectOperator op("div.Tensor");
  // Integer division promotes to floating point: only floating dtypes here.
  if (at::isFloatingType(self.scalar_type())) {
    auto out = binary(op.kernel_name(), InlineBinary::kDiv, 1, self, other,
                      [](at::Tensor& out, const at::Tensor& a, const at::Tensor& b) { at::cpu::div_out(out, a, b); });
    if (out.has_value()) return *std::move(out);
  }
  return op.generic(self, other).toTensor();
}

at::Tensor relu(const at::Tensor& self) {
  static const DirectOperator op("relu");
  if (direct_operand(self) && row_major(self) && direct_device(self.device())) {
    const c10::DeviceGuard guard(self.device());
    at::Tensor out = fresh(self.sizes(), self.scalar_type());
    if (counted(inline_relu(out, self))) return out;
    // The CPU's relu is clamp_min(self, 0) (after refusing booleans, which
    // are not direct dtypes); its out variant writes the result in place.
    queue_over_aliases<2>(op.kernel_name(), self.device(), {&self, &out},
                          [](std::array<at::Tensor, 2>& t) { at::cpu::clamp_min_out(t[1], t[0], 0); });
    return out;
  }
  return op.generic(self).toTensor();
}

at::Tensor sum(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim, std::optional<at::ScalarType> dtype) {
  static const DirectOperator op("sum.dim_IntList");
  // Only the whole-tensor sum (no dims or an empty list), whose result is a
  // 0-dim tensor in self's dtype, or int64 for integers, as on the CPU.
  const bool whole = !dim.has_value() || dim->empty();
  if (whole && !keepdim && !dtype.has_value() && direct_operand(self) && direct_device(self.device())) {
    const c10::DeviceGuard guard(self.device());
    const at::ScalarType type =
        at::isIntegralType(self.scalar_type(), /*includeBool=*/true) ? at::kLong : self.scalar_type();
    at::Tensor out = fresh({}, type);
    const bool empty_list = dim.has_value();
    // A floating sum of many elements is added in a part per thread
    // (TeamUse::kForResults); integers sum exactly on any count.
    const TeamUse team_use =
        type != at::kLong && self.numel() >= kSplitSumsFromElements ? TeamUse::kForResults : TeamUse::kBySize;
    queue_over_aliases<2>(
        op.kernel_name(), self.device(), {&self, &out},
        [empty_list](std::array<at::Tensor, 2>& t) {
          const at::OptionalIntArrayRef dims = empty_list ? at::OptionalIntArrayRef(c10::IntArrayRef()) : std::nullopt;
          at::cpu::sum_out(t[1], t[0], dims, false, std::nullopt);
        },
        team_use);
    return out;
  }
  return op.generic(self, dim, keepdim, dtype).toTensor();
}

// Queues out = mat1 @ mat2 by oneDNN (matrix_products.h).
void queue_onednn_mm(const char* name, const at::Tensor& mat1, const at::Tensor& mat2, const at::Tensor& out) {
  queue_over_aliases<3>(
      name, mat1.device(), {&mat1, &mat2, &out},
      [](std::array<at::Tensor, 3>& t) { onednn_product(t[2], t[0], t[1], false); },
      product_team_use(1, mat1.size(0), mat1.size(1), mat2.size(1)));
}

at::Tensor mm(const at::Tensor& self, const at::Tensor& mat2) {
  static const DirectOperator op("mm");
  // Any strides: the aliases carry them, and the CPU's result is contiguous.
  if (direct_operand(self) && direct_operand(mat2) && at::isFloatingType(self.scalar_type()) &&
      self.scalar_type() == mat2.scalar_type() && self.device() == mat2.device() && self.dim() == 2 &&
      mat2.dim() == 2 && self.size(1) == mat2.size(0) && direct_device(self.device())) {
    const c10::DeviceGuard guard(self.device());
    at::Tensor out = fresh({self.size(0), mat2.size(1)}, self.scalar_type());
    if (counted(inline_mm(out, self, mat2))) return out;
    if (onednn_takes_product(self, mat2, false)) {
      queue_onednn_mm(op.kernel_name(), self, mat2, out);
    } else {
      queue_over_aliases<3>(
          op.kernel_name(), self.device(), {&self, &mat2, &out},
          [](std::array<at::Tensor, 3>& t) { at::cpu::mm_out(t[2], t[0], t[1]); },
          product_team_use(1, self.size(0), self.size(1), mat2.size(1)));
    }
    return out;
  }
  return op.generic(self, mat2).toTensor();
}

// Two 2-D axon operands on one device the host addresses, as oneDNN's
// products need (matrix_products.h).
bool onednn_operands(const at::Tensor& mat1, const at::Tensor& mat2) {
  return direct_operand(mat1) && direct_operand(mat2) && mat1.dim() == 2 && mat2.dim() == 2 &&
         mat1.device() == mat2.device() && direct_device(mat1.device());
}

// A bias that addmm broadcasts over an m x n product: [n], [1, n] or [m, n].
bool broadcast_bias(const at::Tensor& bias, int64_t m, int64_t n) {
  if (bias.dim() == 1) return bias.size(0) == n;
  return bias.dim() == 2 && (bias.size(0) == m || bias.size(0) == 1) && bias.size(1) == n;
}

// addmm as nn.Linear calls it: beta = alpha = 1, a float bias, operands
// oneDNN can read (whether it takes the product, onednn_takes_product, is
// asked last, by the callers).
bool onednn_linear(const at::Tensor& self, const at::Tensor& mat1, const at::Tensor& mat2, const at::Scalar& beta,
                   const at::Scalar& alpha) {
  const auto one = [](const at::Scalar& s) { return !s.isSymbolic() && !s.isComplex() && s.equal(1); };
  return one(beta) && one(alpha) && direct_operand(self) && self.scalar_type() == at::kFloat &&
         self.device() == mat1.device() && onednn_operands(mat1, mat2) &&
         broadcast_bias(self, mat1.size(0), mat2.size(1));
}

// Queues out = self + mat1 @ mat2 by oneDNN: the bias copied into the result,
// as the CPU's kernel does, then the product added to it.
void queue_onednn_linear(const char* name, const at::Tensor& self, const at::Tensor& mat1, const at::Tensor& mat2,
                         const at::Tensor& out) {
  const int64_t m = mat1.size(0), n = mat2.size(1);
  queue_over_aliases<4>(
      name, mat1.device(), {&self, &mat1, &mat2, &out},
      [m, n](std::array<at::Tensor, 4>& t) {
        t[3].copy_(t[0].expand({m, n}));
        onednn_product(t[3], t[1], t[2], true);
      },
      product_team_use(1, m, mat1.size(1), n));
}

// An out= tensor a product can be written into as it stands: a contiguous
// float m x n axon tensor on the operands' device that overlaps none of them
// (the rest the generic kernel resizes, or refuses, as the CPU does).
bool writable_result(const at::Tensor& out, const at::Tensor& mat1, const at::Tensor& mat2,
                     const at::Tensor* bias = nullptr) {
  if (!direct_operand(out) || out.scalar_type() != at::kFloat || out.device() != mat1.device() || out.dim() != 2 ||
      out.size(0) != mat1.size(0) || out.size(1) != mat2.size(1) || !out.is_contiguous()) {
    return false;
  }
  const auto apart = [&](const at::Tensor& t) { return at::get_overlap_status(out, t) == at::MemOverlapStatus::No; };
  return apart(mat1) && apart(mat2) && (bias == nullptr || apart(*bias));
}

// The products Inductor's generated code calls (its extern kernels write
// into buffers it allocated): oneDNN where it takes them, else the generic
// kernel as before.
at::Tensor& mm_out(const at::Tensor& self, const at::Tensor& mat2, at::Tensor& out) {
  static const DirectOperator op("mm.out");
  if (onednn_operands(self, mat2) && writable_result(out, self, mat2) && onednn_takes_product(self, mat2, false)) {
    const c10::DeviceGuard guard(self.device());
    queue_onednn_mm(op.kernel_name(), self, mat2, out);
    return out;
  }
  op.generic(self, mat2, out);
  return out;
}

// addmm on products oneDNN takes, as nn.Linear calls it; every other call
// takes the generic kernel (the CPU's addmm, MKL), as before.
at::Tensor addmm(const at::Tensor& self, const at::Tensor& mat1, const at::Tensor& mat2, const at::Scalar& beta,
                 const at::Scalar& alpha) {
  static const DirectOperator op("addmm");
  if (onednn_linear(self, mat1, mat2, beta, alpha) && onednn_takes_product(mat1, mat2, true)) {
    const c10::DeviceGuard guard(mat1.device());
    at::Tensor out = fresh({mat1.size(0), mat2.size(1)}, at::kFloat);
    queue_onednn_linear(op.kernel_name(), self, mat1, mat2, out);
    return out;
  }
  return op.generic(self, mat1, mat2, beta, alpha).toTensor();
}

at::Tensor& addmm_out(const at::Tensor& self, const at::Tensor& mat1, const at::Tensor& mat2, const at::Scalar& beta,
                      const at::Scalar& alpha, at::Tensor& out) {
  static const DirectOperator op("addmm.out");
  if (onednn_linear(self, mat1, mat2, beta, alpha) && writable_result(out, mat1, mat2, &self) &&
      onednn_takes_product(mat1, mat2, true)) {
    const c10::DeviceGuard guard(mat1.device());
    queue_onednn_linear(op.kernel_name(), self, mat1, mat2, out);
    return out;
  }
  op.generic(self, mat1, mat2, beta, alpha, out);
  return out;
}

// In-place arithmetic with a Python number (x.mul_(2.0), x.add_(1)): a tiny
// call on an idle stream runs at once on the calling thread
// (inline_kernels.h); every other call takes the generic kernel as before.
bool in_place_with_number(InlineBinary inline_op, const at::Tensor& self, const at::Tensor& other,
                          const c10::Scalar& alpha) {
  if (!direct_operand(self) || self.scalar_type() == at::kBool || !self.is_contiguous() ||
      !direct_device(self.device())) {
    return false;
  }
  const std::optional<c10::Scalar> number = python_number(other, self.scalar_type());
  if (!number.has_value() || !alpha.isIntegral(/*includeBool=*/false) || alpha.to<int64_t>() != 1) return false;
  return counted(inline_binary_in_place(inline_op, self, *number));
}

at::Tensor& add_(at::Tensor& self, const at::Tensor& other, const at::Scalar& alpha) {
  static const DirectOperator op("add_.Tensor");
  if (!in_place_with_number(InlineBinary::kAdd, self, other, alpha)) op.generic(self, other, alpha);
  return self;
}

at::Tensor& sub_(at::Tensor& self, const at::Tensor& other, const at::Scalar& alpha) {
  static const DirectOperator op("sub_.Tensor");
  if (!in_place_with_number(InlineBinary::kSub, self, other, alpha)) op.generic(self, other, alpha);
  return self;
}

at::Tensor& mul_(at::Tensor& self, const at::Tensor& other) {
  static const DirectOperator op("mul_.Tensor");
  if (!in_place_with_number(InlineBinary::kMul, self, other, 1)) op.generic(self, other);
  return self;
}

at::Tensor& div_(at::Tensor& self, const at::Tensor& other) {
  static const DirectOperator op("div_.Tensor");
  if (!at::isFloatingType(self.scalar_type()) || !in_place_with_number(InlineBinary::kDiv, self, other, 1)) {
    op.generic(self, other);
  }
  return self;
}

// In-place fills of tensors without elements sharing memory (the CPU checks
// an expanded tensor; the generic kernel keeps that).
bool direct_fill_target(const at::Tensor& self) {
  return (direct_operand(self) || (self.defined() && self.is_privateuseone() && self.scalar_type() == at::kBool &&
                                   !self.is_neg() && !self.is_conj())) &&
         direct_device(self.device()) && at::has_internal_overlap(self) == at::MemOverlap::No;
}

at::Tensor& zero_(at::Tensor& self) {
  static const DirectOperator op("zero_");
  if (direct_fill_target(self)) {
    check_device_index(self.device().index());
    if (counted(inline_fill(self, 0))) return self;
    queue_over_aliases<1>(op.kernel_name(), self.device(), {&self},
                          [](std::array<at::Tensor, 1>& t) { at::cpu::zero_(t[0]); });
    return self;
  }
  op.generic(self);
  return self;
}

at::Tensor& fill_(at::Tensor& self, const at::Scalar& value) {
  static const DirectOperator op("fill_.Scalar");
  if (!value.isComplex() && direct_fill_target(self)) {
    check_device_index(self.device().index());
    // The CPU refuses a value the dtype cannot hold (overflow) while
    // converting it: converted here, that error is raised at the call.
    AT_DISPATCH_ALL_TYPES_AND3(at::kHalf, at::kBFloat16, at::kBool, self.scalar_type(), "fill_",
                               [&] { (void)value.to<scalar_t>(); });
    if (counted(inline_fill(self, value))) return self;
    queue_over_aliases<1>(op.kernel_name(), self.device(), {&self},
                          [value](std::array<at::Tensor, 1>& t) { at::cpu::fill_(t[0], value); });
    return self;
  }
  op.generic(self, value);
  return self;
}

// zeros without the composite's second trip through the dispatcher (its
// empty and zero_ both land here).
at::Tensor zeros(c10::SymIntArrayRef size, std::optional<at::ScalarType> dtype, std::optional<c10::Layout> layout,
                 std::optional<c10::Device> device, std::optional<bool> pin_memory) {
  // The CPU's check, before the sizes are read as integers (a size below
  // -2^62 is not one: reading it would raise another message).
  for (const c10::SymInt& dimension : size) {
    TORCH_CHECK(dimension >= 0, "zeros: Dimension size must be non-negative.");
  }
  at::Tensor out = empty_memory_format(C10_AS_INTARRAYREF_SLOW(size), dtype, layout, device, pin_memory, std::nullopt);
  axon::zero_(out);  // qualified: no argument-dependent lookup of at::zero_
  return out;
}

// Registers `kernel` as the axon kernel of operator `name`.
template <auto kernel>
void register_kernel(torch::Library& library, const char* name) {
  library.impl(name, TORCH_FN(kernel));
}

// The one list of direct kernels: registration and has_direct_kernel read it.
struct DirectKernel {
  const char* name;
  void (*register_on)(torch::Library&, const char*);
};
constexpr std::array<DirectKernel, 38> kDirectKernels = {{
    {"add.Tensor", &register_kernel<&add>},
    {"sub.Tensor", &register_kernel<&sub>},
    {"mul.Tensor", &register_kernel<&mul>},
    {"div.Tensor", &register_kernel<&div>},
    {"add_.Tensor", &register_kernel<&add_>},
    {"sub_.Tensor", &register_kernel<&sub_>},
    {"mul_.Tensor", &register_kernel<&mul_>},
    {"div_.Tensor", &register_kernel<&div_>},
    {"relu", &register_kernel<&relu>},
    {"sum.dim_IntList", &register_kernel<&sum>},
    {"mm", &register_kernel<&mm>},
    {"mm.out", &register_kernel<&mm_out>},
    {"addmm", &register_kernel<&addmm>},
    {"addmm.out", &register_kernel<&addmm_out>},
    {"zero_", &register_kernel<&zero_>},
    {"fill_.Scalar", &register_kernel<&fill_>},
    {"zeros", &register_kernel<&zeros>},
    {"max_pool2d_with_indices", &register_kernel<&direct_max_pool2d_with_indices>},
    {"avg_pool2d", &register_kernel<&direct_avg_pool2d>},
    {"avg_pool2d_backward", &register_kernel<&direct_avg_pool2d_backward>},
    {"upsample_nearest2d", &register_kernel<&direct_upsample_nearest2d>},
    {"_upsample_nearest_exact2d", &register_kernel<&direct_upsample_nearest_exact2d>},
    {"upsample_nearest2d_backward", &register_kernel<&direct_upsample_nearest2d_backward>},
    {"_upsample_nearest_exact2d_backward", &register_kernel<&direct_upsample_nearest_exact2d_backward>},
    {"_scaled_dot_product_flash_attention_for_cpu", &register_kernel<&direct_flash_attention>},
    {"_scaled_dot_product_flash_attention_for_cpu_backward", &register_kernel<&direct_flash_attention_backward>},
    {"gather", &register_kernel<&direct_gather>},
    {"scatter_add", &register_kernel<&direct_scatter_add>},
    {"scatter_add_", &register_kernel<&direct_scatter_add_>},
    {"var.correction", &register_kernel<&direct_var>},
    {"std.correction", &register_kernel<&direct_std>},
    {"var_mean.correction", &register_kernel<&direct_var_mean>},
    {"std_mean.correction", &register_kernel<&direct_std_mean>},
    {"cumsum", &register_kernel<&direct_cumsum>},
    {"native_batch_norm", &register_kernel<&direct_native_batch_norm>},
    {"_native_batch_norm_legit", &register_kernel<&direct_native_batch_norm_legit>},
    {"_native_batch_norm_legit.no_stats", &register_kernel<&direct_native_batch_norm_legit_no_stats>},
    {"native_batch_norm_backward", &register_kernel<&direct_native_batch_norm_backward>},
}};

}  // namespace

void register_direct_kernels(torch::Library& library) {
  for (const DirectKernel& direct : kDirectKernels) direct.register_on(library, direct.name);
}

int64_t direct_kernel_launches() { return direct::launches_queued.load(std::memory_order_relaxed); }

bool has_direct_kernel(std::string_view name) {
  for (const DirectKernel& direct : kDirectKernels) {
    if (direct.name == name) return true;
  }
  return false;
}

}  // namespace axon
