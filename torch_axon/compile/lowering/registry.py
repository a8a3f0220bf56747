"""The lowering table: ATen operator overload → function that emits StableHLO.

A lowering receives the `LoweringContext`, the FX node (for its output
metadata) and the node's arguments with tensors replaced by `Value`s, and
returns a `Value` (or a list of them for multi-output ops). It raises
`LoweringError` for argument combinations it cannot express; the partitioner
then runs that node eagerly on axon instead.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

LOWERINGS: dict[torch._ops.OpOverload, Callable] = {}


def lowers(*targets):
    """Registers the decorated function for each target (overload or overload packet)."""

    def decorate(function: Callable) -> Callable:
        for target in targets:
            if isinstance(target, torch._ops.OpOverloadPacket):
                for name in target.overloads():
                    LOWERINGS.setdefault(getattr(target, name), function)
            else:
                LOWERINGS[target] = function
        return function

    return decorate


def lowering_for(target) -> Callable | None:
    return LOWERINGS.get(target)
