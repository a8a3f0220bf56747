"""Elementwise ops: unary math, binary arithmetic, comparisons, logic, where, clamp, casts.

Operands are converted to the op's computation dtype and broadcast to the
output shape explicitly (StableHLO has no implicit broadcasting).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.fx

from .builder import UNSIGNED_DTYPES, LoweringError, Value
from .context import LoweringContext
from .registry import lowers

aten = torch.ops.aten


def _compute_dtype(node, lhs, rhs) -> torch.dtype:
    """PyTorch's promoted dtype of two operands (what the computation runs in): a tensor promotes by its
    Value's shape and dtype, a number the graph wrote as a literal as a Python scalar."""
    promoted = []
    for given, operand in zip(node.args, (lhs, rhs)):
        if isinstance(operand, Value):
            promoted.append(torch.empty(operand.shape, dtype=operand.dtype, device="meta"))
        elif isinstance(given, torch.fx.Node):
            # A graph value that arrives as a number is a specialized symbolic size: its promotion as a
            # Python scalar is not what the traced graph promoted, so the node stays eager.
            raise LoweringError(f"{node.target}: symbolic size operand")
        else:
            promoted.append(operand)
    return torch.result_type(*promoted)


# Integers as wide as each float type: their sign bit is the float's.
_SAME_WIDTH_INTEGER = {torch.float32: torch.int32, torch.float64: torch.int64, torch.float16: torch.int16,
                       torch.bfloat16: torch.int16}


def _signbit(context, x):
    bits = _SAME_WIDTH_INTEGER.get(x.dtype)
    if bits is None:
        return context.compare(x, context.constant_like(0, x), "LT")
    as_int = context.op("stablehlo.bitcast_convert", [x], x.shape, bits)
    return context.compare(as_int, context.constant(0, bits, x.shape), "LT")


# ---- unary ------------------------------------------------------------------
# One function per op: (context, x as the node gave it, output shape, output dtype) -> Value.
def _plain(name):
    """`name` applied to x in the output dtype."""

    def lower(context, x, shape, dtype):
        if dtype.is_complex and name.startswith("chlo"):
            raise LoweringError(f"complex {name}")
        return context.op(name, [context.convert(x, dtype)], shape, dtype)

    return lower


def _rounding(name):
    """floor / ceil / round: integers are already whole."""
    plain = _plain(name)
    return lambda context, x, shape, dtype: \
        plain(context, x, shape, dtype) if x.dtype.is_floating_point else context.convert(x, dtype)


def _trunc(context, x, shape, dtype):
    if not x.dtype.is_floating_point:
        return context.convert(x, dtype)
    return _truncate(context, context.convert(x, dtype))


def _abs(context, x, shape, dtype):
    if x.dtype in UNSIGNED_DTYPES:
        return context.convert(x, dtype)  # stablehlo.abs takes no unsigned types; nothing to do for them
    if x.dtype.is_complex:
        return context.op("stablehlo.abs", [x], shape, dtype)  # |z| of a complex value is real
    return _plain("stablehlo.abs")(context, x, shape, dtype)


def _sign(context, x, shape, dtype):
    if x.dtype in UNSIGNED_DTYPES:
        # stablehlo.sign takes signed integers and floats only; for these the sign is "nonzero".
        return context.convert(context.compare(x, context.constant_like(0, x), "NE"), dtype)
    return _plain("stablehlo.sign")(context, x, shape, dtype)


def _relu(context, x, shape, dtype):
    return context.op("stablehlo.maximum", [x, context.constant_like(0, x)], shape, dtype)


def _logical_not(context, x, shape, dtype):
    return context.convert(context.op("stablehlo.not", [context.convert(x, torch.bool)], shape, torch.bool), dtype)


def _bitwise_not(context, x, shape, dtype):
    if x.dtype == torch.bool:
        return context.op("stablehlo.not", [x], shape, dtype)
    return _plain("stablehlo.not")(context, x, shape, dtype)


def _isnan(context, x, shape, dtype):
    if not x.dtype.is_floating_point:
        return context.constant(False, torch.bool, shape)
    return context.compare(x, x, "NE")


def _isinf(context, x, shape, dtype):
    if not x.dtype.is_floating_point:
        return context.constant(False, torch.bool, shape)
    return context.compare(context.unary("stablehlo.abs", x), context.constant_like(math.inf, x), "EQ")


def _isfinite(context, x, shape, dtype):
    if not x.dtype.is_floating_point:
        return context.constant(True, torch.bool, shape)
    return context.op("stablehlo.is_finite", [x], shape, torch.bool)


def _signbit_op(context, x, shape, dtype):
    if x.dtype.is_floating_point and x.dtype not in _SAME_WIDTH_INTEGER:
        raise LoweringError(f"signbit of {x.dtype}")
    return _signbit(context, x)


def _reciprocal(context, x, shape, dtype):
    return context.div(1, context.convert(x, dtype))


def _square(context, x, shape, dtype):
    x = context.convert(x, dtype)
    return context.mul(x, x)


def _exp2(context, x, shape, dtype):
    return context.unary("stablehlo.exponential", context.mul(context.convert(x, dtype), math.log(2.0)))


def _log_base(base):
    return lambda context, x, shape, dtype: \
        context.div(context.unary("stablehlo.log", context.convert(x, dtype)), math.log(base))


def _digamma_op(context, x, shape, dtype):
    if dtype.is_complex:
        raise LoweringError("complex chlo.digamma")
    return _digamma(context, context.convert(x, dtype))


_UNARY = {
    aten.neg.default: _plain("stablehlo.negate"), aten.exp.default: _plain("stablehlo.exponential"),
    aten.log.default: _plain("stablehlo.log"), aten.tanh.default: _plain("stablehlo.tanh"),
    aten.sqrt.default: _plain("stablehlo.sqrt"), aten.rsqrt.default: _plain("stablehlo.rsqrt"),
    aten.sin.default: _plain("stablehlo.sine"), aten.cos.default: _plain("stablehlo.cosine"),
    aten.tan.default: _plain("stablehlo.tan"), aten.abs.default: _abs, aten.sign.default: _sign,
    aten.sgn.default: _sign, aten.floor.default: _rounding("stablehlo.floor"),
    aten.ceil.default: _rounding("stablehlo.ceil"), aten.round.default: _rounding("stablehlo.round_nearest_even"),
    aten.trunc.default: _trunc, aten.log1p.default: _plain("stablehlo.log_plus_one"),
    aten.expm1.default: _plain("stablehlo.exponential_minus_one"), aten.sigmoid.default: _plain("stablehlo.logistic"),
    aten.bitwise_not.default: _bitwise_not, aten.logical_not.default: _logical_not,
    aten.erf.default: _plain("chlo.erf"), aten.erfinv.default: _plain("chlo.erf_inv"),
    aten.erfc.default: _plain("chlo.erfc"), aten.asin.default: _plain("chlo.asin"),
    aten.acos.default: _plain("chlo.acos"), aten.atan.default: _plain("chlo.atan"),
    aten.sinh.default: _plain("chlo.sinh"), aten.cosh.default: _plain("chlo.cosh"),
    aten.asinh.default: _plain("chlo.asinh"), aten.acosh.default: _plain("chlo.acosh"),
    aten.atanh.default: _plain("chlo.atanh"), aten.lgamma.default: _plain("chlo.lgamma"),
    aten.digamma.default: _digamma_op, aten.reciprocal.default: _reciprocal, aten.isnan.default: _isnan,
    aten.isinf.default: _isinf, aten.isfinite.default: _isfinite, aten.signbit.default: _signbit_op,
    aten.relu.default: _relu, aten.exp2.default: _exp2, aten.log2.default: _log_base(2.0),
    aten.log10.default: _log_base(10.0), aten.square.default: _square,
}


@lowers(*_UNARY)
def _unary(context: LoweringContext, node, x, *rest, **kwargs):
    if rest or kwargs:
        raise LoweringError(f"{node.target}: unexpected arguments")
    shape, dtype = context.output_type()
    try:
        return _UNARY[node.target](context, x, shape, dtype)
    except LoweringError as error:
        raise LoweringError(f"{node.target}: {error}") from None


def _digamma(context, x):
    """chlo.digamma, with PyTorch's values at ±0 (the pole): -inf at +0, +inf at -0 (CHLO gives NaN)."""
    result = context.unary("chlo.digamma", x)
    at_zero = context.compare(x, context.constant_like(0, x), "EQ")
    pole = context.select(_signbit(context, x), context.constant_like(math.inf, x),
                          context.constant_like(-math.inf, x))
    return context.select(at_zero, pole, result)


@lowers(aten.gelu.default)
def _gelu(context, node, x, approximate: str = "none"):
    """x/2 * (1 + erf(x/√2)), or with tanh: x/2 * (1 + tanh(√(2/π) (x + 0.044715 x³)))."""
    if approximate == "tanh":
        inner = context.add(x, context.mul(0.044715, context.mul(x, context.mul(x, x))))
        curve = context.unary("stablehlo.tanh", context.mul(math.sqrt(2 / math.pi), inner))
    else:
        curve = context.unary("chlo.erf", context.mul(x, 1 / math.sqrt(2)))
    return context.mul(context.mul(0.5, x), context.add(1.0, curve))


# ---- binary -----------------------------------------------------------------
@dataclass(frozen=True)
class _Operands:
    """A binary op's operands: a, b converted to the computation dtype and broadcast to the output shape;
    lhs, rhs as the node gave them."""

    a: Value
    b: Value
    lhs: object
    rhs: object
    rounding_mode: str | None


# One function per op: (context, operands) -> Value in the computation dtype.
def _plain_binary(name):
    return lambda context, o: context.binary(name, o.a, o.b)


def _extreme(kind):
    """maximum / minimum: NaN where either operand is (context.extreme)."""
    return lambda context, o: context.extreme(kind, o.a, o.b)


def _power(context, o):
    if not o.a.dtype.is_floating_point and not o.a.dtype.is_complex:
        raise LoweringError("integer pow")  # PyTorch's integer pow semantics (negative exponents) differ
    return context.binary("stablehlo.power", o.a, o.b)


def _multiply(context, o):
    result = context.mul(o.a, o.b)
    result = _keep_nan_of_false_operands(context, "stablehlo.multiply", o.lhs, o.b, result)
    return _keep_nan_of_false_operands(context, "stablehlo.multiply", o.rhs, o.a, result)


def _divide(context, o):
    return _keep_nan_of_false_operands(context, "stablehlo.divide", o.lhs, o.b, context.div(o.a, o.b))


def _divide_rounding(context, o):
    """div with rounding_mode: None (true division), "trunc" or "floor"."""
    if o.rounding_mode is None:
        return _divide(context, o)
    if o.rounding_mode == "floor":
        return _floor_divide(context, o)
    quotient = context.div(o.a, o.b)
    return _truncate(context, quotient) if quotient.dtype.is_floating_point else quotient


def _truncate(context, x):
    floor, ceil = context.unary("stablehlo.floor", x), context.unary("stablehlo.ceil", x)
    return context.select(context.compare(x, context.constant_like(0, x), "LT"), ceil, floor)


def _nan_ignoring(name):
    """fmax / fmin: the other operand where one is NaN."""

    def lower(context, o):
        a_nan, b_nan = context.compare(o.a, o.a, "NE"), context.compare(o.b, o.b, "NE")
        return context.select(a_nan, o.b, context.select(b_nan, o.a, context.binary(name, o.a, o.b)))

    return lower


def _hypot(context, o):
    return context.unary("stablehlo.sqrt", context.add(context.mul(o.a, o.a), context.mul(o.b, o.b)))


def _copysign(context, o):
    magnitude = context.unary("stablehlo.abs", o.a)
    return context.select(_signbit(context, o.b), context.unary("stablehlo.negate", magnitude), magnitude)


def _remainder(context, o):
    """a - b * floor(a / b), computed as fmod plus a sign fix (PyTorch's remainder)."""
    a, b = o.a, o.b
    remainder = context.binary("stablehlo.remainder", a, b)
    zero = context.constant_like(0, a)
    nonzero = context.compare(remainder, zero, "NE")
    signs_differ = context.compare(context.compare(remainder, zero, "LT"), context.compare(b, zero, "LT"), "NE")
    fix = context.op("stablehlo.and", [nonzero, signs_differ], a.shape, torch.bool)
    return context.select(fix, context.add(remainder, b), remainder)


def _floor_divide(context, o):
    a, b = o.a, o.b
    if a.dtype.is_floating_point:
        exact = context.div(context.sub(a, _remainder(context, o)), b)
        # (a - mod(a, b)) / b is an integer up to rounding: round it like PyTorch's div_floor.
        return context.unary("stablehlo.round_nearest_even", exact)
    quotient = context.div(a, b)
    zero = context.constant_like(0, a)
    inexact = context.compare(context.binary("stablehlo.remainder", a, b), zero, "NE")
    signs_differ = context.compare(context.compare(a, zero, "LT"), context.compare(b, zero, "LT"), "NE")
    adjust = context.op("stablehlo.and", [inexact, signs_differ], a.shape, torch.bool)
    return context.select(adjust, context.sub(quotient, 1), quotient)


_BINARY = {
    aten.add.Tensor: _plain_binary("stablehlo.add"), aten.add.Scalar: _plain_binary("stablehlo.add"),
    aten.sub.Tensor: _plain_binary("stablehlo.subtract"), aten.sub.Scalar: _plain_binary("stablehlo.subtract"),
    aten.rsub.Scalar: _plain_binary("stablehlo.subtract"), aten.rsub.Tensor: _plain_binary("stablehlo.subtract"),
    aten.mul.Tensor: _multiply, aten.mul.Scalar: _multiply, aten.div.Tensor: _divide, aten.div.Scalar: _divide,
    aten.div.Tensor_mode: _divide_rounding, aten.div.Scalar_mode: _divide_rounding,
    aten.maximum.default: _extreme("maximum"), aten.minimum.default: _extreme("minimum"),
    aten.pow.Tensor_Tensor: _power, aten.pow.Tensor_Scalar: _power, aten.pow.Scalar: _power,
    aten.atan2.default: _plain_binary("stablehlo.atan2"),
    aten.bitwise_and.Tensor: _plain_binary("stablehlo.and"), aten.bitwise_and.Scalar: _plain_binary("stablehlo.and"),
    aten.bitwise_or.Tensor: _plain_binary("stablehlo.or"), aten.bitwise_or.Scalar: _plain_binary("stablehlo.or"),
    aten.bitwise_xor.Tensor: _plain_binary("stablehlo.xor"), aten.bitwise_xor.Scalar: _plain_binary("stablehlo.xor"),
    aten.logical_and.default: _plain_binary("stablehlo.and"), aten.logical_or.default: _plain_binary("stablehlo.or"),
    aten.logical_xor.default: _plain_binary("stablehlo.xor"),
    aten.fmod.Tensor: _plain_binary("stablehlo.remainder"), aten.fmod.Scalar: _plain_binary("stablehlo.remainder"),
    aten.remainder.Tensor: _remainder, aten.remainder.Scalar: _remainder,
    aten.bitwise_left_shift.Tensor: _plain_binary("stablehlo.shift_left"),
    aten.bitwise_right_shift.Tensor: _plain_binary("stablehlo.shift_right_arithmetic"),
    aten.fmax.default: _nan_ignoring("stablehlo.maximum"), aten.fmin.default: _nan_ignoring("stablehlo.minimum"),
    aten.hypot.default: _hypot, aten.copysign.Tensor: _copysign,
    aten.nextafter.default: _plain_binary("chlo.next_after"), aten.floor_divide.default: _floor_divide,
}

_LOGICAL = (aten.logical_and.default, aten.logical_or.default, aten.logical_xor.default)
_TRUE_DIVISION = (aten.div.Tensor, aten.div.Scalar, aten.div.Tensor_mode, aten.div.Scalar_mode)
_DIVISIONS = _TRUE_DIVISION + (aten.floor_divide.default,)


@lowers(*_BINARY)
def _binary(context: LoweringContext, node, lhs, rhs, alpha=None, rounding_mode=None):
    shape, dtype = context.output_type()
    target = node.target
    if target in _LOGICAL:
        compute = torch.bool
    elif target in _TRUE_DIVISION and rounding_mode is None:
        compute = dtype
    else:
        compute = _compute_dtype(node, lhs, rhs) if not dtype.is_floating_point or dtype.is_complex else dtype
        if not dtype.is_complex and compute.is_floating_point != dtype.is_floating_point:
            compute = dtype
    a = context.operand(lhs, compute, shape)
    if target in _DIVISIONS and isinstance(rhs, (bool, int, float, complex)):
        b = context.divisor(rhs, compute, shape)
    else:
        b = context.operand(rhs, compute, shape)
    if target in (aten.rsub.Scalar, aten.rsub.Tensor):
        a, b = b, a  # rsub is rhs - alpha * lhs: swapped before alpha scales b
    if alpha is not None and alpha != 1:
        b = context.mul(b, context.constant(alpha, compute, shape))
    return context.convert(_BINARY[target](context, _Operands(a, b, lhs, rhs, rounding_mode)), dtype)


def _keep_nan_of_false_operands(context, name, flag, other, result):
    """NaN where bool operand `flag` is False and IEEE arithmetic gives NaN: False * ±inf or NaN, False / 0 or NaN.

    XLA's simplifier turns convert(bool) * y (and a division it rewrote as a product) into select(bool, y, 0),
    which gives 0 there; eager, like IEEE, gives NaN."""
    shape, compute = result.shape, result.dtype
    if getattr(flag, "dtype", None) != torch.bool or not compute.is_floating_point:
        return result
    false = context.op("stablehlo.not", [context.operand(flag, torch.bool, shape)], shape, torch.bool)
    is_nan = context.compare(other, other, "NE")
    if name == "stablehlo.multiply":
        bad = context.compare(context.unary("stablehlo.abs", other), context.constant_like(math.inf, other), "EQ")
    else:  # `flag` is the numerator
        bad = context.compare(other, context.constant_like(0, other), "EQ")
    nan_result = context.op("stablehlo.and", [false, context.op("stablehlo.or", [bad, is_nan], shape, torch.bool)],
                            shape, torch.bool)
    return context.select(nan_result, context.constant_like(math.nan, result), result)


# ---- comparisons ------------------------------------------------------------
_COMPARISONS = {
    aten.eq: "EQ", aten.ne: "NE", aten.lt: "LT", aten.le: "LE", aten.gt: "GT", aten.ge: "GE",
}


def _comparison(context, node, lhs, rhs):
    shape, dtype = context.output_type()
    direction = _COMPARISONS[node.target.overloadpacket]
    compute = _compute_dtype(node, lhs, rhs)
    return context.compare(context.operand(lhs, compute, shape), context.operand(rhs, compute, shape), direction)


for _packet in _COMPARISONS:
    lowers(_packet.Tensor, _packet.Scalar)(_comparison)


# ---- selection, clamping, casts ---------------------------------------------
@lowers(aten.where.self)
def _where(context, node, condition, on_true, on_false):
    shape, dtype = context.output_type()
    return context.select(context.operand(condition, torch.bool, shape), context.operand(on_true, dtype, shape),
                          context.operand(on_false, dtype, shape))


@lowers(aten.clamp.default, aten.clamp.Tensor, aten.clamp_min.default, aten.clamp_max.default)
def _clamp(context, node, x, low=None, high=None):
    shape, dtype = context.output_type()
    if node.target == aten.clamp_max.default:
        low, high = None, low
    result = context.convert(x, dtype)
    if low is not None:
        result = context.extreme("maximum", result, context.operand(low, dtype, shape))
    if high is not None:
        result = context.extreme("minimum", result, context.operand(high, dtype, shape))
    return result


@lowers(aten._to_copy.default)
def _to_copy(context, node, x, dtype=None, layout=None, device=None, pin_memory=None, non_blocking=False,
             memory_format=None):
    meta = context.output_tensor()
    # The output may be a meta-device stand-in (trial lowering): judge the device argument itself.
    if device is not None and torch.device(device).type != "axon":
        raise LoweringError("_to_copy to another device")
    return context.convert(x, meta.dtype)


@lowers(aten.clone.default, aten.alias.default, aten.lift_fresh_copy.default, aten.detach.default,
        aten.positive.default)
def _identity(context, node, x, memory_format=None):
    return x


@lowers(aten.lerp.Scalar, aten.lerp.Tensor)
def _lerp(context, node, start, end, weight):
    shape, dtype = context.output_type()
    a, b = context.operand(start, dtype, shape), context.operand(end, dtype, shape)
    w = context.operand(weight, dtype, shape)
    difference = context.op("stablehlo.subtract", [b, a], shape, dtype)
    return context.op("stablehlo.add", [a, context.op("stablehlo.multiply", [w, difference], shape, dtype)],
                      shape, dtype)


@lowers(aten.copy.default)
def _copy(context, node, destination, source, non_blocking=False):
    """Functional copy: the source converted to the destination's dtype and broadcast to its shape."""
    shape, dtype = context.output_type()
    return context.operand(source, dtype, shape)


# ---- activations with parameters ---------------------------------------------
@lowers(aten.elu.default)
def _elu(context, node, x, alpha=1.0, scale=1.0, input_scale=1.0):
    shape, dtype = context.output_type()
    x = context.convert(x, dtype)
    scaled_input = context.op("stablehlo.multiply", [x, context.constant(input_scale, dtype, shape)], shape, dtype)
    negative = context.op("stablehlo.multiply", [context.op("stablehlo.exponential_minus_one", [scaled_input], shape,
                                                            dtype),
                                                 context.constant(alpha * scale, dtype, shape)], shape, dtype)
    positive = context.op("stablehlo.multiply", [x, context.constant(scale, dtype, shape)], shape, dtype)
    return context.select(context.compare(x, context.constant(0, dtype, shape), "GT"), positive, negative)


@lowers(aten.hardtanh.default)
def _hardtanh(context, node, x, min_val=-1.0, max_val=1.0):
    shape, dtype = context.output_type()
    low = context.op("stablehlo.maximum", [context.convert(x, dtype), context.constant(min_val, dtype, shape)],
                     shape, dtype)
    return context.op("stablehlo.minimum", [low, context.constant(max_val, dtype, shape)], shape, dtype)


@lowers(aten.leaky_relu.default)
def _leaky_relu(context, node, x, negative_slope=0.01):
    shape, dtype = context.output_type()
    x = context.convert(x, dtype)
    sloped = context.op("stablehlo.multiply", [x, context.constant(negative_slope, dtype, shape)], shape, dtype)
    return context.select(context.compare(x, context.constant(0, dtype, shape), "GT"), x, sloped)


@lowers(aten.round.decimals)
def _round_decimals(context, node, x, *, decimals=0):
    """PyTorch's rule: scale by 10^|decimals| (divide for negative decimals), round half to even, undo."""
    shape, dtype = context.output_type()
    if not dtype.is_floating_point:
        raise LoweringError("round with decimals on integers")
    x = context.convert(x, dtype)
    power = context.constant(10.0 ** abs(decimals), dtype, shape)
    scale, unscale = ("stablehlo.divide", "stablehlo.multiply") if decimals < 0 else \
        ("stablehlo.multiply", "stablehlo.divide")
    rounded = context.op("stablehlo.round_nearest_even", [context.op(scale, [x, power], shape, dtype)], shape, dtype)
    return context.op(unscale, [rounded, power], shape, dtype)


# ---- special functions CHLO provides -------------------------------------------
@lowers(aten.polygamma.default)
def _polygamma(context, node, n, x):
    shape, dtype = context.output_type()
    if not dtype.is_floating_point:
        raise LoweringError(f"polygamma in {dtype}")
    if n != 0:
        # chlo.polygamma returns inf at the poles where PyTorch's series returns large finite values.
        raise LoweringError("polygamma of order >= 1")
    return _digamma(context, context.operand(x, dtype, shape))


@lowers(aten.special_zeta.default, aten.special_zeta.self_scalar, aten.special_zeta.other_scalar)
def _zeta(context, node, x, q):
    shape, dtype = context.output_type()
    if not dtype.is_floating_point:
        raise LoweringError(f"zeta in {dtype}")
    q = context.operand(q, dtype, shape)
    result = context.op("chlo.zeta", [context.operand(x, dtype, shape), q], shape, dtype)
    # PyTorch (Cephes) returns +inf where q is a non-positive integer (a pole of every term); CHLO gives NaN.
    integral = context.compare(context.op("stablehlo.floor", [q], shape, dtype), q, "EQ")
    nonpositive = context.compare(q, context.constant(0, dtype, shape), "LE")
    pole = context.op("stablehlo.and", [integral, nonpositive], shape, torch.bool)
    return context.select(pole, context.constant(math.inf, dtype, shape), result)


@lowers(aten.special_i1e.default)
def _i1e(context, node, x):
    shape, dtype = context.output_type()
    if not dtype.is_floating_point:
        raise LoweringError(f"i1e in {dtype}")
    return context.op("chlo.bessel_i1e", [context.operand(x, dtype, shape)], shape, dtype)


@lowers(aten.ldexp.Tensor)
def _ldexp(context, node, x, exponent):
    """x * 2**exponent, in the output dtype (as PyTorch's composite computes it)."""
    shape, dtype = context.output_type()
    if not (dtype.is_floating_point or dtype.is_complex):
        raise LoweringError(f"ldexp in {dtype}")
    power = context.binary("stablehlo.power", 2.0, context.operand(exponent, dtype, shape))
    return context.mul(context.operand(x, dtype, shape), power)


@lowers(aten.angle.default)
def _angle(context, node, x):
    shape, dtype = context.output_type()
    if x.dtype.is_complex:
        real = context.op("stablehlo.real", [x], shape, dtype)
        imag = context.op("stablehlo.imag", [x], shape, dtype)
        return context.op("stablehlo.atan2", [imag, real], shape, dtype)
    x = context.convert(x, dtype)
    negative = context.compare(x, context.constant(0, dtype, shape), "LT")
    result = context.select(negative, context.constant(math.pi, dtype, shape), context.constant(0, dtype, shape))
    return context.select(context.compare(x, x, "NE"), x, result)  # NaN stays NaN


@lowers(aten.polar.default)
def _polar(context, node, magnitude, angle):
    shape, dtype = context.output_type()
    part = torch.float32 if dtype == torch.complex64 else torch.float64
    magnitude, angle = context.operand(magnitude, part, shape), context.operand(angle, part, shape)
    real = context.op("stablehlo.multiply", [magnitude, context.op("stablehlo.cosine", [angle], shape, part)], shape,
                      part)
    imag = context.op("stablehlo.multiply", [magnitude, context.op("stablehlo.sine", [angle], shape, part)], shape,
                      part)
    return context.op("stablehlo.complex", [real, imag], shape, dtype)
