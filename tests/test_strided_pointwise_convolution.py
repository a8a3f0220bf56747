"""The weight gradient of a 1x1 convolution with a stride, channels-last (csrc/host_execution/convolution.cpp).

On an AVX2 host PyTorch 2.13's CPU kernel (oneDNN) returned a wrong weight gradient here for 2 to 6 input
channels and wrote past a buffer of its own; axon computes it from the input's strided samples instead. Checked
against float64 sums of the products themselves, not against the CPU's float kernel.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F


def _samples(x: torch.Tensor, stride: int) -> torch.Tensor:
    index = (slice(None), slice(None)) + (slice(None, None, stride),) * (x.dim() - 2)
    return x[index]


@pytest.mark.parametrize("channels", [2, 3, 4, 5, 6, 8])
@pytest.mark.parametrize("size,stride", [(8, 2), (9, 3), (7, 2)])
@pytest.mark.parametrize("spatial", [2, 3])
def test_weight_gradient_of_a_strided_1x1_channels_last_convolution(channels, size, stride, spatial):
    generator = torch.Generator().manual_seed(channels * 100 + size)
    memory_format = torch.channels_last if spatial == 2 else torch.channels_last_3d
    x = torch.randn(3, channels, *(size,) * spatial, generator=generator).contiguous(memory_format=memory_format)
    weight = torch.randn(8, channels, *(1,) * spatial, generator=generator).contiguous(memory_format=memory_format)
    out_size = (size - 1) // stride + 1
    grad_output = torch.randn(3, 8, *(out_size,) * spatial, generator=generator).contiguous(
        memory_format=memory_format)
    letters = "dhw"[-spatial:]
    expected = torch.einsum(f"no{letters},ni{letters}->oi", grad_output.double(), _samples(x.double(), stride))

    for mask in ([False, True, False], [True, True, True]):
        grad_input, grad_weight, grad_bias = torch.ops.aten.convolution_backward(
            grad_output.to("axon"), x.to("axon"), weight.to("axon"), [8], [stride] * spatial, [0] * spatial,
            [1] * spatial, False, [0] * spatial, 1, mask)
        torch.testing.assert_close(grad_weight.cpu().double().flatten(1), expected, atol=1e-4, rtol=1e-5)
        assert grad_weight.is_contiguous(memory_format=memory_format)
        if mask[0]:
            reference = torch.ops.aten.convolution_backward(
                grad_output.double(), x.double(), weight.double(), [8], [stride] * spatial, [0] * spatial,
                [1] * spatial, False, [0] * spatial, 1, mask)
            torch.testing.assert_close(grad_input.cpu().double(), reference[0], atol=1e-4, rtol=1e-5)
            torch.testing.assert_close(grad_bias.cpu().double(), reference[2], atol=1e-4, rtol=1e-5)


def test_a_strided_1x1_channels_last_layer_trains_as_in_float64():
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(3, 3, 8, 8, generator=generator).contiguous(memory_format=torch.channels_last)
    weight = torch.randn(8, 3, 1, 1, generator=generator).contiguous(memory_format=torch.channels_last)
    expected_weight = weight.double().requires_grad_()
    F.conv2d(x.double(), expected_weight, stride=2).pow(2).sum().backward()
    axon_weight = weight.to("axon").requires_grad_()
    F.conv2d(x.to("axon"), axon_weight, stride=2).pow(2).sum().backward()
    torch.testing.assert_close(axon_weight.grad.cpu().double(), expected_weight.grad, atol=1e-4, rtol=1e-5)
