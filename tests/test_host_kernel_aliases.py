"""Host kernels see axon tensors as CPU aliases that share memory exactly as the axon tensors do.

On host-addressable memory the aliases are described on the dispatching thread and made on the
device's worker (DeferredAliases in csrc/host_execution/device_memory_views.h); elsewhere they view
staging buffers (HostAliases). Either way a CPU kernel must see one storage per axon storage and
one tensor per axon tensor, so its results and its overlap checks are the CPU's.
"""

from __future__ import annotations

import pytest
import torch
from conftest import run_python

import torch_axon  # noqa: F401


def both(make):
    """make(device) on the CPU and on axon, the axon result brought back."""
    expected = make("cpu")
    actual = make("axon")
    torch.axon.synchronize()
    return expected, (actual.cpu() if isinstance(actual, torch.Tensor) else actual)


def test_a_tensor_passed_twice_is_one_tensor():
    def run(device):
        x = torch.arange(8.0, device=device)
        y = x * x
        x.add_(x)
        return torch.cat([x, y])

    expected, actual = both(run)
    assert torch.equal(actual, expected)


def test_views_of_one_storage_share_it_as_operands_and_outputs():
    def run(device):
        buffer = torch.arange(24.0, device=device).reshape(3, 8)
        torch.add(buffer[1], buffer[2], out=buffer[0])  # out= beside its inputs in one storage
        buffer[2].mul_(buffer[1])  # in place, other operand in the same storage
        torch.clamp(buffer[0] - 30, min=0, out=buffer[1])
        return buffer

    expected, actual = both(run)
    assert torch.equal(actual, expected)


def test_partial_overlap_is_refused_as_on_the_cpu():
    with pytest.raises(RuntimeError, match="single memory location"):
        x = torch.arange(8.0)
        x[1:].add_(x[:-1])
    x = torch.arange(8.0, device="axon")
    with pytest.raises(RuntimeError, match="single memory location"):
        x[1:].add_(x[:-1])
        torch.axon.synchronize()
    assert torch.equal(x.cpu(), torch.arange(8.0))


def test_lazy_conjugation_and_negation_reach_the_kernel():
    def run(device):
        z = torch.tensor([1 + 2j, 3 - 4j, -5 + 6j], device=device)
        w = torch.tensor([2 - 1j, 1j, 3.0], device=device)
        return torch.stack(
            [z.conj() * w, torch._neg_view(z) + w, torch.mm(z.conj()[None], w[:, None]).flatten().repeat(3)]
        )

    expected, actual = both(run)
    assert torch.equal(actual, expected)


def test_large_operands_run_with_the_full_thread_team_and_stay_right():
    def run(device):
        generator = torch.Generator().manual_seed(0)
        a = torch.randn(1 << 20, generator=generator).to(device)
        b = torch.randn(1 << 20, generator=generator).to(device)
        return torch.stack([a + b, torch.relu(a), (a * b).cumsum(0)])

    expected, actual = both(run)
    assert torch.allclose(actual, expected, rtol=1e-5, atol=1e-3)


def test_results_and_arguments_returned_by_kernels_without_out_variants():
    def run(device):
        x = torch.linspace(-3, 3, 12, device=device).reshape(3, 4)
        values, indices = torch.max(x, dim=1)
        weight = torch.ones(4, device=device)
        normalized = torch.nn.functional.layer_norm(x, (4,), weight)
        return torch.cat([values, indices.to(x.dtype), normalized.flatten(), torch.relu(x).flatten()])

    expected, actual = both(run)
    assert torch.allclose(actual, expected, atol=1e-6)


def test_memory_the_host_cannot_address_is_staged_with_the_same_results():
    output = run_python(
        """
        import torch, torch_axon
        x = torch.arange(24.0).reshape(4, 6)
        d = x.to("axon")
        d[1].add_(d[2])
        torch.add(d[0], d[3], out=d[2])
        results = [d, d * d, torch.relu(d - 40), d.sum(1), d[:, :4] @ d[:, :4].T]
        x[1].add_(x[2])
        torch.add(x[0], x[3], out=x[2])
        expected = [x, x * x, torch.relu(x - 40), x.sum(1), x[:, :4] @ x[:, :4].T]
        print(all(torch.equal(r.cpu(), e) for r, e in zip(results, expected)))
        """,
        {"AXON_EMULATED_PRIVATE_MEMORY": "1"},
    )
    assert output.returncode == 0, output.stderr
    assert output.stdout.strip().endswith("True")
