"""Timing helpers shared by the benchmarks: axon vs CPU measured in the same run."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import torch


def synchronize(device: str) -> None:
    if device.startswith("axon"):
        torch.axon.synchronize()


def seconds_per_call(function: Callable[[], object], device: str, *, min_time: float = 0.3,
                     repeats: int = 5) -> float:
    """Median over `repeats` of the mean time per call, each repeat lasting at least `min_time`."""
    function()
    synchronize(device)
    calls = 1
    while True:  # find a call count that takes long enough to time
        start = time.perf_counter()
        for _ in range(calls):
            function()
        synchronize(device)
        if time.perf_counter() - start >= min_time / 4 or calls >= 1 << 20:
            break
        calls *= 4
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            function()
        synchronize(device)
        samples.append((time.perf_counter() - start) / calls)
    return statistics.median(samples)


def print_table(title: str, rows: list[tuple[str, float, float]], unit: str, ratio_label: str) -> None:
    """rows: (name, cpu value, axon value)."""
    print(f"\n{title}")
    print(f"{'benchmark':<34}{'cpu ' + unit:>16}{'axon ' + unit:>16}{ratio_label:>16}")
    for name, cpu_value, axon_value in rows:
        ratio = axon_value / cpu_value if cpu_value else float("nan")
        print(f"{name:<34}{cpu_value:>16.3f}{axon_value:>16.3f}{ratio:>16.2f}")
