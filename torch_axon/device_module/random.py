"""Per-device RNG state: (seed, offset) of the axon Philox generator.

The state is 16 bytes (seed then offset, little-endian uint64), the layout
CUDA uses, so torch.random.fork_rng and DTensor's RNG tracker work as is.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch

from .. import _C
from .device import _device_index, device_count


def get_rng_state(device: Any = "axon") -> torch.Tensor:
    state = _C._get_rng_state(_device_index(device))
    return torch.frombuffer(bytearray(state), dtype=torch.uint8)


def set_rng_state(new_state: torch.Tensor, device: Any = "axon") -> None:
    if not isinstance(new_state, torch.Tensor) or new_state.dtype != torch.uint8:
        raise TypeError("[axon] set_rng_state expects a torch.ByteTensor from get_rng_state()")
    _C._set_rng_state(_device_index(device), bytes(new_state.cpu().contiguous().numpy().tobytes()))


def get_rng_state_all() -> list[torch.Tensor]:
    return [get_rng_state(i) for i in range(device_count())]


def set_rng_state_all(new_states: Iterable[torch.Tensor]) -> None:
    for index, state in enumerate(new_states):
        set_rng_state(state, index)


def manual_seed(seed: int) -> None:
    """Seeds the current device's generator (offset back to 0)."""
    _C._manual_seed(_device_index(None), int(seed) & 0xFFFF_FFFF_FFFF_FFFF)


def manual_seed_all(seed: int) -> None:
    for index in range(device_count()):
        _C._manual_seed(index, int(seed) & 0xFFFF_FFFF_FFFF_FFFF)


def seed() -> None:
    """Seeds the current device's generator with a non-deterministic number."""
    _C._seed(_device_index(None))


def seed_all() -> None:
    fresh = _C._seed(0) if device_count() else 0
    for index in range(1, device_count()):
        _C._manual_seed(index, fresh)


def initial_seed() -> int:
    return _C._initial_seed(_device_index(None))


class _DefaultGenerators:
    """torch.axon.default_generators: one torch.Generator per device, indexable as CUDA's tuple."""

    def __getitem__(self, index: int) -> torch.Generator:
        if index < 0:
            index += device_count()
        return _C._default_generator(_device_index(index))

    def __len__(self) -> int:
        return device_count()

    def __iter__(self):
        return (self[index] for index in range(len(self)))


default_generators = _DefaultGenerators()


def _get_generator(device: torch.device) -> torch.Generator:
    """The default generator of `device` (torch._functorch looks it up by this name)."""
    return _C._default_generator(_device_index(device))
