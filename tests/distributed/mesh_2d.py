"""FSDP x TP on a 2-D DeviceMesh of axon devices, against one process.

torchrun --nproc-per-node 4 tests/distributed/mesh_2d.py
Mesh (dp=2, tp=2): the GPT's MLPs are tensor-parallel over "tp", everything
is then fully sharded over "dp"; each dp rank trains on its half of the batch.
"""

from __future__ import annotations

import copy

import torch
import torch.distributed as dist
from common import close, device, reference_losses, run_checks, token_batches
from tiny_gpt import TinyGPT

import torch_axon  # noqa: F401

VOCAB, CONTEXT, STEPS, GLOBAL_BATCH = 32, 8, 3, 4


def batches():
    return token_batches(321, STEPS, VOCAB, CONTEXT, GLOBAL_BATCH)


def check_fsdp_tp_2d():
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

    # No init_process_group: init_device_mesh creates the default group with
    # the backend registered for "axon".
    mesh = init_device_mesh("axon", (2, 2), mesh_dim_names=("dp", "tp"))
    backend = dist.group.WORLD._get_backend(device())
    assert type(backend).__name__ == "ProcessGroupAxon", type(backend)
    dp_rank = mesh["dp"].get_local_rank()
    torch.manual_seed(0)
    base = TinyGPT(VOCAB, CONTEXT, width=32, heads=2, layers=2).to(device())
    expected, reference = reference_losses(base, batches())

    model = copy.deepcopy(base)
    for block in model.blocks:
        parallelize_module(block.mlp, mesh["tp"], {"0": ColwiseParallel(), "2": RowwiseParallel()})
        fully_shard(block, mesh=mesh["dp"])
    fully_shard(model, mesh=mesh["dp"])
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    losses = []
    for tokens, targets in batches():
        half = GLOBAL_BATCH // 2
        _, loss = model(tokens[dp_rank * half:(dp_rank + 1) * half], targets[dp_rank * half:(dp_rank + 1) * half])
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        reported = loss.detach().clone()
        dist.all_reduce(reported, op=dist.ReduceOp.AVG, group=mesh["dp"].get_group())
        losses.append(reported.item())
    close(torch.tensor(losses), torch.tensor(expected), "2-D losses", atol=1e-4, rtol=1e-4)
    for (name, p), q in zip(model.named_parameters(), reference.parameters()):
        close(p.full_tensor(), q, f"2-D parameter {name}", atol=1e-4, rtol=1e-4)
    weight = model.blocks[0].mlp[0].weight
    assert weight.device_mesh.ndim == 2, weight.device_mesh


def main():
    torch.axon.set_device(device())
    run_checks([check_fsdp_tp_2d])


if __name__ == "__main__":
    main()
