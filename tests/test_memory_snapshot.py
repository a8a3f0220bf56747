"""Memory snapshots: torch.axon.memory._record_memory_history / _snapshot / _dump_snapshot, read by PyTorch's
own memory visualizer (torch.cuda._memory_viz)."""

from __future__ import annotations

import pickle

import pytest
import torch
from conftest import closed_gate, requires_not_blocking
from torch.cuda import _memory_viz


@pytest.fixture(autouse=True)
def _recording():
    torch.axon.synchronize()
    torch.axon.memory._record_memory_history(stacks="python", clear_history=True)
    yield
    torch.axon.memory._record_memory_history(enabled=None, clear_history=True)


def _trace():
    return torch.axon.memory._snapshot()["device_traces"][0]


def _allocate_a_named_tensor():
    return torch.empty(3 << 20, dtype=torch.uint8, device="axon")


def _segment_of(snapshot, address):
    return next(s for s in snapshot["segments"] if s["address"] == address)


def test_allocations_and_frees_are_traced_with_the_python_stack():
    tensor = _allocate_a_named_tensor()
    address = tensor.data_ptr()
    snapshot = torch.axon.memory._snapshot()
    allocs = [e for e in snapshot["device_traces"][0] if e["action"] == "alloc" and e["addr"] == address]
    assert allocs and allocs[-1]["size"] >= 3 << 20 and allocs[-1]["stream"] == 0
    assert any(frame["name"] == "_allocate_a_named_tensor" for frame in allocs[-1]["frames"])
    segment = _segment_of(snapshot, address)
    assert segment["blocks"][0]["state"] == "active_allocated"
    assert segment["blocks"][0]["requested_size"] == 3 << 20
    assert any(frame["name"] == "_allocate_a_named_tensor" for frame in segment["blocks"][0]["frames"])
    del tensor
    actions = [e["action"] for e in _trace() if e["addr"] == address]
    assert actions[-2:] == ["free_requested", "free_completed"]
    assert _segment_of(torch.axon.memory._snapshot(), address)["blocks"][0]["state"] == "inactive"


def test_new_driver_memory_and_its_release_are_segment_events():
    torch.axon.empty_cache()
    torch.axon.memory._record_memory_history(stacks="python", clear_history=True)
    tensor = torch.empty(5 << 20, dtype=torch.uint8, device="axon")
    address = tensor.data_ptr()
    del tensor
    torch.axon.empty_cache()
    actions = [e["action"] for e in _trace() if e["addr"] == address]
    assert actions == ["segment_alloc", "alloc", "free_requested", "free_completed", "segment_free"]


@requires_not_blocking
def test_a_block_used_by_another_stream_is_pending_until_that_stream_passes():
    side = torch.Stream(device="axon")
    tensor = torch.ones(1 << 16, device="axon")
    address = tensor.data_ptr()
    with closed_gate(side):
        with torch.axon.stream(side):
            tensor.mul_(2)
        tensor.record_stream(side)
        del tensor
        state = _segment_of(torch.axon.memory._snapshot(), address)["blocks"][0]["state"]
        assert state == "active_pending_free"
        assert [e["action"] for e in _trace() if e["addr"] == address][-1] == "free_requested"
    side.synchronize()
    torch.empty(1, device="axon")  # the allocator notices finished streams on its next call
    assert [e["action"] for e in _trace() if e["addr"] == address][-1] == "free_completed"


def test_out_of_memory_is_traced():
    torch.axon.set_per_process_memory_fraction(0.01)
    try:
        with pytest.raises(torch.OutOfMemoryError):
            torch.empty(1 << 40, dtype=torch.uint8, device="axon")
    finally:
        torch.axon.set_per_process_memory_fraction(1.0)
    assert [e for e in _trace() if e["action"] == "oom" and e["size"] == 1 << 40 and e["device_free"] > 0]
    assert "raise OutOfMemoryError" in _memory_viz.trace(torch.axon.memory._snapshot())  # the text trace reads it


def test_stopping_keeps_the_trace_and_records_nothing_more():
    _allocate_a_named_tensor()
    recorded = len(_trace())
    torch.axon.memory._record_memory_history(enabled=None)
    torch.empty(1024, device="axon")
    assert len(_trace()) == recorded > 0


def test_max_entries_keeps_the_newest():
    torch.axon.memory._record_memory_history(stacks="python", max_entries=4, clear_history=True)
    for _ in range(10):
        torch.empty(1024, device="axon")
    assert len(_trace()) == 4


def test_state_mode_keeps_block_stacks_without_a_trace():
    torch.axon.memory._record_memory_history(enabled="state", stacks="python", clear_history=True)
    tensor = _allocate_a_named_tensor()
    snapshot = torch.axon.memory._snapshot()
    assert snapshot["device_traces"][0] == []
    frames = _segment_of(snapshot, tensor.data_ptr())["blocks"][0]["frames"]
    assert any(frame["name"] == "_allocate_a_named_tensor" for frame in frames)


def test_bad_arguments_raise():
    with pytest.raises(ValueError):
        torch.axon.memory._record_memory_history(enabled="everything")
    with pytest.raises(ValueError):
        torch.axon.memory._record_memory_history(context="sometimes")
    with pytest.raises(ValueError):
        torch.axon.memory._record_memory_history(stacks="cpp")


def test_pytorchs_memory_visualizer_reads_the_dump(tmp_path):
    model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 8)).to("axon")
    optimizer = torch.optim.Adam(model.parameters())
    for _ in range(2):
        model(torch.randn(32, 64, device="axon")).sum().backward()
        optimizer.step()
        optimizer.zero_grad()
    path = tmp_path / "snapshot.pickle"
    torch.axon.memory._dump_snapshot(str(path))
    with open(path, "rb") as file:
        snapshot = pickle.load(file)
    assert len(snapshot["device_traces"]) == torch.axon.device_count()
    assert "<html>" in _memory_viz.trace_plot(snapshot).lower() or "html" in _memory_viz.trace_plot(snapshot)
    assert _memory_viz.segment_plot(snapshot)
    assert "total_allocated" in _memory_viz.segsum(snapshot)
    # (memory() and segments() draw flame graphs with a script they download, which this machine cannot.)
