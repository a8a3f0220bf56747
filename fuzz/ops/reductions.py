"""Reductions and scans: over everything, one dimension or several, keepdim, with dtype=."""

from __future__ import annotations

from ..proposal import Proposal
from .common import dim, fresh, largest, magnitude, total

# (label, template, exact on exact inputs, discontinuous, worst-case magnitude: "sum" | "prod" | None)
REDUCTIONS = (
    ("sum", "torch.sum({x}{dims})", True, False, "sum"), ("sum", "{x}.sum({dims0})", True, False, "sum"),
    ("sum", "torch.sum({x}{dims}, dtype=torch.float64)", True, False, "sum"),
    ("prod", "torch.prod({x}{dim})", True, False, "prod"), ("mean", "torch.mean({x}{dims})", False, False, None),
    ("amax", "torch.amax({x}{dims})", True, False, None), ("amin", "{x}.amin({dims0})", True, False, None),
    ("argmax", "torch.argmax({x}{dim})", True, True, None), ("argmin", "{x}.argmin({dim0})", True, True, None),
    ("any", "torch.any({x}{dim})", True, True, None), ("all", "{x}.all({dim0})", True, True, None),
    ("std", "torch.std({x}{dims})", False, False, None),
    ("var", "torch.var({x}{dims}, correction=0)", False, False, None),
    ("vector_norm", "torch.linalg.vector_norm({x}{dims})", False, False, None),
    ("logsumexp", "torch.logsumexp({x}, {d})", False, False, None),
    ("cumsum", "torch.cumsum({x}, {d})", True, False, "sum"), ("cumprod", "{x}.cumprod({d})", True, False, "prod"),
    ("count_nonzero", "torch.count_nonzero({x}{dims})", True, True, None),
    ("topk", "torch.topk({x}, 1, dim={d}).values", True, True, None),
    ("nansum", "torch.nansum({x}{dims})", True, False, "sum"),
)

# Reductions returning (values, indices).
PAIRS = (("max.dim", "torch.max({x}, {d}{keep})"), ("min.dim", "torch.min({x}, dim={d}{keep})"),
         ("sort", "torch.sort({x}, dim={d}, descending={desc}, stable=True)"), ("cummax", "torch.cummax({x}, {d})"),
         ("median.dim", "torch.median({x}, {d}{keep})"), ("aminmax", "torch.aminmax({x}, dim={d}{keep})"))


def _dims(g, ndim: int) -> tuple[str, str]:
    """(", dim=..., keepdim=..." or "", the same without the leading comma)."""
    if ndim == 0 or g.rng.random() < 0.3:
        return "", ""
    if g.rng.random() < 0.25 and ndim >= 2:
        chosen = sorted(g.rng.sample(range(ndim), 2))
        text = f"dim=({chosen[0]}, {chosen[1]})"
    else:
        text = f"dim={dim(g, ndim)}"
    if g.rng.random() < 0.3:
        text += ", keepdim=True"
    return ", " + text, text


def reduction(g):
    label, template, exact, discontinuous, worst = g.rng.choice(REDUCTIONS)
    x = g.pick(exact=discontinuous or None)
    if x is None:
        return None
    tensor = g.value(x)
    ndim = tensor.dim()
    dims, dims0 = _dims(g, ndim)
    single = f", dim={dim(g, ndim)}" if ndim and g.rng.random() < 0.7 else ""
    d = dim(g, ndim) if ndim else 0
    code = template.format(x=x, dims=dims, dims0=dims0, dim=single, dim0=single[2:], d=d)
    name = fresh(g)
    bound = None
    if worst == "sum":
        def bound(values, x=x):
            return total(values[x])
    elif worst == "prod":
        def bound(values, x=x):
            return float(magnitude(values[x]).clamp(min=1).prod()) if values[x].numel() else 0.0
    return Proposal(f"{name} = {code}", label, {name: g.devices[x]}, reads=(x,), exact=exact, bound=bound)


def pair(g):
    label, template = g.rng.choice(PAIRS)
    x = g.pick(exact=True)
    if x is None:
        return None
    ndim = g.value(x).dim()
    keep = ", keepdim=True" if g.rng.random() < 0.3 else ""
    code = template.format(x=x, d=dim(g, ndim) if ndim else 0, keep=keep, desc=g.rng.random() < 0.5)
    values, indices = fresh(g), fresh(g)
    device = g.devices[x]
    return Proposal(f"{values}, {indices} = {code}", label, {values: device, indices: device}, reads=(x,),
                    functional=label != "median.dim")  # median picks among equal values as it likes


def full_extreme(g):
    x = g.pick(exact=True, pred=lambda _, t: t.numel() > 0)
    if x is None:
        return None
    name = fresh(g)
    form = g.rng.choice(("torch.max({x})", "{x}.min()", "torch.median({x})"))
    return Proposal(f"{name} = {form.format(x=x)}", "max", {name: g.devices[x]}, reads=(x,),
                    bound=lambda values, x=x: largest(values[x]))


BUILDERS = ((7, reduction), (3, pair), (1, full_extreme))
