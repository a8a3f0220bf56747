// Axon kernels for the sparse and nested layouts (layout_kernels.h).
//
// Every operator overload the CPU has a layout kernel for is registered for
// the matching axon key, so that no call the CPU runs falls through to a
// dense composite here. Two kinds run device-generic PyTorch code on the axon
// tensors themselves (run_device_generic_kernel):
//  - sparse operators that only build, read or rearrange metadata, so they
//    return the very members (and views of them) instead of copies;
//  - nested operators whose CPU implementation is also CUDA's: they compute
//    through dense operators on the buffer, so they queue on the stream like
//    any dense work. Left out are those that call a CPU-only kernel stub
//    (layer norm). Sparse operators shared with CUDA are not taken this way:
//    under AXON_MEMORY_PROTECT=1 their conversions read device memory from
//    host code.
// The rest run the CPU kernel on the host seam (run_layout_host_kernel).
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
                     const std::set<std::string_view>& device_generic) {
  for (const char* name : operators) {
    if (device_generic.count(name)) {
      m.impl(name, torch::CppFunction::makeFromBoxedFunction<&run_device_generic_kernel<Key>>());
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
  register_family<c10::DispatchKey::SparseCsrCPU>(
      m, kSparseCompressedOperators,
      {"_nnz", "ccol_indices", "col_indices", "crow_indices", "dense_dim", "row_indices", "sparse_dim", "values"});
}

TORCH_LIBRARY_IMPL(aten, NestedTensorPrivateUse1, m) {
  std::set<std::string_view> device_generic(std::begin(kNestedSharedWithCuda), std::end(kNestedSharedWithCuda));
  device_generic.erase("native_layer_norm");
  device_generic.erase("native_layer_norm_backward");
  register_family<c10::DispatchKey::NestedTensorCPU>(m, kNestedOperators, device_generic);
}

// Strided operators that build a sparse or nested tensor from dense ones (or
// check one's indices); a nested view of a dense buffer is metadata only.
TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  register_family<c10::DispatchKey::CPU>(m, kDenseToLayoutOperators, {"_nested_view_from_buffer"});
  m.impl("_embedding_bag_backward", torch::CppFunction::makeFromBoxedFunction<&embedding_bag_backward>());
}

}  // namespace axon
