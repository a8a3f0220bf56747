"""The stream ordering model: is a program correct as a CUDA program would have to be?

Vector clocks: every stream (and the host, "host") has a clock mapping each
stream to the last of its ticks known to have happened before. A device
operation on stream `c` first learns everything the host knows (it is
enqueued after the host's past), then ticks `c`. Events copy the recording
stream's clock; `wait_event`/`wait_stream` merge clocks into the waiter;
host synchronization merges into the host's clock.

Each storage remembers its last write and the reads since, as (stream, tick)
stamps. An access on stream `c` is allowed only if `c`'s clock covers the last
write (and, for a write, every read since it); freeing a device storage (the
last name referring to it deleted) requires every use on a stream other than
the one it was allocated on to be covered by `record_stream`, by the
allocation stream's clock, or by the host's. Host storages are exempt: the
pinned allocator records the streams of asynchronous copies itself.

Effects (tuples, streams resolved to ids such as "s0", "default1", "host"):
  ("stream", stream, device)  ("event", event)
  ("new", name, stream | "host")  ("alias", name, of_name)
  ("read", name, stream)  ("write", name, stream)
  ("record", event, stream)  ("wait_event", stream, event)  ("wait_stream", waiter, waitee)
  ("host_sync", stream)  ("host_sync_event", event)  ("host_sync_device", device)
  ("record_stream", name, stream)  ("del", name)
"""

from __future__ import annotations

import dataclasses

HOST = "host"


class Hazard(Exception):
    """The program would race on a device.

    `observer` must first be ordered after each stream in `streams` (an
    unordered access), or, when `name` is set and `observer` is None, each
    stream in `streams` must be recorded on `name` before it is freed.
    """

    def __init__(self, message: str, observer: str | None, streams: list[str], name: str | None = None):
        super().__init__(message)
        self.observer, self.streams, self.name = observer, streams, name


@dataclasses.dataclass
class _Storage:
    allocated_on: str
    last_write: tuple[str, int]
    reads: list[tuple[str, int]] = dataclasses.field(default_factory=list)
    uses: dict[str, int] = dataclasses.field(default_factory=dict)  # stream -> latest tick
    recorded: set[str] = dataclasses.field(default_factory=set)
    names: set[str] = dataclasses.field(default_factory=set)


def default_stream(device: int) -> str:
    return f"default{device}"


class StreamOrder:
    def __init__(self):
        self.clocks: dict[str, dict[str, int]] = {HOST: {HOST: 0}}
        self.stream_devices: dict[str, int] = {default_stream(0): 0, default_stream(1): 1}
        self.events: dict[str, dict[str, int]] = {}
        self.storage_of: dict[str, int] = {}
        self.storages: dict[int, _Storage] = {}
        self._next_storage = 0

    # -- queries ------------------------------------------------------------------

    def clock(self, stream: str) -> dict[str, int]:
        return self.clocks.setdefault(stream, {stream: 0})

    def visible(self, observer: str, stamp: tuple[str, int]) -> bool:
        stream, tick = stamp
        if stream == observer or self.clock(observer).get(stream, 0) >= tick:
            return True
        return observer != HOST and self.clock(HOST).get(stream, 0) >= tick  # enqueued after the host saw it

    def blockers(self, name: str, stream: str, write: bool) -> list[tuple[str, int]]:
        """Stamps that `stream` must first be ordered after to read (or write) `name`."""
        storage = self.storages[self.storage_of[name]]
        stamps = [storage.last_write] + (storage.reads if write else [])
        return [stamp for stamp in stamps if not self.visible(stream, stamp)]

    def free_blockers(self, name: str) -> list[str]:
        """Streams whose use of `name`'s storage would be unprotected if `del name` freed it now."""
        storage = self.storages[self.storage_of[name]]
        if storage.names != {name} or storage.allocated_on == HOST:
            return []
        owner = self.clock(storage.allocated_on)
        host = self.clock(HOST)
        return [stream for stream, tick in storage.uses.items()
                if stream not in (storage.allocated_on, HOST) and stream not in storage.recorded
                and owner.get(stream, 0) < tick and host.get(stream, 0) < tick]

    def latest_stamp(self, stream: str) -> tuple[str, int]:
        return stream, self.clock(stream)[stream]

    # -- applying effects ---------------------------------------------------------------

    def apply(self, effects) -> None:
        """Applies one statement's effects, raising Hazard at the first unordered access."""
        for effect in effects:
            getattr(self, "_" + effect[0])(*effect[1:])

    def _enqueue(self, stream: str) -> None:
        """Work queued on a stream is ordered after everything the host has seen complete."""
        if stream != HOST:
            self._merge(stream, self.clock(HOST))

    def _tick(self, stream: str) -> tuple[str, int]:
        self._enqueue(stream)
        clock = self.clock(stream)
        clock[stream] += 1
        return stream, clock[stream]

    def _merge(self, into: str, clock: dict[str, int]) -> None:
        target = self.clock(into)
        for stream, tick in clock.items():
            if target.get(stream, 0) < tick:
                target[stream] = tick

    def _stream(self, stream: str, device: int) -> None:
        self.stream_devices[stream] = device
        self.clock(stream)

    def _event(self, event: str) -> None:
        self.events[event] = {}

    def _new(self, name: str, stream: str) -> None:
        stamp = self._tick(stream)
        self._next_storage += 1
        self.storages[self._next_storage] = _Storage(stream, stamp, names={name}, uses={stream: stamp[1]})
        self.storage_of[name] = self._next_storage

    def _alias(self, name: str, of: str) -> None:
        self.storage_of[name] = self.storage_of[of]
        self.storages[self.storage_of[of]].names.add(name)

    def _access(self, name: str, stream: str, write: bool) -> None:
        if name not in self.storage_of:
            raise Hazard(f"{name} is used but not defined", stream, [])
        self._enqueue(stream)
        blocked = self.blockers(name, stream, write)
        if blocked:
            kind = "write" if write else "read"
            raise Hazard(f"{kind} of {name} on {stream} is not ordered after {blocked}", stream,
                         sorted({blocker for blocker, _ in blocked}))
        stamp = self._tick(stream)
        storage = self.storages[self.storage_of[name]]
        storage.uses[stream] = stamp[1]
        if write:
            storage.last_write, storage.reads = stamp, []
        else:
            storage.reads.append(stamp)

    def _read(self, name: str, stream: str) -> None:
        self._access(name, stream, write=False)

    def _write(self, name: str, stream: str) -> None:
        self._access(name, stream, write=True)

    def _record(self, event: str, stream: str) -> None:
        self._tick(stream)
        self.events[event] = dict(self.clock(stream))

    def _wait_event(self, stream: str, event: str) -> None:
        self._tick(stream)
        self._merge(stream, self.events.get(event, {}))

    def _wait_stream(self, waiter: str, waitee: str) -> None:
        self._tick(waitee)
        self._tick(waiter)
        self._merge(waiter, self.clock(waitee))

    def _host_sync(self, stream: str) -> None:
        self._merge(HOST, self.clock(stream))

    def _host_sync_event(self, event: str) -> None:
        self._merge(HOST, self.events.get(event, {}))

    def _host_sync_device(self, device: int) -> None:
        for stream, stream_device in self.stream_devices.items():
            if stream_device == device:
                self._merge(HOST, self.clock(stream))

    def _record_stream(self, name: str, stream: str) -> None:
        self.storages[self.storage_of[name]].recorded.add(stream)

    def _del(self, name: str) -> None:
        unprotected = self.free_blockers(name)
        if unprotected:
            raise Hazard(f"del {name} frees memory still used on {unprotected} without record_stream", None,
                         unprotected, name)
        storage = self.storages[self.storage_of.pop(name)]
        storage.names.discard(name)


def check(statements) -> str | None:
    """None if the statements are correctly ordered, else the first hazard's description."""
    order = StreamOrder()
    for index, statement in enumerate(statements):
        try:
            order.apply(statement.effects)
        except Hazard as hazard:
            return f"statement {index} ({statement.line}): {hazard}"
    return None
