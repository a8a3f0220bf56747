"""Spatial sampling: grid_sampler_2d (bilinear and nearest; zeros, border and reflection padding) and the
separable upsampling ops (linear, bilinear, trilinear, bicubic; with backward).

grid_sampler_2d: each output point gathers its neighbouring input pixels (a
point gather over batch, y and x; channels ride along as the slice) and blends
them with weights computed from the grid, following PyTorch's coordinate rules
(aten/src/ATen/native/GridSampler.h: unnormalize, clip or reflect, then
sample). Its bicubic mode is left to axon's kernel.

upsample_*: every output is a fixed linear combination of inputs along each
axis, so each axis is one contraction with an [out, in] weight matrix computed
at lowering time (PyTorch's UpSample.h source-index and cubic-weight rules);
the backward contracts with the transposed matrices.
"""

from __future__ import annotations

import math

import torch

from .builder import LoweringError
from .context import LoweringContext
from .indexing import point_gather, stack_coordinates
from .registry import lowers

aten = torch.ops.aten


class _Math:
    """Elementwise float arithmetic on one shape, to keep the coordinate formulas readable."""

    def __init__(self, context: LoweringContext, shape, dtype):
        self.context, self.shape, self.dtype = context, tuple(shape), dtype

    def const(self, value):
        return self.context.constant(value, self.dtype, self.shape)

    def _lift(self, value):
        return self.const(value) if isinstance(value, (int, float)) else value

    def binary(self, name, a, b):
        return self.context.op(f"stablehlo.{name}", [self._lift(a), self._lift(b)], self.shape, self.dtype)

    def add(self, a, b):
        return self.binary("add", a, b)

    def sub(self, a, b):
        return self.binary("subtract", a, b)

    def mul(self, a, b):
        return self.binary("multiply", a, b)

    def div(self, a, b):
        return self.binary("divide", a, b)

    def unary(self, name, a):
        return self.context.op(f"stablehlo.{name}", [a], self.shape, self.dtype)

    def clip(self, a, low, high):
        return self.binary("minimum", self.binary("maximum", a, low), high)


def _unnormalize(m: _Math, coordinate, size: int, align_corners: bool):
    if align_corners:
        return m.mul(m.add(coordinate, 1.0), (size - 1) / 2.0)
    return m.div(m.sub(m.mul(m.add(coordinate, 1.0), float(size)), 1.0), 2.0)


def _reflect(m: _Math, coordinate, twice_low: int, twice_high: int):
    if twice_low == twice_high:
        return m.const(0.0)
    low = twice_low / 2.0
    span = (twice_high - twice_low) / 2.0
    distance = m.unary("abs", m.sub(coordinate, low))
    extra = m.binary("remainder", distance, span)
    flips = m.unary("floor", m.div(distance, span))
    parity = m.binary("remainder", flips, 2.0)
    even = m.context.compare(parity, m.const(0.0), "EQ")
    return m.context.select(even, m.add(extra, low), m.add(m.sub(span, extra), low))


def _source_index(m: _Math, coordinate, size: int, padding_mode: int, align_corners: bool):
    coordinate = _unnormalize(m, coordinate, size, align_corners)
    if padding_mode == 1:
        coordinate = m.clip(coordinate, 0.0, float(size - 1))
    elif padding_mode == 2:
        if align_corners:
            coordinate = _reflect(m, coordinate, 0, 2 * (size - 1))
        else:
            coordinate = _reflect(m, coordinate, -1, 2 * size - 1)
        coordinate = m.clip(coordinate, 0.0, float(size - 1))
    return coordinate


@lowers(aten.grid_sampler_2d.default)
def _grid_sampler_2d(context, node, x, grid, interpolation_mode, padding_mode, align_corners):
    meta = context.meta(node)
    shape, dtype = context.shape_of(meta), meta.dtype
    if interpolation_mode not in (0, 1):
        raise LoweringError("grid_sampler_2d: bicubic interpolation")
    if not dtype.is_floating_point or x.rank != 4:
        raise LoweringError("grid_sampler_2d: expects a floating [N, C, H, W] input")
    batch, channels, height, width = x.shape
    out_h, out_w = grid.shape[1], grid.shape[2]
    if 0 in shape or 0 in x.shape:
        return context.constant(0, dtype, shape)
    compute = torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype
    points = (batch, out_h, out_w)
    m = _Math(context, points, compute)
    grid = context.convert(grid, compute)

    def component(i):
        part = context.slice(grid, [0, 0, 0, i], [batch, out_h, out_w, i + 1])
        return context.reshape(part, points)

    ix = _source_index(m, component(0), width, padding_mode, align_corners)
    iy = _source_index(m, component(1), height, padding_mode, align_corners)
    source = context.convert(x, compute)
    batch_index = context.iota(points, 0, torch.int64)

    def tap(y, x_coordinate, weight):
        """weight * input[n, :, y, x] for integer-valued float coordinates; zero where out of range."""
        inside = context.op("stablehlo.and", [
            context.op("stablehlo.and", [context.compare(x_coordinate, m.const(0.0), "GE"),
                                         context.compare(x_coordinate, m.const(float(width - 1)), "LE")],
                       points, torch.bool),
            context.op("stablehlo.and", [context.compare(y, m.const(0.0), "GE"),
                                         context.compare(y, m.const(float(height - 1)), "LE")], points, torch.bool)],
            points, torch.bool)
        yi = context.convert(m.clip(y, 0.0, float(height - 1)), torch.int64)
        xi = context.convert(m.clip(x_coordinate, 0.0, float(width - 1)), torch.int64)
        coordinates = stack_coordinates(context, [batch_index, yi, xi])
        values = point_gather(context, source, coordinates, [0, 2, 3])  # [N, Ho, Wo, C]
        weight = context.select(inside, weight, m.const(0.0))
        full = points + (channels,)
        return context.op("stablehlo.multiply", [values, context.broadcast_in_dim(weight, full, [0, 1, 2])], full,
                          compute)

    if interpolation_mode == 1:
        result = tap(m.unary("round_nearest_even", iy), m.unary("round_nearest_even", ix), m.const(1.0))
    else:
        x0, y0 = m.unary("floor", ix), m.unary("floor", iy)
        x1, y1 = m.add(x0, 1.0), m.add(y0, 1.0)
        east, south = m.sub(ix, x0), m.sub(iy, y0)
        west, north = m.sub(x1, ix), m.sub(y1, iy)
        full = points + (channels,)
        result = None
        for y, x_coordinate, weight in ((y0, x0, m.mul(north, west)), (y0, x1, m.mul(north, east)),
                                        (y1, x0, m.mul(south, west)), (y1, x1, m.mul(south, east))):
            contribution = tap(y, x_coordinate, weight)
            result = contribution if result is None else context.op("stablehlo.add", [result, contribution], full,
                                                                     compute)
    return context.convert(context.transpose(result, [0, 3, 1, 2]), dtype)


# ---- separable resampling (upsample_*): one interpolation matrix per spatial axis --------------------
def _scale(in_size: int, out_size: int, align_corners: bool, scale) -> float:
    """PyTorch's area_pixel_compute_scale."""
    if align_corners:
        return (in_size - 1) / (out_size - 1) if out_size > 1 else 0.0
    return 1.0 / scale if scale is not None and scale > 0 else in_size / out_size


def _source(scale: float, position: int, align_corners: bool, cubic: bool) -> float:
    """PyTorch's area_pixel_compute_source_index."""
    if align_corners:
        return scale * position
    source = scale * (position + 0.5) - 0.5
    return source if cubic or source >= 0 else 0.0


def _cubic_weights(t: float, a: float = -0.75):
    def near(x):
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def _interpolation_matrix(in_size, out_size, align_corners, scale, mode):
    """[out, in] weights: output o = Σ_i matrix[o][i] * input i along one axis."""
    matrix = [[0.0] * in_size for _ in range(out_size)]
    step = _scale(in_size, out_size, align_corners, scale)
    for o in range(out_size):
        source = _source(step, o, align_corners, mode == "cubic")
        if mode == "cubic":
            base = math.floor(source)
            for k, weight in enumerate(_cubic_weights(source - base)):
                matrix[o][min(max(base - 1 + k, 0), in_size - 1)] += weight
        else:
            low = int(source)
            high = low + 1 if low < in_size - 1 else low
            fraction = source - low
            matrix[o][low] += 1.0 - fraction
            matrix[o][high] += fraction
    return matrix


_UPSAMPLE = {
    aten.upsample_linear1d.default: (1, "linear"), aten.upsample_bilinear2d.default: (2, "linear"),
    aten.upsample_trilinear3d.default: (3, "linear"), aten.upsample_bicubic2d.default: (2, "cubic"),
}
_UPSAMPLE_BACKWARD = {
    aten.upsample_linear1d_backward.default: (1, "linear"), aten.upsample_bilinear2d_backward.default: (2, "linear"),
    aten.upsample_trilinear3d_backward.default: (3, "linear"),
    aten.upsample_bicubic2d_backward.default: (2, "cubic"),
}


def _resample(context, value, in_spatial, out_spatial, align_corners, scales, mode, dtype, transposed):
    from .pooling import apply_along_axis

    compute = torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype
    result = context.convert(value, compute)
    spatial = len(in_spatial)
    for axis, (n, o) in enumerate(zip(in_spatial, out_spatial)):
        matrix = _interpolation_matrix(n, o, align_corners, scales[axis], mode)
        if transposed:
            matrix = [list(column) for column in zip(*matrix)]
        result = apply_along_axis(context, result, matrix, value.rank - spatial + axis, compute)
    return context.convert(result, dtype)


def _upsample_setup(context, node, value, table, scales):
    """(output shape, dtype, spatial rank, "linear" | "cubic", per-axis scales) of an upsample node."""
    meta = context.meta(node)
    shape, dtype = context.shape_of(meta), meta.dtype
    spatial, mode = table[node.target]
    if not dtype.is_floating_point or 0 in shape or 0 in value.shape:
        raise LoweringError(f"{node.target}: {dtype} or empty tensors")
    scales = (list(scales) + [None] * spatial)[:spatial]
    return shape, dtype, spatial, mode, scales


@lowers(*_UPSAMPLE)
def _upsample(context, node, x, output_size, align_corners, *scales):
    shape, dtype, spatial, mode, scales = _upsample_setup(context, node, x, _UPSAMPLE, scales)
    return _resample(context, x, x.shape[x.rank - spatial:], shape[len(shape) - spatial:], align_corners, scales,
                     mode, dtype, transposed=False)


@lowers(*_UPSAMPLE_BACKWARD)
def _upsample_backward(context, node, grad, output_size, input_size, align_corners, *scales):
    shape, dtype, spatial, mode, scales = _upsample_setup(context, node, grad, _UPSAMPLE_BACKWARD, scales)
    # Input axis n received matrix[o][n] of every output o: the transposed matrices carry the gradient back.
    return _resample(context, grad, shape[len(shape) - spatial:], grad.shape[grad.rank - spatial:], align_corners,
                     scales, mode, dtype, transposed=True)
