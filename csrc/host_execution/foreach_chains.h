// The optimizers' multi-tensor arithmetic (_foreach_* operators), run in chains.
//
// Why: torch.optim's default on an accelerator (foreach=True) updates the
// parameters through a sequence of _foreach_* calls (AdamW: eight per step),
// each a sweep over every parameter and its state. PyTorch's kernel for them
// loops over the tensors, so on axon each call queued one kernel per tensor,
// and each sweep streamed all of the optimizer's memory through the caches
// again: the GPT training step's AdamW update took 10.8 ms against 2.6 for
// the single-pass fused kernel (docs/benchmarks.md).
//
// Here each call is one launch, and calls queued back to back on a stream
// join one chain. The worker runs a chain tile by tile: a tile is a slice of
// the tensors at one list position, and every call of the chain runs on it
// before the next tile starts, so the tile stays in cache across the chain.
// On float and double, where every call of a round has an element loop
// proven to give its CPU kernel's values (element_loop_proofs.h), the calls
// run in those loops a 1024-element block at a time, so the block stays in
// L1 and no call pays for a TensorIterator per tile. Otherwise the CPU
// kernels compute every tile (Tensor::mul_ and the others over views).
// The CPU kernels these calls use give an element the same value wherever
// their loop starts, so the values are those of the calls run one after the
// other, bit for bit (tests/test_foreach_chains.py, test_element_loops.py).
// The exception is in the CPU's own kernels: on half and bfloat16, add and
// sub with an alpha round an element differently on their vectorized and
// scalar paths, so the CPU's values depend on where its threads split a
// tensor; chains give those of an undivided tensor (the CPU on one thread).
//
// A call joins the chain its stream last started when the chain has not
// finished, nothing else has been queued on the stream since
// (axon_stream_get_submission_count), its lists have the chain's length and
// element counts per position, and each of its tensors' memory is either
// disjoint from the chain's other tensors or exactly one of them at the same
// position. Running tile by tile then meets every element in the order the
// separate calls would. Calls that join while the chain runs make a second
// round, run tile by tile in turn (an optimizer step that finds the device
// idle starts its first call at once). Otherwise the call starts a chain of
// its own. A chained call bumps the versions of the tensors it writes in
// place, as the loop's in-place operators would, so autograd sees the change.
//
// Calls outside what chains cover take PyTorch's per-tensor loop unchanged,
// with its errors: tensors on several devices, of several dtypes, not
// contiguous or not floating, sizes that differ between lists, memory the
// host cannot address, tensors of one call that overlap otherwise, numbers
// a CPU kernel would fail to convert, in-place writes it would refuse. So no
// chained call can fail on the worker where the CPU raises at the call.
#pragma once

#include <torch/library.h>

#include <cstdint>

namespace axon {

// Registers the chained _foreach_* kernels on the PrivateUse1 library of aten.
void register_foreach_kernels(torch::Library& library);

// Calls so far that started a chain, and that joined one; for tests.
int64_t foreach_chains_started();
int64_t foreach_calls_joined();
// Rounds of chained calls that ran in element loops (element_loops.h); for tests.
int64_t foreach_rounds_in_element_loops();

}  // namespace axon
