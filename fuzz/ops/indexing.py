"""Indexing: advanced indexing, index_select, gather, take, boolean masks (data-dependent sizes), nonzero,
unique, masked_fill, scatter, index_add, one_hot."""

from __future__ import annotations

from ..proposal import Proposal
from .common import dim, fresh, mask, scalar, total


def gather_like(g):
    x = g.pick(pred=lambda _, t: t.dim() >= 1 and all(t.shape))
    if x is None:
        return None
    tensor = g.value(x)
    device = g.devices[x]
    shape, ndim = tuple(tensor.shape), tensor.dim()
    d = g.rng.randrange(ndim)
    count = g.rng.randint(0 if g.rng.random() < 0.1 else 1, 4)
    choice = g.rng.randrange(8)
    if choice == 7:
        name = fresh(g)
        rows = [g.rng.randrange(-shape[0], shape[0]) for _ in range(max(count, 1))]
        return Proposal(f"{name} = {x}[{rows}]", "index.list", {name: device}, reads=(x,))
    if choice == 0:
        index = g.index_tensor((count,), shape[0], device, low=-shape[0] if g.rng.random() < 0.3 else 0)
        code, label = f"{x}[{index}]", "index"
    elif choice == 1 and ndim >= 2:
        index = g.index_tensor((count,), shape[1], device)
        code, label = f"{x}[:, {index}]", "index"
    elif choice == 2 and ndim >= 2:
        first = g.index_tensor((count,), shape[0], device)
        index = g.index_tensor((count,), shape[1], device)
        code, label = f"{x}[{first}, {index}]", "index"
        name = fresh(g)
        return Proposal(f"{name} = {code}", label, {name: device}, reads=(x, first, index))
    elif choice == 3:
        index = g.index_tensor((count,), shape[d], device)
        code, label = f"torch.index_select({x}, {d}, {index})", "index_select"
    elif choice == 4:
        index_shape = tuple(g.rng.randint(1, size) for size in shape)
        index = g.index_tensor(index_shape, shape[d], device)
        code, label = f"torch.gather({x}, {d}, {index})", "gather"
    elif choice == 5:
        index = g.index_tensor((count,), tensor.numel(), device)
        code, label = f"torch.take({x}, {index})", "take"
    else:
        index = g.index_tensor((count,), shape[d], device)
        source_shape = list(shape)
        source_shape[d] = count
        source = g.require(tuple(source_shape), device, tensor.dtype)
        code, label = f"{x}.index_add({d}, {index}, {source}, alpha=2)", "index_add"
        name = fresh(g)
        return Proposal(f"{name} = {code}", label, {name: device}, reads=(x, index, source),
                        bound=lambda values, x=x, source=source: total(values[x]) + 2 * total(values[source]))
    name = fresh(g)
    return Proposal(f"{name} = {code}", label, {name: device}, reads=(x, index))


def masked(g):
    x = g.pick(pred=lambda _, t: t.dim() >= 1)
    if x is None:
        return None
    tensor = g.value(x)
    device = g.devices[x]
    name = fresh(g)
    choice = g.rng.randrange(6)
    if choice == 0:
        m = mask(g, tensor.shape, device)
        return Proposal(f"{name} = {x}[{m}]", "index.bool", {name: device}, reads=(x, m), host_sync=True,
                        functional=False)
    if choice == 1:
        m = mask(g, tensor.shape[-1:], device)
        return Proposal(f"{name} = torch.masked_select({x}, {m})", "masked_select", {name: device}, reads=(x, m),
                        host_sync=True, functional=False)
    if choice == 2:
        m = mask(g, tensor.shape, device)
        return Proposal(f"{name} = {x}.masked_fill({m}, {scalar(g, tensor.dtype)})", "masked_fill", {name: device},
                        reads=(x, m))
    if not g.is_exact(x):
        return None
    if choice == 3:
        return Proposal(f"{name} = torch.nonzero({x})", "nonzero", {name: device}, reads=(x,), host_sync=True,
                        functional=False)
    if choice == 4 and not tensor.is_complex():
        form = g.rng.choice(("torch.unique({x})", "torch.unique({x}, sorted=True)"))
        return Proposal(f"{name} = {form.format(x=x)}", "unique", {name: device}, reads=(x,), host_sync=True,
                        functional=False)
    if choice == 5 and tensor.dim() == 1:
        index = g.index_tensor(tuple(tensor.shape), 5, device)
        return Proposal(f"{name} = torch.nn.functional.one_hot({index}, 5)", "one_hot", {name: device},
                        reads=(index,))
    return None


def scatter(g):
    x = g.pick(exact=True, pred=lambda _, t: t.dim() >= 1 and all(t.shape))
    if x is None:
        return None
    tensor = g.value(x)
    device = g.devices[x]
    d = dim(g, tensor.dim())
    index_shape = tuple(g.rng.randint(1, size) for size in tensor.shape)
    index = g.index_tensor(index_shape, tensor.shape[d], device)
    source = g.require(index_shape, device, tensor.dtype, exact=True)
    name = fresh(g)
    if g.rng.random() < 0.5:
        return Proposal(f"{name} = torch.scatter_add({x}, {d}, {index}, {source})", "scatter_add", {name: device},
                        reads=(x, index, source),
                        bound=lambda values: total(values[x]) + total(values[source]))
    # Which of several writes to one element wins is unspecified: not for the compile path.
    return Proposal(f"{name} = torch.scatter({x}, {d}, {index}, {source})", "scatter", {name: device},
                    reads=(x, index, source), functional=False)


BUILDERS = ((5, gather_like), (3, masked), (2, scatter))
