"""Shared helpers for the Python tests."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import textwrap

import pytest
import torch

import torch_axon


@contextlib.contextmanager
def closed_gate(stream: torch.Stream | None = None):
    """Holds `stream` (default: the current axon stream) until the block exits.

    Work queued on the stream inside the block provably cannot run before the
    gate opens, which makes asynchrony observable without timing races.
    """
    stream = stream if stream is not None else torch.axon.current_stream()
    gate = torch_axon._C._testing_close_gate(stream.device_index, stream.stream_id)
    try:
        yield stream
    finally:
        torch_axon._C._testing_open_gate(gate)


def run_python(code: str, env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    """Runs `code` in a fresh interpreter (for settings read once per process)."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=full_env, capture_output=True,
                          text=True, timeout=timeout)


@pytest.fixture(autouse=True)
def _drain_devices():
    """Leaves every device idle and on its default stream after each test."""
    yield
    for index in range(torch.axon.device_count()):
        torch.axon.synchronize(index)
        torch.axon.set_stream(torch.axon.default_stream(index))
    torch.axon.set_device(0)


requires_not_blocking = pytest.mark.skipif(
    torch_axon.is_launch_blocking(), reason="needs asynchronous launches (AXON_LAUNCH_BLOCKING is set)"
)
