#include "ops/native_meta_kernels.h"

#include <ATen/ExpandUtils.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/TensorIterator.h>
#include <ATen/WrapDimUtils.h>
#include <ATen/native/cpu/mixed_data_type.h>
#include <ATen/native/layer_norm.h>
#include <ATen/ops/_log_softmax_backward_data_meta_dispatch.h>
#include <ATen/ops/_log_softmax_meta_dispatch.h>
#include <ATen/ops/_softmax_backward_data_meta_dispatch.h>
#include <ATen/ops/_softmax_meta_dispatch.h>
#include <ATen/ops/acos_meta_dispatch.h>
#include <ATen/ops/acosh_meta_dispatch.h>
#include <ATen/ops/add_meta_dispatch.h>
#include <ATen/ops/addcdiv_meta_dispatch.h>
#include <ATen/ops/addcmul_meta_dispatch.h>
#include <ATen/ops/addmm_meta_dispatch.h>
#include <ATen/ops/all_meta_dispatch.h>
#include <ATen/ops/amax_meta_dispatch.h>
#include <ATen/ops/amin_meta_dispatch.h>
#include <ATen/ops/any_meta_dispatch.h>
#include <ATen/ops/arange_native.h>
#include <ATen/ops/argmax_meta_dispatch.h>
#include <ATen/ops/argmin_meta_dispatch.h>
#include <ATen/ops/asin_meta_dispatch.h>
#include <ATen/ops/asinh_meta_dispatch.h>
#include <ATen/ops/atan2_meta_dispatch.h>
#include <ATen/ops/atan_meta_dispatch.h>
#include <ATen/ops/atanh_meta_dispatch.h>
#include <ATen/ops/avg_pool2d_backward_meta_dispatch.h>
#include <ATen/ops/avg_pool2d_meta_dispatch.h>
#include <ATen/ops/baddbmm_meta_dispatch.h>
#include <ATen/ops/bitwise_and_meta_dispatch.h>
#include <ATen/ops/bitwise_not_meta_dispatch.h>
#include <ATen/ops/bitwise_or_meta_dispatch.h>
#include <ATen/ops/bitwise_xor_meta_dispatch.h>
#include <ATen/ops/bmm_meta_dispatch.h>
#include <ATen/ops/cat_meta_dispatch.h>
#include <ATen/ops/ceil_meta_dispatch.h>
#include <ATen/ops/clamp_max_meta_dispatch.h>
#include <ATen/ops/clamp_meta_dispatch.h>
#include <ATen/ops/clamp_min_meta_dispatch.h>
#include <ATen/ops/copysign_meta_dispatch.h>
#include <ATen/ops/cos_meta_dispatch.h>
#include <ATen/ops/cosh_meta_dispatch.h>
#include <ATen/ops/cumprod_meta_dispatch.h>
#include <ATen/ops/cumsum_meta_dispatch.h>
#include <ATen/ops/digamma_meta_dispatch.h>
#include <ATen/ops/div_meta_dispatch.h>
#include <ATen/ops/elu_meta_dispatch.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like_native.h>
#include <ATen/ops/empty_permuted.h>
#include <ATen/ops/eq_meta_dispatch.h>
#include <ATen/ops/erf_meta_dispatch.h>
#include <ATen/ops/erfc_meta_dispatch.h>
#include <ATen/ops/erfinv_meta_dispatch.h>
#include <ATen/ops/exp2_meta_dispatch.h>
#include <ATen/ops/exp_meta_dispatch.h>
#include <ATen/ops/expm1_meta_dispatch.h>
#include <ATen/ops/floor_meta_dispatch.h>
#include <ATen/ops/fmax_meta_dispatch.h>
#include <ATen/ops/fmin_meta_dispatch.h>
#include <ATen/ops/fmod_meta_dispatch.h>
#include <ATen/ops/frac_meta_dispatch.h>
#include <ATen/ops/gather_meta_dispatch.h>
#include <ATen/ops/ge_meta_dispatch.h>
#include <ATen/ops/gelu_backward_meta_dispatch.h>
#include <ATen/ops/gelu_meta_dispatch.h>
#include <ATen/ops/gt_meta_dispatch.h>
#include <ATen/ops/hardshrink_meta_dispatch.h>
#include <ATen/ops/hardsigmoid_meta_dispatch.h>
#include <ATen/ops/heaviside_meta_dispatch.h>
#include <ATen/ops/hypot_meta_dispatch.h>
#include <ATen/ops/i0_meta_dispatch.h>
#include <ATen/ops/igamma_meta_dispatch.h>
#include <ATen/ops/igammac_meta_dispatch.h>
#include <ATen/ops/index_meta_dispatch.h>
#include <ATen/ops/isin_meta_dispatch.h>
#include <ATen/ops/isneginf_meta_dispatch.h>
#include <ATen/ops/isposinf_meta_dispatch.h>
#include <ATen/ops/le_meta_dispatch.h>
#include <ATen/ops/leaky_relu_meta_dispatch.h>
#include <ATen/ops/lerp_meta_dispatch.h>
#include <ATen/ops/lgamma_meta_dispatch.h>
#include <ATen/ops/log10_meta_dispatch.h>
#include <ATen/ops/log1p_meta_dispatch.h>
#include <ATen/ops/log2_meta_dispatch.h>
#include <ATen/ops/log_meta_dispatch.h>
#include <ATen/ops/logaddexp2_meta_dispatch.h>
#include <ATen/ops/logaddexp_meta_dispatch.h>
#include <ATen/ops/lt_meta_dispatch.h>
#include <ATen/ops/max_meta_dispatch.h>
#include <ATen/ops/max_pool2d_with_indices_backward_meta_dispatch.h>
#include <ATen/ops/max_pool2d_with_indices_meta_dispatch.h>
#include <ATen/ops/maximum_meta_dispatch.h>
#include <ATen/ops/mean_meta_dispatch.h>
#include <ATen/ops/min_meta_dispatch.h>
#include <ATen/ops/minimum_meta_dispatch.h>
#include <ATen/ops/mish_meta_dispatch.h>
#include <ATen/ops/mm_meta_dispatch.h>
#include <ATen/ops/mse_loss_meta_dispatch.h>
#include <ATen/ops/mul_meta_dispatch.h>
#include <ATen/ops/ne_meta_dispatch.h>
#include <ATen/ops/neg_meta_dispatch.h>
#include <ATen/ops/nextafter_meta_dispatch.h>
#include <ATen/ops/nll_loss_backward_meta_dispatch.h>
#include <ATen/ops/nll_loss_forward_meta_dispatch.h>
#include <ATen/ops/norm_meta_dispatch.h>
#include <ATen/ops/pow_meta_dispatch.h>
#include <ATen/ops/prod_meta_dispatch.h>
#include <ATen/ops/reciprocal_meta_dispatch.h>
#include <ATen/ops/remainder_meta_dispatch.h>
#include <ATen/ops/result_type.h>
#include <ATen/ops/round_meta_dispatch.h>
#include <ATen/ops/rsqrt_meta_dispatch.h>
#include <ATen/ops/sgn_meta_dispatch.h>
#include <ATen/ops/sigmoid_backward_meta_dispatch.h>
#include <ATen/ops/sigmoid_meta_dispatch.h>
#include <ATen/ops/sign_meta_dispatch.h>
#include <ATen/ops/signbit_meta_dispatch.h>
#include <ATen/ops/silu_backward_meta_dispatch.h>
#include <ATen/ops/silu_meta_dispatch.h>
#include <ATen/ops/sin_meta_dispatch.h>
#include <ATen/ops/sinc_meta_dispatch.h>
#include <ATen/ops/sinh_meta_dispatch.h>
#include <ATen/ops/smooth_l1_loss_meta_dispatch.h>
#include <ATen/ops/softplus_meta_dispatch.h>
#include <ATen/ops/softshrink_meta_dispatch.h>
#include <ATen/ops/sort_meta_dispatch.h>
#include <ATen/ops/sqrt_meta_dispatch.h>
#include <ATen/ops/sub_meta_dispatch.h>
#include <ATen/ops/sum_meta_dispatch.h>
#include <ATen/ops/tan_meta_dispatch.h>
#include <ATen/ops/tanh_backward_meta_dispatch.h>
#include <ATen/ops/tanh_meta_dispatch.h>
#include <ATen/ops/threshold_backward_meta_dispatch.h>
#include <ATen/ops/threshold_meta_dispatch.h>
#include <ATen/ops/topk_meta_dispatch.h>
#include <ATen/ops/tril_meta_dispatch.h>
#include <ATen/ops/triu_meta_dispatch.h>
#include <ATen/ops/trunc_meta_dispatch.h>
#include <ATen/ops/xlogy_meta_dispatch.h>

#include <algorithm>
#include <array>
#include <optional>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "ops/absent_meta_kernels.h"

namespace axon {
namespace {

using at::Scalar;
using at::Tensor;
using OptionalDims = at::OptionalIntArrayRef;
using OptionalDtype = std::optional<at::ScalarType>;

using Entry = MetaKernelEntry;

// `function` is overloaded, so its type is spelled out: the at::meta::
// overload with that signature, which must be the operator's schema in order.
#define AXON_META(name, overload, signature, function)                         \
  Entry {                                                                      \
    name, overload,                                                            \
        c10::KernelFunction::makeFromUnboxedFunction(                          \
            c10::CompileTimeFunctionPointer<signature, &at::meta::function>()) \
  }

using Unary = Tensor(const Tensor&);
using UnaryInPlace = Tensor&(Tensor&);
using Binary = Tensor(const Tensor&, const Tensor&);
using BinaryInPlace = Tensor&(Tensor&, const Tensor&);
using BinaryAlpha = Tensor(const Tensor&, const Tensor&, const Scalar&);
using BinaryAlphaInPlace = Tensor&(Tensor&, const Tensor&, const Scalar&);
using WithScalar = Tensor(const Tensor&, const Scalar&);
using WithTensorAndScalar = Tensor(const Tensor&, const Tensor&, const Scalar&);
using WithScalarInPlace = Tensor&(Tensor&, const Scalar&);
using Ternary = Tensor(const Tensor&, const Tensor&, const Tensor&, const Scalar&);
using TernaryInPlace = Tensor&(Tensor&, const Tensor&, const Tensor&, const Scalar&);
using Product = Tensor(const Tensor&, const Tensor&, const Tensor&, const Scalar&, const Scalar&);
using ProductInPlace = Tensor&(Tensor&, const Tensor&, const Tensor&, const Scalar&, const Scalar&);
using Softmax = Tensor(const Tensor&, int64_t, bool);
using SoftmaxBackward = Tensor(const Tensor&, const Tensor&, int64_t, at::ScalarType);
using Reduction = Tensor(const Tensor&, OptionalDims, bool, OptionalDtype);
using Diagonal = Tensor(const Tensor&, int64_t);
using DiagonalInPlace = Tensor&(Tensor&, int64_t);
using ValuesAndIndices = std::tuple<Tensor, Tensor>(const Tensor&, int64_t, bool);
using Sizes = at::IntArrayRef;
using NllLoss = std::tuple<Tensor, Tensor>(const Tensor&, const Tensor&, const std::optional<Tensor>&, int64_t,
                                           c10::SymInt);
using NllLossBackward = Tensor(const Tensor&, const Tensor&, const Tensor&, const std::optional<Tensor>&, int64_t,
                               c10::SymInt, const Tensor&);
using MaxPool = std::tuple<Tensor, Tensor>(const Tensor&, Sizes, Sizes, Sizes, Sizes, bool);
using MaxPoolBackward = Tensor(const Tensor&, const Tensor&, Sizes, Sizes, Sizes, Sizes, bool, const Tensor&);
using AvgPool = Tensor(const Tensor&, Sizes, Sizes, Sizes, bool, bool, std::optional<int64_t>);
using AvgPoolBackward = Tensor(const Tensor&, const Tensor&, Sizes, Sizes, Sizes, bool, bool, std::optional<int64_t>);
using Sort = std::tuple<Tensor, Tensor>(const Tensor&, std::optional<bool>, int64_t, bool);
using TopK = std::tuple<Tensor, Tensor>(const Tensor&, c10::SymInt, int64_t, bool, bool);

std::vector<Entry> entries() {
  return {
      // Pointwise, as the generic kernel sees them most.
      AXON_META("aten::add", "Tensor", BinaryAlpha, add),
      AXON_META("aten::add_", "Tensor", BinaryAlphaInPlace, add_),
      AXON_META("aten::sub", "Tensor", BinaryAlpha, sub),
      AXON_META("aten::sub_", "Tensor", BinaryAlphaInPlace, sub_),
      AXON_META("aten::mul", "Tensor", Binary, mul),
      AXON_META("aten::mul_", "Tensor", BinaryInPlace, mul_),
      AXON_META("aten::div", "Tensor", Binary, div),
      AXON_META("aten::div_", "Tensor", BinaryInPlace, div_),
      AXON_META("aten::div", "Tensor_mode", Tensor(const Tensor&, const Tensor&, std::optional<c10::string_view>), div),
      AXON_META("aten::pow", "Tensor_Tensor", Binary, pow),
      AXON_META("aten::pow", "Tensor_Scalar", WithScalar, pow),
      AXON_META("aten::pow_", "Scalar", WithScalarInPlace, pow_),
      AXON_META("aten::maximum", "", Binary, maximum),
      AXON_META("aten::minimum", "", Binary, minimum),
      AXON_META("aten::eq", "Tensor", Binary, eq),
      AXON_META("aten::eq", "Scalar", WithScalar, eq),
      AXON_META("aten::ne", "Tensor", Binary, ne),
      AXON_META("aten::ne", "Scalar", WithScalar, ne),
      AXON_META("aten::lt", "Tensor", Binary, lt),
      AXON_META("aten::lt", "Scalar", WithScalar, lt),
      AXON_META("aten::gt", "Tensor", Binary, gt),
      AXON_META("aten::gt", "Scalar", WithScalar, gt),
      AXON_META("aten::le", "Tensor", Binary, le),
      AXON_META("aten::le", "Scalar", WithScalar, le),
      AXON_META("aten::ge", "Tensor", Binary, ge),
      AXON_META("aten::ge", "Scalar", WithScalar, ge),
      AXON_META("aten::bitwise_and", "Tensor", Binary, bitwise_and),
      AXON_META("aten::bitwise_or", "Tensor", Binary, bitwise_or),
      AXON_META("aten::bitwise_not", "", Unary, bitwise_not),
      AXON_META("aten::neg", "", Unary, neg),
      AXON_META("aten::exp", "", Unary, exp),
      AXON_META("aten::log", "", Unary, log),
      AXON_META("aten::tanh", "", Unary, tanh),
      AXON_META("aten::sigmoid", "", Unary, sigmoid),
      AXON_META("aten::rsqrt", "", Unary, rsqrt),
      AXON_META("aten::sqrt", "", Unary, sqrt),
      AXON_META("aten::reciprocal", "", Unary, reciprocal),
      AXON_META("aten::erf", "", Unary, erf),
      AXON_META("aten::sin", "", Unary, sin),
      AXON_META("aten::cos", "", Unary, cos),
      AXON_META("aten::silu", "", Unary, silu),
      AXON_META("aten::neg_", "", UnaryInPlace, neg_),
      AXON_META("aten::exp_", "", UnaryInPlace, exp_),
      AXON_META("aten::sqrt_", "", UnaryInPlace, sqrt_),
      AXON_META("aten::silu_", "", UnaryInPlace, silu_),
      AXON_META("aten::gelu", "", Tensor(const Tensor&, c10::string_view), gelu),
      AXON_META("aten::gelu_backward", "", Tensor(const Tensor&, const Tensor&, c10::string_view), gelu_backward),
      AXON_META("aten::silu_backward", "", Binary, silu_backward),
      AXON_META("aten::tanh_backward", "", Binary, tanh_backward),
      AXON_META("aten::sigmoid_backward", "", Binary, sigmoid_backward),
      AXON_META("aten::threshold_backward", "", BinaryAlpha, threshold_backward),
      AXON_META("aten::clamp", "", Tensor(const Tensor&, const std::optional<Scalar>&, const std::optional<Scalar>&),
                clamp),
      AXON_META("aten::clamp_min", "", WithScalar, clamp_min),
      AXON_META("aten::lerp_", "Scalar", Tensor & (Tensor&, const Tensor&, const Scalar&), lerp_),
      AXON_META("aten::lerp_", "Tensor", Tensor & (Tensor&, const Tensor&, const Tensor&), lerp_),
      AXON_META("aten::isneginf", "", Unary, isneginf),
      AXON_META("aten::isposinf", "", Unary, isposinf),
      AXON_META("aten::threshold", "", Tensor(const Tensor&, const Scalar&, const Scalar&), threshold),
      AXON_META("aten::acos", "", Unary, acos),
      AXON_META("aten::acosh", "", Unary, acosh),
      AXON_META("aten::asin", "", Unary, asin),
      AXON_META("aten::asinh", "", Unary, asinh),
      AXON_META("aten::atan", "", Unary, atan),
      AXON_META("aten::atanh", "", Unary, atanh),
      AXON_META("aten::cosh", "", Unary, cosh),
      AXON_META("aten::frac", "", Unary, frac),
      AXON_META("aten::log10", "", Unary, log10),
      AXON_META("aten::sinh", "", Unary, sinh),
      AXON_META("aten::tan", "", Unary, tan),
      AXON_META("aten::erfc", "", Unary, erfc),
      AXON_META("aten::erfinv", "", Unary, erfinv),
      AXON_META("aten::i0", "", Unary, i0),
      AXON_META("aten::signbit", "", Unary, signbit),
      AXON_META("aten::lgamma", "", Unary, lgamma),
      AXON_META("aten::digamma", "", Unary, digamma),
      AXON_META("aten::sinc", "", Unary, sinc),
      AXON_META("aten::hypot", "", Binary, hypot),
      AXON_META("aten::copysign", "Tensor", Binary, copysign),
      AXON_META("aten::logaddexp", "", Binary, logaddexp),
      AXON_META("aten::logaddexp2", "", Binary, logaddexp2),
      AXON_META("aten::fmax", "", Binary, fmax),
      AXON_META("aten::fmin", "", Binary, fmin),
      AXON_META("aten::xlogy", "Tensor", Binary, xlogy),
      AXON_META("aten::nextafter", "", Binary, nextafter),
      AXON_META("aten::bitwise_xor", "Tensor", Binary, bitwise_xor),
      AXON_META("aten::heaviside", "", Binary, heaviside),
      AXON_META("aten::igamma", "", Binary, igamma),
      AXON_META("aten::igammac", "", Binary, igammac),
      AXON_META("aten::hardshrink", "", WithScalar, hardshrink),
      AXON_META("aten::softshrink", "", WithScalar, softshrink),
      AXON_META("aten::clamp_max", "", WithScalar, clamp_max),
      AXON_META("aten::clamp_max", "Tensor", Binary, clamp_max),
      AXON_META("aten::remainder", "Tensor", Binary, remainder),
      AXON_META("aten::fmod", "Tensor", Binary, fmod),
      AXON_META("aten::atan2", "", Binary, atan2),
      AXON_META("aten::lerp", "Scalar", WithTensorAndScalar, lerp),
      AXON_META("aten::lerp", "Tensor", Tensor(const Tensor&, const Tensor&, const Tensor&), lerp),
      AXON_META("aten::sign", "", Unary, sign),
      AXON_META("aten::sgn", "", Unary, sgn),
      AXON_META("aten::floor", "", Unary, floor),
      AXON_META("aten::ceil", "", Unary, ceil),
      AXON_META("aten::round", "", Unary, round),
      AXON_META("aten::round", "decimals", Diagonal, round),
      AXON_META("aten::trunc", "", Unary, trunc),
      AXON_META("aten::exp2", "", Unary, exp2),
      AXON_META("aten::log2", "", Unary, log2),
      AXON_META("aten::log1p", "", Unary, log1p),
      AXON_META("aten::expm1", "", Unary, expm1),
      AXON_META("aten::hardsigmoid", "", Unary, hardsigmoid),
      AXON_META("aten::mish", "", Unary, mish),
      AXON_META("aten::leaky_relu", "", WithScalar, leaky_relu),
      AXON_META("aten::softplus", "", Tensor(const Tensor&, const Scalar&, const Scalar&), softplus),
      AXON_META("aten::elu", "", Tensor(const Tensor&, const Scalar&, const Scalar&, const Scalar&), elu),
      AXON_META("aten::addcmul", "", Ternary, addcmul),
      AXON_META("aten::addcmul_", "", TernaryInPlace, addcmul_),
      AXON_META("aten::addcdiv", "", Ternary, addcdiv),
      AXON_META("aten::addcdiv_", "", TernaryInPlace, addcdiv_),
      // Out= overloads optimizers and fused updates call (the meta kernel resizes `out`).
      AXON_META("aten::add", "out", Tensor & (const Tensor&, const Tensor&, const Scalar&, Tensor&), add_outf),
      AXON_META("aten::sub", "out", Tensor & (const Tensor&, const Tensor&, const Scalar&, Tensor&), sub_outf),
      AXON_META("aten::mul", "out", Tensor & (const Tensor&, const Tensor&, Tensor&), mul_outf),
      AXON_META("aten::div", "out", Tensor & (const Tensor&, const Tensor&, Tensor&), div_outf),
      AXON_META("aten::sqrt", "out", Tensor & (const Tensor&, Tensor&), sqrt_outf),
      AXON_META("aten::addcmul", "out", Tensor & (const Tensor&, const Tensor&, const Tensor&, const Scalar&, Tensor&),
                addcmul_outf),
      // Losses and pooling, forward and backward.
      AXON_META("aten::nll_loss_forward", "", NllLoss, nll_loss_forward_symint),
      AXON_META("aten::nll_loss_backward", "", NllLossBackward, nll_loss_backward_symint),
      AXON_META("aten::mse_loss", "", Tensor(const Tensor&, const Tensor&, int64_t), mse_loss),
      AXON_META("aten::smooth_l1_loss", "", Tensor(const Tensor&, const Tensor&, int64_t, double), smooth_l1_loss),
      AXON_META("aten::max_pool2d_with_indices", "", MaxPool, max_pool2d_with_indices),
      AXON_META("aten::max_pool2d_with_indices_backward", "", MaxPoolBackward, max_pool2d_with_indices_backward),
      AXON_META("aten::avg_pool2d", "", AvgPool, avg_pool2d),
      AXON_META("aten::avg_pool2d_backward", "", AvgPoolBackward, avg_pool2d_backward),
      // Products, softmax, reductions, joins.
      AXON_META("aten::mm", "", Binary, mm),
      AXON_META("aten::bmm", "", Binary, bmm),
      AXON_META("aten::addmm", "", Product, addmm),
      AXON_META("aten::addmm_", "", ProductInPlace, addmm_),
      AXON_META("aten::baddbmm", "", Product, baddbmm),
      AXON_META("aten::_softmax", "", Softmax, _softmax),
      AXON_META("aten::_log_softmax", "", Softmax, _log_softmax),
      AXON_META("aten::_softmax_backward_data", "", SoftmaxBackward, _softmax_backward_data),
      AXON_META("aten::_log_softmax_backward_data", "", SoftmaxBackward, _log_softmax_backward_data),
      AXON_META("aten::sum", "dim_IntList", Reduction, sum),
      AXON_META("aten::mean", "dim", Reduction, mean),
      AXON_META("aten::amax", "", Tensor(const Tensor&, at::IntArrayRef, bool), amax),
      AXON_META("aten::argmax", "", Tensor(const Tensor&, std::optional<int64_t>, bool), argmax),
      AXON_META("aten::max", "dim", ValuesAndIndices, max),
      AXON_META("aten::min", "dim", ValuesAndIndices, min),
      AXON_META("aten::argmin", "", Tensor(const Tensor&, std::optional<int64_t>, bool), argmin),
      AXON_META("aten::any", "", Unary, any),
      AXON_META("aten::any", "dim", Tensor(const Tensor&, int64_t, bool), any),
      AXON_META("aten::any", "dims", Tensor(const Tensor&, OptionalDims, bool), any),
      AXON_META("aten::all", "", Unary, all),
      AXON_META("aten::all", "dim", Tensor(const Tensor&, int64_t, bool), all),
      AXON_META("aten::all", "dims", Tensor(const Tensor&, OptionalDims, bool), all),
      AXON_META("aten::sort", "stable", Sort, sort),
      AXON_META("aten::topk", "", TopK, topk_symint),
      AXON_META("aten::index", "Tensor", Tensor(const Tensor&, const c10::List<std::optional<Tensor>>&), index),
      AXON_META("aten::prod", "dim_int", Tensor(const Tensor&, int64_t, bool, OptionalDtype), prod),
      AXON_META("aten::norm", "ScalarOpt_dim",
                Tensor(const Tensor&, const std::optional<Scalar>&, at::IntArrayRef, bool), norm),
      AXON_META("aten::amin", "", Tensor(const Tensor&, at::IntArrayRef, bool), amin),
      AXON_META("aten::cumprod", "", Tensor(const Tensor&, int64_t, OptionalDtype), cumprod),
      AXON_META("aten::norm", "ScalarOpt_dim_dtype",
                Tensor(const Tensor&, const std::optional<Scalar>&, at::IntArrayRef, bool, at::ScalarType), norm),
      AXON_META("aten::cumsum", "", Tensor(const Tensor&, int64_t, OptionalDtype), cumsum),
      AXON_META("aten::cat", "", Tensor(const at::ITensorListRef&, int64_t), cat),
      AXON_META("aten::gather", "", Tensor(const Tensor&, int64_t, const Tensor&, bool), gather),
      AXON_META("aten::isin", "Tensor_Tensor", Tensor(const Tensor&, const Tensor&, bool, bool), isin),
      AXON_META("aten::tril", "", Diagonal, tril),
      AXON_META("aten::triu", "", Diagonal, triu),
      AXON_META("aten::tril_", "", DiagonalInPlace, tril_),
      AXON_META("aten::triu_", "", DiagonalInPlace, triu_),
  };
}

#undef AXON_META

// ---- operators whose only meta kernel is Python -------------------------
//
// C++ transcriptions of torch._meta_registrations' kernels for the hot ones:
// the same outputs, without Python at every new shape (CPU attention's meta
// kernel cost about 80 us a call, at every decoding step). They check nothing
// the Python kernels do not; a layout they get wrong is caught as any meta
// kernel's is, by the CPU reference run of each layout class
// (shape_inference.h).

// The dtype the CPU computes reduced-precision dtypes in.
at::ScalarType computation_dtype(at::ScalarType dtype) {
  switch (dtype) {
    case at::kBFloat16:
    case at::kHalf:
      return at::kFloat;
    case at::kComplexHalf:
      return at::kComplexFloat;
    default:
      return dtype;
  }
}

// Any call the transcriptions below do not follow the CPU kernel through is
// refused; shape inference then runs the CPU kernel itself, with its own
// errors and warnings.
void refuse_unless(bool condition) { TORCH_CHECK(condition, "no C++ meta kernel for this call"); }

// The floating dtypes the CPU's attention and normalization kernels have
// kernels for.
bool is_normalization_dtype(at::ScalarType dtype) {
  return dtype == at::kFloat || dtype == at::kDouble || dtype == at::kBFloat16 || dtype == at::kHalf;
}

// Calls the CPU attention kernel refuses are refused: dropout, other than
// 4-D [batch, heads, length, head size] inputs of a dtype it has a kernel
// for, unequal head sizes, a mask other than 2-D or 4-D, of another dtype
// than the query's or float, or that does not expand to the scores' shape. So are calls it would read out of bounds on:
// query, key and value of unequal dtypes or batches, key and value of unequal heads or lengths, query heads that are no
// multiple of theirs (grouped-query attention is).
void refuse_unusual_attention(const Tensor& query, const Tensor& key, const Tensor& value, double dropout_p,
                              const std::optional<Tensor>& attention_mask) {
  const at::ScalarType dtype = query.scalar_type();
  refuse_unless(dropout_p == 0.0 && is_normalization_dtype(dtype));
  refuse_unless(query.dim() == 4 && key.dim() == 4 && value.dim() == 4);
  refuse_unless(query.size(3) == value.size(3) && key.size(3) == value.size(3));
  refuse_unless(query.scalar_type() == key.scalar_type() && query.scalar_type() == value.scalar_type());
  refuse_unless(query.size(0) == key.size(0) && query.size(0) == value.size(0));
  refuse_unless(key.size(1) == value.size(1) && key.size(1) > 0 && query.size(1) % key.size(1) == 0);
  refuse_unless(key.size(2) == value.size(2));
  if (attention_mask.has_value() && attention_mask->defined()) {
    const Tensor& mask = *attention_mask;
    refuse_unless(mask.dim() == 2 || mask.dim() == 4);
    refuse_unless(mask.scalar_type() == at::kFloat || mask.scalar_type() == dtype);
    // The kernel expands the mask to [batch, query heads, query length, key length].
    const auto expands_to = [](int64_t size, int64_t target) { return size == 1 || size == target; };
    refuse_unless(
        mask.numel() == 0 ||
        (expands_to(mask.size(-2), query.size(2)) && expands_to(mask.size(-1), key.size(2)) &&
         (mask.dim() == 2 || (expands_to(mask.size(0), query.size(0)) && expands_to(mask.size(1), query.size(1))))));
  }
}

// (output, logsumexp): the output laid out like the query, logsumexp
// [batch, heads, query length] over a [batch, query length, heads] buffer.
std::tuple<Tensor, Tensor> cpu_flash_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                                               double dropout_p, bool is_causal,
                                               const std::optional<Tensor>& attention_mask,
                                               std::optional<double> scale) {
  refuse_unusual_attention(query, key, value, dropout_p, attention_mask);
  // ATen's own empty_like called directly: through the dispatcher its Meta kernel is Python too.
  Tensor attention = at::native::empty_like(query);
  Tensor logsumexp = at::empty({query.size(0), query.size(2), query.size(1)},
                               query.options().dtype(computation_dtype(query.scalar_type())))
                         .transpose(1, 2);
  return {attention, logsumexp};
}

// Gradients laid out [batch, length, heads, head size], as the CPU kernel writes them.
std::tuple<Tensor, Tensor, Tensor> cpu_flash_attention_backward(const Tensor& grad_output, const Tensor& query,
                                                                const Tensor& key, const Tensor& value,
                                                                const Tensor& output, const Tensor& logsumexp,
                                                                double dropout_p, bool is_causal,
                                                                const std::optional<Tensor>& attention_mask,
                                                                std::optional<double> scale) {
  refuse_unusual_attention(query, key, value, dropout_p, attention_mask);
  refuse_unless(grad_output.sizes() == output.sizes() && output.sizes() == query.sizes());
  const auto gradient_like = [](const Tensor& input) {
    return at::empty_permuted(input.sizes(), {0, 2, 1, 3}, input.options());
  };
  return {gradient_like(query), gradient_like(key), gradient_like(value)};
}

// native_layer_norm as the CPU kernel lays it out, which torch._refs' version
// (an elementwise program that keeps the input's stride order) does not: the
// output contiguous, mean and rstd contiguous over the input's leading
// dimensions with ones for the normalized ones, in float for a reduced-
// precision input with float parameters. The checks are the CPU kernel's own.
std::tuple<Tensor, Tensor, Tensor> cpu_layer_norm(const Tensor& input, c10::SymIntArrayRef normalized_shape,
                                                  const std::optional<Tensor>& weight_argument,
                                                  const std::optional<Tensor>& bias_argument, double eps) {
  const Tensor weight = weight_argument.value_or(Tensor());
  const Tensor bias = bias_argument.value_or(Tensor());
  const c10::IntArrayRef normalized = C10_AS_INTARRAYREF_SLOW(normalized_shape);
  // In the CPU kernel's order, so a call wrong in both ways gets its error.
  const bool mixed = at::native::is_mixed_type(input, weight, bias);
  if (mixed) at::native::check_mixed_data_type(input, weight, bias);
  at::native::_check_layer_norm_inputs(input, normalized, weight, bias);
  std::vector<int64_t> statistics_shape(input.sizes().begin(), input.sizes().end());
  std::fill(statistics_shape.end() - static_cast<std::ptrdiff_t>(normalized.size()), statistics_shape.end(), 1);
  const auto statistics_options = input.options().dtype(at::native::param_scalar_type(input, mixed));
  return {at::empty(input.sizes(), input.options()), at::empty(statistics_shape, statistics_options),
          at::empty(statistics_shape, statistics_options)};
}

// native_layer_norm_backward as the CPU kernel lays it out: every gradient
// contiguous, the parameters' like the parameters. A gradient asked for a
// missing parameter fails inside the CPU kernel; such calls, and gradients
// that are not the input's shape and dtype, are refused.
std::tuple<Tensor, Tensor, Tensor> cpu_layer_norm_backward(const Tensor& grad_output, const Tensor& input,
                                                           c10::SymIntArrayRef normalized_shape, const Tensor& mean,
                                                           const Tensor& rstd,
                                                           const std::optional<Tensor>& weight_argument,
                                                           const std::optional<Tensor>& bias_argument,
                                                           std::array<bool, 3> output_mask) {
  const Tensor weight = weight_argument.value_or(Tensor());
  const Tensor bias = bias_argument.value_or(Tensor());
  const at::ScalarType dtype = input.scalar_type();
  refuse_unless(is_normalization_dtype(dtype));
  refuse_unless(grad_output.sizes() == input.sizes() && grad_output.scalar_type() == dtype && mean.defined() &&
                rstd.defined() && (!output_mask[1] || weight.defined()) && (!output_mask[2] || bias.defined()));
  at::native::_check_layer_norm_inputs(input, C10_AS_INTARRAYREF_SLOW(normalized_shape), weight, bias);
  const auto contiguous_like = [](const Tensor& tensor) { return at::empty(tensor.sizes(), tensor.options()); };
  return {output_mask[0] ? contiguous_like(input) : Tensor(), output_mask[1] ? contiguous_like(weight) : Tensor(),
          output_mask[2] ? contiguous_like(bias) : Tensor()};
}

// In-place fills leave their tensor as it is (fill_.Scalar, zero_).
Tensor& fill_with_scalar(Tensor& self, const Scalar& value) { return self; }
Tensor& zero(Tensor& self) { return self; }

// index_select: the input's sizes with the indexed dimension as long as the
// index, contiguous (embedding runs through it, at every new token count).
// The dimension is wrapped with the CPU's check and message.
Tensor index_select(const Tensor& self, int64_t dim, const Tensor& index) {
  std::vector<int64_t> sizes(self.sizes().begin(), self.sizes().end());
  if (self.dim() > 0) sizes[static_cast<size_t>(at::maybe_wrap_dim(dim, self.dim()))] = index.numel();
  return at::empty(sizes, self.options());
}

// Runs a TensorIterator from `inputs` into `out`, resizing it as the CPU
// kernels built on one (logical_not, where) do. The iterator's layout rules
// do not depend on the device, so it runs on the meta tensors themselves
// (and on the 0-dim CPU tensors a call may mix in, which stay on the CPU).
Tensor& iterate_into(Tensor& out, std::initializer_list<Tensor> inputs) {
  at::TensorIteratorConfig config;
  config.check_all_same_dtype(false).allow_cpu_scalars(true).add_output(out);
  for (const Tensor& input : inputs) config.add_const_input(input);
  config.build();
  return out;
}

Tensor& logical_not_out(const Tensor& self, Tensor& out) { return iterate_into(out, {self}); }
Tensor logical_not(const Tensor& self) {
  Tensor out = at::empty({0}, self.options().dtype(at::kBool).device(c10::kMeta));
  return iterate_into(out, {self});
}

// arange into `out`: ATen's own kernel, which on a meta tensor checks the
// range, resizes `out` (warning as on the CPU when it held elements) and
// stops. An expanded `out` of the right count, which the CPU refuses when it
// writes, is refused.
Tensor& arange_out(const Scalar& start, const Scalar& end, const Scalar& step, Tensor& out) {
  const bool expanded = at::has_internal_overlap(out) == at::MemOverlap::Yes;
  const int64_t elements_before = out.numel();
  at::native::arange_out(start, end, step, out);
  refuse_unless(!expanded || out.numel() != elements_before);
  return out;
}

// where.self converts both values to their common dtype first (a copy laid
// out as empty_like lays it out), then iterates over condition and values
// into `out`, which must have that dtype.
Tensor& where_out(const Tensor& condition, const Tensor& self, const Tensor& other, Tensor& out) {
  refuse_unless(condition.scalar_type() == at::kBool);  // uint8 conditions warn on the CPU
  const at::ScalarType dtype = at::result_type(self, other);
  refuse_unless(out.scalar_type() == dtype);
  const auto converted = [&](const Tensor& value) {
    if (value.scalar_type() == dtype) return value;
    return at::native::empty_like(value, dtype, std::nullopt, std::nullopt, std::nullopt, c10::MemoryFormat::Preserve);
  };
  return iterate_into(out, {condition, converted(self), converted(other)});
}
Tensor where(const Tensor& condition, const Tensor& self, const Tensor& other) {
  Tensor out = at::empty({0}, self.options().dtype(at::result_type(self, other)).device(c10::kMeta));
  return where_out(condition, self, other, out);
}

// relu is clamp_min(self, 0) on the CPU, which refuses booleans first.
Tensor relu(const Tensor& self) {
  refuse_unless(self.scalar_type() != at::kBool);
  return at::meta::clamp_min(self, 0);
}
Tensor& relu_in_place(Tensor& self) {
  refuse_unless(self.scalar_type() != at::kBool);
  return at::meta::clamp_min_(self, 0);
}

// abs: a TensorIterator over the input, complex numbers giving their
// magnitudes' dtype; the CPU has no boolean kernel. The functional form
// reaches the device as abs.out.
Tensor& abs_out(const Tensor& self, Tensor& out) {
  refuse_unless(self.scalar_type() != at::kBool && out.scalar_type() == c10::toRealValueType(self.scalar_type()));
  return iterate_into(out, {self});
}
Tensor abs(const Tensor& self) {
  Tensor out = at::empty({0}, self.options().dtype(c10::toRealValueType(self.scalar_type())));
  return abs_out(self, out);
}

// isnan is self != self.
Tensor isnan(const Tensor& self) { return at::meta::ne(self, self); }

// logical_and, _or and _xor: a TensorIterator over both inputs, boolean
// unless written into an out= tensor.
Tensor& logical_binary_out(const Tensor& self, const Tensor& other, Tensor& out) {
  return iterate_into(out, {self, other});
}
Tensor logical_binary(const Tensor& self, const Tensor& other) {
  Tensor out = at::empty({0}, self.options().dtype(at::kBool).device(c10::kMeta));
  return iterate_into(out, {self, other});
}

// hardtanh (and relu6, which calls it) clamps into empty_like(self); the CPU
// refuses booleans and checks integral bounds, which are refused here.
Tensor hardtanh(const Tensor& self, const Scalar& min, const Scalar& max) {
  refuse_unless(at::isFloatingType(self.scalar_type()));
  return at::native::empty_like(self);
}

Tensor hardswish(const Tensor& self) {
  Tensor out = at::empty({0}, self.options());
  return iterate_into(out, {self});
}

// var and std over dimensions: a contiguous reduction of the input's real
// dtype. Calls whose CPU kernel may warn or refuse (no elements, a
// correction other than 0 or 1, no degrees of freedom left, repeated or no
// dimensions) are refused.
Tensor variance_like(const Tensor& self, OptionalDims dims, const std::optional<Scalar>& correction, bool keepdim) {
  refuse_unless(at::isFloatingType(self.scalar_type()) || at::isComplexType(self.scalar_type()));
  refuse_unless(self.dim() > 0 && self.numel() > 0);
  if (correction.has_value()) {
    const double value = correction->toDouble();
    refuse_unless(value == 0.0 || value == 1.0);
  }
  std::vector<bool> reduced(static_cast<size_t>(self.dim()), !dims.has_value());
  if (dims.has_value()) {
    refuse_unless(!dims->empty());
    for (const int64_t dim : *dims) {
      const auto wrapped = static_cast<size_t>(at::maybe_wrap_dim(dim, self.dim()));
      refuse_unless(!reduced[wrapped]);
      reduced[wrapped] = true;
    }
  }
  std::vector<int64_t> sizes;
  int64_t reduced_elements = 1;
  for (int64_t dim = 0; dim < self.dim(); ++dim) {
    if (!reduced[static_cast<size_t>(dim)]) {
      sizes.push_back(self.size(dim));
    } else {
      reduced_elements *= self.size(dim);
      if (keepdim) sizes.push_back(1);
    }
  }
  // No degrees of freedom left: the CPU warns on every such call.
  refuse_unless(reduced_elements > (correction.has_value() ? correction->toDouble() : 1.0));
  return at::empty(sizes, self.options().dtype(c10::toRealValueType(self.scalar_type())));
}

// ---- batch norm, as the CPU kernel lays it out ---------------------------
//
// Its Python meta kernel is a decomposition of some thirty reference
// operators: about 3 ms a call, forward and backward, at every new batch size.

bool dense_in_a_memory_format(const Tensor& tensor) {
  return tensor.is_contiguous() || tensor.is_contiguous(at::MemoryFormat::ChannelsLast) ||
         tensor.is_contiguous(at::MemoryFormat::ChannelsLast3d);
}

// The memory format a tensor dense in one of them is dense in (contiguous
// first: a tensor may be both).
at::MemoryFormat dense_memory_format(const Tensor& tensor) {
  if (tensor.is_contiguous()) return at::MemoryFormat::Contiguous;
  return tensor.is_contiguous(at::MemoryFormat::ChannelsLast3d) ? at::MemoryFormat::ChannelsLast3d
                                                                : at::MemoryFormat::ChannelsLast;
}

bool contiguous_if_given(const Tensor& tensor) { return !tensor.defined() || tensor.is_contiguous(); }

// Refuses what the CPU kernel does not take as it is: no elements, dtypes it
// has no kernel for, per-channel tensors of another shape (which the kernel
// does not check, and batch_norm checks before it) or of another dtype than
// the parameters' (the input's, or float beside a reduced-precision input).
// `any_count`: tensors the kernel reads as 1-D whatever their length
// (statistics evaluation did not save).
void refuse_unusual_batch_norm(const Tensor& input, bool mixed, std::initializer_list<Tensor> per_channel,
                               std::initializer_list<Tensor> any_count = {}) {
  const at::ScalarType dtype = input.scalar_type();
  refuse_unless(input.dim() >= 2 && input.numel() > 0);
  refuse_unless(is_normalization_dtype(dtype));
  const at::ScalarType parameter_dtype = mixed ? at::kFloat : dtype;
  for (const Tensor& tensor : per_channel) {
    refuse_unless(!tensor.defined() ||
                  (tensor.dim() == 1 && tensor.numel() == input.size(1) && tensor.scalar_type() == parameter_dtype));
  }
  for (const Tensor& tensor : any_count) {
    refuse_unless(!tensor.defined() || (tensor.dim() == 1 && tensor.scalar_type() == parameter_dtype));
  }
}

std::tuple<Tensor, Tensor, Tensor> batch_norm(const Tensor& input, const std::optional<Tensor>& weight_argument,
                                              const std::optional<Tensor>& bias_argument,
                                              const std::optional<Tensor>& running_mean_argument,
                                              const std::optional<Tensor>& running_var_argument, bool training,
                                              double momentum, double eps) {
  const Tensor weight = weight_argument.value_or(Tensor());
  const Tensor bias = bias_argument.value_or(Tensor());
  const Tensor running_mean = running_mean_argument.value_or(Tensor());
  const Tensor running_var = running_var_argument.value_or(Tensor());
  const bool mixed = at::native::is_mixed_type(input, weight, bias, running_mean, running_var);
  if (mixed) at::native::check_mixed_data_type(input, weight, bias, running_mean, running_var);
  refuse_unusual_batch_norm(input, mixed, {weight, bias, running_mean, running_var});
  refuse_unless(training || (running_mean.defined() && running_var.defined()));
  const bool all_contiguous = dense_in_a_memory_format(input) && contiguous_if_given(weight) &&
                              contiguous_if_given(bias) && contiguous_if_given(running_mean) &&
                              contiguous_if_given(running_var);
  const Tensor output =
      at::native::empty_like(input, std::nullopt, std::nullopt, std::nullopt, std::nullopt,
                             all_contiguous ? dense_memory_format(input) : input.suggest_memory_format());
  // Saved statistics per channel when training; none in evaluation.
  const auto statistics_options = input.options().dtype(mixed ? at::kFloat : input.scalar_type());
  const int64_t channels = training ? input.size(1) : 0;
  return {output, at::empty({channels}, statistics_options), at::empty({channels}, statistics_options)};
}

std::tuple<Tensor, Tensor, Tensor> batch_norm_backward(const Tensor& grad_output, const Tensor& input,
                                                       const std::optional<Tensor>& weight_argument,
                                                       const std::optional<Tensor>& running_mean_argument,
                                                       const std::optional<Tensor>& running_var_argument,
                                                       const std::optional<Tensor>& save_mean_argument,
                                                       const std::optional<Tensor>& save_invstd_argument, bool training,
                                                       double eps, std::array<bool, 3> output_mask) {
  const Tensor weight = weight_argument.value_or(Tensor());
  const Tensor running_mean = running_mean_argument.value_or(Tensor());
  const Tensor running_var = running_var_argument.value_or(Tensor());
  const Tensor save_mean = save_mean_argument.value_or(Tensor());
  const Tensor save_invstd = save_invstd_argument.value_or(Tensor());
  const bool mixed = at::native::is_mixed_type(input, weight, running_mean, running_var, save_mean, save_invstd);
  if (mixed) at::native::check_mixed_data_type(input, weight, running_mean, running_var, save_mean, save_invstd);
  // In evaluation the forward saved no statistics: autograd passes empty ones.
  if (training) {
    refuse_unusual_batch_norm(input, mixed, {weight, running_mean, running_var, save_mean, save_invstd});
  } else {
    refuse_unusual_batch_norm(input, mixed, {weight, running_mean, running_var}, {save_mean, save_invstd});
  }
  refuse_unless(grad_output.sizes() == input.sizes() && grad_output.scalar_type() == input.scalar_type());
  refuse_unless(training ? save_mean.defined() && save_invstd.defined()
                         : running_mean.defined() && running_var.defined());
  const bool all_contiguous = dense_in_a_memory_format(input) && dense_in_a_memory_format(grad_output) &&
                              input.suggest_memory_format() == grad_output.suggest_memory_format();
  const auto parameter_options = input.options().dtype(mixed ? at::kFloat : input.scalar_type());
  Tensor grad_input;
  Tensor grad_weight;
  Tensor grad_bias;
  if (output_mask[0]) {
    grad_input = at::native::empty_like(input, std::nullopt, std::nullopt, std::nullopt, std::nullopt,
                                        all_contiguous ? dense_memory_format(input) : input.suggest_memory_format());
  }
  if (output_mask[1]) grad_weight = at::empty({input.size(1)}, parameter_options);
  if (output_mask[2]) grad_bias = at::empty({input.size(1)}, parameter_options);
  return {grad_input, grad_weight, grad_bias};
}

// Dropout's backward is grad_output * mask * scale: the product's layout and
// dtype (a mask of any dtype is accepted, and promotes).
Tensor dropout_backward(const Tensor& grad_output, const Tensor& mask, double scale) {
  return at::meta::mul(grad_output, mask);
}

// masked_fill_ fills `self` where a boolean mask that broadcasts to it is
// set; an expanded `self` (a deprecation warning on the CPU) is refused.
void check_masked_fill(const Tensor& self, const Tensor& mask) {
  refuse_unless(mask.scalar_type() == at::kBool);
  refuse_unless(at::infer_size(self.sizes(), mask.sizes()) == self.sizes());
  refuse_unless(at::has_internal_overlap(self) != at::MemOverlap::Yes);
}
Tensor& masked_fill_with_scalar(Tensor& self, const Tensor& mask, const Scalar& value) {
  check_masked_fill(self, mask);
  return self;
}
Tensor& masked_fill_with_tensor(Tensor& self, const Tensor& mask, const Tensor& value) {
  check_masked_fill(self, mask);
  refuse_unless(value.dim() == 0);
  return self;
}

// The out-of-place masked_fill: the input broadcast against the mask, copied
// contiguous, then filled in place.
template <typename Value>
Tensor masked_fill(const Tensor& self, const Tensor& mask, const Value& value) {
  Tensor result = at::empty(at::infer_size(self.sizes(), mask.sizes()), self.options());
  if constexpr (std::is_same_v<Value, Tensor>) {
    masked_fill_with_tensor(result, mask, value);
  } else {
    masked_fill_with_scalar(result, mask, value);
  }
  return result;
}

// max() and min() over every element: a 0-dim tensor of the input's dtype.
// An empty input is an error the CPU kernel words.
Tensor all_elements_extremum(const Tensor& self) {
  refuse_unless(self.numel() > 0);
  return at::empty({}, self.options());
}

std::vector<Entry> transcribed_entries() {
  return {
      Entry{"aten::_scaled_dot_product_flash_attention_for_cpu", "",
            c10::KernelFunction::makeFromUnboxedFunction(TORCH_FN(cpu_flash_attention))},
      Entry{"aten::_scaled_dot_product_flash_attention_for_cpu_backward", "",
            c10::KernelFunction::makeFromUnboxedFunction(TORCH_FN(cpu_flash_attention_backward))},
      Entry{"aten::native_layer_norm", "", c10::KernelFunction::makeFromUnboxedFunction(TORCH_FN(cpu_layer_norm))},
      Entry{"aten::native_layer_norm_backward", "",
            c10::KernelFunction::makeFromUnboxedFunction(TORCH_FN(cpu_layer_norm_backward))},
      Entry{"aten::fill_", "Scalar", c10::KernelFunction::makeFromUnboxedFunction(TORCH_FN(fill_with_scalar))},
      Entry{"aten::zero_", "", c10::KernelFunction::makeFromUnboxedFunction(TORCH_FN(zero))},
      Entry{"aten::index_select", "", c10::KernelFunction::makeFromUnboxedFunction(TORCH_FN(index_select))},
      Entry{"aten::logical_not", "", c10::KernelFunction::makeFromUnboxedFunction(TORCH_FN(logical_not))},
      Entry{"aten::logical_not", "out", c10::KernelFunction::makeFromUnboxedFunction(TORCH_FN(logical_not_out))},
      Entry{"aten::arange", "start_out", c10::KernelFunction::makeFromUnboxedFunction(TORCH_FN(arange_out))},
      Entry{"aten::where", "self_out", c10::KernelFunction::makeFromUnboxedFunction(TORCH_FN(where_out))},
      Entry{"aten::abs", "", c10::KernelFunction::makeFromUnboxedFunction(TORCH_FN(abs))},
      Entry{"aten::abs", "out", c10::KernelFunction::makeFromUnboxedFunction(TORCH_FN(abs_out))},
      Entry{"aten::logical_and", "out", c10::KernelFunction::makeFromUnboxedFunction(TORCH_FN(logical_binary_out))},
      Entry{"aten::logical_or", "out", c10::KernelFunction::makeFromUnboxedFunction(TORCH_FN(logical_binary_out))},
      Entry{"aten::logical_xor", "out", c10::KernelFunction::makeFromUnboxedFunction(TORCH_FN(logical_binary_out))},
      Entry{"aten::isnan", "", c10::KernelFunction::makeFromUnboxedFunction(TORCH_FN(isnan))},
      Entry{"aten::logical_and", "", c10::KernelFunction::makeFromUnboxedFunction(TORCH_FN(logical_binary))},
      Entry{"aten::logical_or", "", c10::KernelFunction::makeFromUnboxedFunction(TORCH_FN(logical_binary))},
      Entry{"aten::logical_xor", "", c10::KernelFunction::makeFromUnboxedFunction(TORCH_FN(logical_binary))},
      Entry{"aten::hardtanh", "", c10::KernelFunction::makeFromUnboxedFunction(TORCH_FN(hardtanh))},
      Entry{"aten::hardswish", "", c10::KernelFunction::makeFromUnboxedFunction(TORCH_FN(hardswish))},
      Entry{"aten::var", "correction", c10::KernelFunction::makeFromUnboxedFunction(TORCH_FN(variance_like))},
      Entry{"aten::std", "correction", c10::KernelFunction::makeFromUnboxedFunction(TORCH_FN(variance_like))},
      Entry{"aten::native_batch_norm", "", c10::KernelFunction::makeFromUnboxedFunction(TORCH_FN(batch_norm))},
      Entry{"aten::native_batch_norm_backward", "",
            c10::KernelFunction::makeFromUnboxedFunction(TORCH_FN(batch_norm_backward))},
      Entry{"aten::relu", "", c10::KernelFunction::makeFromUnboxedFunction(TORCH_FN(relu))},
      Entry{"aten::relu_", "", c10::KernelFunction::makeFromUnboxedFunction(TORCH_FN(relu_in_place))},
      Entry{"aten::native_dropout_backward", "",
            c10::KernelFunction::makeFromUnboxedFunction(TORCH_FN(dropout_backward))},
      Entry{"aten::where", "self", c10::KernelFunction::makeFromUnboxedFunction(TORCH_FN(where))},
      Entry{"aten::masked_fill_", "Scalar",
            c10::KernelFunction::makeFromUnboxedFunction(TORCH_FN(masked_fill_with_scalar))},
      Entry{"aten::masked_fill_", "Tensor",
            c10::KernelFunction::makeFromUnboxedFunction(TORCH_FN(masked_fill_with_tensor))},
      Entry{"aten::masked_fill", "Scalar", c10::KernelFunction::makeFromUnboxedFunction(TORCH_FN(masked_fill<Scalar>))},
      Entry{"aten::masked_fill", "Tensor", c10::KernelFunction::makeFromUnboxedFunction(TORCH_FN(masked_fill<Tensor>))},
      Entry{"aten::max", "", c10::KernelFunction::makeFromUnboxedFunction(TORCH_FN(all_elements_extremum))},
      Entry{"aten::min", "", c10::KernelFunction::makeFromUnboxedFunction(TORCH_FN(all_elements_extremum))},
  };
}

using Table = std::unordered_map<const c10::FunctionSchema*, c10::KernelFunction>;

Table build_table() {
  Table table;
  std::vector<Entry> all = entries();
  for (Entry& entry : transcribed_entries()) all.push_back(std::move(entry));
  for (Entry& entry : absent_meta_kernel_entries()) all.push_back(std::move(entry));
  for (Entry& entry : all) {
    const auto op = c10::Dispatcher::singleton().findSchema({entry.name, entry.overload});
    if (op.has_value()) table.emplace(&op->schema(), std::move(entry.kernel));
  }
  return table;
}

}  // namespace

const c10::KernelFunction* native_meta_kernel(const c10::OperatorHandle& op) {
  static const Table table = build_table();
  const auto found = table.find(&op.schema());
  return found != table.end() ? &found->second : nullptr;
}

}  // namespace axon
