"""One conformance result and how results are tallied."""

from __future__ import annotations

import dataclasses
import enum


class Outcome(str, enum.Enum):
    PASSED = "passed"
    FAILED = "failed"
    SKIPPED = "skipped"  # for a general reason (the CPU itself cannot run it)
    SKIPPED_AXON = "skipped (axon)"  # for an axon-specific reason, always with a one-line reason


@dataclasses.dataclass
class Result:
    operator: str  # OpInfo name, with its variant test name if any
    check: str  # "values", "inplace", "out", "errors", "gradients", "forward_ad", "noncontiguous"
    dtype: str
    outcome: Outcome
    detail: str = ""

    @property
    def key(self) -> str:
        return f"{self.operator} [{self.check}, {self.dtype}]"
