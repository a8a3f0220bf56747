// The list of ATen operators with an axon kernel, in one place.
//
// Hand-written kernels cover what the generic kernel cannot do: allocation,
// views (they share storage instead of producing it), storage surgery,
// copies across the host boundary, and random numbers from the axon
// generator. Everything in kGenericOperators runs through stream_kernel
// (stream_kernel.h). Operators that decompose through PyTorch
// (CompositeImplicitAutograd / CompositeExplicitAutograd) need no entry.
// Anything else reaches cpu_fallback (cpu_fallback.h).
#include <ATen/ops/_reshape_alias_native.h>
#include <ATen/ops/as_strided_native.h>
#include <ATen/ops/unfold_native.h>
#include <ATen/ops/view_as_complex_native.h>
#include <ATen/ops/view_as_real_native.h>
#include <ATen/ops/view_native.h>
#include <torch/library.h>

#include <set>
#include <string_view>

#include "host_execution/convolution.h"
#include "host_execution/cuda_dtypes.h"
#include "host_execution/direct_kernels.h"
#include "host_execution/foreach_chains.h"
#include "host_execution/random.h"
#include "host_execution/value_checks_at_call.h"
#include "ops/copy.h"
#include "ops/cpu_fallback.h"
#include "ops/generic_operators.h"
#include "ops/recurrent_cells.h"
#include "ops/tensor_factories.h"
#include "ops/tensor_storage.h"

namespace axon {

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  // Allocation.
  m.impl("empty.memory_format", TORCH_FN(empty_memory_format));
  m.impl("empty_strided", TORCH_FN(empty_strided));
  m.impl("_efficientzerotensor", TORCH_FN(efficient_zero_tensor));

  // Views: metadata over the same storage.
  m.impl("as_strided", TORCH_FN(at::native::as_strided_tensorimpl));
  m.impl("view", TORCH_FN(at::native::view));
  m.impl("_reshape_alias", TORCH_FN(at::native::_reshape_alias));
  m.impl("unfold", TORCH_FN(at::native::unfold));
  m.impl("view_as_real", TORCH_FN(at::native::view_as_real));
  m.impl("view_as_complex", TORCH_FN(at::native::view_as_complex));

  // Storage and its metadata.
  m.impl("resize_", TORCH_FN(resize_));
  m.impl("set_.source_Storage_storage_offset", TORCH_FN(set_storage));
  m.impl("set_.source_Storage", TORCH_FN(set_whole_storage));
  m.impl("set_.source_Tensor", TORCH_FN(set_tensor));
  m.impl("set_", TORCH_FN(set_empty));
  m.impl("record_stream", TORCH_FN(record_stream));
  m.impl("_has_compatible_shallow_copy_type", TORCH_FN(has_compatible_shallow_copy_type));

  // Copies and host reads.
  m.impl("_copy_from", TORCH_FN(copy_from));
  m.impl("_copy_from_and_resize", TORCH_FN(copy_from_and_resize));
  m.impl("_local_scalar_dense", TORCH_FN(local_scalar_dense));

  // Random numbers from the axon Philox generator.
  m.impl("uniform_", TORCH_FN(uniform_));
  m.impl("normal_", TORCH_FN(normal_));
  m.impl("bernoulli_.float", TORCH_FN(bernoulli_));
  m.impl("random_.from", TORCH_FN(random_from_));
  m.impl("random_.to", TORCH_FN(random_to_));
  m.impl("random_", TORCH_FN(random_));
  m.impl("native_dropout", TORCH_FN(native_dropout));

  // Convolution: PyTorch sends out-of-tree backends to the overrideable ops.
  m.impl("convolution_overrideable", TORCH_FN(convolution_overrideable));
  m.impl("convolution_backward_overrideable", TORCH_FN(convolution_backward_overrideable));

  // Fused recurrent cells: PyTorch's LSTM/GRU call them on accelerators.
  m.impl("_thnn_fused_lstm_cell", TORCH_FN(fused_lstm_cell));
  m.impl("_thnn_fused_lstm_cell_backward_impl", TORCH_FN(fused_lstm_cell_backward));
  m.impl("_thnn_fused_gru_cell", TORCH_FN(fused_gru_cell));
  m.impl("_thnn_fused_gru_cell_backward", TORCH_FN(fused_gru_cell_backward));

  // Dtypes CUDA accepts and the CPU refuses (narrow floating dtypes: below).
  const std::set<std::string_view> hand_written{"histc",
                                                "histc.out",
                                                "nansum",
                                                "nansum.out",
                                                "normal.Tensor_Tensor",
                                                "normal.Tensor_Tensor_out",
                                                "normal.float_Tensor",
                                                "normal.float_Tensor_out",
                                                "masked_scatter_"};
  m.impl("histc", TORCH_FN(histc));
  m.impl("histc.out", TORCH_FN(histc_out));
  m.impl("nansum", TORCH_FN(nansum));
  m.impl("nansum.out", TORCH_FN(nansum_out));
  // Value checks CUDA makes at the call (value_checks_at_call.h).
  m.impl("normal.Tensor_Tensor", TORCH_FN(normal_tensor_tensor));
  m.impl("normal.Tensor_Tensor_out", TORCH_FN(normal_tensor_tensor_out));
  m.impl("normal.float_Tensor", TORCH_FN(normal_float_tensor));
  m.impl("normal.float_Tensor_out", TORCH_FN(normal_float_tensor_out));
  m.impl("masked_scatter_", TORCH_FN(masked_scatter_));

  // The hottest small operators: unboxed kernels for their common cases,
  // the generic kernel below for the rest (direct_kernels.h).
  register_direct_kernels(m);
  // The optimizers' _foreach_* arithmetic, in chains (foreach_chains.h).
  register_foreach_kernels(m);

  // Everything else with an axon kernel: the generic stream kernel, behind
  // dtype widening for operators CUDA runs in narrow dtypes the CPU refuses.
  for (const char* name : kGenericOperators) {
    const std::string_view full(name);
    if (hand_written.count(full) || has_direct_kernel(full)) continue;
    m.impl(name, torch::CppFunction::makeFromBoxedKernel(generic_boxed_kernel(full)));
  }
}

// Copies resolve lazy conjugation/negation themselves (through ATen's CPU
// copy over aliases that carry the flags). Without these fallthroughs the
// Conjugate/Negative fallbacks would materialize the source with clone(),
// which copies through _copy_from again: endless recursion.
TORCH_LIBRARY_IMPL(aten, Conjugate, m) {
  m.impl("_copy_from", torch::CppFunction::makeFallthrough());
  m.impl("_copy_from_and_resize", torch::CppFunction::makeFallthrough());
}
TORCH_LIBRARY_IMPL(aten, Negative, m) {
  m.impl("_copy_from", torch::CppFunction::makeFallthrough());
  m.impl("_copy_from_and_resize", torch::CppFunction::makeFallthrough());
}

// Operators without any axon kernel run on the CPU with a warning, or fail
// under AXON_FALLBACK=error (cpu_fallback.h).
TORCH_LIBRARY_IMPL(_, PrivateUse1, m) { m.fallback(torch::CppFunction::makeFromBoxedFunction<&cpu_fallback>()); }

}  // namespace axon
