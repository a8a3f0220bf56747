"""Failures already reported and being fixed elsewhere: the CI batch marks them xfail instead of failing.

Each entry matches a failure by its kind and label (and, for layouts that
propagate to later results, by the operations the program contains). Remove
an entry once its bug is fixed; a fixed bug simply stops matching.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from .execution import Failure
from .program import Program


def _labels(program: Program) -> set[str]:
    return {statement.label for statement in program.statements}


@dataclasses.dataclass(frozen=True)
class KnownIssue:
    key: str
    description: str
    matches: Callable[[Failure, Program], bool]


KNOWN_ISSUES = (
    # Documented behaviour of the compiler, not a bug to fix here:
    KnownIssue("compile-denormals-flushed", "torch.compile: XLA:CPU runs compiled code with float denormals "
               "flushed to zero (docs/compiler.md)", lambda failure, program: failure.kind == "compiled values"
               and "view.dtype" in _labels(program)),
    # Found by this fuzzer (issue 9), not fixed yet:
    KnownIssue("compile-view-of-output-after-resize-break", "torch.compile(dynamic=True): a returned view of "
               "another output, passed across the graph break an out= resize makes and then mutated, fails in "
               "Dynamo's guard creation ('sources must not be empty for symbol')", lambda failure, program:
               failure.kind == "compile error" and "sources must not be empty" in failure.detail),
)


def known_issue(failure: Failure, program: Program) -> KnownIssue | None:
    return next((issue for issue in KNOWN_ISSUES if issue.matches(failure, program)), None)
