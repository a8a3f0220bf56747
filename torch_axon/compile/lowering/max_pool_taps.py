"""Max pooling with small windows as elementwise code: the forward one tap at a time, the backward of
disjoint windows as one select. For windows of at most `MAX_TAPS` elements (every CNN's 2×2 and 3×3).

The general lowering (pooling.py) is a (value, index) reduce_window for the forward and a scatter for the
backward. XLA:CPU runs both slowly: a variadic window reduction is not vectorized (a 2×2 pooling at a
CNN's shape took 5.6 ms against 0.5 ms here), and a scatter is a serial loop over its updates.

A tap is one position of the window: for every output, the input element at that offset, a strided slice
of the input. The forward scans the taps in the CPU kernel's order (row-major in the window) with the CPU
kernel's rule: starting from -inf at the window's first element on the input, a later element replaces
the current one when it is larger or NaN, so ties keep the earliest and the last NaN wins. Padding holds
-inf, which never replaces anything. XLA fuses the scan into one loop over the outputs.

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

MAX_TAPS = 32


def _row_major_strides(shape) -> list[int]:
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= size
    return list(reversed(strides))


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
    plane_strides = _row_major_strides(in_spatial)
    dtype = x.dtype
    lowest = -math.inf if dtype.is_floating_point else torch.iinfo(dtype).min
    # Per axis, where each output's window starts on the padded input's coordinates minus the padding.
    starts = [context.add(context.mul(context.iota(out_spatial, axis, torch.int64), s), -p)
              for axis, (s, p) in enumerate(zip(stride, padding))]

    def spread(value):  # a Value over the spatial outputs, broadcast over the leading dimensions
        return context.broadcast_in_dim(value, out_shape, list(range(lead, x.rank)))

    # A ceil_mode window may hang over the input's end.
    high = [max(0, (o - 1) * s + d * (k - 1) + 1 - n - p)
            for n, o, k, s, p, d in zip(in_spatial, out_spatial, kernel, stride, padding, dilation)]
    padded = any(padding) or any(high)
    if padded:
        x = context.op("stablehlo.pad", [x, context.builder.constant(lowest, dtype)],
                       list(x.shape[:lead]) + [p + n + h for p, n, h in zip(padding, in_spatial, high)], dtype,
                       f"edge_padding_low = {i64_array([0] * lead + list(padding))}, "
                       f"edge_padding_high = {i64_array([0] * lead + high)}, "
                       f"interior_padding = {i64_array([0] * x.rank)}")
        # The CPU kernel's starting index: the window's first element on the input (past the padding, in
        # steps of the dilation), with -inf as the value to beat.
        firsts = []
        for start, d in zip(starts, dilation):
            before = context.maximum(context.mul(start, -1), 0)  # padding elements before the input
            steps = context.div(context.add(before, d - 1), d) if d > 1 else before
            firsts.append(context.add(start, context.mul(steps, d)))
        value, index = context.constant(lowest, dtype, out_shape), spread(_flat(context, firsts, plane_strides))
    else:
        value = index = None  # the first tap starts the scan (it is the CPU kernel's first element)
    corner = _flat(context, starts, plane_strides)
    for offset in itertools.product(*(range(k) for k in kernel)):
        begin = [t * d for t, d in zip(offset, dilation)]
        tap = context.slice(x, [0] * lead + begin,
                            list(x.shape[:lead]) + [b + (o - 1) * s + 1 for b, o, s in zip(begin, out_spatial, stride)],
                            [1] * lead + list(stride))
        flat = spread(context.add(corner, sum(b * t for b, t in zip(begin, plane_strides))))
        if value is None:
            value, index = tap, flat
            continue
        take = context.compare(tap, value, "GT")
        if dtype.is_floating_point:
            take = context.op("stablehlo.or", [take, context.compare(tap, tap, "NE")], out_shape, torch.bool)
        value, index = context.select(take, tap, value), context.select(take, flat, index)
    return [value, index]


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
    flat = _flat(context, positions, _row_major_strides(in_spatial))
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
