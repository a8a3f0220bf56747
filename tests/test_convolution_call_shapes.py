"""Axon's convolutions compute their results' shapes and layout once per call metadata
(csrc/host_execution/convolution_call_shapes.h): a repeated call reuses them, any change of sizes, strides,
dtype, arguments or the oneDNN switch computes them anew, and an invalid call raises every time."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

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
