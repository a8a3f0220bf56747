"""Helpers every lowering shares: dtype conversion, broadcasting, scalars.

`LoweringContext` wraps the function being written (`FunctionBuilder`) and
holds what the caller knows about the node being lowered (`facts`, set by
`call`: its output's fake value, ...), so lowerings stay one short function
per op and never read FX metadata. It also collects the run-time checks
lowerings add (checks.py), and offers arithmetic on Values of one shape.
"""

from __future__ import annotations

import math

import torch

from .builder import FunctionBuilder, LoweringError, Value, comparison_type, i64_array


def _arithmetic(name: str):
    """A LoweringContext method applying the binary op `name` (see LoweringContext.binary)."""

    def apply(self, a, b) -> Value:
        return self.binary(name, a, b)

    apply.__doc__ = f"{name} of a and b (Values of one shape and dtype, or a Value and a Python number)."
    return apply


class LoweringContext:
    def __init__(self, builder: FunctionBuilder) -> None:
        self.builder = builder
        self.checks: list = []      # (RuntimeCheck, [position, value] int64 Value), in graph order
        self.facts = None           # node_metadata.NodeFacts of the node being lowered, during `call`

    def call(self, lowering, node, facts, args, kwargs):
        """Runs `lowering` for `node`; meanwhile `facts` (what the caller read about the node) are
        this context's, so the lowering gets its output's shape and dtype from here, not from the node."""
        self.facts = facts
        try:
            return lowering(self, node, *args, **kwargs)
        finally:
            self.facts = None

    def add_check(self, check, row: Value) -> None:
        """Returns `row` ([position, value]; position -1: passed) from the executable for `check`."""
        self.checks.append((check, row))

    # ---- the node's output (concrete shapes) -------------------------------
    @property
    def output(self):
        """The fake value the node produces: a tensor, or a tuple of them (None for an absent one)."""
        return self.facts.output

    def output_tensor(self) -> torch.Tensor:
        if isinstance(self.output, torch.Tensor):
            return self.output
        raise LoweringError(f"{self.facts.target}: output is not a single tensor")

    def output_type(self) -> tuple[tuple[int, ...], torch.dtype]:
        """(shape, dtype) of the node's single tensor output."""
        tensor = self.output_tensor()
        return self.shape_of(tensor), tensor.dtype

    @staticmethod
    def shape_of(tensor: torch.Tensor) -> tuple[int, ...]:
        return tuple(int(d) for d in tensor.shape)

    # ---- emission -----------------------------------------------------------
    def op(self, name, operands, shape, dtype, attributes: str = "", region: str = "") -> Value:
        return self.builder.op(name, operands, shape, dtype, attributes, region)

    def constant(self, value, dtype: torch.dtype, shape=()) -> Value:
        scalar = self.builder.constant(value, dtype)
        return scalar if tuple(shape) == () else self.broadcast(scalar, shape)

    def convert(self, value: Value, dtype: torch.dtype) -> Value:
        if value.dtype == dtype:
            return value
        if dtype.is_complex or value.dtype.is_complex:
            if value.dtype.is_complex and not dtype.is_complex:
                raise LoweringError("complex to real conversion")
            real_type = torch.float32 if dtype == torch.complex64 else torch.float64
            real = self.convert(value, real_type)
            zero = self.constant(0.0, real_type, value.shape)
            return self.op("stablehlo.complex", [real, zero], value.shape, dtype)
        if value.dtype == torch.bool:
            # convert(i1 -> float) is 0/1 as PyTorch expects.
            return self.op("stablehlo.convert", [value], value.shape, dtype)
        if dtype == torch.bool:
            zero = self.constant(0, value.dtype, value.shape)
            return self.compare(value, zero, "NE")
        return self.op("stablehlo.convert", [value], value.shape, dtype)

    # ---- arithmetic on Values of one shape and dtype ----------------------------------------------
    # A Python number among the operands becomes a constant like the Value operand: mul(0.5, x) is
    # x * 0.5 in x's dtype and shape. Formulas then read as formulas, not as nested op calls.
    def constant_like(self, value, like: Value) -> Value:
        return self.constant(value, like.dtype, like.shape)

    def unary(self, name: str, x: Value) -> Value:
        return self.op(name, [x], x.shape, x.dtype)

    def binary(self, name: str, a, b) -> Value:
        like = a if isinstance(a, Value) else b
        if not isinstance(like, Value):
            raise LoweringError(f"{name} of two numbers")
        a, b = (v if isinstance(v, Value) else self.constant_like(v, like) for v in (a, b))
        return self.op(name, [a, b], like.shape, like.dtype)

    add = _arithmetic("stablehlo.add")
    sub = _arithmetic("stablehlo.subtract")
    mul = _arithmetic("stablehlo.multiply")

    def div(self, a, b) -> Value:
        """a / b (Values of one shape and dtype, or a Value and a Python number), an IEEE division also when
        the divisor is a number: see `divisor`."""
        if isinstance(a, Value) and not isinstance(b, Value):
            b = self.divisor(b, a.dtype, a.shape)
        return self.binary("stablehlo.divide", a, b)

    def divisor(self, value, dtype: torch.dtype, shape=()) -> Value:
        """The number `value` as a divisor. XLA rewrites a division by a constant as a product with its
        reciprocal, which rounds differently from eager's division (x / 1.7 differs in a third of float32
        elements, and trunc(x / 1.7) by one in some); an optimization barrier hides the constant. Powers of
        two keep a plain constant: their reciprocal is exact."""
        constant = self.builder.constant(value, dtype)
        if _power_of_two(value) or not (dtype.is_floating_point or dtype.is_complex):
            return self.broadcast(constant, shape)
        hidden = self.op("stablehlo.optimization_barrier", [constant], (), dtype)
        return self.broadcast(hidden, shape)
    maximum = _arithmetic("stablehlo.maximum")
    minimum = _arithmetic("stablehlo.minimum")

    def clip(self, x: Value, low, high) -> Value:
        return self.minimum(self.maximum(x, low), high)

    def broadcast(self, value: Value, shape) -> Value:
        """NumPy-style broadcast of `value` to `shape` (trailing dimensions aligned)."""
        shape = tuple(int(d) for d in shape)
        if value.shape == shape:
            return value
        offset = len(shape) - value.rank
        if offset < 0:
            raise LoweringError(f"cannot broadcast {value.shape} to {shape}")
        dims = list(range(offset, len(shape)))
        return self.op("stablehlo.broadcast_in_dim", [value], shape, value.dtype,
                       f"broadcast_dimensions = {i64_array(dims)}")

    def broadcast_in_dim(self, value: Value, shape, dims) -> Value:
        return self.op("stablehlo.broadcast_in_dim", [value], shape, value.dtype,
                       f"broadcast_dimensions = {i64_array(dims)}")

    def operand(self, argument, dtype: torch.dtype, shape=None) -> Value:
        """A node argument (Value or Python number) as a `dtype` value, broadcast to `shape`."""
        if isinstance(argument, Value):
            value = self.convert(argument, dtype)
        elif isinstance(argument, (bool, int, float, complex)):
            value = self.builder.constant(argument, dtype)
        else:
            raise LoweringError(f"unsupported operand {argument!r}")
        return value if shape is None else self.broadcast(value, shape)

    def reshape(self, value: Value, shape) -> Value:
        shape = tuple(int(d) for d in shape)
        if value.shape == shape:
            return value
        return self.op("stablehlo.reshape", [value], shape, value.dtype)

    def transpose(self, value: Value, permutation) -> Value:
        permutation = [int(p) for p in permutation]
        if permutation == list(range(value.rank)):
            return value
        shape = [value.shape[p] for p in permutation]
        return self.op("stablehlo.transpose", [value], shape, value.dtype,
                       f"permutation = {i64_array(permutation)}")

    def compare(self, lhs: Value, rhs: Value, direction: str) -> Value:
        kind = comparison_type(lhs.dtype)
        attributes = (f"comparison_direction = #stablehlo<comparison_direction {direction}>, "
                      f"compare_type = #stablehlo<comparison_type {kind}>")
        return self.op("stablehlo.compare", [lhs, rhs], lhs.shape, torch.bool, attributes)

    def select(self, predicate: Value, on_true: Value, on_false: Value) -> Value:
        return self.op("stablehlo.select", [predicate, on_true, on_false], on_true.shape, on_true.dtype)

    def slice(self, value: Value, starts, limits, strides=None) -> Value:
        strides = strides or [1] * value.rank
        shape = [max(0, -(-(int(hi) - int(lo)) // int(st))) for lo, hi, st in zip(starts, limits, strides)]
        return self.op("stablehlo.slice", [value], shape, value.dtype,
                       f"start_indices = {i64_array(starts)}, limit_indices = {i64_array(limits)}, "
                       f"strides = {i64_array(strides)}")

    def iota(self, shape, dimension: int, dtype: torch.dtype) -> Value:
        return self.op("stablehlo.iota", [], shape, dtype, f"iota_dimension = {int(dimension)} : i64")

    def reduce(self, value: Value, init, dims, kind: str, out_dtype: torch.dtype | None = None) -> Value:
        """Reduces `dims` of `value` with the binary stablehlo op `kind` (add, maximum, ...). A floating
        maximum or minimum is NaN where any reduced element is, as PyTorch's (see `extreme`)."""
        from .builder import nan_propagating_region, scalar_region

        dtype = out_dtype or value.dtype
        value = self.convert(value, dtype)
        dims = sorted({d % value.rank for d in dims}) if value.rank else []
        init_value = self.builder.constant(init, dtype)
        shape = [s for i, s in enumerate(value.shape) if i not in dims]
        nan_propagating = kind in ("maximum", "minimum") and dtype.is_floating_point
        region = nan_propagating_region(kind, dtype) if nan_propagating else scalar_region(kind, dtype)
        return self.op("stablehlo.reduce", [value, init_value], shape, dtype, f"dimensions = {i64_array(dims)}",
                       region)

    def extreme(self, kind: str, a: Value, b: Value) -> Value:
        """Elementwise maximum or minimum of two Values of one shape and dtype, NaN where either is.
        XLA:CPU's own max/min return the other operand when the second one is NaN (its fast min/max);
        PyTorch's propagate the NaN, and so a NaN in a loss would vanish from the compiled one."""
        result = self.op(f"stablehlo.{kind}", [a, b], a.shape, a.dtype)
        if not a.dtype.is_floating_point:
            return result
        result = self.select(self.compare(b, b, "NE"), b, result)
        return self.select(self.compare(a, a, "NE"), a, result)


def _power_of_two(value) -> bool:
    if isinstance(value, complex) or not math.isfinite(float(value)) or value == 0:
        return False
    return math.frexp(abs(float(value)))[0] == 0.5


def normalize_dim(dim: int, rank: int) -> int:
    rank = max(rank, 1)
    if not -rank <= dim < rank:
        raise LoweringError(f"dimension {dim} out of range for rank {rank}")
    return dim % rank
