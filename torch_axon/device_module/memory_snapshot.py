"""Memory snapshots: ``torch.axon.memory._record_memory_history``, ``_snapshot`` and ``_dump_snapshot``.

The same calls and the same snapshot layout as ``torch.cuda.memory``: a pickle from ``_dump_snapshot`` opens in
PyTorch's memory viewer (https://pytorch.org/memory_viz) and in ``torch.cuda._memory_viz``
(``python -m torch.cuda._memory_viz trace_plot snapshot.pickle -o trace.html``). The allocator records in C++
(``csrc/core/memory_history.h``); stack traces are gathered as CUDA's allocator gathers them.
"""

from __future__ import annotations

import pickle
import sys
from typing import Any

import torch

from .. import _C
from .device import _device_index

_ENABLED = (None, "state", "all")
_CONTEXTS = (None, "state", "alloc", "all")
_STACKS = ("python", "all")


def _record_memory_history(enabled: str | None = "all", context: str | None = "all", stacks: str = "all",
                           max_entries: int = sys.maxsize, device: Any = None, clear_history: bool = False,
                           **_: Any) -> None:
    """Starts (or with ``enabled=None`` stops) recording allocator history on every axon device.

    ``enabled``: ``"all"`` keeps a trace of every allocation and free (up to ``max_entries`` per device, oldest
    dropped) plus where each live block was allocated; ``"state"`` only the latter. ``context``: which events get
    stack traces (``"alloc"``/``"state"``: allocations; ``"all"``: frees too; ``None``: none). ``stacks``:
    ``"python"`` frames, or ``"all"`` for C++ frames as well. ``device`` is accepted for torch.cuda's signature;
    axon records on all devices at once. Further torch.cuda options (FX annotations) are accepted and ignored.
    """
    if enabled not in _ENABLED:
        raise ValueError(f"enabled must be one of {_ENABLED}, got {enabled!r}")
    if context not in _CONTEXTS:
        raise ValueError(f"context must be one of {_CONTEXTS}, got {context!r}")
    if stacks not in _STACKS:
        raise ValueError(f"stacks must be one of {_STACKS}, got {stacks!r}")
    if max_entries < 0:
        raise ValueError(f"max_entries must be non-negative, got {max_entries}")
    if device is not None:
        _device_index(device)  # validates it
    recording = enabled is not None
    _C._record_memory_history(trace=recording and enabled == "all", contexts=recording and context is not None,
                              contexts_on_free=recording and context == "all",
                              cpp_frames=stacks == "all", max_entries=min(max_entries, 2**62), clear=clear_history)


def _snapshot(device: Any = None) -> dict[str, Any]:
    """The allocator's state and recorded trace: ``segments`` (each with its ``blocks``) and ``device_traces``
    (one list per device), laid out as ``torch.cuda.memory._snapshot()`` lays them out. ``device=None``: every
    axon device."""
    indices = range(torch.axon.device_count()) if device is None else [_device_index(device)]
    result: dict[str, Any] = {"segments": [], "device_traces": [[] for _ in range(torch.axon.device_count())],
                              "allocator_settings": {}, "external_annotations": []}
    for index in indices:
        part = _C._memory_snapshot(index)
        result["segments"].extend(part["segments"])
        result["device_traces"][index] = part["trace"]
    return result


def _dump_snapshot(filename: str = "dump_snapshot.pickle") -> None:
    """Writes ``_snapshot()`` to ``filename`` as a pickle, for https://pytorch.org/memory_viz."""
    with open(filename, "wb") as file:
        pickle.dump(_snapshot(), file)
