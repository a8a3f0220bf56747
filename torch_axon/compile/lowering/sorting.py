"""Sorting: sort (values and int64 indices), topk — one stable stablehlo.sort over (values, iota).

PyTorch orders NaN above every number (last ascending, first descending); a
stable sort with a comparator that encodes the NaN rule gives exactly what
CPU's stable sort (std::stable_sort) gives. Equal elements are where the other
cases differ (measured against the CPU kernels, torch 2.13):

- unstable sort is std::sort (an insertion sort, hence stable, up to 16
  elements; introsort beyond) or, for float/double/int/long on CPU builds with
  x86-simd-sort, a SIMD quicksort;
- topk is std::partial_sort (k * 64 <= n) or std::nth_element then std::sort.

Neither order of equal elements can be written in StableHLO. So these
lowerings are exact whenever the result is unique, and add a check
(checks.check_unique) that sends a call with equal values where they matter
to eager execution (the CPU kernel itself). topk(sorted=False) on the
nth_element path returns the top k in nth_element's own order even without
ties: it is not lowered. (cumsum/cumprod live in reduction.py.)
"""

from __future__ import annotations

import torch

from .builder import LoweringError, comparison_type, tensor_type
from .checks import check_unique
from .context import LoweringContext, normalize_dim
from .registry import lowers

aten = torch.ops.aten


def _comparator(dtype, descending: bool) -> str:
    scalar, index = tensor_type((), dtype), tensor_type((), torch.int64)
    kind = comparison_type(dtype)

    def compare(a, b, direction):
        return (f'"stablehlo.compare"({a}, {b}) {{comparison_direction = #stablehlo<comparison_direction '
                f'{direction}>, compare_type = #stablehlo<comparison_type {kind}>}} : ({scalar}, {scalar}) '
                f"-> tensor<i1>")

    lines = [f"^bb0(%a: {scalar}, %b: {scalar}, %ai: {index}, %bi: {index}):",
             f"  %ordered = {compare('%a', '%b', 'GT' if descending else 'LT')}"]
    if dtype.is_floating_point:
        # NaN counts as the largest value.
        first, second = ("%a", "%b") if descending else ("%b", "%a")
        lines += [f"  %first_nan = {compare(first, first, 'NE')}",
                  f"  %second_nan = {compare(second, second, 'NE')}",
                  '  %second_number = "stablehlo.not"(%second_nan) : (tensor<i1>) -> tensor<i1>',
                  '  %nan_rule = "stablehlo.and"(%first_nan, %second_number) : (tensor<i1>, tensor<i1>) -> tensor<i1>',
                  '  %result = "stablehlo.or"(%ordered, %nan_rule) : (tensor<i1>, tensor<i1>) -> tensor<i1>',
                  '  "stablehlo.return"(%result) : (tensor<i1>) -> ()']
    else:
        lines.append('  "stablehlo.return"(%ordered) : (tensor<i1>) -> ()')
    return "\n".join(lines)


def sort_with_indices(context: LoweringContext, x, dim: int, descending: bool):
    if x.dtype.is_complex:
        raise LoweringError("sort of complex values")
    indices = context.iota(x.shape, dim, torch.int64)
    return context.builder.op_multi("stablehlo.sort", [x, indices], [(x.shape, x.dtype), (x.shape, torch.int64)],
                                    f"dimension = {dim} : i64, is_stable = true", _comparator(x.dtype, descending))


# std::sort runs a (stable) insertion sort up to this many elements.
_INSERTION_SORT_LIMIT = 16
# Dtypes CPU builds with x86-simd-sort may sort with it instead (not stable at any size).
_SIMD_SORT_DTYPES = (torch.float32, torch.float64, torch.int32, torch.int64)


@lowers(aten.sort.default, aten.sort.stable)
def _sort(context, node, x, *args, **kwargs):
    if node.target == aten.sort.stable:
        dim, descending = kwargs.get("dim", -1), kwargs.get("descending", False)
        stable = bool(kwargs.get("stable"))
    else:
        dim = args[0] if args else kwargs.get("dim", -1)
        descending = args[1] if len(args) > 1 else kwargs.get("descending", False)
        stable = False
    if x.rank == 0:
        return [x, context.constant(0, torch.int64)]
    dim = normalize_dim(dim, x.rank)
    values, indices = sort_with_indices(context, x, dim, descending)
    length = x.shape[dim]
    if not stable and (length > _INSERTION_SORT_LIMIT or x.dtype in _SIMD_SORT_DTYPES):
        check_unique(context, node, values, dim, length,
                     "met equal values, which the CPU kernel's unstable sort orders by its own algorithm "
                     "(sort(stable=True) stays compiled)")
    return [values, indices]


@lowers(aten.topk.default)
def _topk(context, node, x, k, dim=-1, largest=True, sorted=True):
    if x.rank == 0:
        return [x, context.constant(0, torch.int64)]
    dim = normalize_dim(dim, x.rank)
    k, length = int(k), x.shape[dim]
    if not sorted and k * 64 > length and k > 2:
        raise LoweringError("topk(sorted=False): CPU's nth_element leaves the top k in an order of its own")
    values, indices = sort_with_indices(context, x, dim, largest)
    if k:
        check_unique(context, node, values, dim, min(k + 1, length),
                     "met equal values within the top k + 1, which the CPU kernel's partial_sort / nth_element "
                     "selects and orders by its own algorithm")
    limits = list(x.shape)
    limits[dim] = k
    return [context.slice(values, [0] * x.rank, limits), context.slice(indices, [0] * x.rank, limits)]


def _count_below(context, sequence, values, right: bool, out_dtype):
    """For each value, how many entries of its (sorted) row of `sequence` lie below it (<, or <= if `right`) —
    the insertion point binary search finds, as a compare-and-count. NaN values go past the end, as in
    PyTorch. `sequence` is 1-D, or has values' leading dims and rows along its last dim."""
    length = sequence.shape[-1]
    shape = values.shape + (length,)
    if sequence.rank == 1:
        rows = context.broadcast_in_dim(sequence, shape, [values.rank])
    else:
        rows = context.broadcast_in_dim(sequence, shape, list(range(values.rank - 1)) + [values.rank])
    items = context.broadcast_in_dim(values, shape, list(range(values.rank)))
    below = context.compare(rows, items, "LE" if right else "LT")
    count = context.reduce(context.convert(below, torch.int64), 0, [values.rank], "add")
    if values.dtype.is_floating_point:
        is_nan = context.compare(values, values, "NE")
        count = context.select(is_nan, context.constant(length, torch.int64, values.shape), count)
    return context.convert(count, out_dtype)


@lowers(aten.bucketize.Tensor)
def _bucketize(context, node, x, boundaries, *, out_int32=False, right=False):
    meta = context.output_tensor()
    if boundaries.rank != 1:
        raise LoweringError("bucketize boundaries must be 1-D")
    compute = torch.promote_types(x.dtype, boundaries.dtype)
    return _count_below(context, context.convert(boundaries, compute), context.convert(x, compute), right,
                        meta.dtype)


@lowers(aten.searchsorted.Tensor)
def _searchsorted(context, node, sequence, values, *, out_int32=False, right=False, side=None, sorter=None):
    meta = context.output_tensor()
    if sorter is not None:
        raise LoweringError("searchsorted with a sorter")
    if sequence.rank > 1 and sequence.shape[:-1] != values.shape[:-1]:
        raise LoweringError("searchsorted with mismatched leading dimensions")
    right = right or side == "right"
    compute = torch.promote_types(sequence.dtype, values.dtype)
    return _count_below(context, context.convert(sequence, compute), context.convert(values, compute), right,
                        meta.dtype)
