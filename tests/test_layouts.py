"""Results keep the CPU's memory layout: strides decide whether reshape and
contiguous copy or return views, so a different layout changes what code
that mutates results does."""

import pytest
import torch


def randn(*shape, device):
    """Random numbers drawn on the CPU (axon's generator draws others), then moved."""
    return torch.randn(*shape).to(device)


def both(make):
    """`make(device)` on the CPU and on axon, from the same random numbers."""
    torch.manual_seed(0)
    cpu = make("cpu")
    torch.manual_seed(0)
    return cpu, make("axon")


@pytest.mark.parametrize(
    "name, make",
    [
        ("abs_permuted", lambda d: randn(3, 4, device=d).t().abs()),
        ("abs_int64_unfold", lambda d: torch.arange(16, device=d).reshape(4, 4).unfold(0, 2, 1).abs()),
        ("logical_xor_permuted", lambda d: torch.logical_xor(randn(3, 4, device=d).t(), randn(4, 3, device=d))),
        ("abs_float16_permuted", lambda d: randn(2, 3, 4, device=d).half().permute(2, 0, 1).abs()),
    ],
)
def test_elementwise_results_keep_the_input_layout(name, make):
    cpu, axon = both(make)
    assert axon.stride() == cpu.stride()
    torch.testing.assert_close(axon.cpu(), cpu)


def test_reshape_copies_where_the_cpu_copies():
    source_cpu, source_axon = both(lambda d: randn(3, 4, device=d).t())
    flat_cpu, flat_axon = source_cpu.abs().reshape(-1), source_axon.abs().reshape(-1)
    flat_cpu.add_(100)
    flat_axon.add_(100)
    assert flat_axon._base is None and flat_cpu._base is None


def test_out_tensors_keep_their_strides_when_the_shape_fits():
    for device in ("cpu", "axon"):
        out = torch.empty(2, 3, device=device).t()
        torch.zeros((3, 2), out=out)
        assert out.stride() == (1, 3)
        scores = torch.empty(3, 2, device=device).t()
        torch.softmax(torch.randn(2, 3, device=device), 0, out=scores)
        assert scores.stride() == (1, 2)


def test_out_tensors_resized_by_a_kernel_take_the_cpus_layout():
    cpu, axon = both(lambda d: torch.abs(randn(3, 4, device=d).t(), out=torch.empty(0, device=d)))
    assert axon.stride() == cpu.stride() == (1, 4)


def convolution_step(layer, shape, memory_format, device):
    """(the output, the input's gradient, the weight's gradient) of `layer` on an input in `memory_format`."""
    x = randn(*shape, device=device).to(memory_format=memory_format).requires_grad_()
    y = layer(x)
    y.sum().backward()
    return y, x.grad, layer.weight.grad


@pytest.mark.parametrize("memory_format, shape",
                         [(torch.channels_last, (2, 3, 8, 8)), (torch.channels_last_3d, (2, 3, 5, 5, 5))])
def test_convolution_keeps_channels_last(memory_format, shape):
    def run(device):
        layer = (torch.nn.Conv2d(3, 4, 3) if len(shape) == 4 else torch.nn.Conv3d(3, 4, 3)).to(device)
        return convolution_step(layer.to(memory_format=memory_format), shape, memory_format, device)

    cpu, axon = both(run)
    for expected, actual in zip(cpu, axon):
        assert actual.stride() == expected.stride()
        assert actual.is_contiguous(memory_format=memory_format)
        torch.testing.assert_close(actual.cpu(), expected, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("make_layer, memory_format, shape", [
    # A batch of one: the CPU runs its slow transposed 3-d kernel, whose result is contiguous.
    (lambda: torch.nn.ConvTranspose3d(3, 3, 3, stride=2, padding=2, output_padding=1), torch.channels_last_3d,
     (1, 3, 4, 4, 4)),
    # oneDNN: channels-last in, channels-last out.
    (lambda: torch.nn.ConvTranspose3d(3, 2, 3, stride=2), torch.channels_last_3d, (2, 3, 4, 4, 4)),
    (lambda: torch.nn.ConvTranspose2d(3, 2, 3, stride=2), torch.channels_last, (2, 3, 6, 6)),
    (lambda: torch.nn.Conv3d(3, 2, 3, stride=2), torch.channels_last_3d, (1, 3, 4, 4, 4)),
], ids=["transposed 3d, slow kernel", "transposed 3d, oneDNN", "transposed 2d", "3d, one output element"])
def test_convolution_results_take_the_layout_of_the_cpus_backend(make_layer, memory_format, shape):
    # The layout follows the backend the CPU picks for the call, not the input's layout alone.
    cpu, axon = both(lambda d: convolution_step(make_layer().to(d), shape, memory_format, d))
    for expected, actual in zip(cpu, axon):
        assert actual.stride() == expected.stride()
        torch.testing.assert_close(actual.cpu(), expected, rtol=1e-4, atol=1e-4)


def test_resize_to_the_same_shape_keeps_strides():
    tensor = torch.empty(2, 3, device="axon").t()
    tensor.resize_(3, 2)
    assert tensor.stride() == (1, 3)
    tensor.resize_(3, 2, memory_format=torch.contiguous_format)
    assert tensor.stride() == (2, 1)
