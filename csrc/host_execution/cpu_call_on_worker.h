// Runs one boxed CPU kernel call on a stream's worker and waits for it, as if
// it ran on the calling thread.
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>

#include "axon/stream.h"

namespace axon {

// Queues `op` over `stack` (CPU tensors, host aliases of axon memory
// included) on `stream` and waits until it has run; the results replace the
// arguments on `stack`, as callBoxed leaves them. An exception the kernel
// throws is rethrown here, with its type, and its warnings are replayed
// here, in order, to this thread's warning handler (Python's warnings).
//
// Why on the worker: a CPU kernel that runs on the calling thread with more
// than one OpenMP thread leaves that thread a pool of helpers for the rest of
// its life. libgomp then manages more threads than the host has cores, and
// from then on it lets every helper sleep between parallel regions, so each
// of the worker's parallel kernels waits for its helper to wake: a 2 MiB
// sign took 24 us before one masked_select, bincount or unique on axon and
// 47 us after it, for good (docs/benchmarks.md, stop 52). The worker's own
// team has the helpers already; the stream was drained, so nothing waits.
void call_cpu_kernel_on_worker(axon_stream stream, const char* kernel_name, const c10::OperatorHandle& op,
                               torch::jit::Stack& stack);

}  // namespace axon
