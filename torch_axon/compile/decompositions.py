"""The decompositions AOTAutograd applies before partitioning: what remains is the op set the lowering table targets."""

from __future__ import annotations

import torch
from torch._decomp import core_aten_decompositions

from .attention_decomposition import DECOMPOSITIONS as _ATTENTION

# Ops kept whole rather than decomposed:
# - max_unpool's decomposition offsets the user's per-plane indices into one flat index, after which eager's
#   per-plane bounds check can no longer be made (lowered whole);
# - bernoulli with a tensor of probabilities decomposes to `rand < p`, which draws other numbers than the
#   kernel under the same seed: kept whole, it runs eagerly on axon's generator like every random op.
_KEPT_WHOLE = (torch.ops.aten.max_unpool2d, torch.ops.aten.max_unpool3d, torch.ops.aten.bernoulli)


def decompositions(kept=()):
    """Core-ATen decompositions (minus _KEPT_WHOLE, and with the CPU attention kernels' own,
    attention_decomposition.py): what remains is the op set the lowering table targets. `kept`: ops left
    whole besides (the compile path's extern kernels, partition.extern_kernels)."""
    table = core_aten_decompositions()
    for packet in _KEPT_WHOLE:
        for name in packet.overloads():
            table.pop(getattr(packet, name), None)
    table.update(_ATTENTION)
    for op in kept:
        table.pop(op, None)
    return table
