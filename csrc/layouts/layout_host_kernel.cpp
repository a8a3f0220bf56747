#include <ATen/NestedTensorImpl.h>
#include <ATen/SparseCsrTensorUtils.h>
#include <ATen/SparseTensorImpl.h>
#include <ATen/core/LegacyTypeDispatch.h>
#include <ATen/native/SparseTensorUtils.h>
#include <ATen/ops/_sparse_compressed_tensor_unsafe.h>
#include <ATen/ops/_sparse_coo_tensor_with_dims_and_tensors.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/empty_strided.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "core/check.h"
#include "core/device.h"
#include "core/stream.h"
#include "host_execution/device_memory_views.h"
#include "host_execution/stream_launch.h"
#include "layouts/layout_kernels.h"
#include "ops/argument_tensors.h"
#include "ops/operator_plan.h"
#include "ops/shape_inference.h"

namespace axon {
namespace {

bool is_compressed(c10::Layout layout) {
  return layout == c10::kSparseCsr || layout == c10::kSparseCsc || layout == c10::kSparseBsr ||
         layout == c10::kSparseBsc;
}

// Copies between devices take tensors of other devices by design; nested
// tensors' sizes, strides and offsets are CPU tensors on every device.
bool crosses_devices(const std::string& name) {
  return name == "aten::copy_" || name == "aten::_to_copy" || name == "aten::copy_sparse_to_sparse_" ||
         name == "aten::_copy_from" || name == "aten::_copy_from_and_resize" ||
         name.find("nested") != std::string::npos;
}

// The single axon device of the call. As for dense kernels, tensors of other
// devices are refused except 0-dim CPU tensors (numbers) and copies' sources.
c10::Device common_device(const OperatorPlan& plan, c10::ArrayRef<c10::IValue> args) {
  std::optional<c10::Device> device;
  std::optional<c10::Device> offending;
  const bool any_device = crosses_devices(plan.name.substr(0, plan.name.find('.')));
  for (const auto& arg : args) {
    for_each_tensor(arg, [&](const at::Tensor& tensor) {
      if (!tensor.defined()) return;
      if (tensor.is_privateuseone()) {
        if (!device.has_value()) device = tensor.device();
        if (*device != tensor.device() && !offending.has_value()) offending = tensor.device();
      } else if (!any_device && !(tensor.is_cpu() && tensor.layout() == c10::kStrided && tensor.dim() == 0) &&
                 !offending.has_value()) {
        offending = tensor.device();
      }
    });
  }
  for (const auto& arg : args) {
    if (!device.has_value() && arg.isDevice() && arg.toDevice().is_privateuseone()) {
      const auto index = arg.toDevice().index();
      device = c10::Device(c10::DeviceType::PrivateUse1, index >= 0 ? index : current_device());
    }
  }
  TORCH_CHECK(device.has_value(), "[axon] ", plan.name, ": expected an axon tensor or device argument");
  TORCH_CHECK(!offending.has_value(), "Expected all tensors to be on the same device, but found at least two devices, ",
              *device, " and ", *offending, "! (in ", plan.name, " on axon)");
  return *device;
}

// Whether the call names a device other than axon for its results (a copy to
// the CPU): they then stay on the host.
bool results_stay_on_host(c10::ArrayRef<c10::IValue> args) {
  for (const auto& arg : args) {
    if (arg.isDevice() && !arg.toDevice().is_privateuseone()) return true;
  }
  return false;
}

// One call's translation between axon tensors and the CPU tensors its
// kernel sees.
class LayoutCall {
 public:
  explicit LayoutCall(c10::Device device) : device_(device) {}

  HostAliases& aliases() { return aliases_; }

  // The CPU tensor, in the same layout, the kernel sees for `tensor`.
  // `mutated`: the kernel may write it, so it gets a host copy (a sparse
  // kernel may replace or grow its members, which aliases cannot follow).
  at::Tensor to_host(const at::Tensor& tensor, bool mutated) {
    if (!tensor.defined() || !tensor.is_privateuseone()) return tensor;
    // A tensor passed twice is one tensor to the kernel too (smm passes its result as input and output).
    for (const auto& [host, original] : converted_) {
      if (original.unsafeGetTensorImpl() == tensor.unsafeGetTensorImpl()) return host;
    }
    at::Tensor host;
    if (tensor.is_nested()) {
      // In-place nested kernels write the buffer's elements and never resize it.
      const auto* impl = at::native::get_nested_tensor_impl(tensor);
      // Kept alive for the call: aliases are looked up by tensor address, which a freed one would pass on.
      buffers_.push_back(impl->get_unsafe_storage_as_tensor());
      const at::Tensor buffer = aliases_.alias(buffers_.back(), mutated ? Access::write : Access::read);
      host = at::detail::make_tensor<at::native::NestedTensorImpl>(
          buffer, impl->get_nested_sizes(), impl->get_nested_strides(), impl->get_storage_offsets());
    } else if (tensor.layout() == c10::kSparse) {
      const auto* impl = at::sparse::get_sparse_impl(tensor);
      host = at::_sparse_coo_tensor_with_dims_and_tensors(
          impl->sparse_dim(), impl->dense_dim(), tensor.sizes(), member_to_host(impl->indices(), mutated),
          member_to_host(impl->values(), mutated), tensor.options().device(c10::kCPU), impl->coalesced());
    } else if (is_compressed(tensor.layout())) {
      auto* impl = at::sparse_csr::get_sparse_csr_impl(tensor);
      host = at::_sparse_compressed_tensor_unsafe(
          member_to_host(impl->compressed_indices(), mutated), member_to_host(impl->plain_indices(), mutated),
          member_to_host(impl->values(), mutated), tensor.sizes(), tensor.options().device(c10::kCPU));
    } else if (mutated) {
      host = tensor.cpu();
    } else {
      host = aliases_.alias(tensor);
    }
    // Kernels may look at it: sparse.mm's max/min reductions keep the arg-indices backward needs only then.
    if (tensor.requires_grad() && host.is_leaf() && !host.requires_grad()) host.set_requires_grad(true);
    converted_.emplace_back(host, tensor);
    return host;
  }

  // The axon tensor for a CPU tensor the kernel returned or left in an
  // argument: the argument it came from, a view of the device memory it
  // views, or a copy on the device.
  at::Tensor to_device(const at::Tensor& host) {
    if (!host.defined() || !host.is_cpu()) return host;
    for (const auto& [seen, original] : converted_) {
      if (seen.unsafeGetTensorImpl() == host.unsafeGetTensorImpl()) return original;
    }
    if (host.is_nested()) {
      const auto* impl = at::native::get_nested_tensor_impl(host);
      return at::detail::make_tensor<at::native::NestedTensorImpl>(
          member_to_device(impl->get_unsafe_storage_as_tensor()), impl->get_nested_sizes(), impl->get_nested_strides(),
          impl->get_storage_offsets());
    }
    if (host.layout() == c10::kSparse) {
      const auto* impl = at::sparse::get_sparse_impl(host);
      return at::_sparse_coo_tensor_with_dims_and_tensors(
          impl->sparse_dim(), impl->dense_dim(), host.sizes(), member_to_device(impl->indices()),
          member_to_device(impl->values()), host.options().device(device_), impl->coalesced());
    }
    if (is_compressed(host.layout())) {
      auto* impl = at::sparse_csr::get_sparse_csr_impl(host);
      return at::_sparse_compressed_tensor_unsafe(
          member_to_device(impl->compressed_indices()), member_to_device(impl->plain_indices()),
          member_to_device(impl->values()), host.sizes(), host.options().device(device_));
    }
    return member_to_device(host);
  }

  // A result left on the host (a copy to the CPU) must not view device memory.
  at::Tensor detached_from_device(const at::Tensor& host) {
    if (!host.defined() || !host.is_cpu()) return host;
    std::vector<at::Tensor> members;
    if (host.is_nested()) {
      members.push_back(at::native::get_nested_tensor_impl(host)->get_unsafe_storage_as_tensor());
    } else if (host.layout() == c10::kSparse) {
      members = {at::sparse::get_sparse_impl(host)->indices(), at::sparse::get_sparse_impl(host)->values()};
    } else if (is_compressed(host.layout())) {
      auto* impl = at::sparse_csr::get_sparse_csr_impl(host);
      members = {impl->compressed_indices(), impl->plain_indices(), impl->values()};
    } else {
      members.push_back(host);
    }
    for (const at::Tensor& member : members) {
      if (aliases_.device_view(member).defined()) return host.clone();
    }
    return host;
  }

  // Gives `target`, an axon argument the kernel was allowed to mutate, what
  // its host copy `host` ended with.
  void write_back(const at::Tensor& target, const at::Tensor& host) {
    if (!target.defined() || !target.is_privateuseone() || target.is_nested()) return;  // nested: written in place
    if (target.layout() == c10::kSparse) {
      auto* impl = at::sparse::get_sparse_impl(target);
      const auto* source = at::sparse::get_sparse_impl(host);
      impl->raw_resize_(source->sparse_dim(), source->dense_dim(), host.sizes());
      impl->set_indices_and_values_unsafe(member_to_device(source->indices()), member_to_device(source->values()));
      impl->set_coalesced(source->coalesced());
    } else if (is_compressed(target.layout())) {
      auto* source = at::sparse_csr::get_sparse_csr_impl(host);
      at::sparse_csr::get_sparse_csr_impl(target)->set_member_tensors(member_to_device(source->compressed_indices()),
                                                                      member_to_device(source->plain_indices()),
                                                                      member_to_device(source->values()), host.sizes());
    } else {
      if (target.sizes() != host.sizes()) {
        target.resize_(host.sizes());
        if (host.is_non_overlapping_and_dense()) target.as_strided_(host.sizes(), host.strides());
      }
      target.copy_(host);
    }
  }

 private:
  at::Tensor member_to_host(const at::Tensor& member, bool mutated) {
    return mutated ? member.cpu() : aliases_.alias(member);
  }

  at::Tensor member_to_device(const at::Tensor& host) {
    if (!host.defined() || !host.is_cpu()) return host;
    at::Tensor view = aliases_.device_view(host);
    return view.defined() ? view : host.to(device_);
  }

  c10::Device device_;
  HostAliases aliases_;
  std::vector<at::Tensor> buffers_;  // nested arguments' storages as tensors
  // (CPU tensor handed to the kernel, the axon argument it stands for).
  std::vector<std::pair<at::Tensor, at::Tensor>> converted_;
};

// ---- queuing calls whose results are dense -------------------------------
//
// Most sparse results have sizes that depend on data, but many calls give
// dense results whose sizes follow from the arguments' sizes alone: a sparse
// matrix times a dense one, conversion to dense, reductions. Such a call can
// be queued like a dense kernel if its results' sizes and strides are known
// without running it. They are predicted by the dense operator's meta kernel,
// run with a strided stand-in for each sparse argument; the prediction is
// trusted for a call signature (operator, each argument's layout, dtype and
// rank, non-floating argument values) once a synchronous run of that
// signature gave exactly the predicted results.

// One call signature, flattened.
std::vector<int64_t> call_signature(c10::ArrayRef<c10::IValue> args) {
  std::vector<int64_t> signature;
  for (const auto& arg : args) {
    signature.push_back(static_cast<int64_t>(arg.tagKind().size()));
    for_each_tensor(arg, [&](const at::Tensor& t) {
      signature.push_back(t.defined() ? static_cast<int64_t>(t.layout()) : -1);
      signature.push_back(t.defined() ? static_cast<int64_t>(t.scalar_type()) : -1);
      signature.push_back(t.defined() ? t.dim() : -1);
      signature.push_back(t.defined() && t.is_privateuseone());
    });
    if (arg.isInt()) signature.push_back(arg.toInt());
    if (arg.isBool()) signature.push_back(arg.toBool());
    if (arg.isString()) signature.push_back(static_cast<int64_t>(std::hash<std::string_view>()(arg.toStringView())));
    if (arg.isIntList()) {
      for (int64_t value : arg.toIntVector()) signature.push_back(value);
    }
  }
  return signature;
}

// The dense results the dense meta kernel predicts, or null where a
// stand-in cannot be made (nested tensors, mutated arguments) or the meta
// kernel refuses the call.
std::optional<std::vector<at::Tensor>> predict_dense_results(const c10::OperatorHandle& op, const OperatorPlan& plan,
                                                             c10::ArrayRef<c10::IValue> args) {
  torch::jit::Stack meta;
  bool representable = true;
  for (size_t i = 0; i < args.size(); ++i) {
    if (plan.argument_is_mutable[i]) return std::nullopt;
    meta.push_back(retarget_device(map_tensors(args[i],
                                               [&](const at::Tensor& t) {
                                                 if (!t.defined() || !t.is_privateuseone()) return t;
                                                 if (t.is_nested()) {
                                                   representable = false;
                                                   return t;
                                                 }
                                                 if (t.layout() == c10::kStrided) return to_meta(t);
                                                 return at::empty(t.sizes(),
                                                                  t.options().device(c10::kMeta).layout(c10::kStrided));
                                               }),
                                   c10::kMeta));
  }
  if (!representable) return std::nullopt;
  static std::mutex mutex;
  static std::set<const c10::FunctionSchema*> without_meta_kernel;  // asking again would build the error again
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (without_meta_kernel.count(&op.schema())) return std::nullopt;
  }
  try {
    c10::impl::ExcludeDispatchKeyGuard no_autograd(c10::autograd_dispatch_keyset_with_ADInplaceOrView);
    op.callBoxed(meta);
  } catch (const c10::NotImplementedError&) {
    std::lock_guard<std::mutex> lock(mutex);
    without_meta_kernel.insert(&op.schema());
    return std::nullopt;
  } catch (const std::exception&) {
    return std::nullopt;
  }
  std::vector<at::Tensor> results;
  for (const auto& result : meta) {
    if (!result.isTensor() || !result.toTensor().defined()) return std::nullopt;
    results.push_back(result.toTensor());
  }
  return results;
}

// Whether a synchronous run's results are exactly the predicted ones.
bool matches_prediction(const std::vector<at::Tensor>& predicted, c10::ArrayRef<c10::IValue> results) {
  if (predicted.size() != results.size()) return false;
  for (size_t i = 0; i < predicted.size(); ++i) {
    if (!results[i].isTensor()) return false;
    const at::Tensor& real = results[i].toTensor();
    const at::Tensor& guess = predicted[i];
    if (!real.defined() || real.layout() != c10::kStrided || real.is_nested() || real.dtype() != guess.dtype() ||
        real.sizes() != guess.sizes()) {
      return false;
    }
    for (int64_t d = 0; d < real.dim(); ++d) {
      if (real.size(d) > 1 && real.stride(d) != guess.stride(d)) return false;
    }
  }
  return true;
}

// Signatures whose predictions a synchronous run confirmed (true) or refuted.
class PredictionRecord {
 public:
  std::optional<bool> find(const c10::FunctionSchema* schema, const std::vector<int64_t>& signature) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = verdicts_.find({schema, signature});
    return it == verdicts_.end() ? std::nullopt : std::optional<bool>(it->second);
  }
  void record(const c10::FunctionSchema* schema, std::vector<int64_t> signature, bool confirmed) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (verdicts_.size() > 4096) verdicts_.clear();  // bounded: signatures are few, but not fixed
    verdicts_[{schema, std::move(signature)}] = confirmed;
  }

 private:
  std::mutex mutex_;
  std::map<std::pair<const c10::FunctionSchema*, std::vector<int64_t>>, bool> verdicts_;
};

PredictionRecord& prediction_record() {
  static PredictionRecord record;
  return record;
}

// Queues the CPU kernel of a call whose dense results `meta_results`
// describe on the stream, like the generic dense kernel: the results are
// allocated now and filled when the stream reaches the kernel.
void queue_on_stream(const c10::OperatorHandle& op, const OperatorPlan& plan, torch::jit::Stack* stack,
                     c10::Device device, const std::vector<at::Tensor>& meta_results) {
  const size_t num_args = op.schema().arguments().size();
  const auto args = torch::jit::last(*stack, num_args);
  LayoutCall call(device);
  torch::jit::Stack cpu_stack;
  for (const auto& arg : args) {
    cpu_stack.push_back(arg.isDevice() ? retarget_device(arg, c10::kCPU)
                                       : map_tensors(arg, [&](const at::Tensor& t) { return call.to_host(t, false); }));
  }
  std::vector<at::Tensor> results;
  std::vector<at::Tensor> result_aliases;
  for (const at::Tensor& shape : meta_results) {
    results.push_back(at::empty_strided(shape.sizes(), shape.strides(), shape.options().device(device)));
    result_aliases.push_back(call.aliases().alias(results.back(), Access::overwrite));
  }
  launch_on_stream(current_stream_handle(device.index()), plan.name.c_str(), call.aliases(),
                   [op, cpu_stack = std::move(cpu_stack), result_aliases = std::move(result_aliases)]() mutable {
                     op.callBoxed(cpu_stack);
                     for (size_t i = 0; i < result_aliases.size(); ++i)
                       result_aliases[i].copy_(cpu_stack[i].toTensor());
                   });
  torch::jit::drop(*stack, num_args);
  for (auto& result : results) stack->push_back(std::move(result));
}

// Drains the stream and runs the CPU kernel on the caller's thread over
// aliases of the arguments; results come back to the device.
void run_synchronously(const c10::OperatorHandle& op, const OperatorPlan& plan, torch::jit::Stack* stack,
                       c10::Device device) {
  const size_t num_args = op.schema().arguments().size();
  const auto args = torch::jit::last(*stack, num_args);
  const auto& schema = op.schema();
  const axon_stream stream = current_stream_handle(device.index());
  AXON_CHECK(axon_stream_synchronize(stream), plan.name.c_str());

  const std::vector<c10::IValue> originals(args.begin(), args.end());
  // Tensors the kernel may write, wherever else they are passed.
  std::vector<const c10::TensorImpl*> mutated;
  for (size_t i = 0; i < num_args; ++i) {
    if (!plan.argument_is_mutable[i]) continue;
    for_each_tensor(originals[i], [&](const at::Tensor& t) { mutated.push_back(t.unsafeGetTensorImpl()); });
  }
  const auto is_mutated = [&](const at::Tensor& t) {
    return std::find(mutated.begin(), mutated.end(), t.unsafeGetTensorImpl()) != mutated.end();
  };
  LayoutCall call(device);
  torch::jit::Stack cpu_stack;
  cpu_stack.reserve(num_args);
  for (size_t i = 0; i < num_args; ++i) {
    cpu_stack.push_back(originals[i].isDevice() ? retarget_device(originals[i], c10::kCPU)
                                                : map_tensors(originals[i], [&](const at::Tensor& t) {
                                                    return call.to_host(t, is_mutated(t));
                                                  }));
  }
  const std::vector<c10::IValue> host_arguments(cpu_stack.begin(), cpu_stack.end());
  if (call.aliases().staged()) {
    call.aliases().stage_in(stream);
    AXON_CHECK(axon_stream_synchronize(stream), plan.name.c_str());
  }
  {
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    op.callBoxed(cpu_stack);
  }
  if (call.aliases().staged()) {
    call.aliases().stage_out(stream);
    AXON_CHECK(axon_stream_synchronize(stream), plan.name.c_str());
  }
  for (size_t i = 0; i < num_args; ++i) {
    if (!plan.argument_is_mutable[i]) continue;
    if (originals[i].isTensor()) call.write_back(originals[i].toTensor(), host_arguments[i].toTensor());
  }

  const bool stay_on_host = results_stay_on_host(originals);
  torch::jit::drop(*stack, num_args);
  for (size_t i = 0; i < cpu_stack.size(); ++i) {
    const auto& alias_info = schema.returns()[i].alias_info();
    if (alias_info != nullptr && alias_info->isWrite() && plan.return_argument[i] >= 0) {
      stack->push_back(originals[plan.return_argument[i]]);
    } else if (stay_on_host) {
      stack->push_back(map_tensors(cpu_stack[i], [&](const at::Tensor& t) { return call.detached_from_device(t); }));
    } else {
      stack->push_back(map_tensors(cpu_stack[i], [&](const at::Tensor& t) { return call.to_device(t); }));
    }
  }
}

}  // namespace

void run_layout_host_kernel(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const OperatorPlan& plan = plan_for(op);
  const auto& schema = op.schema();
  const size_t num_args = schema.arguments().size();
  const auto args = torch::jit::last(*stack, num_args);
  const c10::Device device = common_device(plan, args);
  check_device_index(device.index());
  c10::DeviceGuard device_guard(device);
  auto prediction = predict_dense_results(op, plan, args);
  std::vector<int64_t> signature;
  if (prediction.has_value()) {
    signature = call_signature(args);
    const auto verdict = prediction_record().find(&op.schema(), signature);
    if (verdict == std::optional<bool>(true)) {
      queue_on_stream(op, plan, stack, device, *prediction);
      return;
    }
    if (verdict.has_value()) prediction.reset();  // refuted for this signature: run synchronously
  }
  run_synchronously(op, plan, stack, device);
  if (prediction.has_value()) {
    const auto results = torch::jit::last(*stack, op.schema().returns().size());
    prediction_record().record(&op.schema(), std::move(signature), matches_prediction(*prediction, results));
  }
}

}  // namespace axon
