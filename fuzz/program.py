"""A fuzz program: a list of one-line statements, each with what it reads, writes and defines.

The text of a statement is what runs; the rest describes it for the stream
ordering model (`ordering.py`), the minimizer and the compile path. A
program renders as a standalone reproducer: the prelude, the statements as
the body of `program(D0, D1, S, PIN)`, and a `main` that runs it on the CPU
and on axon and prints what differs.
"""

from __future__ import annotations

import dataclasses
import pathlib
import textwrap

PRELUDE_PATH = pathlib.Path(__file__).with_name("prelude.py")
REPRODUCER_MAIN = pathlib.Path(__file__).with_name("reproducer_main.py")


@dataclasses.dataclass(frozen=True)
class Statement:
    """One line of a program.

    `effects` are tuples for the stream ordering model (see ordering.py), with
    streams already resolved (`stream` is the stream variable the line runs
    under, if any). `label` names the operation (`add`, `view.permute`,
    `copy.d2h_pinned`, ...). `sync` marks a synchronization point: an error
    that axon reports late must have surfaced by the end of such a line.
    `functional` marks lines that the compile path may trace (no mutation, no
    streams, no host round trips, on D0). `expects_error` marks a line the
    generator kept because the CPU raises there.
    """

    code: str
    label: str
    defines: tuple[str, ...] = ()
    uses: tuple[str, ...] = ()
    effects: tuple[tuple, ...] = ()
    stream: str | None = None
    sync: bool = False
    functional: bool = False
    expects_error: bool = False

    @property
    def line(self) -> str:
        return f"with S.stream({self.stream}): {self.code}" if self.stream else self.code


@dataclasses.dataclass
class Program:
    seed: int
    statements: list[Statement]
    devices: dict[str, int | None]  # tensor name -> device index in the axon run (None: host)
    origin: str = ""  # "minimized from N statements", ...

    def text(self) -> str:
        return "\n".join(statement.line for statement in self.statements)

    def subset(self, keep: list[int], origin: str = "") -> Program:
        return Program(self.seed, [self.statements[i] for i in keep], self.devices, origin or self.origin)

    def defining_index(self) -> dict[str, int]:
        return {name: i for i, statement in enumerate(self.statements) for name in statement.defines}

    def reproducer(self, headline: str = "") -> str:
        """A standalone script: exit status 1 while the runs differ."""
        used = {name for statement in self.statements for name in statement.defines}
        devices = {name: index for name, index in self.devices.items() if name in used}
        body = textwrap.indent(self.text() or "pass", "    ")
        origin = f" ({self.origin})" if self.origin else ""
        header = [f"# Axon fuzz reproducer: seed {self.seed}, {len(self.statements)} statements{origin}."]
        header += [f"# {line}" for line in headline.splitlines()]
        header.append("# Run: .venv/bin/python <this file>  (exit status 1 while axon differs from the CPU)")
        return "\n".join([
            *header, "", PRELUDE_PATH.read_text().strip(), "", "",
            "def program(D0, D1, S, PIN):", body, "    return locals()", "", "",
            f"DEVICES = {devices!r}", "", REPRODUCER_MAIN.read_text().split("# --- reproducer ---\n", 1)[1].strip(),
            "",
        ])
