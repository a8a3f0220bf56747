"""Parallel training on axon against the same training on one process.

torchrun --nproc-per-node 2 tests/distributed/training.py
Every check trains (or runs) a small model distributed over the ranks and
compares losses / parameters with a single-process run of the same model on
the same global batches, computed locally on each rank.
"""

from __future__ import annotations

import copy
import os
import shutil
import tempfile

import torch
import torch.distributed as dist
from common import close, device, rank, reference_losses, run_checks, token_batches
from tiny_gpt import TinyGPT
from torch import nn

import torch_axon  # noqa: F401

VOCAB, CONTEXT, STEPS, GLOBAL_BATCH = 32, 8, 4, 4


def world() -> int:
    return dist.get_world_size()


def make_model(seed: int = 0) -> TinyGPT:
    torch.manual_seed(seed)
    return TinyGPT(VOCAB, CONTEXT, width=32, heads=2, layers=2).to(device())


def batches():
    return token_batches(123, STEPS, VOCAB, CONTEXT, GLOBAL_BATCH)


def local_shard(tensor: torch.Tensor) -> torch.Tensor:
    per_rank = tensor.shape[0] // world()
    return tensor[rank() * per_rank:(rank() + 1) * per_rank]


def data_parallel_losses(model: nn.Module, optimizer) -> list[float]:
    """Trains on this rank's part of each global batch; returns the global mean losses."""
    losses = []
    for tokens, targets in batches():
        _, loss = model(local_shard(tokens), local_shard(targets))
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        reported = loss.detach().clone()
        dist.all_reduce(reported, op=dist.ReduceOp.AVG)
        losses.append(reported.item())
    return losses


def check_losses(actual, expected, what, tolerance=1e-4):
    close(torch.tensor(actual), torch.tensor(expected), what, atol=tolerance, rtol=tolerance)


def check_ddp_gpt():
    from torch.nn.parallel import DistributedDataParallel

    base = make_model()
    expected, reference = reference_losses(base, batches())
    model = DistributedDataParallel(copy.deepcopy(base), bucket_cap_mb=0.01)  # several buckets
    losses = data_parallel_losses(model, torch.optim.SGD(model.parameters(), lr=0.1))
    check_losses(losses, expected, "DDP losses")
    for (name, p), q in zip(model.module.named_parameters(), reference.parameters()):
        close(p, q, f"DDP parameter {name}", atol=1e-4, rtol=1e-4)


def check_ddp_comm_hook():
    """A Python comm hook chains on the axon Work's future (Future.then on axon tensors)."""
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
    from torch.nn.parallel import DistributedDataParallel

    base = make_model()
    expected, _ = reference_losses(base, batches())
    model = DistributedDataParallel(copy.deepcopy(base), bucket_cap_mb=0.01)
    model.register_comm_hook(None, default_hooks.fp16_compress_hook)
    losses = data_parallel_losses(model, torch.optim.SGD(model.parameters(), lr=0.1))
    check_losses(losses, expected, "DDP fp16_compress_hook losses", tolerance=2e-2)


def check_fsdp2_gpt():
    from torch.distributed.fsdp import fully_shard

    base = make_model()
    expected, reference = reference_losses(base, batches())
    model = copy.deepcopy(base)
    for block in model.blocks:
        fully_shard(block)
    fully_shard(model)
    assert model.token.weight.device_mesh.device_type == "axon"
    losses = data_parallel_losses(model, torch.optim.SGD(model.parameters(), lr=0.1))
    check_losses(losses, expected, "FSDP2 losses")
    for (name, p), q in zip(model.named_parameters(), reference.parameters()):
        close(p.full_tensor(), q, f"FSDP2 parameter {name}", atol=1e-4, rtol=1e-4)


def check_fsdp2_mixed_precision():
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    base = make_model()
    expected, _ = reference_losses(base, batches())
    model = copy.deepcopy(base)
    policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    for block in model.blocks:
        fully_shard(block, mp_policy=policy)
    fully_shard(model, mp_policy=policy)
    losses = data_parallel_losses(model, torch.optim.SGD(model.parameters(), lr=0.1))
    assert model.token.weight.dtype == torch.float32  # sharded master weights stay fp32
    check_losses(losses, expected, "FSDP2 bf16 losses (vs fp32)", tolerance=5e-2)


def check_zero_redundancy_optimizer():
    from torch.distributed.optim import ZeroRedundancyOptimizer
    from torch.nn.parallel import DistributedDataParallel

    base = make_model()
    expected, reference = reference_losses(base, batches(), lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9))
    model = DistributedDataParallel(copy.deepcopy(base))
    optimizer = ZeroRedundancyOptimizer(model.parameters(), optimizer_class=torch.optim.SGD, lr=0.1, momentum=0.9)
    losses = data_parallel_losses(model, optimizer)
    check_losses(losses, expected, "ZeRO losses")
    for p, q in zip(model.module.parameters(), reference.parameters()):
        close(p, q, "ZeRO parameter", atol=1e-4, rtol=1e-4)
    optimizer.consolidate_state_dict(to=0)
    if rank() == 0:
        assert len(optimizer.state_dict()["state"]) == len(list(base.parameters()))


def check_tensor_and_sequence_parallel():
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import Shard
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, SequenceParallel, parallelize_module

    mesh = init_device_mesh("axon", (world(),))
    torch.manual_seed(1)
    block = nn.ModuleDict({"norm": nn.LayerNorm(16), "up": nn.Linear(16, 32), "down": nn.Linear(32, 16)}).to(device())
    reference = copy.deepcopy(block)
    parallel = parallelize_module(copy.deepcopy(block), mesh, {
        "norm": SequenceParallel(),
        "up": ColwiseParallel(input_layouts=Shard(1)),
        "down": RowwiseParallel(output_layouts=Shard(1)),
    })

    def run(module, x):
        return module["down"](torch.relu(module["up"](module["norm"](x))))

    torch.manual_seed(2)
    x = torch.randn(2, 8, 16, device=device())
    expected = run(reference, x)
    expected.sum().backward()
    local_x = x.chunk(world(), dim=1)[rank()]
    out = run(parallel, local_x)
    out.sum().backward()
    full = out.full_tensor() if hasattr(out, "full_tensor") else out
    if full.shape != expected.shape:  # local sequence shard
        full = torch.cat([t.to(device()) for t in _all_gather_sequence(out)], dim=1)
    close(full, expected, "TP+SP output", atol=1e-5)
    close(parallel["up"].weight.grad.full_tensor(), reference["up"].weight.grad, "TP+SP up.weight grad", atol=1e-4)
    close(parallel["down"].weight.grad.full_tensor(), reference["down"].weight.grad, "TP+SP down.weight grad",
          atol=1e-4)


def _all_gather_sequence(local):
    local = local.to_local() if hasattr(local, "to_local") else local
    pieces = [torch.empty_like(local) for _ in range(world())]
    dist.all_gather(pieces, local.contiguous())
    return pieces


def check_dtensor_random_ops():
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import Replicate, Shard, distribute_tensor

    mesh = init_device_mesh("axon", (world(),))
    torch.manual_seed(7)
    sharded = distribute_tensor(torch.empty(8, 4, device=device()), mesh, [Shard(0)])
    torch.nn.init.uniform_(sharded)
    full = sharded.full_tensor()
    halves = full.chunk(world())
    assert not torch.equal(halves[0].cpu(), halves[1].cpu()), "shards drew the same random numbers"
    torch.manual_seed(7)
    replicated = distribute_tensor(torch.empty(8, 4, device=device()), mesh, [Replicate()])
    torch.nn.init.normal_(replicated)
    local = replicated.to_local()
    pieces = [torch.empty_like(local) for _ in range(world())]
    dist.all_gather(pieces, local)
    close(pieces[0], pieces[1], "replicated DTensor random init agrees across ranks")
    dropped = torch.nn.functional.dropout(distribute_tensor(torch.ones(8, 8, device=device()), mesh, [Shard(0)]),
                                          p=0.5)
    assert dropped.full_tensor().eq(0).any() and dropped.full_tensor().ne(0).any()


def check_pipeline_parallel():
    from torch.distributed.pipelining import PipelineStage, Schedule1F1B, ScheduleGPipe

    for schedule_class in (ScheduleGPipe, Schedule1F1B):
        pipeline_parallel_step(PipelineStage, schedule_class)


def pipeline_parallel_step(PipelineStage, schedule_class):

    torch.manual_seed(3)
    layers = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 16), nn.Tanh(), nn.Linear(16, 4)).to(device())
    reference = copy.deepcopy(layers)
    stages = [nn.Sequential(*list(layers)[:2]), nn.Sequential(*list(layers)[2:])]
    stage_module = copy.deepcopy(stages[rank()])
    stage = PipelineStage(stage_module, rank(), world(), device())
    loss_fn = nn.MSELoss()
    schedule = schedule_class(stage, n_microbatches=2, loss_fn=loss_fn)
    torch.manual_seed(4)
    x = torch.randn(4, 8, device=device())
    target = torch.randn(4, 4, device=device())
    losses = []
    if rank() == 0:
        schedule.step(x)
    else:
        schedule.step(target=target, losses=losses)
    # Reference: same micro-batches, loss averaged like the schedule (sum of micro-batch means / n).
    expected_grads = []
    for chunk_x, chunk_t in zip(x.chunk(2), target.chunk(2)):
        (loss_fn(reference(chunk_x), chunk_t) / 2).backward()  # the schedule averages micro-batches
    offset = 0 if rank() == 0 else 2
    for p, q in zip(stage_module.parameters(), list(reference.parameters())[offset:]):
        expected_grads.append(q.grad)
        close(p.grad, q.grad, f"{schedule_class.__name__} gradient", atol=1e-5)
    if rank() == world() - 1:
        expected_losses = [loss_fn(reference(cx), ct) for cx, ct in zip(x.chunk(2), target.chunk(2))]
        for got, want in zip(losses, expected_losses):
            close(got, want, f"{schedule_class.__name__} micro-batch loss", atol=1e-5)


def check_distributed_checkpoint_resharding():
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.state_dict import get_model_state_dict, set_model_state_dict
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard
    from torch.distributed.tensor import Shard, distribute_tensor

    base = make_model(seed=5)
    model = copy.deepcopy(base)
    fully_shard(model)
    directory = [tempfile.mkdtemp(prefix="axon-dcp-") if rank() == 0 else None]
    dist.broadcast_object_list(directory, src=0)
    dcp.save(get_model_state_dict(model), checkpoint_id=directory[0])
    # Load into a differently laid out copy: every parameter sharded on dim -1 (or replicated).
    mesh = init_device_mesh("axon", (world(),))
    other = make_model(seed=6)
    state = {}
    for name, value in other.state_dict().items():
        placement = [Shard(value.dim() - 1)] if value.dim() > 0 and value.shape[-1] % world() == 0 else None
        state[name] = distribute_tensor(value, mesh, placement) if placement else value
    dcp.load(state, checkpoint_id=directory[0])
    for name, value in base.state_dict().items():
        loaded = state[name].full_tensor() if hasattr(state[name], "full_tensor") else state[name]
        close(loaded, value, f"DCP resharded {name}")
    # And back into the FSDP model through the state-dict API.
    fresh = make_model(seed=8)
    fully_shard(fresh)
    loaded = get_model_state_dict(fresh)
    dcp.load(loaded, checkpoint_id=directory[0])
    set_model_state_dict(fresh, loaded)
    for (name, p), q in zip(fresh.named_parameters(), base.parameters()):
        close(p.full_tensor(), q, f"DCP into FSDP {name}")
    dist.barrier()  # every rank has read the checkpoint before rank 0 removes it
    if rank() == 0:
        shutil.rmtree(directory[0])


def main():
    torch.axon.set_device(device())
    dist.init_process_group(device_id=device())
    assert dist.get_backend() == "axon", dist.get_backend()
    selected = os.environ.get("AXON_TEST_CHECKS")
    checks = [check_ddp_gpt, check_ddp_comm_hook, check_fsdp2_gpt, check_fsdp2_mixed_precision,
              check_zero_redundancy_optimizer, check_tensor_and_sequence_parallel, check_dtensor_random_ops,
              check_pipeline_parallel, check_distributed_checkpoint_resharding]
    if selected:
        checks = [c for c in checks if c.__name__ in selected.split(",")]
    run_checks(checks)


if __name__ == "__main__":
    main()
