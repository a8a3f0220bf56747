"""Operators that axon graphs call as axon's own kernels instead of Inductor's generated code.

Max pooling with indices, forward and backward. PyTorch 2.13's Inductor decomposes it into code that computes
each window's argmax with vector masks cast element by element to 64-bit indices, and the backward into a
scatter of atomic adds. On the CPU's C++ generator (which axon graphs use) a ReLU and a 2×2 max pooling of
32×32×32×32 floats, forward and backward, take 7.1-7.7 ms compiled against 0.41 ms for axon's eager kernels
(Inductor on CPU tensors: 7.1 ms against 0.77 eager), and a conv-ReLU-pool network's compiled training step
took 2.8 times its eager time. In axon graphs these operators stay whole (their decompositions decline) and
lower to extern calls of axon's kernels (host_execution/direct_pooling.cpp for 2-d), launched on the stream
like every extern kernel. Graphs without axon tensors keep Inductor's own code.
"""

from __future__ import annotations

import functools

import torch

aten = torch.ops.aten
_OPERATORS = (aten.max_pool2d_with_indices.default, aten.max_pool2d_with_indices_backward.default,
              aten.max_pool3d_with_indices.default)


def _on_axon(value) -> bool:
    """`value` is a traced tensor (decompositions) or an Inductor IR node (lowerings)."""
    device = value.device if isinstance(value, torch.Tensor) else value.get_device()
    return device is not None and device.type == "axon"


def _declining_decomposition(decomposition):
    @functools.wraps(decomposition)
    def decompose(first, *args, **kwargs):
        if _on_axon(first):
            return NotImplemented  # the operator stays whole for the lowering below
        return decomposition(first, *args, **kwargs)

    decompose._axon_extern = True
    return decompose


def _extern_lowering(lowering, extern_call):
    @functools.wraps(lowering)
    def lower(first, *args, **kwargs):
        if _on_axon(first):
            return extern_call(first, *args, **kwargs)
        return lowering(first, *args, **kwargs)

    lower._axon_extern = True
    return lower


def install_extern_operators() -> None:
    """Wraps Inductor's decompositions and lowerings of `_OPERATORS` (idempotent)."""
    from torch._inductor import decomposition, lowering

    for operator in _OPERATORS:
        current = decomposition.decompositions.get(operator)
        if current is not None and not getattr(current, "_axon_extern", False):
            decomposition.decompositions[operator] = _declining_decomposition(current)
        current = lowering.lowerings.get(operator)
        if current is not None and not getattr(current, "_axon_extern", False):
            extern_call = lowering.fallback_handler(operator, add_to_fallback_set=False)
            lowering.lowerings[operator] = _extern_lowering(current, extern_call)
    decomposition.fast_random_decomps.cache_clear()  # a copy of the table, made at the first compile
