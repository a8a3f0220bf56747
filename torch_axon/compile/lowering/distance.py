"""Pairwise distances: _cdist_forward and _pdist_forward, as p-norms of broadcast differences.

PyTorch may compute p=2 distances through a matrix product for large inputs;
the direct form here is the reference definition (and never goes negative
under rounding, so sqrt needs no clamp).
"""

from __future__ import annotations

import math

import torch

from .builder import LoweringError
from .context import LoweringContext
from .indexing import point_gather
from .registry import lowers

aten = torch.ops.aten


def _p_norm_last(context: LoweringContext, difference, p: float, compute):
    """p-norm over the last dimension of `difference`."""
    last = difference.rank - 1
    magnitude = context.op("stablehlo.abs", [difference], difference.shape, compute)
    if p == 0:
        nonzero = context.compare(magnitude, context.constant(0, compute, magnitude.shape), "NE")
        return context.reduce(context.convert(nonzero, compute), 0, [last], "add")
    if p == math.inf:
        return context.reduce(magnitude, 0, [last], "maximum")
    if p == 1:
        return context.reduce(magnitude, 0, [last], "add")
    if p == 2:
        total = context.reduce(context.op("stablehlo.multiply", [difference, difference], difference.shape, compute),
                               0, [last], "add")
        return context.op("stablehlo.sqrt", [total], total.shape, compute)
    powered = context.op("stablehlo.power", [magnitude, context.constant(p, compute, magnitude.shape)],
                         magnitude.shape, compute)
    total = context.reduce(powered, 0, [last], "add")
    return context.op("stablehlo.power", [total, context.constant(1.0 / p, compute, total.shape)], total.shape,
                      compute)


def _pairwise(context, x1, x2, batch, p, compute):
    """[*batch, P, R] distances between the rows of x1 [.., P, M] and x2 [.., R, M]."""
    rows1, rows2, features = x1.shape[-2], x2.shape[-2], x1.shape[-1]
    b = len(batch)
    shape = tuple(batch) + (rows1, rows2, features)
    offset1, offset2 = b - (x1.rank - 2), b - (x2.rank - 2)
    left = context.broadcast_in_dim(context.convert(x1, compute), shape,
                                    list(range(offset1, b)) + [b, b + 2])
    right = context.broadcast_in_dim(context.convert(x2, compute), shape,
                                     list(range(offset2, b)) + [b + 1, b + 2])
    difference = context.op("stablehlo.subtract", [left, right], shape, compute)
    return _p_norm_last(context, difference, float(p), compute)


def _float_compute(dtype):
    if not dtype.is_floating_point:
        raise LoweringError(f"distance in {dtype}")
    return torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype


@lowers(aten._cdist_forward.default)
def _cdist(context, node, x1, x2, p, compute_mode=None):
    shape, dtype = context.output_type()
    compute = _float_compute(dtype)
    if math.prod(shape) == 0:
        return context.constant(0, dtype, shape)
    for value in (x1, x2):
        if any(size == 1 for size in value.shape[:-2]) and value.shape[:-2] != tuple(shape[:-2]):
            raise LoweringError("cdist with size-1 batch dimensions to broadcast")
    if x1.shape[-1] == 0:
        return context.constant(0, dtype, shape)
    return context.convert(_pairwise(context, x1, x2, shape[:-2], p, compute), dtype)


@lowers(aten._pdist_forward.default)
def _pdist(context, node, x, p=2):
    shape, dtype = context.output_type()
    compute = _float_compute(dtype)
    rows = x.shape[0]
    if math.prod(shape) == 0:
        return context.constant(0, dtype, shape)
    if x.shape[1] == 0:
        return context.constant(0, dtype, shape)
    distances = _pairwise(context, x, x, (), p, compute)
    # Row-major upper triangle (i < j), PyTorch's pdist order.
    pairs = [[i, j] for i in range(rows) for j in range(i + 1, rows)]
    coordinates = context.builder.array_constant(pairs, (len(pairs), 2), torch.int64)
    return context.convert(point_gather(context, distances, coordinates, [0, 1]), dtype)
