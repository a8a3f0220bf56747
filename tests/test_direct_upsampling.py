"""Axon's own nearest-neighbour resizing kernels (csrc/host_execution/nearest_planes.h), behind the
direct upsample_nearest2d and _upsample_nearest_exact2d and their backwards (direct_upsampling.h).

The forward copies elements, so it must give the CPU's result in every bit: the same source element
for every output, by the CPU kernel's own index rule (legacy nearest and nearest-exact, with and
without the caller's scale factors, which that rule uses where given). The backward sums, so it must
add the same gradients in the CPU's order, from +0. Each case also checks that the direct path took
the call (the launch counter).
"""

import pytest
import torch
import torch.nn.functional as F
from conftest import closed_gate, direct_launches


def numbered(shape, dtype):
    """Distinct values where the dtype allows (every wrong source shows), NaN and -0 among them."""
    x = torch.arange(torch.Size(shape).numel(), dtype=torch.float64).reshape(shape)
    if dtype == torch.uint8:
        return (x % 251).to(dtype)
    x = x.to(dtype)
    if dtype.is_floating_point:
        x.view(-1)[1] = float("nan")
        x.view(-1)[2] = -0.0
    return x


def same_bits(got, expected):
    assert got.device.type == "axon"
    assert got.dtype == expected.dtype and got.shape == expected.shape and got.stride() == expected.stride()
    got = got.cpu()
    as_integers = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[got.element_size()]
    assert torch.equal(got.view(as_integers), expected.view(as_integers))


CASES = [
    # shape, interpolate's arguments
    ((2, 3, 8, 16), dict(scale_factor=2)),                        # doubling: row copies and unpacks
    ((2, 3, 8, 21), dict(scale_factor=2)),                        # a width that ends in a partial vector
    ((1, 2, 5, 7), dict(scale_factor=3)),
    ((1, 2, 9, 13), dict(scale_factor=0.5)),                      # downsampling
    ((2, 2, 10, 12), dict(size=(23, 7))),                         # sizes of no whole scale
    ((2, 2, 10, 12), dict(scale_factor=(1.7, 2.3))),              # scales the index rule uses as given
    ((2, 2, 10, 12), dict(scale_factor=1.7, recompute_scale_factor=True)),
    ((1, 2, 6, 6), dict(scale_factor=1)),
    ((2, 3, 8, 16), dict(scale_factor=2, mode="nearest-exact")),
    ((2, 2, 10, 12), dict(size=(23, 7), mode="nearest-exact")),
    ((1, 2, 9, 13), dict(scale_factor=0.5, mode="nearest-exact")),
]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.uint8])
@pytest.mark.parametrize("shape,arguments", CASES)
def test_resizes_equal_the_cpu_bit_for_bit(shape, arguments, dtype):
    x = numbered(shape, dtype)
    expected = F.interpolate(x, **arguments)
    before = direct_launches()
    got = F.interpolate(x.to("axon"), **arguments)
    assert direct_launches() == before + 1, "the direct path did not take the call"
    same_bits(got, expected)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("shape,arguments", CASES)
def test_gradients_equal_the_cpu_bit_for_bit(shape, arguments, dtype):
    output_size = F.interpolate(torch.empty(shape), **arguments).shape
    g = torch.Generator().manual_seed(5)
    # Magnitudes from 1e-30 to 1e30 along a row: any change in the order of additions shows.
    grad = torch.randn(output_size, generator=g, dtype=dtype) * torch.logspace(-30, 30, output_size[-1], dtype=dtype)
    grad[..., 0, :3] = -0.0
    scale = arguments.get("scale_factor")
    pair = scale if isinstance(scale, tuple) else (scale, scale)
    scales = (None, None) if scale is None else tuple(float(v) for v in pair)
    if arguments.get("recompute_scale_factor"):
        scales = (None, None)
    backward = (torch.ops.aten._upsample_nearest_exact2d_backward if arguments.get("mode") == "nearest-exact"
                else torch.ops.aten.upsample_nearest2d_backward)
    expected = backward(grad, list(output_size[2:]), list(shape), *scales)
    before = direct_launches()
    got = backward(grad.to("axon"), list(output_size[2:]), list(shape), *scales)
    assert direct_launches() == before + 1, "the direct path did not take the call"
    same_bits(got, expected)


def test_large_inputs_split_across_threads():
    x = torch.randn(8, 64, 32, 32)
    for mode in ("nearest", "nearest-exact"):
        same_bits(F.interpolate(x.to("axon"), scale_factor=2, mode=mode), F.interpolate(x, scale_factor=2, mode=mode))


@pytest.mark.parametrize(
    "name,make",
    [
        ("int64", lambda x: x.long()),              # the CPU refuses it: the same error, at the call
        ("channels last", lambda x: x.contiguous(memory_format=torch.channels_last)),
        ("transposed", lambda x: x.transpose(2, 3)),
        ("empty batch", lambda x: x[:0]),
    ],
)
def test_other_inputs_go_to_the_generic_kernel(name, make):
    x = make(torch.randn(2, 3, 6, 10))
    try:
        expected = F.interpolate(x, scale_factor=2)
    except RuntimeError as cpu_error:
        with pytest.raises(type(cpu_error)) as axon_error:
            F.interpolate(x.to("axon"), scale_factor=2)
        assert str(axon_error.value).split("\n")[0] == str(cpu_error).split("\n")[0]
        return
    before = direct_launches()
    got = F.interpolate(x.to("axon"), scale_factor=2)
    assert direct_launches() == before
    assert got.stride() == expected.stride()
    assert torch.equal(got.cpu(), expected)


def test_queued_on_the_current_stream():
    x = torch.randn(2, 3, 16, 16)
    device_x = x.to("axon")
    torch.axon.synchronize()
    with closed_gate() as stream:
        got = F.interpolate(device_x, scale_factor=2)
        assert not stream.query()
    same_bits(got, F.interpolate(x, scale_factor=2))


def test_autograd_gradient_equals_the_cpu():
    x = torch.randn(2, 3, 7, 9, generator=torch.Generator().manual_seed(4))
    device_x = x.to("axon").requires_grad_()
    x.requires_grad_()
    for source in (x, device_x):
        for up in (F.interpolate(source, size=(15, 20)), F.interpolate(source, scale_factor=2, mode="nearest-exact")):
            (up * torch.arange(up.numel(), device=source.device).reshape(up.shape).sin()).sum().backward()
    assert torch.equal(device_x.grad.cpu(), x.grad)


def test_gradients_the_cpu_refuses_raise_its_error_at_the_call():
    grad = torch.randn(1, 2, 8, 8)
    with pytest.raises(RuntimeError) as cpu_error:
        torch.ops.aten.upsample_nearest2d_backward(grad, [8, 8], [1, 3, 4, 4], None, None)  # wrong channel count
    with pytest.raises(RuntimeError) as axon_error:
        torch.ops.aten.upsample_nearest2d_backward(grad.to("axon"), [8, 8], [1, 3, 4, 4], None, None)
    assert str(axon_error.value).split("\n")[0] == str(cpu_error.value).split("\n")[0]
