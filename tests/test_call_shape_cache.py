"""The generic kernel's cache of call outcomes (csrc/ops/shape_inference.cpp).

A call whose outcome is not cached runs the CPU kernel once on stand-ins of its
arguments; a call that differs from a cached one only in a Scalar's value (an
optimizer's step size changes every step) reuses the cached outcome when its
meta kernel agrees, so it pays no such run.
"""

import pytest
import torch

import torch_axon


def _runs():
    return torch_axon._C._testing.reference_runs()


def test_a_new_scalar_value_reuses_the_cached_outcome():
    cpu = [torch.rand(4096, generator=torch.Generator().manual_seed(i)) + 0.5 for i in range(3)]
    a, b, c = (t.to("axon") for t in cpu)
    a.addcdiv_(b, c, value=0.25)
    cpu[0].addcdiv_(cpu[1], cpu[2], value=0.25)
    before = _runs()
    for step in range(1, 20):
        value = -1e-3 / (1 - 0.9 ** step)  # AdamW's bias-corrected step size
        a.addcdiv_(b, c, value=value)
        cpu[0].addcdiv_(cpu[1], cpu[2], value=value)
    assert _runs() == before
    torch.testing.assert_close(a.cpu(), cpu[0])


def test_each_scalar_value_gives_its_own_result():
    x = torch.linspace(-2, 2, 64)
    for value in (0.5, -1.25, 3.0):
        torch.testing.assert_close(torch.clamp(x.to("axon"), min=value).cpu(), torch.clamp(x, min=value))
        torch.testing.assert_close((x.to("axon") * value).cpu(), x * value)


@pytest.mark.parametrize("end", [4.5, 9.5, 2.5])
def test_scalar_values_that_change_the_output_shape_are_not_reused(end):
    torch.testing.assert_close(torch.arange(0.0, end, 0.5, device="axon").cpu(), torch.arange(0.0, end, 0.5))


@pytest.mark.parametrize("dtype, value", [(torch.float16, 1e10), (torch.float32, 1e300)])
def test_a_scalar_that_overflows_the_dtype_still_raises_at_the_call(dtype, value):
    x = torch.ones(8, dtype=dtype, device="axon")
    x.fill_(2.0)  # cached with an ordinary value first
    x.add_(x, alpha=0.5)
    with pytest.raises(RuntimeError, match="overflow") as cpu_error:
        torch.ones(8, dtype=dtype).fill_(value)
    with pytest.raises(type(cpu_error.value), match="overflow"):
        x.fill_(value)
    with pytest.raises(RuntimeError, match="overflow"):
        torch.ones(8, dtype=dtype).add_(torch.ones(8, dtype=dtype), alpha=value)
    with pytest.raises(RuntimeError, match="overflow"):
        x.add_(x, alpha=value)
    assert torch.equal(x.cpu(), torch.full((8,), 3.0, dtype=dtype))
