"""Shared helpers for the Python tests."""

from __future__ import annotations

import contextlib
import gc
import os
import subprocess
import sys
import textwrap

import pytest
import torch

import torch_axon


def direct_launches() -> int:
    """Calls the direct kernels took themselves so far (csrc/host_execution/direct_kernels.h): a test reads it
    before and after a call to tell whether the direct path or the generic kernel served it."""
    return torch_axon._C._testing.direct_kernel_launches()


def draw(*shape, seed):
    """Unit-normal float values on the CPU, from their own seeded generator."""
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def assert_same_bits(expected_tensors, got_tensors):
    """Each got tensor (any device) has its expected CPU tensor's dtype, shape and bytes; a NaN matches any
    NaN, since a NaN's sign and payload follow operand order, which neither side fixes."""
    assert len(expected_tensors) == len(got_tensors)
    for expected, got in zip(expected_tensors, got_tensors):
        got = got.cpu()
        assert got.dtype == expected.dtype and got.shape == expected.shape
        bytes_of = lambda t: t.reshape(-1).view(torch.uint8).view(t.numel(), t.element_size())  # noqa: E731
        same = (bytes_of(got) == bytes_of(expected)).all(1)
        assert (same | (got.reshape(-1).isnan() & expected.reshape(-1).isnan())).all()


@contextlib.contextmanager
def closed_gate(stream: torch.Stream | None = None):
    """Holds `stream` (default: the current axon stream) until the block exits.

    Work queued on the stream inside the block provably cannot run before the
    gate opens, which makes asynchrony observable without timing races.
    """
    stream = stream if stream is not None else torch.axon.current_stream()
    gate = torch_axon._C._testing.close_gate(stream.device_index, stream.stream_id)
    try:
        yield stream
    finally:
        torch_axon._C._testing.open_gate(gate)


@pytest.fixture
def fresh_dynamo():
    """Dynamo's caches empty before and after the test: compiled code of one test never serves another's."""
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


@pytest.fixture
def fresh_compile_state(tmp_path, monkeypatch):
    """A compile cache of the test's own, a fresh Dynamo and compile report, and compile warnings silenced."""
    import warnings

    import torch_axon.compile as axon_compile

    monkeypatch.setenv("AXON_COMPILE_CACHE_DIR", str(tmp_path / "xla-cache"))
    torch._dynamo.reset()
    axon_compile.reset_report()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield
    torch._dynamo.reset()


def run_python(code: str, env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    """Runs `code` in a fresh interpreter (for settings read once per process)."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=full_env, capture_output=True,
                          text=True, timeout=timeout)


def _python_visible_axon_bytes(device: int) -> int:
    """Bytes of the distinct axon storages on `device` that Python objects reach."""
    seen = {}
    for obj in gc.get_objects():
        kind = type(obj)  # not isinstance: it would read deprecated objects' __class__
        if issubclass(kind, torch.Tensor) and not issubclass(kind, torch._subclasses.FakeTensor):
            try:
                if obj.device.type == "axon" and obj.device.index == device and obj.layout == torch.strided:
                    storage = obj.untyped_storage()
                    seen[storage.data_ptr() or id(storage)] = storage.nbytes()
            except (RuntimeError, NotImplementedError):
                continue
    return sum(seen.values())


def check_memory_accounting() -> None:
    """The allocator's statistics equal its live blocks, and cover every storage Python holds."""
    gc.collect()
    for index in range(torch.axon.device_count()):
        live = torch_axon._C._testing.live_blocks(index)
        assert live["counted_blocks"] == live["blocks"], (index, live)
        assert live["counted_bytes"] == live["bytes"], (index, live)
        assert live["counted_requested_bytes"] == live["requested_bytes"], (index, live)
        requested = live["requested_bytes"]
        visible = _python_visible_axon_bytes(index)
        assert visible <= requested, (f"axon:{index}: Python holds {visible} bytes of storages, "
                                      f"allocator counts {requested}")


def _freeze_survivors() -> None:
    """Collects, then moves every surviving object out of the collector's reach (gc.freeze), so that the
    next test's collection and scan of gc.get_objects() see only what that test made. Without it each
    test's teardown traversed everything made before it: half a million objects once torch and the OpInfo
    database are imported, about half a second per test on two cores (test_cpp_meta_transcriptions.py's 90
    tests: 60 s traversing everything, 16 s with the objects of collection frozen).
    Frozen objects are still freed when their last reference goes; only cycles among them are never
    collected. check_memory_accounting therefore counts, on the Python side, the axon tensors made during
    the test just run (it checks visible <= counted, so a smaller visible set cannot fail it)."""
    gc.collect()
    gc.freeze()


def pytest_collection_finish(session):
    _freeze_survivors()  # what test modules imported and made at collection


@pytest.fixture(autouse=True)
def _drain_devices():
    """Leaves every device idle and on its default stream after each test,
    with exact memory statistics."""
    yield
    for index in range(torch.axon.device_count()):
        torch.axon.synchronize(index)
        torch.axon.set_stream(torch.axon.default_stream(index))
    torch.axon.set_device(0)
    if not torch_axon._C._is_shut_down():
        check_memory_accounting()  # which collects first, so the survivors are what remains
        gc.freeze()


requires_not_blocking = pytest.mark.skipif(
    torch_axon.is_launch_blocking(), reason="needs asynchronous launches (AXON_LAUNCH_BLOCKING is set)"
)


class Classifier(torch.nn.Module):
    """`body` followed by a cross-entropy loss: a training step is `loss = model(x, y); loss.backward()`."""

    def __init__(self, body: torch.nn.Module):
        super().__init__()
        self.body = body

    def forward(self, x, y):
        return torch.nn.functional.cross_entropy(self.body(x), y)
