"""An executable's bindings: the axon tensors a compiled partition's launch reads and writes.

Inputs are bound in place when they are axon tensors of the launch's device
that are row-major, or a box of a dense region of their storage in some
dimension order (input_layout.py: bound as that region, which the module
slices and transposes back); others are first made dense on axon (one device
copy, counted in `copied_inputs`). Results are new axon tensors the launch
writes: they come from the caching allocator, so they are counted in axon's
memory statistics and freed like any tensor. Everything here is stream-ordered
device work: nothing waits for the device.
"""

from __future__ import annotations

import torch

copied_inputs = 0


def input_binding(tensor: torch.Tensor, device: torch.device, layout=None) -> torch.Tensor:
    """`tensor` as the launch reads it; `layout` (LoweredGraph.input_layouts, input_layout.py) binds a strided
    tensor as the dense region of its storage it lies in."""
    global copied_inputs
    if tensor.device != device:
        tensor = tensor.to(device, non_blocking=True)  # a CPU scalar lifted into the graph, another axon device
        if layout is not None:  # the copy need not lie where the original did in its storage
            return _region_copy(tensor, layout)
    if layout is not None:
        tensor = layout.binding(tensor)
    if tensor.is_conj() or tensor.is_neg() or not tensor.is_contiguous():
        tensor = tensor.resolve_conj().resolve_neg().contiguous()
        copied_inputs += 1
    return tensor


def _region_copy(tensor: torch.Tensor, layout) -> torch.Tensor:
    """A new region holding `tensor` where `layout` expects it (the rest is never read)."""
    global copied_inputs
    copied_inputs += 1
    region = torch.empty(layout.region, dtype=tensor.dtype, device=tensor.device)
    box = region[tuple(slice(start, start + size) for start, size in zip(layout.starts, layout.shape))]
    box.copy_(tensor.permute(layout.order))
    return region


def start_bindings(layouts, device: torch.device) -> list[torch.Tensor]:
    """Where this call's boxes begin in their regions (LoweredGraph.input_layouts): the int64 vector the
    module takes last when a layout is sliced, else nothing."""
    starts = [start for layout in layouts if layout is not None and layout.sliced for start in layout.starts]
    return [torch.tensor(starts, dtype=torch.int64).to(device, non_blocking=True)] if starts else []


def result_bindings(lowered, device: torch.device) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """(the tensors the executable's results are bound to, then the [checks, 2] int64 table of run-time check
    results when the lowering added checks; the tensors the graph gets, one per result). They are the same
    tensors where a result is row-major; a result with a layout (output_layout.py) is delivered in its
    traced dimension order through a contiguous permutation of it."""
    bound, delivered = [], []
    for meta, layout in zip(lowered.output_meta, lowered.output_layouts):
        if layout is None:
            bound.append(torch.empty(meta.shape, dtype=meta.dtype, device=device))
            delivered.append(bound[-1])
        else:
            tensor, binding = layout.allocate(meta, device)
            delivered.append(tensor)
            bound.append(binding)
    if lowered.checks:
        bound.append(torch.empty((len(lowered.checks), 2), dtype=torch.int64, device=device))
    return bound, delivered
