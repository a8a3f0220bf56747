"""Elementwise operators: unary, binary (tensor or scalar operand), where, casts."""

from __future__ import annotations

from ..proposal import Proposal
from .common import fresh, mask, partner, scalar

# (label, template, exact on exact inputs, discontinuous: needs exact inputs)
UNARY = (
    ("neg", "torch.neg({x})", True, False), ("abs", "torch.abs({x})", True, False),
    ("abs", "{x}.abs()", True, False), ("square", "torch.square({x})", True, False),
    ("relu", "torch.relu({x})", True, False), ("clamp", "torch.clamp({x}, -2, 3)", True, False),
    ("clamp", "{x}.clamp(min=0)", True, False), ("sign", "torch.sign({x})", True, True),
    ("floor", "torch.floor({x})", True, True), ("ceil", "torch.ceil({x})", True, True),
    ("round", "torch.round({x})", True, True), ("trunc", "torch.trunc({x})", True, True),
    ("bitwise_not", "torch.bitwise_not({x})", True, True), ("logical_not", "torch.logical_not({x})", True, True),
    ("isnan", "torch.isnan({x})", True, False), ("conj_physical", "torch.conj_physical({x})", True, False),
    ("exp", "torch.exp({x})", False, False), ("sin", "torch.sin({x})", False, False),
    ("cos", "torch.cos({x})", False, False), ("tanh", "torch.tanh({x})", False, False),
    ("sigmoid", "torch.sigmoid({x})", False, False), ("sqrt", "torch.sqrt(torch.abs({x}))", False, False),
    ("log1p", "torch.log1p(torch.abs({x}))", False, False), ("reciprocal", "torch.reciprocal({x})", False, False),
    ("erf", "torch.erf({x})", False, False), ("atan", "torch.atan({x})", False, False),
    ("rsqrt", "torch.rsqrt(torch.abs({x}) + 1)", False, False), ("gelu", "torch.nn.functional.gelu({x})", False, False),
    ("silu", "torch.nn.functional.silu({x})", False, False), ("softmax", "torch.softmax({x}, dim=-1)", False, False),
    ("log_softmax", "torch.log_softmax({x}, dim=0)", False, False),
)

BINARY = (
    ("add", "{a} + {b}", True, False), ("add", "torch.add({a}, {b}, alpha=2)", True, False),
    ("sub", "{a} - {b}", True, False), ("mul", "{a} * {b}", True, False), ("mul", "torch.mul({a}, {b})", True, False),
    ("maximum", "torch.maximum({a}, {b})", True, False), ("minimum", "torch.minimum({a}, {b})", True, False),
    ("bitwise_and", "{a} & {b}", True, False), ("bitwise_or", "{a} | {b}", True, False),
    ("bitwise_xor", "{a} ^ {b}", True, False), ("eq", "{a} == {b}", True, True), ("ne", "{a} != {b}", True, True),
    ("lt", "{a} < {b}", True, True), ("le", "torch.le({a}, {b})", True, True), ("gt", "{a} > {b}", True, True),
    ("ge", "{a} >= {b}", True, True), ("logical_and", "torch.logical_and({a}, {b})", True, True),
    ("logical_or", "torch.logical_or({a}, {b})", True, True),
    ("logical_xor", "torch.logical_xor({a}, {b})", True, True),
    ("div", "{a} / {b}", False, False), ("atan2", "torch.atan2({a}, {b})", False, False),
    ("hypot", "torch.hypot({a}, {b})", False, False), ("logaddexp", "torch.logaddexp({a}, {b})", False, False),
    ("copysign", "torch.copysign({a}, {b})", True, True), ("lerp", "torch.lerp({a}, {b}, 0.5)", False, False),
)

# Scalar second operands: remainder and floor division only by non-zero constants.
SCALAR = (
    ("add", "{a} + {s}", True, False), ("mul", "{a} * {s}", True, False), ("sub", "{s} - {a}", True, False),
    ("pow", "{a} ** 2", True, False), ("remainder", "torch.remainder({a}, 3)", True, True),
    ("fmod", "torch.fmod({a}, -2)", True, True), ("floor_divide", "torch.floor_divide({a}, 2)", True, True),
    ("div", "torch.div({a}, 4, rounding_mode='trunc')", True, True), ("gt", "{a} > {s}", True, True),
    ("eq", "{a} == {s}", True, True), ("clamp", "torch.clamp({a}, min={s})", True, False),
    ("pow", "torch.pow({a}, 0.5)", False, False), ("rsub", "torch.rsub({a}, {s})", True, False),
    # 0-dim CPU tensors may meet device tensors (they act as scalars) and promote like them.
    ("add", "{a} + torch.tensor({s})", True, False),
    ("mul", "torch.mul({a}, torch.tensor({s}, dtype=torch.float64))", True, False),
    ("maximum", "torch.maximum({a}, torch.tensor(1, dtype={dtype}))", True, False),
    ("where", "torch.where({a} != 0, {a}, torch.tensor(-1.5))", True, False),
    ("clamp", "torch.clamp({a}, min=torch.tensor(-1), max=torch.tensor(2))", True, False),
)

CASTS = ("torch.float32", "torch.float64", "torch.bfloat16", "torch.float16", "torch.int64", "torch.int32",
         "torch.bool", "torch.complex64")


def unary(g):
    label, template, exact, discontinuous = g.rng.choice(UNARY)
    x = g.pick(exact=discontinuous or None)
    if x is None:
        return None
    name = fresh(g)
    exact = exact and not (label == "abs" and g.value(x).is_complex())
    return Proposal(f"{name} = {template.format(x=x)}", label, {name: g.devices[x]}, reads=(x,), exact=exact)


def binary(g):
    label, template, exact, discontinuous = g.rng.choice(BINARY)
    a = g.pick(exact=discontinuous or None)
    if a is None:
        return None
    b = partner(g, a)
    if discontinuous and not g.is_exact(b):
        return None
    if g.rng.random() < 0.5:
        a, b = b, a
    name = fresh(g)
    return Proposal(f"{name} = {template.format(a=a, b=b)}", label, {name: g.devices[a]}, reads=(a, b), exact=exact)


def with_scalar(g):
    label, template, exact, discontinuous = g.rng.choice(SCALAR)
    a = g.pick(exact=discontinuous or None)
    if a is None:
        return None
    name = fresh(g)
    code = f"{name} = {template.format(a=a, s=scalar(g, g.value(a).dtype), dtype=g.value(a).dtype)}"
    return Proposal(code, label, {name: g.devices[a]}, reads=(a,), exact=exact)


def where(g):
    a = g.pick()
    if a is None:
        return None
    b = partner(g, a)
    condition = mask(g, g.value(a).shape, g.devices[a])
    name = fresh(g)
    if g.rng.random() < 0.2:
        code = f"{name} = torch.where({condition}, {a}, {g.rng.choice(('0', '1.5', '-2'))})"
        return Proposal(code, "where", {name: g.devices[a]}, reads=(condition, a))
    return Proposal(f"{name} = torch.where({condition}, {a}, {b})", "where", {name: g.devices[a]},
                    reads=(condition, a, b))


def cast(g):
    target = g.rng.choice(CASTS)
    to_integer = target in ("torch.int64", "torch.int32", "torch.bool")
    x = g.pick(exact=to_integer or None)
    if x is None:
        return None
    name = fresh(g)
    form = g.rng.choice(("{x}.to({t})", "{x}.type({t})")) if g.rng.random() < 0.3 else "{x}.to({t})"
    return Proposal(f"{name} = {form.format(x=x, t=target)}", "cast", {name: g.devices[x]}, reads=(x,))


BUILDERS = ((6, unary), (8, binary), (4, with_scalar), (2, where), (3, cast))
