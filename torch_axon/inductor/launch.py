"""What the generated wrapper code calls for each C++ kernel on axon (see ``wrapper.py``)."""

from __future__ import annotations

import ctypes
from typing import Any

from torch_axon import _C

from .scheduling import SLOT_ENTRY_NAME

# The slot entry point's address is kept on the kernel's module (one module per kernel), so it goes when
# Inductor's code cache drops the module.
_ENTRY_ATTRIBUTE = "_axon_slot_entry"


def _slot_entry(kernel: Any) -> int:
    module = getattr(kernel, "__self__", None)
    entry = getattr(module, _ENTRY_ATTRIBUTE, None)
    if entry is None:
        path = getattr(module, "__file__", None)
        entry = 0
        if path is not None:
            library = ctypes.CDLL(path)  # already loaded by Inductor: this only looks it up
            if hasattr(library, SLOT_ENTRY_NAME):
                entry = ctypes.cast(getattr(library, SLOT_ENTRY_NAME), ctypes.c_void_p).value or 0
        if module is not None:
            setattr(module, _ENTRY_ATTRIBUTE, entry)
    return entry


def launch_host_kernel(kernel: Any, name: str, kinds: str | None, args: tuple) -> None:
    entry = _slot_entry(kernel) if kinds is not None else 0
    if entry == 0:
        # Calling the kernel here would touch device memory from the host outside the stream's order; every
        # argument type Inductor's C++ kernels take today has a slot form (argument_kinds.py), so this means a
        # new one has appeared.
        raise NotImplementedError(
            f"axon: Inductor kernel {name} takes an argument type axon cannot launch on a stream yet "
            f"(argument kinds {kinds!r}); compile with backend='axon' instead")
    _C._launch_host_kernel(entry, name, kinds, args)
