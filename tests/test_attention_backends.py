"""scaled_dot_product_attention on axon chooses its kernel as the CPU does (csrc/ops/attention_backend_choice.cpp)."""

from __future__ import annotations

import pytest
import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.nn.functional import scaled_dot_product_attention
from torch.utils._python_dispatch import TorchDispatchMode


class _Operators(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.seen = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.seen.append(str(func))
        return func(*args, **(kwargs or {}))


def _qkv(device, requires_grad=False):
    """The same query, key and value on either device (drawn on the CPU)."""
    generator = torch.Generator().manual_seed(0)
    return [torch.randn(2, 3, 8, 16, generator=generator).to(device).requires_grad_(requires_grad) for _ in range(3)]


def test_eager_runs_the_cpus_fused_kernel_forward_and_backward():
    cpu, axon = _qkv("cpu", True), _qkv("axon", True)
    with _Operators() as operators:
        out = scaled_dot_product_attention(*axon, is_causal=True)
    assert "aten._scaled_dot_product_flash_attention_for_cpu.default" in operators.seen
    assert "aten.bmm.default" not in operators.seen
    expected = scaled_dot_product_attention(*cpu, is_causal=True)
    torch.testing.assert_close(out.cpu(), expected)
    out.sum().backward()
    expected.sum().backward()
    for a, c in zip(axon, cpu):
        torch.testing.assert_close(a.grad.cpu(), c.grad)


@pytest.mark.parametrize("backend", [SDPBackend.EFFICIENT_ATTENTION, SDPBackend.CUDNN_ATTENTION])
def test_a_backend_the_cpu_refuses_is_refused(backend):
    with sdpa_kernel(backend):
        with pytest.raises(RuntimeError, match="No viable backend"):
            scaled_dot_product_attention(*_qkv("cpu"))
        with pytest.raises(RuntimeError, match="No viable backend"):
            scaled_dot_product_attention(*_qkv("axon"))


def test_math_only_decomposes_like_the_cpu():
    with sdpa_kernel(SDPBackend.MATH), _Operators() as operators:
        out = scaled_dot_product_attention(*_qkv("axon"))
    assert "aten._scaled_dot_product_flash_attention_for_cpu.default" not in operators.seen
    torch.testing.assert_close(out.cpu(), scaled_dot_product_attention(*_qkv("cpu")))


def test_fake_tensors_see_the_same_choice():
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode() as mode:
        fake = [mode.from_tensor(t) for t in _qkv("axon")]
        with _Operators() as operators:
            scaled_dot_product_attention(*fake, is_causal=True)
    assert "aten._scaled_dot_product_flash_attention_for_cpu.default" in operators.seen
