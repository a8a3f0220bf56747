// PyTorch's own C++ meta kernels, for the generic kernel's shape inference.
//
// Structured operators (add, mul, cat, mm, bmm, addmm, _softmax, ...) have a
// C++ meta function: the very code their CPU kernel runs to check the call
// and size its outputs. Importing torch._meta_registrations (torch._dynamo,
// transformers and the first Python meta kernel all do) registers Python meta
// kernels over them at the Meta dispatch key. Shape inference through the
// dispatcher then runs Python: about a hundred microseconds for torch.cat's
// reference implementation, paid at every new call shape (a KV cache grows
// every decoding step). The C++ functions stay callable as at::meta::*; this
// table hands them to shape inference as boxed kernels. Being the CPU's own
// checks, they also raise the CPU's errors word for word. A few hot operators
// whose only meta kernel is Python (CPU attention forward and backward,
// native_layer_norm) get C++ transcriptions of it, and operators without any
// get the kernels of ops/absent_meta_kernels.h.
#pragma once

#include <ATen/core/boxing/KernelFunction.h>
#include <ATen/core/dispatch/Dispatcher.h>

namespace axon {

// One overload's meta kernel, by the operator's name and overload name.
struct MetaKernelEntry {
  const char* name;
  const char* overload;
  c10::KernelFunction kernel;
};

// The C++ meta kernel of `op`, or null where the table has none (the
// dispatcher's Meta kernel then serves).
const c10::KernelFunction* native_meta_kernel(const c10::OperatorHandle& op);

}  // namespace axon
