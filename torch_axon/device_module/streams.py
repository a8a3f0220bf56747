"""Streams and events: torch.Stream / torch.Event subclasses, as torch.cuda has.

Being subclasses of the generic types lets torch.accelerator, autograd and
torch.compile handle them; every method (query, synchronize, wait_event,
wait_stream, record_event, elapsed_time) comes from PyTorch and reaches the
axon driver through the device guard.
"""

from __future__ import annotations

from typing import Any

import torch

from .device import _device_index


class Stream(torch.Stream):
    """An in-order queue of work on an axon device.

    `priority`: 0 is normal, negative numbers are more urgent (down to the
    device's stream_priority_high); when several streams have work ready the
    most urgent runs first.
    """

    def __new__(cls, device: Any = None, priority: int = 0, **kwargs):
        if "stream_id" in kwargs:  # wrapping an existing stream
            return super().__new__(cls, **kwargs)
        index = _device_index(device)
        return super().__new__(cls, device=torch.device("axon", index), priority=priority)

    @property
    def priority(self) -> int:
        from .. import _C

        return _C._stream_priority(self.device_index, self.stream_id)

    def __repr__(self) -> str:
        return f"<torch.axon.Stream device=axon:{self.device_index} stream_id={self.stream_id}>"


class Event(torch.Event):
    """A marker in a stream: record it, wait on it, or time between two."""

    def __new__(cls, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False,
                device: Any = None):
        if interprocess:
            raise NotImplementedError("[axon] interprocess events are not supported")
        index = _device_index(device)
        return super().__new__(cls, device=torch.device("axon", index), enable_timing=enable_timing,
                               blocking=blocking)

    def elapsed_time(self, end_event: torch.Event) -> float:
        """Milliseconds from this event's completion to `end_event`'s (both timing-enabled)."""
        if not isinstance(end_event, torch.Event) or end_event.device.type != "axon":
            raise TypeError(f"[axon] elapsed_time expects an axon Event, got {type(end_event).__name__}")
        from .. import _C

        return _C._event_elapsed_time(self.event_id, end_event.event_id)

    def __repr__(self) -> str:
        return f"<torch.axon.Event device={self.device}>"


def _wrap(stream: torch.Stream) -> Stream:
    return Stream(stream_id=stream.stream_id, device_index=stream.device_index, device_type=stream.device_type)


def current_stream(device: Any = None) -> Stream:
    return _wrap(torch.accelerator.current_stream(torch.device("axon", _device_index(device))))


def default_stream(device: Any = None) -> Stream:
    current = torch.accelerator.current_stream(torch.device("axon", _device_index(device)))
    # Stream id 0 is always the device's default stream.
    return Stream(stream_id=0, device_index=current.device_index, device_type=current.device_type)


def set_stream(stream: torch.Stream) -> None:
    if stream is None:
        return
    torch.accelerator.set_stream(stream)


class StreamContext:
    """Makes `stream` current on its device (and that device current) while active."""

    def __init__(self, stream: torch.Stream | None):
        self.stream = stream
        self.previous_stream = None
        self.previous_device = None

    def __enter__(self):
        if self.stream is None:
            return self
        from .. import _C

        self.previous_device = _C._current_device()
        if self.stream.device_index != self.previous_device:
            _C._set_device(self.stream.device_index)
        self.previous_stream = torch.accelerator.current_stream(self.stream.device_index)
        torch.accelerator.set_stream(self.stream)
        return self

    def __exit__(self, *exc):
        if self.stream is None:
            return False
        from .. import _C

        torch.accelerator.set_stream(self.previous_stream)
        if self.previous_device != self.stream.device_index:
            _C._set_device(self.previous_device)
        return False


def stream(stream: torch.Stream | None) -> StreamContext:
    return StreamContext(stream)
