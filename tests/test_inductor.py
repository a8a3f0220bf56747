"""Default torch.compile (Inductor) on axon tensors: torch_axon/inductor/.

On the emulated driver Inductor's C++ kernels compute on axon memory, launched on the current axon stream;
on a driver whose memory the host cannot address, the graph goes to the StableHLO backend instead.
"""

from __future__ import annotations

import copy
import os
import re
import sys

import pytest
import torch
from conftest import Classifier, closed_gate, requires_not_blocking, run_python
from torch import nn
from torch._inductor.utils import run_and_get_code
from torch.nn import functional as F

from torch_axon.inductor.argument_kinds import argument_kinds
from torch_axon.inductor.scheduling import slot_entry_source

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "examples"))
from tiny_gpt import TinyGPT

pytestmark = pytest.mark.usefixtures("fresh_dynamo")


def _pointwise(x, y):
    return (x.sin() + y * 2).relu().sum(1)


def test_default_compile_matches_eager_and_launches_cpp_kernels_on_axon():
    x, y = torch.randn(64, 128), torch.randn(64, 128)
    compiled = torch.compile(_pointwise)
    out, (code,) = run_and_get_code(compiled, x.to("axon"), y.to("axon"))
    assert out.device.type == "axon"
    torch.testing.assert_close(out.cpu(), _pointwise(x, y))
    assert "launch_host_kernel(cpp_fused_" in code
    assert "device='axon'" in code


def test_cpu_graphs_still_get_plain_inductor():
    x = torch.randn(32, 32)
    out, (code,) = run_and_get_code(torch.compile(_pointwise), x, x)
    torch.testing.assert_close(out, _pointwise(x, x))
    assert "launch_host_kernel" not in code


@requires_not_blocking
def test_a_compiled_kernel_runs_in_stream_order_and_the_call_does_not_wait():
    compiled = torch.compile(lambda t: (t * 2).sin() + t)
    x = torch.randn(4096, device="axon")
    compiled(x)  # compile outside the gate
    with closed_gate() as stream:
        x.add_(1)  # eager, queued behind the gate
        out = compiled(x)  # must see the add, and must not run (or wait) before the gate opens
        assert not stream.query()
    expected = x.cpu()
    torch.testing.assert_close(out.cpu(), (expected * 2).sin() + expected)


@requires_not_blocking
def test_a_compiled_kernel_runs_on_the_current_stream():
    compiled = torch.compile(lambda t: t * 3 + 1)
    x = torch.ones(1 << 16, device="axon")
    compiled(x)
    # Under load the default stream may still be running the calls above; let
    # it drain so that its query below says whether the block queued work there.
    torch.axon.default_stream().synchronize()
    side = torch.Stream(device="axon")
    with torch.axon.stream(side), closed_gate(side):
        y = x + 1
        out = compiled(y)
        assert not side.query() and torch.axon.default_stream().query()
    side.synchronize()
    assert torch.equal(out.cpu(), torch.full((1 << 16,), 7.0))


def test_cpu_scalar_inputs_and_symbolic_sizes_reach_the_kernel():
    compiled = torch.compile(lambda t, s: t * s + t.shape[0], dynamic=True)
    for n in (5, 9):
        x = torch.randn(n, 3)
        scale = torch.tensor(2.5)
        torch.testing.assert_close(compiled(x.to("axon"), scale).cpu(), x * 2.5 + n)


def test_argument_kinds_and_slot_entry():
    assert argument_kinds(["const float*", "float*", "const int64_t", "const float"]) == "rwif"
    assert argument_kinds(["const double"]) is None
    source = slot_entry_source(["const float*", "int64_t*", "const int64_t", "const float"])
    assert "reinterpret_cast<const float*>(slots[0])" in source
    assert "static_cast<int64_t>(slots[2])" in source
    assert "axon_slot_float(slots[3])" in source
    assert slot_entry_source(["const double"]) is None


class _GPTLoss(nn.Module):
    def __init__(self):
        super().__init__()
        self.gpt = TinyGPT(32, 16, width=32, heads=2, layers=1)

    def forward(self, x, y):
        return self.gpt(x, y)[1]


def _model_and_batches(kind, generator):
    if kind == "mlp":
        model = Classifier(nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 4)))
        return model, lambda: (torch.randn(8, 16, generator=generator), torch.randint(0, 4, (8,), generator=generator))
    if kind == "cnn":
        model = Classifier(nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                                          nn.MaxPool2d(2), nn.Flatten(), nn.Linear(8 * 4 * 4, 4)))
        return model, lambda: (torch.randn(4, 3, 8, 8, generator=generator),
                               torch.randint(0, 4, (4,), generator=generator))
    return _GPTLoss(), lambda: tuple(torch.randint(0, 32, (4, 16), generator=generator) for _ in range(2))


@pytest.mark.parametrize("kind", ["mlp", "cnn", "gpt"])
def test_training_matches_eager(kind):
    torch.manual_seed(0)
    model, batches = _model_and_batches(kind, torch.Generator().manual_seed(1))
    model = model.to("axon")
    compiled_model = copy.deepcopy(model)
    runners = (model, torch.compile(compiled_model))
    # SGD, not Adam: Adam divides by the gradient's magnitude, which turns float noise in a near-zero gradient
    # (a convolution bias feeding batch norm) into a full step.
    optimizers = [torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9) for m in (model, compiled_model)]
    losses = ([], [])
    for _ in range(3):
        inputs = tuple(t.to("axon") for t in batches())
        for index, (runner, optimizer) in enumerate(zip(runners, optimizers)):
            loss = runner(*inputs)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            losses[index].append(loss.item())
    torch.testing.assert_close(losses[1], losses[0], rtol=1e-4, atol=1e-4)
    for eager, compiled in zip(model.parameters(), compiled_model.parameters()):
        assert compiled.device.type == "axon"
        torch.testing.assert_close(compiled, eager, rtol=1e-3, atol=1e-4)


def test_kernel_errors_surface_as_python_errors():
    compiled = torch.compile(lambda t, i: t[i])
    x = torch.randn(8, device="axon")
    with pytest.raises((RuntimeError, IndexError)):
        compiled(x, torch.tensor([9], device="axon"))
        torch.axon.synchronize()


def test_default_compile_on_the_pjrt_driver_takes_the_stablehlo_path():
    result = run_python("""
        import torch, torch_axon.compile as c
        f = torch.compile(lambda x: (x.sin() * 2).sum())
        x = torch.randn(64)
        out = f(x.to("axon"))
        print("match", torch.allclose(out.cpu(), (x.sin() * 2).sum(), atol=1e-5), c.report().lowered_nodes > 0)
    """, {"AXON_DRIVER": "pjrt"}, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "match True True" in result.stdout


def test_a_graph_that_moves_cpu_inputs_onto_axon_is_routed_too():
    # A fresh process: the first default compile on axon must see the device in the graph, not the inputs.
    result = run_python("""
        import torch
        f = torch.compile(lambda x: (x.to("axon") * 2).sin() + torch.arange(4, device="axon"))
        x = torch.randn(4)
        out = f(x)
        print("match", out.device.type, torch.allclose(out.cpu(), (x * 2).sin() + torch.arange(4), atol=1e-6))
    """, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "match axon True" in result.stdout


def test_kernels_inside_control_flow_subgraphs_launch_on_axon():
    def function(pred, x):
        return torch.cond(pred, lambda t: (t * 2).sin(), lambda t: (t + 1).cos(), (x,))

    compiled = torch.compile(function)
    x = torch.randn(16)
    for flag in (True, False):
        pred = torch.tensor(flag)
        torch.testing.assert_close(compiled(pred.to("axon"), x.to("axon")).cpu(), function(pred, x))


def _pooling_network(dimensions):
    torch.manual_seed(0)
    convolution, pool = (nn.Conv2d, nn.MaxPool2d) if dimensions == 2 else (nn.Conv3d, nn.MaxPool3d)
    return nn.Sequential(convolution(3, 8, 3, padding=1), nn.ReLU(), pool(2), convolution(8, 4, 3, padding=1),
                         nn.ReLU(), pool(2), nn.Flatten())


def _compiled_training_step(model, x):
    """The result of a compiled forward and backward of `model` (square-summed), and the code it ran."""
    compiled = torch.compile(model)

    def step():
        model.zero_grad()
        result = compiled(x)
        result.square().sum().backward()
        return result

    result, codes = run_and_get_code(step)
    return result, "\n".join(_code_lines(codes))


@pytest.mark.parametrize("dimensions", [2, 3])
def test_max_pooling_runs_axons_kernels_in_axon_graphs(dimensions):
    # Inductor's own code for max pooling with indices (vector masks cast element by element to 64-bit
    # indices, a backward of atomic adds) took 7 ms where axon's kernels take 0.4 (extern_operators.py).
    model, reference = _pooling_network(dimensions).to("axon"), _pooling_network(dimensions).to("axon")
    x = torch.randn((4, 3) + (8,) * dimensions, device="axon")
    result, code = _compiled_training_step(model, x)
    name = f"max_pool{dimensions}d_with_indices"
    assert f"torch.ops.aten.{name}.default(" in code
    if dimensions == 2:  # 3-d's backward was never Inductor code
        assert "torch.ops.aten.max_pool2d_with_indices_backward.default(" in code
    assert "atomic_add" not in code
    expected = reference(x)
    expected.square().sum().backward()
    torch.testing.assert_close(result.cpu(), expected.cpu())
    for want, have in zip(reference.parameters(), model.parameters()):
        torch.testing.assert_close(have.grad.cpu(), want.grad.cpu(), rtol=1e-4, atol=1e-4)


def _extern_cases():
    def tensor(*size):
        return torch.randn(*size, device="axon", requires_grad=True)

    def indices(high, *size):
        return torch.randint(0, high, size, device="axon")

    return {
        "gather's backward (scatter_add)": (lambda x, i: torch.gather(x, 1, i),
                                            lambda: [tensor(16, 8), indices(8, 16, 8)], "scatter_add"),
        "scatter_add": (lambda x, i, y: x.scatter_add(0, i, y),
                        lambda: [tensor(16, 8), indices(16, 16, 8), tensor(16, 8)], "scatter_add"),
        "index_select's backward (index_add)": (lambda x, i: x.index_select(0, i),
                                                lambda: [tensor(16, 8), indices(16, 24)], "index_add"),
        "embedding's backward": (lambda w, i: F.embedding(i, w), lambda: [tensor(32, 8), indices(32, 4, 6)],
                                 "embedding_dense_backward"),
        "group_norm": (lambda x: F.group_norm(x, 4), lambda: [tensor(2, 8, 5, 5)], "native_group_norm_backward"),
        "batch_norm without running statistics": (lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True),
                                                  lambda: [tensor(4, 6, 5, 5), tensor(6), tensor(6)],
                                                  "native_batch_norm_backward"),
        "grid_sample": (lambda x, g: F.grid_sample(x, g, align_corners=False),
                        lambda: [tensor(2, 3, 6, 6), (torch.rand(2, 4, 4, 2, device="axon") * 2 - 1).requires_grad_()],
                        "grid_sampler_2d"),
        "roll": (lambda x: torch.roll(x, 3, 1), lambda: [tensor(6, 10)], "roll"),
        "unfold's backward (col2im)": (lambda x: F.unfold(x, 3, padding=1), lambda: [tensor(2, 3, 6, 6)], "col2im"),
        # Decomposed by PyTorch's Python kernels at the autograd key while tracing, unless axon's step aside.
        "nearest upsampling": (lambda x: F.interpolate(x, scale_factor=2), lambda: [tensor(2, 3, 4, 5)],
                               "upsample_nearest2d_backward"),
        "nearest-exact upsampling": (lambda x: F.interpolate(x, size=(7, 9), mode="nearest-exact"),
                                     lambda: [tensor(2, 3, 4, 5)], "_upsample_nearest_exact2d_backward"),
        "bilinear upsampling, with gradients": (lambda x: F.interpolate(x, scale_factor=2, mode="bilinear"),
                                                lambda: [tensor(2, 3, 4, 5)], "upsample_bilinear2d_backward"),
    }


@pytest.mark.parametrize("name", list(_extern_cases()))
def test_operators_whose_inductor_code_is_slow_call_axons_kernels(name):
    # Measured 1.7-3.1 times eager's time forward and backward with Inductor's code (extern_operators.py).
    function, make_inputs, operator = _extern_cases()[name]
    torch.manual_seed(0)
    inputs = make_inputs()
    compiled = torch.compile(function)

    def step():
        result = compiled(*inputs)
        result.square().sum().backward()
        return result, [t.grad for t in inputs if t.requires_grad]

    (result, grads), codes = run_and_get_code(step)
    assert f"torch.ops.aten.{operator}.default(" in "\n".join(codes)
    for t in inputs:
        t.grad = None
    expected = function(*inputs)
    expected.square().sum().backward()
    torch.testing.assert_close(result.cpu(), expected.cpu(), rtol=1e-4, atol=1e-4)
    for got, want in zip(grads, [t.grad for t in inputs if t.requires_grad]):
        torch.testing.assert_close(got.cpu(), want.cpu(), rtol=1e-4, atol=1e-4)


def _code_lines(codes):
    return [line for code in codes for line in code.splitlines() if not line.lstrip().startswith("#")]


def _channels_last(*size):
    return torch.randn(*size, device="axon").to(memory_format=torch.channels_last).requires_grad_()


@pytest.mark.parametrize("name, function", [
    ("roll", lambda x: torch.roll(x, 1, 3) * 2),  # its fake result is contiguous, its kernel keeps the layout
    ("group_norm", lambda x: F.group_norm(x, 2) * 2),
    ("max_pool2d", lambda x: F.max_pool2d(x, 2) * 2),
    ("batch_norm", lambda x: F.batch_norm(x, None, None, training=True) * 2),
    # The backward's fake kernel lays the input gradient out as the gradient, axon's kernel as the input.
    ("batch_norm, its gradient contiguous",
     lambda x: F.batch_norm(x, None, None, training=True).contiguous() * 2),
    ("nearest upsampling", lambda x: F.interpolate(x, scale_factor=2) * 2),
])
def test_axons_kernels_in_graphs_take_channels_last_inputs(name, function):
    # Each extern call's result has the layout the fake tensors predicted: group_norm gets its inputs in the traced
    # layouts and roll a contiguous one (before, both failed Inductor's stride assertion); pooling and upsampling
    # take any, their fake kernels following axon's.
    x = _channels_last(2, 4, 6, 6)
    expected = function(x)
    expected.square().sum().backward()
    want = x.grad
    x.grad = None
    got = torch.compile(function)(x)
    got.square().sum().backward()
    torch.testing.assert_close(got.cpu(), expected.cpu(), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(x.grad.cpu(), want.cpu(), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("size", [(2, 4, 6, 6), (1, 4, 6, 6), (3, 4, 1, 1), (2, 4, 3, 4, 5)])
@pytest.mark.parametrize("channels_last", [False, True])
def test_batch_norm_in_graphs_takes_either_layout(size, channels_last):
    # Sizes where channels-last and contiguous strides are ambiguous (one image, one position) or have no
    # channels-last order (5-d here: channels_last_3d); the gradient made contiguous where the input is not.
    x = torch.randn(*size, device="axon")
    if channels_last and len(size) == 4:
        x = x.to(memory_format=torch.channels_last)
    x.requires_grad_()

    def function(x):
        return F.batch_norm(x, None, None, training=True).contiguous() * 2

    expected = function(x)
    expected.square().sum().backward()
    want, x.grad = x.grad, None
    got = torch.compile(function)(x)
    got.square().sum().backward()
    torch.testing.assert_close(got.cpu(), expected.cpu(), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(x.grad.cpu(), want.cpu(), rtol=1e-4, atol=1e-4)


def _convolution_batch_norm_network():
    torch.manual_seed(0)
    return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(8, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten())


def test_batch_norm_in_axon_graphs_runs_axons_kernels():
    # Inductor's batch norm code gathers each channel's statistics with a Welford reduction over channel groups,
    # one parallel region per group: a CNN's compiled training step took 21.1 ms against 14.0 eager on a 2-core
    # AVX2 host, 12.5 with axon's kernels (extern_operators.py). Running statistics and gradients as eager's.
    model, reference = _convolution_batch_norm_network().to("axon"), _convolution_batch_norm_network().to("axon")
    x = torch.randn(4, 3, 8, 8, device="axon")
    result, code = _compiled_training_step(model, x)
    assert "torch.ops.aten._native_batch_norm_legit_functional.default(" in code
    assert "torch.ops.aten.native_batch_norm_backward.default(" in code
    assert "Welford" not in code
    expected = reference(x)
    expected.square().sum().backward()
    torch.testing.assert_close(result.cpu(), expected.cpu(), rtol=1e-5, atol=1e-5)
    for want, have in zip(reference.parameters(), model.parameters()):
        torch.testing.assert_close(have.grad.cpu(), want.grad.cpu(), rtol=1e-4, atol=1e-4)
    for want, have in zip(reference.buffers(), model.buffers()):
        torch.testing.assert_close(have.cpu(), want.cpu(), rtol=1e-5, atol=1e-5)


def test_bilinear_upsampling_without_gradients_keeps_inductors_code():
    # Inductor's forward code is the faster one there (0.6 of eager's time); only its backward is slow.
    x = torch.randn(2, 3, 4, 5, device="axon")
    function = torch.compile(lambda x: F.interpolate(x, scale_factor=2, mode="bilinear"))
    with torch.no_grad():
        result, codes = run_and_get_code(function, x)
    assert "upsample_bilinear2d" not in "\n".join(_code_lines(codes))
    torch.testing.assert_close(result.cpu(), F.interpolate(x, scale_factor=2, mode="bilinear").cpu())


@pytest.mark.parametrize("dimensions", [2, 3])
def test_max_pooling_without_gradients_keeps_inductors_code(dimensions):
    # Without indices Inductor's pooling is a few vector maxima fused with the activation before it, faster
    # than axon's kernel that also writes indices nobody reads (a CNN's compiled inference 1.52-1.64 ms against
    # 1.63-1.74).
    model = _pooling_network(dimensions).to("axon")
    x = torch.randn((4, 3) + (8,) * dimensions, device="axon")
    with torch.no_grad():
        result, codes = run_and_get_code(torch.compile(model), x)
        expected = model(x)
    assert not [line for line in _code_lines(codes) if f"max_pool{dimensions}d_with_indices.default(" in line]
    torch.testing.assert_close(result.cpu(), expected.cpu())


def test_max_pooling_in_a_channels_last_graph_takes_its_input_as_laid_out(monkeypatch):
    # Inductor lays the convolutions' results out channels-last, and the activations between convolutions; the
    # pooling's fake kernel and axon's kernel agree on any input layout, so the extern call takes its input as
    # Inductor laid it out. Before, it took the traced (contiguous) layout: a conversion before each pooling
    # and one after it.
    model = _pooling_network(2).to("axon")
    x = torch.randn(4, 3, 8, 8, device="axon")
    compiled = torch.compile(model)
    compiled(x).sum().backward()  # compiled before the kernel is watched: the compiler looks the operator up
    pooling, inputs = torch.ops.aten.max_pool2d_with_indices.default, []

    def watched(input_, *args):
        inputs.append(input_.is_contiguous(memory_format=torch.channels_last))
        return pooling(input_, *args)

    monkeypatch.setattr(torch.ops.aten.max_pool2d_with_indices, "default", watched)
    compiled(x).sum().backward()
    # The second pooling comes after the last convolution, where Inductor's own rule would make its input
    # contiguous (a transposition inside the ReLU); in axon graphs channels-last reaches it too
    # (channels_last_activations.py).
    assert inputs == [True, True]


def test_max_pooling_backward_in_a_channels_last_graph_gets_its_gradient_laid_out_as_its_input(monkeypatch):
    # Flattening makes the last pooling's gradient contiguous while its input is channels-last, and axon's
    # backward kernel took 3.7 times as long on mixed layouts; the gradient is made channels-last first.
    model = _pooling_network(2).to("axon")
    x = torch.randn(4, 3, 8, 8, device="axon")
    compiled = torch.compile(model)
    compiled(x).sum().backward()
    backward, layouts = torch.ops.aten.max_pool2d_with_indices_backward.default, []

    def watched(gradient, input_, *args):
        layouts.append(tuple(t.is_contiguous(memory_format=torch.channels_last) for t in (gradient, input_)))
        return backward(gradient, input_, *args)

    monkeypatch.setattr(torch.ops.aten.max_pool2d_with_indices_backward, "default", watched)
    compiled(x).sum().backward()
    assert layouts == [(True, True), (True, True)]


def test_cpu_graphs_keep_inductors_max_pooling_code():
    from torch_axon.inductor.registration import register_inductor_backend

    register_inductor_backend()  # what the first axon graph does: axon's wrappers are in place
    model = _pooling_network(2)
    x = torch.randn(4, 3, 8, 8)
    _, codes = run_and_get_code(lambda: torch.compile(model)(x).sum().backward())
    assert "torch.ops.aten.max_pool2d_with_indices" not in "\n".join(codes)


@pytest.mark.parametrize("name, function, make_inputs", [
    ("gradients joined (a fused projection's backward)",
     lambda q, k, v: torch.cat([t.transpose(1, 2).reshape(4, 6, 8) * 2 for t in (q, k, v)], -1),
     lambda: [torch.randn(4, 2, 6, 4) for _ in range(3)]),
    ("views and computed inputs", lambda a, b: torch.cat([a.relu(), b[:, 1:]], 1),
     lambda: [torch.randn(5, 3), torch.randn(5, 4)]),
    ("mixed dtypes", lambda a, b: torch.cat([a * 2, b * 2], 0),
     lambda: [torch.randn(2, 3), torch.randn(2, 3).double()]),
    ("an empty 1-d input", lambda a, b: torch.cat([a * 2, b, a], 0), lambda: [torch.randn(3), torch.randn(0)]),
    ("8-bit integers", lambda a, b: torch.cat([a + 1, b], 1),
     lambda: [torch.randint(0, 100, (2, 3), dtype=torch.uint8), torch.randint(0, 100, (2, 2), dtype=torch.uint8)]),
])
def test_concatenation_takes_the_cpus_lowering(name, function, make_inputs):
    # Inductor's pointwise cat (other devices than "cpu") is a scalar loop of masked loads in C++: 3.4 times
    # eager's time for a GPT's joined q/k/v gradients (cpu_lowering_choices.py). Axon graphs get the CPU's copies
    # into slices, and Inductor's own lowering where its CPU branch treats a case apart.
    inputs = make_inputs()
    expected = function(*inputs)
    got, codes = run_and_get_code(torch.compile(function), *(t.to("axon") for t in inputs))
    assert got.dtype == expected.dtype and got.stride() == expected.stride()
    torch.testing.assert_close(got.cpu(), expected)
    if name.startswith("gradients"):
        assert "decltype(" not in "\n".join(_code_lines(codes))  # no masked loads


_SAME_CODE_AS_THE_CPU = {
    "division by a constant": (lambda x: x / 3.0, (4096,)),
    "variance of short rows": (lambda x: x.var(-1), (64, 48)),
    "layer norm of short rows": (lambda x: F.layer_norm(x, (48,)), (64, 48)),
    # Batch norm itself runs axon's kernel in axon graphs (extern_operators.py); its statistics' reduction here.
    "per-channel statistics": (lambda x: torch.var_mean(x, (0, 2, 3), correction=0), (8, 4, 5, 5)),
    "average pooling": (lambda x: F.avg_pool2d(x, 3, 2, 1), (2, 4, 9, 9)),
    "mean": (lambda x: x.mean(-1) / 7.0, (32, 100)),
    "softmax": (lambda x: torch.softmax(x / 0.7, -1), (32, 100)),
    "gelu": (lambda x: F.gelu(x) / 2.0, (4096,)),
    "cat": (lambda x: torch.cat([x * 2, x.relu()], 0) / 3.0, (16, 8)),
}


@pytest.mark.parametrize("name", list(_SAME_CODE_AS_THE_CPU))
def test_compiled_results_equal_the_cpus_compiled_results_to_the_bit(name):
    # Axon graphs are compiled by the CPU's C++ generator, and where Inductor chooses by device type "cpu" they
    # take the CPU's choice (cpu_lowering_choices.py). Before, a division by a constant became a multiplication by
    # its reciprocal (a third of x / 3.0's elements differed from eager's in the last bit; the CPU's none), and
    # short rows' variances took Welford's update where the CPU takes two passes.
    function, shape = _SAME_CODE_AS_THE_CPU[name]
    x = torch.randn(*shape, generator=torch.Generator().manual_seed(0)) * 10 + 100
    on_cpu = torch.compile(function)(x)
    on_axon = torch.compile(function)(x.to("axon"))
    for have, want in zip(*((r,) if isinstance(r, torch.Tensor) else r for r in (on_axon, on_cpu))):
        assert torch.equal(have.cpu(), want)


def test_a_convolutions_bias_stays_in_the_convolution_as_on_the_cpu():
    # For devices other than "cpu" Inductor peels the bias off a convolution (cuDNN is slower with it) and adds it
    # in a generated kernel: before a batch norm, that was an extra pass over the convolution's result. Axon's
    # convolution is oneDNN's, which adds the bias as it writes, as on the CPU (cpu_lowering_choices.py).
    generator = torch.Generator().manual_seed(0)
    x, weight, bias = (torch.randn(*shape, generator=generator) for shape in ((4, 8, 12, 12), (16, 8, 3, 3), (16,)))

    def function(x, weight, bias):
        return F.relu(F.conv2d(x, weight, bias, padding=1)) / 3.0

    on_cpu = torch.compile(function)(x, weight, bias)
    on_axon, (code,) = run_and_get_code(torch.compile(function), x.to("axon"), weight.to("axon"), bias.to("axon"))
    assert re.search(r"extern_kernels\.convolution\(\w+, \w+, \w+, stride=", code)
    assert torch.equal(on_axon.cpu(), on_cpu)


def test_a_reused_exponential_is_stored_as_on_the_cpu():
    # For "cpu" Inductor stores a reused costly result (here the softmax's exponentials, in a per-row buffer of the
    # fused kernel) where other devices recompute it in each user; axon graphs take the CPU's heuristics
    # (cpu_lowering_choices.py): 1.49-1.57 ms a call recomputed against the CPU graph's 1.19-1.25 at 4096x1024.
    weight = torch.randn(64, device="axon")
    _, (code,) = run_and_get_code(torch.compile(lambda x: torch.softmax(x, -1) * weight),
                                  torch.randn(32, 64, device="axon"))
    assert "local_buffer_data" in code
