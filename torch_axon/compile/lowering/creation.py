"""Tensor creation: full, scalar_tensor, arange/iota, empty (as zeros), *_like."""

from __future__ import annotations

import torch

from .registry import lowers

aten = torch.ops.aten


@lowers(aten.full.default, aten.scalar_tensor.default, aten.full_like.default, aten.zeros_like.default,
        aten.ones_like.default, aten.empty_like.default, aten.zeros.default, aten.ones.default,
        aten.empty.memory_format, aten.empty_strided.default, aten.new_full.default, aten.new_zeros.default,
        aten.new_ones.default, aten.new_empty.default, aten.new_empty_strided.default, aten.fill.Scalar,
        aten.fill.Tensor, aten.empty_permuted.default)
def _full(context, node, *args, **kwargs):
    shape, dtype = context.output_type()
    target = node.target
    if target in (aten.full.default, aten.new_full.default):
        value = args[1] if target == aten.full.default else args[2]
    elif target == aten.full_like.default:
        value = args[1]
    elif target == aten.scalar_tensor.default:
        value = args[0]
    elif target in (aten.ones_like.default, aten.ones.default, aten.new_ones.default):
        value = 1
    elif target in (aten.fill.Scalar, aten.fill.Tensor):
        value = args[1]
        if not isinstance(value, (bool, int, float, complex)):
            return context.broadcast(context.reshape(context.convert(value, dtype), ()), shape)
    else:
        value = 0  # empty: contents are unspecified, zeros are a valid choice
    return context.constant(value, dtype, shape)


@lowers(aten.arange.start_step, aten.arange.default, aten.arange.start)
def _arange(context, node, *args, **kwargs):
    shape, dtype = context.output_type()
    numbers = [a for a in args if isinstance(a, (int, float))]
    start = numbers[0] if len(numbers) >= 2 else 0
    step = numbers[2] if len(numbers) >= 3 else 1
    if dtype.is_floating_point:
        index = context.iota(shape, 0, torch.float64)
        compute = torch.float64
    else:
        index = context.iota(shape, 0, torch.int64)
        compute = torch.int64
    scaled = context.op("stablehlo.multiply", [index, context.constant(step, compute, shape)], shape, compute)
    result = context.op("stablehlo.add", [scaled, context.constant(start, compute, shape)], shape, compute)
    return context.convert(result, dtype)


@lowers(torch.ops.prims.iota.default)
def _iota(context, node, length, *, start=0, step=1, **kwargs):
    shape, dtype = context.output_type()
    index = context.iota(shape, 0, dtype)
    scaled = context.op("stablehlo.multiply", [index, context.constant(step, dtype, shape)], shape, dtype)
    return context.op("stablehlo.add", [scaled, context.constant(start, dtype, shape)], shape, dtype)


@lowers(aten.tril_indices.default, aten.triu_indices.default)
def _triangle_indices(context, node, row, col, offset=0, **kwargs):
    """[2, count] coordinates of the lower (upper) triangle in row-major order — static, so a constant."""
    shape, dtype = context.output_type()
    lower = node.target == aten.tril_indices.default
    pairs = [(i, j) for i in range(row) for j in range(col) if (j - i <= offset if lower else j - i >= offset)]
    if not pairs:
        return context.constant(0, dtype, shape)
    return context.builder.array_constant([[i for i, _ in pairs], [j for _, j in pairs]], shape, dtype)
