"""An executable's bindings: the axon tensors a compiled partition's launch reads and writes.

Inputs are bound in place when they are dense axon tensors of the launch's
device, row-major or a permutation of row-major (bound as their memory, which
the module transposes back); others are first made so on axon (one device
copy, counted in `copied_inputs`). Results are new axon tensors the launch writes: they come
from the caching allocator, so they are counted in axon's memory statistics and
freed like any tensor. Everything here is stream-ordered device work: nothing
waits for the device.
"""

from __future__ import annotations

import torch

copied_inputs = 0


def input_binding(tensor: torch.Tensor, device: torch.device, order=None) -> torch.Tensor:
    """`tensor` as the launch reads it; `order` (LoweredGraph.input_orders) binds a permuted tensor as its
    memory, which the module transposes back."""
    global copied_inputs
    if tensor.device != device:
        tensor = tensor.to(device, non_blocking=True)  # a CPU scalar lifted into the graph, another axon device
    if order is not None:
        tensor = tensor.permute(order)
    if tensor.is_conj() or tensor.is_neg() or not tensor.is_contiguous():
        tensor = tensor.resolve_conj().resolve_neg().contiguous()
        copied_inputs += 1
    return tensor


def result_bindings(output_meta, checks: int, device: torch.device) -> list[torch.Tensor]:
    """Empty tensors for the executable's results (row-major, as the format writes them), then the
    [checks, 2] int64 table of run-time check results when the lowering added checks."""
    results = [torch.empty(meta.shape, dtype=meta.dtype, device=device) for meta in output_meta]
    if checks:
        results.append(torch.empty((checks, 2), dtype=torch.int64, device=device))
    return results
