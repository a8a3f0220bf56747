#include "host_execution/cuda_dtypes.h"

#include <ATen/core/LegacyTypeDispatch.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/ops/empty_strided.h>
#include <ATen/ops/isnan.h>
#include <ATen/ops/sum.h>
#include <ATen/ops/where.h>
#include <ATen/ops/zeros.h>

#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "host_execution/stream_kernel.h"
#include "host_execution/value_checks_at_call.h"
#include "ops/argument_tensors.h"
#include "ops/shape_inference.h"

namespace axon {
namespace {

// Integer values lie on exact points of a float64 line, so counting them
// there puts each in the bin CUDA's integer arithmetic puts it in.
at::Tensor as_counted(const at::Tensor& self) {
  return at::isIntegralType(self.scalar_type(), /*includeBool=*/false) ? self.to(at::kDouble) : self;
}

using Widening = std::vector<std::pair<at::ScalarType, at::ScalarType>>;  // narrow -> computed as

// Operators and the narrow dtypes CUDA accepts for them (OpInfo's
// dtypesIfCUDA minus its CPU dtypes, PyTorch 2.13), with backward
// operators where autograd reaches them.
const std::unordered_map<std::string, Widening>& widenings() {
  static const auto* table = [] {
    const Widening complex_half{{at::kComplexHalf, at::kComplexFloat}};
    const Widening half_and_bfloat16{{at::kHalf, at::kFloat}, {at::kBFloat16, at::kFloat}};
    const Widening half{{at::kHalf, at::kFloat}, {at::kComplexHalf, at::kComplexFloat}};
    const Widening boolean{{at::kBool, at::kByte}};
    auto* table = new std::unordered_map<std::string, Widening>();
    for (const char* name :
         {"acos", "acosh", "asin", "asinh", "atan", "atanh", "cos",  "cosh", "div",   "exp",     "log",  "logaddexp",
          "pow",  "sin",   "sinh", "tan",   "tanh", "rsqrt", "sqrt", "lerp", "angle", "sigmoid", "prod", "sum"}) {
      (*table)[name] = complex_half;
    }
    for (const char* name : {"avg_pool3d", "avg_pool3d_backward", "_upsample_bilinear2d_aa",
                             "_upsample_bilinear2d_aa_backward", "multi_margin_loss", "multi_margin_loss_backward",
                             "multilabel_margin_loss_forward", "multilabel_margin_loss_backward"}) {
      (*table)[name] = half_and_bfloat16;
    }
    for (const char* name : {"rrelu_with_noise", "_fft_c2c", "_fft_c2r", "_fft_r2c"}) (*table)[name] = half;
    (*table)["abs"] = boolean;
    (*table)["trace"] = {{at::kBool, at::kByte}, {at::kComplexHalf, at::kComplexFloat}};
    return table;
  }();
  return *table;
}

// The widening of an operator ("exp", "exp_" or "exp.out"), if it has one.
const Widening* widening_of(std::string_view name) {
  name = name.substr(0, name.find('.'));
  if (name.size() > 1 && name.back() == '_' && name[name.size() - 2] != '_') name.remove_suffix(1);  // in-place
  const auto found = widenings().find(std::string(name));
  return found == widenings().end() ? nullptr : &found->second;
}

std::optional<at::ScalarType> widened(const Widening& widening, at::ScalarType type) {
  for (const auto& [narrow, wide] : widening) {
    if (narrow == type) return wide;
  }
  return std::nullopt;
}

bool writes(const c10::Argument& argument) {
  return argument.alias_info() != nullptr && argument.alias_info()->isWrite();
}

// `value` (a result of the widened call) in the dtypes of `meta`.
c10::IValue narrowed(const c10::IValue& value, const c10::IValue& meta) {
  if (value.isTensor() && meta.isTensor()) {
    const at::Tensor& tensor = value.toTensor();
    if (!tensor.defined() || tensor.scalar_type() == meta.toTensor().scalar_type()) return value;
    return tensor.to(meta.toTensor().scalar_type());
  }
  if (value.isTensorList() && meta.isTensorList()) {
    c10::List<at::Tensor> results;
    const auto metas = meta.toTensorList();
    const auto tensors = value.toTensorList();
    for (size_t i = 0; i < tensors.size(); ++i) {
      const at::Tensor tensor = tensors.get(i);
      results.push_back(i < metas.size() ? narrowed(tensor, metas.get(i)).toTensor() : tensor);
    }
    return results;
  }
  return value;
}

}  // namespace

bool widens_narrow_dtypes(std::string_view name) { return widening_of(name) != nullptr; }

c10::BoxedKernel generic_boxed_kernel(std::string_view name) {
  return widens_narrow_dtypes(name) ? c10::BoxedKernel::makeFromFunction<&widening_kernel>()
                                    : c10::BoxedKernel::makeFromFunction<&stream_kernel>();
}

void widening_kernel(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const c10::FunctionSchema& schema = op.schema();
  const Widening& widening = *widening_of(std::string_view(schema.name()).substr(schema.name().find("::") + 2));
  const size_t num_args = schema.arguments().size();
  const auto args = torch::jit::last(*stack, num_args);
  bool narrow = false;
  for (const auto& arg : args) {
    for_each_tensor(arg, [&](const at::Tensor& t) { narrow |= t.defined() && widened(widening, t.scalar_type()); });
  }
  if (!narrow) {
    stream_kernel(op, stack);
    return;
  }
  // The call's checks, result dtypes and out= shapes, from the meta kernel
  // on the narrow dtypes (it warns about resized outputs, as the CPU would).
  torch::jit::Stack meta;
  for (const auto& arg : args) meta.push_back(retarget_device(map_tensors(arg, to_meta), c10::kMeta));
  const std::vector<c10::IValue> meta_arguments(meta.begin(), meta.end());  // sees resizes
  {
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    op.callBoxed(meta);
  }
  const std::vector<c10::IValue> originals(args.begin(), args.end());
  torch::jit::Stack wide;
  for (size_t i = 0; i < num_args; ++i) {
    const c10::Argument& argument = schema.arguments()[i];
    if (argument.name() == "dtype" && originals[i].isInt()) {
      const auto type = static_cast<at::ScalarType>(originals[i].toInt());
      wide.push_back(static_cast<int64_t>(widened(widening, type).value_or(type)));
      continue;
    }
    wide.push_back(map_tensors(originals[i], [&](const at::Tensor& t) {
      const auto type = t.defined() ? widened(widening, t.scalar_type()) : std::nullopt;
      if (!type) return t;
      if (writes(argument) && meta_arguments[i].isTensor() && meta_arguments[i].toTensor().sizes() != t.sizes()) {
        // An out= tensor the call resizes: a fresh one of the new shape.
        const at::Tensor& shape = meta_arguments[i].toTensor();
        return at::empty_strided(shape.sizes(), shape.strides(), t.options().dtype(*type));
      }
      return t.to(*type);
    }));
  }
  const std::vector<c10::IValue> wide_arguments(wide.begin(), wide.end());
  stream_kernel(op, &wide);
  // Written arguments get the widened results back, in their own dtype.
  for (size_t i = 0; i < num_args; ++i) {
    if (!writes(schema.arguments()[i]) || !originals[i].isTensor() || !wide_arguments[i].isTensor()) continue;
    const at::Tensor& original = originals[i].toTensor();
    const at::Tensor& computed = wide_arguments[i].toTensor();
    if (original.is_same(computed)) continue;
    if (original.sizes() != computed.sizes()) original.resize_(computed.sizes());
    original.copy_(computed);
  }
  torch::jit::drop(*stack, num_args);
  for (size_t r = 0; r < wide.size(); ++r) {
    c10::IValue result = wide[r];
    for (size_t i = 0; i < num_args; ++i) {
      if (result.isTensor() && wide_arguments[i].isTensor() &&
          result.toTensor().is_same(wide_arguments[i].toTensor())) {
        result = originals[i];  // in-place and out= calls return the argument itself
        break;
      }
    }
    stack->push_back(r < meta.size() ? narrowed(result, meta[r]) : result);
  }
}

at::Tensor nansum(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                  std::optional<at::ScalarType> dtype) {
  if (!self.is_complex()) {
    const c10::IValue dims = dim.has_value() ? c10::IValue(dim->vec()) : c10::IValue();
    return stream_kernel_by_name("aten::nansum", "", {self, dims, keepdim, dtype}).toTensor();
  }
  const at::Tensor zeroed = at::where(at::isnan(self), at::zeros({}, self.options()), self);
  return at::sum(zeroed, dim, keepdim, dtype);
}

at::Tensor& nansum_out(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                       std::optional<at::ScalarType> dtype, at::Tensor& out) {
  if (!self.is_complex()) {
    const c10::IValue dims = dim.has_value() ? c10::IValue(dim->vec()) : c10::IValue();
    stream_kernel_by_name("aten::nansum", "out", {self, dims, keepdim, dtype, out});
    return out;
  }
  const at::Tensor zeroed = at::where(at::isnan(self), at::zeros({}, self.options()), self);
  return at::sum_out(out, zeroed, dim, keepdim, dtype);
}

at::Tensor histc(const at::Tensor& self, int64_t bins, const at::Scalar& min, const at::Scalar& max) {
  check_histc_range(self, bins, min, max);
  const at::Tensor counts = stream_kernel_by_name("aten::histc", "", {as_counted(self), bins, min, max}).toTensor();
  return counts.scalar_type() == self.scalar_type() ? counts : counts.to(self.scalar_type());
}

at::Tensor& histc_out(const at::Tensor& self, int64_t bins, const at::Scalar& min, const at::Scalar& max,
                      at::Tensor& out) {
  if (as_counted(self).is_same(self)) {
    check_histc_range(self, bins, min, max);
    stream_kernel_by_name("aten::histc", "out", {self, bins, min, max, out});
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
