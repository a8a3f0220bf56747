"""Reductions: sum, mean, prod, amax/amin, any/all, var/std, max/min with indices, argmax/argmin,
softmax and log-softmax (which are reductions plus elementwise work)."""

from __future__ import annotations

import math

import torch

from .builder import LoweringError, comparison_type, i64_array, tensor_type
from .context import normalize_dim
from .registry import lowers

aten = torch.ops.aten


def _dims(x, dim):
    if dim is None or (isinstance(dim, (list, tuple)) and len(dim) == 0):
        return list(range(x.rank))
    if isinstance(dim, int):
        dim = [dim]
    return sorted({normalize_dim(d, x.rank) for d in dim}) if x.rank else []


def _finish(context, node, reduced):
    meta = context.output_tensor()
    return context.reshape(context.convert(reduced, meta.dtype), context.shape_of(meta))


def _accumulate_dtype(dtype: torch.dtype) -> torch.dtype:
    # Low-precision floats accumulate in float32, as PyTorch's CPU kernels do.
    return torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype


@lowers(aten.sum.dim_IntList, aten.sum.default, aten.mean.dim, aten.mean.default, aten.prod.dim_int,
        aten.prod.default)
def _sum(context, node, x, dim=None, keepdim=False, dtype=None):
    meta = context.output_tensor()
    if node.target in (aten.sum.default, aten.mean.default, aten.prod.default):
        dim = None  # these overloads' second argument is the dtype, which the output type carries
    compute = _accumulate_dtype(meta.dtype)
    dims = _dims(x, dim)
    product = node.target in (aten.prod.dim_int, aten.prod.default)
    reduced = context.reduce(context.convert(x, compute), 1 if product else 0, dims,
                             "multiply" if product else "add")
    if node.target in (aten.mean.dim, aten.mean.default):
        count = math.prod(x.shape[d] for d in dims)
        reduced = context.op("stablehlo.divide", [reduced, context.constant(count, compute, reduced.shape)],
                             reduced.shape, compute)
    return _finish(context, node, reduced)


@lowers(aten.amax.default, aten.amin.default, aten.max.default, aten.min.default)
def _extreme(context, node, x, dim=None, keepdim=False):
    is_max = node.target in (aten.amax.default, aten.max.default)
    if x.dtype.is_floating_point:
        init = -math.inf if is_max else math.inf
    elif x.dtype == torch.bool:
        init = not is_max
    else:
        info = torch.iinfo(x.dtype)
        init = info.min if is_max else info.max
    reduced = context.reduce(x, init, _dims(x, dim), "maximum" if is_max else "minimum")
    return _finish(context, node, reduced)


@lowers(aten.any.dim, aten.any.dims, aten.any.default, aten.all.dim, aten.all.dims, aten.all.default)
def _any(context, node, x, dim=None, keepdim=False):
    is_any = node.target.overloadpacket == aten.any
    reduced = context.reduce(context.convert(x, torch.bool), not is_any, _dims(x, dim), "or" if is_any else "and")
    return _finish(context, node, reduced)


@lowers(aten.var.correction, aten.var_mean.correction, aten.std.correction)
def _variance(context, node, x, dim=None, *, correction=None, keepdim=False):
    meta = context.output
    out_dtype = (meta[0] if isinstance(meta, (tuple, list)) else meta).dtype
    compute = _accumulate_dtype(out_dtype)
    x = context.convert(x, compute)
    dims = _dims(x, dim)
    count = math.prod(x.shape[d] for d in dims)
    total = context.reduce(x, 0, dims, "add")
    mean = context.op("stablehlo.divide", [total, context.constant(count, compute, total.shape)], total.shape, compute)
    kept = [1 if i in dims else s for i, s in enumerate(x.shape)]
    centered = context.op("stablehlo.subtract", [x, context.broadcast(context.reshape(mean, kept), x.shape)],
                          x.shape, compute)
    squares = context.op("stablehlo.multiply", [centered, centered], x.shape, compute)
    correction = 1 if correction is None else correction
    divisor = max(count - correction, 0)
    variance = context.op("stablehlo.divide", [context.reduce(squares, 0, dims, "add"),
                                               context.constant(divisor, compute, total.shape)], total.shape, compute)
    out_shape = kept if keepdim else [s for i, s in enumerate(x.shape) if i not in dims]
    if node.target == aten.std.correction:
        variance = context.op("stablehlo.sqrt", [variance], total.shape, compute)
    variance = context.reshape(context.convert(variance, out_dtype), out_shape)
    if node.target == aten.var_mean.correction:
        return [variance, context.reshape(context.convert(mean, out_dtype), out_shape)]
    return variance


def _arg_reduce(context, x, dim, is_max: bool):
    """(values, int64 indices) of the max/min along `dim`: a variadic reduce; first index wins ties,
    NaN counts as the extreme (PyTorch's propagation rule)."""
    dim = normalize_dim(dim, x.rank)
    dtype = x.dtype
    index = context.iota(x.shape, dim, torch.int64)
    if dtype.is_floating_point:
        init = -math.inf if is_max else math.inf
    elif dtype == torch.bool:
        init = not is_max
    else:
        info = torch.iinfo(dtype)
        init = info.min if is_max else info.max
    init_value = context.builder.constant(init, dtype)
    init_index = context.builder.constant(0, torch.int64)
    scalar, index_type = tensor_type((), dtype), tensor_type((), torch.int64)
    direction = "GT" if is_max else "LT"
    kind = comparison_type(dtype)

    def compare(a, b, d, k=kind, t=scalar):
        return (f'"stablehlo.compare"({a}, {b}) {{comparison_direction = #stablehlo<comparison_direction {d}>, '
                f"compare_type = #stablehlo<comparison_type {k}>}} : ({t}, {t}) -> tensor<i1>")

    region = "\n".join([
        f"^bb0(%av: {scalar}, %ai: {index_type}, %bv: {scalar}, %bi: {index_type}):",
        f"  %better = {compare('%av', '%bv', direction)}",
        f"  %equal = {compare('%av', '%bv', 'EQ')}",
        f"  %a_nan = {compare('%av', '%av', 'NE')}",
        f"  %b_nan = {compare('%bv', '%bv', 'NE')}",
        f"  %a_first = {compare('%ai', '%bi', 'LT', 'SIGNED', index_type)}",
        '  %tie = "stablehlo.and"(%equal, %a_first) : (tensor<i1>, tensor<i1>) -> tensor<i1>',
        '  %pick0 = "stablehlo.or"(%better, %tie) : (tensor<i1>, tensor<i1>) -> tensor<i1>',
        '  %not_b_nan = "stablehlo.not"(%b_nan) : (tensor<i1>) -> tensor<i1>',
        '  %pick1 = "stablehlo.and"(%pick0, %not_b_nan) : (tensor<i1>, tensor<i1>) -> tensor<i1>',
        '  %both_nan = "stablehlo.and"(%a_nan, %b_nan) : (tensor<i1>, tensor<i1>) -> tensor<i1>',
        '  %nan_tie = "stablehlo.and"(%both_nan, %a_first) : (tensor<i1>, tensor<i1>) -> tensor<i1>',
        '  %a_nan_only = "stablehlo.and"(%a_nan, %not_b_nan) : (tensor<i1>, tensor<i1>) -> tensor<i1>',
        '  %pick2 = "stablehlo.or"(%pick1, %a_nan_only) : (tensor<i1>, tensor<i1>) -> tensor<i1>',
        '  %pick = "stablehlo.or"(%pick2, %nan_tie) : (tensor<i1>, tensor<i1>) -> tensor<i1>',
        f'  %v = "stablehlo.select"(%pick, %av, %bv) : (tensor<i1>, {scalar}, {scalar}) -> {scalar}',
        f'  %i = "stablehlo.select"(%pick, %ai, %bi) : (tensor<i1>, {index_type}, {index_type}) -> {index_type}',
        f'  "stablehlo.return"(%v, %i) : ({scalar}, {index_type}) -> ()',
    ])
    shape = [s for i, s in enumerate(x.shape) if i != dim]
    values, indices = context.builder.op_multi(
        "stablehlo.reduce", [x, index, init_value, init_index], [(shape, dtype), (shape, torch.int64)],
        f"dimensions = {i64_array([dim])}", region)
    return values, indices, dim


@lowers(aten.max.dim, aten.min.dim)
def _max_dim(context, node, x, dim, keepdim=False):
    if x.rank == 0:
        return [x, context.constant(0, torch.int64)]
    values, indices, dim = _arg_reduce(context, x, dim, node.target == aten.max.dim)
    outputs = context.output
    return [context.reshape(values, context.shape_of(outputs[0])),
            context.reshape(indices, context.shape_of(outputs[1]))]


@lowers(aten.argmax.default, aten.argmin.default)
def _argmax(context, node, x, dim=None, keepdim=False):
    if dim is None:
        x = context.reshape(x, (math.prod(x.shape),))
        dim = 0
    if x.rank == 0:
        return context.constant(0, torch.int64)
    _, indices, _ = _arg_reduce(context, x, dim, node.target == aten.argmax.default)
    return context.reshape(indices, context.output_type()[0])


def _refuse_non_floating_softmax(dtype):
    # The CPU has softmax kernels for floating dtypes only: eager gives its error, or an empty result for an
    # empty input, and stablehlo.is_finite takes neither complex nor integer operands.
    if not dtype.is_floating_point:
        raise LoweringError(f"softmax in {dtype}")


def _softmax_parts(context, x, dim, dtype):
    dim = normalize_dim(dim, x.rank)
    compute = _accumulate_dtype(dtype)
    x = context.convert(x, compute)
    kept = [1 if i == dim else s for i, s in enumerate(x.shape)]
    maximum = context.reshape(context.reduce(x, -math.inf, [dim], "maximum"), kept)
    maximum = context.op("stablehlo.select", [context.op("stablehlo.is_finite", [maximum], kept, torch.bool),
                                              maximum, context.constant(0, compute, kept)], kept, compute)
    shifted = context.op("stablehlo.subtract", [x, context.broadcast(maximum, x.shape)], x.shape, compute)
    exponential = context.op("stablehlo.exponential", [shifted], x.shape, compute)
    total = context.reshape(context.reduce(exponential, 0, [dim], "add"), kept)
    return shifted, exponential, total, kept, compute


@lowers(aten._softmax.default, aten.softmax.int)
def _softmax(context, node, x, dim, half_to_float=False, dtype=None):
    meta = context.output_tensor()
    _refuse_non_floating_softmax(meta.dtype)
    if x.rank == 0:
        return context.constant(1, meta.dtype)
    _, exponential, total, kept, compute = _softmax_parts(context, x, dim, meta.dtype)
    result = context.op("stablehlo.divide", [exponential, context.broadcast(total, x.shape)], x.shape, compute)
    return context.convert(result, meta.dtype)


@lowers(aten._log_softmax.default, aten.log_softmax.int)
def _log_softmax(context, node, x, dim, half_to_float=False, dtype=None):
    meta = context.output_tensor()
    _refuse_non_floating_softmax(meta.dtype)
    if x.rank == 0:
        return context.constant(0, meta.dtype)
    shifted, _, total, kept, compute = _softmax_parts(context, x, dim, meta.dtype)
    log_total = context.op("stablehlo.log", [total], kept, compute)
    result = context.op("stablehlo.subtract", [shifted, context.broadcast(log_total, x.shape)], x.shape, compute)
    return context.convert(result, meta.dtype)


@lowers(aten._softmax_backward_data.default)
def _softmax_backward(context, node, grad, output, dim, input_dtype):
    meta = context.output_tensor()
    _refuse_non_floating_softmax(meta.dtype)
    dim = normalize_dim(dim, grad.rank)
    compute = _accumulate_dtype(meta.dtype)
    g, y = context.convert(grad, compute), context.convert(output, compute)
    kept = [1 if i == dim else s for i, s in enumerate(g.shape)]
    product = context.op("stablehlo.multiply", [g, y], g.shape, compute)
    total = context.broadcast(context.reshape(context.reduce(product, 0, [dim], "add"), kept), g.shape)
    result = context.op("stablehlo.multiply", [y, context.op("stablehlo.subtract", [g, total], g.shape, compute)],
                        g.shape, compute)
    return context.convert(result, meta.dtype)


@lowers(aten._log_softmax_backward_data.default)
def _log_softmax_backward(context, node, grad, output, dim, input_dtype):
    meta = context.output_tensor()
    _refuse_non_floating_softmax(meta.dtype)
    dim = normalize_dim(dim, grad.rank)
    compute = _accumulate_dtype(meta.dtype)
    g, y = context.convert(grad, compute), context.convert(output, compute)
    kept = [1 if i == dim else s for i, s in enumerate(g.shape)]
    total = context.broadcast(context.reshape(context.reduce(g, 0, [dim], "add"), kept), g.shape)
    softmax = context.op("stablehlo.exponential", [y], g.shape, compute)
    result = context.op("stablehlo.subtract", [g, context.op("stablehlo.multiply", [softmax, total], g.shape,
                                                             compute)], g.shape, compute)
    return context.convert(result, meta.dtype)


@lowers(aten.cumsum.default, aten.cumprod.default)
def _cumulative(context, node, x, dim, dtype=None):
    meta = context.output_tensor()
    if x.rank == 0:
        return context.convert(x, meta.dtype)
    dim = normalize_dim(dim, x.rank)
    compute = _accumulate_dtype(meta.dtype)
    x = context.convert(x, compute)
    length = x.shape[dim]
    if length == 0:  # XLA rejects a window of size 0; the running result of nothing is nothing
        return context.convert(x, meta.dtype)
    window = [1] * x.rank
    window[dim] = length
    padding = ", ".join(f"[{length - 1 if i == dim else 0}, 0]" for i in range(x.rank))
    product = node.target == aten.cumprod.default
    from .builder import scalar_region

    init = context.builder.constant(1 if product else 0, compute)
    result = context.op("stablehlo.reduce_window", [x, init], x.shape, compute,
                        f"window_dimensions = {i64_array(window)}, "
                        f"padding = dense<[{padding}]> : tensor<{x.rank}x2xi64>",
                        scalar_region("multiply" if product else "add", compute))
    if x.rank == 0:
        raise LoweringError("cumulative of a scalar")
    return context.convert(result, meta.dtype)


@lowers(aten.linalg_vector_norm.default)
def _vector_norm(context, node, x, ord=2, dim=None, keepdim=False, *, dtype=None):
    meta = context.output_tensor()
    if x.dtype.is_complex or meta.dtype.is_complex:
        raise LoweringError("norm of complex values")
    compute = _accumulate_dtype(meta.dtype)
    x = context.convert(x, compute)
    dims = _dims(x, dim)
    magnitude = context.op("stablehlo.abs", [x], x.shape, compute)
    ord = float(ord)
    if ord == math.inf or ord == -math.inf:
        if math.prod(x.shape[d] for d in dims) == 0:
            raise LoweringError("inf-norm of an empty reduction")
        reduced = context.reduce(magnitude, -math.inf if ord > 0 else math.inf, dims,
                                 "maximum" if ord > 0 else "minimum")
    elif ord == 0:
        nonzero = context.convert(context.compare(x, context.constant(0, compute, x.shape), "NE"), compute)
        reduced = context.reduce(nonzero, 0, dims, "add")
    elif ord == 1:
        reduced = context.reduce(magnitude, 0, dims, "add")
    elif ord == 2:
        squares = context.op("stablehlo.multiply", [x, x], x.shape, compute)
        total = context.reduce(squares, 0, dims, "add")
        reduced = context.op("stablehlo.sqrt", [total], total.shape, compute)
    else:
        powered = context.op("stablehlo.power", [magnitude, context.constant(ord, compute, x.shape)], x.shape,
                             compute)
        total = context.reduce(powered, 0, dims, "add")
        reduced = context.op("stablehlo.power", [total, context.constant(1.0 / ord, compute, total.shape)],
                             total.shape, compute)
    return _finish(context, node, reduced)


@lowers(aten.dist.default)
def _dist(context, node, x, y, p=2):
    """‖x - y‖_p over all elements (broadcast first)."""
    meta = context.output_tensor()
    compute = _accumulate_dtype(meta.dtype)
    shape = tuple(torch.broadcast_shapes(x.shape, y.shape))
    difference = context.op("stablehlo.subtract", [context.operand(x, compute, shape),
                                                   context.operand(y, compute, shape)], shape, compute)
    return _vector_norm(context, node, difference, p)


def _running_window(context, values, dim, init_values, region):
    """An inclusive running reduction along `dim` (a reduce_window whose window covers every earlier element)."""
    x = values[0]
    length = x.shape[dim]
    window = [length if i == dim else 1 for i in range(x.rank)]
    padding = ", ".join(f"[{length - 1 if i == dim else 0}, 0]" for i in range(x.rank))
    attributes = f"window_dimensions = {i64_array(window)}, padding = dense<[{padding}]> : tensor<{x.rank}x2xi64>"
    return context.builder.op_multi("stablehlo.reduce_window", list(values) + list(init_values),
                                    [(v.shape, v.dtype) for v in values], attributes, region)


@lowers(aten.logcumsumexp.default)
def _logcumsumexp(context, node, x, dim):
    meta = context.output_tensor()
    if x.rank == 0:
        return context.convert(x, meta.dtype)
    if not meta.dtype.is_floating_point:
        raise LoweringError(f"logcumsumexp in {meta.dtype}")
    dim = normalize_dim(dim, x.rank)
    if x.shape[dim] == 0:  # XLA rejects a window of size 0
        return context.convert(x, meta.dtype)
    compute = _accumulate_dtype(meta.dtype)
    x = context.convert(x, compute)
    scalar = tensor_type((), compute)
    # log(e^a + e^b) = max + log1p(e^-|a-b|); equal arguments (both ±inf included) give a + log 2.
    region = "\n".join([
        f"^bb0(%a: {scalar}, %b: {scalar}):",
        f'  %m = "stablehlo.maximum"(%a, %b) : ({scalar}, {scalar}) -> {scalar}',
        f'  %d = "stablehlo.subtract"(%a, %b) : ({scalar}, {scalar}) -> {scalar}',
        f'  %ad = "stablehlo.abs"(%d) : ({scalar}) -> {scalar}',
        f'  %nd = "stablehlo.negate"(%ad) : ({scalar}) -> {scalar}',
        f'  %e = "stablehlo.exponential"(%nd) : ({scalar}) -> {scalar}',
        f'  %l = "stablehlo.log_plus_one"(%e) : ({scalar}) -> {scalar}',
        f'  %s = "stablehlo.add"(%m, %l) : ({scalar}, {scalar}) -> {scalar}',
        f'  %eq = "stablehlo.compare"(%a, %b) {{comparison_direction = #stablehlo<comparison_direction EQ>, '
        f'compare_type = #stablehlo<comparison_type FLOAT>}} : ({scalar}, {scalar}) -> tensor<i1>',
        f'  %ln2 = "stablehlo.constant"() {{value = dense<{math.log(2.0):.17e}> : {scalar}}} : () -> {scalar}',
        f'  %twice = "stablehlo.add"(%a, %ln2) : ({scalar}, {scalar}) -> {scalar}',
        f'  %r = "stablehlo.select"(%eq, %twice, %s) : (tensor<i1>, {scalar}, {scalar}) -> {scalar}',
        f'  "stablehlo.return"(%r) : ({scalar}) -> ()'])
    (result,) = _running_window(context, [x], dim, [context.builder.constant(-math.inf, compute)], region)
    return context.convert(result, meta.dtype)


# The longest scan cummax/cummin lower. XLA's CPU compiler (jax 0.10.2's plugin) crashes the process, with a
# segmentation fault or an abort, on the two-operand reduce_window below once its window spans 512 elements;
# 256 compiles and runs (fuzz seed 671284: 70001). Longer scans run as eager kernels between compiled parts.
_LONGEST_COMPILED_EXTREME_SCAN = 256


@lowers(aten.cummax.default, aten.cummin.default)
def _cumulative_extreme(context, node, x, dim):
    """Running max/min with the index of the latest extreme (PyTorch updates on >= / <=; a NaN sticks and
    the latest NaN's index wins)."""
    outputs = context.output
    if x.rank == 0:
        return [x, context.constant(0, torch.int64)]
    if x.dtype == torch.bool or x.dtype.is_complex:
        raise LoweringError(f"cumulative max/min in {x.dtype}")
    dim = normalize_dim(dim, x.rank)
    if x.shape[dim] == 0:  # XLA rejects a window of size 0; empty values and indices
        return [x, context.constant(0, torch.int64, x.shape)]
    if x.shape[dim] > _LONGEST_COMPILED_EXTREME_SCAN:
        raise LoweringError(f"cumulative max/min over {x.shape[dim]} elements (XLA's CPU compiler crashes on it)")
    is_max = node.target == aten.cummax.default
    dtype = x.dtype
    scalar, index = tensor_type((), dtype), tensor_type((), torch.int64)
    kind = comparison_type(dtype)

    def compare(a, b, direction, k=kind, t=scalar):
        return (f'"stablehlo.compare"({a}, {b}) {{comparison_direction = #stablehlo<comparison_direction '
                f'{direction}>, compare_type = #stablehlo<comparison_type {k}>}} : ({t}, {t}) -> tensor<i1>')

    def logic(name, a, b):
        return f'"stablehlo.{name}"({a}, {b}) : (tensor<i1>, tensor<i1>) -> tensor<i1>'

    select = "(tensor<i1>, tensor<i1>, tensor<i1>) -> tensor<i1>"
    region = "\n".join([
        f"^bb0(%av: {scalar}, %ai: {index}, %bv: {scalar}, %bi: {index}):",
        f"  %better = {compare('%av', '%bv', 'GT' if is_max else 'LT')}",
        f"  %equal = {compare('%av', '%bv', 'EQ')}",
        f"  %a_later = {compare('%ai', '%bi', 'GT', 'SIGNED', index)}",
        f"  %a_nan = {compare('%av', '%av', 'NE')}",
        f"  %b_nan = {compare('%bv', '%bv', 'NE')}",
        f"  %tie = {logic('and', '%equal', '%a_later')}",
        f"  %numeric = {logic('or', '%better', '%tie')}",
        f"  %both_nan = {logic('and', '%a_nan', '%b_nan')}",
        f"  %any_nan = {logic('or', '%a_nan', '%b_nan')}",
        f'  %nan_pick = "stablehlo.select"(%both_nan, %a_later, %a_nan) : {select}',
        f'  %pick = "stablehlo.select"(%any_nan, %nan_pick, %numeric) : {select}',
        f'  %v = "stablehlo.select"(%pick, %av, %bv) : (tensor<i1>, {scalar}, {scalar}) -> {scalar}',
        f'  %i = "stablehlo.select"(%pick, %ai, %bi) : (tensor<i1>, {index}, {index}) -> {index}',
        f'  "stablehlo.return"(%v, %i) : ({scalar}, {index}) -> ()'])
    if dtype.is_floating_point:
        init = -math.inf if is_max else math.inf
    else:
        info = torch.iinfo(dtype)
        init = info.min if is_max else info.max
    # Padding carries index -1, so a real element always wins a tie against it.
    positions = context.iota(x.shape, dim, torch.int64)
    values, indices = _running_window(context, [x, positions], dim, [context.builder.constant(init, dtype),
                                                                     context.builder.constant(-1, torch.int64)],
                                      region)
    return [context.convert(values, outputs[0].dtype), indices]
