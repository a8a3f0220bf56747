"""Tiny elementwise calls computed on the calling thread while the device is idle
(csrc/host_execution/inline_kernels.h, axon_stream_run_host_function_if_idle).

Each case checks the bits against the CPU and whether the call ran inline (the
counter), so a wrong inline result cannot pass by having been queued instead;
the cases that must queue (a held device, a recording profiler, large or
half-precision tensors) check that it did and that the result is still right.
"""

import math

import pytest
import torch
from conftest import assert_same_bits, closed_gate

import torch_axon


def inline_runs():
    return torch_axon._C._testing.inline_kernel_runs()


def special_values(dtype, n=32):
    """Random values with NaN, ±inf, ±0, subnormals and huge and tiny magnitudes among them."""
    g = torch.Generator().manual_seed(n)
    values = torch.randn(n, generator=g, dtype=torch.float64) * torch.logspace(-30, 30, n, dtype=torch.float64)
    specials = [math.nan, math.inf, -math.inf, 0.0, -0.0, 1e-40, -1e-45, 3.4e38, 1.0, -1.0]
    values[: len(specials)] = torch.tensor(specials, dtype=torch.float64)
    return values[torch.randperm(n, generator=g)].to(dtype)


def check_inline(function, *cpu_args, inline=True):
    """Runs `function` on axon copies of `cpu_args` after the device went idle; same bits as the CPU, and the path."""
    axon_args = [a.to("axon") if isinstance(a, torch.Tensor) else a for a in cpu_args]
    torch.axon.synchronize()
    before = inline_runs()
    got = function(*axon_args)
    ran_inline = inline_runs() - before
    expected = function(*cpu_args)
    assert got.device.type == "axon" and got.stride() == expected.stride()
    assert_same_bits([expected], [got])
    assert ran_inline == (1 if inline else 0), f"expected the call {'' if inline else 'not '}to run inline"
    return axon_args


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize(
    "name,function",
    [
        ("add", lambda a, b: a + b),
        ("add alpha", lambda a, b: torch.add(a, b, alpha=0.37)),
        ("sub", lambda a, b: a - b),
        ("sub alpha", lambda a, b: torch.sub(a, b, alpha=-2.5)),
        ("mul", lambda a, b: a * b),
        ("div", lambda a, b: a / b),
        ("mul self", lambda a, b: a * a),
    ],
)
def test_binary_with_a_tensor_has_the_cpus_bits(name, function, dtype):
    check_inline(function, special_values(dtype), special_values(dtype, 40)[:32].roll(5))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("number", [1, -3, 0.1, 2.5e-8, 1e30, math.inf, math.nan])
@pytest.mark.parametrize(
    "name,function",
    [
        ("add", lambda a, s: a + s),
        ("sub", lambda a, s: a - s),
        ("mul", lambda a, s: a * s),
        ("div", lambda a, s: a / s),
    ],
)
def test_binary_with_a_number_has_the_cpus_bits(name, function, number, dtype):
    check_inline(function, special_values(dtype), number)


@pytest.mark.parametrize("nan", [math.nan, -math.nan])
def test_subtracting_a_nan_keeps_its_sign_as_the_cpu_does(nan):
    # assert_same_bits lets any NaN match; here the operands are not NaN, so the CPU's NaN is the number's.
    x = torch.randn(16)
    axon_x, in_place = x.to("axon"), x.to("axon")
    torch.axon.synchronize()
    before = inline_runs()
    got = axon_x - nan
    in_place.sub_(nan)
    assert inline_runs() == before + 2
    expected = x - nan
    assert torch.equal(got.cpu().view(torch.int32), expected.view(torch.int32))
    assert torch.equal(in_place.cpu().view(torch.int32), expected.view(torch.int32))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize(
    "function",
    [
        lambda a, s: a * s,
        lambda a, s: a + s,
        lambda a, s: a - s,
        lambda a, s: a / s,
        lambda a, s: a.mul_(s),
        lambda a, s: a.sub_(s),
    ],
)
@pytest.mark.parametrize("number", [1e300, -3.5e38, 0, -(2**63), 2**62 + 1])
def test_numbers_convert_as_the_cpu_converts_them(function, number, dtype):
    # A float operation with 1e300 gives inf on the CPU (a plain cast), not an overflow error; an integer 0 is
    # subtracted as -0 (so -0 - 0 stays -0); -(2**63) is subtracted, not wrapped around.
    x = torch.tensor([-0.0, 0.0, 1.0, -2.5, 3e38, -3e38, 1e-40, math.inf], dtype=dtype)
    axon_x = x.to("axon")  # before x: the in-place functions change their argument
    expected = function(x, number)
    torch.axon.synchronize()
    before = inline_runs()
    got = function(axon_x, number)
    assert inline_runs() > before
    assert torch.equal(got.cpu().view(torch.uint8), expected.view(torch.uint8))


def test_a_thread_that_flushes_subnormals_queues_its_calls():
    # torch.set_flush_denormal changes the calling thread only; the worker keeps subnormals, so computing here
    # would make the bits depend on whether the device was idle.
    x = torch.full((4,), 1e-39).to("axon")
    if not torch.set_flush_denormal(True):
        pytest.skip("this host cannot flush subnormals")
    try:
        torch.axon.synchronize()
        before = inline_runs()
        got = (x * 1.0).cpu()
        assert inline_runs() == before
    finally:
        torch.set_flush_denormal(False)
    assert torch.equal(got, torch.full((4,), 1e-39))
    torch.axon.synchronize()
    assert (x * 1.0).cpu().equal(got) and inline_runs() == before + 1


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("number", [1, 0.3, -7.25, 1e-30])
@pytest.mark.parametrize("method", ["add_", "sub_", "mul_", "div_"])
def test_in_place_with_a_number_has_the_cpus_bits(method, number, dtype):
    (axon_values,) = check_inline(lambda t: getattr(t, method)(number), special_values(dtype))
    expected = getattr(special_values(dtype), method)(number)
    assert_same_bits([expected], [axon_values])  # in place: the argument itself holds the result


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_relu_has_the_cpus_bits(dtype):
    # NaN stays NaN, -0 stays -0, negatives become +0, as the CPU's clamp_min(x, 0).
    check_inline(torch.relu, special_values(dtype))


@pytest.mark.parametrize(
    "dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64, torch.uint8]
)
def test_fills_and_zeros(dtype):
    values = special_values(torch.float64).to(dtype)
    check_inline(lambda t: t.fill_(3), values)
    check_inline(lambda t: t.zero_(), values)
    torch.axon.synchronize()
    before = inline_runs()
    got = torch.zeros(4, 7, dtype=dtype, device="axon")
    assert inline_runs() == before + 1
    assert_same_bits([torch.zeros(4, 7, dtype=dtype)], [got])


def test_a_contiguous_slice_is_addressed_at_its_offset():
    base = special_values(torch.float32, 96)
    check_inline(lambda t: t[10:30] * 2.0, base)
    check_inline(lambda t: t * 2.0, base, inline=False)  # 256 bytes is the most each operand may have
    (axon_base,) = check_inline(lambda t: t[40:50].fill_(-1.5), base)
    expected = base.clone()
    expected[40:50] = -1.5
    assert_same_bits([expected], [axon_base])


def test_a_busy_device_queues_the_call_after_its_work():
    """A device holding work (another stream's, here) makes the call queue, and it runs after that work."""
    x = torch.ones(16, device="axon")
    other = torch.axon.Stream()
    torch.axon.synchronize()
    before = inline_runs()
    with closed_gate(other):
        y = x + 1  # the default stream is idle, but the device is not
        with torch.axon.stream(other):
            x.mul_(5.0)  # queued behind the gate on `other`
        assert inline_runs() == before
    torch.axon.synchronize()
    assert y.cpu().tolist() == [2.0] * 16
    assert x.cpu().tolist() == [5.0] * 16


def test_queued_work_on_the_stream_is_not_overtaken():
    x = torch.zeros(16, device="axon")
    torch.axon.synchronize()
    before = inline_runs()
    with closed_gate():
        x.fill_(4.0)  # queued behind the gate
        y = x * 2.0  # must see the fill: queued too
    assert inline_runs() == before
    assert y.cpu().tolist() == [8.0] * 16


def test_large_and_half_precision_calls_are_queued():
    for args in [(torch.ones(2048), 1.0), (torch.ones(16, dtype=torch.float16), 1.0)]:
        check_inline(lambda a, s: a + s, *args, inline=False)
    check_inline(torch.relu, special_values(torch.bfloat16), inline=False)


def test_a_recording_profiler_sees_every_kernel():
    x = torch.ones(16, device="axon")
    torch.axon.synchronize()
    before = inline_runs()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.PrivateUse1]):
        assert (x + 1).sum().item() == 32.0
    assert inline_runs() == before


def awkward_matrix(rows, columns, seed):
    g = torch.Generator().manual_seed(seed)
    values = torch.randn(rows, columns, generator=g)
    values[values.abs() < 0.2] = 0.0
    values[values > 1.8] = -0.0
    values[values < -2.2] = math.inf
    return values


@pytest.mark.parametrize("m,k,n", [(4, 4, 4), (3, 5, 7), (2, 1, 2), (8, 8, 8), (4, 16, 4), (1, 64, 1)])
def test_small_matrix_products_run_inline_with_the_queued_kernels_bits(m, k, n):
    a, b = awkward_matrix(m, k, m * 100 + k), awkward_matrix(k, n, n)
    a[0, 0] = math.nan if m > 1 else a[0, 0]
    # Either summation (small_matrix_products.h) matches MKL's on the hosts measured (fused on Intel, rounded on
    # AMD), so each of these shapes must be proven, whichever this host is.
    assert torch_axon._C._testing.proven_product_summation(m, k, n) is not None
    a_axon, b_axon = a.to("axon"), b.to("axon")
    torch.axon.synchronize()
    before = inline_runs()
    got = a_axon @ b_axon
    assert inline_runs() == before + 1
    # The queued kernel (the device held by another stream) runs single-threaded at this size, as the
    # CPU does under torch.set_num_threads(1); the inline product must give the same bits.
    torch.axon.synchronize()
    with closed_gate(torch.axon.Stream()):
        queued = a_axon @ b_axon
    assert inline_runs() == before + 1
    assert_same_bits([queued.cpu()], [got])
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        assert_same_bits([a @ b], [got])
    finally:
        torch.set_num_threads(threads)


def test_other_matrix_products_are_queued():
    check_inline(torch.mm, torch.randn(4, 600), torch.randn(600, 4), inline=False)  # operands over 256 bytes
    check_inline(torch.mm, torch.randn(4, 4), torch.randn(4, 4).t(), inline=False)  # not row-major
    check_inline(torch.mm, torch.randn(4, 4, dtype=torch.float64), torch.randn(4, 4, dtype=torch.float64), inline=False)
