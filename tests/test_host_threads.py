"""Which host threads run CPU kernels in parallel: only the device's worker, so libgomp keeps spinning."""

import pytest
import torch
from conftest import requires_not_blocking, run_python

pytestmark = requires_not_blocking


@pytest.mark.skipif(torch.get_num_threads() < 2, reason="parallel kernels need at least two intra-op threads")
def test_working_out_a_new_shape_starts_no_openmp_team_on_the_calling_thread():
    # A fresh process: another test's CPU work would already have given the main thread a team.
    result = run_python(
        """
        import os
        import torch
        import torch.nn.functional as F

        def threads():
            return len(os.listdir("/proc/self/task"))

        x = torch.randn(8, 128, 256, device="axon")
        (x + x).sum().item()  # the worker's own parallel kernels start its helpers
        before = threads()
        # New operators and shapes: their output layouts are worked out on this thread,
        # with the CPU kernels run on stand-ins of these sizes (parallel on the CPU).
        F.gelu(x).sum().item()
        x.view(1024, 256).softmax(-1).sum().item()
        F.layer_norm(x, (256,)).sum().item()
        print(before, threads())
        """,
        env={"TORCH_DEVICE_BACKEND_AUTOLOAD": "1"},
    )
    assert result.returncode == 0, result.stderr
    before, after = map(int, result.stdout.split())
    assert after == before, "a new thread started while the calling thread worked out output layouts"


_IDLE_SPIN = """
import resource, statistics, time
import torch
from torch_axon._C import _testing

def idle_cpu_ms():
    # Process CPU time over 100 ms in which the device is idle, right after a parallel kernel of its worker:
    # what the worker's OpenMP helper spends spinning for the next kernel.
    samples = []
    for _ in range(5):
        (x * 2).sum().item()
        usage = resource.getrusage(resource.RUSAGE_SELF)
        start = usage.ru_utime + usage.ru_stime
        time.sleep(0.1)
        usage = resource.getrusage(resource.RUSAGE_SELF)
        samples.append((usage.ru_utime + usage.ru_stime - start) * 1e3)
    return statistics.median(samples)

x = torch.randn(2048, 2048, device="axon")
before = idle_cpu_ms()
parked_before = _testing.cores_freed_for_compiled_code()
torch.compile(lambda t: t + 1, backend="axon")(torch.randn(4, device="axon"))
torch.axon.synchronize()
time.sleep(0.05)
print(before, parked_before, idle_cpu_ms(), _testing.cores_freed_for_compiled_code())
"""


@pytest.mark.skipif(torch.get_num_threads() < 2, reason="parallel kernels need at least two intra-op threads")
def test_a_compiled_executable_makes_the_workers_openmp_helper_stop_spinning():
    # XLA:CPU runs executables on threads of its own, which a spinning helper would take a core from
    # (host_execution/compiled_code_cores.h). Eager-only processes keep the spin.
    result = run_python(_IDLE_SPIN, env={"TORCH_DEVICE_BACKEND_AUTOLOAD": "1"})
    assert result.returncode == 0, result.stderr
    before, parked_before, after, parked_after = result.stdout.split()
    assert parked_before == "False" and parked_after == "True"
    assert float(before) > 1.5, f"the helper spent {before} ms spinning before any executable: expected it to spin"
    assert float(after) < 1.0, f"the helper spent {after} ms of 100 idle ms spinning after an executable loaded"


def test_small_kernels_run_on_one_thread_and_topk_with_the_team():
    # Below 1 MiB a kernel runs on one thread (waking a helper costs more than it gives back), except
    # topk, whose CPU kernel takes 5-7x longer on one thread at these sizes (docs/benchmarks.md, stop 50).
    import torch_axon

    launches = torch_axon._C._testing.single_thread_launches
    x = torch.randn(256, 256, device="axon")
    expected = x.cpu().topk(16, -1)
    torch.axon.synchronize()
    before = launches()
    torch.erf(x)
    torch.axon.synchronize()
    assert launches() == before + 1
    values, indices = x.topk(16, -1)
    torch.axon.synchronize()
    assert launches() == before + 1
    assert torch.equal(values.cpu(), expected.values) and torch.equal(indices.cpu(), expected.indices)
