"""One seed end to end: generate, run on both devices (and compiled), confirm, minimize, write a reproducer."""

from __future__ import annotations

import dataclasses
import pathlib
import time

from . import compiled as compiled_path
from .execution import Failure, Verdict, check
from .generator import generate
from .known_issues import KnownIssue, known_issue
from .minimize import minimize
from .program import Program


@dataclasses.dataclass
class SeedResult:
    seed: int
    statements: int
    seconds: float
    failure: Failure | None = None
    path: str = "eager"  # "eager" or "compile": which check failed
    known: KnownIssue | None = None
    flaky: bool = False  # failed once, passed when run again
    notes: list[str] = dataclasses.field(default_factory=list)
    program: Program | None = None
    minimized: Program | None = None

    @property
    def signature(self) -> tuple[str, str, str]:
        return (self.path, *self.failure.signature) if self.failure else ("", "", "")


def _checker(path: str):
    return (lambda program: compiled_path.check_compiled(program)) if path == "compile" else check


def run_seed(seed: int, with_compile: bool = False, shrink: bool = True, minimize_seconds: float = 120,
             length: int | None = None) -> SeedResult:
    started = time.monotonic()
    program = generate(seed, length)
    result = SeedResult(seed, len(program.statements), 0.0, program=program)
    checks = [("eager", check)] + ([("compile", compiled_path.check_compiled)] if with_compile else [])
    for path, checker in checks:
        verdict: Verdict = checker(program)
        if verdict.note:
            result.notes.append(verdict.note)
        if verdict.failure is None:
            continue
        result.failure, result.path = verdict.failure, path
        again = checker(program).failure
        result.flaky = again is None or again.signature != verdict.failure.signature
        result.known = known_issue(verdict.failure, program)
        if shrink:
            # A flaky failure (a race, most likely) counts as reproduced if any of three runs shows it.
            attempts = 3 if result.flaky else 1
            result.minimized = shrink_program(program, verdict.failure, path, minimize_seconds, attempts)
            for _ in range(attempts):  # the failure as the minimized program shows it (its statement indices)
                found = checker(result.minimized).failure
                if found is not None and found.signature == verdict.failure.signature:
                    result.failure = found
                    break
            result.known = result.known or known_issue(verdict.failure, result.minimized)
        break
    result.seconds = time.monotonic() - started
    return result


def shrink_program(program: Program, failure: Failure, path: str = "eager", max_seconds: float = 120,
                   attempts: int = 1) -> Program:
    checker = _checker(path)

    def fails(candidate: Program) -> bool:
        for _ in range(attempts):
            found = checker(candidate).failure
            if found is not None and found.signature == failure.signature:
                return True
        return False
    return minimize(program, fails, max_seconds=max_seconds)


def headline(result: SeedResult) -> str:
    failure = result.failure
    program = result.minimized or result.program
    lines = [f"{result.path} path: {failure.describe(program)}"]
    if result.known:
        lines.append(f"known issue {result.known.key}: {result.known.description}")
    if result.flaky:
        lines.append("flaky: passed when run again (a race?); minimized keeping candidates that fail in 1 of 3 runs")
    return "\n".join(lines)


def write_reproducer(directory: pathlib.Path, result: SeedResult) -> pathlib.Path:
    directory.mkdir(parents=True, exist_ok=True)
    program = result.minimized or result.program
    kind = "".join(ch if ch.isalnum() else "_" for ch in f"{result.failure.kind}_{result.failure.label}")
    path = directory / f"seed{result.seed}_{result.path}_{kind}.py"
    if result.path == "compile":
        path.write_text(compiled_path.reproducer(program, headline(result)))
    else:
        path.write_text(program.reproducer(headline(result)))
    return path
