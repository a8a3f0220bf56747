"""Max pooling with small windows as elementwise code: the forward one tap at a time, the backward of
disjoint windows as one select. For windows of at most `MAX_TAPS` elements (every CNN's 2×2 and 3×3).

The general lowering (pooling.py) is a (value, index) reduce_window for the forward and a scatter for the
backward. XLA:CPU runs both slowly: a variadic window reduction is not vectorized (a 2×2 pooling at a
CNN's shape took 5.6 ms against 0.5 ms here), and a scatter is a serial loop over its updates.

A tap is one position of the window: for every output, the input element at that offset, a strided slice
of the input. The forward scans the taps in the CPU kernel's order (row-major in the window) with the CPU
kernel's rule: a later element replaces the current maximum when it is larger or NaN, so ties keep the
earliest and the last NaN wins; padding holds -inf, which never replaces anything. The index is the
window's corner plus the offset of the tap the scan ends on, found as a min (max) over tap numbers (see
`_winning_tap`). XLA fuses each into one loop over the outputs.

The backward of disjoint windows (stride at least the window's extent) gives each input element the
gradient of the one output whose block holds it, where the saved index names it. Like Inductor's lowering
of this op, it relies on each index naming an element of its own window, which is what the forward saves;
an index pointing elsewhere (only a direct call of the backward op with made-up indices gives one)
contributes nothing. Overlapping windows keep pooling.py's scatter: summing one padded select per tap
there was 5× slower still.
"""

from __future__ import annotations

import itertools
import math

import torch

from .builder import i64_array
from .indexing import row_major_strides

MAX_TAPS = 32


def _flat(context, positions, plane_strides):
    """The flat in-plane index of per-axis positions (int64 Values of one shape)."""
    flat = None
    for position, plane_stride in zip(positions, plane_strides):
        term = context.mul(position, plane_stride)
        flat = term if flat is None else context.add(flat, term)
    return flat


def max_pool_forward(context, x, out_shape, kernel, stride, padding, dilation):
    """(values, indices) of max pooling `x` (window geometry already resolved per spatial axis)."""
    spatial = len(kernel)
    lead = x.rank - spatial
    in_spatial, out_spatial = list(x.shape[lead:]), list(out_shape[lead:])
    dtype = x.dtype
    # A ceil_mode window may hang over the input's end.
    high = [max(0, (o - 1) * s + d * (k - 1) + 1 - n - p)
            for n, o, k, s, p, d in zip(in_spatial, out_spatial, kernel, stride, padding, dilation)]
    padded = any(padding) or any(high)
    if padded:
        lowest = -math.inf if dtype.is_floating_point else torch.iinfo(dtype).min
        x = context.op("stablehlo.pad", [x, context.builder.constant(lowest, dtype)],
                       list(x.shape[:lead]) + [p + n + h for p, n, h in zip(padding, in_spatial, high)], dtype,
                       f"edge_padding_low = {i64_array([0] * lead + list(padding))}, "
                       f"edge_padding_high = {i64_array([0] * lead + high)}, "
                       f"interior_padding = {i64_array([0] * x.rank)}")
    offsets = list(itertools.product(*(range(k) for k in kernel)))  # the CPU kernel's scan order
    taps = []
    for offset in offsets:
        begin = [t * d for t, d in zip(offset, dilation)]
        taps.append(context.slice(
            x, [0] * lead + begin,
            list(x.shape[:lead]) + [b + (o - 1) * s + 1 for b, o, s in zip(begin, out_spatial, stride)],
            [1] * lead + list(stride)))
    value = taps[0]
    for tap in taps[1:]:
        value = context.select(_replaces(context, tap, value), tap, value)
    # Per axis, where each output's window starts on the input (negative inside the padding).
    starts = [context.add(context.mul(context.iota(out_spatial, axis, torch.int64), s), -p)
              for axis, (s, p) in enumerate(zip(stride, padding))]
    number = _winning_tap(context, taps, value, [_inside(context, starts, offset, dilation, in_spatial, out_shape,
                                                         lead) for offset in offsets] if padded else None)
    # The winner's flat in-plane index: its window's corner plus its offset in the window.
    plane_strides = row_major_strides(in_spatial)
    shift, radix = None, 1
    for axis in reversed(range(spatial)):
        coordinate = context.div(number, radix) if radix > 1 else number
        if axis > 0:
            coordinate = context.binary("stablehlo.remainder", coordinate, kernel[axis])
        term = context.mul(coordinate, dilation[axis] * plane_strides[axis])
        shift = term if shift is None else context.add(shift, term)
        radix *= kernel[axis]
    corner = context.broadcast_in_dim(_flat(context, starts, plane_strides), out_shape, list(range(lead, x.rank)))
    return [value, context.add(corner, context.convert(shift, torch.int64))]


def _replaces(context, tap, current):
    """The CPU kernel's rule: a later element replaces the current maximum when larger or NaN."""
    larger = context.compare(tap, current, "GT")
    if not tap.dtype.is_floating_point:
        return larger
    return context.op("stablehlo.or", [larger, context.compare(tap, tap, "NE")], tap.shape, torch.bool)


def _winning_tap(context, taps, value, inside):
    """The number of the tap the CPU kernel's scan ends on: the last NaN where the maximum is NaN, else the
    first element equal to it (on the input: an all -inf window names its first element there). Computed
    as a min (max) over tap numbers, not as a chain of selects: XLA:CPU compiles a chain of index selects
    that depend on value comparisons into branches, which mispredict on real data (3-4x slower)."""
    shape, count = value.shape, len(taps)
    first = None
    for number, tap in enumerate(taps):
        hit = context.compare(tap, value, "EQ")
        if inside is not None:
            hit = context.op("stablehlo.and", [hit, inside[number]], shape, torch.bool)
        candidate = context.select(hit, context.constant(number, torch.int32, shape),
                                   context.constant(count, torch.int32, shape))
        first = candidate if first is None else context.minimum(first, candidate)
    if not value.dtype.is_floating_point:
        return first
    last_nan = None
    for number, tap in enumerate(taps):
        candidate = context.select(context.compare(tap, tap, "NE"), context.constant(number, torch.int32, shape),
                                   context.constant(-1, torch.int32, shape))
        last_nan = candidate if last_nan is None else context.maximum(last_nan, candidate)
    return context.select(context.compare(value, value, "NE"), last_nan, first)


def _inside(context, starts, offset, dilation, in_spatial, out_shape, lead):
    """Whether the tap at `offset` falls on the input (not on padding), per output."""
    inside = None
    for start, t, d, n in zip(starts, offset, dilation, in_spatial):
        position = context.add(start, t * d)
        on_input = context.op("stablehlo.and", [context.compare(position, context.constant_like(0, position), "GE"),
                                                context.compare(position, context.constant_like(n, position), "LT")],
                              position.shape, torch.bool)
        inside = on_input if inside is None else context.op("stablehlo.and", [inside, on_input], on_input.shape,
                                                            torch.bool)
    return context.broadcast_in_dim(inside, out_shape, list(range(lead, len(out_shape))))


def windows_disjoint(kernel, stride, dilation) -> bool:
    """Whether no two windows share an input element."""
    return all(d * (k - 1) + 1 <= s for k, s, d in zip(kernel, stride, dilation))


def disjoint_windows_backward(context, grad, indices, in_shape, stride, padding):
    """The gradient of max pooling with respect to its input (shape `in_shape`, exact: no sums) when no
    two windows share an element (`windows_disjoint`: a 2×2 pooling with stride 2). Every input element
    lies in the block of `stride` elements one output owns, so the input, seen as [.., outputs, stride, ..]
    per spatial axis, takes its output's gradient where the saved index names it: one broadcast, compare
    and select, which XLA fuses into one loop."""
    spatial = len(stride)
    lead = grad.rank - spatial
    out_spatial, in_spatial = grad.shape[lead:], in_shape[lead:]
    blocks = [size for o, s in zip(out_spatial, stride) for size in (o, s)]  # [o1, s1, o2, s2, ...]
    positions = [context.add(context.add(context.mul(context.iota(blocks, 2 * axis, torch.int64), s),
                                         context.iota(blocks, 2 * axis + 1, torch.int64)), -p)
                 for axis, (s, p) in enumerate(zip(stride, padding))]
    flat = _flat(context, positions, row_major_strides(in_spatial))
    shape = list(grad.shape[:lead]) + blocks
    spread = list(range(lead)) + [lead + 2 * axis for axis in range(spatial)]
    hit = context.compare(context.broadcast_in_dim(indices, shape, spread),
                          context.broadcast_in_dim(flat, shape, list(range(lead, lead + 2 * spatial))), "EQ")
    placed = context.select(hit, context.broadcast_in_dim(grad, shape, spread),
                            context.constant(0, grad.dtype, shape))
    covered = [o * s for o, s in zip(out_spatial, stride)]
    placed = context.reshape(placed, list(grad.shape[:lead]) + covered)
    high = [n - (c - p) for n, c, p in zip(in_spatial, covered, padding)]
    if not any(padding) and not any(high):
        return placed
    return context.op("stablehlo.pad", [placed, context.builder.constant(0, grad.dtype)], in_shape, grad.dtype,
                      f"edge_padding_low = {i64_array([0] * lead + [-p for p in padding])}, "
                      f"edge_padding_high = {i64_array([0] * lead + high)}, "
                      f"interior_padding = {i64_array([0] * (lead + spatial))}")
