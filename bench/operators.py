"""Operator benchmarks: axon against torch on the CPU, measured in the same run.

    python bench/operators.py

Prints (1) the per-call time of tiny-tensor operators (dispatch overhead;
issue 14's target axon/cpu <= 1.2) and (2) the throughput of large-tensor
operators (target axon/cpu >= 0.95). Each is the best of two measurements per
device, interleaved.
"""

from __future__ import annotations

import sys

import torch
import torch.nn.functional as F
from timing import print_table, seconds_per_call


def tiny_cases(device: str) -> dict:
    a = torch.randn(16, device=device)
    b = torch.randn(16, device=device)
    m = torch.randn(4, 4, device=device)
    return {
        "add (16)": lambda: a + b,
        "mul_ in place (16)": lambda: a.mul_(1.0),
        "sum (16)": lambda: a.sum(),
        "relu (16)": lambda: torch.relu(a),
        "mm (4x4)": lambda: m @ m,
        "view + transpose (4x4)": lambda: m.view(16).view(4, 4).t(),
        "zeros (16)": lambda: torch.zeros(16, device=device),
    }


def large_cases(device: str) -> dict:
    """name -> (function, bytes or flops moved per call, unit)."""
    n = 1 << 23
    x = torch.randn(n, device=device)
    y = torch.randn(n, device=device)
    matrix = torch.randn(1024, 1024, device=device)
    images = torch.randn(16, 32, 56, 56, device=device)
    weight = torch.randn(64, 32, 3, 3, device=device)
    rows = torch.randn(4096, 1024, device=device)
    table = torch.randn(50_000, 256, device=device)
    tokens = torch.randint(0, 50_000, (16_384,), device=device)
    index = torch.randint(0, 4096, (4096, 1024), device=device)
    source = torch.randn(4096, 1024, device=device)
    return {
        "add 8M (GB/s)": (lambda: x + y, 3 * 4 * n / 1e9),
        "mul_ in place 8M (GB/s)": (lambda: x.mul_(1.0000001), 2 * 4 * n / 1e9),
        "sum 8M (GB/s)": (lambda: x.sum(), 4 * n / 1e9),
        "matmul 1024 (GFLOP/s)": (lambda: matrix @ matrix, 2 * 1024**3 / 1e9),
        "conv2d 3x3 (GFLOP/s)": (lambda: F.conv2d(images, weight, padding=1),
                                 2 * 16 * 64 * 56 * 56 * 32 * 9 / 1e9),
        "softmax 4096x1024 (GB/s)": (lambda: torch.softmax(rows, dim=-1), 2 * 4 * rows.numel() / 1e9),
        "layer_norm 4096x1024 (GB/s)": (lambda: F.layer_norm(rows, (1024,)), 2 * 4 * rows.numel() / 1e9),
        "embedding 16k x 256 (GB/s)": (lambda: F.embedding(tokens, table), 2 * 4 * 16_384 * 256 / 1e9),
        "gather 4096x1024 (GB/s)": (lambda: torch.gather(source, 0, index), 3 * 4 * source.numel() / 1e9),
        "scatter_add_ 4096x1024 (GB/s)": (lambda: rows.scatter_add_(0, index, source), 3 * 4 * source.numel() / 1e9),
        "index_select 4096 rows (GB/s)": (lambda: rows.index_select(0, tokens[:4096] % 4096),
                                          2 * 4 * 4096 * 1024 / 1e9),
    }


def best_of_interleaved(cpu_function, axon_function) -> tuple[float, float]:
    """Seconds per call on each device: the faster of two measurements, taken CPU, axon, CPU, axon.

    Why interleaved: whichever device runs an operator first in the process pays its one-time costs (oneDNN
    builds its convolution primitives on the first call, which took 14 ms against 5.6 ms later), and the
    machine's load drifts; the best of two measurements on each side cancels both.
    """
    cpu, axon = [], []
    for _ in range(2):
        cpu.append(seconds_per_call(cpu_function, "cpu"))
        axon.append(seconds_per_call(axon_function, "axon"))
    return min(cpu), min(axon)


def main() -> int:
    torch.manual_seed(0)
    rows = []
    cpu_tiny, axon_tiny = tiny_cases("cpu"), tiny_cases("axon")
    for name in cpu_tiny:
        cpu, axon = best_of_interleaved(cpu_tiny[name], axon_tiny[name])
        rows.append((name, cpu * 1e6, axon * 1e6))
    print_table("Tiny tensors: time per call (target axon/cpu <= 1.2)", rows, "us", "axon/cpu")

    rows = []
    cpu_large, axon_large = large_cases("cpu"), large_cases("axon")
    for name in cpu_large:
        (cpu_function, work), (axon_function, _) = cpu_large[name], axon_large[name]
        cpu, axon = best_of_interleaved(cpu_function, axon_function)
        rows.append((name, work / cpu, work / axon))
    print_table("Large tensors: throughput (target axon/cpu >= 0.95)", rows, "rate", "axon/cpu")
    return 0


if __name__ == "__main__":
    sys.exit(main())
