"""Normalization: native_layer_norm and batch norm (training with running-stat updates, inference).

Statistics accumulate in float32 for half and bfloat16 inputs, as PyTorch's CPU kernels do.
"""

from __future__ import annotations

import math

import torch

from .context import LoweringContext
from .registry import lowers

aten = torch.ops.aten


def _compute(dtype):
    return torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype


def _normalize(context: LoweringContext, x, dims, eps, compute):
    """(centered * rstd, mean, rstd) with mean/rstd shaped with 1s at `dims`."""
    count = math.prod(x.shape[d] for d in dims)
    kept = [1 if i in dims else s for i, s in enumerate(x.shape)]
    mean = context.op("stablehlo.divide", [context.reduce(x, 0, dims, "add"),
                                           context.constant(count, compute, [s for i, s in enumerate(x.shape)
                                                                             if i not in dims])],
                      [s for i, s in enumerate(x.shape) if i not in dims], compute)
    mean = context.reshape(mean, kept)
    centered = context.op("stablehlo.subtract", [x, context.broadcast(mean, x.shape)], x.shape, compute)
    squares = context.op("stablehlo.multiply", [centered, centered], x.shape, compute)
    variance = context.reshape(context.reduce(squares, 0, dims, "add"), kept)
    variance = context.op("stablehlo.divide", [variance, context.constant(count, compute, kept)], kept, compute)
    rstd = context.op("stablehlo.rsqrt", [context.op("stablehlo.add", [variance, context.constant(eps, compute, kept)],
                                                     kept, compute)], kept, compute)
    normalized = context.op("stablehlo.multiply", [centered, context.broadcast(rstd, x.shape)], x.shape, compute)
    return normalized, mean, rstd, variance


@lowers(aten.native_layer_norm.default)
def _layer_norm(context, node, x, normalized_shape, weight, bias, eps):
    outputs = context.output
    dtype = outputs[0].dtype
    compute = _compute(dtype)
    x = context.convert(x, compute)
    axis = x.rank - len(normalized_shape)
    dims = list(range(axis, x.rank))
    normalized, mean, rstd, _ = _normalize(context, x, dims, eps, compute)
    if weight is not None:
        normalized = context.op("stablehlo.multiply", [normalized, context.operand(weight, compute, x.shape)],
                                x.shape, compute)
    if bias is not None:
        normalized = context.op("stablehlo.add", [normalized, context.operand(bias, compute, x.shape)],
                                x.shape, compute)
    return [context.convert(normalized, dtype),
            context.reshape(context.convert(mean, outputs[1].dtype), context.shape_of(outputs[1])),
            context.reshape(context.convert(rstd, outputs[2].dtype), context.shape_of(outputs[2]))]


def _channel_shape(x):
    return [s if i == 1 else 1 for i, s in enumerate(x.shape)]


def _affine(context, normalized, weight, bias, compute):
    shape = normalized.shape
    channel = [1] * len(shape)
    channel[1] = shape[1]
    if weight is not None:
        w = context.broadcast(context.reshape(context.convert(weight, compute), channel), shape)
        normalized = context.op("stablehlo.multiply", [normalized, w], shape, compute)
    if bias is not None:
        b = context.broadcast(context.reshape(context.convert(bias, compute), channel), shape)
        normalized = context.op("stablehlo.add", [normalized, b], shape, compute)
    return normalized


@lowers(aten._native_batch_norm_legit_functional.default, aten._native_batch_norm_legit.no_stats)
def _batch_norm_training(context, node, x, weight, bias, running_mean=None, running_var=None, training=True,
                         momentum=0.1, eps=1e-5):
    if node.target == aten._native_batch_norm_legit.no_stats:
        training, momentum, eps = running_mean, running_var, training
        running_mean = running_var = None
    outputs = context.output
    dtype = outputs[0].dtype
    compute = _compute(dtype)
    x = context.convert(x, compute)
    dims = [d for d in range(x.rank) if d != 1]
    normalized, mean, rstd, variance = _normalize(context, x, dims, eps, compute)
    result = [context.convert(_affine(context, normalized, weight, bias, compute), dtype),
              context.reshape(context.convert(mean, outputs[1].dtype), context.shape_of(outputs[1])),
              context.reshape(context.convert(rstd, outputs[2].dtype), context.shape_of(outputs[2]))]
    if running_mean is not None:
        count = math.prod(x.shape[d] for d in dims)
        unbiased = context.op("stablehlo.multiply", [variance, context.constant(count / max(count - 1, 1), compute,
                                                                                 variance.shape)],
                              variance.shape, compute)
        for running, batch_stat, meta in ((running_mean, mean, outputs[3]), (running_var, unbiased, outputs[4])):
            channel = [x.shape[1]]
            old = context.convert(running, compute)
            stat = context.reshape(batch_stat, channel)
            keep = context.op("stablehlo.multiply", [old, context.constant(1 - momentum, compute, channel)],
                              channel, compute)
            new = context.op("stablehlo.multiply", [stat, context.constant(momentum, compute, channel)], channel,
                             compute)
            result.append(context.convert(context.op("stablehlo.add", [keep, new], channel, compute), meta.dtype))
    return result


@lowers(aten._native_batch_norm_legit_no_training.default)
def _batch_norm_inference(context, node, x, weight, bias, running_mean, running_var, momentum, eps):
    outputs = context.output
    dtype = outputs[0].dtype
    compute = _compute(dtype)
    x = context.convert(x, compute)
    channel = _channel_shape(x)
    mean = context.broadcast(context.reshape(context.convert(running_mean, compute), channel), x.shape)
    variance = context.reshape(context.convert(running_var, compute), channel)
    rstd = context.op("stablehlo.rsqrt", [context.op("stablehlo.add", [variance, context.constant(eps, compute,
                                                                                                   channel)],
                                                     channel, compute)], channel, compute)
    normalized = context.op("stablehlo.multiply", [context.op("stablehlo.subtract", [x, mean], x.shape, compute),
                                                   context.broadcast(rstd, x.shape)], x.shape, compute)
    empty = [context.constant(0, o.dtype, context.shape_of(o)) for o in outputs[1:]]
    return [context.convert(_affine(context, normalized, weight, bias, compute), dtype), *empty]


@lowers(aten.native_group_norm.default)
def _group_norm(context, node, x, weight, bias, batch, channels, spatial, groups, eps):
    """Statistics over each (sample, group of channels × spatial positions); affine per channel."""
    outputs = context.output
    dtype = outputs[0].dtype
    compute = _compute(dtype)
    shape = x.shape
    grouped = context.reshape(context.convert(x, compute), (int(batch), int(groups),
                                                            math.prod(shape) // (int(batch) * int(groups))))
    normalized, mean, rstd, _ = _normalize(context, grouped, [2], eps, compute)
    result = _affine(context, context.reshape(normalized, shape), weight, bias, compute)
    return [context.convert(result, dtype),
            context.reshape(context.convert(mean, outputs[1].dtype), context.shape_of(outputs[1])),
            context.reshape(context.convert(rstd, outputs[2].dtype), context.shape_of(outputs[2]))]
