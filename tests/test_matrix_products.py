"""Float matrix products that axon computes with oneDNN's matmul (csrc/host_execution/matrix_products.h):
mm, and addmm as nn.Linear calls it, from 8M multiply-adds up, on hosts with AVX-512.

oneDNN sums in another order than the CPU's MKL, so those products are checked against a float64
reference with the error bound of any float32 summation order (|error| <= K * 2^-24 * (|A| @ |B|),
plus the bias's rounding), not against the CPU's bits; each case also checks that oneDNN took the call
(its counter), so that a case cannot pass by having been left to MKL. Everything else — smaller
products, other dtypes, other alpha/beta, layouts with gaps, torch.backends.mkldnn disabled, the
switch off — must stay the CPU's bit for bit.
"""

import pytest
import torch
from conftest import assert_same_bits, draw
from torch import nn

import torch_axon

testing = torch_axon._C._testing

FLOAT_ROUNDING = 2.0**-24


def onednn_here():
    """Whether this host runs oneDNN's float products (AVX-512 BW/VL/DQ and a PyTorch with oneDNN)."""
    testing.forget_onednn_product_shapes()
    a = torch.randn(256, 256, device="axon")
    before = testing.onednn_product_runs()
    (a @ a).cpu()
    return testing.onednn_product_runs() > before


pytestmark = pytest.mark.skipif(not onednn_here(), reason="oneDNN's float products need AVX-512 BW/VL/DQ")


@pytest.fixture(autouse=True)
def fresh_shape_budget():
    """Each test starts with oneDNN's 32 distinct product shapes unspent (other tests spend them)."""
    testing.forget_onednn_product_shapes()
    yield


def assert_within_float_summation(result, a, b, bias=None):
    """result equals (a @ b + bias) within the rounding error any float32 summation order allows."""
    a64, b64 = a.double(), b.double()
    exact = a64 @ b64
    magnitude = a64.abs() @ b64.abs()
    if bias is not None:
        exact = exact + bias.double()
        magnitude = magnitude + bias.double().abs()
    bound = (a.shape[1] + 2) * FLOAT_ROUNDING * magnitude
    error = (result.double() - exact).abs()
    worst = error.argmax()
    assert bool((error <= bound).all()), f"error {error.flatten()[worst]:.3e}, bound {bound.flatten()[worst]:.3e}"


def layout(t, transposed):
    """t's values, in memory as t (contiguous) or as the transpose of a contiguous matrix."""
    return t.t().contiguous().t() if transposed else t.contiguous()


SHAPES = [
    # m, k, n
    (1024, 256, 768),   # the GPT's q/k/v projection in bench/training.py
    (128, 512, 1024),   # the MLP's first layer
    (256, 1024, 256),   # the GPT's weight gradient of its second MLP layer (k = the tokens)
    (203, 301, 157),    # odd sizes, just above the bound
]


@pytest.mark.parametrize("m,k,n", SHAPES)
@pytest.mark.parametrize("a_transposed", [False, True])
@pytest.mark.parametrize("b_transposed", [False, True])
def test_large_mm_takes_onednn_within_float_rounding(m, k, n, a_transposed, b_transposed):
    a, b = draw(m, k, seed=1), draw(k, n, seed=2)
    a_axon = layout(a.to("axon"), a_transposed)
    b_axon = layout(b.to("axon"), b_transposed)
    before = testing.onednn_product_runs()
    result = torch.mm(a_axon, b_axon)
    assert result.is_contiguous() and result.shape == (m, n)
    result = result.cpu()
    assert testing.onednn_product_runs() == before + 1
    assert_within_float_summation(result, a, b)


@pytest.mark.parametrize("bias_shape", ["row", "one_by_n", "m_by_n"])
def test_large_addmm_adds_the_bias_once(bias_shape):
    m, k, n = 512, 256, 384
    a, b = draw(m, k, seed=3), draw(k, n, seed=4)
    bias = {"row": draw(n, seed=5), "one_by_n": draw(1, n, seed=5), "m_by_n": draw(m, n, seed=5)}[bias_shape]
    before = testing.onednn_product_runs()
    result = torch.addmm(bias.to("axon"), a.to("axon"), b.to("axon")).cpu()
    assert testing.onednn_product_runs() == before + 1
    assert_within_float_summation(result, a, b, bias.expand(m, n))


def test_linear_forward_and_backward_take_onednn():
    torch.manual_seed(0)
    layer = nn.Linear(256, 768)
    x = draw(8, 128, 256, seed=6)
    grad = draw(8, 128, 768, seed=7)
    layer_axon = nn.Linear(256, 768).to("axon")
    layer_axon.load_state_dict(layer.state_dict())
    x_axon = x.to("axon").requires_grad_()
    before = testing.onednn_product_runs()
    out = layer_axon(x_axon)
    out.backward(grad.to("axon"))
    torch.axon.synchronize()  # the counter counts products the worker has run
    # Forward (addmm), input gradient and weight gradient (two mm).
    assert testing.onednn_product_runs() == before + 3
    flat_x, flat_grad = x.reshape(-1, 256), grad.reshape(-1, 768)
    assert_within_float_summation(out.detach().cpu().reshape(-1, 768), flat_x, layer.weight.detach().t(),
                                  layer.bias.detach().expand(1024, 768))
    assert_within_float_summation(x_axon.grad.cpu().reshape(-1, 256), flat_grad, layer.weight.detach())
    assert_within_float_summation(layer_axon.weight.grad.cpu(), flat_grad.t(), flat_x)
    torch.testing.assert_close(layer_axon.bias.grad.cpu(), flat_grad.sum(0))


def test_repeated_products_are_identical():
    a, b = draw(300, 400, seed=8).to("axon"), draw(400, 500, seed=9).to("axon")
    first, second = (a @ b).cpu(), (a @ b).cpu()
    assert torch.equal(first, second)


def test_non_finite_values_propagate_as_on_the_cpu():
    a, b = draw(256, 256, seed=10), draw(256, 256, seed=11)
    a[3, 7] = float("nan")
    a[5, 1] = float("inf")
    b[9, 2] = float("-inf")
    bias = draw(256, seed=12)
    bias[4] = float("nan")
    on_axon = torch.addmm(bias.to("axon"), a.to("axon"), b.to("axon")).cpu()
    on_cpu = torch.addmm(bias, a, b)
    assert torch.equal(on_axon.isnan(), on_cpu.isnan())
    assert torch.equal(on_axon.isinf(), on_cpu.isinf())
    assert torch.equal(on_axon.isinf() & (on_axon > 0), on_cpu.isinf() & (on_cpu > 0))


def bitwise_like_cpu(fn, *operands):
    """fn on axon and on the CPU give the same bits, and oneDNN computed nothing on axon."""
    before = testing.onednn_product_runs()
    on_axon = fn(*(t.to("axon") for t in operands)).cpu()
    assert testing.onednn_product_runs() == before
    assert_same_bits([fn(*operands)], [on_axon])


def test_one_row_and_few_columns_stay_the_cpus_bit_for_bit():
    # One row against a transposed weight with a bias is nn.Linear on a batch of one; oneDNN's kernel for
    # it corrupted the heap when adding to the result (matrix_products.cpp).
    layer = nn.Linear(4096, 2048)
    x = draw(1, 4096, seed=23)
    weight, bias = layer.weight.detach(), layer.bias.detach()
    bitwise_like_cpu(lambda b, x, w: torch.addmm(b, x, w.t()), bias, x, weight)
    bitwise_like_cpu(lambda x, w: torch.mm(x, w.t()), x, weight)
    bitwise_like_cpu(torch.mm, draw(1024, 4096, seed=24), draw(4096, 8, seed=25))


def test_a_few_rows_take_onednn():
    a, w, bias = draw(2, 4096, seed=26), draw(1024, 4096, seed=27), draw(1024, seed=28)
    before = testing.onednn_product_runs()
    result = torch.addmm(bias.to("axon"), a.to("axon"), w.to("axon").t()).cpu()
    assert testing.onednn_product_runs() == before + 1
    assert_within_float_summation(result, a, w.t(), bias.expand(2, 1024))


def test_small_products_stay_the_cpus_bit_for_bit():
    a, b, bias = draw(128, 256, seed=13), draw(256, 128, seed=14), draw(128, seed=15)
    bitwise_like_cpu(torch.mm, a, b)
    bitwise_like_cpu(torch.addmm, bias, a, b)


@pytest.mark.parametrize(
    "case",
    ["alpha", "beta", "double", "column_gaps", "switch_off", "mkldnn_disabled"],
)
def test_declined_products_stay_the_cpus_bit_for_bit(case):
    a, b, bias = draw(512, 256, seed=16), draw(256, 384, seed=17), draw(384, seed=18)
    if case == "alpha":
        bitwise_like_cpu(lambda s, x, y: torch.addmm(s, x, y, alpha=2.0), bias, a, b)
    elif case == "beta":
        bitwise_like_cpu(lambda s, x, y: torch.addmm(s, x, y, beta=0.5), bias, a, b)
    elif case == "double":
        bitwise_like_cpu(torch.mm, a.double(), b.double())
    elif case == "column_gaps":
        wide = draw(512, 300, seed=19)
        bitwise_like_cpu(lambda x, y: torch.mm(x[:, :256], y), wide, b)
    elif case == "switch_off":
        testing.set_onednn_products_enabled(False)
        try:
            bitwise_like_cpu(torch.mm, a, b)
            bitwise_like_cpu(torch.addmm, bias, a, b)
        finally:
            testing.set_onednn_products_enabled(True)
    else:
        with torch.backends.mkldnn.flags(enabled=False):
            bitwise_like_cpu(torch.mm, a, b)
            bitwise_like_cpu(torch.addmm, bias, a, b)


def test_mismatched_shapes_raise_the_cpus_error_at_the_call():
    a, b, bias = draw(512, 256, seed=20), draw(300, 384, seed=21), draw(384, seed=22)
    with pytest.raises(RuntimeError) as on_cpu:
        torch.addmm(bias, a, b)
    with pytest.raises(RuntimeError) as on_axon:
        torch.addmm(bias.to("axon"), a.to("axon"), b.to("axon"))
    assert str(on_axon.value) == str(on_cpu.value)
    with pytest.raises(RuntimeError, match="cannot be multiplied"):
        torch.mm(a.to("axon"), b.to("axon"))


def test_out_variants_write_onednn_products_into_the_given_tensor():
    a, b, bias = draw(512, 256, seed=29), draw(256, 384, seed=30), draw(384, seed=31)
    out = torch.empty(512, 384, device="axon")
    before = testing.onednn_product_runs()
    assert torch.mm(a.to("axon"), b.to("axon"), out=out) is out
    assert_within_float_summation(out.cpu(), a, b)
    assert torch.addmm(bias.to("axon"), a.to("axon"), b.to("axon"), out=out) is out
    assert_within_float_summation(out.cpu(), a, b, bias.expand(512, 384))
    assert testing.onednn_product_runs() == before + 2


@pytest.mark.parametrize("case", ["resized", "transposed_out", "overlaps_operand"])
def test_out_variants_the_direct_path_declines_stay_the_cpus(case):
    a, b = draw(512, 256, seed=32), draw(256, 384, seed=33)

    def product(out_of):
        def fn(x, y):
            out = out_of(x, y)
            torch.mm(x, y, out=out)
            return out
        return fn

    if case == "resized":
        bitwise_like_cpu(product(lambda x, y: torch.empty(0, device=x.device)), a, b)
    elif case == "transposed_out":
        bitwise_like_cpu(product(lambda x, y: torch.empty(384, 512, device=x.device).t()), a, b)
    else:
        # out is the first operand: the CPU's kernel computes into a temporary and copies; so must axon.
        bitwise_like_cpu(lambda x, y: torch.mm(x, y, out=x), draw(512, 512, seed=34), draw(512, 512, seed=35))


def test_inductor_compiled_linear_takes_onednn():
    layer = nn.Linear(256, 768).to("axon")
    compiled = torch.compile(layer)
    x = draw(1024, 256, seed=36)
    before = testing.onednn_product_runs()
    result = compiled(x.to("axon")).cpu()
    assert testing.onednn_product_runs() > before
    weight, bias = layer.weight.detach().cpu(), layer.bias.detach().cpu()
    assert_within_float_summation(result, x, weight.t(), bias.expand(1024, 768))


def test_at_most_32_distinct_products_take_onednn_per_process():
    b = draw(256, 256, seed=37)
    b_axon = b.to("axon")
    rows = [300 + i for i in range(33)]
    operands = {m: draw(m, 256, seed=m) for m in rows}
    before = testing.onednn_product_runs()
    for m in rows[:32]:
        assert_within_float_summation((operands[m].to("axon") @ b_axon).cpu(), operands[m], b)
    assert testing.onednn_product_runs() == before + 32
    # The 33rd new shape takes MKL (the CPU's bits); a shape seen before still takes oneDNN.
    bitwise_like_cpu(torch.mm, operands[rows[32]], b)
    (operands[rows[0]].to("axon") @ b_axon).cpu()
    assert testing.onednn_product_runs() == before + 33
