"""Axon's convolutions compute their results' shapes and layout once per call metadata
(csrc/host_execution/convolution_call_shapes.h): a repeated call reuses them, any change of sizes, strides,
dtype, arguments or the oneDNN switch computes them anew, and an invalid call raises every time."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from conftest import run_python

import torch_axon


def _computations():
    return torch_axon._C._testing.convolution_shape_computations()


def _same_as_cpu(function, *cpu_inputs):
    expected = function(*cpu_inputs)
    got = function(*(t.to("axon") for t in cpu_inputs))
    assert got.stride() == expected.stride()
    torch.testing.assert_close(got.cpu(), expected, rtol=1e-4, atol=1e-4)


def test_a_repeated_call_reuses_its_shapes_forward_and_backward():
    x = torch.randn(2, 3, 9, 9, device="axon", requires_grad=True)
    w = torch.randn(5, 3, 3, 3, device="axon", requires_grad=True)
    F.conv2d(x, w, padding=1).sum().backward()
    before = _computations()
    for _ in range(3):
        F.conv2d(x, w, padding=1).sum().backward()
    assert _computations() == before


@pytest.mark.parametrize("name, function, shapes", [
    ("stride", lambda x, w: F.conv2d(x, w, stride=2), [(2, 3, 9, 9), (5, 3, 3, 3)]),
    ("padding", lambda x, w: F.conv2d(x, w, padding=2), [(2, 3, 9, 9), (5, 3, 3, 3)]),
    ("dilation", lambda x, w: F.conv2d(x, w, dilation=2), [(2, 3, 9, 9), (5, 3, 3, 3)]),
    ("groups", lambda x, w: F.conv2d(x, w, groups=3), [(2, 3, 9, 9), (6, 1, 3, 3)]),
    ("bias", lambda x, w: F.conv2d(x, w, torch.ones(5, device=x.device)), [(2, 3, 9, 9), (5, 3, 3, 3)]),
    ("sizes", lambda x, w: F.conv2d(x, w), [(2, 3, 10, 9), (5, 3, 3, 3)]),
    ("channels-last input", lambda x, w: F.conv2d(x.contiguous(memory_format=torch.channels_last), w),
     [(2, 3, 9, 9), (5, 3, 3, 3)]),
    ("strided input", lambda x, w: F.conv2d(x[:, :, ::2], w), [(2, 3, 9, 9), (5, 3, 3, 3)]),
    ("double", lambda x, w: F.conv2d(x.double(), w.double()), [(2, 3, 9, 9), (5, 3, 3, 3)]),
    ("transposed", lambda x, w: F.conv_transpose2d(x, w), [(2, 3, 9, 9), (3, 5, 3, 3)]),
])
def test_each_change_of_metadata_computes_its_own_shapes(name, function, shapes):
    plain = [torch.randn(2, 3, 9, 9, device="axon"), torch.randn(5, 3, 3, 3, device="axon")]
    F.conv2d(*plain)  # the plain call is cached: each variant differs from it in one respect
    inputs = [torch.randn(*shape) for shape in shapes]
    before = _computations()
    _same_as_cpu(function, *inputs)
    assert _computations() == before + 1


def test_which_gradients_are_asked_for_is_part_of_the_key():
    gradient, x, w = (torch.randn(2, 5, 7, 7), torch.randn(2, 3, 9, 9), torch.randn(5, 3, 3, 3))
    for mask in ([True, True, True], [False, True, True], [True, False, False]):
        args = [5], [1, 1], [0, 0], [1, 1], False, [0, 0], 1, mask
        expected = torch.ops.aten.convolution_backward(gradient, x, w, *args)
        got = torch.ops.aten.convolution_backward(gradient.to("axon"), x.to("axon"), w.to("axon"), *args)
        for want, have, asked in zip(expected, got, mask):
            assert (have is not None and have.numel() > 0) == asked
            if asked:
                assert have.stride() == want.stride()
                torch.testing.assert_close(have.cpu(), want, rtol=1e-4, atol=1e-4)


def test_the_onednn_switch_is_part_of_the_key():
    # With oneDNN off the CPU's 3-d transposed convolution is the slow kernel, which gives a contiguous result for
    # a channels-last input; with it on the result stays channels-last. A shape cached with the switch on must not
    # answer the call with it off.
    x = torch.randn(2, 4, 5, 5, 5).contiguous(memory_format=torch.channels_last_3d)
    w = torch.randn(4, 8, 3, 3, 3)
    _same_as_cpu(F.conv_transpose3d, x, w)
    with torch.backends.mkldnn.flags(enabled=False):
        _same_as_cpu(F.conv_transpose3d, x, w)
    _same_as_cpu(F.conv_transpose3d, x, w)


def test_an_invalid_call_raises_every_time_and_caches_nothing():
    x, w = torch.randn(2, 3, 9, 9, device="axon"), torch.randn(5, 4, 3, 3, device="axon")  # 4 channels expected
    before = _computations()
    for _ in range(2):
        with pytest.raises(RuntimeError, match="channels"):
            F.conv2d(x, w)
    assert _computations() == before
    x, w = torch.randn(2, 3, 2, 2, device="axon"), torch.randn(5, 3, 3, 3, device="axon")  # kernel > input
    for _ in range(2):
        with pytest.raises(RuntimeError, match="[Kk]ernel size"):
            F.conv2d(x, w)


def test_a_first_convolution_runs_no_python_meta_kernel():
    # PyTorch's meta kernel for convolution is Python and imports sympy at its first call (230 ms that the CPU,
    # which runs no meta kernel, never pays); axon computes the same results in C++
    # (csrc/host_execution/convolution_meta_results.h).
    result = run_python(
        """
        import sys
        import torch
        import torch.nn.functional as F

        x, w = torch.randn(4, 3, 9, 9), torch.randn(8, 3, 3, 3)
        ax, aw = x.to("axon").requires_grad_(), w.to("axon").requires_grad_()
        out = F.conv2d(ax, aw, padding=1, stride=2)
        out.sum().backward()
        expected = F.conv2d(x, w, padding=1, stride=2)
        print("sympy" in sys.modules, torch.allclose(out.detach().cpu(), expected, atol=1e-5), tuple(ax.grad.shape))
        """,
        env={"TORCH_DEVICE_BACKEND_AUTOLOAD": "1"},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["False", "True", "(4,", "3,", "9,", "9)"]


@pytest.mark.parametrize("dims", [1, 2, 3])
@pytest.mark.parametrize("transposed", [False, True])
@pytest.mark.parametrize("channels_last", [False, True])
def test_result_and_gradient_layouts_follow_the_cpu(dims, transposed, channels_last):
    if channels_last and dims == 1:
        pytest.skip("no channels-last layout for 3-d tensors")
    for groups, stride, padding, dilation in [(1, 1, 0, 1), (2, 2, 1, 1), (1, 2, 2, 2), (2, 1, 1, 2)]:
        x = torch.randn(2, 4, *[7, 6, 5][:dims])
        if channels_last:
            x = x.contiguous(memory_format=torch.channels_last if dims == 2 else torch.channels_last_3d)
        w = torch.randn(4, 6 // groups, *[3] * dims) if transposed else torch.randn(6, 4 // groups, *[3] * dims)
        output_padding = [min(stride, dilation) - 1] * dims if transposed else [0] * dims
        arguments = ([stride] * dims, [padding] * dims, [dilation] * dims, transposed, output_padding, groups)
        cpu_x, cpu_w = x.clone().requires_grad_(), w.clone().requires_grad_()
        axon_x, axon_w = x.to("axon").requires_grad_(), w.to("axon").requires_grad_()
        expected = torch.ops.aten.convolution(cpu_x, cpu_w, None, *arguments)
        got = torch.ops.aten.convolution(axon_x, axon_w, None, *arguments)
        assert got.shape == expected.shape and got.stride() == expected.stride()
        torch.testing.assert_close(got.detach().cpu(), expected.detach(), rtol=1e-4, atol=1e-4)
        gradient = torch.randn_like(expected)
        expected.backward(gradient)
        got.backward(gradient.to("axon"))
        for got_grad, expected_grad in ((axon_x.grad, cpu_x.grad), (axon_w.grad, cpu_w.grad)):
            assert got_grad.stride() == expected_grad.stride()
            torch.testing.assert_close(got_grad.cpu(), expected_grad, rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("mask", [(False, True, True), (True, True, True), (True, False, True), (False, False, True),
                                  (True, True, False)])
@pytest.mark.parametrize("shape", [(8, 3, 12, 16), (4, 16, 9, 24)])
def test_a_channels_last_bias_gradient_summed_apart_matches_the_cpu(mask, shape):
    # oneDNN summed it slowly; axon sums it with ATen's reduction (host_execution/convolution.cpp).
    apart = torch_axon._C._testing.convolution_biases_summed_apart
    batch, channels, size, out_channels = shape
    x = torch.randn(batch, channels, size, size).to(memory_format=torch.channels_last)
    weight = torch.randn(out_channels, channels, 3, 3).to(memory_format=torch.channels_last)
    grad = torch.nn.functional.conv2d(x, weight, None, padding=1).normal_()
    arguments = ([out_channels], [1, 1], [1, 1], [1, 1], False, [0, 0], 1, list(mask))
    expected = torch.ops.aten.convolution_backward(grad, x, weight, *arguments)
    before = apart()
    got = torch.ops.aten.convolution_backward(grad.to("axon"), x.to("axon"), weight.to("axon"), *arguments)
    torch.axon.synchronize()
    assert apart() - before == int(mask[2])
    for wanted, g, e in zip(mask, got, expected):
        # Only what the mask asks for: the CPU's channels-last route also returns the weight's gradient unasked.
        assert (g is not None) == wanted
        if wanted:
            assert g.shape == e.shape and g.stride() == e.stride()
            torch.testing.assert_close(g.cpu(), e, rtol=1e-5, atol=1e-4)
