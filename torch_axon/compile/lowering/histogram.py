"""Histograms: histc — the CPU kernel's bin arithmetic, then one scatter-add of ones.

The CPU kernel (histc's linear-interpolation path) puts an element x into bin
trunc((x - L) * bins / (R - L)), in the input's dtype, where L and R are the first
and last of linspace(min, max, bins + 1) in that dtype; x == R goes into the last
bin; elements outside [L, R] and NaN are not counted. The lowering writes that
arithmetic op for op, so every element lands in the bin the CPU chooses, and the
counts (exact integers well below 2**24) match bit for bit.

Only a range given by the caller is lowered. When min == max the CPU takes the range
from the data (aminmax, then a widening step of its own), a host decision that stays
with axon's kernel, as do invalid ranges (the kernel raises eager's error) and
reduced-precision dtypes (the CPU rounds each step to bfloat16 or half; XLA may keep
the intermediate results in float32).
"""

from __future__ import annotations

import math

import torch

from .builder import LoweringError
from .context import LoweringContext
from .indexing import point_scatter
from .registry import lowers

aten = torch.ops.aten


def _outer_edges(low: float, high: float, dtype: torch.dtype) -> tuple[float, float, float]:
    """(L, R, R - L) as the CPU kernel computes them in `dtype`. linspace's first and last elements are its
    ends rounded to `dtype`, so no linspace is built (on real tensors: lowering runs under a fake tensor mode)."""
    from torch._subclasses.fake_tensor import unset_fake_temporarily

    with unset_fake_temporarily():
        left, right = torch.tensor([low, high], dtype=dtype)
        return float(left), float(right), float(right - left)


@lowers(aten.histc.default)
def _histc(context: LoweringContext, node, x, bins=100, min=0, max=0):
    shape, dtype = context.output_type()
    if dtype not in (torch.float32, torch.float64):
        raise LoweringError(f"histc in {dtype}")
    low, high = float(min), float(max)
    if low == high:
        raise LoweringError("histc with its range taken from the data")
    if not (math.isfinite(low) and math.isfinite(high) and low < high):
        raise LoweringError("histc with an invalid range (eager raises)")
    bins = int(bins)
    counts = context.constant(0, dtype, shape)
    count = math.prod(x.shape)
    if count == 0:
        return counts
    left, right, width = _outer_edges(low, high, dtype)
    x = context.reshape(context.convert(x, dtype), (count,))
    position = context.div(context.mul(context.sub(x, left), float(bins)), width)  # a true division (context.divisor)
    position = context.convert(position, torch.int64)      # truncation, as the kernel's static_cast
    last = context.constant(bins - 1, torch.int64, (count,))
    position = context.minimum(position, last)              # x == R: the last bin holds its right edge
    inside = context.op("stablehlo.and", [context.compare(x, context.constant_like(left, x), "GE"),
                                          context.compare(x, context.constant_like(right, x), "LE")],
                        x.shape, torch.bool)                # false for NaN
    position = context.select(inside, position, context.constant(0, torch.int64, (count,)))
    ones = context.convert(inside, dtype)                   # an element outside the range adds 0
    return point_scatter(context, counts, context.reshape(position, (count, 1)), [0], ones, "add")
