#include "host_execution/stream_kernel.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/native/Resize.h>

#include <algorithm>
#include <mutex>

#include "compiled_execution/compiled_kernel.h"
#include "core/check.h"
#include "core/device.h"
#include "core/generator.h"
#include "core/host_waits.h"
#include "core/stream.h"
#include "host_execution/cpu_call_on_worker.h"
#include "host_execution/device_memory_views.h"
#include "host_execution/matrix_products.h"
#include "host_execution/results_in_place.h"
#include "host_execution/stream_launch.h"
#include "ops/argument_tensors.h"
#include "ops/operator_plan.h"
#include "ops/shape_inference.h"
#include "ops/tensor_factories.h"

namespace axon {
namespace {

// The single axon device of the call; throws on mixed devices.
// 0-dim CPU tensors are accepted as numbers, but only as inputs: an out=
// or in-place argument on the CPU is refused, as on CUDA.
c10::Device common_device(const OperatorPlan& plan, c10::ArrayRef<c10::IValue> args) {
  std::optional<c10::Device> device;
  std::optional<c10::Device> offending;
  for (size_t i = 0; i < args.size(); ++i) {
    const auto& arg = args[i];
    const bool written = plan.argument_is_mutable[i];
    for_each_tensor(arg, [&](const at::Tensor& tensor) {
      if (!tensor.defined()) return;
      if (tensor.is_privateuseone()) {
        if (!device.has_value()) {
          device = tensor.device();
        } else if (*device != tensor.device() && !offending.has_value()) {
          offending = tensor.device();
        }
      } else if (!(tensor.is_cpu() && tensor.dim() == 0 && !written) && !offending.has_value()) {
        offending = tensor.device();
      }
    });
  }
  if (!device.has_value()) {
    // Factories without tensor arguments (e.g. _efficientzerotensor) name their device.
    for (const auto& arg : args) {
      if (arg.isDevice() && arg.toDevice().type() == c10::DeviceType::PrivateUse1) {
        const auto index = arg.toDevice().index();
        device = c10::Device(c10::DeviceType::PrivateUse1, index >= 0 ? index : current_device());
      }
    }
  }
  TORCH_CHECK(device.has_value(), "[axon] ", plan.name, ": expected an axon tensor or device argument");
  TORCH_CHECK(!offending.has_value(), "Expected all tensors to be on the same device, but found at least two devices, ",
              *device, " and ", *offending, "! (in ", plan.name, " on axon)");
  return *device;
}

// CPU index tensors of an indexing operator go to the device of the indexed
// tensor first (CUDA accepts them the same way).
void move_host_indices(torch::jit::Stack& stack, size_t num_args, int index_argument) {
  const auto args = torch::jit::last(stack, num_args);
  std::optional<c10::Device> device;
  for (const auto& arg : args) {
    for_each_tensor(arg, [&](const at::Tensor& tensor) {
      if (!device.has_value() && tensor.defined() && tensor.is_privateuseone()) device = tensor.device();
    });
  }
  c10::IValue& indices = stack[stack.size() - num_args + index_argument];
  bool any_on_host = false;
  for_each_tensor(indices, [&](const at::Tensor& tensor) { any_on_host |= tensor.defined() && tensor.is_cpu(); });
  if (!device.has_value() || !any_on_host) return;
  indices = map_tensors(indices, [&](const at::Tensor& tensor) {
    return tensor.defined() && tensor.is_cpu() ? tensor.to(*device) : tensor;
  });
}

// axon's empty_strided called directly, not through the dispatcher: an
// output is allocated on every call, and the dispatcher's round trip cost a
// tenth of a tiny operator's time.
at::Tensor allocate_like_meta(const at::Tensor& meta, c10::Device device) {
  if (!meta.defined()) return at::Tensor();  // e.g. a gradient output_mask left out
  return axon::empty_strided(meta.sizes(), meta.strides(), meta.scalar_type(), c10::kStrided, device, false);
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

// Brings an out= argument to the shape and strides the meta run resized
// its twin to: an output resized by a CPU kernel takes the layout the kernel
// chose (TensorIterator keeps the input's layout, e.g. a transposed input
// gives a transposed result). Outputs whose shape already fits keep their
// strides: the CPU kernel handles them, and rejects internally overlapping
// ones as on the CPU.
// `warn`: give the CPU's warning when a non-empty tensor is resized (the
// kernel that would have given it did not run: a cached call shape).
void resize_like_meta(const c10::IValue& real, const c10::IValue& meta, bool warn) {
  if (real.isTensor() && meta.isTensor()) {
    const at::Tensor& tensor = real.toTensor();
    const at::Tensor& shape = meta.toTensor();
    if (tensor.defined() && tensor.sizes() != shape.sizes()) {
      if (warn) at::native::resize_output_check(tensor, shape.sizes());
      tensor.resize_(shape.sizes());
      if (tensor.strides() != shape.strides() && shape.is_non_overlapping_and_dense()) {
        tensor.as_strided_(shape.sizes(), shape.strides());
      }
    }
  } else if (real.isTensorList() && meta.isTensorList()) {
    auto reals = real.toTensorList();
    auto metas = meta.toTensorList();
    for (size_t i = 0; i < reals.size() && i < metas.size(); ++i) {
      resize_like_meta(reals.get(i), metas.get(i), warn);
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
void substitute_generator(torch::jit::Stack& cpu_args, const OperatorPlan& plan, c10::Device device, int64_t numel) {
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

// A CPU tensor argument (a 0-dim number) as the kernel will read it: its
// value now, at the call, as CUDA reads it when it launches; the caller may
// change it before the stream gets to the kernel. Numbers PyTorch wrapped
// for this call (`x * 2`) are nobody else's and are read in place.
at::Tensor value_at_call(const at::Tensor& tensor) {
  if (!tensor.defined() || !tensor.is_cpu() || tensor.unsafeGetTensorImpl()->is_wrapped_number()) return tensor;
  return tensor.clone();
}

torch::jit::Stack host_aliases(const OperatorPlan& plan, c10::ArrayRef<c10::IValue> args, HostAliases& aliases) {
  torch::jit::Stack stack;
  stack.reserve(args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    stack.push_back(
        aliases.alias(map_tensors(args[i], value_at_call), plan.argument_is_written[i] ? Access::write : Access::read));
  }
  return stack;
}

void copy_into(const c10::IValue& destination_alias, const c10::IValue& result) {
  if (destination_alias.isTensor()) {
    if (destination_alias.toTensor().defined()) destination_alias.toTensor().copy_(result.toTensor());
    return;
  }
  auto destinations = destination_alias.toTensorList();
  auto results = result.toTensorList();
  for (size_t i = 0; i < destinations.size(); ++i) destinations.get(i).copy_(results.get(i));
}

// Runs `op` on `stack` (host aliases) with its fresh results built in
// `destinations`, their host aliases, where the kernel lets them
// (results_in_place.h); undefined destinations get nothing.
void call_with_results_in_place(const c10::OperatorHandle& op, torch::jit::Stack stack,
                                const std::vector<at::Tensor>& destinations) {
  run_with_results_in_place(
      destinations,
      [&] {
        op.callBoxed(stack);
        std::vector<at::Tensor> results(destinations.size());
        for (size_t i = 0; i < destinations.size(); ++i) {
          if (destinations[i].defined()) results[i] = stack[i].toTensor();
        }
        return results;
      },
      &op.schema());
}

// A generic call queued with aliases the worker makes: the CPU kernel, the
// call's values, where each operand's and result's alias is, and the
// aliases' description, all in the one allocation.
class DeferredAliasCall final : public HostLaunch {
 public:
  explicit DeferredAliasCall(c10::OperatorHandle kernel) : kernel_(std::move(kernel)) {}

  DeferredAliases aliases;
  // Per operand of the CPU kernel: its value (non-tensors, CPU numbers,
  // undefined tensors), or the position of its alias.
  c10::SmallVector<c10::IValue, 8> values;
  c10::SmallVector<int, 8> operand_aliases;
  // kCopyBack: where each fresh result is delivered (-1: none, or returned aliasing an argument).
  c10::SmallVector<int, 4> result_aliases;

  void run() override {
    // Made, used and freed here on the worker; the values stay with the launch.
    const c10::SmallVector<at::Tensor, 4> made = aliases.make();
    torch::jit::Stack stack;
    stack.reserve(values.size());
    for (size_t i = 0; i < values.size(); ++i) {
      stack.push_back(operand_aliases[i] >= 0 ? c10::IValue(made[operand_aliases[i]]) : values[i]);
    }
    if (result_aliases.empty()) {
      kernel_.callBoxed(stack);
      return;
    }
    std::vector<at::Tensor> destinations(result_aliases.size());
    for (size_t i = 0; i < result_aliases.size(); ++i) {
      if (result_aliases[i] >= 0) destinations[i] = made[result_aliases[i]];
    }
    call_with_results_in_place(kernel_, std::move(stack), destinations);
  }

 private:
  c10::OperatorHandle kernel_;
};

// What a matrix product's sizes ask of the worker's team (matrix_products.h).
TeamUse product_call_team_use(const OperatorPlan& plan, c10::ArrayRef<c10::IValue> args) {
  const int first = plan.product_first_factor;
  if (first < 0 || static_cast<size_t>(first) + 1 >= args.size() || !args[first].isTensor() ||
      !args[first + 1].isTensor()) {
    return TeamUse::kBySize;
  }
  const at::Tensor &a = args[first].toTensor(), &b = args[first + 1].toTensor();
  if (!a.defined() || !b.defined() || a.dim() < 2 || a.dim() > 3) return TeamUse::kBySize;
  // A matrix-vector product (mv, addmv): MKL splits it among threads too,
  // whichever way the matrix lies (a 12500x8 matrix's product came out
  // apart on one thread), so the count goes by the matrix's elements.
  if (a.dim() == 2 && b.dim() == 1) {
    return a.numel() >= kSplitSumsFromElements ? TeamUse::kForResults : TeamUse::kBySize;
  }
  if (a.dim() != b.dim()) return TeamUse::kBySize;
  const int64_t batch = a.dim() == 3 ? a.size(0) : 1;
  return product_team_use(batch, a.size(-2), a.size(-1), b.size(-1));
}

// Whether a call reduces many floating-point elements to one value (a sum,
// mean or product of a whole tensor, a loss, a dot product): ATen adds such
// a reduction in a part per thread (TeamUse::kForResults).
bool reduces_to_one_value(c10::ArrayRef<c10::IValue> args, const std::vector<c10::IValue>& results) {
  bool one_value = false;
  for (const c10::IValue& result : results) {
    if (!result.isTensor()) continue;
    const at::Tensor& tensor = result.toTensor();
    if (tensor.defined() && tensor.numel() == 1 &&
        (at::isFloatingType(tensor.scalar_type()) || at::isComplexType(tensor.scalar_type()))) {
      one_value = true;
    }
  }
  return one_value && largest_numel(args) >= kSplitSumsFromElements;
}

// What a call asks of the worker's team beside its bytes: its values'
// (reductions to one value, products with long sums), its operator's
// (OperatorPlan::team_at_any_size), or a product's sizes.
TeamUse call_team_use(const OperatorPlan& plan, c10::ArrayRef<c10::IValue> args,
                      const std::vector<c10::IValue>& results) {
  if (reduces_to_one_value(args, results)) return TeamUse::kForResults;
  const TeamUse product = product_call_team_use(plan, args);
  return plan.team_at_any_size && product == TeamUse::kBySize ? TeamUse::kForWork : product;
}

// Queues a call whose host aliases the worker makes (DeferredAliases), for
// the kOutVariant, kInPlace and kCopyBack strategies (see the switch in
// stream_kernel for what each does). Returns false, having queued nothing,
// for calls it cannot describe that way: tensor lists, a random generator,
// memory the host cannot address.
bool launch_with_deferred_aliases(const c10::OperatorHandle& op, const OperatorPlan& plan, Strategy strategy,
                                  c10::ArrayRef<c10::IValue> args, const std::vector<c10::IValue>& results,
                                  c10::Device device, axon_stream stream) {
  // Decided before anything is made for the call (value_at_call copies CPU numbers).
  if (plan.generator_argument >= 0 || !host_addressable(device.index())) return false;
  const auto is_list = [](const c10::IValue& value) { return value.isTensorList() || value.isOptionalTensorList(); };
  if (std::any_of(args.begin(), args.end(), is_list)) return false;
  if (strategy != Strategy::kInPlace &&
      !std::all_of(results.begin(), results.end(), [](const c10::IValue& result) { return result.isTensor(); })) {
    return false;
  }
  const c10::OperatorHandle kernel = strategy == Strategy::kOutVariant ? *plan.out_operator : op;
  auto call = std::make_unique<DeferredAliasCall>(kernel);
  DeferredAliases& aliases = call->aliases;
  c10::SmallVector<c10::IValue, 8>& values = call->values;
  c10::SmallVector<int, 8>& operand_aliases = call->operand_aliases;
  const auto add_operand = [&](const c10::IValue& operand, Access access) {
    if (operand.isTensor() && operand.toTensor().defined() && operand.toTensor().is_privateuseone()) {
      values.emplace_back();
      operand_aliases.push_back(static_cast<int>(aliases.add(operand.toTensor(), access)));
    } else {
      values.push_back(operand.isTensor() ? c10::IValue(value_at_call(operand.toTensor()))
                                          : retarget_device(operand, c10::kCPU));
      operand_aliases.push_back(-1);
    }
  };
  for (size_t i = 0; i < args.size(); ++i)
    add_operand(args[i], plan.argument_is_written[i] ? Access::write : Access::read);
  c10::SmallVector<int, 4>& result_aliases = call->result_aliases;
  for (size_t i = 0; i < results.size(); ++i) {
    if (strategy == Strategy::kOutVariant) {
      add_operand(results[i], Access::overwrite);
    } else if (strategy == Strategy::kCopyBack) {
      const bool delivered = plan.return_argument[i] < 0 && results[i].toTensor().defined();
      result_aliases.push_back(delivered ? static_cast<int>(aliases.add(results[i].toTensor(), Access::overwrite))
                                         : -1);
    }
  }
  const size_t bytes = aliases.bytes_visited();
  launch_on_stream(stream, plan.name.c_str(), bytes, std::move(call), call_team_use(plan, args, results));
  return true;
}

// ---- execution strategies -------------------------------------------------

// Whether a tensor in the argument has elements sharing memory (expanded):
// the CPU kernel must see that to refuse writing into it, which a
// contiguous host copy would hide.
bool overlaps_itself(const c10::IValue& arg) {
  bool overlapping = false;
  for_each_tensor(arg, [&](const at::Tensor& tensor) {
    if (tensor.defined() && at::has_internal_overlap(tensor) != at::MemOverlap::No) overlapping = true;
  });
  return overlapping;
}

// Whether a tensor in argument `index` shares storage with another argument
// (then the CPU kernel must see the real aliasing, to reject overlaps).
bool shares_storage_with_others(c10::ArrayRef<c10::IValue> args, size_t index) {
  bool shared = false;
  for_each_tensor(args[index], [&](const at::Tensor& mine) {
    if (!mine.defined() || !mine.has_storage()) return;
    for (size_t other = 0; other < args.size(); ++other) {
      if (other == index) continue;
      for_each_tensor(args[other], [&](const at::Tensor& theirs) {
        if (theirs.defined() && theirs.has_storage() && theirs.storage().is_alias_of(mine.storage())) shared = true;
      });
    }
  });
  return shared;
}

// Brings an axon tensor to the shape and contents its host copy ended with.
void write_back(const c10::IValue& original, const c10::IValue& host_copy) {
  if (original.isTensor() && host_copy.isTensor()) {
    const at::Tensor& target = original.toTensor();
    const at::Tensor& source = host_copy.toTensor();
    if (!target.defined()) return;
    if (target.sizes() != source.sizes()) {
      // Resized by the kernel: take the layout it chose (lstsq's column-major solution).
      target.resize_(source.sizes());
      if (source.is_non_overlapping_and_dense()) target.as_strided_(source.sizes(), source.strides());
    }
    target.copy_(source);
  } else if (original.isTensorList() && host_copy.isTensorList()) {
    auto targets = original.toTensorList();
    auto sources = host_copy.toTensorList();
    for (size_t i = 0; i < targets.size() && i < sources.size(); ++i) write_back(targets.get(i), sources.get(i));
  }
}

// Calls of run_synchronously per operator (synchronous_runs).
std::mutex synchronous_runs_mutex;
std::map<std::string, int64_t> synchronous_run_counts;

// Drains the stream and runs the CPU kernel on the worker, waiting for it
// (cpu_call_on_worker.h says why not on the caller's thread): inputs
// are read through aliases, mutable arguments are worked on as host copies
// (the kernel may resize them) and written back, fresh results are moved to
// the device keeping their strides.
void run_synchronously(const c10::OperatorHandle& op, const OperatorPlan& plan, torch::jit::Stack* stack,
                       c10::Device device, size_t num_args) {
  {
    std::lock_guard<std::mutex> lock(synchronous_runs_mutex);
    ++synchronous_run_counts[plan.name];
  }
  const axon_stream stream = current_stream_handle(device.index());
  AXON_CHECK(wait_for_stream(stream), plan.name.c_str());
  auto args = torch::jit::last(*stack, num_args);
  const std::vector<c10::IValue> originals(args.begin(), args.end());
  torch::jit::Stack cpu_stack;
  cpu_stack.reserve(num_args);
  HostAliases aliases;
  std::vector<bool> worked_on_copy(num_args, false);
  for (size_t i = 0; i < num_args; ++i) {
    const bool work_on_copy =
        plan.argument_is_mutable[i] && !shares_storage_with_others(args, i) && !overlaps_itself(args[i]);
    worked_on_copy[i] = work_on_copy;
    cpu_stack.push_back(work_on_copy
                            ? map_tensors(args[i], [](const at::Tensor& t) { return t.cpu(); })
                            : aliases.alias(args[i], plan.argument_is_written[i] ? Access::write : Access::read));
  }
  substitute_generator(cpu_stack, plan, device, largest_numel(args));
  const std::vector<c10::IValue> host_arguments(cpu_stack.begin(), cpu_stack.end());
  // Staged bytes arrive before the kernel in stream order: its wait covers them.
  if (aliases.staged()) aliases.stage_in(stream);
  call_cpu_kernel_on_worker(stream, plan.name.c_str(), op, cpu_stack);
  if (aliases.staged()) {
    aliases.stage_out(stream);
    AXON_CHECK(wait_for_stream(stream), plan.name.c_str());
  }
  for (size_t i = 0; i < num_args; ++i) {
    if (worked_on_copy[i]) write_back(originals[i], host_arguments[i]);
  }
  torch::jit::drop(*stack, num_args);
  for (size_t i = 0; i < cpu_stack.size(); ++i) {
    const int aliased = plan.return_argument[i];
    if (aliased >= 0) {
      stack->push_back(originals[aliased]);
    } else {
      stack->push_back(map_tensors(cpu_stack[i], [&](const at::Tensor& t) { return t.to(device); }));
    }
  }
}

}  // namespace

std::map<std::string, int64_t> synchronous_runs() {
  std::lock_guard<std::mutex> lock(synchronous_runs_mutex);
  return synchronous_run_counts;
}

void stream_kernel(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const OperatorPlan& plan = plan_for(op);
  TORCH_CHECK_NOT_IMPLEMENTED(plan.unsupported_reason.empty(), "[axon] ", plan.name,
                              " cannot run through the generic axon kernel: ", plan.unsupported_reason);
  const size_t num_args = op.schema().arguments().size();
  for (const int i : plan.optional_tensor_list_arguments)
    type_optional_tensor_list((*stack)[stack->size() - num_args + i]);
  if (plan.host_index_argument >= 0) move_host_indices(*stack, num_args, plan.host_index_argument);
  auto args = torch::jit::last(*stack, num_args);
  const c10::Device device = common_device(plan, args);
  // Before any host-side work: refuses a shut-down runtime or a forked child.
  check_device_index(device.index());
  c10::DeviceGuard device_guard(device);

  if (plan.strategy == Strategy::kSynchronous) {
    run_synchronously(op, plan, stack, device, num_args);
    return;
  }

  // Validates the call on this thread and gives the outputs' shapes.
  bool from_cache = false;
  const auto outcome = infer_outputs(op, plan, args, from_cache);
  if (outcome->needs_data) {
    run_synchronously(op, plan, stack, device, num_args);
    return;
  }

  const axon_stream stream = current_stream_handle(device.index());
  std::vector<c10::IValue> results;
  results.reserve(plan.return_argument.size());
  for (size_t i = 0; i < plan.return_argument.size(); ++i) {
    const int aliased = plan.return_argument[i];
    results.push_back(aliased >= 0 ? args[aliased] : allocate_like_meta_ivalue(outcome->returns[i], device));
  }
  for (size_t i = 0; i < num_args; ++i) {
    if (plan.argument_is_mutable[i]) {
      resize_like_meta(args[i], outcome->arguments_after[i], from_cache && outcome->warns_about_resized_outputs);
    }
  }

  if (launch_compiled_kernel(op, plan, args, results, device)) {
    torch::jit::drop(*stack, num_args);
    for (auto& result : results) stack->push_back(std::move(result));
    return;
  }

  const Strategy strategy =
      plan.strategy == Strategy::kOutVariant && outcome->avoid_out_variant ? Strategy::kCopyBack : plan.strategy;
  if (launch_with_deferred_aliases(op, plan, strategy, args, results, device, stream)) {
    torch::jit::drop(*stack, num_args);
    for (auto& result : results) stack->push_back(std::move(result));
    return;
  }

  HostAliases aliases;
  torch::jit::Stack cpu_stack = host_aliases(plan, args, aliases);
  // The launch holds only aliases and values made for this call (host_aliases takes CPU numbers' values).
  const LaunchRelease release = LaunchRelease::kByQueuingThread;
  const TeamUse team = call_team_use(plan, args, results);
  int64_t numel = largest_numel(args);
  for (const auto& result : results) numel = std::max(numel, largest_numel(result));
  substitute_generator(cpu_stack, plan, device, numel);

  switch (strategy) {
    case Strategy::kOutVariant: {
      for (const auto& result : results) cpu_stack.push_back(aliases.alias(result, Access::overwrite));
      launch_on_stream(
          stream, plan.name.c_str(), aliases,
          [out_op = *plan.out_operator, cpu_stack = std::move(cpu_stack)]() {
            torch::jit::Stack stack = cpu_stack;  // the launch keeps the aliases (see stream_launch.cpp)
            out_op.callBoxed(stack);
          },
          release, team);
      break;
    }
    case Strategy::kInPlace: {
      launch_on_stream(
          stream, plan.name.c_str(), aliases,
          [op, cpu_stack = std::move(cpu_stack)]() {
            torch::jit::Stack stack = cpu_stack;
            op.callBoxed(stack);
          },
          release, team);
      break;
    }
    case Strategy::kCopyBack: {
      std::vector<c10::IValue> result_aliases;
      for (size_t i = 0; i < results.size(); ++i) {
        result_aliases.push_back(plan.return_argument[i] >= 0 ? c10::IValue()
                                                              : aliases.alias(results[i], Access::overwrite));
      }
      launch_on_stream(
          stream, plan.name.c_str(), aliases,
          [op, cpu_stack = std::move(cpu_stack), result_aliases = std::move(result_aliases)]() {
            const bool lists = std::any_of(result_aliases.begin(), result_aliases.end(),
                                           [](const c10::IValue& value) { return value.isTensorList(); });
            if (lists) {
              // Copied, every one: a list element built in another output's memory would be
              // overwritten by that output's delivery before its own copy.
              torch::jit::Stack stack = cpu_stack;
              op.callBoxed(stack);
              for (size_t i = 0; i < result_aliases.size(); ++i) {
                if (!result_aliases[i].isNone()) copy_into(result_aliases[i], stack[i]);
              }
              return;
            }
            std::vector<at::Tensor> destinations(result_aliases.size());
            for (size_t i = 0; i < result_aliases.size(); ++i) {
              if (result_aliases[i].isTensor()) destinations[i] = result_aliases[i].toTensor();
            }
            call_with_results_in_place(op, cpu_stack, destinations);
          },
          release, team);
      break;
    }
    case Strategy::kSynchronous:
      break;  // handled above
  }
  torch::jit::drop(*stack, num_args);
  for (auto& result : results) stack->push_back(std::move(result));
}

c10::IValue stream_kernel_by_name(const char* name, const char* overload, torch::jit::Stack stack) {
  stream_kernel(c10::Dispatcher::singleton().findSchemaOrThrow(name, overload), &stack);
  return stack.front();
}

}  // namespace axon
