"""Running a program on the CPU and on axon, and deciding whether axon got it right.

Axon must end with the same live values (dtype, shape, strides, storage
offset, aliasing, values) as the CPU. Errors: if the CPU raises at statement
k, axon must raise the same exception type at k, or, where the statement's
error depends on the data a kernel reads (labels `error.data:*`), by the end
of the next synchronizing statement (or the final synchronize) — as CUDA
reports errors found by a running kernel. Statements after k run only on
axon, up to that synchronization point. Where axon raised is recorded.
"""

from __future__ import annotations

import dataclasses
import gc
import warnings

import torch

from . import prelude
from .program import Program

FINAL_SYNC = -1  # error index: raised by the synchronize after the last statement


@dataclasses.dataclass
class Outcome:
    values: dict | None  # live names after the run (None if it raised)
    error: tuple[int, str, str] | None  # (statement index or FINAL_SYNC, exception type, first line)


@dataclasses.dataclass
class Failure:
    kind: str  # a value aspect ("values", "strides", ...) or "error type", "missing error", "spurious error", ...
    index: int  # the statement where it shows (for a value, the one that defined the name)
    label: str  # that statement's label
    detail: str

    @property
    def signature(self) -> tuple[str, str]:
        return self.kind, self.label

    def describe(self, program: Program | None = None) -> str:
        where = ""
        if program is not None and 0 <= self.index < len(program.statements):
            where = f" at `{program.statements[self.index].line}`"
        return f"{self.kind} [{self.label}]{where}: {self.detail}"


@dataclasses.dataclass
class Verdict:
    failure: Failure | None
    note: str = ""  # where a late error was raised, for the summary
    compared: int = 0  # live names compared


def _error_text(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0][:400] if text else ""


def run(program: Program, device_type: str, stop_after: int | None = None) -> Outcome:
    """Runs statements [0, stop_after] (all by default); on axon, then synchronizes every device."""
    namespace = prelude.bindings(device_type)
    reserved = set(namespace)
    last = len(program.statements) - 1 if stop_after is None else stop_after
    error = None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for index, statement in enumerate(program.statements[: last + 1]):
            try:
                exec(compile(statement.line, f"<statement {index}>", "exec"), namespace)  # noqa: S102
            except Exception as raised:  # noqa: BLE001  the exception is the result
                error = (index, type(raised).__name__, _error_text(raised))
                break
        if device_type == "axon":
            try:
                for device in range(torch.axon.device_count()):
                    torch.axon.synchronize(device)
            except Exception as raised:  # noqa: BLE001
                error = error or (FINAL_SYNC, type(raised).__name__, _error_text(raised))
            for device in range(torch.axon.device_count()):
                torch.axon.set_stream(torch.axon.default_stream(device))
            torch.axon.set_device(0)
    values = None if error else {name: value for name, value in namespace.items() if name not in reserved
                                 and not name.startswith("__") and name[0] in "thn"}
    namespace.clear()
    return Outcome(values, error)


def _next_sync(program: Program, index: int) -> int | None:
    for later in range(index, len(program.statements)):
        if program.statements[later].sync:
            return later
    return None


def _where(program: Program, index: int) -> str:
    return "the final synchronize" if index == FINAL_SYNC else f"statement {index} ({program.statements[index].label})"


def compare_errors(program: Program, cpu: Outcome, axon: Outcome) -> Verdict:
    statements = program.statements
    if cpu.error is None:
        index, kind, message = axon.error
        label = "synchronize" if index == FINAL_SYNC else statements[index].label
        return Verdict(Failure("spurious error", index, label,
                               f"axon raised {kind}: {message}; the CPU raised nothing"))
    index, kind, message = cpu.error
    label = statements[index].label
    late_allowed = label.startswith("error.data:")
    if axon.error is None:
        return Verdict(Failure("missing error", index, label, f"the CPU raised {kind} ({message}); axon raised "
                                                               "nothing by the next synchronization point"))
    axon_index, axon_kind, axon_message = axon.error
    if axon_index != FINAL_SYNC and axon_index < index:
        return Verdict(Failure("spurious error", axon_index, statements[axon_index].label,
                               f"axon raised {axon_kind} ({axon_message}) before the CPU's error at statement {index}"))
    if axon_kind != kind:
        return Verdict(Failure("error type", index, label, f"the CPU raised {kind} ({message}); axon raised "
                                                           f"{axon_kind} at {_where(program, axon_index)} "
                                                           f"({axon_message})"))
    if axon_index == index:
        return Verdict(None, f"raised at the call: {label}")
    if not late_allowed:
        return Verdict(Failure("late error", index, label, f"the CPU raised {kind} at the call ({message}); axon "
                                                           f"raised it at {_where(program, axon_index)} "
                                                           f"({axon_message})"))
    return Verdict(None, f"raised late (allowed): {label} -> {_where(program, axon_index)}")


def check(program: Program, check_memory: bool = True) -> Verdict:
    """Runs `program` on both devices; the first difference, if any."""
    baseline = [torch.axon.memory_allocated(device) for device in range(torch.axon.device_count())]
    cpu = run(program, "cpu")
    stop_after = None
    if cpu.error is not None:
        stop_after = _next_sync(program, cpu.error[0])
    axon = run(program, "axon", stop_after)
    if cpu.error is not None or axon.error is not None:
        return compare_errors(program, cpu, axon)
    defined = program.defining_index()
    found = prelude.differences(cpu.values, axon.values, program.devices)
    verdict = Verdict(None, compared=len(cpu.values))
    if found:
        name, aspect, detail = min(found, key=lambda item: defined.get(item[0], len(program.statements)))
        index = defined.get(name, -1)
        label = program.statements[index].label if index >= 0 else "?"
        verdict = Verdict(Failure(aspect, index, label, f"{name}: {detail}"), compared=len(cpu.values))
    del cpu, axon
    if check_memory and verdict.failure is None:
        gc.collect()
        leaked = [(device, torch.axon.memory_allocated(device) - before) for device, before in enumerate(baseline)]
        leaked = [(device, amount) for device, amount in leaked if amount > 0]
        if leaked:
            verdict = Verdict(Failure("memory leak", len(program.statements) - 1, "memory_allocated",
                                      f"bytes still allocated after every tensor was freed: {leaked}"))
    return verdict
