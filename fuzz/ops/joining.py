"""cat, stack and friends, across dtypes and with empty tensors."""

from __future__ import annotations

from ..proposal import Proposal
from .common import fresh


def join(g):
    x = g.pick()
    if x is None:
        return None
    tensor = g.value(x)
    device = g.devices[x]
    shape, ndim = list(tensor.shape), tensor.dim()
    count = g.rng.randint(1, 3)
    dtype = None if g.rng.random() < 0.3 else tensor.dtype
    name = fresh(g)
    if ndim and g.rng.random() < 0.6:
        d = g.rng.randrange(ndim)
        others = []
        for _ in range(count):
            other = list(shape)
            other[d] = g.rng.randint(0, 3)
            others.append(g.require(tuple(other), device, dtype))
        parts = [x] + others
        g.rng.shuffle(parts)
        negative = g.rng.random() < 0.3
        code = f"{name} = torch.cat([{', '.join(parts)}], dim={d - ndim if negative else d})"
        return Proposal(code, "cat", {name: device}, reads=tuple(parts))
    others = [g.require(tuple(shape), device, dtype) for _ in range(count)]
    parts = [x] + others
    form = g.rng.choice(("torch.stack([{p}], dim={d})", "torch.stack([{p}])", "torch.hstack([{p}])",
                         "torch.vstack([{p}])"))
    code = f"{name} = {form.format(p=', '.join(parts), d=g.rng.randint(-ndim - 1, ndim))}"
    return Proposal(code, form.split("(")[0].replace("torch.", ""), {name: device}, reads=tuple(parts))


BUILDERS = ((3, join),)
