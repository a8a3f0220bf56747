"""Train the small GPT with FSDP2 on several axon devices (one per process).

    .venv/bin/torchrun --standalone --nproc-per-node 2 examples/train_fsdp.py [--steps 60] [--bf16]

The script is what a CUDA/NCCL FSDP2 script would be with the device string
changed: init_process_group(device_id=torch.device("axon", rank)) picks the
axon backend, fully_shard shards each block and the model over the ranks, and
every rank trains on its own batches. --bf16 adds a MixedPrecisionPolicy
(bf16 parameters for compute, fp32 gradient reduction). Rank 0 prints the
global mean loss, throughput and per-rank memory, and the script exits
non-zero if the loss did not drop.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import torch
import torch.distributed as dist
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tiny_gpt import TinyGPT
from train import batches, make_corpus


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--batch", type=int, default=8, help="sequences per rank and step")
    parser.add_argument("--context", type=int, default=64)
    parser.add_argument("--bf16", action="store_true", help="bf16 compute, fp32 gradient reduction")
    args = parser.parse_args()

    rank = int(os.environ["RANK"])
    device = torch.device("axon", int(os.environ.get("LOCAL_RANK", rank)) % torch.axon.device_count())
    torch.axon.set_device(device)
    dist.init_process_group(device_id=device)
    world = dist.get_world_size()

    text = make_corpus(200_000)
    vocab = sorted(set(text))
    stoi = {c: i for i, c in enumerate(vocab)}
    data = torch.tensor([stoi[c] for c in text], dtype=torch.long)
    torch.manual_seed(0)  # same initial weights on every rank
    model = TinyGPT(len(vocab), args.context).to(device)
    policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32) if args.bf16 \
        else MixedPrecisionPolicy()
    for block in model.blocks:
        fully_shard(block, mp_policy=policy)
    fully_shard(model, mp_policy=policy)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)

    if rank == 0:
        parameters = sum(p.numel() for p in model.parameters())
        print(f"FSDP2 on {world} axon devices ({dist.get_backend()} backend), {parameters / 1e6:.2f}M parameters, "
              f"{'bf16' if args.bf16 else 'fp32'} compute, {args.steps} steps of {args.batch}x{args.context} per rank")
    losses = []
    start = time.perf_counter()
    for step, (x, y) in enumerate(batches(data, args.steps, args.batch, args.context, seed=1000 + rank)):
        _, loss = model(x.to(device), y.to(device))
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        reported = loss.detach().float()
        dist.all_reduce(reported, op=dist.ReduceOp.AVG)
        losses.append(reported.item())
        if rank == 0 and (step % 10 == 0 or step == args.steps - 1):
            print(f"  step {step:4d}  loss {losses[-1]:.4f}", flush=True)
    elapsed = time.perf_counter() - start
    if rank == 0:
        tokens = args.steps * args.batch * args.context * world
        print(f"throughput: {tokens / elapsed:,.0f} tokens/s over {world} ranks ({elapsed:.2f} s); "
              f"axon:{device.index} peak allocated {torch.axon.max_memory_allocated(device) / 2**20:.1f} MiB")
    ok = losses[-1] < losses[0] * 0.8
    if rank == 0:
        print("OK: the loss dropped" if ok else f"FAILED: loss {losses[0]:.3f} -> {losses[-1]:.3f}")
    dist.destroy_process_group()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
