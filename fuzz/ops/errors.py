"""Statements the CPU rejects, to end a program with: axon must raise the same exception type, at the same
statement or (for errors found by a running kernel, labelled `data:`) by the next synchronization point."""

from __future__ import annotations

import torch

from ..proposal import Proposal
from .common import fresh


def _any(g, pred=None):
    return g.pick(pred=lambda name, t: g.devices[name] is not None and (pred is None or pred(t)))


def in_place_smaller_self(g):
    x = _any(g, lambda t: t.dim() >= 1)
    if x is None:
        return None
    shape = tuple(g.value(x).shape)
    y = g.require((g.rng.randint(2, 3),) + shape, g.devices[x], g.value(x).dtype)
    op = g.rng.choice(("add_", "mul_", "copy_", "sub_"))
    return Proposal(f"{x}.{op}({y})", "error.in_place_broadcast", reads=(x, y), writes=(x,), functional=False)


def shape_mismatch(g):
    x = _any(g, lambda t: t.dim() >= 1 and t.shape[-1] >= 2)
    if x is None:
        return None
    shape = list(g.value(x).shape)
    shape[-1] += 1
    y = g.require(tuple(shape), g.devices[x])
    name = fresh(g)
    form = g.rng.choice(("{x} + {y}", "torch.mul({x}, {y})", "torch.maximum({x}, {y})",
                         "torch.where({x} > 0, {x}, {y})"))
    return Proposal(f"{name} = {form.format(x=x, y=y)}", "error.broadcast", {name: g.devices[x]}, reads=(x, y))


def matmul_mismatch(g):
    x = _any(g, lambda t: t.dim() == 2 and t.dtype != torch.bool)
    if x is None:
        return None
    k = g.value(x).shape[1]
    y = g.require((k + 1, 2), g.devices[x], g.value(x).dtype)
    name = fresh(g)
    return Proposal(f"{name} = {x} @ {y}", "error.matmul_shape", {name: g.devices[x]}, reads=(x, y))


def out_dtype(g):
    x = _any(g, lambda t: t.is_floating_point())
    if x is None:
        return None
    device = g.devices[x]
    o = g.require(tuple(g.value(x).shape), device, torch.int64)
    return Proposal(f"torch.add({x}, {x}, out={o})", "error.out_dtype", reads=(x,), writes=(o,), functional=False)


def bad_view(g):
    x = _any(g, lambda t: t.dim() == 2 and t.shape[0] >= 2 and t.shape[1] >= 2)
    if x is None:
        return None
    name = fresh(g)
    form = g.rng.choice(("{x}.t().view(-1)", "{x}.view({n})", "{x}.reshape({n})", "{x}.select(1, {s})",
                         "{x}.narrow(0, 1, {s})", "{x}.expand(1)", "{x}.unfold(0, {s}, 1)", "{x}.permute(0)"))
    numel, size = g.value(x).numel(), g.value(x).shape[0] + g.value(x).shape[1]
    return Proposal(f"{name} = {form.format(x=x, n=numel + 1, s=size)}", "error.view", {name: g.devices[x]})


def index_out_of_range(g):
    x = _any(g, lambda t: t.dim() >= 1 and t.shape[0] >= 1)
    if x is None:
        return None
    size = g.value(x).shape[0]
    device = g.devices[x]
    index = g.index_tensor((2,), size + 3, device, low=size)
    name = fresh(g)
    form = g.rng.choice(("{x}[{i}]", "torch.index_select({x}, 0, {i})", "torch.take({x}, {i})",
                         "torch.nn.functional.embedding({i}, {x})"))
    return Proposal(f"{name} = {form.format(x=x, i=index)}", "error.data:index", {name: device}, reads=(x, index))


def divide_by_zero(g):
    x = _any(g, lambda t: t.dtype in (torch.int64, torch.int32) and t.numel() > 0)
    if x is None:
        return None
    name = fresh(g)
    form = g.rng.choice(("torch.floor_divide({x}, torch.zeros_like({x}))",
                         "torch.remainder({x}, torch.zeros_like({x}))",
                         "{x} // torch.zeros_like({x})"))
    return Proposal(f"{name} = {form.format(x=x)}", "error.data:divide_by_zero", {name: g.devices[x]}, reads=(x,))


def misc(g):
    x = _any(g)
    if x is None:
        return None
    tensor = g.value(x)
    device = g.devices[x]
    name = fresh(g)
    choices = [("{x}.expand(2, *{x}.shape).add_(1)", "error.internal_overlap", (x,), (x,)),
               ("torch.cat([{x}, {x}.unsqueeze(0)])", "error.cat_shape", (x,), ()),
               ("torch.stack([{x}, {x}.flatten()[:1]])", "error.stack_shape", (x,), ()),
               ("torch.sum({x}, dim={n})", "error.dim_range", (x,), ()),
               ("{x}.view(torch.complex128)", "error.view_dtype", (), ()),
               ("torch.mean({x}.to(torch.int64))", "error.mean_integer", (x,), ())]
    if tensor.numel() > 1:
        choices.append(("{x}.item()", "error.item_numel", (x,), ()))
    if tensor.dim() >= 1 and tensor.shape[0] >= 2:
        choices += [("torch.neg({x}[1:], out={x}[:-1])", "error.partial_overlap", (x,), (x,)),
                    ("{x}[1:].add_({x}[:-1])", "error.partial_overlap", (x,), (x,))]
    if tensor.dtype == torch.bool:
        choices.append(("{x} - {x}", "error.bool_sub", (x,), ()))
    form, label, reads, writes = g.rng.choice(choices)
    code = form.format(x=x, n=tensor.dim() + 1)
    if not writes:
        code = f"{name} = {code}"
    return Proposal(code, label, {} if writes else {name: device}, reads=reads, writes=writes, functional=False)


BUILDERS = ((2, in_place_smaller_self), (2, shape_mismatch), (1, matmul_mismatch), (1, out_dtype), (2, bad_view),
            (2, index_out_of_range), (1, divide_by_zero), (3, misc))
