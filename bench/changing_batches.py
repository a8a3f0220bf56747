"""Training on batches whose size changes: CPU against axon, each in fresh processes.

    python bench/changing_batches.py

An MLP (ReLU, LayerNorm) and a CNN (BatchNorm, ReLU, max pooling) trained with AdamW and
cross-entropy, the batch size changing every step (a data loader's last batch, variable-length buckets,
a sampler that drops examples): every step is a new call shape for every operator. Reported per step,
for the first step of the process (it pays for every operator's first call) and for the later steps,
CPU time / axon time (above 1, axon is faster). Issue 14's target: no cliff on new shapes, these ratios
at least 0.83. Exits non-zero if the final losses differ from the CPU's by more than rounding.
"""

from __future__ import annotations

import time

from timing import in_fresh_processes, measure_or_compare, print_table

BATCHES = [32, 29, 31, 17, 30, 25, 27, 19, 28, 23, 26, 21, 24, 18, 22, 20]


def measure(device: str) -> dict[str, float]:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    if device == "axon":
        import torch_axon  # noqa: F401

    def synchronize():
        if device == "axon":
            torch.axon.synchronize()

    torch.manual_seed(0)
    models = {
        "mlp": nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(),
                             nn.LayerNorm(256), nn.Linear(256, 10)),
        "cnn": nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
                             nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
                             nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 10)),
    }
    measurements = {}
    for name, model in models.items():
        model = model.to(device)
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
        generator = torch.Generator().manual_seed(1)
        times = []
        for batch in BATCHES:
            shape = (batch, 64) if name == "mlp" else (batch, 3, 16, 16)
            inputs = torch.randn(shape, generator=generator).to(device)
            labels = torch.randint(0, 10, (batch,), generator=generator).to(device)
            synchronize()
            start = time.perf_counter()
            loss = F.cross_entropy(model(inputs), labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            synchronize()
            times.append(time.perf_counter() - start)
        measurements[f"{name} first"] = times[0]
        measurements[f"{name} later"] = sum(times[1:]) / len(times[1:])
        measurements[f"{name} loss"] = float(loss.detach().cpu())
    return measurements


def main() -> int:
    best = in_fresh_processes(__file__)
    cpu, axon = best["cpu"], best["axon"]
    rows = []
    for name in ("mlp", "cnn"):
        for step, label in (("first", "first step of the process"), ("later", "later steps, each a new size")):
            rows.append((f"{name}, {label}", cpu[f"{name} {step}"] * 1e3, axon[f"{name} {step}"] * 1e3))
    print_table("Training, batch size changing: time per step", rows, "ms", "cpu/axon")
    failed = False
    for name in ("mlp", "cnn"):
        if abs(cpu[f"{name} loss"] - axon[f"{name} loss"]) > 1e-4:
            print(f"{name}: final loss {axon[name + ' loss']} on axon, {cpu[name + ' loss']} on the CPU")
            failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    measure_or_compare(measure, main)
