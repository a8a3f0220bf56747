"""Timing helpers shared by the benchmarks: axon vs CPU measured in the same run."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
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
    """rows: (name, cpu value, axon value). `ratio_label` is "axon/cpu" or "cpu/axon", the ratio printed."""
    assert ratio_label in ("axon/cpu", "cpu/axon")
    width = max([34] + [len(name) + 2 for name, _, _ in rows])
    print(f"\n{title}")
    print(f"{'benchmark':<{width}}{'cpu ' + unit:>16}{'axon ' + unit:>16}{ratio_label:>16}")
    for name, cpu_value, axon_value in rows:
        numerator, denominator = (axon_value, cpu_value) if ratio_label == "axon/cpu" else (cpu_value, axon_value)
        ratio = numerator / denominator if denominator else float("nan")
        print(f"{name:<{width}}{cpu_value:>16.3f}{axon_value:>16.3f}{ratio:>16.2f}")


def device_argument() -> str | None:
    """The `--device` a benchmark script was started with by `in_fresh_processes`, else None."""
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--device")
    return parser.parse_known_args()[0].device


def measure_or_compare(measure: Callable[[str], dict[str, float]], compare: Callable[[], int]) -> None:
    """A fresh-process benchmark's entry point. Started by `in_fresh_processes` with `--device`, it measures
    that device and reports; started by a person, `compare` starts those processes and prints the table."""
    device = device_argument()
    if device is not None:
        report_and_exit(measure(device))
    sys.exit(compare())


def report_and_exit(measurements: dict[str, float]) -> None:
    """The child's side of `in_fresh_processes`: its measurements, one JSON line, then exit."""
    print(json.dumps(measurements))
    sys.exit(0)


def in_fresh_processes(script: str, rounds: int = 2, arguments: tuple[str, ...] = ()) -> dict[str, dict[str, float]]:
    """Runs `script --device cpu` and `script --device axon` (then `arguments`), each in a process of its own,
    alternating, `rounds` times; returns each device's measurements (name -> seconds), the smallest of its
    rounds.

    Why separate processes: once axon's device worker has run a kernel, the process has two OpenMP teams
    (the Python thread's and the worker's), so libgomp manages more threads than there are cores and
    cuts its spin-wait short; the CPU's own parallel kernels then wake their helper threads from sleep.
    Measured: a GPT training step on the CPU took 95-99 ms in a fresh process and 123 ms in one where
    axon had run (bench/training.py before it measured this way). A user compares a CPU program with an
    axon one, not a CPU program slowed by an idle device. Alternating the processes spreads the
    machine's load drift over both devices.
    """
    best: dict[str, dict[str, float]] = {"cpu": {}, "axon": {}}
    for _ in range(rounds):
        for device in ("cpu", "axon"):
            command = [sys.executable, script, "--device", device, *arguments]
            output = subprocess.run(command, check=True, capture_output=True, text=True, env=dict(os.environ)).stdout
            for name, seconds in json.loads(output.strip().splitlines()[-1]).items():
                best[device][name] = min(seconds, best[device].get(name, float("inf")))
    return best
