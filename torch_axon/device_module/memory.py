"""Memory statistics and cache control, shaped like torch.cuda's.

The numbers come from the caching device allocator (csrc/core/
device_allocator.h) through torch.accelerator's generic memory API.
"""

from __future__ import annotations

from typing import Any

import torch

from .. import _C
from .device import _device_index


def _index(device: Any) -> int:
    return _device_index(device)


def memory_stats(device: Any = None) -> dict[str, Any]:
    return torch.accelerator.memory_stats(_index(device))


def memory_allocated(device: Any = None) -> int:
    return torch.accelerator.memory_allocated(_index(device))


def max_memory_allocated(device: Any = None) -> int:
    return torch.accelerator.max_memory_allocated(_index(device))


def memory_reserved(device: Any = None) -> int:
    return torch.accelerator.memory_reserved(_index(device))


def max_memory_reserved(device: Any = None) -> int:
    return torch.accelerator.max_memory_reserved(_index(device))


def reset_peak_memory_stats(device: Any = None) -> None:
    torch.accelerator.reset_peak_memory_stats(_index(device))


def reset_accumulated_memory_stats(device: Any = None) -> None:
    torch.accelerator.reset_accumulated_memory_stats(_index(device))


def set_per_process_memory_fraction(fraction: float, device: Any = None) -> None:
    """Limits the caching allocator of `device` to `fraction` (0 to 1) of its capacity, counted in reserved
    bytes. An allocation past the limit releases the cache, then raises torch.OutOfMemoryError, as on CUDA."""
    index = _index(device)
    if not isinstance(fraction, float):
        raise TypeError("Invalid type for fraction argument, must be `float`")
    if fraction < 0 or fraction > 1:
        raise ValueError(f"Invalid fraction value: {fraction}. Allowed range: 0~1")
    _C._set_memory_fraction(index, fraction)


def get_per_process_memory_fraction(device: Any = None) -> float:
    """The fraction set by set_per_process_memory_fraction (1.0 until then)."""
    return _C._memory_fraction(_index(device))


def empty_cache() -> None:
    """Returns every cached, unused block to the device (after synchronizing it)."""
    torch.accelerator.empty_cache()


def get_memory_info(device: Any = None) -> tuple[int, int]:
    """(free, total) bytes of the device."""
    return torch.accelerator.get_memory_info(_index(device))


mem_get_info = get_memory_info


def _format_bytes(value: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(value) < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.2f} {unit}"
        value /= 1024
    return str(value)


def memory_summary(device: Any = None, abbreviated: bool = False) -> str:
    """A human-readable table of the allocator's statistics."""
    index = _index(device)
    stats = memory_stats(index)
    rows = [
        ("Allocated memory", "allocated_bytes", True),
        ("Active memory", "active_bytes", True),
        ("Requested memory", "requested_bytes", True),
        ("Reserved memory", "reserved_bytes", True),
        ("Allocations", "allocation", False),
        ("Active allocations", "active", False),
        ("Device segments", "segment", False),
    ]
    width = 78
    lines = ["=" * width, f" Axon memory summary, device axon:{index}".ljust(width), "-" * width]
    lines.append(f"{'Metric':<26}{'Current':>13}{'Peak':>13}{'Total alloc':>13}{'Total freed':>13}")
    lines.append("-" * width)
    pools = ("all",) if abbreviated else ("all", "small_pool", "large_pool")
    for title, key, is_bytes in rows:
        for pool in pools:
            fmt = _format_bytes if is_bytes else str
            values = [stats.get(f"{key}.{pool}.{field}", 0) for field in ("current", "peak", "allocated", "freed")]
            label = title if pool == "all" else f"  from {pool.replace('_', ' ')}"
            lines.append(f"{label:<26}" + "".join(f"{fmt(v):>13}" for v in values))
    free, total = get_memory_info(index)
    lines.append("-" * width)
    lines.append(f"Device capacity: {_format_bytes(total)}, free: {_format_bytes(free)}; "
                 f"allocation retries: {stats.get('num_alloc_retries', 0)}, OOMs: {stats.get('num_ooms', 0)}")
    lines.append("=" * width)
    return "\n".join(lines) + "\n"


# Memory snapshots (torch.axon.memory._record_memory_history / _snapshot / _dump_snapshot), private as in torch.cuda.
from .memory_snapshot import _dump_snapshot, _record_memory_history, _snapshot  # noqa: E402,F401
