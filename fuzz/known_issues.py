"""Failures already reported and being fixed elsewhere: the CI batch marks them xfail instead of failing.

Each entry matches a failure by its kind and label (and, for layouts that
propagate to later results, by the operations the program contains). Remove
an entry once its bug is fixed; a fixed bug simply stops matching.
"""

from __future__ import annotations

import dataclasses
from typing import Callable

from .execution import Failure
from .program import Program

STRIDE_KINDS = ("strides", "storage_offset")


def _labels(program: Program) -> set[str]:
    return {statement.label for statement in program.statements}


@dataclasses.dataclass(frozen=True)
class KnownIssue:
    key: str
    description: str
    matches: Callable[[Failure, Program], bool]


KNOWN_ISSUES = (
    KnownIssue("strides-abs-logical-xor",
               "output strides differ from the CPU for abs and logical_xor on permuted inputs",
               lambda failure, program: failure.kind in STRIDE_KINDS
               and bool(_labels(program) & {"abs", "abs_", "abs.out", "logical_xor", "logical_xor_",
                                            "logical_xor.out"})),
    KnownIssue("convolution-channels-last", "convolution loses channels_last",
               lambda failure, program: failure.kind in STRIDE_KINDS and "conv2d" in _labels(program)),
    KnownIssue("late-meta-checks",
               "errors the CPU raises at the call are raised late on axon (at the next synchronization, with an "
               "AXON_ERROR_TASK_FAILED message) for checks the meta kernel lacks",
               lambda failure, program: failure.kind == "late error"
               or (failure.kind in ("error type", "missing error") and "AXON_ERROR_TASK_FAILED" in failure.detail)),
    KnownIssue("in-place-smaller-self", "in-place ops on a smaller self resize it instead of raising",
               lambda failure, program: failure.kind == "missing error"
               and failure.label == "error.in_place_broadcast"),
    # Found by this fuzzer (issue 9), reported with a reproducer:
    KnownIssue("copy-between-devices-source-race", "a copy axon:0 -> axon:1 (to(), copy_(), blocking or not) is "
               "not ordered before later work on the source device's current stream: a later write to the source "
               "can land before the copy reads it", lambda failure, program: failure.kind == "values"
               and "copy.device_to_device" in _labels(program)),
    KnownIssue("compile-sign-bool", "torch.compile: sign of a bool tensor lowers to stablehlo.sign on i1, which "
               "XLA rejects", lambda failure, program: failure.kind == "compile error"
               and "stablehlo.sign" in failure.detail),
    KnownIssue("compile-cummax-empty", "torch.compile: cummax/cummin over a dimension of size 0 lowers to a "
               "reduce_window with a window of 0, which XLA rejects", lambda failure, program: failure.kind ==
               "compile error" and "expects window to have positive value" in failure.detail),
    KnownIssue("compile-identity-aliases-input", "torch.compile: an op that is the identity on its input "
               "(torch.floor of an integer tensor) returns the input itself, so a later in-place write to the input "
               "changes the result", lambda failure, program: failure.kind == "compiled values"
               and failure.label in ("floor", "ceil", "round", "trunc")),
    KnownIssue("compile-denormals-flushed", "torch.compile: cumsum (XLA reduce_window) flushes float32 denormals "
               "to zero (here: an int32 tensor viewed as float32)", lambda failure, program: failure.kind ==
               "compiled values" and "view.dtype" in _labels(program)),
    KnownIssue("compile-dynamic-chunk", "torch.compile(dynamic=True): x.chunk(2, 0)[-1] returns the first chunk's "
               "elements (the symbolic offset is computed wrong)", lambda failure, program: failure.kind ==
               "compiled values" and program.seed % 3 == 0 and failure.label in ("view.chunk", "view.split")),
    KnownIssue("compile-argmax-unsigned", "torch.compile: argmax/argmin of a uint8 tensor lowers to a signed "
               "comparison, which XLA's verifier rejects ('Expected comparison type UNSIGNED')",
               lambda failure, program: failure.kind == "compile error"
               and "Expected comparison type UNSIGNED" in failure.detail),
    KnownIssue("compile-out-resize", "torch.compile: an out= op into a tensor the graph created with a different "
               "size (torch.empty(0); torch.mm(a, b, out=t)) raises 'trying to resize storage that is not resizable'",
               lambda failure, program: failure.kind == "compile error"
               and "resize storage that is not resizable" in failure.detail),
)


def known_issue(failure: Failure, program: Program) -> KnownIssue | None:
    return next((issue for issue in KNOWN_ISSUES if issue.matches(failure, program)), None)
