"""How a compiled partition reads a strided input without copying it first.

XLA takes dense row-major arguments. Many inputs of compiled graphs are not: AOTAutograd saves a weight's
transpose for the backward, and attention's q, k and v are column slices of one projection, transposed.
Such a tensor is usually a box inside a dense region of its storage, seen in another dimension order. The
partition then binds that region as it lies in memory (a contiguous `as_strided` view, no copy), and the
module slices the box out and transposes it back, which XLA fuses into the ops that read it.

A layout is part of a partition's specialization key; where the box begins in its region is not (an RNN
reading `x[:, t]` would otherwise compile once per step): the module takes those starts as a small int64
argument and slices with them at run time. Inputs no layout describes (expanded tensors, steps larger
than one element in the innermost dimension, regions that would run past the storage) are copied by the
binding, as before.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch


@dataclass(frozen=True)
class InputLayout:
    order: tuple[int, ...]          # the tensor's dimensions, outermost in memory first
    shape: tuple[int, ...]          # the tensor's sizes in that order
    region: tuple[int, ...]         # the dense region bound, in that order
    # Where the tensor's box begins in the region, in that order: a run-time argument of the module, so not
    # part of the layout's identity.
    starts: tuple[int, ...] = field(compare=False)

    def binding(self, tensor: torch.Tensor) -> torch.Tensor:
        """The region of `tensor`'s storage this layout reads, as a contiguous view (no copy)."""
        strides = _row_major_strides(self.region)
        corner = sum(start * stride for start, stride in zip(self.starts, strides))
        return tensor.as_strided(self.region, strides, tensor.storage_offset() - corner)

    @property
    def sliced(self) -> bool:
        return self.region != self.shape


def _row_major_strides(shape) -> tuple[int, ...]:
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= max(size, 1)
    return tuple(reversed(strides))


def memory_order(sizes, strides) -> tuple[list[int], tuple[int, ...]]:
    """(the dimensions of size > 1, outermost in memory first; all dimensions in memory order). Dimensions of
    size one have no meaningful stride: they go innermost, where they change nothing."""
    spread = sorted((d for d in range(len(sizes)) if sizes[d] != 1), key=lambda d: (-strides[d], d))
    return spread, tuple(spread) + tuple(d for d in range(len(sizes)) if sizes[d] == 1)


def input_layout(tensor: torch.Tensor) -> InputLayout | None:
    """The layout that binds `tensor` without a copy; None when it is contiguous already (bound as it is) or
    no layout describes it (the binding copies it)."""
    if tensor.is_contiguous() or tensor.numel() == 0:
        return None
    sizes, strides = tuple(tensor.shape), tuple(tensor.stride())
    spread, order = memory_order(sizes, strides)  # size-one dimensions innermost, with a region extent of one
    if not spread or strides[spread[-1]] != 1:
        return None
    region = [sizes[d] for d in order]
    for outer, inner in zip(spread, spread[1:]):
        if strides[inner] <= 0 or strides[outer] % strides[inner] or strides[outer] // strides[inner] < sizes[inner]:
            return None
        region[order.index(inner)] = strides[outer] // strides[inner]
    # The box's corner inside the region: the storage offset past the start of the outermost row.
    remainder = tensor.storage_offset() % strides[spread[0]] if len(spread) > 1 else 0
    starts = [0] * len(order)
    for d in spread[1:]:
        position = order.index(d)
        starts[position], remainder = divmod(remainder, strides[d])
        if starts[position] + sizes[d] > region[position]:
            return None
    if remainder:
        return None
    first = tensor.storage_offset() - sum(s * t for s, t in zip(starts, _row_major_strides(region)))
    if first < 0 or (first + math.prod(region)) * tensor.element_size() > tensor.untyped_storage().nbytes():
        return None
    return InputLayout(order, tuple(sizes[d] for d in order), tuple(region), tuple(starts))

