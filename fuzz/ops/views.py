"""Views (slicing, transpose, permute, expand, unfold, view/reshape, narrow, select, diagonal, unbind, split,
dtype and complex views; no as_strided) and layout copies (contiguous, clone, channels_last)."""

from __future__ import annotations

import math

from ..proposal import Proposal
from .common import dim, fresh

# Views with more elements than this are not proposed: every live tensor is copied for the comparison.
MAX_VIEW_ELEMENTS = 1 << 22

SAME_SIZE = {1: ("torch.uint8", "torch.int8"), 2: ("torch.float16", "torch.bfloat16", "torch.int16"),
             4: ("torch.float32", "torch.int32"), 8: ("torch.float64", "torch.int64", "torch.complex64")}


def _slice(g, size: int) -> str:
    return g.rng.choice((":", "1:", "::2", ":-1", "1::2", f"{max(0, size - 2)}:", "-2:", "None", "...", "0", "-1"))


def _view_shape(g, shape) -> tuple:
    numel = 1
    for size in shape:
        numel *= size
    choice = g.rng.random()
    if choice < 0.3 or len(shape) == 0:
        return (numel,) if g.rng.random() < 0.5 else (-1,)
    if choice < 0.6 and len(shape) >= 2:
        index = g.rng.randrange(len(shape) - 1)
        return tuple(shape[:index]) + (shape[index] * shape[index + 1],) + tuple(shape[index + 2:])
    index = g.rng.randrange(len(shape))
    size = shape[index]
    for factor in (2, 3):
        if size and size % factor == 0:
            return tuple(shape[:index]) + (factor, size // factor) + tuple(shape[index + 1:])
    return tuple(shape[:index]) + (1, size) + tuple(shape[index + 1:])


def view(g):
    x = g.pick()
    if x is None:
        return None
    tensor = g.value(x)
    shape, ndim = tuple(tensor.shape), tensor.dim()
    choice = g.rng.randrange(22)
    label = "view"
    reinterprets = False
    if choice == 0 and ndim:
        parts = [_slice(g, size) for size in shape[: g.rng.randint(1, ndim)]]
        expression, label = f"{x}[{', '.join(parts)}]", "view.slice"
    elif choice == 1 and ndim >= 2:
        expression, label = f"{x}.transpose({dim(g, ndim)}, {dim(g, ndim)})", "view.transpose"
    elif choice in (2, 3) and ndim >= 2:
        order = list(range(ndim))
        g.rng.shuffle(order)
        expression, label = f"{x}.permute({', '.join(map(str, order))})", "view.permute"
    elif choice == 4 and ndim <= 2:
        expression, label = f"{x}.t()", "view.t"
    elif choice == 5:
        target = [g.rng.randint(2, 3) if size == 1 else size for size in shape]
        if g.rng.random() < 0.4:
            target = [g.rng.randint(1, 3)] + target
        if g.rng.random() < 0.3 and target:
            target[g.rng.randrange(len(target))] = -1 if g.rng.random() < 0.5 else target[0]
        expression, label = f"{x}.expand({', '.join(map(str, target))})", "view.expand"
    elif choice == 6 and ndim:
        d = g.rng.randrange(ndim)
        size = g.rng.randint(1, max(1, shape[d]))
        step = g.rng.randint(1, 2)
        others = math.prod(shape) // max(1, shape[d])
        if others * ((shape[d] - size) // step + 1) * size > MAX_VIEW_ELEMENTS:
            # Windows of a long dimension: a (40000, 2) tensor unfolded by 22963 viewed 6.3 GB, which the
            # comparison copies for both runs (seed 680473 was killed for memory). A few windows instead.
            size = max(1, shape[d] - g.rng.randint(0, 3))
        expression, label = f"{x}.unfold({d}, {size}, {step})", "view.unfold"
    elif choice == 7:
        expression, label = f"{x}.view({', '.join(map(str, _view_shape(g, shape))) or '()'})", "view.view"
    elif choice == 8:
        expression, label = f"{x}.reshape({', '.join(map(str, _view_shape(g, shape))) or '()'})", "reshape"
    elif choice == 9:
        expression, label = (f"{x}.flatten()" if g.rng.random() < 0.5 else f"{x}.flatten(0, -1)"), "flatten"
    elif choice == 10:
        expression, label = f"{x}.unsqueeze({g.rng.randint(-ndim - 1, ndim)})", "view.unsqueeze"
    elif choice == 11:
        expression, label = (f"{x}.squeeze()" if g.rng.random() < 0.5 or not ndim
                             else f"{x}.squeeze({dim(g, ndim)})"), "view.squeeze"
    elif choice == 12 and ndim:
        d = g.rng.randrange(ndim)
        start = g.rng.randint(0, shape[d])
        expression, label = f"{x}.narrow({d}, {start}, {g.rng.randint(0, shape[d] - start)})", "view.narrow"
    elif choice == 13 and ndim and all(shape):
        d = g.rng.randrange(ndim)
        expression, label = f"{x}.select({d}, {g.rng.randint(-shape[d], shape[d] - 1)})", "view.select"
    elif choice == 14 and ndim >= 2:
        expression = f"{x}.diagonal({g.rng.randint(-1, 1)}, {dim(g, ndim)}, {dim(g, ndim)})"
        label = "view.diagonal"
    elif choice == 15 and ndim >= 2:
        expression, label = f"{x}.movedim({dim(g, ndim)}, {dim(g, ndim)})", "view.movedim"
    elif choice == 16 and ndim and all(shape):
        d = g.rng.randrange(ndim)
        form = g.rng.choice(("{x}.unbind({d})[{i}]", "{x}.split({k}, {d})[{i}]", "{x}.chunk({k}, {d})[-1]"))
        expression = form.format(x=x, d=d, i=g.rng.randrange(shape[d]) if "unbind" in form else 0,
                                 k=g.rng.randint(1, 3))
        label = "view." + form.split(".")[1].split("(")[0]
    elif choice == 17:
        size = tensor.element_size()
        if size not in SAME_SIZE:
            return None
        target = g.rng.choice(SAME_SIZE[size])
        expression, label = f"{x}.view({target})", "view.dtype"
        reinterprets = target in ("torch.float16", "torch.bfloat16", "torch.float32", "torch.float64",
                                  "torch.complex64")
    elif choice == 18 and tensor.is_complex():
        expression, label = g.rng.choice(((f"{x}.real", "view.real"), (f"{x}.imag", "view.imag"),
                                          (f"torch.view_as_real({x})", "view.view_as_real"),
                                          (f"{x}.conj()", "view.conj")))
    elif choice == 19:
        form = g.rng.choice(("{x}.contiguous()", "{x}.clone()", "torch.empty_like({x}).copy_({x})",
                             "{x}.clone(memory_format=torch.contiguous_format)"))
        expression, label = form.format(x=x), "clone"
    elif choice == 20 and ndim == 4:
        form = g.rng.choice(("{x}.contiguous(memory_format=torch.channels_last)",
                             "{x}.clone(memory_format=torch.channels_last)",
                             "{x}.to(memory_format=torch.channels_last)"))
        expression, label = form.format(x=x), "channels_last"
    elif choice == 21 and ndim == 2:
        expression, label = f"{x}.mT", "view.mT"
    else:
        return None
    name = fresh(g)
    copies = not label.startswith("view")
    return Proposal(f"{name} = {expression}", label, {name: g.devices[x]}, reads=(x,) if copies else (),
                    reinterprets=reinterprets, exact=True)


def layout_op(g):
    """Operators whose output layout follows the input's: flip, roll, tril/triu, repeat, pad."""
    x = g.pick(pred=lambda _, t: t.dim() >= 1)
    if x is None:
        return None
    ndim = g.value(x).dim()
    forms = ["torch.flip({x}, ({d},))", "torch.roll({x}, 1, {d})", "{x}.repeat({reps})",
             "torch.nn.functional.pad({x}, (1, 2))", "torch.tile({x}, (2,))"]
    if ndim >= 2:
        forms += ["torch.tril({x})", "torch.triu({x}, 1)"]
    form = g.rng.choice(forms)
    name = fresh(g)
    reps = ", ".join(str(g.rng.randint(1, 2)) for _ in range(ndim))
    code = f"{name} = {form.format(x=x, d=dim(g, ndim), reps=reps)}"
    return Proposal(code, form.split("(")[0].replace("{x}.", "").replace("torch.", "").replace("nn.functional.", ""),
                    {name: g.devices[x]}, reads=(x,))


BUILDERS = ((10, view), (2, layout_op))
