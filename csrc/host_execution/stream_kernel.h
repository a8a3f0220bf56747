// The generic axon kernel: any ATen operator with a CPU kernel, executed on
// the current axon stream over axon memory.
//
// Steps, for one call:
//  1. check that all tensors live on one axon device (0-dim CPU tensors are
//     allowed, as on CUDA) and make it current;
//  2. run the operator on meta tensors: this raises shape/dtype errors at
//     once, on the caller's thread, and yields output sizes and strides;
//  3. allocate fresh outputs from the caching allocator (stream-ordered) and
//     resize out= arguments as the meta run did;
//  4. queue the CPU kernel on the stream, over CPU aliases of axon memory
//     (the `.out` overload writing straight into the outputs when one
//     exists), and return without waiting.
// Operators whose meta run fails (no meta kernel, data-dependent shapes), or
// that return non-tensors, run synchronously instead: the stream is drained, the
// CPU kernel runs on the worker while the caller waits, fresh results are
// copied to axon.
// Random operators draw from the axon generator (see core/generator.h).
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>

#include <cstdint>
#include <map>
#include <string>

namespace axon {

void stream_kernel(const c10::OperatorHandle& op, torch::jit::Stack* stack);

// Runs operator `name`.`overload` ("" for the default) through stream_kernel
// with `stack` as its arguments; returns its first result. For C++ kernels that
// check or reshape their arguments and then hand the work to the generic path.
c10::IValue stream_kernel_by_name(const char* name, const char* overload, torch::jit::Stack stack);

// How many calls of each operator (by name.overload) ran synchronously so far;
// for tests and for finding operators that drain the stream needlessly.
std::map<std::string, int64_t> synchronous_runs();

}  // namespace axon
