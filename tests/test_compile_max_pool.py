"""Compiled max pooling (lowering/max_pool_taps.py): small windows lower to elementwise code, not to a
(value, index) reduce_window and a scatter, and match eager exactly: values, indices (ties keep the first,
the last NaN wins, an all -inf window names its first element on the input) and gradients."""

from __future__ import annotations

import glob

import pytest
import torch
import torch.nn.functional as F

pytestmark = pytest.mark.usefixtures("fresh_compile_state")


@pytest.fixture(autouse=True)
def _pooling_compiled(monkeypatch):
    # Pooling is an extern kernel by default (axon's own kernel); these tests are about its lowering.
    monkeypatch.setenv("AXON_COMPILE_EXTERN", "convolution,attention")


def _compile_strict(function, **options):
    return torch.compile(function, backend="axon", dynamic=False, options={"strict": True, **options})


def _inputs(shape, kind):
    torch.manual_seed(0)
    if kind == "ties":
        return torch.randint(0, 3, shape).float()
    x = torch.randn(shape)
    if kind == "nan":
        x[x > 0.8] = float("nan")
    if kind == "-inf":
        x[x > -0.7] = float("-inf")
    return x


def _assert_matches_eager(function, x, gradient_atol=0.0):
    expected_x, actual_x = x.clone().requires_grad_(), x.to("axon").requires_grad_()
    expected_values, expected_indices = function(expected_x)
    actual_values, actual_indices = _compile_strict(function)(actual_x)
    torch.testing.assert_close(actual_values.cpu(), expected_values, rtol=0, atol=0, equal_nan=True)
    assert torch.equal(actual_indices.cpu(), expected_indices)
    gradient = torch.randn_like(expected_values)
    expected_values.backward(gradient)
    actual_values.backward(gradient.to("axon"))
    torch.testing.assert_close(actual_x.grad.cpu(), expected_x.grad, rtol=0, atol=gradient_atol)


# (kernel, stride, padding, dilation, ceil_mode): disjoint windows (exact gradients), then overlapping ones
# (the gradient sums where windows share a maximum).
DISJOINT = [(2, 2, 0, 1, False), (2, 2, 1, 1, True), (2, 3, 0, 2, False), ((2, 3), (2, 3), (1, 0), 1, True)]
OVERLAPPING = [(3, 2, 1, 1, False), (3, 2, 1, 1, True), (2, 1, 0, 1, False), (3, 3, 1, 2, False),
               ((2, 3), (1, 2), (1, 0), 1, True)]


@pytest.mark.parametrize("geometry", DISJOINT + OVERLAPPING, ids=str)
@pytest.mark.parametrize("kind", ["randn", "ties", "nan", "-inf"])
def test_max_pool2d_matches_eager(geometry, kind):
    kernel, stride, padding, dilation, ceil_mode = geometry
    atol = 0.0 if geometry in DISJOINT else 1e-6
    for shape in [(2, 3, 9, 8), (3, 7, 7)]:
        _assert_matches_eager(
            lambda t: F.max_pool2d(t, kernel, stride, padding, dilation, ceil_mode, return_indices=True),
            _inputs(shape, kind), atol)


@pytest.mark.parametrize("function, shape", [
    (lambda t: F.max_pool3d(t, 2, return_indices=True), (2, 2, 5, 6, 7)),
    (lambda t: F.max_pool3d(t, 3, 2, 1, return_indices=True), (2, 2, 5, 6, 7)),
    (lambda t: F.max_pool1d(t, 3, 2, 1, return_indices=True), (2, 3, 11)),
], ids=["3d disjoint", "3d overlapping", "1d overlapping"])
def test_max_pool1d_and_3d_match_eager(function, shape):
    _assert_matches_eager(function, _inputs(shape, "nan"), 1e-6)


def test_bfloat16_matches_eager():
    _assert_matches_eager(lambda t: F.max_pool2d(t, 2, return_indices=True), _inputs((2, 4, 8, 8), "ties").bfloat16())


def test_small_windows_lower_to_elementwise_code(tmp_path):
    x = torch.randn(2, 3, 8, 8, device="axon", requires_grad=True)
    _compile_strict(lambda t: F.max_pool2d(t, 2), dump_dir=str(tmp_path))(x).sum().backward()
    programs = [open(path).read() for path in glob.glob(str(tmp_path / "**" / "*.stablehlo.mlir"), recursive=True)]
    assert len(programs) == 2  # the forward and the backward
    for program in programs:
        assert "reduce_window" not in program and "scatter" not in program
