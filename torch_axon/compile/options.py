"""Options of torch.compile(backend="axon"), validated: an unknown mode or option is an error.

Modes (all accepted, all produce the same graphs and numerics today):
- None / "default": lower what the table covers, run the rest eagerly on axon.
- "reduce-overhead": in CUDA terms, capture into CUDA graphs. Each lowered
  partition already runs as one XLA executable launch per call, so there is
  nothing further to capture: equal to "default".
- "max-autotune" / "max-autotune-no-cudagraphs": XLA's CPU compiler has no
  autotuner to drive: equal to "default".
Written down here so that a mode never differs silently from what it says.

Options (`options={...}`):
- "strict": bool — a node without a lowering raises instead of running eagerly.
- "dump_dir": str — write every stage there (same as AXON_COMPILE_DUMP).
- "max_specializations": int — concrete-shape executables kept per graph (LRU; default 16).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

MODES = (None, "default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")


@dataclass(frozen=True)
class CompileOptions:
    mode: str | None = None
    strict: bool = False
    dump_dir: str | None = None
    max_specializations: int = 16

    @staticmethod
    def from_dynamo(mode=None, options=None) -> CompileOptions:
        if mode not in MODES:
            raise ValueError(f"torch.compile(backend='axon'): unknown mode {mode!r}; expected one of {MODES}")
        options = dict(options or {})
        strict = options.pop("strict", os.environ.get("AXON_COMPILE_STRICT", "0") == "1")
        dump_dir = options.pop("dump_dir", os.environ.get("AXON_COMPILE_DUMP") or None)
        max_specializations = options.pop("max_specializations", 16)
        if options:
            raise ValueError(f"torch.compile(backend='axon'): unknown option(s) {sorted(options)}; "
                             "known: strict, dump_dir, max_specializations")
        if not isinstance(max_specializations, int) or max_specializations < 1:
            raise ValueError(f"torch.compile(backend='axon'): max_specializations must be a positive int, "
                             f"got {max_specializations!r}")
        return CompileOptions(mode, bool(strict), dump_dir, max_specializations)
