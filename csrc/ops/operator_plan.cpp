#include "ops/operator_plan.h"

#include <algorithm>
#include <array>
#include <memory>
#include <mutex>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "ops/native_meta_kernels.h"

namespace axon {
namespace {

bool is_tensor_type(const c10::TypePtr& type) {
  return type->kind() == c10::TypeKind::TensorType ||
         (type->kind() == c10::TypeKind::ListType && type->containedType(0)->kind() == c10::TypeKind::TensorType);
}

// Operators whose output size depends on the input values.
bool has_data_dependent_output(const std::string& name) {
  static const std::unordered_set<std::string> names = {
      "aten::nonzero",
      "aten::masked_select",
      "aten::_unique",
      "aten::_unique2",
      "aten::unique_dim",
      "aten::unique_consecutive",
      "aten::unique_dim_consecutive",
      "aten::repeat_interleave",
      "aten::bincount",
  };
  return names.count(name) > 0;
}

// Operators whose CPU kernels do far more work than the bytes they cover say,
// so that below kSingleThreadBelowBytes the worker's team still pays
// (OperatorPlan::team_at_any_size; ATen's own grain of 32768 elements keeps
// smaller element-wise calls on one thread either way). Measured on 65,536
// floats (docs/benchmarks.md, stop 57): each element-wise function here took
// 30-1500 us on one thread and 0.5x that on two, where an add took 6 us.
// Also topk (0.08 ms on two threads, 0.43-0.58 on one for 256 rows of 256),
// the cumulative scans, adaptive average pooling and avg_pool3d's forward
// (about 2 ns an element on one thread), and the LAPACK factorizations and solves that were
// 1.3-2x faster on two threads at 256x256 in every process measured. Left
// out: QR, SVD, eigh and FFTs, whose two-thread runs were faster in some
// processes and up to 1.5x slower in others; and pow, whose common exponents
// (2, 3, 0.5) ATen computes as products or a square root, a few ns an element.
bool runs_with_team_at_any_size(const std::string& name) {
  // clang-format off
  static const std::unordered_set<std::string> stems = {
      "exp", "expm1", "log", "log10", "log1p", "log2", "xlogy",                    // exponentials, logarithms
      "sin", "cos", "tan", "asin", "acos", "atan", "atan2",                        // trigonometric
      "sinh", "cosh", "tanh", "asinh", "acosh", "atanh",                           // hyperbolic
      "erf", "erfc", "erfinv", "lgamma", "digamma", "polygamma", "i0", "sinc",     // special functions
      "logit", "softplus", "mish", "mish_backward", "elu", "gelu_backward",        // activations
      "log_sigmoid_forward", "log_sigmoid_backward",
      "fmod", "remainder", "floor_divide",                                         // divisions that round
      "topk", "cumsum", "cumprod", "logcumsumexp",                                 // selections and scans
      "_adaptive_avg_pool2d", "_adaptive_avg_pool2d_backward", "avg_pool3d",       // pooling
      "linalg_cholesky_ex", "linalg_inv_ex", "_linalg_solve_ex", "linalg_lu_factor_ex", "linalg_lu_solve",
      "linalg_matrix_exp",                                                         // LAPACK and products
  };
  // clang-format on
  if (name.rfind("aten::", 0) != 0) return false;
  std::string stem = name.substr(6);
  if (!stem.empty() && stem.back() == '_') stem.pop_back();  // the in-place form
  return stems.count(stem) > 0;
}

// Operators whose CPU `.out` kernel, written by hand rather than generated,
// is the functional kernel followed by a copy into out= (the MKL FFTs: a
// 2048×2048 rfft spent an eighth of its time copying). The functional kernel
// builds its results in the outputs instead (host_execution/results_in_place.h).
bool out_kernel_copies_a_functional_result(const std::string& name) {
  static const std::unordered_set<std::string> names = {
      "aten::_fft_r2c",
      "aten::_fft_c2r",
      "aten::_fft_c2c",
  };
  return names.count(name) > 0;
}

// The overload names of operator `name` (e.g. "aten::add": "Tensor", "out",
// ...), from an index of every operator the dispatcher has. Why an index:
// listing the dispatcher's operators copies some 3,000 names, about 1 ms, which
// each new operator's first call paid (or the process's first, with the list
// kept). Operators registered after the index was built (a library imported
// later) rebuild it when first asked for.
std::vector<std::string> overload_names(const std::string& name) {
  static std::mutex mutex;
  static std::unordered_map<std::string, std::vector<std::string>> index;
  const std::lock_guard<std::mutex> lock(mutex);
  auto found = index.find(name);
  if (found == index.end()) {
    index.clear();
    for (const c10::OperatorName& op : c10::Dispatcher::singleton().getAllOpNames()) {
      index[op.name].push_back(op.overload_name);
    }
    found = index.find(name);
    if (found == index.end()) return {};
  }
  return found->second;
}

// The `.out` overload of a functional op: same leading arguments, then one
// kwarg-only mutable tensor argument per return.
std::optional<c10::OperatorHandle> find_out_operator(const c10::FunctionSchema& functional) {
  auto& dispatcher = c10::Dispatcher::singleton();
  const auto& args = functional.arguments();
  const auto& returns = functional.returns();
  for (const std::string& overload : overload_names(functional.name())) {
    if (overload == functional.overload_name()) continue;
    auto candidate = dispatcher.findSchema({functional.name(), overload});
    if (!candidate.has_value()) {
      continue;
    }
    const auto& candidate_args = candidate->schema().arguments();
    if (candidate_args.size() != args.size() + returns.size()) {
      continue;
    }
    bool matches = true;
    for (size_t i = 0; i < args.size() && matches; ++i) {
      matches = candidate_args[i].name() == args[i].name() && *candidate_args[i].type() == *args[i].type();
    }
    for (size_t i = 0; i < returns.size() && matches; ++i) {
      const auto& out = candidate_args[args.size() + i];
      matches = out.is_out() && *out.type() == *returns[i].type();
    }
    if (matches) {
      return candidate;
    }
  }
  return std::nullopt;
}

// Arguments ATen's CPU kernels write that their schemas do not mark as
// written: native_batch_norm and batch_norm_update_stats update the running
// statistics in place (the functional and legit forms mark or return them).
bool writes_without_annotation(const std::string& op, const std::string& argument) {
  return (op == "aten::native_batch_norm" || op == "aten::batch_norm_update_stats") &&
         (argument == "running_mean" || argument == "running_var");
}

OperatorPlan make_plan(const c10::OperatorHandle& op) {
  const auto& schema = op.schema();
  OperatorPlan plan;
  plan.name = schema.name();
  if (!schema.overload_name().empty()) {
    plan.name += "." + schema.overload_name();
  }
  const auto& args = schema.arguments();
  bool has_mutable_argument = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const bool is_mutable = args[i].alias_info() != nullptr && args[i].alias_info()->isWrite();
    plan.argument_is_mutable.push_back(is_mutable);
    plan.argument_is_written.push_back(is_mutable || writes_without_annotation(schema.name(), args[i].name()));
    has_mutable_argument = has_mutable_argument || is_mutable;
    if (args[i].type()->kind() == c10::TypeKind::OptionalType &&
        args[i].type()->containedType(0)->kind() == c10::TypeKind::GeneratorType) {
      plan.generator_argument = static_cast<int>(i);
    }
  }
  plan.team_at_any_size = runs_with_team_at_any_size(schema.name());
  if (schema.name() == "aten::mm" || schema.name() == "aten::bmm" || schema.name() == "aten::mv") {
    plan.product_first_factor = 0;
  }
  // mv runs as addmv_ into its result.
  static const std::array<std::string_view, 8> kBiasFirst = {"aten::addmm",    "aten::addmm_", "aten::baddbmm",
                                                             "aten::baddbmm_", "aten::addbmm", "aten::addbmm_",
                                                             "aten::addmv",    "aten::addmv_"};
  if (std::find(kBiasFirst.begin(), kBiasFirst.end(), schema.name()) != kBiasFirst.end()) {
    plan.product_first_factor = 1;
  }
  const bool indexing = schema.name() == "aten::index" || schema.name() == "aten::index_put_" ||
                        schema.name() == "aten::index_put" || schema.name() == "aten::_index_put_impl_" ||
                        schema.name() == "aten::index_fill_" || schema.name() == "aten::index_fill";
  for (size_t i = 0; i < args.size() && indexing; ++i) {
    if (args[i].name() == "indices" || args[i].name() == "index") plan.host_index_argument = static_cast<int>(i);
  }
  for (size_t i = 0; i < args.size(); ++i) {
    const c10::TypePtr& type = args[i].type();
    if (type->kind() == c10::TypeKind::ListType && type->containedType(0)->kind() == c10::TypeKind::OptionalType &&
        type->containedType(0)->containedType(0)->kind() == c10::TypeKind::TensorType) {
      plan.optional_tensor_list_arguments.push_back(static_cast<int>(i));
    }
  }
  bool fresh_tensor_returns = false;
  bool non_tensor_returns = false;
  for (const auto& ret : schema.returns()) {
    int aliased = -1;
    if (ret.alias_info() != nullptr) {
      if (!ret.alias_info()->isWrite()) {
        plan.unsupported_reason = "it returns a view of its input (views need a dedicated kernel)";
      }
      for (size_t i = 0; i < args.size(); ++i) {
        if (args[i].alias_info() != nullptr && args[i].alias_info()->beforeSets() == ret.alias_info()->beforeSets()) {
          aliased = static_cast<int>(i);
        }
      }
    } else if (is_tensor_type(ret.type())) {
      fresh_tensor_returns = true;
    } else {
      non_tensor_returns = true;
    }
    plan.return_argument.push_back(aliased);
  }
  if (non_tensor_returns || has_data_dependent_output(schema.name())) {
    plan.strategy = Strategy::kSynchronous;
  } else if (!fresh_tensor_returns) {
    plan.strategy = Strategy::kInPlace;
  } else if (!has_mutable_argument && !out_kernel_copies_a_functional_result(schema.name()) &&
             (plan.out_operator = find_out_operator(schema)).has_value() &&
             plan.out_operator->hasKernelForDispatchKey(c10::DispatchKey::CPU)) {
    plan.strategy = Strategy::kOutVariant;
  } else {
    // Also where the `.out` overload is PyTorch's generated composite (the
    // functional kernel, then a copy into out=): the functional kernel can
    // build its results in the outputs (host_execution/results_in_place.h).
    plan.out_operator.reset();
    plan.strategy = Strategy::kCopyBack;
  }
  return plan;
}

}  // namespace

const OperatorPlan& plan_for(const c10::OperatorHandle& op) {
  static std::mutex mutex;
  static std::unordered_map<const c10::FunctionSchema*, std::unique_ptr<OperatorPlan>> plans;
  std::lock_guard<std::mutex> lock(mutex);
  auto& slot = plans[&op.schema()];
  if (!slot) {
    slot = std::make_unique<OperatorPlan>(make_plan(op));
  }
  return *slot;
}

void prepare_operator_plans() {
  overload_names("aten::add");
  native_meta_kernel(c10::Dispatcher::singleton().findSchemaOrThrow("aten::add", "Tensor"));
}

}  // namespace axon
