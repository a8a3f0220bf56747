"""Indexing: gather, scatter (assign and reduce), advanced indexing (index / index_put), index_select,
embedding, select_scatter / slice_scatter, masked_scatter.

Every gather and scatter here uses *point* indices: an index tensor whose last
dimension holds one full coordinate per element (slice sizes of 1 in the
indexed dimensions), so one pair of helpers serves all ops. Out-of-range
indices are an error in eager PyTorch, while XLA clamps (gather) or drops
(scatter) them: every index a user passes goes through `checked_index`, which
adds eager's bounds check (checks.py; raised after the call with eager's
exception type) and counts negative indices from the end where eager does.
"""

from __future__ import annotations

import math

import torch

from .builder import LoweringError, Value, i64_array, scalar_region, tensor_type
from .checks import check_condition, check_index_bounds
from .context import LoweringContext, normalize_dim
from .registry import lowers

aten = torch.ops.aten


def _dims(values) -> str:
    return "[" + ", ".join(str(int(v)) for v in values) + "]"


def checked_index(context: LoweringContext, node, index, size: int, dim: int, rank: int, **fields):
    """`index` (a user's indices into a dimension of `size`) bounds-checked as the eager op checks them,
    as int64 with negative entries counted from the end (where eager rejects them, the check fails first)."""
    check_index_bounds(context, node, index, size, dim, rank, **fields)
    return wrap_index(context, index, size)


def wrap_index(context: LoweringContext, index, size: int):
    """int64 `index` with negative entries counted from the end (PyTorch's indexing rule)."""
    index = context.convert(index, torch.int64)
    negative = context.compare(index, context.constant(0, torch.int64, index.shape), "LT")
    shifted = context.op("stablehlo.add", [index, context.constant(size, torch.int64, index.shape)], index.shape,
                         torch.int64)
    return context.select(negative, shifted, index)


def stack_coordinates(context: LoweringContext, coordinates):
    """[B...] int64 tensors (same shape) → [B..., k] coordinate tensor."""
    shape = coordinates[0].shape
    parts = [context.reshape(context.convert(c, torch.int64), shape + (1,)) for c in coordinates]
    if len(parts) == 1:
        return parts[0]
    return context.op("stablehlo.concatenate", parts, shape + (len(parts),), torch.int64,
                      f"dimension = {len(shape)} : i64")


def point_gather(context: LoweringContext, operand, coordinates, indexed_dims):
    """operand[coords] where `coordinates` is [B..., k] over `indexed_dims` (sorted, leading order of the
    coordinate vector); result is [B..., remaining dims of operand in order]."""
    batch = coordinates.shape[:-1]
    remaining = [d for d in range(operand.rank) if d not in indexed_dims]
    slice_sizes = [1 if d in indexed_dims else operand.shape[d] for d in range(operand.rank)]
    offset_dims = list(range(len(batch), len(batch) + len(remaining)))
    shape = tuple(batch) + tuple(operand.shape[d] for d in remaining)
    numbers = (f"#stablehlo.gather<offset_dims = {_dims(offset_dims)}, collapsed_slice_dims = "
               f"{_dims(sorted(indexed_dims))}, start_index_map = {_dims(indexed_dims)}, "
               f"index_vector_dim = {len(batch)}>")
    return context.op("stablehlo.gather", [operand, coordinates], shape, operand.dtype,
                      f"dimension_numbers = {numbers}, indices_are_sorted = false, "
                      f"slice_sizes = {i64_array(slice_sizes)}")


def _region(kind: str, dtype: torch.dtype) -> str:
    if kind == "assign":
        scalar = tensor_type((), dtype)
        return f'^bb0(%lhs: {scalar}, %rhs: {scalar}):\n  "stablehlo.return"(%rhs) : ({scalar}) -> ()'
    if dtype == torch.bool:
        kind = {"add": "or", "multiply": "and", "maximum": "or", "minimum": "and"}[kind]
    return scalar_region(kind, dtype)


def point_scatter(context: LoweringContext, operand, coordinates, indexed_dims, updates, kind: str):
    """operand with `updates` ([B..., remaining dims]) combined (`kind`: assign/add/multiply/maximum/minimum)
    into the points `coordinates` ([B..., k]) over `indexed_dims`."""
    batch = coordinates.shape[:-1]
    remaining = [d for d in range(operand.rank) if d not in indexed_dims]
    window = list(range(len(batch), len(batch) + len(remaining)))
    numbers = (f"#stablehlo.scatter<update_window_dims = {_dims(window)}, inserted_window_dims = "
               f"{_dims(sorted(indexed_dims))}, scatter_dims_to_operand_dims = {_dims(indexed_dims)}, "
               f"index_vector_dim = {len(batch)}>")
    updates = context.convert(updates, operand.dtype)
    return context.op("stablehlo.scatter", [operand, coordinates, updates], operand.shape, operand.dtype,
                      f"scatter_dimension_numbers = {numbers}, indices_are_sorted = false, unique_indices = false",
                      _region(kind, operand.dtype))


def _dim_coordinates(context, index, dim, size):
    """For gather/scatter along `dim`: the [*index.shape, rank] coordinates (iota elsewhere)."""
    coordinates = [index if d == dim else context.iota(index.shape, d, torch.int64) for d in range(index.rank)]
    return stack_coordinates(context, coordinates)


# ---- gather / scatter along one dimension ------------------------------------
@lowers(aten.gather.default)
def _gather(context, node, x, dim, index, sparse_grad=False):
    shape, dtype = context.output_type()
    if x.rank == 0:
        return context.reshape(x, shape)
    dim = normalize_dim(dim, x.rank)
    if index.rank != x.rank:
        raise LoweringError("gather: index rank differs from input rank")
    if math.prod(index.shape) == 0:
        return context.constant(0, dtype, shape)
    index = checked_index(context, node, index, x.shape[dim], dim, x.rank)
    coordinates = _dim_coordinates(context, index, dim, x.shape[dim])
    return point_gather(context, x, coordinates, list(range(x.rank)))


_SCATTER_REDUCE = {"sum": "add", "add": "add", "prod": "multiply", "multiply": "multiply", "amax": "maximum",
                   "amin": "minimum"}


def _identity(kind: str, dtype: torch.dtype):
    if kind == "add":
        return 0
    if kind == "multiply":
        return 1
    if dtype == torch.bool:
        return kind == "minimum"
    if dtype.is_floating_point:
        return -math.inf if kind == "maximum" else math.inf
    info = torch.iinfo(dtype)
    return info.min if kind == "maximum" else info.max


def _scatter(context, node, x, dim, index, src, kind, include_self=True, mean=False):
    shape, dtype = context.output_type()
    if x.rank == 0 or index.rank == 0:
        raise LoweringError("scatter on a 0-d tensor")
    dim = normalize_dim(dim, x.rank)
    if math.prod(index.shape) == 0:
        return context.convert(x, dtype)
    if not isinstance(src, Value):
        src = context.constant(src, dtype, index.shape)
    elif src.shape != index.shape:
        # scatter uses the leading index.shape block of src.
        src = context.slice(src, [0] * src.rank, index.shape)
    index = checked_index(context, node, index, x.shape[dim], dim, x.rank)
    coordinates = _dim_coordinates(context, index, dim, x.shape[dim])
    dims = list(range(x.rank))
    x = context.convert(x, dtype)
    if mean:
        compute = dtype
        ones = context.constant(1, compute, index.shape)
        start = context.constant(1 if include_self else 0, compute, shape)
        counts = point_scatter(context, start, coordinates, dims, ones, "add")
    if not include_self:
        x = point_scatter(context, x, coordinates, dims, context.constant(_identity(kind, dtype), dtype, index.shape),
                          "assign")
    result = point_scatter(context, x, coordinates, dims, src, kind)
    if mean:
        safe = context.select(context.compare(counts, context.constant(0, dtype, shape), "EQ"),
                              context.constant(1, dtype, shape), counts)
        result = context.op("stablehlo.divide", [result, safe], shape, dtype)
    return result


@lowers(aten.scatter.src, aten.scatter.value)
def _scatter_assign(context, node, x, dim, index, src):
    return _scatter(context, node, x, dim, index, src, "assign")


@lowers(aten.scatter.reduce, aten.scatter.value_reduce)
def _scatter_old_reduce(context, node, x, dim, index, src, *, reduce):
    if reduce not in _SCATTER_REDUCE:
        raise LoweringError(f"scatter reduce={reduce!r}")
    return _scatter(context, node, x, dim, index, src, _SCATTER_REDUCE[reduce])


@lowers(aten.scatter_add.default)
def _scatter_add(context, node, x, dim, index, src):
    return _scatter(context, node, x, dim, index, src, "add")


@lowers(aten.scatter_reduce.two)
def _scatter_reduce(context, node, x, dim, index, src, reduce, *, include_self=True):
    _, dtype = context.output_type()
    if reduce == "mean":
        if not dtype.is_floating_point:
            raise LoweringError("scatter_reduce mean on integers (PyTorch divides with floor)")
        return _scatter(context, node, x, dim, index, src, "add", include_self, mean=True)
    if reduce not in _SCATTER_REDUCE:
        raise LoweringError(f"scatter_reduce reduce={reduce!r}")
    return _scatter(context, node, x, dim, index, src, _SCATTER_REDUCE[reduce], include_self)


# ---- advanced indexing --------------------------------------------------------
def _advanced(context, node, x, indices, check: bool = True):
    """([B..., k] coordinates, indexed dims, B, adjacent first dim or None); `check`: add eager's bounds
    checks (eager checks nothing when the result is empty)."""
    indices = list(indices) + [None] * (x.rank - len(indices))
    indexed = [d for d, i in enumerate(indices) if i is not None]
    if not indexed:
        raise LoweringError("index with no index tensors")
    for d in indexed:
        if indices[d].dtype in (torch.bool, torch.uint8):
            raise LoweringError("boolean mask indexing (data-dependent shape)")
    batch = tuple(torch.broadcast_shapes(*[indices[d].shape for d in indexed]))
    wrapped = [checked_index(context, node, indices[d], x.shape[d], d, x.rank) if check else
               wrap_index(context, indices[d], x.shape[d]) for d in indexed]
    coordinates = stack_coordinates(context, [context.broadcast(index, batch) for index in wrapped])
    adjacent = indexed == list(range(indexed[0], indexed[-1] + 1))
    return coordinates, indexed, batch, (indexed[0] if adjacent else None)


def _pytorch_order(context, value, batch, remaining_count, first, inverse=False):
    """gather layout [B..., rest...] → PyTorch's layout, where adjacent indexed dims stay in place
    (`inverse`: the other way, for index_put's values)."""
    if not first:
        return value
    b = len(batch)
    permutation = list(range(b, b + first)) + list(range(b)) + list(range(b + first, b + remaining_count))
    if inverse:
        permutation = sorted(range(len(permutation)), key=permutation.__getitem__)
    return context.transpose(value, permutation)


@lowers(aten.index.Tensor)
def _index(context, node, x, indices):
    shape, dtype = context.output_type()
    coordinates, indexed, batch, first = _advanced(context, node, x, indices, check=math.prod(shape) > 0)
    if math.prod(shape) == 0:
        return context.constant(0, dtype, shape)
    if math.prod(x.shape) == 0:
        raise LoweringError("index into an empty tensor")
    result = point_gather(context, x, coordinates, indexed)
    return _pytorch_order(context, result, batch, x.rank - len(indexed), first)


@lowers(aten.index_put.default, aten._unsafe_index_put.default)
def _index_put(context, node, x, indices, values, accumulate=False):
    shape, dtype = context.output_type()
    coordinates, indexed, batch, first = _advanced(context, node, x, indices, check=math.prod(shape) > 0)
    if math.prod(batch) == 0 or math.prod(shape) == 0:
        return x
    remaining = [x.shape[d] for d in range(x.rank) if d not in indexed]
    if first:
        pytorch_shape = remaining[:first] + list(batch) + remaining[first:]
    else:
        pytorch_shape = list(batch) + remaining
    updates = context.broadcast(context.convert(values, dtype), pytorch_shape)
    updates = _pytorch_order(context, updates, batch, len(remaining), first, inverse=True)
    return point_scatter(context, x, coordinates, indexed, updates, "add" if accumulate else "assign")


@lowers(aten._unsafe_index.Tensor)
def _unsafe_index(context, node, x, indices):
    return _index(context, node, x, indices)


@lowers(aten.index_select.default)
def _index_select(context, node, x, dim, index):
    shape, _ = context.output_type()
    if x.rank == 0:
        return context.reshape(x, shape)
    dim = normalize_dim(dim, x.rank)
    index = context.reshape(index, (math.prod(index.shape),))
    return context.reshape(_index(context, node, x, [None] * dim + [index]), shape)


@lowers(aten.embedding.default)
def _embedding(context, node, weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    shape, _ = context.output_type()
    if weight.rank != 2:
        raise LoweringError("embedding weight must be 2-d")
    return _index(context, node, weight, [indices])


@lowers(aten.embedding_dense_backward.default)
def _embedding_backward(context, node, grad, indices, num_weights, padding_idx, scale_grad_by_freq):
    shape, dtype = context.output_type()
    if scale_grad_by_freq:
        raise LoweringError("embedding backward with scale_grad_by_freq")
    count = math.prod(indices.shape)
    flat = context.reshape(context.convert(indices, torch.int64), (count,))
    rows = context.reshape(grad, (count, shape[1]))
    if padding_idx is not None and padding_idx >= 0:
        keep = context.compare(flat, context.constant(padding_idx, torch.int64, (count,)), "NE")
        keep = context.broadcast_in_dim(keep, rows.shape, [0])
        rows = context.select(keep, rows, context.constant(0, rows.dtype, rows.shape))
    compute = torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype
    zeros = context.constant(0, compute, shape)
    coordinates = stack_coordinates(context, [flat])
    result = point_scatter(context, zeros, coordinates, [0], context.convert(rows, compute), "add")
    return context.convert(result, dtype)


# ---- scatter into a view --------------------------------------------------------
def _place(context, x, src, dim, start, step, count):
    """x with `src` written at positions start, start+step, ... (count of them) along `dim`."""
    size = x.shape[dim]
    low, high, interior = [0] * x.rank, [0] * x.rank, [0] * x.rank
    low[dim] = start
    interior[dim] = step - 1
    high[dim] = size - start - ((count - 1) * step + 1)
    zero = context.builder.constant(0, x.dtype)
    padded = context.op("stablehlo.pad", [context.convert(src, x.dtype), zero], x.shape, x.dtype,
                        f"edge_padding_low = {i64_array(low)}, edge_padding_high = {i64_array(high)}, "
                        f"interior_padding = {i64_array(interior)}")
    position = context.iota(x.shape, dim, torch.int64)
    offset = context.op("stablehlo.subtract", [position, context.constant(start, torch.int64, x.shape)], x.shape,
                        torch.int64)
    inside = context.op("stablehlo.and", [
        context.compare(offset, context.constant(0, torch.int64, x.shape), "GE"),
        context.compare(offset, context.constant((count - 1) * step, torch.int64, x.shape), "LE")], x.shape,
        torch.bool)
    if step > 1:
        remainder = context.op("stablehlo.remainder", [offset, context.constant(step, torch.int64, x.shape)],
                               x.shape, torch.int64)
        on_step = context.compare(remainder, context.constant(0, torch.int64, x.shape), "EQ")
        inside = context.op("stablehlo.and", [inside, on_step], x.shape, torch.bool)
    return context.select(inside, padded, x)


@lowers(aten.select_scatter.default)
def _select_scatter(context, node, x, src, dim, index):
    dim = normalize_dim(dim, x.rank)
    index = index % x.shape[dim] if x.shape[dim] else index
    expanded = list(x.shape)
    expanded[dim] = 1
    return _place(context, x, context.reshape(src, expanded), dim, index, 1, 1)


@lowers(aten.slice_scatter.default)
def _slice_scatter(context, node, x, src, dim=0, start=None, end=None, step=1):
    dim = normalize_dim(dim, x.rank)
    start, end, step = slice(start, end, step).indices(x.shape[dim])
    count = src.shape[dim]
    if count == 0:
        return x
    return _place(context, x, src, dim, start, step, count)


def _mask_positions(context, mask, shape, source_count):
    """(flat bool mask, flat int64 rank of each element among the true ones clamped to the source, flat
    inclusive count of true elements so far).

    The rank is an inclusive running count (a reduce_window over all earlier elements) minus one.
    """
    total = math.prod(shape)
    mask = context.reshape(context.broadcast(context.convert(mask, torch.bool), shape), (total,))
    ones = context.convert(mask, torch.int64)
    init = context.builder.constant(0, torch.int64)
    running = ones if total == 0 else context.op(  # (XLA rejects a window of size 0)
        "stablehlo.reduce_window", [ones, init], (total,), torch.int64,
        f"window_dimensions = {i64_array([total])}, padding = dense<[[{total - 1}, 0]]> : tensor<1x2xi64>",
        scalar_region("add", torch.int64))
    position = context.op("stablehlo.subtract", [running, context.constant(1, torch.int64, (total,))], (total,),
                          torch.int64)
    position = context.op("stablehlo.clamp", [context.constant(0, torch.int64, (total,)), position,
                                               context.constant(source_count - 1, torch.int64, (total,))],
                          (total,), torch.int64)
    return mask, position, running


@lowers(aten.masked_scatter.default)
def _masked_scatter(context, node, x, mask, source):
    """Element k of the mask's true positions (row-major) takes source.flatten()[k]."""
    shape, dtype = context.output_type()
    total = math.prod(shape)
    if total == 0:
        return context.convert(x, dtype)
    source_count = math.prod(source.shape)
    if source_count == 0:
        raise LoweringError("masked_scatter with an empty source")
    mask, position, running = _mask_positions(context, mask, shape, source_count)
    # Eager refuses a mask with more true elements than the source has (the clamp above would reuse the last).
    too_many = context.compare(running, context.constant(source_count, torch.int64, running.shape), "GT")
    check_condition(context, node, too_many, running, RuntimeError,
                    "Number of elements of source < number of ones in mask")
    flat_source = context.reshape(context.convert(source, dtype), (source_count,))
    picked = point_gather(context, flat_source, stack_coordinates(context, [position]), [0])
    flat_x = context.reshape(context.broadcast(context.convert(x, dtype), shape), (total,))
    return context.reshape(context.select(mask, picked, flat_x), shape)


@lowers(aten.masked_scatter_backward.default)
def _masked_scatter_backward(context, node, grad, mask, sizes):
    """The source's gradient: grad at the mask's k-th true position goes to source element k (zeros past
    the mask's count)."""
    shape, dtype = context.output_type()
    total = math.prod(grad.shape)
    source_count = math.prod(shape)
    if total == 0 or source_count == 0:
        return context.constant(0, dtype, shape)
    # Unselected elements add zero to a valid slot, so no index is ever out of range.
    mask, position, _ = _mask_positions(context, mask, grad.shape, source_count)
    flat_grad = context.reshape(context.convert(grad, dtype), (total,))
    updates = context.select(mask, flat_grad, context.constant(0, dtype, (total,)))
    zeros = context.constant(0, dtype, (source_count,))
    result = point_scatter(context, zeros, stack_coordinates(context, [position]), [0], updates, "add")
    return context.reshape(result, shape)


# ---- strided views of a row-major value ---------------------------------------
def row_major_strides(shape):
    """The strides of a dense row-major tensor of `shape`, in elements."""
    strides, running = [], 1
    for size in reversed(shape):
        strides.append(running)
        running *= size
    return list(reversed(strides))


def _flat_positions(context, shape, strides, offset):
    """int64 tensor of `shape`: offset + Σ index_k * stride_k (element positions in a row-major buffer)."""
    shape = tuple(int(s) for s in shape)
    total = context.constant(int(offset), torch.int64, shape)
    for axis, stride in enumerate(strides):
        if shape[axis] > 1 and stride:
            term = context.op("stablehlo.multiply", [context.iota(shape, axis, torch.int64),
                                                     context.constant(int(stride), torch.int64, shape)], shape,
                              torch.int64)
            total = context.op("stablehlo.add", [total, term], shape, torch.int64)
    return total


def strided_view(context, x, shape, strides, offset):
    """The view of x's row-major elements with this shape / strides / offset, as a gather."""
    if math.prod(shape) == 0:
        return context.constant(0, x.dtype, shape)
    flat = context.reshape(x, (math.prod(x.shape),))
    positions = _flat_positions(context, shape, strides, offset)
    return point_gather(context, flat, stack_coordinates(context, [positions]), [0])


def strided_scatter(context, x, src, shape, strides, offset):
    """x with the view (shape / strides / offset) of its row-major elements replaced by src."""
    if math.prod(shape) == 0:
        return x
    flat = context.reshape(x, (math.prod(x.shape),))
    positions = _flat_positions(context, shape, strides, offset)
    result = point_scatter(context, flat, stack_coordinates(context, [positions]), [0],
                           context.reshape(src, tuple(shape)), "assign")
    return context.reshape(result, x.shape)


def _diagonal_geometry(x, offset, dim1, dim2):
    dim1, dim2 = normalize_dim(dim1, x.rank), normalize_dim(dim2, x.rank)
    strides = row_major_strides(x.shape)
    start = offset * strides[dim2] if offset >= 0 else -offset * strides[dim1]
    length = max(0, min(x.shape[dim1] - max(-offset, 0), x.shape[dim2] - max(offset, 0)))
    kept = [d for d in range(x.rank) if d not in (dim1, dim2)]
    shape = [x.shape[d] for d in kept] + [length]
    return shape, [strides[d] for d in kept] + [strides[dim1] + strides[dim2]], (start if length else 0)


@lowers(aten.diagonal.default, aten.diagonal_copy.default)
def _diagonal(context, node, x, offset=0, dim1=0, dim2=1):
    return strided_view(context, x, *_diagonal_geometry(x, offset, dim1, dim2))


@lowers(aten.diagonal_scatter.default)
def _diagonal_scatter(context, node, x, src, offset=0, dim1=0, dim2=1):
    return strided_scatter(context, x, src, *_diagonal_geometry(x, offset, dim1, dim2))


@lowers(aten.unfold.default)
def _unfold(context, node, x, dimension, size, step):
    shape, _ = context.output_type()
    if x.rank == 0:
        return context.reshape(x, shape)
    dim = normalize_dim(dimension, x.rank)
    strides = row_major_strides(x.shape)
    view_strides = strides[:dim] + [strides[dim] * step] + strides[dim + 1:] + [strides[dim]]
    return strided_view(context, x, shape, view_strides, 0)


def _base_is_row_major(context) -> bool:
    """as_strided addresses the input's storage: only a contiguous, offset-0 input's storage is its
    row-major element order (the only layout a StableHLO value has). The traced input has its strides."""
    base = context.facts.traced_arguments[0]
    return isinstance(base, torch.Tensor) and base.is_contiguous() and base.storage_offset() == 0


@lowers(aten.as_strided.default, aten.as_strided_copy.default)
def _as_strided(context, node, x, size, stride, storage_offset=None):
    if not _base_is_row_major(context):
        raise LoweringError("as_strided of a non-contiguous or offset input")
    shape, _ = context.output_type()
    offset = int(storage_offset or 0)
    if math.prod(shape) and offset + sum((s - 1) * st for s, st in zip(shape, stride)) >= math.prod(x.shape):
        raise LoweringError("as_strided view reaches past the input's elements")
    return strided_view(context, x, shape, [int(s) for s in stride], offset)


@lowers(aten.as_strided_scatter.default)
def _as_strided_scatter(context, node, x, src, size, stride, storage_offset=None):
    if not _base_is_row_major(context):
        raise LoweringError("as_strided_scatter of a non-contiguous or offset input")
    shape = [int(s) for s in size]
    offset = int(storage_offset or 0)
    if math.prod(shape) and offset + sum((s - 1) * st for s, st in zip(shape, stride)) >= math.prod(x.shape):
        raise LoweringError("as_strided view reaches past the input's elements")
    return strided_scatter(context, x, context.convert(src, x.dtype), shape, [int(s) for s in stride], offset)


@lowers(aten.index_reduce.default)
def _index_reduce(context, node, x, dim, index, source, reduce, *, include_self=True):
    """Slices of `source` combined into x's slices along `dim` named by the 1-D `index`."""
    shape, dtype = context.output_type()
    kinds = {"prod": "multiply", "amax": "maximum", "amin": "minimum", "mean": "add"}
    if reduce not in kinds:
        raise LoweringError(f"index_reduce reduce={reduce!r}")
    if reduce == "mean" and not dtype.is_floating_point:
        raise LoweringError("index_reduce mean on integers (PyTorch divides with floor)")
    if x.rank == 0:
        raise LoweringError("index_reduce of a 0-d tensor")
    if math.prod(index.shape) == 0:
        return context.convert(x, dtype)
    dim = normalize_dim(dim, x.rank)
    kind = kinds[reduce]
    indices = [None] * dim + [context.reshape(index, (math.prod(index.shape),))]
    coordinates, indexed, batch, first = _advanced(context, node, x, indices)
    remaining = len(shape) - 1
    updates = _pytorch_order(context, context.convert(source, dtype), batch, remaining, first, inverse=True)
    result = context.convert(x, dtype)
    if not include_self:
        identity = context.constant(_identity(kind, dtype), dtype, updates.shape)
        result = point_scatter(context, result, coordinates, indexed, identity, "assign")
    result = point_scatter(context, result, coordinates, indexed, updates, kind)
    if reduce == "mean":
        counts = point_scatter(context, context.constant(1 if include_self else 0, dtype, shape), coordinates,
                               indexed, context.constant(1, dtype, updates.shape), "add")
        safe = context.select(context.compare(counts, context.constant(0, dtype, shape), "EQ"),
                              context.constant(1, dtype, shape), counts)
        result = context.op("stablehlo.divide", [result, safe], shape, dtype)
    return result
