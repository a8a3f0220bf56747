"""Batch norm's training forward and channels-last backward by axon's kernels (csrc/host_execution/
batch_norm_statistics.h, batch_norm_gradients.h), through native_batch_norm and _native_batch_norm_legit (the
operator compiled graphs call).

Each forward case compares all five results (output, saved mean and inverse standard deviation, and both running
statistics updated in place) with the CPU's. On contiguous data they are equal bit for bit but where a channel's
statistics differ in their last bit (double sums added in another order), which moves the output by a few units
in the last place; on channels-last data they follow the CPU's sums, split over the threads as the CPU splits them
(equal where the device's team has the CPU's thread count). The direct kernels' launch counter tells whether
axon's kernel took the call, so a case it got wrong cannot pass by having been declined.
"""

import itertools

import pytest
import torch
from conftest import direct_launches, run_python
from torch import nn

batch_norm = torch.ops.aten.native_batch_norm


def on_axon(tensor):
    return None if tensor is None else tensor.to("axon")


def compare(got, expected, rtol=5e-7, atol=2e-6):
    got = got.cpu()
    assert got.dtype == expected.dtype and got.shape == expected.shape and got.stride() == expected.stride()
    assert torch.equal(got.isnan(), expected.isnan())
    finite = expected.isfinite()
    # A last-bit difference in a channel's inverse standard deviation moves outputs near zero by a few units in
    # their last place: absolute against the data's scale.
    torch.testing.assert_close(got[finite], expected[finite], rtol=rtol, atol=atol)


def legit(x, weight, bias, running_mean, running_var, training, momentum, eps):
    """_native_batch_norm_legit, with running statistics or without (.no_stats)."""
    if running_mean is None:
        return torch.ops.aten._native_batch_norm_legit.no_stats(x, weight, bias, training, momentum, eps)
    return torch.ops.aten._native_batch_norm_legit(x, weight, bias, running_mean, running_var, training, momentum, eps)


def check(x, weight, bias, running_mean, running_var, training, momentum, eps, *, direct, operator=batch_norm):
    cpu_mean = None if running_mean is None else running_mean.clone()
    cpu_var = None if running_var is None else running_var.clone()
    expected = operator(x, weight, bias, cpu_mean, cpu_var, training, momentum, eps)
    axon_mean, axon_var = on_axon(running_mean), on_axon(running_var)
    before = direct_launches()
    got = operator(on_axon(x), on_axon(weight), on_axon(bias), axon_mean, axon_var, training, momentum, eps)
    taken = direct_launches() > before
    for g, e in zip(got, expected):
        compare(g, e)
    if running_mean is not None:
        compare(axon_mean, cpu_mean)
        compare(axon_var, cpu_var)
    assert taken == direct, f"axon's kernel {'not ' if direct else ''}taken"


def laid_out(x, channels_last):
    if channels_last and x.dim() in (4, 5):
        return x.contiguous(memory_format=torch.channels_last if x.dim() == 4 else torch.channels_last_3d)
    return x


@pytest.mark.parametrize("operator", [batch_norm, legit], ids=["native_batch_norm", "_native_batch_norm_legit"])
@pytest.mark.parametrize("channels_last", [False, True], ids=["contiguous", "channels_last"])
@pytest.mark.parametrize("shape", [(32, 32, 32, 32), (8, 3, 7, 5), (4, 16, 100), (3, 7, 9, 11, 2), (1, 4, 3),
                                   (64, 8, 1, 1), (2, 40, 3, 5)])
def test_training_calls_match_the_cpu(shape, channels_last, operator):
    if channels_last and len(shape) == 3:
        pytest.skip("no channels-last layout")
    generator = torch.Generator().manual_seed(len(shape) * 100 + shape[1])
    channels = shape[1]
    for affine, running, momentum, eps in itertools.product([True, False], [True, False], [0.1, 0.7], [1e-5, 0.5]):
        x = laid_out(torch.randn(shape, generator=generator) * 3 + 1.5, channels_last)
        weight = torch.randn(channels, generator=generator) if affine else None
        bias = torch.randn(channels, generator=generator) if affine else None
        running_mean = torch.randn(channels, generator=generator) if running else None
        running_var = torch.rand(channels, generator=generator) + 0.5 if running else None
        check(x, weight, bias, running_mean, running_var, True, momentum, eps, direct=True, operator=operator)


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


@pytest.mark.parametrize("case", ["eval", "double", "strided", "two_dims", "one_per_channel"])
def test_calls_the_kernel_declines_match_the_cpu(case):
    x = torch.randn(4, 6, 5, 5)
    weight, bias, running_mean, running_var = torch.randn(6), torch.randn(6), torch.zeros(6), torch.ones(6)
    training = case != "eval"
    if case == "double":
        x, weight, bias, running_mean, running_var = (t.double() for t in (x, weight, bias, running_mean, running_var))
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


def test_channels_last_results_equal_the_cpus_bit_for_bit():
    # 4 MiB: the device's team and the CPU split the rows over the same threads (one per core).
    generator = torch.Generator().manual_seed(5)
    x = laid_out(torch.randn(32, 32, 32, 32, generator=generator) * 2 + 1, True)
    weight, bias = torch.randn(32, generator=generator), torch.randn(32, generator=generator)
    expected = legit(x, weight, bias, torch.zeros(32), torch.ones(32), True, 0.1, 1e-5)
    got = legit(*map(on_axon, (x, weight, bias, torch.zeros(32), torch.ones(32))), True, 0.1, 1e-5)
    gradient = laid_out(torch.randn(x.shape, generator=generator), True)
    expected_gradients = backward(gradient, x, weight, None, None, expected[1], expected[2], True, 1e-5, [True] * 3)
    got_gradients = backward(*map(on_axon, (gradient, x, weight, None, None, expected[1], expected[2])), True, 1e-5,
                             [True] * 3)
    for g, e in zip(got + got_gradients, expected + expected_gradients):
        assert torch.equal(g.cpu(), e)


backward = torch.ops.aten.native_batch_norm_backward


def check_backward(gradient, x, weight, mask, *, direct, training=True):
    saved_mean = x.mean((0, *range(2, x.dim())))
    saved_invstd = x.var((0, *range(2, x.dim())), unbiased=False).add(1e-5).rsqrt()
    running_mean, running_var = torch.zeros(x.shape[1], dtype=x.dtype), torch.ones(x.shape[1], dtype=x.dtype)
    arguments = (gradient, x, weight, running_mean, running_var, saved_mean, saved_invstd, training, 1e-5, mask)
    expected = backward(*arguments)
    before = direct_launches()
    got = backward(*(on_axon(a) if isinstance(a, torch.Tensor) else a for a in arguments))
    taken = direct_launches() > before
    for g, e, wanted in zip(got, expected, mask):
        assert (g is not None) == wanted and (e is not None) == wanted
        if wanted:
            # Float sums over each thread's rows: a small call runs on one thread of the device, two on the CPU.
            compare(g, e, rtol=1e-5, atol=1e-5)
    assert taken == direct, f"axon's kernel {'not ' if direct else ''}taken"


@pytest.mark.parametrize("shape", [(32, 32, 32, 32), (8, 3, 7, 5), (2, 40, 3, 5), (3, 7, 9, 11, 2), (1, 17, 4, 4)])
def test_channels_last_backward_matches_the_cpu(shape):
    generator = torch.Generator().manual_seed(shape[1])
    x = laid_out(torch.randn(shape, generator=generator) * 3 + 1, True)
    gradient = laid_out(torch.randn(shape, generator=generator), True)
    weight = torch.randn(shape[1], generator=generator)
    for with_weight, mask in itertools.product([True, False], [[True, True, True], [True, False, False],
                                                               [False, True, True]]):
        check_backward(gradient, x, weight if with_weight else None, mask, direct=True)


@pytest.mark.parametrize("case", ["contiguous", "mixed_layouts", "eval", "double"])
def test_backward_calls_the_kernel_declines_match_the_cpu(case):
    x, gradient, weight = torch.randn(4, 6, 5, 5), torch.randn(4, 6, 5, 5), torch.randn(6)
    if case != "contiguous":
        x = laid_out(x, True)
    if case in ("eval", "double"):
        gradient = laid_out(gradient, True)
    if case == "double":
        x, gradient, weight = x.double(), gradient.double(), weight.double()
    check_backward(gradient, x, weight, [True, True, True], direct=False, training=case != "eval")


def test_running_statistics_are_written_back_where_the_host_cannot_address_device_memory():
    # native_batch_norm and batch_norm_update_stats update running_mean and running_var in place although
    # their schemas do not mark them written; the generic kernel used to stage them in only, so on such a
    # driver the running statistics silently stayed as they were (operator_plan.cpp, writes_without_annotation).
    output = run_python(
        """
import torch
x = torch.randn(4, 3) + 5
calls = [lambda x, m, v: torch.native_batch_norm(x, None, None, m, v, True, 0.1, 1e-5),
         lambda x, m, v: torch.batch_norm_update_stats(x, m, v, 0.1),
         lambda x, m, v: torch.nn.functional.batch_norm(x, m, v, training=True)]
for call in calls:
    mean, var = torch.zeros(3, device="axon"), torch.ones(3, device="axon")
    host_mean, host_var = torch.zeros(3), torch.ones(3)
    call(x.to("axon"), mean, var)
    call(x, host_mean, host_var)
    print(torch.allclose(mean.cpu(), host_mean) and torch.allclose(var.cpu(), host_var))
""",
        {"TORCH_DEVICE_BACKEND_AUTOLOAD": "1", "AXON_EMULATED_PRIVATE_MEMORY": "1"},
    )
    assert output.returncode == 0, output.stderr
    assert output.stdout.split() == ["True"] * 3
