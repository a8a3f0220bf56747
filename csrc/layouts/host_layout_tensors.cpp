#include "layouts/host_layout_tensors.h"

#include <ATen/NestedTensorImpl.h>
#include <ATen/SparseCsrTensorUtils.h>
#include <ATen/SparseTensorImpl.h>
#include <ATen/native/SparseTensorUtils.h>
#include <ATen/ops/_sparse_compressed_tensor_unsafe.h>
#include <ATen/ops/_sparse_coo_tensor_with_dims_and_tensors.h>

namespace axon {

bool is_compressed(c10::Layout layout) {
  return layout == c10::kSparseCsr || layout == c10::kSparseCsc || layout == c10::kSparseBsr ||
         layout == c10::kSparseBsc;
}

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
    return at::_sparse_compressed_tensor_unsafe(
        member_to_device(impl->compressed_indices()), member_to_device(impl->plain_indices()),
        member_to_device(impl->values()), host.sizes(), host.options().device(device_));
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

at::Tensor HostLayoutTensors::member_to_host(const at::Tensor& member, bool mutated) {
  return mutated ? member.cpu() : aliases_.alias(member);
}

at::Tensor HostLayoutTensors::member_to_device(const at::Tensor& host) {
  if (!host.defined() || !host.is_cpu()) return host;
  at::Tensor view = aliases_.device_view(host);
  return view.defined() ? view : host.to(device_);
}

}  // namespace axon
