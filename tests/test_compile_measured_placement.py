"""mode="max-autotune": a graph with matrix products is placed twice (products compiled, products extern) and
its first calls measure both; the faster stays (torch_axon/compile/measured_placement.py)."""

from __future__ import annotations

import time

import pytest
import torch
from torch import nn

import torch_axon.compile as axon_compile
from torch_axon.compile.measured_placement import COMPILED, EXTERN, TIMED_CALLS, MeasuredChoice

pytestmark = pytest.mark.usefixtures("fresh_compile_state")


def _placements(seconds: dict[str, float], calls: dict[str, int]):
    def placement(label):
        def run(x):
            calls[label] += 1
            time.sleep(seconds[label])
            return x + 1

        return run

    return {label: placement(label) for label in seconds}


def test_the_clearly_faster_placement_is_kept_and_the_other_dropped():
    calls = {COMPILED: 0, EXTERN: 0}
    choice = MeasuredChoice("g", _placements({COMPILED: 0.03, EXTERN: 0.0}, calls), None)
    x = torch.zeros(4, device="axon")
    for _ in range(2 * (TIMED_CALLS + 1)):  # one untimed call each, then TIMED_CALLS timed calls each
        torch.testing.assert_close(choice(x).cpu(), torch.ones(4))
    assert choice.chosen_label == EXTERN
    assert calls == {COMPILED: TIMED_CALLS + 1, EXTERN: TIMED_CALLS + 1}
    for _ in range(3):
        choice(x)
    assert calls == {COMPILED: TIMED_CALLS + 1, EXTERN: TIMED_CALLS + 4}
    assert list(choice.placements) == [EXTERN]


def test_a_near_tie_keeps_the_first_placement():
    calls = {COMPILED: 0, EXTERN: 0}
    choice = MeasuredChoice("g", _placements({COMPILED: 0.02, EXTERN: 0.019}, calls), None)
    x = torch.zeros(4, device="axon")
    for _ in range(2 * (TIMED_CALLS + 1)):
        choice(x)
    assert choice.chosen_label == COMPILED


def test_a_call_without_axon_tensors_keeps_the_placement_it_ran():
    calls = {COMPILED: 0, EXTERN: 0}
    choice = MeasuredChoice("g", _placements({COMPILED: 0.0, EXTERN: 0.0}, calls), None)
    choice(torch.zeros(2))
    assert choice.chosen_label == COMPILED


def _mlp():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 4)).to("axon")


def test_max_autotune_measures_both_placements_and_agrees_with_eager():
    model = _mlp()
    x = torch.randn(8, 16, device="axon")
    compiled = torch.compile(model, backend="axon", mode="max-autotune")
    want = model(x).cpu()
    for _ in range(2 * (TIMED_CALLS + 1) + 2):  # the measuring calls, then the kept placement's
        torch.testing.assert_close(compiled(x).cpu(), want, rtol=1e-5, atol=1e-5)
    graphs = axon_compile.report().graphs
    measured = [g for g in graphs if g.placement is not None]
    assert len(measured) == 1
    assert measured[0].placement in (COMPILED, EXTERN)
    assert set(measured[0].placement_ms) == {COMPILED, EXTERN}
    assert any(g.name.endswith(f"({EXTERN})") for g in graphs)
    assert "measured placements" in str(axon_compile.report())


def test_max_autotune_training_step_gradients_agree_with_eager():
    model = _mlp()
    x = torch.randn(8, 16, device="axon")
    model(x).square().sum().backward()
    want = [p.grad.cpu() for p in model.parameters()]
    compiled = torch.compile(model, backend="axon", mode="max-autotune")
    for _ in range(2 * (TIMED_CALLS + 1) + 2):
        model.zero_grad(set_to_none=True)
        compiled(x).square().sum().backward()
        for parameter, expected in zip(model.parameters(), want):
            torch.testing.assert_close(parameter.grad.cpu(), expected, rtol=1e-4, atol=1e-5)
    assert sum(g.placement is not None for g in axon_compile.report().graphs) == 2  # forward and backward


def test_default_mode_places_once():
    model = _mlp()
    compiled = torch.compile(model, backend="axon")
    compiled(torch.randn(8, 16, device="axon"))
    graphs = axon_compile.report().graphs
    assert all(g.placement is None for g in graphs)
    assert not any(EXTERN in g.name for g in graphs)


def test_an_explicit_extern_setting_is_not_measured(monkeypatch):
    monkeypatch.setenv("AXON_COMPILE_EXTERN", "convolution,attention,pooling")
    model = _mlp()
    compiled = torch.compile(model, backend="axon", mode="max-autotune")
    compiled(torch.randn(8, 16, device="axon"))
    assert all(g.placement is None for g in axon_compile.report().graphs)


def test_a_graph_without_matrix_products_places_once():
    compiled = torch.compile(lambda t: (t * 2).relu(), backend="axon", mode="max-autotune")
    compiled(torch.randn(8, device="axon"))
    assert all(g.placement is None for g in axon_compile.report().graphs)
    assert len(axon_compile.report().graphs) == 1
