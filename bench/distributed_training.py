"""DDP training step time of the small GPT on axon (run under torchrun; see bench/collectives.py).

Each rank trains on its own batch of the same size, so with perfect scaling the
step time on 2 processes equals the step time on 1.
"""

from __future__ import annotations

import os
import statistics
import sys
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
from tiny_gpt import TinyGPT

import torch_axon  # noqa: F401

VOCAB, CONTEXT, BATCH, WARMUP, STEPS = 65, 64, 16, 5, 30


def main() -> None:
    rank = int(os.environ["RANK"])
    device = torch.device("axon", rank % torch.axon.device_count())
    torch.axon.set_device(device)
    dist.init_process_group(device_id=device)
    torch.manual_seed(0)
    model = DistributedDataParallel(TinyGPT(VOCAB, CONTEXT).to(device))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    generator = torch.Generator().manual_seed(rank)
    tokens = torch.randint(0, VOCAB, (BATCH, CONTEXT + 1), generator=generator).to(device)
    times = []
    for step in range(WARMUP + STEPS):
        start = time.perf_counter()
        _, loss = model(tokens[:, :-1], tokens[:, 1:])
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        loss.item()
        if step >= WARMUP:
            times.append(time.perf_counter() - start)
    world = dist.get_world_size()
    if rank == 0:
        parameters = sum(p.numel() for p in model.parameters())
        print(f"DDP GPT ({parameters / 1e6:.2f}M parameters, batch {BATCH}x{CONTEXT} per rank): "
              f"{world} process(es): median step {statistics.median(times) * 1e3:.1f} ms", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
