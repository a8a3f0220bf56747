"""Pooling: max pooling with indices (+ backward), max unpooling, average pooling (+ backward), adaptive
average pooling (+ backward), for any number of spatial dimensions the op has.

Window geometry comes from the output shape PyTorch computed (ceil_mode included),
so padding beyond the input is derived, not re-derived from ceil_mode rules.
Divisors depend only on static shapes: they are computed here and emitted as
constants. Half and bfloat16 accumulate in float32.
"""

from __future__ import annotations

import math

import torch

from . import max_pool_taps
from .builder import LoweringError, comparison_type, i64_array, scalar_region, tensor_type
from .checks import check_index_bounds
from .indexing import point_gather, point_scatter, stack_coordinates
from .registry import lowers

aten = torch.ops.aten


def _accumulate(dtype):
    return torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype


def _per_axis(values, count, default=None):
    values = [int(v) for v in values] if values else list(default)
    return values * count if len(values) == 1 else values


def _geometry(x, out_shape, kernel, stride, padding, dilation):
    """Per spatial axis (low, high) padding so reduce_window yields `out_shape`, and the input trimmed of
    trailing elements no window reaches (reduce_window padding cannot be negative)."""
    spatial = len(kernel)
    pads, limits = [], list(x.shape)
    for axis in range(spatial):
        n, o = x.shape[x.rank - spatial + axis], out_shape[len(out_shape) - spatial + axis]
        used = (o - 1) * stride[axis] + dilation[axis] * (kernel[axis] - 1) + 1
        high = used - n - padding[axis]
        if high < 0:
            limits[x.rank - spatial + axis] = n + high
            high = 0
        pads.append((padding[axis], high))
    return pads, limits


def _window_attributes(rank, kernel, stride, dilation, pads):
    spatial = len(kernel)
    lead = rank - spatial
    padding = ", ".join(f"[{lo}, {hi}]" for lo, hi in [(0, 0)] * lead + pads)
    return (f"window_dimensions = {i64_array([1] * lead + list(kernel))}, "
            f"window_strides = {i64_array([1] * lead + list(stride))}, "
            f"window_dilations = {i64_array([1] * lead + list(dilation))}, "
            f"padding = dense<[{padding}]> : tensor<{rank}x2xi64>")


# ---- max pooling ------------------------------------------------------------
def _max_region(dtype):
    """Picks (value, index) of two candidates as PyTorch's kernel scans a window: larger value wins, the
    earlier index on ties, a NaN beats any number and the later NaN wins."""
    scalar, index = tensor_type((), dtype), tensor_type((), torch.int64)
    kind = comparison_type(dtype)

    def compare(a, b, direction, k=kind, t=scalar):
        return (f'"stablehlo.compare"({a}, {b}) {{comparison_direction = #stablehlo<comparison_direction '
                f'{direction}>, compare_type = #stablehlo<comparison_type {k}>}} : ({t}, {t}) -> tensor<i1>')

    def logic(name, a, b):
        return f'"stablehlo.{name}"({a}, {b}) : (tensor<i1>, tensor<i1>) -> tensor<i1>'

    return "\n".join([
        f"^bb0(%av: {scalar}, %ai: {index}, %bv: {scalar}, %bi: {index}):",
        f"  %greater = {compare('%av', '%bv', 'GT')}",
        f"  %equal = {compare('%av', '%bv', 'EQ')}",
        f"  %a_first = {compare('%ai', '%bi', 'LT', 'SIGNED', index)}",
        f"  %a_nan = {compare('%av', '%av', 'NE')}",
        f"  %b_nan = {compare('%bv', '%bv', 'NE')}",
        f"  %tie = {logic('and', '%equal', '%a_first')}",
        f"  %numeric = {logic('or', '%greater', '%tie')}",
        f"  %both_nan = {logic('and', '%a_nan', '%b_nan')}",
        f"  %any_nan = {logic('or', '%a_nan', '%b_nan')}",
        f"  %a_later = {compare('%ai', '%bi', 'GT', 'SIGNED', index)}",
        '  %a_nan_pick = "stablehlo.select"(%both_nan, %a_later, %a_nan) : (tensor<i1>, tensor<i1>, tensor<i1>)'
        " -> tensor<i1>",
        '  %pick = "stablehlo.select"(%any_nan, %a_nan_pick, %numeric) : (tensor<i1>, tensor<i1>, tensor<i1>)'
        " -> tensor<i1>",
        f'  %v = "stablehlo.select"(%pick, %av, %bv) : (tensor<i1>, {scalar}, {scalar}) -> {scalar}',
        f'  %i = "stablehlo.select"(%pick, %ai, %bi) : (tensor<i1>, {index}, {index}) -> {index}',
        f'  "stablehlo.return"(%v, %i) : ({scalar}, {index}) -> ()',
    ])


@lowers(aten.max_pool2d_with_indices.default, aten.max_pool3d_with_indices.default)
def _max_pool(context, node, x, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    outputs = context.output
    out_shape = context.shape_of(outputs[0])
    spatial = 2 if node.target == aten.max_pool2d_with_indices.default else 3
    kernel = _per_axis(kernel_size, spatial)
    stride = _per_axis(stride, spatial, kernel)
    padding, dilation = _per_axis([padding] if isinstance(padding, int) else padding, spatial), \
        _per_axis([dilation] if isinstance(dilation, int) else dilation, spatial)
    dtype = x.dtype
    if dtype == torch.bool or dtype.is_complex:
        raise LoweringError(f"max pooling in {dtype}")
    if math.prod(out_shape) == 0:
        return [context.constant(0, dtype, out_shape), context.constant(0, torch.int64, out_shape)]
    if math.prod(kernel) <= max_pool_taps.MAX_TAPS:
        return max_pool_taps.max_pool_forward(context, x, out_shape, kernel, stride, padding, dilation)
    pads, limits = _geometry(x, out_shape, kernel, stride, padding, dilation)
    # Flat position of each element within its own spatial plane (PyTorch's index convention).
    spatial_shape = x.shape[x.rank - spatial:]
    flat = context.iota((math.prod(spatial_shape),), 0, torch.int64)
    flat = context.broadcast_in_dim(context.reshape(flat, spatial_shape), x.shape,
                                    list(range(x.rank - spatial, x.rank)))
    if limits != list(x.shape):
        x, flat = context.slice(x, [0] * x.rank, limits), context.slice(flat, [0] * x.rank, limits)
    lowest = -math.inf if dtype.is_floating_point else torch.iinfo(dtype).min
    init_value = context.builder.constant(lowest, dtype)
    # Padding carries the largest index, so a real element always wins a tie against it.
    init_index = context.builder.constant(torch.iinfo(torch.int64).max, torch.int64)
    values, indices = context.builder.op_multi(
        "stablehlo.reduce_window", [x, flat, init_value, init_index], [(out_shape, dtype), (out_shape, torch.int64)],
        _window_attributes(x.rank, kernel, stride, dilation, pads), _max_region(dtype))
    return [values, indices]


@lowers(aten.max_pool2d_with_indices_backward.default, aten.max_pool3d_with_indices_backward.default)
def _max_pool_backward(context, node, grad, x, kernel_size, stride, padding, dilation, ceil_mode, indices):
    spatial = 2 if node.target == aten.max_pool2d_with_indices_backward.default else 3
    kernel = _per_axis(kernel_size, spatial)
    stride = _per_axis(stride, spatial, kernel)
    dilation = _per_axis([dilation] if isinstance(dilation, int) else dilation, spatial)
    shape, dtype = context.output_type()
    if max_pool_taps.windows_disjoint(kernel, stride, dilation) and math.prod(shape) and math.prod(grad.shape):
        padding = _per_axis([padding] if isinstance(padding, int) else padding, spatial)
        return max_pool_taps.disjoint_windows_backward(context, context.convert(grad, dtype), indices, shape, stride,
                                                       padding)
    return _scatter_to_indices(context, node, grad, indices, spatial)


def _scatter_to_indices(context, node, grad, indices, spatial):
    """Each output's gradient adds into the input element its (per-plane flat) index names."""
    shape, dtype = context.output_type()
    lead = math.prod(shape[:len(shape) - spatial])
    inputs, outputs = math.prod(shape[len(shape) - spatial:]), math.prod(grad.shape[grad.rank - spatial:])
    if lead * inputs == 0 or outputs == 0:
        return context.constant(0, dtype, shape)
    compute = _accumulate(dtype)
    rows = context.iota((lead, outputs), 0, torch.int64)
    coordinates = stack_coordinates(context, [rows, context.reshape(indices, (lead, outputs))])
    updates = context.reshape(context.convert(grad, compute), (lead, outputs))
    result = point_scatter(context, context.constant(0, compute, (lead, inputs)), coordinates, [0, 1], updates,
                           "add")
    return context.convert(context.reshape(result, shape), dtype)


@lowers(aten.max_unpool2d.default, aten.max_unpool3d.default)
def _max_unpool(context, node, x, indices, output_size, stride=None, padding=None):
    """Each input element lands at its per-plane flat index of the output (zeros elsewhere). Indices are the
    user's, so eager's bounds check applies; a slot named twice keeps the later element, as CPU's
    sequential loop does (a scatter-max of input positions picks it, then one gather)."""
    shape, dtype = context.output_type()
    spatial = len(output_size)
    lead = math.prod(shape[:len(shape) - spatial])
    plane, count = math.prod(output_size), math.prod(x.shape[x.rank - spatial:])
    if lead * plane == 0 or count == 0:
        return context.constant(0, dtype, shape)
    flat_indices = context.reshape(indices, (lead, count))
    check_index_bounds(context, node, flat_indices, plane, 0, x.rank,
                       shape="x".join(str(int(s)) for s in output_size))
    coordinates = stack_coordinates(context, [context.iota((lead, count), 0, torch.int64), flat_indices])
    winner = point_scatter(context, context.constant(-1, torch.int64, (lead, plane)), coordinates, [0, 1],
                           context.iota((lead, count), 1, torch.int64), "maximum")
    taken = context.compare(winner, context.constant(0, torch.int64, (lead, plane)), "GE")
    safe = context.select(taken, winner, context.constant(0, torch.int64, (lead, plane)))
    picked = point_gather(context, context.reshape(context.convert(x, dtype), (lead, count)),
                          stack_coordinates(context, [context.iota((lead, plane), 0, torch.int64), safe]), [0, 1])
    result = context.select(taken, picked, context.constant(0, dtype, (lead, plane)))
    return context.reshape(result, shape)


@lowers(aten.adaptive_max_pool2d_backward.default, aten.adaptive_max_pool3d_backward.default)
def _adaptive_max_pool_backward(context, node, grad, x, indices):
    spatial = 2 if node.target == aten.adaptive_max_pool2d_backward.default else 3
    return _scatter_to_indices(context, node, grad, indices, spatial)


@lowers(aten.adaptive_max_pool2d.default, aten.adaptive_max_pool3d.default)
def _adaptive_max_pool(context, node, x, output_size):
    """Windows of unequal length: gather every window padded to the longest (repeating its last element,
    harmless for a max), then one (value, index) reduce over the window axes."""
    outputs = context.output
    shape = context.shape_of(outputs[0])
    spatial = 2 if node.target == aten.adaptive_max_pool2d.default else 3
    dtype = x.dtype
    if dtype == torch.bool or dtype.is_complex:
        raise LoweringError(f"max pooling in {dtype}")
    if math.prod(shape) == 0 or math.prod(x.shape) == 0:
        raise LoweringError("adaptive max pooling of an empty tensor")
    lead_shape = list(x.shape[:x.rank - spatial])
    in_spatial, out_spatial = x.shape[x.rank - spatial:], shape[len(shape) - spatial:]
    taps = []  # per axis: [o][k] input positions
    for n, o in zip(in_spatial, out_spatial):
        bounds = [((i * n) // o, -((-(i + 1) * n) // o)) for i in range(o)]
        longest = max(end - start for start, end in bounds)
        taps.append([[min(start + k, end - 1) for k in range(longest)] for start, end in bounds])
    window = [(o, len(t[0])) for o, t in zip(out_spatial, taps)]
    grid_shape = [size for pair in window for size in pair]  # [O1, K1, O2, K2, ...]

    def coordinates_at(position):
        return [taps[axis][position[2 * axis]][position[2 * axis + 1]] for axis in range(spatial)]

    def nested(prefix):
        if len(prefix) == len(grid_shape):
            return coordinates_at(prefix)
        return [nested(prefix + [i]) for i in range(grid_shape[len(prefix)])]

    coordinates = context.builder.array_constant(nested([]), grid_shape + [spatial], torch.int64)
    planes = context.reshape(x, [math.prod(lead_shape)] + list(in_spatial))
    planes = context.transpose(planes, list(range(1, spatial + 1)) + [0])  # spatial first, planes last
    gathered = point_gather(context, planes, coordinates, list(range(spatial)))  # [O1, K1, ..., planes]
    index_grid = context.builder.array_constant(_flat_index_grid(taps, in_spatial), grid_shape, torch.int64)
    index_grid = context.broadcast_in_dim(index_grid, gathered.shape, list(range(len(grid_shape))))
    lowest = -math.inf if dtype.is_floating_point else torch.iinfo(dtype).min
    reduce_dims = [2 * axis + 1 for axis in range(spatial)]
    kept = [size for i, size in enumerate(gathered.shape) if i not in reduce_dims]
    values, indices = context.builder.op_multi(
        "stablehlo.reduce", [gathered, index_grid, context.builder.constant(lowest, dtype),
                             context.builder.constant(torch.iinfo(torch.int64).max, torch.int64)],
        [(kept, dtype), (kept, torch.int64)], f"dimensions = {i64_array(reduce_dims)}", _max_region(dtype))
    permutation = [spatial] + list(range(spatial))  # planes back in front
    values = context.reshape(context.transpose(values, permutation), shape)
    indices = context.reshape(context.transpose(indices, permutation), shape)
    return [values, indices]


def _flat_index_grid(taps, in_spatial):
    """[O1, K1, O2, K2, ...] nested lists of each tap's flat position in its plane."""
    spatial = len(taps)
    strides = [math.prod(in_spatial[axis + 1:]) for axis in range(spatial)]

    def build(axis, partial):
        if axis == spatial:
            return partial
        return [[build(axis + 1, partial + position * strides[axis]) for position in row] for row in taps[axis]]

    return build(0, 0)


# ---- average pooling --------------------------------------------------------
def _axis_counts(n, o, k, s, p, include_pad):
    """PyTorch's divisor along one axis for each output position."""
    counts = []
    for i in range(o):
        start = i * s - p
        end = min(start + k, n + p)
        if include_pad:
            counts.append(end - start)
        else:
            counts.append(min(end, n) - max(start, 0))
    return counts


def _outer(factors):
    """Nested lists: the outer product of per-axis lists."""
    if len(factors) == 1:
        return list(factors[0])
    inner = _outer(factors[1:])
    return [_scale(inner, f) for f in factors[0]]


def _scale(item, factor):
    return [_scale(i, factor) for i in item] if isinstance(item, list) else item * factor


def _divisors(context, in_spatial, out_spatial, kernel, stride, padding, include_pad, divisor_override, dtype):
    """The divisor of every output position, as a constant of the output's spatial shape."""
    if divisor_override:
        factors = [[float(divisor_override)] * out_spatial[0]] + [[1.0] * o for o in out_spatial[1:]]
    else:
        factors = [[float(c) for c in _axis_counts(n, o, k, s, p, include_pad)]
                   for n, o, k, s, p in zip(in_spatial, out_spatial, kernel, stride, padding)]
    return context.builder.array_constant(_outer(factors), out_spatial, dtype)


def _avg_arguments(node, x, kernel_size, stride, padding, spatial):
    kernel = _per_axis(kernel_size, spatial)
    stride = _per_axis(stride, spatial, kernel)
    padding = _per_axis([padding] if isinstance(padding, int) else padding, spatial)
    return kernel, stride, padding


@lowers(aten.avg_pool2d.default, aten.avg_pool3d.default)
def _avg_pool(context, node, x, kernel_size, stride=(), padding=0, ceil_mode=False, count_include_pad=True,
              divisor_override=None):
    out_shape, dtype = context.output_type()
    spatial = 2 if node.target == aten.avg_pool2d.default else 3
    kernel, stride, padding = _avg_arguments(node, x, kernel_size, stride, padding, spatial)
    if math.prod(out_shape) == 0:
        return context.constant(0, dtype, out_shape)
    compute = _accumulate(dtype)
    x = context.convert(x, compute)
    in_spatial = x.shape[x.rank - spatial:]
    pads, limits = _geometry(x, out_shape, kernel, stride, padding, [1] * spatial)
    if limits != list(x.shape):
        x = context.slice(x, [0] * x.rank, limits)
    total = context.op("stablehlo.reduce_window", [x, context.builder.constant(0, compute)], out_shape, compute,
                       _window_attributes(x.rank, kernel, stride, [1] * spatial, pads),
                       scalar_region("add", compute))
    divisor = context.broadcast(_divisors(context, in_spatial, out_shape[len(out_shape) - spatial:], kernel, stride,
                                          padding, count_include_pad, divisor_override, compute), out_shape)
    return context.convert(context.op("stablehlo.divide", [total, divisor], out_shape, compute), dtype)


@lowers(aten.avg_pool2d_backward.default, aten.avg_pool3d_backward.default)
def _avg_pool_backward(context, node, grad, x, kernel_size, stride, padding, ceil_mode, count_include_pad,
                       divisor_override):
    """Each input element sums grad / divisor over the windows covering it: grad dilated by the stride,
    then a window sum of the kernel size (a transposed pooling)."""
    shape, dtype = context.output_type()
    spatial = 2 if node.target == aten.avg_pool2d_backward.default else 3
    kernel, stride, padding = _avg_arguments(node, x, kernel_size, stride, padding, spatial)
    if math.prod(shape) == 0 or math.prod(grad.shape) == 0:
        return context.constant(0, dtype, shape)
    compute = _accumulate(dtype)
    in_spatial, out_spatial = shape[len(shape) - spatial:], grad.shape[grad.rank - spatial:]
    divisor = _divisors(context, in_spatial, out_spatial, kernel, stride, padding, count_include_pad,
                        divisor_override, compute)
    g = context.convert(grad, compute)
    g = context.op("stablehlo.divide", [g, context.broadcast(divisor, g.shape)], g.shape, compute)
    lead = grad.rank - spatial
    low, high, interior, padded = [0] * lead, [0] * lead, [0] * lead, list(g.shape[:lead])
    for n, o, k, s, p in zip(in_spatial, out_spatial, kernel, stride, padding):
        dilated = (o - 1) * s + 1
        extra = max(0, p + n - dilated)
        low.append(k - 1)
        high.append(extra)
        interior.append(s - 1)
        padded.append(k - 1 + dilated + extra)
    g = context.op("stablehlo.pad", [g, context.builder.constant(0, compute)], padded, compute,
                   f"edge_padding_low = {i64_array(low)}, edge_padding_high = {i64_array(high)}, "
                   f"interior_padding = {i64_array(interior)}")
    summed_shape = list(g.shape[:lead]) + [size - k + 1 for size, k in zip(padded[lead:], kernel)]
    summed = context.op("stablehlo.reduce_window", [g, context.builder.constant(0, compute)], summed_shape, compute,
                        _window_attributes(g.rank, kernel, [1] * spatial, [1] * spatial, [(0, 0)] * spatial),
                        scalar_region("add", compute))
    starts = [0] * lead + list(padding)
    limits = list(shape[:lead]) + [p + n for p, n in zip(padding, in_spatial)]
    return context.convert(context.slice(summed, starts, limits), dtype)


# ---- adaptive average pooling -----------------------------------------------
def _adaptive_matrix(n, o, transposed=False):
    """0/1 [o, n] membership of input positions in PyTorch's adaptive windows ([n, o] if `transposed`), and
    each window's length."""
    bounds = [((i * n) // o, -((-(i + 1) * n) // o)) for i in range(o)]
    matrix = [[1.0 if start <= j < end else 0.0 for j in range(n)] for start, end in bounds]
    if transposed:
        matrix = [list(row) for row in zip(*matrix)]
    return matrix, [float(end - start) for start, end in bounds]


def apply_along_axis(context, x, matrix, axis, compute):
    """Contracts `axis` of x with matrix [new, old]; the new axis takes its place."""
    constant = context.builder.array_constant(matrix, (len(matrix), len(matrix[0])), compute)
    shape = [s for i, s in enumerate(x.shape) if i != axis] + [len(matrix)]
    product = context.op("stablehlo.dot_general", [x, constant], shape, compute,
                         f"dot_dimension_numbers = #stablehlo.dot<lhs_batching_dimensions = [], "
                         f"rhs_batching_dimensions = [], lhs_contracting_dimensions = [{axis}], "
                         f"rhs_contracting_dimensions = [1]>")
    permutation = list(range(axis)) + [x.rank - 1] + list(range(axis, x.rank - 1))
    return context.transpose(product, permutation)


def _window_lengths(context, in_spatial, out_spatial, dtype):
    lengths = _outer([_adaptive_matrix(n, o)[1] for n, o in zip(in_spatial, out_spatial)])
    return context.builder.array_constant(lengths, out_spatial, dtype)


def _adaptive_setup(context, node, full, pooled):
    """(meta shape, dtype, compute dtype, input spatial, output spatial) of an adaptive pooling node;
    compute dtype None when the result is empty (nothing to compute)."""
    shape, dtype = context.output_type()
    spatial = 3 if "3d" in node.target.name() else 2
    if math.prod(full) == 0 or math.prod(pooled) == 0:
        if math.prod(shape) == 0:
            return shape, dtype, None, (), ()
        raise LoweringError("adaptive pooling of an empty tensor")
    in_spatial, out_spatial = tuple(full[len(full) - spatial:]), tuple(pooled[len(pooled) - spatial:])
    return shape, dtype, _accumulate(dtype), in_spatial, out_spatial


@lowers(aten._adaptive_avg_pool2d.default, aten._adaptive_avg_pool3d.default)
def _adaptive_avg_pool(context, node, x, output_size):
    shape = context.output_type()[0]
    shape, dtype, compute, in_spatial, out_spatial = _adaptive_setup(context, node, x.shape, shape)
    if compute is None:
        return context.constant(0, dtype, shape)
    result = context.convert(x, compute)
    for axis, (n, o) in enumerate(zip(in_spatial, out_spatial)):
        result = apply_along_axis(context, result, _adaptive_matrix(n, o)[0], x.rank - len(in_spatial) + axis, compute)
    lengths = context.broadcast(_window_lengths(context, in_spatial, out_spatial, compute), shape)
    return context.convert(context.op("stablehlo.divide", [result, lengths], shape, compute), dtype)


@lowers(aten._adaptive_avg_pool2d_backward.default, aten._adaptive_avg_pool3d_backward.default)
def _adaptive_avg_pool_backward(context, node, grad, x):
    """Each window's gradient, divided by its length, spread back over its input positions."""
    shape = context.output_type()[0]
    shape, dtype, compute, in_spatial, out_spatial = _adaptive_setup(context, node, shape, grad.shape)
    if compute is None:
        return context.constant(0, dtype, shape)
    lengths = context.broadcast(_window_lengths(context, in_spatial, out_spatial, compute), grad.shape)
    result = context.op("stablehlo.divide", [context.convert(grad, compute), lengths], grad.shape, compute)
    for axis, (n, o) in enumerate(zip(in_spatial, out_spatial)):
        result = apply_along_axis(context, result, _adaptive_matrix(n, o, transposed=True)[0],
                              grad.rank - len(in_spatial) + axis, compute)
    return context.convert(result, dtype)
