"""Shrinking a failing program: delta debugging over its statements.

A candidate keeps a subset of the statements plus, transitively, the
statement that defines each name a kept statement uses; a candidate that the
stream ordering model rejects (it would race on a device) is never run. A
candidate is accepted when it still fails with the same signature (failure
kind and label). After ddmin, a pass tries to remove statements one by one
and one moves statements off side streams onto the default stream.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable

from . import ordering
from .program import Program, Statement


def closure(program: Program, keep) -> list[int]:
    """`keep` plus every statement that defines a name used by a kept statement (the latest one before it)."""
    statements = program.statements
    kept = set(keep)
    pending = list(kept)
    while pending:
        index = pending.pop()
        for name in statements[index].uses:
            for earlier in range(index - 1, -1, -1):
                if name in statements[earlier].defines:
                    if earlier not in kept:
                        kept.add(earlier)
                        pending.append(earlier)
                    break
    return sorted(kept)


def _stream_devices(program: Program) -> dict[str, int]:
    return {effect[1]: effect[2] for statement in program.statements for effect in statement.effects
            if effect[0] == "stream"}


def on_default_stream(statement: Statement, device: int) -> Statement:
    """The statement without its `with S.stream(...)`, its effects moved to the device's default stream."""
    side, default = statement.stream, ordering.default_stream(device)
    effects = tuple(tuple(default if part == side else part for part in effect) for effect in statement.effects)
    uses = tuple(name for name in statement.uses if name != side)
    return dataclasses.replace(statement, stream=None, effects=effects, uses=uses)


class Minimizer:
    def __init__(self, fails: Callable[[Program], bool], max_runs: int = 400, max_seconds: float = 300):
        self.fails = fails
        self.max_runs, self.deadline = max_runs, time.monotonic() + max_seconds
        self.runs = 0

    def exhausted(self) -> bool:
        return self.runs >= self.max_runs or time.monotonic() > self.deadline

    def accepts(self, candidate: Program) -> bool:
        if self.exhausted() or ordering.check(candidate.statements) is not None:
            return False
        self.runs += 1
        return self.fails(candidate)

    def minimize(self, program: Program) -> Program:
        original = len(program.statements)
        current = program
        granularity = 2
        while len(current.statements) >= 2 and not self.exhausted():
            size = len(current.statements)
            chunk = max(1, -(-size // granularity))
            for start in range(0, size, chunk):
                keep = closure(current, [i for i in range(size) if not start <= i < start + chunk])
                if len(keep) < size and self.accepts(candidate := current.subset(keep)):
                    current = candidate
                    granularity = max(granularity - 1, 2)
                    break
            else:
                if chunk == 1:
                    break
                granularity = min(size, granularity * 2)
        current = self._streams_to_default(current)
        return Program(current.seed, current.statements, current.devices,
                       f"minimized from {original} statements in {self.runs} runs")

    def _streams_to_default(self, program: Program) -> Program:
        devices = _stream_devices(program)
        for index in range(len(program.statements)):
            statement = program.statements[index]
            if statement.stream is None or statement.stream not in devices:
                continue
            statements = list(program.statements)
            statements[index] = on_default_stream(statement, devices[statement.stream])
            candidate = Program(program.seed, statements, program.devices, program.origin)
            if self.accepts(candidate):
                program = candidate
        # Streams and events nothing uses any more.
        size = len(program.statements)
        used = {name for statement in program.statements for name in statement.uses}
        keep = [i for i in range(size) if not (program.statements[i].label in ("stream.new", "event.new")
                                              and not set(program.statements[i].defines) & used)]
        if len(keep) < size and self.accepts(candidate := program.subset(keep)):
            program = candidate
        return program


def minimize(program: Program, fails: Callable[[Program], bool], max_runs: int = 400,
             max_seconds: float = 300) -> Program:
    """The smallest program found that still `fails`."""
    return Minimizer(fails, max_runs, max_seconds).minimize(program)
