"""The compile pipeline is a declared list of stages (torch_axon/compile/pipeline.py): the dumps and the
per-stage timing come from iterating over that declaration, not from code at each stage."""

from __future__ import annotations

import pytest
import torch

import torch_axon.compile as axon_compile
from torch_axon.compile import pipeline, stage
from torch_axon.compile.report import GraphRecord


@pytest.fixture(autouse=True)
def _fresh_graphs_report_and_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("AXON_COMPILE_CACHE_DIR", str(tmp_path / "xla-cache"))
    torch._dynamo.reset()
    axon_compile.reset_report()


def _dumped_files(dump):
    return {p.relative_to(dump).as_posix() for p in dump.rglob("*") if p.is_file()}


def test_stages_are_declared_in_order():
    names = [s.name for s in pipeline.PIPELINE]
    assert names == ["dynamo", "aot_autograd", "aten", "passes", "partitioned", "stablehlo", "executable"]
    scopes = [s.scope for s in pipeline.PIPELINE]
    assert scopes == sorted(scopes, key=[stage.DYNAMO, stage.GRAPH, stage.SPECIALIZATION].index)
    assert all(s.name in pipeline.listing() for s in pipeline.PIPELINE)


def test_every_dumping_stage_writes_its_numbered_file(tmp_path):
    dump = tmp_path / "dump"
    x = torch.randn(4, 4, device="axon")
    torch.compile(lambda t: t.tanh() * 2, backend="axon", options={"dump_dir": str(dump)})(x)
    files = _dumped_files(dump)
    dumping = [s for s in pipeline.PIPELINE if s.dump is not None]
    for number, declared in enumerate(dumping):
        prefix = f"{number:02d}_"
        written = [f for f in files if f.split("/")[-1].startswith(prefix)]
        assert written, f"stage {declared.name} wrote no {prefix}* file: {sorted(files)}"
        if declared.scope != stage.SPECIALIZATION:  # specializations are named after partition and shapes
            assert all(f.endswith(f"/{prefix}{declared.name}.py") for f in written), written
    assert len(files) == len(dumping)


def test_a_stage_added_to_the_declaration_is_dumped_and_timed(tmp_path):
    record = GraphRecord("graph_x")
    options = axon_compile.CompileOptions(dump_dir=str(tmp_path))
    extra = stage.Stage("doubled", stage.GRAPH, lambda value, job: value * 2, lambda value, job: (".txt", str(value)))
    first = stage.Stage("first", stage.GRAPH, lambda value, job: value + 1, lambda value, job: (".txt", str(value)))
    job = stage.Job(options, "graph_x", (first, extra), record)
    results = stage.run(job, stage.GRAPH, 20)
    assert results == {"first": 21, "doubled": 42}
    assert (tmp_path / "graph_x" / "00_first.txt").read_text() == "21"
    assert (tmp_path / "graph_x" / "01_doubled.txt").read_text() == "42"
    assert set(record.stage_seconds) == {"first", "doubled"}


def test_stage_seconds_are_recorded_per_graph():
    torch.compile(lambda t: t.sin() + 1, backend="axon")(torch.randn(4, device="axon"))
    graph = axon_compile.report().graphs[0]
    for declared in pipeline.PIPELINE:
        if declared.scope != stage.DYNAMO:
            assert declared.name in graph.stage_seconds, declared.name
            assert graph.stage_seconds[declared.name] >= 0.0


def test_the_report_breaks_compile_time_down_by_step():
    axon_compile.reset_report()
    compiled = torch.compile(lambda x: (x.cos() * 3).sum(dim=0), backend="axon")
    compiled(torch.randn(5, 7, device="axon"))
    breakdown = axon_compile.report().stage_breakdown()
    assert list(breakdown) == ["Dynamo tracing", "AOTAutograd", "partitioning", "lowering to StableHLO",
                               "XLA compile or load"]
    assert all(seconds >= 0 for seconds in breakdown.values())
    assert breakdown["Dynamo tracing"] > 0 and breakdown["AOTAutograd"] > 0
    assert "time by step: Dynamo tracing" in str(axon_compile.report())
