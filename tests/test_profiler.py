"""torch.profiler on axon: kernels, copies and sets on per-stream device rows, with device time, each linked
to the operator that launched it, and device memory events for profile_memory=True (what CUDA shows).

The rows come from the driver's activity records (runtime/include/axon/activity.h) through a Kineto
activity profiler registered for PrivateUse1 (csrc/profiler/device_activity_profiler.cpp).
"""

from __future__ import annotations

import json

import pytest
import torch
from conftest import closed_gate, requires_not_blocking
from test_pjrt_driver import run_on_pjrt
from torch.autograd import DeviceType
from torch.profiler import ProfilerActivity, profile

BOTH = [ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]


def _device_events(prof):
    return [e for e in prof.events() if e.device_type == DeviceType.PrivateUse1]


def _cpu_event(prof, name):
    return next(e for e in prof.events() if e.device_type == DeviceType.CPU and e.name == name)


def test_kernels_appear_with_device_time_linked_to_the_operator_that_launched_them():
    x = torch.randn(128, 128, device="axon")
    (x @ x).relu()  # once first: the profiled calls then know their output layouts
    torch.axon.synchronize()
    with profile(activities=BOTH) as prof:
        y = (x @ x).relu()
        torch.axon.synchronize()
    kernels = {e.name: e for e in _device_events(prof)}
    assert {"host_kernel<aten::mm>", "host_kernel<aten::relu>"} <= set(kernels)
    mm_kernel = kernels["host_kernel<aten::mm>"]
    assert mm_kernel.device_index == 0 and mm_kernel.device_resource_id == 0  # the default stream
    assert mm_kernel.time_range.elapsed_us() > 0
    mm = _cpu_event(prof, "aten::mm")
    assert [k.name for k in mm.kernels] == ["host_kernel<aten::mm>"]
    averages = {a.key: a for a in prof.key_averages()}
    assert averages["aten::mm"].device_time_total == pytest.approx(mm_kernel.time_range.elapsed_us(), rel=1e-3)
    assert averages["aten::mm"].count == 1
    assert averages["aten::relu"].device_time_total > 0
    assert y.shape == (128, 128)


@requires_not_blocking
def test_work_on_one_stream_is_timed_in_stream_order_inside_the_profile():
    x = torch.randn(64, 64, device="axon")
    for _ in range(2):
        x.sin()
    with profile(activities=BOTH) as prof:
        with closed_gate():  # the kernels queue behind the gate: their times are when they ran, not when queued
            a = x.sin()
            b = a.sin()
            c = b.sin()
        torch.axon.synchronize()
    sines = sorted((e for e in _device_events(prof) if e.name == "host_kernel<aten::sin>"),
                   key=lambda e: e.time_range.start)
    assert len(sines) == 3
    for earlier, later in zip(sines, sines[1:]):
        assert earlier.time_range.end <= later.time_range.start
    queued = [e for e in prof.events() if e.device_type == DeviceType.CPU and e.name == "aten::sin"]
    assert max(e.time_range.end for e in queued) <= sines[0].time_range.start, "ran after the gate opened"
    assert c.shape == x.shape


def test_each_stream_gets_its_own_row_in_the_chrome_trace(tmp_path):
    x = torch.randn(64, 64, device="axon")
    side = torch.axon.Stream()
    (x + 1), (x * 2)
    with profile(activities=BOTH) as prof:
        x + 1
        with torch.axon.stream(side):
            x * 2
        torch.axon.synchronize()
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    trace = json.loads(path.read_text())["traceEvents"]
    kernels = {e["name"]: e for e in trace if e.get("cat") == "kernel"}
    add, mul = kernels["host_kernel<aten::add.Tensor>"], kernels["host_kernel<aten::mul.Tensor>"]
    assert add["pid"] == mul["pid"] == 0
    assert add["tid"] == 0 and mul["tid"] > 0
    assert add["args"]["stream"] == "0" and mul["args"]["stream"] == str(mul["tid"])
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in trace
             if e.get("ph") == "M" and e.get("name") == "thread_name" and e["pid"] == 0}
    assert names[(0, 0)] == "default stream"
    assert names[(0, mul["tid"])] == f"stream {mul['tid']}"
    process = [e for e in trace if e.get("ph") == "M" and e.get("name") == "process_name" and e["pid"] == 0]
    assert process and process[0]["args"]["name"] == "axon 0"
    # Kineto links each kernel to its launching operator with the operator's correlation id.
    add_op = next(e for e in trace if e.get("cat") == "cpu_op" and e["name"] == "aten::add")
    assert add["args"]["correlation"] == str(add_op["args"]["External id"])


def test_copies_show_as_memcpy_with_their_bytes(tmp_path):
    host = torch.randn(1000)
    with profile(activities=BOTH) as prof:
        device = host.to("axon")
        back = device.cpu()
    copies = [e for e in _device_events(prof) if e.name.startswith("Memcpy")]
    assert {e.name for e in copies} == {"Memcpy HtoD", "Memcpy DtoH"}
    assert torch.equal(back, host)
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    trace = json.loads(path.read_text())["traceEvents"]
    memcpy = {e["name"]: e for e in trace if e.get("cat") == "gpu_memcpy"}
    assert memcpy["Memcpy HtoD"]["args"]["bytes"] == memcpy["Memcpy DtoH"]["args"]["bytes"] == "4000"
    launched = [(e.name, k.name) for e in prof.events() if e.device_type == DeviceType.CPU for k in e.kernels]
    assert launched == [("aten::_copy_from", "Memcpy HtoD"), ("aten::_copy_from", "Memcpy DtoH")]


def test_profile_memory_reports_device_allocations():
    torch.axon.synchronize()
    torch.axon.empty_cache()  # fresh blocks of exactly the sizes asked for, not larger cached ones
    with profile(activities=BOTH, profile_memory=True) as prof:
        kept = torch.empty(1 << 20, dtype=torch.uint8, device="axon")
        freed = torch.empty(1 << 19, dtype=torch.uint8, device="axon")
        del freed
    averages = {a.key: a for a in prof.key_averages()}
    assert averages["aten::empty"].device_memory_usage == (1 << 20) + (1 << 19)
    memory = [a for a in prof.key_averages() if a.key == "[memory]"]
    assert memory and memory[0].device_memory_usage == -(1 << 19), "the free is reported as a negative amount"
    assert kept.numel() == 1 << 20


@requires_not_blocking
def test_work_left_running_by_one_profile_does_not_appear_in_the_next():
    import torch_axon

    assert torch.axon.device_count() >= 2
    other = torch.randn(64, device="axon:1")
    other.exp()
    torch.axon.synchronize(1)
    stream = torch.axon.current_stream(1)
    gate = torch_axon._C._testing.close_gate(1, stream.stream_id)
    try:
        with profile(activities=BOTH) as first:  # leaving it synchronizes axon:0 only
            other.exp()
    finally:
        torch_axon._C._testing.open_gate(gate)
    torch.axon.synchronize(1)
    x = torch.randn(64, device="axon")
    x.cos()
    with profile(activities=BOTH) as second:
        x.cos()
        torch.axon.synchronize()
    assert [e.name for e in _device_events(first)] == []
    assert [e.name for e in _device_events(second)] == ["host_kernel<aten::cos>"]


def test_a_cpu_only_profile_leaves_the_device_alone():
    x = torch.randn(16, device="axon")
    x.cos()
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        x.cos()
        torch.axon.synchronize()
    assert _device_events(prof) == []
    assert not torch_axon_recording()
    with profile(activities=BOTH) as prof:  # and a device profile right after still works
        x.cos()
        torch.axon.synchronize()
    assert [e.name for e in _device_events(prof)] == ["host_kernel<aten::cos>"]
    assert not torch_axon_recording()


def torch_axon_recording() -> bool:
    import torch_axon

    return torch_axon._C._testing.device_activity_recording()


def test_first_call_layout_inference_is_one_range_not_the_stand_in_operators():
    x = torch.randn(37, 41, device="axon")  # a shape no other test uses: the call infers its layout
    with profile(activities=BOTH) as prof:
        x.tanh()
        torch.axon.synchronize()
    names = [e.name for e in prof.events() if e.device_type == DeviceType.CPU]
    assert names.count("aten::tanh") == 1
    assert "axon::infer_output_layout" in names


def test_compiled_graphs_show_their_kernels():
    model = torch.nn.Sequential(torch.nn.Linear(32, 32), torch.nn.ReLU()).to("axon")
    x = torch.randn(8, 32, device="axon")
    for backend, kernel_prefix in [("inductor", "host_kernel<cpp_fused_"), ("axon", "fused_")]:
        torch._dynamo.reset()
        compiled = torch.compile(model, backend=backend)
        compiled(x)
        torch.axon.synchronize()
        with profile(activities=BOTH) as prof:
            compiled(x)
            torch.axon.synchronize()
        names = [e.name for e in _device_events(prof)]
        assert any(name.startswith(kernel_prefix) for name in names), (backend, names)
        launched = [k.name for e in prof.events() if e.device_type == DeviceType.CPU for k in e.kernels]
        assert any(name.startswith(kernel_prefix) for name in launched), (backend, launched)
    torch._dynamo.reset()


def test_the_pjrt_driver_records_its_transfers_and_programs():
    out = run_on_pjrt("""
        import torch, torch_axon
        from torch.profiler import profile, ProfilerActivity
        torch_axon._C._set_eager_compile_after(1)
        x = torch.randn(32, 32)
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]) as prof:
            y = x.to("axon")
            z = (y @ y).cpu()
        names = sorted({e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.PrivateUse1})
        print("names", names)
        print("mm time", [a.device_time_total > 0 for a in prof.key_averages() if a.key == "aten::mm"])
    """)
    # On the PJRT driver eager ops default to compiled kernels (docs/eager_kernels.md).
    assert "Memcpy HtoD" in out and "Memcpy DtoH" in out and "compiled_kernel<aten::mm>" in out
    assert "mm time [True]" in out
