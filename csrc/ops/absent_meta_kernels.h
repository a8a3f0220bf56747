// Meta kernels for operators that PyTorch gives none, neither in C++ nor in
// Python.
//
// The generic kernel learns a call's results from the operator's meta
// kernel. Where there is none, it cannot tell whether the results depend on
// the data, so every call drains the stream and runs the CPU kernel at once on
// host copies of the arguments (ops/shape_inference.cpp: needs_data). That is
// right for unique or masked_select, and needless for operators whose results
// follow from their arguments' shapes. For those this table says what
// PyTorch's meta kernel would: SGD and Adagrad with fused=True, fused Adam or
// AdamW with a tensor learning rate, cummax and cummin, logcumsumexp, the
// backward of the CTC, multi-margin and multilabel-margin losses, sampling
// from Binomial and Dirichlet distributions and their gradients. Only
// shapes are claimed here; the CPU kernel still runs on stand-ins at every new
// call shape (raising the CPU's errors at the call), and a result layout that
// disagrees with the CPU's is caught by the CPU reference run of its layout
// class, as for any meta kernel.
#pragma once

#include <vector>

#include "ops/native_meta_kernels.h"

namespace axon {

std::vector<MetaKernelEntry> absent_meta_kernel_entries();

}  // namespace axon
