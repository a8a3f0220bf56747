"""A default torch.compile of vision networks on axon, called at changing batch and image sizes (Dynamo recompiles
with symbolic sizes at the second size), gives eager's results and gradients on the CPU, channels-last or not.

Each network once failed here: the convolutions' fake layouts at symbolic sizes (torch_axon/fake_tensors.py), group
norm's backward on mixed layouts and instance norm at symbolic image sizes (torch_axon/inductor/extern_operators.py).
"""

from __future__ import annotations

import copy

import pytest
import torch
from torch import nn

LAST = torch.channels_last


pytestmark = pytest.mark.usefixtures("fresh_dynamo")


class _DownUp(nn.Module):
    """A U-Net's step: a strided convolution, a normalization, a transposed convolution, a skip connection."""

    def __init__(self, norm: nn.Module):
        super().__init__()
        self.down = nn.Conv2d(3, 8, 3, stride=2, padding=1)
        self.norm = norm
        self.up = nn.ConvTranspose2d(8, 8, 2, stride=2)
        self.out = nn.Conv2d(11, 3, 1)

    def forward(self, x):
        return self.out(torch.cat([self.up(torch.relu(self.norm(self.down(x)))), x], 1))


def _networks():
    torch.manual_seed(0)
    return {
        "conv, batch norm, ReLU, pooling": nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2)),
        "1x1 convolution": nn.Sequential(nn.Conv2d(3, 8, 1), nn.ReLU()),
        "transposed convolution": nn.Sequential(nn.ConvTranspose2d(3, 4, 3, stride=2), nn.ReLU()),
        "depthwise convolution": nn.Sequential(nn.Conv2d(3, 3, 3, padding=1, groups=3), nn.ReLU()),
        "group norm": _DownUp(nn.GroupNorm(2, 8)),
        "instance norm": _DownUp(nn.InstanceNorm2d(8, affine=True)),
    }


@pytest.mark.parametrize("channels_last", [False, True])
@pytest.mark.parametrize("name", list(_networks()))
def test_compiled_network_at_changing_sizes_matches_eager(name, channels_last):
    model = _networks()[name]
    axon_model = copy.deepcopy(model).to("axon")
    if channels_last:
        model, axon_model = model.to(memory_format=LAST), axon_model.to(memory_format=LAST)
    compiled = torch.compile(axon_model)
    for batch, size in ((6, 8), (5, 8), (1, 12), (16, 4)):
        x = torch.randn(batch, 3, size, size)
        if channels_last:
            x = x.contiguous(memory_format=LAST)
        x_cpu, x_axon = x.clone().requires_grad_(), x.to("axon").requires_grad_()
        expected, got = model(x_cpu), compiled(x_axon)
        expected.square().sum().backward()
        got.square().sum().backward()
        torch.testing.assert_close(got.cpu(), expected, rtol=1e-4, atol=1e-4)
        torch.testing.assert_close(x_axon.grad.cpu(), x_cpu.grad, rtol=1e-3, atol=1e-3)
    for want, have in zip(model.parameters(), axon_model.parameters()):
        torch.testing.assert_close(have.grad.cpu(), want.grad, rtol=1e-3, atol=1e-3)
