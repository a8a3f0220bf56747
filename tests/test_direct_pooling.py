"""Axon's own pooling kernels (csrc/host_execution/pooling_planes.h), behind the direct
max_pool2d_with_indices (float and bfloat16), avg_pool2d and avg_pool2d_backward (direct_pooling.h).

They must equal the CPU's kernels in every bit. Max pooling, indices included: ties keep the first
element of the window, the last NaN wins, a window of -inf names its first element inside the
input, and windows that reach into the padding skip it. Average pooling: the same float sum in the
same order, the same divisor (the override, or the window's size with or without its padding), and
+0 where the sum is -0. Each case also checks that the direct path took the call (the launch
counter), so a case cannot pass by having been left to the generic kernel.
"""

import pytest
import torch
import torch.nn.functional as F
from conftest import closed_gate, direct_launches


def awkward(shape, seed=0):
    """Random floats with NaNs, -inf and +inf, and many ties (small values rounded to integers)."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, generator=g)
    x = torch.where(x.abs() < 0.4, x.round(), x)
    x[x > 1.8] = float("nan")
    x[x < -1.8] = float("-inf")
    x[(x > 1.6) & (x <= 1.8)] = float("inf")
    return x


def same_bits(got, expected):
    assert got.device.type == "axon"
    assert got.dtype == expected.dtype and got.shape == expected.shape and got.stride() == expected.stride()
    got = got.cpu()
    if got.is_floating_point():
        as_integers = torch.int16 if got.element_size() == 2 else torch.int32
        got, expected = got.view(as_integers), expected.view(as_integers)
    assert torch.equal(got, expected)


GEOMETRIES = [
    # shape, kernel_size, stride, padding, dilation, ceil_mode
    ((2, 3, 32, 32), 2, 2, 0, 1, False),               # the common 2x2 pooling: paired loads
    ((2, 4, 56, 57), 3, 2, 1, 1, False),               # a ResNet stem: padding on both edges
    ((1, 2, 33, 35), 3, 1, 1, 1, True),                # stride 1: plain loads, ceil_mode
    ((2, 2, 17, 19), (2, 3), (3, 1), (1, 1), (2, 1), True),
    ((3, 9, 9), 3, 3, 1, 1, True),                     # unbatched; stride 3 (gathers)
    ((1, 1, 5, 40), (1, 5), (1, 4), (0, 2), (1, 3), False),
    ((2, 3, 8, 16), 2, None, 0, 1, False),             # stride omitted: the kernel size
    ((1, 1, 1, 1), 1, 1, 0, 1, False),
    ((1, 2, 7, 6), 2, 2, 1, 1, True),                  # every column at an edge
    ((2, 3, 9, 31), 2, 2, 0, 1, False),                # rows ending in partial vectors
    ((1, 1, 2, 50), (2, 2), (1, 2), 0, 1, False),      # the last paired load ends at the plane's end
    ((1, 1, 12, 12), 3, 2, 1, 3, False),               # dilation larger than the padding
]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("shape,kernel,stride,padding,dilation,ceil", GEOMETRIES)
def test_values_and_indices_equal_the_cpu_bit_for_bit(shape, kernel, stride, padding, dilation, ceil, dtype):
    x = awkward(shape).to(dtype)
    if dtype == torch.bfloat16:
        # NaNs with payloads and signs: the CPU's conversion back from float makes each 0x7FC0.
        nans = x.isnan().flatten().nonzero().flatten()
        x.view(torch.int16).view(-1)[nans] = torch.tensor([0x7FC1, -0x3B, -0x40], dtype=torch.int16).repeat(
            len(nans) // 3 + 1)[: len(nans)]
    arguments = dict(kernel_size=kernel, padding=padding, dilation=dilation, ceil_mode=ceil)
    if stride is not None:
        arguments["stride"] = stride
    values, indices = F.max_pool2d_with_indices(x, **arguments)
    before = direct_launches()
    got_values, got_indices = F.max_pool2d_with_indices(x.to("axon"), **arguments)
    assert direct_launches() == before + 1, "the direct path did not take the call"
    same_bits(got_values, values)
    same_bits(got_indices, indices)


AVERAGE_GEOMETRIES = [
    # shape, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override
    ((2, 3, 32, 32), 2, 2, 0, False, True, None),
    ((2, 4, 56, 57), 3, 2, 1, False, True, None),          # padding counted in the divisor
    ((2, 4, 56, 57), 3, 2, 1, True, False, None),          # padding not counted; ceil_mode
    ((1, 2, 33, 35), 3, 1, 1, True, True, None),
    ((2, 2, 17, 19), (2, 3), (3, 1), (1, 1), True, False, None),
    ((3, 9, 9), 3, 3, 1, True, True, None),                # unbatched; stride 3 (gathers)
    ((2, 3, 8, 16), 2, None, 0, False, True, 3),           # divisor override
    ((1, 1, 12, 21), (3, 5), 2, (1, 2), False, True, -7),  # a negative one
    ((1, 2, 7, 6), 2, 2, 1, True, False, None),
    ((1, 1, 1, 1), 1, 1, 0, False, True, None),
]


@pytest.mark.parametrize("shape,kernel,stride,padding,ceil,count_pad,divisor", AVERAGE_GEOMETRIES)
def test_averages_equal_the_cpu_bit_for_bit(shape, kernel, stride, padding, ceil, count_pad, divisor):
    g = torch.Generator().manual_seed(3)
    x = torch.randn(shape, generator=g) * torch.logspace(-38, 30, shape[-1])  # tiny to huge magnitudes
    x[..., :3, :4] = -0.0  # windows summing to -0
    x[..., -1, -1] = float("nan")
    x[..., -1, 0] = float("inf")
    arguments = dict(kernel_size=kernel, padding=padding, ceil_mode=ceil, count_include_pad=count_pad,
                     divisor_override=divisor)
    if stride is not None:
        arguments["stride"] = stride
    expected = F.avg_pool2d(x, **arguments)
    before = direct_launches()
    got = F.avg_pool2d(x.to("axon"), **arguments)
    assert direct_launches() == before + 1, "the direct path did not take the call"
    same_bits(got, expected)


def both_axes(value):
    return [value, value] if isinstance(value, int) else list(value)


@pytest.mark.parametrize("shape,kernel,stride,padding,ceil,count_pad,divisor", AVERAGE_GEOMETRIES)
def test_average_gradients_equal_the_cpu_bit_for_bit(shape, kernel, stride, padding, ceil, count_pad, divisor):
    x = torch.randn(shape)
    stride = kernel if stride is None else stride
    arguments = (both_axes(kernel), both_axes(stride), both_axes(padding), ceil, count_pad, divisor)
    output = F.avg_pool2d(x, *arguments)
    g = torch.Generator().manual_seed(6)
    grad = torch.randn(output.shape, generator=g) * torch.logspace(-35, 35, output.shape[-1])
    grad.view(-1)[:3] = -0.0
    expected = torch.ops.aten.avg_pool2d_backward(grad, x, *arguments)
    before = direct_launches()
    got = torch.ops.aten.avg_pool2d_backward(grad.to("axon"), x.to("axon"), *arguments)
    # Only windows that do not overlap take axon's kernel; the rest are the CPU's kernel, equal anyway.
    disjoint = all(s >= k for s, k in zip(arguments[1], arguments[0]))
    assert direct_launches() == before + disjoint
    same_bits(got, expected)


def test_all_minus_infinity_names_the_first_element_inside_the_input():
    x = torch.full((1, 1, 6, 6), float("-inf"))
    x[0, 0, 5, 5] = float("nan")
    for arguments in (dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1)):
        values, indices = F.max_pool2d_with_indices(x, **arguments)
        got_values, got_indices = F.max_pool2d_with_indices(x.to("axon"), **arguments)
        same_bits(got_values, values)
        same_bits(got_indices, indices)


def test_large_inputs_split_across_threads():
    # 4 MiB of input: above the single-thread bound, so the planes are split among the worker's team.
    x = awkward((32, 32, 32, 32), seed=1)
    values, indices = F.max_pool2d_with_indices(x, 2)
    got_values, got_indices = F.max_pool2d_with_indices(x.to("axon"), 2)
    same_bits(got_values, values)
    same_bits(got_indices, indices)


@pytest.mark.parametrize(
    "name,make",
    [
        ("double", lambda x: x.double()),
        ("half", lambda x: x.half()),
        ("channels last", lambda x: x.contiguous(memory_format=torch.channels_last)),
        ("transposed", lambda x: x.transpose(2, 3)),
        ("empty batch", lambda x: x[:0]),
    ],
)
def test_other_inputs_go_to_the_generic_kernel(name, make):
    x = make(awkward((2, 3, 10, 12)))
    values, indices = F.max_pool2d_with_indices(x, 3, 2, 1)
    average = F.avg_pool2d(x.nan_to_num(0.0, 0.0, 0.0), 3, 2, 1)
    before = direct_launches()
    got_values, got_indices = F.max_pool2d_with_indices(x.to("axon"), 3, 2, 1)
    got_average = F.avg_pool2d(x.nan_to_num(0.0, 0.0, 0.0).to("axon"), 3, 2, 1)
    assert direct_launches() == before
    assert got_values.stride() == values.stride() and got_indices.stride() == indices.stride()
    assert got_average.stride() == average.stride()
    torch.testing.assert_close(got_values.cpu(), values, equal_nan=True)
    assert torch.equal(got_indices.cpu(), indices)
    torch.testing.assert_close(got_average.cpu(), average)


@pytest.mark.parametrize(
    "arguments",
    [
        dict(kernel_size=2, padding=2),       # padding over half the kernel
        dict(kernel_size=5),                  # a window larger than the input
        dict(kernel_size=2, stride=0),
        dict(kernel_size=0),
        dict(kernel_size=2, dilation=0),
        dict(kernel_size=(2, 2, 2)),
        dict(kernel_size=2, divisor_override=0),
    ],
)
def test_bad_arguments_raise_the_cpu_error_at_the_call(arguments):
    x = torch.randn(1, 1, 4, 4)
    pools = [F.avg_pool2d] if "divisor_override" in arguments else [F.max_pool2d_with_indices]
    if "dilation" not in arguments and "divisor_override" not in arguments:
        pools.append(F.avg_pool2d)
    for pool in pools:
        with pytest.raises(RuntimeError) as cpu_error:
            pool(x, **arguments)
        with pytest.raises(type(cpu_error.value)) as axon_error:
            pool(x.to("axon"), **arguments)
        assert str(axon_error.value).split("\n")[0] == str(cpu_error.value).split("\n")[0]


def test_queued_on_the_current_stream():
    x = awkward((2, 3, 16, 16))
    device_x = x.to("axon")
    torch.axon.synchronize()
    with closed_gate() as stream:
        values, indices = F.max_pool2d_with_indices(device_x, 2)
        average = F.avg_pool2d(device_x, 2)
        assert not stream.query()
    expected_values, expected_indices = F.max_pool2d_with_indices(x, 2)
    same_bits(values, expected_values)
    same_bits(indices, expected_indices)
    same_bits(average, F.avg_pool2d(x, 2))


def test_gradient_equals_the_cpu():
    x = torch.randn(4, 3, 12, 12, generator=torch.Generator().manual_seed(2))
    device_x = x.to("axon").requires_grad_()
    x.requires_grad_()
    for source in (x, device_x):
        for pooled in (F.max_pool2d(source, 3, 2, 1), F.avg_pool2d(source, 3, 2, 1), F.avg_pool2d(source, 2)):
            (pooled * torch.arange(pooled.numel(), device=source.device).reshape(pooled.shape)).sum().backward()
    assert torch.equal(device_x.grad.cpu(), x.grad)
