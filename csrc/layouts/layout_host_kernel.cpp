#include <ATen/NestedTensorImpl.h>
#include <ATen/SparseCsrTensorUtils.h>
#include <ATen/SparseTensorImpl.h>
#include <ATen/core/LegacyTypeDispatch.h>
#include <ATen/native/SparseTensorUtils.h>
#include <ATen/ops/_sparse_compressed_tensor_unsafe.h>
#include <ATen/ops/_sparse_coo_tensor_with_dims_and_tensors.h>

#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include "core/check.h"
#include "core/device.h"
#include "core/stream.h"
#include "host_execution/device_memory_views.h"
#include "layouts/layout_kernels.h"
#include "ops/argument_tensors.h"
#include "ops/operator_plan.h"

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

}  // namespace

void run_layout_host_kernel(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const OperatorPlan& plan = plan_for(op);
  const auto& schema = op.schema();
  const size_t num_args = schema.arguments().size();
  const auto args = torch::jit::last(*stack, num_args);
  const c10::Device device = common_device(plan, args);
  check_device_index(device.index());
  c10::DeviceGuard device_guard(device);
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

}  // namespace axon
