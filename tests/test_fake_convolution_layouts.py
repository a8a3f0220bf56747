"""Fake tensors predict the layouts axon's convolutions give (torch_axon/fake_tensors.py), so traced graphs lay
out their results as eager does, and Inductor keeps axon convolutions channels-last as it does the CPU's."""

from __future__ import annotations

import re

import pytest
import torch
from torch import nn
from torch._inductor.utils import run_and_get_code
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.fx.experimental.symbolic_shapes import ShapeEnv

aten = torch.ops.aten
LAST = torch.channels_last
LAST_3D = torch.channels_last_3d


pytestmark = pytest.mark.usefixtures("fresh_dynamo")


def _case(input_size, weight_size, *, input_format=None, weight_format=None, transposed=False, groups=1,
          stride=1, padding=0, dilation=1, dtype=torch.float32, bias=True):
    spatial = len(input_size) - 2
    return dict(input_size=input_size, weight_size=weight_size, input_format=input_format,
                weight_format=weight_format, transposed=transposed, groups=groups, stride=[stride] * spatial,
                padding=[padding] * spatial, dilation=[dilation] * spatial, output_padding=[0] * spatial,
                dtype=dtype, bias=bias)


# Each picks a different backend or layout rule of the CPU's convolution.
CASES = {
    "2-d contiguous": _case((2, 4, 9, 9), (6, 4, 3, 3), padding=1),
    "2-d channels-last input": _case((2, 4, 9, 9), (6, 4, 3, 3), input_format=LAST, padding=1),
    "2-d channels-last weight": _case((2, 4, 9, 9), (6, 4, 3, 3), weight_format=LAST),
    "2-d grouped, strided, channels-last": _case((2, 4, 9, 9), (6, 2, 3, 3), input_format=LAST, groups=2, stride=2),
    "2-d depthwise, channels-last": _case((2, 4, 9, 9), (4, 1, 3, 3), input_format=LAST, groups=4, padding=1),
    "2-d dilated, channels-last, no bias": _case((2, 4, 9, 9), (6, 4, 3, 3), input_format=LAST, dilation=2,
                                                 bias=False),
    "2-d transposed, channels-last": _case((2, 4, 5, 5), (4, 3, 3, 3), input_format=LAST, transposed=True),
    "2-d float64, channels-last": _case((2, 4, 9, 9), (6, 4, 3, 3), input_format=LAST, dtype=torch.float64),
    "2-d bfloat16, channels-last": _case((2, 4, 9, 9), (6, 4, 3, 3), input_format=LAST, dtype=torch.bfloat16),
    "3-d channels-last": _case((2, 4, 5, 5, 5), (6, 4, 3, 3, 3), input_format=LAST_3D),
    "3-d transposed, channels-last": _case((2, 4, 3, 3, 3), (4, 3, 2, 2, 2), input_format=LAST_3D, transposed=True),
    "1-d": _case((2, 4, 11), (6, 4, 3), padding=1),
}


def _tensors(case, device):
    generator = torch.Generator().manual_seed(0)
    input_ = torch.randn(case["input_size"], generator=generator).to(case["dtype"])
    weight = torch.randn(case["weight_size"], generator=generator).to(case["dtype"])
    if case["input_format"] is not None:
        input_ = input_.to(memory_format=case["input_format"])
    if case["weight_format"] is not None:
        weight = weight.to(memory_format=case["weight_format"])
    channels = case["weight_size"][1] * case["groups"] if case["transposed"] else case["weight_size"][0]
    bias = torch.randn(channels, generator=generator).to(case["dtype"]) if case["bias"] else None
    return [None if t is None else t.to(device) for t in (input_, weight, bias)]


def _arguments(case):
    return (case["stride"], case["padding"], case["dilation"], case["transposed"], case["output_padding"],
            case["groups"])


def _forward(input_, weight, bias, case):
    return aten.convolution(input_, weight, bias, *_arguments(case))


def _backward(input_, weight, bias, case):
    output = _forward(input_, weight, bias, case)
    grad_output = torch.ones_like(output)
    return aten.convolution_backward(grad_output, input_, weight, [weight.shape[1 if case["transposed"] else 0]],
                                     *_arguments(case), [True, True, bias is not None])


def _strides(results):
    results = results if isinstance(results, tuple) else (results,)
    return [None if r is None else tuple(r.stride()) for r in results]


def _fake_strides(function, case, symbolic=False):
    tensors = _tensors(case, "axon")
    # symbolic: every size and stride a symbol (with the real value as its hint), as in a graph Dynamo recompiled
    # with dynamic shapes; the strides are read back through the hints.
    mode = FakeTensorMode(allow_non_fake_inputs=True, shape_env=ShapeEnv() if symbolic else None,
                          static_shapes=not symbolic)
    with mode:
        fakes = [None if t is None else mode.from_tensor(t) for t in tensors]
        if symbolic:
            assert not all(isinstance(size, int) for size in fakes[0].shape)
        results = function(*fakes, case)
    assert all(r is None or r.device.type == "axon" for r in (results if isinstance(results, tuple) else (results,)))
    results = results if isinstance(results, tuple) else (results,)
    return [None if r is None else tuple(int(stride) for stride in r.stride()) for r in results]


@pytest.mark.parametrize("name", list(CASES))
def test_fake_axon_convolution_predicts_axon_and_cpu_strides(name):
    case = CASES[name]
    cpu = _strides(_forward(*_tensors(case, "cpu"), case))
    axon = _strides(_forward(*_tensors(case, "axon"), case))
    assert axon == cpu
    assert _fake_strides(_forward, case) == axon


@pytest.mark.parametrize("name", list(CASES))
def test_fake_axon_convolution_backward_predicts_axon_strides(name):
    case = CASES[name]
    axon = _strides(_backward(*_tensors(case, "axon"), case))
    assert _fake_strides(_backward, case) == axon


@pytest.mark.parametrize("name", list(CASES))
def test_fake_axon_convolution_with_symbolic_sizes_predicts_axon_strides(name):
    # Dynamo recompiles a function with symbolic sizes once it sees a second batch size; the fake kernel then took
    # PyTorch's rule for out-of-tree devices (contiguous) while axon's kernel gave channels-last results.
    case = CASES[name]
    assert _fake_strides(_forward, case, symbolic=True) == _strides(_forward(*_tensors(case, "axon"), case))
    assert _fake_strides(_backward, case, symbolic=True) == _strides(_backward(*_tensors(case, "axon"), case))


def test_cpu_fake_convolutions_keep_pytorchs_rule():
    case = CASES["2-d channels-last input"]
    with FakeTensorMode(allow_non_fake_inputs=True) as mode:
        fakes = [mode.from_tensor(t) for t in _tensors(case, "cpu")]
        assert _strides(_forward(*fakes, case)) == _strides(_forward(*_tensors(case, "cpu"), case))


def _channels_last_model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.Conv2d(8, 4, 3))


@pytest.mark.parametrize("backend", ["inductor", "axon"])
def test_compiled_channels_last_model_returns_eager_strides_and_gradients(backend):
    model = _channels_last_model().to("axon").to(memory_format=LAST)
    compiled_model = _channels_last_model().to("axon").to(memory_format=LAST)
    x = torch.randn(2, 3, 10, 10, device="axon").to(memory_format=LAST)
    expected = model(x)
    compiled = torch.compile(compiled_model, backend=backend)
    got = compiled(x)
    # Before axon's fake rule the compiled result came back contiguous: (256, 64, 8, 1).
    assert got.stride() == expected.stride() == (256, 1, 32, 4)
    torch.testing.assert_close(got.cpu(), expected.cpu(), rtol=1e-4, atol=1e-4)
    expected.square().sum().backward()
    got.square().sum().backward()
    for want, have in zip(model.parameters(), compiled_model.parameters()):
        assert have.grad.stride() == want.grad.stride()
        torch.testing.assert_close(have.grad.cpu(), want.grad.cpu(), rtol=1e-3, atol=1e-3)


def _convolution_result_strides(code: str) -> list[tuple[int, ...]]:
    pattern = r"assert_size_stride\(\w+, \([\d, ]+\), \(([\d, ]+)\), 'torch\.ops\.aten\.convolution\.default'\)"
    return [tuple(int(s) for s in match.split(",") if s.strip()) for match in re.findall(pattern, code)]


@pytest.mark.parametrize("training", [False, True])
def test_inductor_runs_axon_convolutions_channels_last_as_on_the_cpu(training):
    # A contiguous model with small channels: Inductor's heuristics for devices other than the CPU would leave
    # its training graph contiguous; axon, whose convolutions are the CPU's oneDNN kernels, takes the CPU's rule.
    model = _channels_last_model().to("axon")
    x = torch.randn(4, 3, 12, 12, device="axon")
    compiled = torch.compile(model)

    def step():
        if training:
            model.zero_grad()
            compiled(x).sum().backward()
            return model[0].weight.grad
        with torch.no_grad():
            return compiled(x)

    result, codes = run_and_get_code(step)
    strides = [s for code in codes for s in _convolution_result_strides(code)]
    assert len(strides) == 2 and all(s[1] == 1 for s in strides), strides  # channels-last results
    eager_model = _channels_last_model().to("axon")
    if training:
        eager_model(x).sum().backward()
        expected = eager_model[0].weight.grad
    else:
        with torch.no_grad():
            expected = eager_model(x)
    torch.testing.assert_close(result.cpu(), expected.cpu(), rtol=1e-3, atol=1e-3)

