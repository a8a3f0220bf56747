"""torch.compile(backend="axon"): registration, stages, partitioning, zero-copy execution, caching,
dynamic shapes, modes and options, the report, and compiled training matching eager."""

from __future__ import annotations

import copy
import os
import re
import subprocess
import sys
import threading
import warnings

import pytest
import torch
from conftest import Classifier, closed_gate, run_python
from torch import nn

import torch_axon

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "examples"))
from tiny_gpt import TinyGPT

import torch_axon.compile as axon_compile


@pytest.fixture(autouse=True)
def _fresh_compile_state(tmp_path, monkeypatch):
    monkeypatch.setenv("AXON_COMPILE_CACHE_DIR", str(tmp_path / "xla-cache"))
    torch._dynamo.reset()
    axon_compile.reset_report()
    yield
    torch._dynamo.reset()


def _compile(function, **kwargs):
    return torch.compile(function, backend="axon", **kwargs)


# ---- registration ---------------------------------------------------------------------------
def test_backend_available_right_after_import_torch():
    result = run_python("""
        import torch
        f = torch.compile(lambda x: (x * 2).sin(), backend="axon")
        x = torch.arange(4.0, device="axon")
        assert torch.equal(f(x).cpu(), (torch.arange(4.0) * 2).sin())
        assert "axon" in torch._dynamo.list_backends()
        print("ok")
    """)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "ok" in result.stdout


def test_device_interface_registered_with_stream_and_event():
    from torch._dynamo.device_interface import get_interface_for_device

    interface = get_interface_for_device("axon")
    assert issubclass(interface.Stream, torch.Stream) and issubclass(interface.Event, torch.Event)
    assert interface.device_count() == torch.axon.device_count()


def test_device_generic_streams_and_events_trace_into_one_graph():
    def function(x):
        stream = torch.accelerator.current_stream()
        event = torch.Event(device="axon")
        event.record(stream)
        y = x * 3
        event.wait(stream)
        return y + 1

    x = torch.randn(16, device="axon")
    assert torch.equal(_compile(function, fullgraph=True)(x), function(x))


def test_torch_axon_stream_helpers_run_correctly_under_compile():
    # Dynamo special-cases only torch.cuda / torch.xpu stream helpers: torch.axon.* ones graph-break
    # (counted in the report) and still run with eager stream semantics.
    def function(x):
        side = torch.axon.Stream()
        side.wait_stream(torch.axon.current_stream())
        with torch.axon.stream(side):
            y = x * 2
        torch.axon.current_stream().wait_stream(side)
        return y + 1

    x = torch.randn(16, device="axon")
    assert torch.equal(_compile(function)(x), function(x))


# ---- execution semantics ---------------------------------------------------------------------
def test_matches_eager_and_lowers_everything():
    def function(x, w):
        return torch.nn.functional.gelu(x @ w + 1).sum(dim=1).softmax(0)

    x, w = torch.randn(8, 16, device="axon"), torch.randn(16, 4, device="axon")
    torch.testing.assert_close(_compile(function, options={"strict": True})(x, w), function(x, w))
    report = axon_compile.report()
    assert report.lowered_nodes > 0 and not report.eager_ops


def test_int64_and_float64_cross_the_driver_unchanged():
    function = _compile(lambda i, d: (i * 3, d.sqrt()))
    ints, doubles = torch.arange(8, device="axon"), torch.rand(8, dtype=torch.float64, device="axon")
    tripled, roots = function(ints, doubles)
    assert tripled.dtype == torch.int64 and roots.dtype == torch.float64
    torch.testing.assert_close(tripled, ints * 3)
    torch.testing.assert_close(roots, doubles.sqrt())


def test_compiled_call_sees_prior_queued_work():
    stream = torch.axon.current_stream()
    function = _compile(lambda x: x + 1)
    x = torch.ones(1024, device="axon")
    function(x)  # compile outside the gate
    gate = torch_axon._C._testing.close_gate(stream.device_index, stream.stream_id)
    doubled = x * 2  # queued behind the closed gate
    threading.Timer(0.2, torch_axon._C._testing.open_gate, [gate]).start()
    assert torch.equal(function(doubled).cpu(), torch.full((1024,), 3.0))


def test_a_compiled_call_returns_before_its_launch_has_run():
    # Exact arithmetic, so the check after the gate is about order alone: a result read before the
    # launch ran would differ by O(1). (With sin, XLA's result has differed from the CPU's by up to
    # 1.5e-4 in rare loaded runs, which is a compiled-vs-eager accuracy matter, not this test's.)
    function = _compile(lambda x: (x * 2) + x * 0.5)
    x = torch.randn(4096, device="axon")
    function(x)  # compile outside the gate
    with closed_gate() as stream:
        out = function(x)  # would hang here if the call waited for the device
        assert out.device.type == "axon"
        assert not stream.query()  # queued behind the gate, not run
    torch.testing.assert_close(out.cpu(), (x.cpu() * 2) + x.cpu() * 0.5, rtol=0, atol=0)


def test_a_compiled_call_runs_on_the_current_stream_in_order_with_eager_work():
    function = _compile(lambda x: x * 3)
    side = torch.Stream(device="axon")
    x = torch.ones(1 << 16, device="axon")
    function(x)
    with torch.axon.stream(side):
        with closed_gate(side):
            y = x + 1  # eager, behind the gate on `side`
            out = function(y)  # compiled, after it on the same stream
            assert not side.query()
        side.synchronize()
    assert torch.equal(out.cpu(), torch.full((1 << 16,), 6.0))


def test_a_damaged_disk_cache_image_is_recompiled(tmp_path):
    env = {"AXON_COMPILE_CACHE_DIR": str(tmp_path / "cache")}
    compiled, _ = _cache_counts(run_python(_CACHE_SCRIPT, env))
    assert compiled >= 1
    images = [p for p in (tmp_path / "cache").iterdir() if p.suffix == ".image"]
    assert images
    for image in images:
        image.write_bytes(b"xla-cpu-executable\nnot a compiled program")
    compiled, loaded = _cache_counts(run_python(_CACHE_SCRIPT, env))
    assert compiled >= 1 and loaded == 0
    compiled, loaded = _cache_counts(run_python(_CACHE_SCRIPT, env))  # overwritten with a good image
    assert compiled == 0 and loaded >= 1


def test_outputs_live_in_axon_memory_without_copies():
    function = _compile(lambda x: x * 2)
    x = torch.randn(1 << 18, device="axon")
    function(x)
    torch.axon.synchronize()
    before = torch.axon.memory_allocated()
    out = function(x)
    assert out.device.type == "axon"
    assert torch.axon.memory_allocated() - before >= out.numel() * out.element_size()
    del out
    assert torch.axon.memory_allocated() == before
    from torch_axon.compile import bindings

    assert bindings.copied_inputs == 0  # dense inputs were bound in place


def test_strided_inputs_are_bound_in_place_without_copies():
    from torch_axon.compile import bindings

    function = _compile(lambda a, b, c: a @ b + c.sum(1))
    a = torch.randn(8, 8, device="axon")
    b = torch.randn(6, 8, device="axon").t()
    c = torch.randn(5, 6, 8, device="axon").permute(2, 0, 1)  # a permutation of a dense tensor
    q, k, v = torch.randn(2, 5, 24, device="axon").split(8, -1)  # attention's column slices, transposed
    before = bindings.copied_inputs
    for first in (a, a.t(), torch.randn(8, 12, device="axon")[:, 2:10]):  # each layout its own specialization
        torch.testing.assert_close(function(first, b, c), first @ b + c.sum(1))
    heads = _compile(lambda q, k, v: (q @ k.transpose(-1, -2)).softmax(-1) @ v)
    split = [t.view(2, 5, 2, 4).transpose(1, 2) for t in (q, k, v)]
    torch.testing.assert_close(heads(*split), (split[0] @ split[1].transpose(-1, -2)).softmax(-1) @ split[2])
    assert bindings.copied_inputs == before
    for strided in (torch.randn(8, 16, device="axon")[:, ::2], torch.randn(8, device="axon").expand(8, 8)):
        torch.testing.assert_close(function(strided, b, c), strided @ b + c.sum(1))  # no region holds them
    assert bindings.copied_inputs == before + 2


def test_a_loop_over_slices_of_one_tensor_compiles_once():
    # Where a slice begins in its storage is a run-time argument, not part of the specialization key.
    from torch_axon.compile import bindings

    cell = _compile(lambda x_t, h: torch.tanh(x_t @ h.t() + h))
    x = torch.randn(4, 30, 4, device="axon")
    h = expected = torch.eye(4, device="axon")
    before = bindings.copied_inputs
    for t in range(8):
        h, expected = cell(x[:, t], h), torch.tanh(x[:, t] @ expected.t() + expected)
    torch.testing.assert_close(h, expected)
    assert axon_compile.report().graphs[0].executables == 1 and bindings.copied_inputs == before


def test_training_binds_saved_transposes_and_returned_views_in_place():
    # The forward graph returns the halves of one product (views, saved for the backward) and uses them: they
    # used to cut it into three partitions, and the backward copied them and the saved weight transpose.
    from torch_axon.compile import bindings

    def step(x, w):
        a, b = torch.nn.functional.linear(x, w).split(4, dim=-1)
        loss = (a * b.sigmoid()).sum()
        loss.backward()
        return loss

    x = torch.randn(16, 8, device="axon")
    w, w_compiled = (torch.randn(8, 8, device="axon", requires_grad=True) for _ in range(2))
    with torch.no_grad():
        w_compiled.copy_(w)
    before = bindings.copied_inputs
    compiled = _compile(step, options={"strict": True})
    for _ in range(2):
        torch.testing.assert_close(compiled(x, w_compiled), step(x, w))
    torch.testing.assert_close(w_compiled.grad, w.grad)
    assert bindings.copied_inputs == before
    forward = next(g for g in axon_compile.report().graphs if g.name.endswith("forward"))
    assert forward.partitions == 1


def test_offset_and_strided_inputs_are_correct():
    function = _compile(lambda x: x * 2 + 1)
    base = torch.arange(256.0, device="axon")
    for offset in (1, 4, 8, 16, 64):  # 64 floats = 256 bytes: the only one XLA may view in place
        view = base[offset:offset + 32]
        torch.testing.assert_close(function(view), view * 2 + 1)
    strided = base.view(16, 16).t()
    torch.testing.assert_close(_compile(lambda x: x.exp())(strided), strided.exp())


def test_input_mutation_and_aliasing_match_eager():
    def function(x, y):
        x.add_(1)
        return y.t(), x * y

    x, y = torch.randn(4, 4, device="axon"), torch.randn(4, 4, device="axon")
    x_eager = x.clone()
    view, product = _compile(function)(x, y)
    view_eager, product_eager = function(x_eager, y)
    torch.testing.assert_close(x, x_eager)
    torch.testing.assert_close(product, product_eager)
    assert view.untyped_storage().data_ptr() == y.untyped_storage().data_ptr()  # a view, as in eager
    torch.testing.assert_close(view, view_eager)


def test_unlowered_op_runs_eagerly_with_one_warning_and_strict_refuses():
    def function(x):
        return torch.nn.functional.dropout(x, 0.5, training=True) + 1

    x = torch.ones(64, device="axon")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.manual_seed(0)
        compiled = _compile(function)(x)
    assert any("native_dropout" in str(w.message) or "bernoulli" in str(w.message) for w in caught)
    torch.manual_seed(0)
    assert torch.equal(compiled, function(x))  # random ops draw from axon's generator, as eager does
    torch._dynamo.reset()
    with pytest.raises(Exception, match="strict mode"):
        _compile(function, options={"strict": True})(x)


# ---- modes and options ------------------------------------------------------------------------
@pytest.mark.parametrize("mode", [None, "default", "reduce-overhead", "max-autotune"])
def test_modes_accepted(mode):
    x = torch.randn(8, device="axon")
    torch.testing.assert_close(_compile(lambda t: t.exp() * 2, mode=mode, fullgraph=True)(x), x.exp() * 2)


def test_unknown_mode_and_option_are_errors():
    x = torch.randn(8, device="axon")
    with pytest.raises(Exception, match="unknown option"):
        _compile(lambda t: t + 1, options={"no_such_option": 1})(x)
    torch._dynamo.reset()
    with pytest.raises(Exception, match="max_specializations"):
        _compile(lambda t: t + 1, options={"max_specializations": 0})(x)


# ---- dynamic shapes ---------------------------------------------------------------------------
def test_dynamic_shapes_specialize_per_concrete_shape():
    function = _compile(lambda x: (x.softmax(-1) * x.shape[0]).sum(0), dynamic=True)
    for rows in (3, 5, 7, 5, 3):
        x = torch.randn(rows, 6, device="axon")
        torch.testing.assert_close(function(x), (x.softmax(-1) * rows).sum(0))
    report = axon_compile.report()
    assert len(report.graphs) == 1  # one Dynamo graph, not a recompile per shape
    assert report.graphs[0].executables == 3
    assert report.cache["memory"] == 0


def test_mark_dynamic_and_bounded_specializations():
    function = _compile(lambda x: x.cumsum(0) * 2, options={"max_specializations": 2})
    for rows in (2, 3, 4, 2):
        x = torch.randn(rows, 3, device="axon")
        torch._dynamo.mark_dynamic(x, 0)
        torch.testing.assert_close(function(x), x.cumsum(0) * 2)
    assert axon_compile.report().graphs[0].executables == 4  # size 2 was evicted, then compiled again


# ---- caching and stage dumps ------------------------------------------------------------------
_CACHE_SCRIPT = """
    import torch, torch_axon.compile as c
    f = torch.compile(lambda x, w: torch.relu(x @ w).sum(1), backend="axon")
    x, w = torch.randn(4, 8, device="axon"), torch.randn(8, 8, device="axon")
    torch.testing.assert_close(f(x, w), torch.relu(x @ w).sum(1))
    r = c.report()
    print("CACHE", r.cache["compiled"], r.cache["disk"])
"""


def _cache_counts(result):
    assert result.returncode == 0, result.stderr[-3000:]
    line = next(line for line in result.stdout.splitlines() if line.startswith("CACHE"))
    return tuple(int(v) for v in line.split()[1:])


def test_warm_disk_cache_in_a_second_process_compiles_nothing(tmp_path):
    env = {"AXON_COMPILE_CACHE_DIR": str(tmp_path / "cache")}
    compiled, loaded = _cache_counts(run_python(_CACHE_SCRIPT, env))
    assert compiled >= 1 and loaded == 0
    compiled, loaded = _cache_counts(run_python(_CACHE_SCRIPT, env))
    assert compiled == 0 and loaded >= 1


def test_concurrent_processes_share_the_cache_safely(tmp_path):
    import subprocess
    import textwrap

    env = dict(os.environ, AXON_COMPILE_CACHE_DIR=str(tmp_path / "cache"))
    processes = [subprocess.Popen([sys.executable, "-c", textwrap.dedent(_CACHE_SCRIPT)], env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    counts = []
    for process in processes:
        stdout, stderr = process.communicate(timeout=180)
        assert process.returncode == 0, stderr[-3000:]
        counts.append(next(tuple(map(int, line.split()[1:])) for line in stdout.splitlines()
                           if line.startswith("CACHE")))
    assert sum(c for c, _ in counts) == 1  # the lock made the second process load, not recompile
    assert not [f for f in os.listdir(tmp_path / "cache") if f.endswith(".tmp")]


def test_stage_dumps(tmp_path):
    dump = tmp_path / "dump"
    x = torch.randn(4, 4, device="axon", requires_grad=True)
    out = _compile(lambda t: (t.tanh() * 2).sum(), options={"dump_dir": str(dump)})(x)
    out.backward()
    files = {p.relative_to(dump).as_posix() for p in dump.rglob("*") if p.is_file()}
    dynamo = [f for f in files if f.endswith("/00_dynamo.py")]
    assert len(dynamo) == 1
    name = dynamo[0].split("/")[0]
    for graph in (f"{name}_forward", f"{name}_backward"):
        assert f"{graph}/01_aten.py" in files and f"{graph}/02_partitioned.py" in files
        assert any(f.startswith(f"{graph}/03_") and f.endswith(".stablehlo.mlir") for f in files)
        assert any(f.startswith(f"{graph}/04_") and f.endswith(".xla-cpu-executable") for f in files)
    assert any("stablehlo.tanh" in path.read_text() for path in dump.rglob("*.stablehlo.mlir"))


def test_report_prints_summary():
    _compile(lambda x: x.sin() + 1)(torch.randn(4, device="axon"))
    summary = str(axon_compile.report())
    assert "1 graph(s)" in summary and "lowered to StableHLO" in summary and "compiled" in summary


# ---- training matches eager -------------------------------------------------------------------
def _train(model, compiled_model, batches, steps=4):
    optimizers = [torch.optim.AdamW(m.parameters(), lr=1e-3) for m in (model, compiled_model)]
    losses = ([], [])
    for step in range(steps):
        inputs, targets = batches(step)
        for index, (module, optimizer) in enumerate(zip((model, compiled_model), optimizers)):
            runner = module if index == 0 else torch.compile(module, backend="axon")
            loss = runner(inputs, targets)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            losses[index].append(loss.item())
    return losses


@pytest.mark.parametrize("kind", ["mlp", "cnn", "gpt"])
def test_training_matches_eager(kind):
    torch.manual_seed(0)
    generator = torch.Generator().manual_seed(1)
    if kind == "mlp":
        model = Classifier(nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4)))
        def batches(step):
            return (torch.randn(8, 16, generator=generator).to("axon"),
                    torch.randint(0, 4, (8,), generator=generator).to("axon"))
    elif kind == "cnn":
        model = Classifier(nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                                          nn.MaxPool2d(2), nn.Flatten(), nn.Linear(8 * 4 * 4, 4)))
        def batches(step):
            return (torch.randn(4, 3, 8, 8, generator=generator).to("axon"),
                    torch.randint(0, 4, (4,), generator=generator).to("axon"))
    else:
        gpt = TinyGPT(32, 16, width=32, heads=2, layers=1)

        class _GPTLoss(nn.Module):
            def __init__(self):
                super().__init__()
                self.gpt = gpt

            def forward(self, x, y):
                return self.gpt(x, y)[1]

        model = _GPTLoss()
        def batches(step):
            return tuple(torch.randint(0, 32, (4, 16), generator=generator).to("axon") for _ in range(2))
    model = model.to("axon")
    eager_losses, compiled_losses = _train(model, copy.deepcopy(model), batches)
    torch.testing.assert_close(compiled_losses, eager_losses, rtol=1e-4, atol=1e-4)
    assert axon_compile.report().lowered_nodes > 0


def test_gpt_example_second_run_with_warm_cache_compiles_nothing(tmp_path):
    import subprocess

    example = os.path.join(os.path.dirname(__file__), "..", "examples", "train.py")
    env = dict(os.environ, AXON_COMPILE_CACHE_DIR=str(tmp_path / "cache"))
    command = [sys.executable, example, "--compile", "--steps", "3", "--batch", "4", "--context", "16",
               "--width", "32", "--layers", "1"]
    outputs = []
    for _ in range(2):
        result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300, check=False)
        assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
        outputs.append(result.stdout)
    assert "OK: axon matches the CPU run" in outputs[1]
    assert "0 compiled" not in outputs[0]
    assert "XLA executables: 0 compiled" in outputs[1]


def test_compiled_graphs_need_no_host_view_of_device_memory():
    """On a driver whose memory the host cannot address (the emulated one's private-memory mode, where
    only kernel bodies may view device memory), compiled graphs still run: they move data through
    executables and their bindings. These tests of this file run again in that mode."""
    selected = ("matches_eager_and_lowers_everything or returns_before_its_launch or in_order_with_eager or "
                "outputs_live_in_axon_memory or offset_and_strided or input_mutation_and_aliasing or "
                "dynamic_shapes_specialize or training_matches_eager")
    env = dict(os.environ, AXON_EMULATED_PRIVATE_MEMORY="1")
    result = subprocess.run([sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", __file__, "-k", selected],
                            env=env, capture_output=True, text=True, timeout=600, check=False)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    passed = re.search(r"(\d+) passed", result.stdout)
    assert passed and int(passed.group(1)) >= 10 and "failed" not in result.stdout, result.stdout[-2000:]
    refusal = run_python("""
        import torch, torch_axon
        try:
            torch_axon._C._host_alias(torch.ones(2, device="axon"))
        except NotImplementedError as error:
            print("REFUSED", error)
    """, {"AXON_EMULATED_PRIVATE_MEMORY": "1"})
    assert "REFUSED" in refusal.stdout and "not host-addressable" in refusal.stdout, refusal.stderr[-2000:]
