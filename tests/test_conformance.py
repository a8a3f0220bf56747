"""The conformance harness itself: core operators pass every check on axon."""

import pytest
import torch

from conformance.opinfo_cases import run_operator
from conformance.results import Outcome
from conformance.selection import operators

CORE = ["add", "mul", "matmul", "sum", "softmax", "nn.functional.layer_norm", "nn.functional.conv2d",
        "index_put", "nonzero", "masked_select", "linalg.svd", "nn.functional.embedding", "where"]


@pytest.mark.parametrize("name", CORE)
def test_core_operator_conforms(name):
    op = next(op for op in operators() if op.name == name)
    results = run_operator(op, dtypes=[torch.float32, torch.float64, torch.bfloat16], max_samples=4)
    failures = [f"{r.key}: {r.detail}" for r in results if r.outcome == Outcome.FAILED]
    assert not failures, "\n".join(failures)
    checks = {r.check for r in results if r.outcome == Outcome.PASSED}
    assert {"values", "noncontiguous", "native"} <= checks


def test_harness_detects_a_wrong_kernel(monkeypatch):
    """A kernel that returns wrong values must fail the harness (it is not vacuous)."""
    op = next(op for op in operators() if op.name == "neg")
    real = op.op

    def wrong_on_axon(x, *args, **kwargs):
        result = real(x, *args, **kwargs)
        return result + 1 if result.device.type == "axon" else result

    monkeypatch.setattr(op, "op", wrong_on_axon)
    results = run_operator(op, dtypes=[torch.float32], max_samples=2, checks=["values"])
    assert any(r.outcome == Outcome.FAILED for r in results)


@pytest.mark.parametrize("name", ["nn.Linear", "nn.Conv2d", "nn.LSTM", "nn.GRU", "nn.LayerNorm", "nn.Embedding"])
def test_module_conforms(name):
    from torch.testing._internal.common_modules import module_db

    from conformance.module_cases import run_module

    info = next(m for m in module_db if m.name == name)
    results = run_module(info, dtypes=(torch.float32,), max_inputs=3)
    assert results and all(r.outcome == Outcome.PASSED for r in results), [r.detail for r in results]


def test_one_tensor_passed_twice_stays_one_tensor_on_axon():
    # KLDivLoss's module inputs pass one tensor as both input and target: its gradient is the sum of both
    # uses, so moving the two arguments as two leaves compared partial gradients with the CPU's total.
    from torch.testing._internal.common_modules import module_db

    from conformance.comparison import to_axon
    from conformance.module_cases import run_module

    leaf = torch.ones(3, requires_grad=True)
    first, second = to_axon((leaf, leaf))
    assert first is second and first.requires_grad
    info = next(m for m in module_db if m.name == "nn.KLDivLoss")
    results = run_module(info, dtypes=(torch.float64,))
    assert results and all(r.outcome == Outcome.PASSED for r in results), [r.detail for r in results]


@pytest.mark.parametrize("name", ["AdamW", "SGD", "Adam", "RMSprop"])
def test_optimizer_conforms_including_foreach_and_fused(name):
    from torch.testing._internal.common_optimizers import optim_db

    from conformance.optimizer_cases import run_optimizer

    info = next(o for o in optim_db if o.name == name)
    results = run_optimizer(info)
    failures = [f"{r.key}: {r.detail}" for r in results if r.outcome != Outcome.PASSED]
    assert results and not failures, failures
