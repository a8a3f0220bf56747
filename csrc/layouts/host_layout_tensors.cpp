#include "layouts/host_layout_tensors.h"

#include <ATen/NestedTensorImpl.h>
#include <ATen/SparseCsrTensorUtils.h>
#include <ATen/SparseTensorImpl.h>
#include <ATen/native/SparseTensorUtils.h>
#include <ATen/ops/_sparse_coo_tensor_with_dims_and_tensors.h>

namespace axon {

bool is_compressed(c10::Layout layout) {
  return layout == c10::kSparseCsr || layout == c10::kSparseCsc || layout == c10::kSparseBsr ||
         layout == c10::kSparseBsc;
}

namespace {

// A compressed tensor over `compressed`, `plain` and `values` as they are.
// Unlike _sparse_compressed_tensor_unsafe it never reads the indices, which
// check_sparse_tensor_invariants would make it do: a host alias's bytes may
// not be staged in yet, and a device member's may not be computed yet.
at::Tensor compressed_tensor(const at::Tensor& compressed, const at::Tensor& plain, const at::Tensor& values,
                             c10::IntArrayRef sizes, c10::Layout layout) {
  const c10::DispatchKey key =
      values.is_cpu() ? c10::DispatchKey::SparseCsrCPU : c10::DispatchKey::SparseCsrPrivateUse1;
  at::Tensor tensor = at::detail::make_tensor<at::SparseCsrTensorImpl>(c10::DispatchKeySet(key), values.device(),
                                                                       layout, values.dtype());
  at::sparse_csr::get_sparse_csr_impl(tensor)->set_member_tensors(compressed, plain, values, sizes);
  return tensor;
}

}  // namespace

at::Tensor HostLayoutTensors::to_host(const at::Tensor& tensor, bool mutated) {
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
    host = compressed_tensor(member_to_host(impl->compressed_indices(), mutated),
                             member_to_host(impl->plain_indices(), mutated), member_to_host(impl->values(), mutated),
                             tensor.sizes(), tensor.layout());
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

at::Tensor HostLayoutTensors::to_device(const at::Tensor& host) {
  if (!host.defined() || !host.is_cpu()) return host;
  for (const auto& [seen, original] : converted_) {
    if (seen.unsafeGetTensorImpl() == host.unsafeGetTensorImpl()) return original;
  }
  if (host.is_nested()) {
    const auto* impl = at::native::get_nested_tensor_impl(host);
    return at::detail::make_tensor<at::native::NestedTensorImpl>(member_to_device(impl->get_unsafe_storage_as_tensor()),
                                                                 impl->get_nested_sizes(), impl->get_nested_strides(),
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
    return compressed_tensor(member_to_device(impl->compressed_indices()), member_to_device(impl->plain_indices()),
                             member_to_device(impl->values()), host.sizes(), host.layout());
  }
  return member_to_device(host);
}

at::Tensor HostLayoutTensors::detached_from_device(const at::Tensor& host) {
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

void HostLayoutTensors::write_back(const at::Tensor& target, const at::Tensor& host) {
  if (!target.defined() || !target.is_privateuseone() || target.is_nested()) return;  // nested: written in place
  if (target.layout() == c10::kSparse) {
    const auto* source = at::sparse::get_sparse_impl(host);
    // Device members first: should one fail (out of memory), the target is left as it was.
    at::Tensor indices = member_written_back(source->indices());
    at::Tensor values = member_written_back(source->values());
    auto* impl = at::sparse::get_sparse_impl(target);
    impl->raw_resize_(source->sparse_dim(), source->dense_dim(), host.sizes());
    impl->set_indices_and_values_unsafe(indices, values);
    impl->set_coalesced(source->coalesced());
  } else if (is_compressed(target.layout())) {
    auto* source = at::sparse_csr::get_sparse_csr_impl(host);
    at::Tensor compressed = member_written_back(source->compressed_indices());
    at::Tensor plain = member_written_back(source->plain_indices());
    at::Tensor values = member_written_back(source->values());
    at::sparse_csr::get_sparse_csr_impl(target)->set_member_tensors(compressed, plain, values, host.sizes());
  } else {
    if (target.sizes() != host.sizes()) {
      target.resize_(host.sizes());
      if (host.is_non_overlapping_and_dense()) target.as_strided_(host.sizes(), host.strides());
    }
    target.copy_(host);
  }
}

at::Tensor HostLayoutTensors::member_written_back(const at::Tensor& host) {
  // A member the kernel kept (written in place, sizes unchanged: sin_, mul_) goes back into the device
  // member it was copied from, so views of it (_values(), the values a tensor was built from) see the change.
  // Kept means the same bytes seen the same way: sparse tensors hold shallow copies of the tensors they get.
  for (const auto& [copy, device_member] : member_copies_) {
    if (host.has_storage() && host.storage().is_alias_of(copy.storage()) && host.sizes() == copy.sizes() &&
        host.strides() == copy.strides() && host.storage_offset() == copy.storage_offset()) {
      device_member.copy_(host);
      return device_member;
    }
  }
  return member_to_device(host);
}

at::Tensor HostLayoutTensors::member_to_host(const at::Tensor& member, bool mutated) {
  if (!mutated) return aliases_.alias(member);
  at::Tensor copy = member.cpu();
  member_copies_.emplace_back(copy, member);
  return copy;
}

at::Tensor HostLayoutTensors::member_to_device(const at::Tensor& host) {
  if (!host.defined() || !host.is_cpu()) return host;
  at::Tensor view = aliases_.device_view(host);
  return view.defined() ? view : host.to(device_);
}

}  // namespace axon
