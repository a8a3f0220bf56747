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


def _unnormalize(context: LoweringContext, coordinate, size: int, align_corners: bool):
    if align_corners:
        return context.mul(context.add(coordinate, 1.0), (size - 1) / 2.0)
    return context.div(context.sub(context.mul(context.add(coordinate, 1.0), float(size)), 1.0), 2.0)


def _reflect(context: LoweringContext, coordinate, twice_low: int, twice_high: int):
    if twice_low == twice_high:
        return context.constant_like(0.0, coordinate)
    low = twice_low / 2.0
    span = (twice_high - twice_low) / 2.0
    distance = context.unary("stablehlo.abs", context.sub(coordinate, low))
    extra = context.binary("stablehlo.remainder", distance, span)
    flips = context.unary("stablehlo.floor", context.div(distance, span))
    parity = context.binary("stablehlo.remainder", flips, 2.0)
    even = context.compare(parity, context.constant_like(0.0, parity), "EQ")
    return context.select(even, context.add(extra, low), context.add(context.sub(span, extra), low))


def _source_index(context: LoweringContext, coordinate, size: int, padding_mode: int, align_corners: bool):
    coordinate = _unnormalize(context, coordinate, size, align_corners)
    if padding_mode == 1:
        coordinate = context.clip(coordinate, 0.0, float(size - 1))
    elif padding_mode == 2:
        if align_corners:
            coordinate = _reflect(context, coordinate, 0, 2 * (size - 1))
        else:
            coordinate = _reflect(context, coordinate, -1, 2 * size - 1)
        coordinate = context.clip(coordinate, 0.0, float(size - 1))
    return coordinate


def _within(context: LoweringContext, coordinate, high: int):
    """0 <= coordinate <= high, elementwise."""
    low_ok = context.compare(coordinate, context.constant_like(0.0, coordinate), "GE")
    high_ok = context.compare(coordinate, context.constant_like(float(high), coordinate), "LE")
    return context.op("stablehlo.and", [low_ok, high_ok], coordinate.shape, torch.bool)


@lowers(aten.grid_sampler_2d.default)
def _grid_sampler_2d(context, node, x, grid, interpolation_mode, padding_mode, align_corners):
    shape, dtype = context.output_type()
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
    grid = context.convert(grid, compute)

    def component(i):
        part = context.slice(grid, [0, 0, 0, i], [batch, out_h, out_w, i + 1])
        return context.reshape(part, points)

    ix = _source_index(context, component(0), width, padding_mode, align_corners)
    iy = _source_index(context, component(1), height, padding_mode, align_corners)
    source = context.convert(x, compute)
    batch_index = context.iota(points, 0, torch.int64)

    def tap(y, x_coordinate, weight):
        """weight * input[n, :, y, x] for integer-valued float coordinates; zero where out of range."""
        inside = context.op("stablehlo.and", [_within(context, x_coordinate, width - 1),
                                              _within(context, y, height - 1)], points, torch.bool)
        yi = context.convert(context.clip(y, 0.0, float(height - 1)), torch.int64)
        xi = context.convert(context.clip(x_coordinate, 0.0, float(width - 1)), torch.int64)
        coordinates = stack_coordinates(context, [batch_index, yi, xi])
        values = point_gather(context, source, coordinates, [0, 2, 3])  # [N, Ho, Wo, C]
        weight = context.select(inside, weight, context.constant_like(0.0, weight))
        full = points + (channels,)
        return context.op("stablehlo.multiply", [values, context.broadcast_in_dim(weight, full, [0, 1, 2])], full,
                          compute)

    if interpolation_mode == 1:
        nearest_y, nearest_x = (context.unary("stablehlo.round_nearest_even", i) for i in (iy, ix))
        result = tap(nearest_y, nearest_x, context.constant_like(1.0, nearest_x))
    else:
        x0, y0 = context.unary("stablehlo.floor", ix), context.unary("stablehlo.floor", iy)
        x1, y1 = context.add(x0, 1.0), context.add(y0, 1.0)
        east, south = context.sub(ix, x0), context.sub(iy, y0)
        west, north = context.sub(x1, ix), context.sub(y1, iy)
        full = points + (channels,)
        result = None
        for y, x_coordinate, weight in ((y0, x0, context.mul(north, west)), (y0, x1, context.mul(north, east)),
                                        (y1, x0, context.mul(south, west)), (y1, x1, context.mul(south, east))):
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
    shape, dtype = context.output_type()
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
