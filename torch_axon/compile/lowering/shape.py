"""Shape and layout ops: views, permutations, broadcasts, slicing, concatenation, padding, flips.

After functionalization every view is a value: `view` is a reshape,
`permute` a transpose, `expand` a broadcast, `slice` a strided slice.
"""

from __future__ import annotations

import torch

from .builder import i64_array
from .context import normalize_dim
from .registry import lowers

aten = torch.ops.aten


@lowers(aten.view.default, aten._unsafe_view.default, aten.reshape.default, aten.view_copy.default,
        aten.squeeze.dims, aten.squeeze.dim, aten.squeeze.default, aten.unsqueeze.default,
        aten.flatten.using_ints, aten.unflatten.int, aten._reshape_alias.default)
def _reshape(context, node, x, *args, **kwargs):
    return context.reshape(x, context.shape_of(context.output_tensor()))


@lowers(aten.permute.default, aten.permute_copy.default)
def _permute(context, node, x, dims):
    return context.transpose(x, [normalize_dim(d, x.rank) for d in dims])


@lowers(aten.t.default, aten.transpose.int, aten.numpy_T.default)
def _transpose(context, node, x, dim0=0, dim1=1):
    if x.rank < 2:
        return x
    permutation = list(range(x.rank))
    a, b = normalize_dim(dim0, x.rank), normalize_dim(dim1, x.rank)
    permutation[a], permutation[b] = permutation[b], permutation[a]
    return context.transpose(x, permutation)


@lowers(aten.expand.default, aten.expand_copy.default, aten.broadcast_to.default)
def _expand(context, node, x, size, implicit=False):
    return context.broadcast(x, context.shape_of(context.output_tensor()))


@lowers(aten.narrow_copy.default, aten.narrow.default)
def _narrow(context, node, x, dim, start, length):
    dim = normalize_dim(dim, x.rank)
    start = start % x.shape[dim] if start < 0 else start
    return _slice(context, node, x, dim, start, start + length, 1)


@lowers(aten.slice.Tensor, aten.slice_copy.Tensor)
def _slice(context, node, x, dim=0, start=None, end=None, step=1):
    dim = normalize_dim(dim, x.rank)
    size = x.shape[dim]
    start, end, _ = slice(start, end, step).indices(size) if step > 0 else (0, 0, 0)
    end = max(end, start)
    starts = [0] * x.rank
    limits = list(x.shape)
    strides = [1] * x.rank
    starts[dim], limits[dim], strides[dim] = start, end, step
    result = context.slice(x, starts, limits, strides)
    return context.reshape(result, context.shape_of(context.output_tensor()))


@lowers(aten.select.int, aten.select_copy.int)
def _select(context, node, x, dim, index):
    dim = normalize_dim(dim, x.rank)
    index = index % x.shape[dim] if x.shape[dim] else index
    starts = [0] * x.rank
    limits = list(x.shape)
    starts[dim], limits[dim] = index, index + 1
    return context.reshape(context.slice(x, starts, limits), context.shape_of(context.output_tensor()))


@lowers(aten.cat.default, aten.concat.default)
def _cat(context, node, tensors, dim=0):
    shape = context.shape_of(context.output_tensor())
    dtype = context.output_tensor().dtype
    parts = [context.convert(t, dtype) for t in tensors if not (t.rank == 1 and t.shape[0] == 0 and len(shape) != 1)]
    if not parts:
        return context.constant(0, dtype, shape)
    dim = normalize_dim(dim, len(shape))
    if len(parts) == 1:
        return parts[0]
    return context.op("stablehlo.concatenate", parts, shape, dtype, f"dimension = {dim} : i64")


@lowers(aten.split_with_sizes.default, aten.split.Tensor, aten.split_with_sizes_copy.default,
        aten.unbind.int, aten.unbind_copy.int, aten.chunk.default, aten.tensor_split.sections)
def _split(context, node, x, sizes=None, dim=0):
    outputs = context.output
    if node.target in (aten.unbind.int, aten.unbind_copy.int):
        dim = sizes if sizes is not None else 0
    dim = normalize_dim(dim, x.rank)
    results, offset = [], 0
    for output in outputs:
        length = output.shape[dim] if output.dim() == x.rank else 1
        starts = [0] * x.rank
        limits = list(x.shape)
        starts[dim], limits[dim] = offset, offset + int(length)
        results.append(context.reshape(context.slice(x, starts, limits), context.shape_of(output)))
        offset += int(length)
    return results


@lowers(aten.flip.default)
def _flip(context, node, x, dims):
    dims = [normalize_dim(d, x.rank) for d in dims]
    return context.op("stablehlo.reverse", [x], x.shape, x.dtype, f"dimensions = {i64_array(dims)}")


@lowers(aten.constant_pad_nd.default)
def _pad(context, node, x, pad, value=0):
    low, high = [0] * x.rank, [0] * x.rank
    for i in range(len(pad) // 2):
        dim = x.rank - 1 - i
        low[dim], high[dim] = int(pad[2 * i]), int(pad[2 * i + 1])
    padding = context.builder.constant(value, x.dtype)
    return context.op("stablehlo.pad", [x, padding], context.shape_of(context.output_tensor()), x.dtype,
                      f"edge_padding_low = {i64_array(low)}, edge_padding_high = {i64_array(high)}, "
                      f"interior_padding = {i64_array([0] * x.rank)}")


@lowers(aten.repeat.default)
def _repeat(context, node, x, repeats):
    repeats = [int(r) for r in repeats]
    rank = len(repeats)
    x = context.reshape(x, (1,) * (rank - x.rank) + x.shape)
    # Broadcast each dimension d to (repeat_d, size_d), then merge the pairs.
    expanded_shape, dims = [], []
    for i, (r, s) in enumerate(zip(repeats, x.shape)):
        expanded_shape += [r, s]
        dims.append(2 * i + 1)
    expanded = context.broadcast_in_dim(x, expanded_shape, dims)
    return context.reshape(expanded, context.shape_of(context.output_tensor()))


