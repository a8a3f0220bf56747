"""Axon's block kernels for attention (csrc/host_execution/attention_blocks.h), behind the CPU's flash
attention operators that scaled_dot_product_attention calls (direct_attention.h).

They compute the same softmax attention as the CPU's flash kernels in another summation order, so values
are compared with a float64 reference and with the CPU at float32 rounding, and layouts (the output's,
the log-sum-exp's, the gradients') must be the CPU's exactly. Each case also checks that the block kernels
took the call (the direct launch counter), so that a case cannot pass by having been left to the CPU's
kernels; and the calls they do not take still raise the CPU's errors at the call.
"""

import math

import pytest
import torch
import torch.nn.functional as F
from conftest import direct_launches, draw

import torch_axon

aten = torch.ops.aten
testing = torch_axon._C._testing

pytestmark = pytest.mark.skipif(not testing.attention_blocks_available(), reason="PyTorch built without MKL")


def reference(q, k, v, causal, scale):
    """Softmax attention in float64 with the CPU's causal alignment (query row i sees keys 0..i)."""
    q, k, v = (t.double() for t in (q, k, v))
    scores = q @ k.transpose(-1, -2) * (scale if scale is not None else 1 / math.sqrt(q.shape[-1]))
    if causal:
        scores = scores.masked_fill(torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool).triu(1), -math.inf)
    return scores.softmax(-1) @ v, scores.logsumexp(-1)


def attention_on(device, q, k, v, causal, scale, grad):
    """Output, log-sum-exp and the three gradients from the flash operators on `device`."""
    q, k, v, grad = (t.to(device) for t in (q, k, v, grad))
    out, lse = aten._scaled_dot_product_flash_attention_for_cpu(q, k, v, 0.0, causal, scale=scale)
    grads = aten._scaled_dot_product_flash_attention_for_cpu_backward(grad, q, k, v, out, lse, 0.0, causal,
                                                                      scale=scale)
    return out, lse, grads


SHAPES = [
    # batch, heads, query rows, keys, head size
    (8, 4, 128, 128, 64),   # the GPT of bench/training.py
    (2, 3, 5, 5, 4),        # fewer rows than a block
    (1, 2, 70, 40, 16),     # more queries than keys: later rows see every key under the causal mask
    (1, 2, 40, 70, 16),     # more keys than queries
    (2, 1, 33, 33, 8),      # a block boundary plus one row
    (1, 1, 1, 1024, 32),    # one query row, the longest key sequence the blocks take
]


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_values_and_layouts_match_the_cpu(shape, causal):
    batch, heads, rows, keys, size = shape
    q, k, v = draw(batch, heads, rows, size, seed=1), draw(batch, heads, keys, size, seed=2), draw(
        batch, heads, keys, size, seed=3)
    grad = draw(batch, heads, rows, size, seed=4)
    before = direct_launches()
    out, lse, grads = attention_on("axon", q, k, v, causal, None, grad)
    assert direct_launches() - before == 2
    cpu_out, cpu_lse, cpu_grads = attention_on("cpu", q, k, v, causal, None, grad)
    expected_out, expected_lse = reference(q, k, v, causal, None)
    for got, cpu in zip((out, lse, *grads), (cpu_out, cpu_lse, *cpu_grads)):
        assert got.device.type == "axon" and got.stride() == cpu.stride() and got.shape == cpu.shape
        torch.testing.assert_close(got.cpu(), cpu, rtol=2e-5, atol=2e-5)
    torch.testing.assert_close(out.cpu().double(), expected_out, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(lse.cpu().double(), expected_lse, rtol=1e-5, atol=1e-5)


def test_a_gpts_views_of_one_projection_and_autograd():
    """q, k and v as views of one [B, T, 3·W] projection (rows 3·W apart), the output read back through
    transpose; gradients by autograd through scaled_dot_product_attention, with an explicit scale."""
    batch, length, heads, size = 2, 48, 3, 8
    projection = draw(batch, length, 3 * heads * size, seed=5)

    def run(device):
        p = projection.to(device).requires_grad_()
        q, k, v = (t.view(batch, length, heads, size).transpose(1, 2) for t in p.split(heads * size, dim=2))
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.3)
        out.transpose(1, 2).reshape(batch, length, -1).square().sum().backward()
        return out, p.grad

    testing.set_attention_blocks_enabled(False)
    try:
        before = direct_launches()
        run("axon")
        without_blocks = direct_launches() - before
    finally:
        testing.set_attention_blocks_enabled(True)
    before = direct_launches()
    out, grad = run("axon")
    assert direct_launches() - before == without_blocks + 2  # the forward and the backward
    cpu_out, cpu_grad = run("cpu")
    assert out.stride() == cpu_out.stride()
    torch.testing.assert_close(out.cpu(), cpu_out, rtol=2e-5, atol=2e-5)
    torch.testing.assert_close(grad.cpu(), cpu_grad, rtol=2e-5, atol=2e-5)


def test_rows_of_infinite_scores_give_the_cpus_values():
    """A row whose scores are all -inf or NaN is the CPU's "fully masked" row: zeros, log-sum-exp 0.
    NaN values and infinite scores elsewhere give NaN where the CPU's do."""
    q, k, v = draw(1, 1, 6, 4, seed=6), draw(1, 1, 6, 4, seed=7), draw(1, 1, 6, 4, seed=8)
    masked_row = q.clone()
    masked_row[0, 0, 0] = -math.inf  # row 0 sees only key 0 under the causal mask: a NaN score
    nan_value = v.clone()
    nan_value[0, 0, 1, 2] = math.nan
    infinite_key = k.clone()
    infinite_key[0, 0, 3, 0] = -math.inf
    for q_, k_, v_ in ((masked_row, k, v), (q, k, nan_value), (q, infinite_key, v)):
        for causal in (False, True):
            got = aten._scaled_dot_product_flash_attention_for_cpu(q_.to("axon"), k_.to("axon"), v_.to("axon"),
                                                                     0.0, causal)
            expected = aten._scaled_dot_product_flash_attention_for_cpu(q_, k_, v_, 0.0, causal)
            for g, e in zip(got, expected):
                torch.testing.assert_close(g.cpu(), e, rtol=2e-5, atol=2e-5, equal_nan=True)


def test_calls_the_blocks_decline_run_the_cpus_kernels():
    """An explicit mask, float64, and more keys than the blocks take: the CPU's flash kernels, same values."""
    q, k, v = (draw(1, 2, 8, 4, seed=s) for s in (9, 10, 11))
    mask = torch.zeros(8, 8).masked_fill(torch.ones(8, 8, dtype=torch.bool).triu(1), -math.inf)
    long_k, long_v = draw(1, 2, 1025, 4, seed=12), draw(1, 2, 1025, 4, seed=13)
    declined = [
        ((q, k, v), {"attn_mask": mask}),
        ((q.double(), k.double(), v.double()), {}),
        ((q, long_k, long_v), {}),
    ]
    for tensors, options in declined:
        on_axon = [t.to("axon") for t in tensors]
        axon_options = {name: t.to("axon") for name, t in options.items()}
        before = direct_launches()
        got = aten._scaled_dot_product_flash_attention_for_cpu(*on_axon, 0.0, False, **axon_options)
        assert direct_launches() == before
        expected = aten._scaled_dot_product_flash_attention_for_cpu(*tensors, 0.0, False, **options)
        for g, e in zip(got, expected):
            assert g.stride() == e.stride()
            torch.testing.assert_close(g.cpu(), e, rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("case", ["dropout", "value width"])
def test_calls_the_cpu_refuses_raise_its_error_at_the_call(case):
    q, k, v = draw(1, 2, 8, 4, seed=17), draw(1, 2, 8, 4, seed=18), draw(1, 2, 8, 4, seed=19)
    dropout = 0.5 if case == "dropout" else 0.0
    if case == "value width":
        v = draw(1, 2, 8, 6, seed=20)
    with pytest.raises(RuntimeError) as cpu_error:
        aten._scaled_dot_product_flash_attention_for_cpu(q, k, v, dropout, False)
    with pytest.raises(RuntimeError) as axon_error:
        aten._scaled_dot_product_flash_attention_for_cpu(q.to("axon"), k.to("axon"), v.to("axon"), dropout, False)
    assert str(cpu_error.value).splitlines()[0] in str(axon_error.value)


def test_the_switch_for_comparisons_hands_calls_to_the_cpus_kernels():
    q, k, v = (draw(1, 2, 8, 4, seed=s).to("axon") for s in (21, 22, 23))
    testing.set_attention_blocks_enabled(False)
    try:
        before = direct_launches()
        off = aten._scaled_dot_product_flash_attention_for_cpu(q, k, v, 0.0, True)[0]
        assert direct_launches() == before
    finally:
        testing.set_attention_blocks_enabled(True)
    on = aten._scaled_dot_product_flash_attention_for_cpu(q, k, v, 0.0, True)[0]
    torch.testing.assert_close(on.cpu(), off.cpu(), rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("scale, causal", [(math.nan, False), (math.inf, False), (0.0, True), (-0.5, True)])
def test_scales_the_blocks_cannot_take_keep_the_cpus_values(scale, causal):
    """The block kernels take the scale as their products' alpha: a scale that is not finite, and a causal
    call's scale of 0 or less (where the CPU's kernel gives NaN), go to the CPU's kernels."""
    q, k, v = (draw(1, 1, 16, 8, seed=s) for s in (24, 25, 26))
    before = direct_launches()
    got = aten._scaled_dot_product_flash_attention_for_cpu(q.to("axon"), k.to("axon"), v.to("axon"), 0.0, causal,
                                                           scale=scale)
    assert direct_launches() == before
    expected = aten._scaled_dot_product_flash_attention_for_cpu(q, k, v, 0.0, causal, scale=scale)
    for g, e in zip(got, expected):
        torch.testing.assert_close(g.cpu(), e, equal_nan=True)


def test_a_gradient_whose_row_stride_no_gemm_takes_goes_to_the_cpus_kernel():
    """A size-1 query dimension may carry any stride; one past 32 bits is no GEMM leading dimension."""
    q, k, v = draw(1, 2, 1, 16, seed=27), draw(1, 2, 40, 16, seed=28), draw(1, 2, 40, 16, seed=29)
    gradient = draw(32, seed=30)
    results = {}
    for device in ("cpu", "axon"):
        q_, k_, v_ = (t.to(device) for t in (q, k, v))
        out, lse = aten._scaled_dot_product_flash_attention_for_cpu(q_, k_, v_, 0.0, False)
        grad_out = gradient.to(device).as_strided((1, 2, 1, 16), (32, 16, 2**32 + 1, 1))
        before = direct_launches()
        results[device] = aten._scaled_dot_product_flash_attention_for_cpu_backward(grad_out, q_, k_, v_, out, lse,
                                                                                     0.0, False)
        if device == "axon":
            assert direct_launches() == before
    for g, e in zip(results["axon"], results["cpu"]):
        torch.testing.assert_close(g.cpu(), e, rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
@pytest.mark.parametrize("empty", ["heads", "query rows", "keys"])
def test_calls_with_nothing_to_attend_return_zeros_where_the_cpus_kernel_divides_by_zero(empty, dtype):
    """No heads, query rows or keys: the CPU's kernel dies of SIGFPE. Every query row then sees no key, which
    the CPU's kernels answer as a fully masked row (zeros, log-sum-exp 0); gradients are zeros. Layouts are
    those the CPU's operators give (output empty_like(query), the rest [B, L, H, D] in memory)."""
    heads, rows, keys = {"heads": (0, 4, 4), "query rows": (2, 0, 4), "keys": (2, 4, 0)}[empty]
    q = torch.randn(1, heads, rows, 8, dtype=dtype, device="axon")
    k, v = (torch.randn(1, heads, keys, 8, dtype=dtype, device="axon") for _ in range(2))
    out, lse = aten._scaled_dot_product_flash_attention_for_cpu(q, k, v, 0.0, True)
    grads = aten._scaled_dot_product_flash_attention_for_cpu_backward(torch.ones_like(out), q, k, v, out, lse, 0.0,
                                                                      True)
    assert out.shape == q.shape and out.stride() == q.stride() and not out.cpu().any()
    assert lse.dtype == (torch.float64 if dtype == torch.float64 else torch.float32)
    assert lse.shape == (1, heads, rows) and lse.stride() == torch.empty(1, rows, heads).transpose(1, 2).stride()
    assert not lse.cpu().any()
    for grad, like in zip(grads, (q, k, v)):
        assert grad.shape == like.shape and not grad.cpu().any()
        assert grad.stride() == torch.empty(like.shape[0], like.shape[2], like.shape[1], 8).transpose(1, 2).stride()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_a_head_dimension_with_gaps_gives_attentions_values(dtype):
    """The CPU's flash kernels read a head dimension of stride != 1 as if it were contiguous (wrong values);
    axon makes such operands contiguous first, for its own kernels and the CPU's alike."""
    q = draw(1, 2, 8, 16, seed=31).transpose(-1, -2).contiguous().transpose(-1, -2).to(dtype)
    k, v = draw(1, 2, 8, 16, seed=32).to(dtype), draw(1, 2, 8, 16, seed=33).to(dtype)
    assert q.stride(3) != 1
    out, lse = aten._scaled_dot_product_flash_attention_for_cpu(q.to("axon"), k.to("axon"), v.to("axon"), 0.0, False)
    expected_out, expected_lse = reference(q, k, v, False, None)
    torch.testing.assert_close(out.cpu().double(), expected_out, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(lse.cpu().double(), expected_lse, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("key_batch, key_heads, value_heads", [(1, 2, 2), (2, 2, 4), (2, 3, 3), (2, 8, 8)])
def test_batch_sizes_or_head_counts_the_cpus_kernel_misreads_raise_at_the_call(key_batch, key_heads, value_heads):
    """Query [2, 4, 8, 16]: the CPU's flash kernel takes grouped heads (4 query heads to 2 or 1 key heads) and
    nothing else, yet accepts these and reads out of bounds (or, with more key heads than query heads,
    divides by zero); axon raises."""
    q = torch.randn(2, 4, 8, 16, device="axon")
    k = torch.randn(key_batch, key_heads, 8, 16, device="axon")
    v = torch.randn(key_batch, value_heads, 8, 16, device="axon")
    with pytest.raises(RuntimeError, match="same batch size"):
        aten._scaled_dot_product_flash_attention_for_cpu(q, k, v, 0.0, False)


@pytest.mark.parametrize("key_heads", [2, 1])
def test_grouped_heads_run_the_cpus_kernel(key_heads):
    q = draw(2, 4, 8, 16, seed=34)
    k, v = draw(2, key_heads, 8, 16, seed=35), draw(2, key_heads, 8, 16, seed=36)
    got = aten._scaled_dot_product_flash_attention_for_cpu(q.to("axon"), k.to("axon"), v.to("axon"), 0.0, True)
    expected = aten._scaled_dot_product_flash_attention_for_cpu(q, k, v, 0.0, True)
    for g, e in zip(got, expected):
        torch.testing.assert_close(g.cpu(), e)
