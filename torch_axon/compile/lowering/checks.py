"""Run-time checks: the decisions eager kernels take from data that one XLA executable cannot take alone.

- **Index bounds.** Eager indexing raises on an out-of-range index (IndexError or RuntimeError, depending
  on the op); StableHLO's gather clamps such an index and its scatter drops the update, so an unchecked
  compiled graph returns plausible wrong values. Every lowering that consumes indices calls
  `check_index_bounds`, which computes, next to the op, the first offending index in row-major order
  (Inductor's generated code checks with device asserts the same way).
- **Ties broken by the CPU kernel's algorithm.** topk (std::partial_sort / std::nth_element) and unstable
  sort (std::sort) order equal elements in a way no StableHLO op reproduces. Their lowerings are exact
  whenever the result is unique; `check_unique` flags a call where it is not, and that call reruns its
  partition eagerly on axon (the CPU kernel itself), so compiled results always equal eager ones.

Each check is one int64 pair [position, value] (position -1: passed). All pairs leave the executable as
one extra [checks, 2] output, which `CompiledPartition` reports in stream order or reads after the call
(compiled_partition.py says which): the first failed bounds check raises as eager would, or the partition
reruns.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from .builder import Value, tensor_type

RAISE = "raise"
RERUN_EAGERLY = "rerun eagerly"


@dataclass(frozen=True)
class RuntimeCheck:
    op: str                 # what the user called (a decomposition's source, e.g. aten.index_add.default)
    lowered: str            # the node that carries the check (e.g. aten.index_put.default)
    on_failure: str         # RAISE | RERUN_EAGERLY
    error: type = RuntimeError
    message: str = ""       # eager's message; {value} is the offending element

    def text(self, graph: str) -> str:
        """The error's message, with {value} standing for the offending element."""
        source = self.op if self.op == self.lowered else f"{self.op} (lowered as {self.lowered})"
        return f"[axon compile] {source} in {graph}: {self.message}"

    def exception(self, value: int, graph: str) -> Exception:
        return self.error(self.text(graph).replace("{value}", str(value)))


# ---- what eager raises, per op the user called --------------------------------------------------------
@dataclass(frozen=True)
class _IndexRule:
    error: type
    message: str            # {value} {dim} {size} {shape}
    negative_wraps: bool    # -size <= index < 0 counts from the end (else negative indices are errors)


_OUT_OF_BOUNDS = "index {value} is out of bounds for dimension {dim} with size {size}"
_OUT_OF_RANGE = "index out of range in self"

# Measured on CPU (torch 2.13), which axon's eager kernels run. Keyed by overload packet.
_INDEX_RULES = {
    "index": _IndexRule(IndexError, _OUT_OF_BOUNDS, True),
    "index_put": _IndexRule(IndexError, _OUT_OF_BOUNDS, True),
    "index_put_": _IndexRule(IndexError, _OUT_OF_BOUNDS, True),
    "_index_put_impl": _IndexRule(IndexError, _OUT_OF_BOUNDS, True),
    "index_fill": _IndexRule(IndexError, _OUT_OF_BOUNDS, True),
    "index_fill_": _IndexRule(IndexError, _OUT_OF_BOUNDS, True),
    "take": _IndexRule(IndexError, "out of range: tried to access index {value} on a tensor of {size} elements.",
                       True),
    "gather": _IndexRule(RuntimeError, _OUT_OF_BOUNDS, False),
    "scatter": _IndexRule(RuntimeError, _OUT_OF_BOUNDS, False),
    "scatter_": _IndexRule(RuntimeError, _OUT_OF_BOUNDS, False),
    "scatter_add": _IndexRule(RuntimeError, _OUT_OF_BOUNDS, False),
    "scatter_add_": _IndexRule(RuntimeError, _OUT_OF_BOUNDS, False),
    "scatter_reduce": _IndexRule(RuntimeError, _OUT_OF_BOUNDS, False),
    "scatter_reduce_": _IndexRule(RuntimeError, _OUT_OF_BOUNDS, False),
    "index_add": _IndexRule(RuntimeError, _OUT_OF_BOUNDS, False),
    "index_add_": _IndexRule(RuntimeError, _OUT_OF_BOUNDS, False),
    "index_copy": _IndexRule(IndexError, "index_copy_(): " + _OUT_OF_BOUNDS, False),
    "index_copy_": _IndexRule(IndexError, "index_copy_(): " + _OUT_OF_BOUNDS, False),
    "index_select": _IndexRule(IndexError, _OUT_OF_RANGE, False),
    "embedding": _IndexRule(IndexError, _OUT_OF_RANGE, False),
    "index_reduce": _IndexRule(IndexError, _OUT_OF_RANGE, False),
    "index_reduce_": _IndexRule(IndexError, _OUT_OF_RANGE, False),
    "nll_loss_forward": _IndexRule(IndexError, "Target {value} is out of bounds.", False),
    "nll_loss2d_forward": _IndexRule(IndexError, "Target {value} is out of bounds.", False),
    "max_unpool2d": _IndexRule(RuntimeError, "Found an invalid max index: {value} (output volumes are of size "
                                             "{shape})", False),
    "max_unpool3d": _IndexRule(RuntimeError, "Found an invalid max index: {value} (output volumes are of size "
                                             "{shape})", False),
}
# CPU's index_select takes a separate path along dimension 1, with its own error.
_INDEX_SELECT_DIM1 = _IndexRule(RuntimeError, "INDICES element is out of DATA bounds, id={value} axis_dim={size}",
                                False)
# Indices a decomposition built itself and promises in range (upsampling, ...): not checked, as in Inductor.
_UNCHECKED = {"_unsafe_index", "_unsafe_index_put", "_unsafe_masked_index", "_unsafe_masked_index_put_accumulate"}


def _packet(op) -> str:
    packet = getattr(op, "overloadpacket", None)
    return packet.__name__ if packet is not None else str(op)


def index_rule(facts, dim: int, rank: int) -> _IndexRule | None:
    """Eager's rule for indices along `dim` of the node `facts` describe (None: unchecked)."""
    for op in (facts.user_op, facts.target):
        name = _packet(op)
        if name in _UNCHECKED:
            return None
        if name == "index_select" and dim == 1 and rank >= 2:
            return _INDEX_SELECT_DIM1
        if name in _INDEX_RULES:
            return _INDEX_RULES[name]
    return _IndexRule(RuntimeError, _OUT_OF_BOUNDS, True)


# ---- emission ----------------------------------------------------------------------------------------
def first_failure(context, failed: Value, value: Value) -> Value:
    """[position, value] (int64) of the first true element of `failed` in row-major order, position -1
    when there is none: one variadic reduce keeping the smaller position."""
    count = math.prod(failed.shape)
    failed = context.reshape(failed, (count,))
    value = context.reshape(context.convert(value, torch.int64), (count,))
    none = context.constant(count, torch.int64, (count,))
    position = context.select(failed, context.iota((count,), 0, torch.int64), none)
    scalar = tensor_type((), torch.int64)
    compare = ('"stablehlo.compare"(%ap, %bp) {comparison_direction = #stablehlo<comparison_direction LE>, '
               f"compare_type = #stablehlo<comparison_type SIGNED>}} : ({scalar}, {scalar}) -> tensor<i1>")
    region = "\n".join([
        f"^bb0(%ap: {scalar}, %av: {scalar}, %bp: {scalar}, %bv: {scalar}):",
        f"  %a_first = {compare}",
        f'  %p = "stablehlo.select"(%a_first, %ap, %bp) : (tensor<i1>, {scalar}, {scalar}) -> {scalar}',
        f'  %v = "stablehlo.select"(%a_first, %av, %bv) : (tensor<i1>, {scalar}, {scalar}) -> {scalar}',
        f'  "stablehlo.return"(%p, %v) : ({scalar}, {scalar}) -> ()',
    ])
    first, offending = context.builder.op_multi(
        "stablehlo.reduce", [position, value, context.builder.constant(count, torch.int64),
                             context.builder.constant(0, torch.int64)],
        [((), torch.int64), ((), torch.int64)], "dimensions = array<i64: 0>", region)
    passed = context.compare(first, context.builder.constant(count, torch.int64), "EQ")
    first = context.select(passed, context.builder.constant(-1, torch.int64), first)
    return context.op("stablehlo.concatenate", [context.reshape(first, (1,)), context.reshape(offending, (1,))],
                      (2,), torch.int64, "dimension = 0 : i64")


def check_index_bounds(context, node, index: Value, size: int, dim: int, rank: int, **fields) -> None:
    """Adds the eager bounds check of `index` (any integer dtype and shape) against a dimension of `size`:
    [0, size), or [-size, size) where the op counts negative indices from the end."""
    rule = index_rule(context.facts, dim, rank)
    if rule is None or math.prod(index.shape) == 0:
        return
    index = context.convert(index, torch.int64)
    low = context.constant(-size if rule.negative_wraps else 0, torch.int64, index.shape)
    high = context.constant(size, torch.int64, index.shape)
    failed = context.op("stablehlo.or", [context.compare(index, low, "LT"), context.compare(index, high, "GE")],
                        index.shape, torch.bool)
    message = rule.message.replace("{dim}", str(dim)).replace("{size}", str(size))
    for name, text in fields.items():
        message = message.replace("{" + name + "}", str(text))
    check_condition(context, node, failed, index, rule.error, message)


def check_condition(context, node, failed: Value, value: Value, error: type, message: str) -> None:
    """Adds a check that raises `error(message)` after the call when any element of `failed` is true
    ({value} in `message`: the matching element of `value`, for the first failure)."""
    check = RuntimeCheck(str(context.facts.user_op), str(node.target), RAISE, error, message)
    context.add_check(check, first_failure(context, failed, value))


def equivalent(context, a: Value, b: Value) -> Value:
    """a and b compare equal under PyTorch's sort order: equal, or both NaN."""
    same = context.compare(a, b, "EQ")
    if not a.dtype.is_floating_point:
        return same
    both_nan = context.op("stablehlo.and", [context.compare(a, a, "NE"), context.compare(b, b, "NE")], a.shape,
                          torch.bool)
    return context.op("stablehlo.or", [same, both_nan], a.shape, torch.bool)


def check_unique(context, node, ordered: Value, dim: int, length: int, why: str) -> None:
    """Adds a check that the first `length` elements of `ordered` (sorted along `dim`) hold no two equal
    neighbours: when they do, the CPU kernel's algorithm decides the result and the call reruns eagerly."""
    if length < 2 or math.prod(ordered.shape) == 0:
        return
    starts, limits = [0] * ordered.rank, list(ordered.shape)
    limits[dim] = length - 1
    head = context.slice(ordered, starts, limits)
    starts[dim], limits[dim] = 1, length
    tail = context.slice(ordered, starts, limits)
    tied = equivalent(context, head, tail)
    check = RuntimeCheck(str(context.facts.user_op), str(node.target), RERUN_EAGERLY, message=why)
    context.add_check(check, first_failure(context, tied, context.constant(0, torch.int64, tied.shape)))
