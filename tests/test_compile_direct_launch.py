"""A compiled partition's common call is checked and launched in C++ (torch_axon._C.DirectLaunch): arguments
that match its specialization exactly, results new row-major tensors. Every other call takes the general path
(bindings.py), and both give eager's answers."""

from __future__ import annotations

import pytest
import torch

from torch_axon import _C
from torch_axon.compile import bindings
from torch_axon.compile.executable import compile_module

pytestmark = pytest.mark.usefixtures("fresh_compile_state")


@pytest.fixture
def general_calls(monkeypatch):
    """Counts the inputs bound by the general path."""
    count = {"inputs": 0}
    original = bindings.input_binding

    def counting(*args, **kwargs):
        count["inputs"] += 1
        return original(*args, **kwargs)

    monkeypatch.setattr(bindings, "input_binding", counting)
    return count


def test_row_major_calls_launch_without_the_general_path(general_calls):
    def function(x, y):
        return x * y + 1, x - y

    compiled = torch.compile(function, backend="axon", options={"strict": True})
    x, y = torch.randn(3, 4, device="axon"), torch.randn(3, 4, device="axon")
    first = compiled(x, y)
    second = compiled(x, y)
    assert general_calls["inputs"] == 0
    for got, want in zip(second, function(x.cpu(), y.cpu())):
        torch.testing.assert_close(got.cpu(), want)
    # Each call writes new result tensors: the first call's results are still its own.
    assert first[0].data_ptr() != second[0].data_ptr()
    torch.testing.assert_close(first[0].cpu(), second[0].cpu())


def test_calls_with_run_time_checks_launch_without_the_general_path(general_calls):
    # Their check table is reported in stream order (csrc/core/stream_checks.h), so nothing is read back.
    def function(weight, tokens):
        return torch.nn.functional.embedding(tokens, weight).sum(1)

    compiled = torch.compile(function, backend="axon", options={"strict": True})
    weight, tokens = torch.randn(10, 4, device="axon"), torch.tensor([[1, 9], [0, 3]], device="axon")
    for _ in range(3):
        torch.testing.assert_close(compiled(weight, tokens).cpu(), function(weight.cpu(), tokens.cpu()))
    assert general_calls["inputs"] == 0
    compiled(weight, torch.tensor([[1, 10], [0, 3]], device="axon"))
    with pytest.raises(IndexError, match="index out of range in self"):
        torch.axon.synchronize()
    assert general_calls["inputs"] == 0


def test_calls_that_do_not_match_take_the_general_path(general_calls):
    def function(x):
        return torch.sin(x) * 2

    compiled = torch.compile(function, backend="axon", options={"strict": True})
    row_major = torch.randn(3, 4, device="axon")
    transposed = torch.randn(4, 3, device="axon").t()  # the same sizes, another layout
    for argument, general in ((row_major, 0), (transposed, 1), (row_major, 1), (transposed, 2)):
        torch.testing.assert_close(compiled(argument).cpu(), function(argument.cpu()))
        assert general_calls["inputs"] == general


def test_size_arguments_select_their_own_specialization():
    def function(x):
        return x.sum(dim=0) + x.shape[0]

    compiled = torch.compile(function, backend="axon", dynamic=True, options={"strict": True})
    inputs = {rows: torch.randn(rows, 5, device="axon") for rows in (3, 6)}
    for rows in (3, 6, 3, 6, 3):
        torch.testing.assert_close(compiled(inputs[rows]).cpu(), function(inputs[rows].cpu()))


def test_an_evicted_specialization_is_not_launched_again():
    def function(x):
        return x * 3 - 1

    compiled = torch.compile(function, backend="axon", dynamic=True,
                             options={"strict": True, "max_specializations": 1})
    inputs = [torch.randn(rows, device="axon") for rows in (2, 5, 2, 7, 5)]
    for argument in inputs:
        torch.testing.assert_close(compiled(argument).cpu(), function(argument.cpu()))


_ADD_ONE = """
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %one = stablehlo.constant dense<1.0> : tensor<4xf32>
  %sum = stablehlo.add %x, %one : tensor<4xf32>
  return %sum : tensor<4xf32>
}
"""


def test_a_direct_launch_refuses_what_it_cannot_launch():
    executable = compile_module(_ADD_ONE, 0).executable
    tensor, result = ("tensor", [4], torch.float32), ([4], torch.float32)
    with pytest.raises(RuntimeError, match="not a tensor argument"):
        _C.DirectLaunch(executable, [("number", 2)], [0], [result], [("result", 0)], True, "add_one")
    with pytest.raises(RuntimeError, match="out of range"):
        _C.DirectLaunch(executable, [tensor], [0], [result], [("result", 1)], True, "add_one")
    launch = _C.DirectLaunch(executable, [tensor], [0], [result], [("result", 0)], True, "add_one")
    x = torch.randn(4, device="axon")
    torch.testing.assert_close(launch(x).cpu(), x.cpu() + 1)
    assert launch(x.double()) is None  # another dtype
    assert launch(torch.randn(5, device="axon")) is None  # other sizes
    assert launch(torch.randn(8, device="axon")[::2]) is None  # not row-major
    assert launch(x.cpu()) is None  # another device
    assert launch(x, x) is None  # another number of arguments
    assert launch(4) is None
    both = _C.DirectLaunch(executable, [tensor], [0], [result], [("argument", 0), ("result", 0)], False, "add_one")
    given, added = both(x)
    assert given is x
    torch.testing.assert_close(added.cpu(), x.cpu() + 1)
