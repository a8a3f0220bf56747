"""Compiled partitions hand back their results laid out in the order eager lays them out (output_layout.py),
with eager's strides where those are dense, so the ops after a partition see what they saw when the graph
was traced."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import torch_axon.compile as axon_compile
from torch_axon.compile.output_layout import output_layout

pytestmark = pytest.mark.usefixtures("fresh_compile_state")


def _meta(size, stride):
    return torch.empty_strided(size, stride, device="meta")


def test_layouts_of_contiguous_permuted_sliced_and_expanded_results():
    assert output_layout(_meta((4, 6), (6, 1))) is None
    assert output_layout(_meta((0, 6), (1, 4))) is None
    assert output_layout(_meta((4, 6), (1, 4))).order == (1, 0)
    assert output_layout(_meta((2, 3, 4, 5), (60, 1, 15, 3))).order == (0, 2, 3, 1)  # channels_last
    # A column slice of a projection keeps its order; its gaps close (it comes back dense in that order).
    column_slice = output_layout(_meta((8, 4, 128, 64), (98304, 64, 768, 1)))
    assert column_slice.order == (0, 2, 1, 3)
    delivered, binding = column_slice.allocate(_meta((8, 4, 128, 64), (98304, 64, 768, 1)), torch.device("meta"))
    assert delivered.stride() == (32768, 64, 256, 1) and binding.is_contiguous()
    assert output_layout(_meta((8, 256), (768, 1))) is None  # a row-major slice: row-major, gaps closed
    assert output_layout(_meta((4, 6), (0, 1))) is None  # expanded: elements share memory
    assert output_layout(_meta((4, 1, 6), (1, 1, 4))).order[:2] == (2, 0)


def _strided_inputs():
    x = torch.randn(6, 10, device="axon")
    images = torch.randn(2, 3, 5, 4, device="axon").to(memory_format=torch.channels_last)
    return {
        "elementwise on a transpose": (lambda t: torch.sin(t) * 2 + 1, x.t()),
        "elementwise on channels_last": (lambda t: torch.relu(t * 3), images),
        "reduction keeps the input's order": (lambda t: torch.exp(t).sum(dim=1, keepdim=True), images),
        "two results, two layouts": (lambda t: (t.t() * 2, t + 1), x),
    }


@pytest.mark.parametrize("name", list(_strided_inputs()))
def test_compiled_results_have_eager_strides(name):
    function, argument = _strided_inputs()[name]
    compiled = torch.compile(function, backend="axon", options={"strict": True})
    want, have = function(argument), compiled(argument)
    for expected, got in zip(torch.utils._pytree.tree_leaves(want), torch.utils._pytree.tree_leaves(have)):
        assert got.stride() == expected.stride(), f"{name}: strides {got.stride()}, eager {expected.stride()}"
        torch.testing.assert_close(got.cpu(), expected.cpu())


def _attention_block(x, weight, heads):
    """GPT attention: q, k, v column slices of one projection, seen (batch, heads, length, width)."""
    batch, length, width = x.shape
    q, k, v = (x @ weight).split(width, dim=2)
    q, k, v = (t.view(batch, length, heads, width // heads).transpose(1, 2) for t in (q, k, v))
    y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    return y.transpose(1, 2).reshape(batch, length, width) * 1


@pytest.mark.parametrize("training", [False, True], ids=["inference", "training"])
def test_an_eager_kernel_between_partitions_sees_its_traced_input_layout(monkeypatch, training):
    # Attention as an extern kernel runs eagerly between two partitions. Its inputs are column slices computed
    # in the first partition; the CPU kernel lays its result out like its query, and the graph's `reshape` was
    # traced as a `view` of that layout. Row-major q, k and v made that view raise.
    monkeypatch.setenv("AXON_COMPILE_EXTERN", "attention")
    torch.manual_seed(0)
    x = torch.randn(2, 16, 32, device="axon", requires_grad=training)
    weight = torch.randn(32, 96, device="axon", requires_grad=training)
    compiled = torch.compile(_attention_block, backend="axon")
    with torch.set_grad_enabled(training):
        want = _attention_block(x, weight, 4)
        expected_grads = torch.autograd.grad(want.sum(), (x, weight)) if training else ()
        have = compiled(x, weight, 4)
        grads = torch.autograd.grad(have.sum(), (x, weight)) if training else ()
    torch.testing.assert_close(have.cpu(), want.cpu())
    for got, expected in zip(grads, expected_grads):
        # The gradients reach several hundred, and XLA's products and MKL's sum them in different orders: entries
        # differ by up to about 6e-5, beyond assert_close's float32 defaults (1e-5 absolute, 1.3e-6 relative).
        torch.testing.assert_close(got.cpu(), expected.cpu(), rtol=2e-5, atol=2e-4)
    assert "eager: aten._scaled_dot_product_flash_attention_for_cpu.default" in str(axon_compile.report())
