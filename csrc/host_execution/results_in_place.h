// Lets a CPU kernel that allocates its own results build them in device memory.
//
// A kernel with no out= variant (layer norm, convolution, every operator
// returning fresh tensors only) allocates its results with the CPU allocator.
// Run on an axon stream, each such result used to be computed into host
// memory and copied into the axon result: for a large operator the copy is a
// second pass over the result's bytes (layer norm on 4096×1024 floats ran at
// 0.6× the CPU's throughput).
//
// Here, while the kernel runs, the CPU allocator on the kernel's thread hands
// out the destinations' memory (their host views) for allocations of exactly
// a destination's size, each destination once. (The allocator doing this is
// installed when the extension loads and forwards every other allocation to
// PyTorch's CPU allocator.) Afterwards each destination
// holds its result either way: a result the kernel built in its destination,
// with the destination's strides, needs nothing; any other result is copied
// in, first taken out of destination memory if the kernel put it in another
// destination's (a temporary of the same size, a result of equal size
// allocated out of order). So a kernel allocating differently from what was
// foreseen gets the copy, never a wrong value.
//
// A kernel may allocate a result's size more than once and return a later
// allocation (the CPU's batch norm backward allocates its input gradient,
// then allocates it again, the first one dropped unused): the destination
// then went to the dropped one, and the result was copied (the backward took
// twice the CPU's time on axon). So a call site, named by `call_site`,
// remembers for each result whose size no other destination has which
// allocation of that size the kernel returned, and offers the destination to
// that allocation on the next call. A guess that proves wrong costs the copy
// of before, and is learned again.
//
// What it relies on: a CPU kernel lets go of its temporaries before it
// returns. A buffer a kernel kept past the call (a cache) would still view
// the destination's memory; none of PyTorch's kernels was found to (oneDNN's
// caches hold primitive descriptors, not buffers), and freeing one is safe
// either way: destination memory never reaches free().
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <vector>

namespace axon {

// Runs `kernel` on this thread with its allocations placed as described
// above, then makes every defined destination hold the kernel's result of
// the same index. `destinations` are CPU tensors (host views of device
// memory); undefined ones, and ones the placement cannot use (not dense), are
// only copied into. `kernel` returns one tensor per destination (undefined
// where there is none to deliver).
void run_with_results_in_place(const std::vector<at::Tensor>& destinations,
                               const std::function<std::vector<at::Tensor>()>& kernel, const void* call_site = nullptr);

// How many results were copied into their destinations so far (for tests).
int64_t results_copied();

}  // namespace axon
