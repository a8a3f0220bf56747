"""Collective bandwidth of the axon backend against Gloo on CPU tensors, and DDP scaling.

    .venv/bin/python bench/collectives.py            # runs everything below through torchrun

1. all_reduce and all_gather_into_tensor on 2 processes, 4 KiB to 64 MiB per rank:
   bus bandwidth of ProcessGroupAxon on axon tensors and of ProcessGroupGloo on CPU
   tensors, measured alternately in the same processes ("cpu:gloo,axon:axon"), and
   their ratio (axon/gloo; target >= 0.95 for >= 1 MiB).
2. DDP training step of the small GPT on 1 and 2 processes (same per-rank batch):
   bench/distributed_training.py.
"""

from __future__ import annotations

import functools
import os
import statistics
import subprocess
import sys
import time

import torch
import torch.distributed as dist

SIZES = [4 << 10, 64 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20]
ROUNDS = 24


def iterations(nbytes: int) -> int:
    return max(3, min(200, (64 << 20) // nbytes))


def measure(kind: str, nbytes: int, world: int) -> tuple[float, float]:
    """Median seconds per call for (gloo on CPU tensors, axon), over alternating short batches.

    The machines are shared and their load changes by the second: alternating batches of a
    few calls expose both backends to the same disturbances, and the median ignores the worst."""
    elements = nbytes // 4
    axon = torch.device("axon", dist.get_rank() % torch.axon.device_count())
    runs = {}
    for device in ("cpu", "axon"):
        place = axon if device == "axon" else torch.device("cpu")
        source = torch.ones(elements, device=place)
        if kind == "all_reduce":
            runs[device] = functools.partial(dist.all_reduce, source)
        else:
            output = torch.empty(elements * world, device=place)
            runs[device] = functools.partial(dist.all_gather_into_tensor, output, source)
    samples = {"cpu": [], "axon": []}
    for device in ("cpu", "axon"):  # warm up
        runs[device]()
    torch.axon.synchronize(axon)
    dist.barrier()
    batch = max(1, iterations(nbytes) // 8)
    for _ in range(ROUNDS):
        for device in ("cpu", "axon"):
            start = time.perf_counter()
            for _ in range(batch):
                runs[device]()
            if device == "axon":
                torch.axon.synchronize(axon)
            samples[device].append((time.perf_counter() - start) / batch)
    return statistics.median(samples["cpu"]), statistics.median(samples["axon"])


def bus_bandwidth(kind: str, nbytes: int, seconds: float, world: int) -> float:
    """GB/s as nccl-tests count it: all_reduce moves 2(n-1)/n of the buffer, all_gather (n-1)/n of the output."""
    factor = 2 * (world - 1) / world if kind == "all_reduce" else (world - 1)
    return nbytes * factor / seconds / 1e9


def worker() -> None:
    rank = int(os.environ["RANK"])
    torch.axon.set_device(rank % torch.axon.device_count())
    dist.init_process_group("cpu:gloo,axon:axon")
    world = dist.get_world_size()
    lines = []
    for kind in ("all_reduce", "all_gather"):
        for nbytes in SIZES:
            gloo_s, axon_s = measure(kind, nbytes, world)
            gloo_bw, axon_bw = bus_bandwidth(kind, nbytes, gloo_s, world), bus_bandwidth(kind, nbytes, axon_s, world)
            size = f"{nbytes >> 20} MiB" if nbytes >= 1 << 20 else f"{nbytes >> 10} KiB"
            lines.append(f"| {kind} | {size} | {gloo_s * 1e6:,.0f} | {axon_s * 1e6:,.0f} | {gloo_bw:.2f} | "
                         f"{axon_bw:.2f} | {axon_bw / gloo_bw:.2f} |")
    if rank == 0:
        checks = os.environ.get("AXON_DISTRIBUTED_CHECKS", "1") != "0"
        print(f"\n{world} processes, cross-rank checks {'on' if checks else 'off'}")
        print("| collective | size per rank | gloo (cpu) µs | axon µs | gloo GB/s | axon GB/s | axon/gloo |")
        print("|---|---|---|---|---|---|---|")
        print("\n".join(lines), flush=True)
    dist.destroy_process_group()


def torchrun(script: str, processes: int, env: dict[str, str] | None = None, capture: bool = False) -> str:
    command = [os.path.join(os.path.dirname(sys.executable), "torchrun"), "--standalone",
               f"--nproc-per-node={processes}", script]
    full_env = dict(os.environ, **(env or {}))
    result = subprocess.run(command, check=True, env=full_env, stderr=subprocess.DEVNULL,
                            stdout=subprocess.PIPE if capture else None, text=True)
    return result.stdout if capture else ""


def ddp_scaling(script: str, rounds: int = 3) -> None:
    """1 and 2 processes alternately, best median step of each (the machine is shared)."""
    best: dict[int, tuple[float, str]] = {}
    for _ in range(rounds):
        for processes in (1, 2):
            line = torchrun(script, processes, capture=True).strip().splitlines()[-1]
            step_ms = float(line.rsplit("median step ", 1)[1].split()[0])
            if processes not in best or step_ms < best[processes][0]:
                best[processes] = (step_ms, line)
    for processes in (1, 2):
        print(best[processes][1])
    print(f"2 processes / 1 process step time: {best[2][0] / best[1][0]:.2f} (best of {rounds} alternating runs each)")


def main() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    torchrun(os.path.abspath(__file__), 2)
    torchrun(os.path.abspath(__file__), 2, {"AXON_DISTRIBUTED_CHECKS": "0"})
    ddp_scaling(os.path.join(here, "distributed_training.py"))


if __name__ == "__main__":
    if "RANK" in os.environ:
        import torch_axon  # noqa: F401

        worker()
    else:
        main()
