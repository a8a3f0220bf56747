#include "host_execution/direct_kernels.h"

#include <ATen/Dispatch.h>
#include <ATen/EmptyTensor.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/native/Pool.h>
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

#include <array>
#include <atomic>
#include <cstddef>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>

#include "compiled_execution/compiled_kernel.h"
#include "core/device.h"
#include "core/device_allocator.h"
#include "core/stream.h"
#include "host_execution/cuda_dtypes.h"
#include "host_execution/device_memory_views.h"
#include "host_execution/max_pool_planes.h"
#include "host_execution/stream_launch.h"
#include "ops/tensor_factories.h"

namespace axon {
namespace {

// ---- the operator and the way back to the generic kernel ------------------

// One operator with a direct kernel ("add.Tensor"): its lasting kernel name
// for the stream's records ("aten::add.Tensor"), and the boxed kernel the
// generic registration would have given it (generic_boxed_kernel), which
// runs every call the direct path declines exactly as it would without it.
class DirectOperator {
 public:
  explicit DirectOperator(std::string_view name)
      : qualified_("aten::" + std::string(name)),
        op_(c10::Dispatcher::singleton().findSchemaOrThrow(base_of(qualified_).c_str(), overload_of(name).c_str())),
        generic_kernel_(generic_boxed_kernel(name)) {}

  const char* kernel_name() const { return qualified_.c_str(); }

  // The generic kernel's results (one per output of the operator).
  template <class... Args>
  torch::jit::Stack generic_results(Args&&... args) const {
    torch::jit::Stack stack;
    stack.reserve(sizeof...(args));
    (stack.emplace_back(std::forward<Args>(args)), ...);
    generic_kernel_.callBoxed(op_, c10::DispatchKeySet(c10::DispatchKey::PrivateUse1), &stack);
    return stack;
  }

  // The generic kernel's last (for most operators, only) result.
  template <class... Args>
  c10::IValue generic(Args&&... args) const {
    return std::move(generic_results(std::forward<Args>(args)...).back());
  }

 private:
  // "aten::add.Tensor" -> "aten::add"; "add.Tensor" -> "Tensor"; "relu" -> "".
  static std::string base_of(std::string_view qualified) {
    return std::string(qualified.substr(0, qualified.find('.')));
  }
  static std::string overload_of(std::string_view name) {
    const std::size_t dot = name.find('.');
    return dot == std::string_view::npos ? std::string() : std::string(name.substr(dot + 1));
  }

  std::string qualified_;
  c10::OperatorHandle op_;
  c10::BoxedKernel generic_kernel_;
};

std::atomic<int64_t> launches{0};

// ---- what the direct path takes -------------------------------------------

// The dtypes whose CPU kernels these operators have for every case taken
// here (no widening, no complex conjugation).
bool direct_dtype(at::ScalarType type) {
  switch (type) {
    case at::kFloat:
    case at::kDouble:
    case at::kHalf:
    case at::kBFloat16:
    case at::kLong:
    case at::kInt:
    case at::kShort:
    case at::kChar:
    case at::kByte:
      return true;
    default:
      return false;
  }
}

// Whether `device` runs host kernels in memory the host can address, so
// that aliases made on the worker reach the bytes (the rest: HostAliases'
// staging, or compiled eager kernels, in the generic kernel).
bool direct_device(c10::Device device) { return host_addressable(device.index()) && !compiled_kernels_first(device); }

// A dense axon tensor of a direct dtype without lazy conjugation/negation.
bool direct_operand(const at::Tensor& tensor) {
  return tensor.defined() && tensor.is_privateuseone() && tensor.layout() == c10::kStrided &&
         direct_dtype(tensor.scalar_type()) && !tensor.is_conj() && !tensor.is_neg() && !tensor._is_zerotensor();
}

// A fresh contiguous axon tensor on the current device. The allocator checks
// the device first (refusing a shut-down runtime or a forked child), so the
// kernels that allocate need no check of their own before queuing.
at::Tensor fresh(c10::IntArrayRef sizes, at::ScalarType dtype) {
  return at::detail::empty_generic(sizes, device_allocator(), c10::DispatchKeySet(c10::DispatchKey::PrivateUse1), dtype,
                                   c10::MemoryFormat::Contiguous);
}

// A direct kernel's launch: the description of its operands' aliases, where
// each operand's alias is, and the body, all in the one allocation.
template <std::size_t N, class Body>
class DirectLaunch final : public HostLaunch {
 public:
  explicit DirectLaunch(Body body) : body_(std::move(body)) {}

  // Queues this launch on the current stream of `device` over `tensors`.
  static void queue(const char* name, c10::Device device, const std::array<const at::Tensor*, N>& tensors, Body body) {
    auto launch = std::make_unique<DirectLaunch>(std::move(body));
    for (std::size_t i = 0; i < N; ++i) launch->positions_[i] = launch->aliases_.add(*tensors[i]);
    const std::size_t bytes = launch->aliases_.bytes_covered();
    launches.fetch_add(1, std::memory_order_relaxed);
    launch_on_stream(current_stream_handle(device.index()), name, bytes, std::move(launch));
  }

  void run() override {
    const c10::SmallVector<at::Tensor, 4> made = aliases_.make();
    std::array<at::Tensor, N> operands;
    for (std::size_t i = 0; i < N; ++i) operands[i] = made[positions_[i]];
    body_(operands);
  }

 private:
  DeferredAliases aliases_;
  std::array<std::size_t, N> positions_{};
  Body body_;
};

// Queues `body` on the current stream of `device`. It receives CPU aliases
// of `tensors` (in that order; a tensor given twice gets one alias), made
// on the worker. `body` captures only values made for the call.
template <std::size_t N, class Body>
void queue_over_aliases(const char* name, c10::Device device, const std::array<const at::Tensor*, N>& tensors,
                        Body body) {
  DirectLaunch<N, Body>::queue(name, device, tensors, std::move(body));
}

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

// The second operand of a direct elementwise call with `self`: an axon
// tensor of self's device, dtype and sizes, contiguous like self; or a
// Python number (number has a value).
bool direct_other(const at::Tensor& self, const at::Tensor& other, std::optional<c10::Scalar>& number) {
  if (other.is_privateuseone()) {
    return direct_operand(other) && other.device() == self.device() && other.scalar_type() == self.scalar_type() &&
           other.sizes().equals(self.sizes()) && other.is_contiguous();
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
template <class Compute>
std::optional<at::Tensor> binary(const char* name, const at::Tensor& self, const at::Tensor& other, Compute compute) {
  if (!direct_operand(self) || self.scalar_type() == at::kBool || !self.is_contiguous()) return std::nullopt;
  std::optional<c10::Scalar> number;
  if (!direct_other(self, other, number) || !direct_device(self.device())) return std::nullopt;
  const c10::DeviceGuard guard(self.device());
  at::Tensor out = fresh(self.sizes(), self.scalar_type());
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

at::Tensor with_alpha(const DirectOperator& op, WithAlphaOut cpu_out, const at::Tensor& self, const at::Tensor& other,
                      const at::Scalar& alpha) {
  if (direct_alpha(alpha, self.scalar_type())) {
    auto out = binary(
        op.kernel_name(), self, other,
        [alpha, cpu_out](at::Tensor& out, const at::Tensor& a, const at::Tensor& b) { cpu_out(out, a, b, alpha); });
    if (out.has_value()) return *std::move(out);
  }
  return op.generic(self, other, alpha).toTensor();
}

at::Tensor add(const at::Tensor& self, const at::Tensor& other, const at::Scalar& alpha) {
  static const DirectOperator op("add.Tensor");
  return with_alpha(op, &at::cpu::add_out, self, other, alpha);
}

at::Tensor sub(const at::Tensor& self, const at::Tensor& other, const at::Scalar& alpha) {
  static const DirectOperator op("sub.Tensor");
  return with_alpha(op, &at::cpu::sub_out, self, other, alpha);
}

at::Tensor mul(const at::Tensor& self, const at::Tensor& other) {
  static const DirectOperator op("mul.Tensor");
  auto out = binary(op.kernel_name(), self, other,
                    [](at::Tensor& out, const at::Tensor& a, const at::Tensor& b) { at::cpu::mul_out(out, a, b); });
  if (out.has_value()) return *std::move(out);
  return op.generic(self, other).toTensor();
}

at::Tensor div(const at::Tensor& self, const at::Tensor& other) {
  static const DirectOperator op("div.Tensor");
  // Integer division promotes to floating point: only floating dtypes here.
  if (at::isFloatingType(self.scalar_type())) {
    auto out = binary(op.kernel_name(), self, other,
                      [](at::Tensor& out, const at::Tensor& a, const at::Tensor& b) { at::cpu::div_out(out, a, b); });
    if (out.has_value()) return *std::move(out);
  }
  return op.generic(self, other).toTensor();
}

at::Tensor relu(const at::Tensor& self) {
  static const DirectOperator op("relu");
  if (direct_operand(self) && self.is_contiguous() && direct_device(self.device())) {
    const c10::DeviceGuard guard(self.device());
    at::Tensor out = fresh(self.sizes(), self.scalar_type());
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
    queue_over_aliases<2>(op.kernel_name(), self.device(), {&self, &out}, [empty_list](std::array<at::Tensor, 2>& t) {
      const at::OptionalIntArrayRef dims = empty_list ? at::OptionalIntArrayRef(c10::IntArrayRef()) : std::nullopt;
      at::cpu::sum_out(t[1], t[0], dims, false, std::nullopt);
    });
    return out;
  }
  return op.generic(self, dim, keepdim, dtype).toTensor();
}

at::Tensor mm(const at::Tensor& self, const at::Tensor& mat2) {
  static const DirectOperator op("mm");
  // Any strides: the aliases carry them, and the CPU's result is contiguous.
  if (direct_operand(self) && direct_operand(mat2) && at::isFloatingType(self.scalar_type()) &&
      self.scalar_type() == mat2.scalar_type() && self.device() == mat2.device() && self.dim() == 2 &&
      mat2.dim() == 2 && self.size(1) == mat2.size(0) && direct_device(self.device())) {
    const c10::DeviceGuard guard(self.device());
    at::Tensor out = fresh({self.size(0), mat2.size(1)}, self.scalar_type());
    queue_over_aliases<3>(op.kernel_name(), self.device(), {&self, &mat2, &out},
                          [](std::array<at::Tensor, 3>& t) { at::cpu::mm_out(t[2], t[0], t[1]); });
    return out;
  }
  return op.generic(self, mat2).toTensor();
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
    queue_over_aliases<1>(op.kernel_name(), self.device(), {&self},
                          [value](std::array<at::Tensor, 1>& t) { at::cpu::fill_(t[0], value); });
    return self;
  }
  op.generic(self, value);
  return self;
}

// zeros without the composite's second trip through the dispatcher (its
// empty and zero_ both land here).
at::Tensor zeros(c10::IntArrayRef size, std::optional<at::ScalarType> dtype, std::optional<c10::Layout> layout,
                 std::optional<c10::Device> device, std::optional<bool> pin_memory) {
  at::Tensor out = empty_memory_format(size, dtype, layout, device, pin_memory, std::nullopt);
  axon::zero_(out);  // qualified: no argument-dependent lookup of at::zero_
  return out;
}

// Max pooling's first two dimensions' worth of a pooling argument: one value
// for both, or two. `fallback` stands for an empty list (stride's default).
std::optional<std::array<int64_t, 2>> pool_pair(at::IntArrayRef list, std::optional<std::array<int64_t, 2>> fallback) {
  if (list.empty()) return fallback;
  if (list.size() > 2) return std::nullopt;
  const std::array<int64_t, 2> pair = {list[0], list.back()};
  for (const int64_t value : pair) {
    if (value < 0 || value > std::numeric_limits<int32_t>::max()) return std::nullopt;
  }
  return pair;
}

// The geometry of a max_pool2d_with_indices call that axon's own kernel
// computes (max_pool_planes.h): a contiguous float input of 3 or 4 non-empty
// dimensions whose layout the CPU keeps (not one that also reads as
// channels-last), and arguments the CPU's meta kernel accepts (positive
// kernel, stride and dilation, padding at most half the kernel, an output
// of at least one element). Anything else goes to the generic kernel, which
// raises the CPU's errors at the call.
std::optional<MaxPoolGeometry> direct_max_pool(const at::Tensor& input, at::IntArrayRef kernel_size,
                                               at::IntArrayRef stride, at::IntArrayRef padding,
                                               at::IntArrayRef dilation, bool ceil_mode) {
  if (!direct_operand(input) || input.scalar_type() != at::kFloat || (input.dim() != 3 && input.dim() != 4) ||
      input.numel() == 0 || !input.is_contiguous() || input.suggest_memory_format() != c10::MemoryFormat::Contiguous ||
      !direct_device(input.device())) {
    return std::nullopt;
  }
  const auto kernel = pool_pair(kernel_size, std::nullopt);
  if (!kernel.has_value()) return std::nullopt;
  const auto step = pool_pair(stride, kernel);
  const auto pad = pool_pair(padding, std::nullopt);
  const auto dilate = pool_pair(dilation, std::nullopt);
  if (!step || !pad || !dilate) return std::nullopt;
  for (int axis = 0; axis < 2; ++axis) {
    if ((*kernel)[axis] < 1 || (*step)[axis] < 1 || (*dilate)[axis] < 1 || (*pad)[axis] > (*kernel)[axis] / 2) {
      return std::nullopt;
    }
  }
  MaxPoolGeometry g{};
  g.height = input.size(-2);
  g.width = input.size(-1);
  g.kernel_h = (*kernel)[0], g.kernel_w = (*kernel)[1];
  g.stride_h = (*step)[0], g.stride_w = (*step)[1];
  g.pad_h = (*pad)[0], g.pad_w = (*pad)[1];
  g.dilation_h = (*dilate)[0], g.dilation_w = (*dilate)[1];
  g.out_height =
      at::native::pooling_output_shape<int64_t>(g.height, g.kernel_h, g.pad_h, g.stride_h, g.dilation_h, ceil_mode);
  g.out_width =
      at::native::pooling_output_shape<int64_t>(g.width, g.kernel_w, g.pad_w, g.stride_w, g.dilation_w, ceil_mode);
  if (g.out_height < 1 || g.out_width < 1 || !max_pool_planes_supported(g)) return std::nullopt;
  return g;
}

std::tuple<at::Tensor, at::Tensor> max_pool2d_with_indices(const at::Tensor& input, at::IntArrayRef kernel_size,
                                                           at::IntArrayRef stride, at::IntArrayRef padding,
                                                           at::IntArrayRef dilation, bool ceil_mode) {
  static const DirectOperator op("max_pool2d_with_indices");
  if (const auto geometry = direct_max_pool(input, kernel_size, stride, padding, dilation, ceil_mode)) {
    const c10::DeviceGuard guard(input.device());
    c10::SmallVector<int64_t, 4> sizes(input.sizes().begin(), input.sizes().end());
    sizes[sizes.size() - 2] = geometry->out_height;
    sizes[sizes.size() - 1] = geometry->out_width;
    at::Tensor values = fresh(sizes, at::kFloat);
    at::Tensor indices = fresh(sizes, at::kLong);
    const int64_t planes = input.numel() / (geometry->height * geometry->width);
    queue_over_aliases<3>(op.kernel_name(), input.device(), {&input, &values, &indices},
                          [g = *geometry, planes](std::array<at::Tensor, 3>& t) {
                            max_pool2d_planes(t[0].const_data_ptr<float>(), t[1].mutable_data_ptr<float>(),
                                              t[2].mutable_data_ptr<int64_t>(), planes, g);
                          });
    return {std::move(values), std::move(indices)};
  }
  torch::jit::Stack results = op.generic_results(input, kernel_size, stride, padding, dilation, ceil_mode);
  return {std::move(results[0]).toTensor(), std::move(results[1]).toTensor()};
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
constexpr std::array<DirectKernel, 11> kDirectKernels = {{
    {"add.Tensor", &register_kernel<&add>},
    {"sub.Tensor", &register_kernel<&sub>},
    {"mul.Tensor", &register_kernel<&mul>},
    {"div.Tensor", &register_kernel<&div>},
    {"relu", &register_kernel<&relu>},
    {"sum.dim_IntList", &register_kernel<&sum>},
    {"mm", &register_kernel<&mm>},
    {"zero_", &register_kernel<&zero_>},
    {"fill_.Scalar", &register_kernel<&fill_>},
    {"zeros", &register_kernel<&zeros>},
    {"max_pool2d_with_indices", &register_kernel<&max_pool2d_with_indices>},
}};

}  // namespace

void register_direct_kernels(torch::Library& library) {
  for (const DirectKernel& direct : kDirectKernels) direct.register_on(library, direct.name);
}

int64_t direct_kernel_launches() { return launches.load(std::memory_order_relaxed); }

bool has_direct_kernel(std::string_view name) {
  for (const DirectKernel& direct : kDirectKernels) {
    if (direct.name == name) return true;
  }
  return false;
}

}  // namespace axon
