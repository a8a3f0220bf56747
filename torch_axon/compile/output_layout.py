"""How a compiled partition's results come back laid out as eager lays them out.

XLA writes each result dense and row-major. Eager ops often return other layouts: a transpose's or a
permute's view, a channels_last convolution, attention's output laid out like its query, a column slice of
a projection. The graph after a partition was traced with those layouts, so a later `.view` that relies on
them raises when the result comes back row-major, and an op whose result layout follows its input's (the
CPU attention kernel) lays its own result out differently, so a view further on fails.

Each tensor result whose traced value is not contiguous gets its dimension order: the module transposes
the value into that memory order, and the launch writes it straight into a tensor allocated dense in that
order, bound as its contiguous permutation. No copy. For a result dense in another order (every
permutation of a dense tensor: a transpose, channels_last) those are eager's strides exactly. A strided
slice of a larger buffer keeps its order with the gaps closed: eager's exact strides would take a buffer as
large as the one it was sliced from, and its order is what views and kernels depend on. Expanded results
(elements sharing memory) stay row-major.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .input_layout import memory_order


@dataclass(frozen=True)
class OutputLayout:
    order: tuple[int, ...]          # the result's dimensions, outermost in memory first

    def allocate(self, meta, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
        """(the tensor the graph gets, dense in `order`; the contiguous view of it the launch binds)."""
        binding = torch.empty([meta.shape[d] for d in self.order], dtype=meta.dtype, device=device)
        return binding.permute([self.order.index(d) for d in range(len(self.order))]), binding


def output_layout(meta: torch.Tensor) -> OutputLayout | None:
    """The layout that lays a result out in `meta`'s dimension order; None where row-major does (or where
    elements share memory, which no dense layout gives)."""
    if meta.numel() == 0 or meta.is_contiguous():
        return None
    sizes, strides = tuple(meta.shape), tuple(meta.stride())
    if any(stride <= 0 for size, stride in zip(sizes, strides) if size > 1):
        return None  # expanded (or negative) strides: elements share memory
    spread, order = memory_order(sizes, strides)
    for outer, inner in zip(spread, spread[1:]):
        if strides[outer] < strides[inner] * sizes[inner]:
            return None  # rows overlap
    return None if order == tuple(range(meta.dim())) else OutputLayout(order)
