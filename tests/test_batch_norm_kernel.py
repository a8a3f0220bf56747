"""Batch norm's training forward by axon's kernel (csrc/host_execution/batch_norm_statistics.h).

Each case compares all five results (output, saved mean and inverse standard deviation, and both running
statistics updated in place) with the CPU's. They are equal bit for bit but where a channel's statistics differ in
their last bit (double sums added in another order), which moves the output by a few units in the last place. The
direct kernels' launch counter tells whether axon's kernel took the call, so a case it got wrong cannot pass by
having been declined.
"""

import itertools

import pytest
import torch
from conftest import direct_launches
from torch import nn

batch_norm = torch.ops.aten.native_batch_norm


def on_axon(tensor):
    return None if tensor is None else tensor.to("axon")


def compare(got, expected):
    got = got.cpu()
    assert got.dtype == expected.dtype and got.shape == expected.shape and got.stride() == expected.stride()
    assert torch.equal(got.isnan(), expected.isnan())
    finite = expected.isfinite()
    # A last-bit difference in a channel's inverse standard deviation moves outputs near zero by a few units in
    # their last place: absolute against the data's scale.
    torch.testing.assert_close(got[finite], expected[finite], rtol=5e-7, atol=2e-6)


def check(x, weight, bias, running_mean, running_var, training, momentum, eps, *, direct):
    cpu_mean = None if running_mean is None else running_mean.clone()
    cpu_var = None if running_var is None else running_var.clone()
    expected = batch_norm(x, weight, bias, cpu_mean, cpu_var, training, momentum, eps)
    axon_mean, axon_var = on_axon(running_mean), on_axon(running_var)
    before = direct_launches()
    got = batch_norm(on_axon(x), on_axon(weight), on_axon(bias), axon_mean, axon_var, training, momentum, eps)
    taken = direct_launches() > before
    for g, e in zip(got, expected):
        compare(g, e)
    if running_mean is not None:
        compare(axon_mean, cpu_mean)
        compare(axon_var, cpu_var)
    assert taken == direct, f"axon's kernel {'not ' if direct else ''}taken"


@pytest.mark.parametrize("shape", [(32, 32, 32, 32), (8, 3, 7, 5), (4, 16, 100), (3, 7, 9, 11, 2), (1, 4, 3),
                                   (64, 8, 1, 1)])
def test_training_calls_match_the_cpu(shape):
    generator = torch.Generator().manual_seed(len(shape) * 100 + shape[1])
    channels = shape[1]
    for affine, running, momentum, eps in itertools.product([True, False], [True, False], [0.1, 0.7], [1e-5, 0.5]):
        x = torch.randn(shape, generator=generator) * 3 + 1.5
        weight = torch.randn(channels, generator=generator) if affine else None
        bias = torch.randn(channels, generator=generator) if affine else None
        running_mean = torch.randn(channels, generator=generator) if running else None
        running_var = torch.rand(channels, generator=generator) + 0.5 if running else None
        check(x, weight, bias, running_mean, running_var, True, momentum, eps, direct=True)


def test_most_results_equal_the_cpus_bit_for_bit():
    generator = torch.Generator().manual_seed(3)
    x = torch.randn(16, 64, 12, 12, generator=generator)
    weight, bias = torch.randn(64, generator=generator), torch.randn(64, generator=generator)
    running_mean, running_var = torch.zeros(64), torch.ones(64)
    expected = batch_norm(x, weight, bias, running_mean.clone(), running_var.clone(), True, 0.1, 1e-5)
    got = batch_norm(*map(on_axon, (x, weight, bias, running_mean, running_var)), True, 0.1, 1e-5)
    equal_channels = (got[2].cpu() == expected[2]).sum().item()
    assert equal_channels >= 60, f"only {equal_channels} of 64 inverse standard deviations equal the CPU's"


def test_special_values_propagate_as_on_the_cpu():
    x = torch.randn(4, 3, 5, 5)
    x[1, 0, 2, 2] = float("nan")
    x[2, 1, 0, 0] = float("inf")
    check(x, torch.randn(3), torch.randn(3), torch.zeros(3), torch.ones(3), True, 0.1, 1e-5, direct=True)
    constant = torch.full((4, 3, 5, 5), 2.0)  # zero variance: 1 / sqrt(eps)
    check(constant, None, None, torch.zeros(3), torch.ones(3), True, 0.1, 1e-5, direct=True)
    check(constant, None, None, None, None, True, 0.1, 0.0, direct=True)  # zero variance and eps: invstd 0


@pytest.mark.parametrize("case", ["eval", "double", "channels_last", "strided", "two_dims", "one_per_channel"])
def test_calls_the_kernel_declines_match_the_cpu(case):
    x = torch.randn(4, 6, 5, 5)
    weight, bias, running_mean, running_var = torch.randn(6), torch.randn(6), torch.zeros(6), torch.ones(6)
    training = case != "eval"
    if case == "double":
        x, weight, bias, running_mean, running_var = (t.double() for t in (x, weight, bias, running_mean, running_var))
    elif case == "channels_last":
        x = x.contiguous(memory_format=torch.channels_last)
    elif case == "strided":
        x = x.transpose(2, 3)  # dense, so it keeps its strides on axon
    elif case == "two_dims":
        x = x[:, :, 0, 0].contiguous()
    elif case == "one_per_channel":
        x = x[:1, :, :1, :1].contiguous()
    check(x, weight, bias, running_mean, running_var, training, 0.1, 1e-5, direct=False)


def test_a_batchnorm_layer_trains_as_on_the_cpu():
    torch.manual_seed(0)
    layer = nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8), nn.ReLU())
    x = torch.randn(6, 3, 10, 10)
    copy = nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8), nn.ReLU())
    copy.load_state_dict(layer.state_dict())
    copy = copy.to("axon")
    for _ in range(3):
        layer(x).square().sum().backward()
        copy(x.to("axon")).square().sum().backward()
    for (name, expected), got in zip(layer.state_dict().items(), copy.state_dict().values()):
        if expected.is_floating_point():
            torch.testing.assert_close(got.cpu(), expected, rtol=1e-5, atol=1e-5, msg=name)
    for expected, got in zip(layer.parameters(), copy.parameters()):
        torch.testing.assert_close(got.grad.cpu(), expected.grad, rtol=1e-4, atol=1e-4)
