"""Writes a StableHLO module as MLIR text, one SSA value at a time.

Every operation is emitted in MLIR's generic form (``"stablehlo.add"(%a, %b)
: (types) -> type``): one syntax for every op, and XLA's parser verifies it,
so a lowering mistake surfaces as a parse error naming the op, not as a wrong
answer. Values carry their shape and dtype so lowerings can build types and
broadcasts without asking the FX graph again.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass

import torch

_ELEMENT_TYPES = {
    torch.float32: "f32", torch.float64: "f64", torch.float16: "f16", torch.bfloat16: "bf16",
    torch.int8: "i8", torch.int16: "i16", torch.int32: "i32", torch.int64: "i64", torch.uint8: "ui8",
    torch.uint16: "ui16", torch.uint32: "ui32", torch.uint64: "ui64", torch.bool: "i1",
    torch.complex64: "complex<f32>", torch.complex128: "complex<f64>",
    torch.float8_e4m3fn: "f8E4M3FN", torch.float8_e5m2: "f8E5M2",
}

# Bit patterns of non-finite values: MLIR float literals cannot spell them.
_FLOAT_BITS = {torch.float32: ("<f", "<I", 8), torch.float64: ("<d", "<Q", 16),
               torch.float16: ("<e", "<H", 4)}


class LoweringError(NotImplementedError):
    """A node this lowering cannot express; the partitioner runs it eagerly."""


def element_type(dtype: torch.dtype) -> str:
    try:
        return _ELEMENT_TYPES[dtype]
    except KeyError:
        raise LoweringError(f"dtype {dtype} has no StableHLO element type") from None


def tensor_type(shape, dtype: torch.dtype) -> str:
    dims = "".join(f"{int(d)}x" for d in shape)
    return f"tensor<{dims}{element_type(dtype)}>"


UNSIGNED_DTYPES = (torch.bool, torch.uint8, torch.uint16, torch.uint32, torch.uint64)


def comparison_type(dtype: torch.dtype) -> str:
    """The compare_type stablehlo.compare needs for `dtype` (XLA's verifier rejects a mismatch)."""
    if dtype.is_floating_point or dtype.is_complex:
        return "FLOAT"
    return "UNSIGNED" if dtype in UNSIGNED_DTYPES else "SIGNED"


def literal(value, dtype: torch.dtype) -> str:
    """One element of a dense<...> attribute in `dtype`."""
    if dtype == torch.bool:
        return "true" if value else "false"
    if dtype.is_complex:
        value = complex(value)
        return f"({literal(value.real, _real(dtype))}, {literal(value.imag, _real(dtype))})"
    if dtype.is_floating_point:
        value = float(value)
        if math.isfinite(value):
            return f"{value:.17e}"
        if dtype == torch.bfloat16:
            bits = struct.unpack("<I", struct.pack("<f", value))[0] >> 16
            return f"0x{bits:04X}"
        if dtype not in _FLOAT_BITS:
            raise LoweringError(f"non-finite constant in {dtype}")
        float_format, int_format, width = _FLOAT_BITS[dtype]
        bits = struct.unpack(int_format, struct.pack(float_format, value))[0]
        return f"0x{bits:0{width}X}"
    # A number outside the integer dtype's range wraps as PyTorch converts it (two's complement, modulo
    # 2**bits): clamp(uint8 tensor, min=-2) clamps at 254 in eager; the literal -2 made XLA refuse the module.
    width = torch.iinfo(dtype).bits
    value = int(value) % (1 << width)
    if dtype not in UNSIGNED_DTYPES and value >= 1 << (width - 1):
        value -= 1 << width
    return str(value)


def _real(dtype: torch.dtype) -> torch.dtype:
    return torch.float32 if dtype == torch.complex64 else torch.float64


@dataclass(frozen=True)
class Value:
    """An SSA value of the module being written."""

    name: str
    shape: tuple[int, ...]
    dtype: torch.dtype

    @property
    def type(self) -> str:
        return tensor_type(self.shape, self.dtype)

    @property
    def rank(self) -> int:
        return len(self.shape)


def i64_array(values) -> str:
    return "array<i64" + ("" if not values else ": " + ", ".join(str(int(v)) for v in values)) + ">"


def i64_dense(values, shape=None) -> str:
    values = [int(v) for v in values]
    shape = (len(values),) if shape is None else shape
    return f"dense<[{', '.join(map(str, values))}]> : {tensor_type(shape, torch.int64)}" if values else \
        f"dense<> : {tensor_type(shape, torch.int64)}"


class FunctionBuilder:
    """Accumulates the body of one func.func; `op` appends an operation."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self._count = 0

    def fresh(self) -> str:
        self._count += 1
        return f"%v{self._count}"

    def op(self, name: str, operands, shape, dtype, attributes: str = "", region: str = "") -> Value:
        """Emits `name(operands) {attributes}` producing one tensor of `shape`/`dtype`."""
        result = Value(self.fresh(), tuple(int(d) for d in shape), dtype)
        self.lines.append(self._format(result.name, name, operands, [result.type], attributes, region))
        return result

    def op_multi(self, name: str, operands, results, attributes: str = "", region: str = "") -> list[Value]:
        """Like `op`, for operations with several results ((shape, dtype) pairs)."""
        base = self.fresh()
        values = [Value(f"{base}#{i}", tuple(int(d) for d in s), t) for i, (s, t) in enumerate(results)]
        self.lines.append(self._format(f"{base}:{len(values)}", name, operands, [v.type for v in values],
                                       attributes, region))
        return values

    @staticmethod
    def _format(result: str, name: str, operands, result_types, attributes: str, region: str) -> str:
        names = ", ".join(v.name for v in operands)
        types = ", ".join(v.type for v in operands)
        region_text = f" ({{\n{region}\n}})" if region else ""
        attribute_text = f" {{{attributes}}}" if attributes else ""
        results = ", ".join(result_types)
        if len(result_types) != 1:
            results = f"({results})"
        return f'{result} = "{name}"({names}){region_text}{attribute_text} : ({types}) -> {results}'

    def constant(self, value, dtype: torch.dtype, shape=()) -> Value:
        """A splat constant of `shape`."""
        text = f"value = dense<{literal(value, dtype)}> : {tensor_type(shape, dtype)}"
        return self.op("stablehlo.constant", [], shape, dtype, text)

    def array_constant(self, values, shape, dtype: torch.dtype) -> Value:
        """A constant holding `values` (nested Python lists of `shape`, computed at lowering time — plain
        Python because lowerings may run under a FakeTensorMode, where torch tensors have no data)."""

        def nested(item):
            return "[" + ", ".join(nested(i) for i in item) + "]" if isinstance(item, list) else literal(item, dtype)

        text = f"value = dense<{nested(values)}> : {tensor_type(shape, dtype)}"
        return self.op("stablehlo.constant", [], shape, dtype, text)


def nan_propagating_region(kind: str, dtype: torch.dtype) -> str:
    """The body of a floating maximum / minimum reduction that returns NaN once either side is NaN, as
    PyTorch's do (XLA:CPU's own max/min return the other operand). Still commutative and associative, so
    XLA may reorder it; one pass over the data, where a separate any-NaN reduction took a second one."""
    scalar = tensor_type((), dtype)
    compare = ("{comparison_direction = #stablehlo<comparison_direction NE>, "
               "compare_type = #stablehlo<comparison_type FLOAT>}")
    return (f"^bb0(%lhs: {scalar}, %rhs: {scalar}):\n"
            f'  %m = "stablehlo.{kind}"(%lhs, %rhs) : ({scalar}, {scalar}) -> {scalar}\n'
            f'  %lhs_nan = "stablehlo.compare"(%lhs, %lhs) {compare} : ({scalar}, {scalar}) -> tensor<i1>\n'
            f'  %rhs_nan = "stablehlo.compare"(%rhs, %rhs) {compare} : ({scalar}, {scalar}) -> tensor<i1>\n'
            f'  %with_rhs = "stablehlo.select"(%rhs_nan, %rhs, %m) : (tensor<i1>, {scalar}, {scalar}) -> {scalar}\n'
            f'  %r = "stablehlo.select"(%lhs_nan, %lhs, %with_rhs) : (tensor<i1>, {scalar}, {scalar}) -> {scalar}\n'
            f'  "stablehlo.return"(%r) : ({scalar}) -> ()')


def scalar_region(kind: str, dtype: torch.dtype, count: int = 1) -> str:
    """The body of a reduce / scatter / select_and_scatter region combining with `kind`.

    `count` > 1 builds a variadic region (pairs of accumulators) — callers that
    need more than one accumulator write their region themselves.
    """
    scalar = tensor_type((), dtype)
    return (f"^bb0(%lhs: {scalar}, %rhs: {scalar}):\n"
            f'  %r = "stablehlo.{kind}"(%lhs, %rhs) : ({scalar}, {scalar}) -> {scalar}\n'
            f'  "stablehlo.return"(%r) : ({scalar}) -> ()')
