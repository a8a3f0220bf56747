"""In-place operators (often on views, so the write lands in a base) and out= variants."""

from __future__ import annotations

import torch

from ..proposal import Proposal
from .common import dim, fresh, mask, partner_shape, scalar, total

# (label, template, exact on exact inputs, discontinuous); {x} is written, {y} read (shape broadcasts to x's).
IN_PLACE = (
    ("add_", "{x}.add_({y})", True, False), ("sub_", "{x}.sub_({y}, alpha=2)", True, False),
    ("mul_", "{x}.mul_({y})", True, False), ("div_", "{x}.div_({y})", False, False),
    ("copy_", "{x}.copy_({y})", True, False), ("maximum_", "{x}.copy_(torch.maximum({x}, {y}))", True, False),
    ("addcmul_", "{x}.addcmul_({y}, {y})", True, False), ("lerp_", "{x}.lerp_({y}, 0.25)", False, False),
    ("bitwise_xor_", "{x}.bitwise_xor_({y})", True, False), ("logical_xor_", "{x}.logical_xor_({y})", True, True),
    ("setitem", "{x}[...] = {y}", True, False), ("masked_fill_", "{x}.masked_fill_({m}, {s})", True, False),
)
IN_PLACE_UNARY = (
    ("add_", "{x}.add_({s})", True, False), ("mul_", "{x}.mul_({s})", True, False),
    ("clamp_", "{x}.clamp_(-1, 2)", True, False), ("neg_", "{x}.neg_()", True, False),
    ("abs_", "{x}.abs_()", True, False), ("zero_", "{x}.zero_()", True, False),
    ("fill_", "{x}.fill_({s})", True, False), ("exp_", "{x}.exp_()", False, False),
    ("floor_", "{x}.floor_()", True, True), ("sigmoid_", "{x}.sigmoid_()", False, False),
    ("setitem", "{x}[{i}] = {s}", True, False), ("relu_", "{x}.relu_()", True, False),
    ("square_", "{x}.square_()", True, False),
)
# out= forms: {o} is the output; the functional expression (without out=) sizes it.
OUT = (
    ("add.out", "torch.add({a}, {b}{out})"), ("mul.out", "torch.mul({a}, {b}{out})"),
    ("sub.out", "torch.sub({a}, {b}{out})"), ("maximum.out", "torch.maximum({a}, {b}{out})"),
    ("abs.out", "torch.abs({a}{out})"), ("neg.out", "torch.neg({a}{out})"), ("exp.out", "torch.exp({a}{out})"),
    ("clamp.out", "torch.clamp({a}, -1, 2{out})"), ("sum.out", "torch.sum({a}, {d}{out})"),
    ("cumsum.out", "torch.cumsum({a}, {d}{out})"), ("where.out", "torch.where({m}, {a}, {b}{out})"),
    ("mm.out", "torch.mm({a}, {a}.mT{out})"), ("cat.out", "torch.cat([{a}, {a}], {d}{out})"),
    ("index_select.out", "torch.index_select({a}, {d}, {i}{out})"),
    ("logical_xor.out", "torch.logical_xor({a}, {b}{out})"),
    ("sort.out", "torch.sort({a}, {d}, stable=True{pair})"), ("mean.out", "torch.mean({a}, {d}{out})"),
)
EXACT_OUT = {"add.out", "mul.out", "sub.out", "maximum.out", "abs.out", "neg.out", "clamp.out", "sum.out",
             "cumsum.out", "where.out", "mm.out", "cat.out", "index_select.out", "logical_xor.out", "sort.out"}
DISCONTINUOUS_OUT = {"logical_xor.out", "sort.out"}


def _target(g, exact=None):
    """A tensor to write: often a view (a name sharing its storage with another)."""
    def shares(name, _):
        storage = g.order.storage_of.get(name)
        return storage is not None and len(g.order.storages[storage].names) > 1
    name = g.pick(exact=exact, pred=shares) if g.rng.random() < 0.5 else None
    return name or g.pick(exact=exact)


def in_place(g):
    binary = g.rng.random() < 0.55
    label, template, exact, discontinuous = g.rng.choice(IN_PLACE if binary else IN_PLACE_UNARY)
    x = _target(g, exact=discontinuous or None)
    if x is None:
        return None
    tensor = g.value(x)
    device = g.devices[x]
    reads = [x]
    fields = {"x": x, "s": scalar(g, tensor.dtype)}
    if "{y}" in template:
        shape = partner_shape(g, tuple(tensor.shape))
        if len(shape) > tensor.dim():
            shape = shape[1:]
        dtype = tensor.dtype if g.rng.random() < 0.7 else g.random_dtype()
        fields["y"] = g.require(shape, device, dtype, exact=discontinuous)
        reads.append(fields["y"])
    if "{m}" in template:
        fields["m"] = mask(g, tensor.shape, device)
        reads.append(fields["m"])
    if "{i}" in template:
        if not tensor.dim() or not tensor.shape[0]:
            return None
        fields["i"] = g.rng.choice((str(g.rng.randrange(tensor.shape[0])), "1:", "::2", "..."))
    bound = None
    if label in ("add_", "sub_", "addcmul_"):
        def bound(values, reads=tuple(reads)):
            return sum(total(values[name]) for name in reads) * 4
    return Proposal(template.format(**fields), label, reads=tuple(reads), writes=(x,), exact=exact, bound=bound,
                    functional=False)


def scatter_like(g):
    """index_add_, index_fill_, scatter_add_, index_put_ (accumulate), index_copy_-like setitem."""
    x = _target(g, exact=True)
    if x is None or not g.value(x).dim() or not all(g.value(x).shape):
        return None
    tensor = g.value(x)
    device = g.devices[x]
    d = g.rng.randrange(tensor.dim())
    count = g.rng.randint(1, 4)
    index = g.index_tensor((count,), tensor.shape[d], device)
    source_shape = list(tensor.shape)
    source_shape[d] = count
    choice = g.rng.randrange(6)
    if choice == 4:
        m = mask(g, tensor.shape, device)
        source = g.require((tensor.numel(),), device, tensor.dtype, exact=True)
        code, label, reads = f"{x}.masked_scatter_({m}, {source})", "masked_scatter_", (x, m, source)
    elif choice == 5:
        index = g.index_tensor((1,), tensor.shape[d], device)
        source_shape[d] = 1
        source = g.require(tuple(source_shape), device, tensor.dtype, exact=True)
        code, label, reads = f"{x}.index_copy_({d}, {index}, {source})", "index_copy_", (x, index, source)
    elif choice == 0:
        source = g.require(tuple(source_shape), device, tensor.dtype, exact=True)
        code, label, reads = f"{x}.index_add_({d}, {index}, {source})", "index_add_", (x, index, source)
    elif choice == 1:
        code, label, reads = f"{x}.index_fill_({d}, {index}, {scalar(g, tensor.dtype)})", "index_fill_", (x, index)
    elif choice == 2:
        index_shape = tuple(g.rng.randint(1, size) for size in tensor.shape)
        index = g.index_tensor(index_shape, tensor.shape[d], device)
        source = g.require(index_shape, device, tensor.dtype, exact=True)
        code, label, reads = f"{x}.scatter_add_({d}, {index}, {source})", "scatter_add_", (x, index, source)
    else:
        index = g.index_tensor((count,), tensor.shape[0], device)
        source = g.require(tuple(tensor.shape[1:]), device, tensor.dtype, exact=True)
        code, label, reads = f"{x}.index_put_(({index},), {source}, accumulate=True)", "index_put_", (x, index, source)

    def bound(values, reads=reads):
        return sum(total(values[name]) for name in reads if values[name].dtype != torch.int64) * 4
    return Proposal(code, label, reads=reads, writes=(x,), bound=bound, functional=False)


def out_variant(g):
    label, template = g.rng.choice(OUT)
    discontinuous = label in DISCONTINUOUS_OUT
    # mm.out multiplies `a` by its own transpose: its rows square into the output's elements, so a (40000, 2)
    # tensor made a 6.4 GB product that, with the CPU's and the comparison's copies, exhausted the host's
    # memory (seed 672237, reported as a hang).
    a = g.pick(exact=discontinuous or None,
               pred=lambda _, t: t.dim() >= 2 and t.shape[-2] <= 2048 if label == "mm.out" else True)
    if a is None:
        return None
    tensor = g.value(a)
    device = g.devices[a]
    fields = {"a": a, "d": dim(g, tensor.dim()) if tensor.dim() else 0, "out": "", "pair": ""}
    reads = [a]
    if "{b}" in template:
        fields["b"] = g.require(partner_shape(g, tuple(tensor.shape)), device,
                                tensor.dtype if g.rng.random() < 0.8 else None, exact=discontinuous)
        reads.append(fields["b"])
    if "{m}" in template:
        fields["m"] = mask(g, tensor.shape, device)
        reads.append(fields["m"])
    if "{i}" in template:
        if not tensor.dim() or not tensor.shape[fields["d"]]:
            return None
        fields["i"] = g.index_tensor((g.rng.randint(1, 3),), tensor.shape[fields["d"]], device)
        reads.append(fields["i"])
    expected = g.evaluate(template.format(**fields))
    if expected is None:
        return None
    results = expected if isinstance(expected, tuple) else (expected,)
    choice = g.rng.random()
    names, prelude, writes, defines = [], [], [], {}
    for result in results:
        existing = g.pick(device, pred=lambda _, t, r=result: t.shape == r.shape and t.dtype == r.dtype)
        same = tensor.shape == result.shape and tensor.dtype == result.dtype and len(results) == 1
        if same and choice < 0.12 and "cat" not in label and "sort" not in label:
            existing = a  # out= is an input: the kernel reads and writes the same memory
        if existing is not None and choice < 0.55 and (existing not in reads or existing == a):
            names.append(existing)
            writes.append(existing)
        else:
            name = fresh(g)
            size = "0" if choice < 0.85 else ", ".join(map(str, result.shape)) or "()"
            prelude.append(f"{name} = torch.empty({size}, dtype={result.dtype}, device={g.device_text(device)})")
            names.append(name)
            defines[name] = device
    if len(names) == 1:
        fields["out"] = f", out={names[0]}"
    else:
        fields["pair"] = f", out=({', '.join(names)})"
    code = "; ".join(prelude + [template.format(**fields)])

    def bound(values, reads=tuple(reads)):
        return sum(total(values[name]) for name in reads) * max(2, tensor.numel())
    effects = None
    if defines:
        # The defaults bind this statement's names now; nothing mutates them.
        def effects(current, reads=tuple(reads), writes=tuple(writes), defines=dict(defines)):  # noqa: B006
            found = [("new", name, current(index)) for name, index in defines.items()]
            found += [("read", name, current(g.devices[name])) for name in reads]
            found += [("write", name, current(defines[name] if name in defines else g.devices[name]))
                      for name in (*writes, *defines)]
            return found
    return Proposal(code, label, defines, reads=tuple(reads), writes=tuple(writes), exact=label in EXACT_OUT,
                    bound=bound, functional=False, custom_effects=effects)


BUILDERS = ((6, in_place), (2, scatter_like), (4, out_variant))
