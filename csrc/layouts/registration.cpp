// Axon kernels for the sparse and nested layouts (layout_kernels.h).
//
// Every operator overload the CPU has a layout kernel for is registered for
// the matching axon key, so that no call the CPU runs falls through to a
// dense composite here. Most run the CPU kernel on the host seam; the few
// below that only build, read or rearrange metadata run PyTorch's own
// device-generic implementation, so they return the very members (and views
// of them) instead of copies.
#include <torch/library.h>

#include <set>
#include <string_view>

#include "host_execution/stream_kernel.h"
#include "layouts/layout_kernels.h"
#include "layouts/layout_operators.h"

namespace axon {
namespace {

template <c10::DispatchKey Key, size_t N>
void register_family(torch::Library& m, const char* const (&operators)[N],
                     const std::set<std::string_view>& metadata_operators) {
  for (const char* name : operators) {
    if (metadata_operators.count(name)) {
      m.impl(name, torch::CppFunction::makeFromBoxedFunction<&run_layout_metadata_kernel<Key>>());
    } else {
      m.impl(name, torch::CppFunction::makeFromBoxedFunction<&run_layout_host_kernel>());
    }
  }
}

// The embedding bag's gradient is sparse when its `sparse` argument says so;
// the dense one runs through the generic stream kernel.
void embedding_bag_backward(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const auto& arguments = op.schema().arguments();
  bool sparse = false;
  for (size_t i = 0; i < arguments.size(); ++i) {
    if (arguments[i].name() == "sparse") sparse = (*stack)[stack->size() - arguments.size() + i].toBool();
  }
  if (sparse) {
    run_layout_host_kernel(op, stack);
  } else {
    stream_kernel(op, stack);
  }
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, SparsePrivateUse1, m) {
  register_family<c10::DispatchKey::SparseCPU>(
      m, kSparseOperators,
      {"_coalesced_", "_dimI", "_dimV", "_indices", "_nnz", "_sparse_coo_tensor_with_dims",
       "_sparse_coo_tensor_with_dims_and_tensors", "_values", "dense_dim", "indices", "is_coalesced", "sparse_dim",
       "sparse_resize_", "sparse_resize_and_clear_", "values"});
}

TORCH_LIBRARY_IMPL(aten, SparseCsrPrivateUse1, m) {
  register_family<c10::DispatchKey::SparseCsrCPU>(m, kSparseCompressedOperators,
                                                  {"_nnz", "ccol_indices", "col_indices", "crow_indices",
                                                   "dense_dim", "row_indices", "sparse_dim", "values"});
}

TORCH_LIBRARY_IMPL(aten, NestedTensorPrivateUse1, m) {
  register_family<c10::DispatchKey::NestedTensorCPU>(
      m, kNestedOperators,
      {"_nested_tensor_size", "_nested_tensor_storage_offsets", "_nested_tensor_strides", "alias", "chunk", "detach",
       "is_same_size", "narrow", "select.int", "split_with_sizes", "squeeze", "squeeze.dim", "squeeze.dims",
       "transpose.int", "unbind.int", "unsqueeze", "values", "view"});
}

// Strided operators that build a sparse or nested tensor from dense ones (or
// check one's indices); a nested view of a dense buffer is metadata only.
TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  register_family<c10::DispatchKey::CPU>(m, kDenseToLayoutOperators, {"_nested_view_from_buffer"});
  m.impl("_embedding_bag_backward", torch::CppFunction::makeFromBoxedFunction<&embedding_bag_backward>());
}

}  // namespace axon
