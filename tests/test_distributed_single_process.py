"""The axon process-group backend in this process (world size 1): fast checks of
the Work/stream semantics that need no peer. Multi-process behaviour is in
tests/test_distributed.py."""

from __future__ import annotations

import pytest
import torch
import torch.distributed as dist
from conftest import requires_not_blocking

import torch_axon


@pytest.fixture(scope="module")
def group():
    dist.init_process_group("axon", store=dist.HashStore(), rank=0, world_size=1,
                            device_id=torch.device("axon", 0))
    yield dist.group.WORLD
    dist.destroy_process_group()


def test_backend_is_registered_for_the_device(group):
    assert dist.Backend.default_device_backend_map["axon"] == "axon"
    assert type(group._get_backend(torch.device("axon", 0))).__name__ == "ProcessGroupAxon"


def test_reduce_ops_on_one_rank(group):
    t = torch.arange(6.0, device="axon").view(2, 3)
    dist.all_reduce(t, op=dist.ReduceOp.AVG)
    assert torch.equal(t.cpu(), torch.arange(6.0).view(2, 3))
    dist.all_reduce(t, op=dist._make_nccl_premul_sum(2.0))
    assert torch.equal(t.cpu(), 2 * torch.arange(6.0).view(2, 3))
    view = t.t()  # non-contiguous: staged and copied back
    dist.all_reduce(view, op=dist.ReduceOp.MAX)
    assert torch.equal(t.cpu(), 2 * torch.arange(6.0).view(2, 3))


@requires_not_blocking
def test_async_collective_waits_for_the_callers_stream(group):
    from conftest import closed_gate

    x = torch.ones(4, device="axon")
    with closed_gate():
        y = x * 3  # queued behind the gate
        work = dist.all_reduce(y, async_op=True)  # returns although y is not computed yet
        assert not work.is_completed()
    work.wait()
    assert torch.equal((y + 1).cpu(), torch.full((4,), 4.0))
    assert work.result()[0] is y or torch.equal(work.result()[0].cpu(), y.cpu())


def test_future_then_runs_after_the_result(group):
    fut = dist.all_reduce(torch.full((3,), 2.0, device="axon"), async_op=True).get_future()
    assert torch.equal(fut.then(lambda f: f.value()[0] + 1).wait().cpu(), torch.full((3,), 3.0))


def test_bad_arguments_raise_at_the_call(group):
    with pytest.raises(TypeError, match="expected input/output tensors on axon, got a tensor on cpu"):
        group._get_backend(torch.device("axon", 0)).allreduce([torch.ones(2)]).wait()
    with pytest.raises(ValueError, match="ReduceOp.AVG expects floating-point tensors"):
        dist.all_reduce(torch.ones(2, dtype=torch.int32, device="axon"), op=dist.ReduceOp.AVG)
    if torch.axon.device_count() > 1:
        with pytest.raises(ValueError, match="expected every tensor on axon:1, got a tensor on axon:0 as output"):
            dist.all_gather([torch.empty(2, device="axon:0")], torch.ones(2, device="axon:1"))


def test_importing_torch_registers_the_backend():
    import subprocess
    import sys

    code = "import torch; print('AXON' in dir(torch.distributed.Backend))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=120)
    assert result.stdout.split() == ["True"], result.stdout + result.stderr
    assert torch_axon.distributed.BACKEND_NAME == "axon"


def test_collectives_show_in_the_profiler(group):
    t = torch.ones(4, device="axon")
    with torch.profiler.profile() as profile:
        dist.all_reduce(t)
        dist.broadcast(t, src=0, async_op=True).wait()
    names = {event.name for event in profile.events()}
    assert {"axon:all_reduce", "axon:broadcast"} <= names, sorted(n for n in names if "axon" in n)
