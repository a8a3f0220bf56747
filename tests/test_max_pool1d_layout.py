"""max_pool1d's result layout on axon is the CPU's (csrc/ops/max_pool1d_layout.cpp).

Without a gradient to record, the CPU runs a kernel of its own into a new contiguous tensor; with one,
it returns max_pool1d_with_indices' values, which keep a strided input's layout. Axon must give the
same strides in both cases (and in inference mode), the same values, and the same gradients.
"""

import pytest
import torch
import torch.nn.functional as F

INPUTS = {
    "contiguous": lambda: torch.randn(2, 3, 8),
    "transposed": lambda: torch.randn(2, 8, 3).transpose(1, 2),
    "batch transposed": lambda: torch.randn(3, 2, 8).transpose(0, 1),
    "unbatched transposed": lambda: torch.randn(8, 3).t(),
}


@pytest.mark.parametrize("name", list(INPUTS))
def test_strides_values_and_gradients_match_the_cpu(name):
    torch.manual_seed(0)
    x = INPUTS[name]()
    expected = F.max_pool1d(x, 2)
    got = F.max_pool1d(x.to("axon"), 2)
    assert got.stride() == expected.stride() and torch.equal(got.cpu(), expected)
    with torch.inference_mode():
        assert F.max_pool1d(x.to("axon"), 2).stride() == expected.stride()

    cpu_x = x.clone().requires_grad_()
    axon_x = x.to("axon").requires_grad_()
    expected = F.max_pool1d(cpu_x, 2, 1)
    got = F.max_pool1d(axon_x, 2, 1)
    assert got.stride() == expected.stride() and torch.equal(got.detach().cpu(), expected.detach())
    weights = torch.randn(expected.shape)
    (expected * weights).sum().backward()
    (got * weights.to("axon")).sum().backward()
    assert torch.equal(axon_x.grad.cpu(), cpu_x.grad)
