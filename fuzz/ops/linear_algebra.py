"""Matrix products (mm, bmm, matmul with broadcasting, addmm, einsum, linear, dot), convolution, pooling,
nearest resizing."""

from __future__ import annotations

import torch

from ..proposal import Proposal
from .common import fresh, largest


def _second(g, a: str, shape) -> str:
    dtype = g.value(a).dtype if g.rng.random() < 0.9 else g.random_dtype()
    return g.require(shape, g.devices[a], dtype)


def matmul(g):
    a = g.pick(pred=lambda _, t: 1 <= t.dim() <= 3 and t.dtype != torch.bool)
    if a is None:
        return None
    shape = tuple(g.value(a).shape)
    k, n = shape[-1], g.rng.randint(1, 5)
    name = fresh(g)
    device = g.devices[a]
    if len(shape) == 1:
        b = _second(g, a, (k,) if g.rng.random() < 0.5 else (k, n))
        form = "torch.dot({a}, {b})" if g.value(b).dim() == 1 and g.rng.random() < 0.5 else "{a} @ {b}"
        c = None
    elif len(shape) == 2 and g.rng.random() < 0.25:
        b = _second(g, a, (k, n))
        c = g.require((shape[0], n) if g.rng.random() < 0.5 else (n,), device, g.value(a).dtype)
        form = "torch.addmm({c}, {a}, {b}, beta=2)" if g.rng.random() < 0.5 else "torch.addmm({c}, {a}, {b})"
    elif len(shape) == 2:
        b = _second(g, a, (k, n))
        c = None
        form = g.rng.choice(("torch.mm({a}, {b})", "{a} @ {b}", "torch.matmul({a}, {b})",
                             "torch.einsum('ij,jk->ik', {a}, {b})"))
        if g.rng.random() < 0.2:
            b = _second(g, a, (n, k))
            form = "torch.nn.functional.linear({a}, {b})"
    else:
        batched = g.rng.random() < 0.6
        b = _second(g, a, (shape[0], k, n) if batched else (k, n))
        c = None
        form = g.rng.choice(("torch.bmm({a}, {b})", "{a} @ {b}")) if batched else "torch.matmul({a}, {b})"
    code = f"{name} = {form.format(a=a, b=b, c=c)}"
    reads = (a, b) if c is None else (c, a, b)

    def bound(values, a=a, b=b, c=c, k=k):
        return k * largest(values[a]) * largest(values[b]) + (2 * largest(values[c]) if c else 0)
    return Proposal(code, "matmul", {name: device}, reads=reads, bound=bound)


def convolution(g):
    dtype = g.rng.choice((torch.float32, torch.float32, torch.float64, torch.bfloat16))
    batch, channels, height, width = g.rng.randint(1, 2), g.rng.randint(1, 3), g.rng.randint(3, 6), g.rng.randint(3, 6)
    device = 0 if g.rng.random() < 0.8 else 1
    x = g.require((batch, channels, height, width), device, dtype)
    if g.rng.random() < 0.5:
        layout = fresh(g)
        g.attempt(Proposal(f"{layout} = {x}.contiguous(memory_format=torch.channels_last)", "channels_last",
                           {layout: device}, reads=(x,)))
        if layout in g.shadow:
            x = layout
    out_channels, kernel = g.rng.randint(1, 3), g.rng.choice((1, 2, 3))
    w = g.create((out_channels, channels, kernel, kernel), dtype, device)
    name = fresh(g)
    options = g.rng.choice(("", ", padding=1", ", stride=2", ", padding=1, stride=2"))
    code = f"{name} = torch.nn.functional.conv2d({x}, {w}{options})"

    def bound(values, x=x, w=w):
        return channels * kernel * kernel * largest(values[x]) * largest(values[w])
    return Proposal(code, "conv2d", {name: device}, reads=(x, w), bound=bound)


def _window(g, height: int, width: int, dilated: bool) -> str:
    """Pooling arguments the CPU accepts for a height x width plane: a kernel that fits, a stride (sometimes
    omitted), padding up to half the kernel, sometimes dilation and ceil_mode."""
    kernel = min(g.rng.choice((2, 2, 3)), height, width)
    padding = g.rng.randint(0, kernel // 2)
    text = f"{kernel}"
    stride = g.rng.choice((None, 1, 2, 3))
    text += f", {stride}" if stride else f", {kernel}"
    text += f", {padding}"
    if dilated:
        dilation = 2 if g.rng.random() < 0.25 and (kernel - 1) * 2 + 1 <= min(height, width) + 2 * padding else 1
        text += f", {dilation}"
    if g.rng.random() < 0.3:
        text += ", ceil_mode=True"
    return text


def pooling(g):
    x = g.pick(pred=lambda _, t: t.dim() in (3, 4) and t.is_floating_point() and min(t.shape[-2:]) >= 2)
    if x is None:
        return None
    name = fresh(g)
    height, width = g.value(x).shape[-2:]
    form, exact = g.rng.choice((("torch.nn.functional.max_pool2d({x}, {window})", True),
                                ("torch.nn.functional.avg_pool2d({x}, {window})", False),
                                ("torch.nn.functional.adaptive_avg_pool2d({x}, 1)", False)))
    window = _window(g, height, width, dilated="max_pool" in form)
    if "avg_pool2d" in form and g.rng.random() < 0.3:
        window += g.rng.choice((", count_include_pad=False", ", divisor_override=3"))
    label = form.split("(")[0].rsplit(".", 1)[-1]
    if label == "max_pool2d" and g.rng.random() < 0.3:
        indices = fresh(g)
        return Proposal(f"{name}, {indices} = torch.nn.functional.max_pool2d({x}, {window}, return_indices=True)",
                        label, {name: g.devices[x], indices: g.devices[x]}, reads=(x,))
    return Proposal(f"{name} = {form.format(x=x, window=window)}", label, {name: g.devices[x]}, reads=(x,),
                    exact=exact)


def resizing(g):
    """Nearest-neighbour resizing of a 4-D tensor (copies: exact)."""
    x = g.pick(pred=lambda _, t: t.dim() == 4 and t.is_floating_point())
    if x is None:
        return None
    mode = g.rng.choice(("nearest", "nearest-exact"))
    if g.rng.random() < 0.5:
        size = f"scale_factor={g.rng.choice((2, 3, 0.5, 1.5))}"
    else:
        size = f"size=({g.rng.randint(1, 9)}, {g.rng.randint(1, 9)})"
    name = fresh(g)
    return Proposal(f"{name} = torch.nn.functional.interpolate({x}, {size}, mode='{mode}')", "interpolate",
                    {name: g.devices[x]}, reads=(x,))


BUILDERS = ((5, matmul), (1, convolution), (1, pooling), (1, resizing))
