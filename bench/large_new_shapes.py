"""Large activations whose batch changes every step: CPU against axon, each in fresh processes.

    python bench/large_new_shapes.py

A step of element-wise and normalization operators (layer_norm, GELU, softmax, addcmul, a row sum) on
activations of 64 MiB and more, 4096 floats wide, the batch (4096 to 4480 rows) different at every step:
every step is a new call shape for every operator. Reported per step, for the first step of the process
(every operator's first call), the second (each operator's second size) and the later ones, CPU time /
axon time (above 1, axon is faster). Issue 14's target: no cliff on new shapes. Axon's first call of an
operator at a new size runs the CPU kernel once on stand-ins of the call, unless an earlier call proved
its layout class; stand-ins of 64 MiB and more are zeros first (csrc/ops/stand_ins.h says why and how
such a class gets proved). Exits non-zero if the results differ from the CPU's by more than rounding.
"""

from __future__ import annotations

import time

from timing import in_fresh_processes, measure_or_compare, print_table

WIDTH = 4096
BATCHES = [4096, 4160, 4224, 4288, 4352, 4416, 4480]


def measure(device: str) -> dict[str, float]:
    import torch
    import torch.nn.functional as F

    if device == "axon":
        import torch_axon  # noqa: F401

    def synchronize():
        if device == "axon":
            torch.axon.synchronize()

    weight = torch.ones(WIDTH, device=device) * 0.5
    bias = torch.zeros(WIDTH, device=device)
    generator = torch.Generator().manual_seed(0)
    times, checksum = [], 0.0
    for batch in BATCHES:
        x = torch.randn(batch, WIDTH, generator=generator).to(device)
        synchronize()
        start = time.perf_counter()
        h = F.layer_norm(x, (WIDTH,), weight, bias)
        h = F.gelu(h)
        p = torch.softmax(h, dim=-1)
        y = torch.addcmul(h, p, x, value=0.5)
        total = y.sum(dim=1)
        synchronize()
        times.append(time.perf_counter() - start)
        checksum += float(total.double().sum().cpu())
    return {"first": times[0], "second": times[1], "later": sum(times[2:]) / len(times[2:]), "checksum": checksum}


def main() -> int:
    best = in_fresh_processes(__file__)
    cpu, axon = best["cpu"], best["axon"]
    rows = [
        ("first step of the process", cpu["first"] * 1e3, axon["first"] * 1e3),
        ("second step (each operator's second size)", cpu["second"] * 1e3, axon["second"] * 1e3),
        ("later steps, each a new size", cpu["later"] * 1e3, axon["later"] * 1e3),
    ]
    print_table(f"Large activations ({WIDTH} wide, batch changing): time per step", rows, "ms", "cpu/axon")
    if abs(cpu["checksum"] - axon["checksum"]) > 1e-3 * max(1.0, abs(cpu["checksum"])):
        print(f"checksums differ: {axon['checksum']} on axon, {cpu['checksum']} on the CPU")
        return 1
    return 0


if __name__ == "__main__":
    measure_or_compare(measure, main)
