"""What an op family proposes to the generator: one line and what it touches."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable


@dataclasses.dataclass
class Proposal:
    """A candidate statement.

    `defines` maps each tensor the line binds to its device (None: host);
    `numbers` are names bound to Python values. `reads` and `writes` are live
    tensors the line's kernels read or write in place (on their own device's
    current stream). `exact`: exact inputs give exact results (see
    generator.py); `bound`, if given, is the largest magnitude an intermediate
    sum can reach (computed on the CPU values after the line ran), which must
    stay within the result dtype's exact range. `host_sync`: the line waits for
    its stream (data-dependent sizes, `.item()`, blocking copies to the host).
    `functional`: no mutation, no host round trip (the compile path may trace it).
    `reinterprets`: a view with another dtype over the same bytes.
    `custom_effects(current)`, if given, replaces the derived ordering effects
    (`current(device)` is the stream id the line runs on for that device).
    """

    code: str
    label: str
    defines: dict[str, int | None] = dataclasses.field(default_factory=dict)
    reads: tuple[str, ...] = ()
    writes: tuple[str, ...] = ()
    numbers: tuple[str, ...] = ()
    exact: bool = True
    bound: Callable[[dict], float] | None = None
    host_sync: bool = False
    functional: bool = True
    stream_ok: bool = True
    reinterprets: bool = False
    custom_effects: Callable | None = None
