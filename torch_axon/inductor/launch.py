"""What the generated wrapper code calls for each C++ kernel on axon (see ``wrapper.py``)."""

from __future__ import annotations

import ctypes
from typing import Any

import torch

from torch_axon import _C

from .scheduling import SLOT_ENTRY_NAME

# Kernel binding → address of its slot entry point (0 where the kernel has none).
_entry_points: dict[Any, int] = {}


def _slot_entry(kernel: Any) -> int:
    entry = _entry_points.get(kernel)
    if entry is None:
        module = getattr(kernel, "__self__", None)
        path = getattr(module, "__file__", None)
        entry = 0
        if path is not None:
            library = ctypes.CDLL(path)  # already loaded by Inductor: this only looks it up
            if hasattr(library, SLOT_ENTRY_NAME):
                entry = ctypes.cast(getattr(library, SLOT_ENTRY_NAME), ctypes.c_void_p).value or 0
        _entry_points[kernel] = entry
    return entry


def _synchronous_call(kernel: Any, args: tuple) -> None:
    """A kernel without a slot entry point runs on the caller, after the streams of its devices drain."""
    for device in {arg.device for arg in args if isinstance(arg, torch.Tensor) and arg.device.type == "axon"}:
        torch.axon.current_stream(device).synchronize()
    kernel(*args)


def launch_host_kernel(kernel: Any, name: str, kinds: str | None, args: tuple) -> None:
    entry = _slot_entry(kernel) if kinds is not None else 0
    if entry == 0:
        _synchronous_call(kernel, args)
        return
    _C._launch_host_kernel(entry, name, kinds, args)
