"""Small helpers the op families share."""

from __future__ import annotations

import torch


def magnitude(tensor: torch.Tensor) -> torch.Tensor:
    """|x| in float64 (complex and bool included), for worst-case sums."""
    tensor = tensor.detach().resolve_conj().resolve_neg()
    return tensor.abs().double() if tensor.is_complex() else tensor.double().abs()


def largest(tensor: torch.Tensor) -> float:
    return float(magnitude(tensor).max()) if tensor.numel() else 0.0


def total(tensor: torch.Tensor) -> float:
    return float(magnitude(tensor).sum())


def dim(g, ndim: int) -> int:
    """A dimension index, sometimes negative."""
    index = g.rng.randrange(ndim)
    return index - ndim if g.rng.random() < 0.25 else index


def scalar(g, dtype: torch.dtype) -> str:
    """A Python number literal suited to `dtype` (mostly small integers)."""
    if dtype == torch.bool:
        return g.rng.choice(("True", "False", "1", "0"))
    if g.rng.random() < 0.15 and (dtype.is_floating_point or dtype.is_complex):
        return g.rng.choice(("0.5", "-1.5", "2.25"))
    return str(g.rng.randint(-3, 4))


def partner_shape(g, shape: tuple[int, ...]) -> tuple[int, ...]:
    """A shape that broadcasts with `shape` (the same, fewer leading dims, some dims 1, or one more dim)."""
    shape = list(shape)
    choice = g.rng.random()
    if choice < 0.5 or not shape:
        result = shape
    elif choice < 0.65:
        result = shape[g.rng.randint(1, len(shape)):]
    elif choice < 0.9:
        result = [1 if g.rng.random() < 0.4 else size for size in shape]
    else:
        result = [g.rng.randint(1, 3)] + shape
    return tuple(result)


def partner(g, name: str, same_dtype: float = 0.6) -> str:
    """A live (or new) tensor on `name`'s device whose shape broadcasts with `name`'s."""
    tensor = g.value(name)
    dtype = tensor.dtype if g.rng.random() < same_dtype else g.random_dtype()
    return g.require(partner_shape(g, tuple(tensor.shape)), g.devices[name], dtype)


def mask(g, shape, device) -> str:
    return g.require(tuple(shape), device, torch.bool)


def fresh(g) -> str:
    return g.fresh("t")
