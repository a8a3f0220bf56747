#include "ops/stream_kernel.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/LegacyTypeDispatch.h>
#include <ATen/ops/empty_strided.h>

#include <mutex>
#include <unordered_map>
#include <unordered_set>

#include "core/check.h"
#include "core/generator.h"
#include "core/stream.h"
#include "ops/host_alias.h"
#include "ops/stream_launch.h"

namespace axon {
namespace {

enum class Strategy {
  kOutVariant,   // functional op: CPU `.out` overload writes into fresh outputs
  kInPlace,      // every return aliases a mutable argument (in-place, out=)
  kCopyBack,     // CPU op runs on the stream, fresh results copied to outputs
  kSynchronous,  // shape or result depends on data: drain stream, run now
};

struct OperatorPlan {
  std::string name;
  Strategy strategy = Strategy::kCopyBack;
  std::optional<c10::OperatorHandle> out_operator;
  // For each return: the argument it aliases (in-place / out=), or -1.
  std::vector<int> return_argument;
  int generator_argument = -1;
  // Set when the op cannot run through this kernel at all (view results).
  std::string unsupported_reason;
};

bool is_tensor_type(const c10::TypePtr& type) {
  return type->kind() == c10::TypeKind::TensorType ||
      (type->kind() == c10::TypeKind::ListType &&
       type->containedType(0)->kind() == c10::TypeKind::TensorType);
}

// Operators whose output size depends on the input values.
bool has_data_dependent_output(const std::string& name) {
  static const std::unordered_set<std::string> names = {
      "aten::nonzero", "aten::masked_select", "aten::_unique", "aten::_unique2",
      "aten::unique_dim", "aten::unique_consecutive", "aten::unique_dim_consecutive",
      "aten::repeat_interleave", "aten::bincount",
  };
  return names.count(name) > 0;
}

// The `.out` overload of a functional op: same leading arguments, then one
// kwarg-only mutable tensor argument per return.
std::optional<c10::OperatorHandle> find_out_operator(const c10::FunctionSchema& functional) {
  auto& dispatcher = c10::Dispatcher::singleton();
  static const auto all_names = dispatcher.getAllOpNames();
  const auto& args = functional.arguments();
  const auto& returns = functional.returns();
  for (const auto& candidate_name : all_names) {
    if (candidate_name.name != functional.name() || candidate_name.overload_name == functional.overload_name()) {
      continue;
    }
    auto candidate = dispatcher.findSchema(candidate_name);
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
    if (args[i].alias_info() != nullptr && args[i].alias_info()->isWrite()) {
      has_mutable_argument = true;
    }
    if (args[i].type()->kind() == c10::TypeKind::OptionalType &&
        args[i].type()->containedType(0)->kind() == c10::TypeKind::GeneratorType) {
      plan.generator_argument = static_cast<int>(i);
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
  } else if (!has_mutable_argument && (plan.out_operator = find_out_operator(schema)).has_value()) {
    plan.strategy = Strategy::kOutVariant;
  } else {
    plan.strategy = Strategy::kCopyBack;
  }
  return plan;
}

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

// ---- argument inspection --------------------------------------------------

template <typename F>
void for_each_tensor(const c10::IValue& value, F&& visit) {
  if (value.isTensor()) {
    visit(value.toTensor());
  } else if (value.isTensorList()) {
    for (const at::Tensor& tensor : value.toTensorList()) visit(tensor);
  } else if (value.isOptionalTensorList()) {
    for (const std::optional<at::Tensor>& tensor : value.toOptionalTensorList()) {
      if (tensor.has_value()) visit(*tensor);
    }
  }
}

// The single axon device of the call; throws on mixed devices.
c10::Device common_device(const OperatorPlan& plan, c10::ArrayRef<c10::IValue> args) {
  std::optional<c10::Device> device;
  std::optional<c10::Device> offending;
  for (const auto& arg : args) {
    for_each_tensor(arg, [&](const at::Tensor& tensor) {
      if (!tensor.defined()) return;
      if (tensor.is_privateuseone()) {
        if (!device.has_value()) {
          device = tensor.device();
        } else if (*device != tensor.device() && !offending.has_value()) {
          offending = tensor.device();
        }
      } else if (!(tensor.is_cpu() && tensor.dim() == 0) && !offending.has_value()) {
        offending = tensor.device();
      }
    });
  }
  TORCH_CHECK(device.has_value(), "[axon] ", plan.name, ": expected at least one axon tensor argument");
  TORCH_CHECK(!offending.has_value(),
              "Expected all tensors to be on the same device, but found at least two devices, ",
              *device, " and ", *offending, "! (in ", plan.name, " on axon)");
  return *device;
}

at::Tensor to_meta(const at::Tensor& tensor) {
  if (!tensor.defined() || !tensor.is_privateuseone()) {
    return tensor;
  }
  return at::empty_strided(tensor.sizes(), tensor.strides(),
                           tensor.options().device(c10::kMeta).requires_grad(false));
}

c10::IValue to_meta_ivalue(const c10::IValue& value) {
  if (value.isTensor()) {
    return to_meta(value.toTensor());
  }
  if (value.isTensorList()) {
    c10::List<at::Tensor> list;
    for (const at::Tensor& tensor : value.toTensorList()) list.push_back(to_meta(tensor));
    return list;
  }
  if (value.isOptionalTensorList()) {
    c10::List<std::optional<at::Tensor>> list;
    for (const std::optional<at::Tensor>& tensor : value.toOptionalTensorList()) {
      list.push_back(tensor.has_value() ? std::optional<at::Tensor>(to_meta(*tensor)) : std::nullopt);
    }
    return list;
  }
  return value;
}

at::Tensor allocate_like_meta(const at::Tensor& meta, c10::Device device) {
  return at::empty_strided(meta.sizes(), meta.strides(), meta.options().device(device));
}

c10::IValue allocate_like_meta_ivalue(const c10::IValue& meta, c10::Device device) {
  if (meta.isTensor()) {
    return allocate_like_meta(meta.toTensor(), device);
  }
  TORCH_INTERNAL_ASSERT(meta.isTensorList(), "[axon] unexpected meta result ", meta.tagKind());
  c10::List<at::Tensor> list;
  for (const at::Tensor& tensor : meta.toTensorList()) list.push_back(allocate_like_meta(tensor, device));
  return list;
}

// Brings an out= argument to the shape the meta run resized its twin to.
void resize_like_meta(const c10::IValue& real, const c10::IValue& meta) {
  if (real.isTensor() && meta.isTensor()) {
    const at::Tensor& tensor = real.toTensor();
    const at::Tensor& shape = meta.toTensor();
    if (tensor.defined() && tensor.sizes() != shape.sizes()) {
      tensor.resize_(shape.sizes());
    }
    if (tensor.defined() && tensor.strides() != shape.strides() && tensor.sizes() == shape.sizes()) {
      tensor.as_strided_(shape.sizes(), shape.strides(), tensor.storage_offset());
    }
  } else if (real.isTensorList() && meta.isTensorList()) {
    auto reals = real.toTensorList();
    auto metas = meta.toTensorList();
    for (size_t i = 0; i < reals.size() && i < metas.size(); ++i) {
      resize_like_meta(reals.get(i), metas.get(i));
    }
  }
}

int64_t largest_numel(c10::ArrayRef<c10::IValue> values) {
  int64_t largest = 0;
  for (const auto& value : values) {
    for_each_tensor(value, [&](const at::Tensor& tensor) {
      if (tensor.defined()) largest = std::max(largest, tensor.numel());
    });
  }
  return largest;
}

// Replaces an axon generator argument by a CPU generator seeded from a fresh
// range of the axon generator's counters, so results follow manual_seed and
// get/set_rng_state of the axon device.
void substitute_generator(torch::jit::Stack& cpu_args, const OperatorPlan& plan, c10::Device device,
                          int64_t numel) {
  if (plan.generator_argument < 0) {
    return;
  }
  auto& slot = cpu_args[plan.generator_argument];
  std::optional<at::Generator> requested;
  if (!slot.isNone()) {
    requested = slot.toGenerator();
  }
  AxonGeneratorImpl* generator = resolve_generator(requested, device.index());
  const auto [seed, block] = generator->reserve_blocks(1 + static_cast<uint64_t>(numel) / 4);
  // splitmix64 of (seed, block): distinct counter ranges give unrelated streams.
  uint64_t mixed = seed ^ (block * 0x9E3779B97F4A7C15ULL);
  mixed = (mixed ^ (mixed >> 30)) * 0xBF58476D1CE4E5B9ULL;
  mixed = (mixed ^ (mixed >> 27)) * 0x94D049BB133111EBULL;
  mixed ^= mixed >> 31;
  slot = at::detail::createCPUGenerator(mixed);
}

torch::jit::Stack host_aliases(c10::ArrayRef<c10::IValue> args) {
  torch::jit::Stack aliases;
  aliases.reserve(args.size());
  for (const auto& arg : args) aliases.push_back(host_alias_ivalue(arg));
  return aliases;
}

void copy_into(const c10::IValue& destination_alias, const c10::IValue& result) {
  if (destination_alias.isTensor()) {
    destination_alias.toTensor().copy_(result.toTensor());
    return;
  }
  auto destinations = destination_alias.toTensorList();
  auto results = result.toTensorList();
  for (size_t i = 0; i < destinations.size(); ++i) destinations.get(i).copy_(results.get(i));
}

// ---- execution strategies -------------------------------------------------

void run_synchronously(const c10::OperatorHandle& op, const OperatorPlan& plan, torch::jit::Stack* stack,
                       c10::Device device, size_t num_args) {
  AXON_CHECK(axon_stream_synchronize(current_stream_handle(device.index())), plan.name.c_str());
  auto args = torch::jit::last(*stack, num_args);
  torch::jit::Stack cpu_stack = host_aliases(args);
  substitute_generator(cpu_stack, plan, device, largest_numel(args));
  std::vector<c10::IValue> originals(args.begin(), args.end());
  {
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    op.callBoxed(cpu_stack);
  }
  torch::jit::drop(*stack, num_args);
  for (size_t i = 0; i < cpu_stack.size(); ++i) {
    const int aliased = plan.return_argument[i];
    if (aliased >= 0) {
      stack->push_back(originals[aliased]);
    } else if (cpu_stack[i].isTensor()) {
      const at::Tensor result = cpu_stack[i].toTensor().contiguous();
      at::Tensor on_device = at::empty_strided(result.sizes(), result.strides(), result.options().device(device));
      if (result.numel() > 0) {
        AXON_CHECK(axon_memory_copy(on_device.data_ptr(), result.data_ptr(), result.nbytes(),
                                    current_stream_handle(device.index())),
                   plan.name.c_str());
      }
      stack->push_back(on_device);
    } else {
      stack->push_back(std::move(cpu_stack[i]));
    }
  }
}

}  // namespace

void stream_kernel(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const OperatorPlan& plan = plan_for(op);
  TORCH_CHECK_NOT_IMPLEMENTED(plan.unsupported_reason.empty(), "[axon] ", plan.name,
                              " cannot run through the generic axon kernel: ", plan.unsupported_reason);
  const size_t num_args = op.schema().arguments().size();
  auto args = torch::jit::last(*stack, num_args);
  const c10::Device device = common_device(plan, args);
  c10::DeviceGuard device_guard(device);

  if (plan.strategy == Strategy::kSynchronous) {
    run_synchronously(op, plan, stack, device, num_args);
    return;
  }

  // Meta run: validates the call on this thread and gives output shapes.
  torch::jit::Stack meta_stack;
  meta_stack.reserve(num_args);
  for (const auto& arg : args) meta_stack.push_back(to_meta_ivalue(arg));
  torch::jit::Stack meta_args_after = meta_stack;  // same tensors, seen after resizes
  try {
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    op.callBoxed(meta_stack);
  } catch (const std::exception&) {
    // The meta kernel is missing or cannot tell without the data (boolean
    // masks, nonzero). Ask the CPU kernel itself, synchronously: it either
    // computes the result or raises the same error the CPU would.
    run_synchronously(op, plan, stack, device, num_args);
    return;
  }

  const axon_stream stream = current_stream_handle(device.index());
  std::vector<c10::IValue> results;
  results.reserve(plan.return_argument.size());
  for (size_t i = 0; i < plan.return_argument.size(); ++i) {
    const int aliased = plan.return_argument[i];
    results.push_back(aliased >= 0 ? args[aliased] : allocate_like_meta_ivalue(meta_stack[i], device));
  }
  for (size_t i = 0; i < num_args; ++i) {
    const auto& argument = op.schema().arguments()[i];
    if (argument.alias_info() != nullptr && argument.alias_info()->isWrite()) {
      resize_like_meta(args[i], meta_args_after[i]);
    }
  }

  torch::jit::Stack cpu_stack = host_aliases(args);
  int64_t numel = largest_numel(args);
  for (const auto& result : results) numel = std::max(numel, largest_numel(result));
  substitute_generator(cpu_stack, plan, device, numel);

  switch (plan.strategy) {
    case Strategy::kOutVariant: {
      for (const auto& result : results) cpu_stack.push_back(host_alias_ivalue(result));
      launch_on_stream(stream, plan.name.c_str(),
                       [out_op = *plan.out_operator, cpu_stack = std::move(cpu_stack)]() mutable {
                         out_op.callBoxed(cpu_stack);
                       });
      break;
    }
    case Strategy::kInPlace: {
      launch_on_stream(stream, plan.name.c_str(),
                       [op, cpu_stack = std::move(cpu_stack)]() mutable { op.callBoxed(cpu_stack); });
      break;
    }
    case Strategy::kCopyBack: {
      std::vector<c10::IValue> result_aliases;
      for (size_t i = 0; i < results.size(); ++i) {
        result_aliases.push_back(plan.return_argument[i] >= 0 ? c10::IValue() : host_alias_ivalue(results[i]));
      }
      launch_on_stream(stream, plan.name.c_str(),
                       [op, cpu_stack = std::move(cpu_stack), result_aliases = std::move(result_aliases)]() mutable {
                         op.callBoxed(cpu_stack);
                         for (size_t i = 0; i < result_aliases.size(); ++i) {
                           if (!result_aliases[i].isNone()) copy_into(result_aliases[i], cpu_stack[i]);
                         }
                       });
      break;
    }
    case Strategy::kSynchronous:
      break;  // handled above
  }
  torch::jit::drop(*stack, num_args);
  for (auto& result : results) stack->push_back(std::move(result));
}

}  // namespace axon
