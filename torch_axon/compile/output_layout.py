"""How a compiled partition's results come back with the strides eager gives them.

XLA writes each result dense and row-major. Eager ops often return other layouts: a transpose's or a
permute's view, a channels_last convolution, attention's output laid out like its query, a column slice of
a projection. The graph after a partition was traced with those strides, so a later `.view` that relies on
them raises when the result comes back row-major, and an op whose result layout follows its input's (the
CPU attention kernel) lays its own result out differently, so a view further on fails.

Each tensor result whose traced value is not contiguous gets a layout:
- dense in another dimension order (every permutation of a dense tensor): the module transposes the value
  into that memory order and the launch writes it into a tensor allocated with the traced strides, bound
  as its contiguous permutation. No copy;
- not dense (a slice of a larger buffer): the result is written row-major, then copied into a tensor
  allocated with the traced strides, one device copy;
- overlapping (an expanded tensor): no layout, the result stays row-major; such strides cannot be written
  element by element.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class OutputLayout:
    order: tuple[int, ...]          # the result's dimensions, outermost in memory first
    dense: bool                     # the module writes it in `order`; otherwise it is copied in after the launch

    def allocate(self, meta, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
        """(the tensor the graph gets, with the traced strides; the tensor the launch binds)."""
        delivered = torch.empty_strided(meta.shape, meta.stride(), dtype=meta.dtype, device=device)
        if self.dense:
            return delivered, delivered.permute(self.order)
        return delivered, torch.empty(meta.shape, dtype=meta.dtype, device=device)


def output_layout(meta: torch.Tensor) -> OutputLayout | None:
    """The layout that gives a result `meta`'s strides; None where row-major does (or nothing can)."""
    if meta.numel() == 0 or meta.is_contiguous():
        return None
    sizes, strides = tuple(meta.shape), tuple(meta.stride())
    if any(stride <= 0 for size, stride in zip(sizes, strides) if size > 1):
        return None  # expanded (or negative) strides: elements share memory
    # Dimensions of size one have no meaningful stride: they go innermost, where they change nothing.
    spread = sorted((d for d in range(meta.dim()) if sizes[d] != 1), key=lambda d: (-strides[d], d))
    order = tuple(spread) + tuple(d for d in range(meta.dim()) if sizes[d] == 1)
    dense = not spread or strides[spread[-1]] == 1
    for outer, inner in zip(spread, spread[1:]):
        if strides[outer] < strides[inner] * sizes[inner]:
            return None  # rows overlap
        dense = dense and strides[outer] == strides[inner] * sizes[inner]
    return OutputLayout(order, dense)
