"""torch.compile(backend="axon"): FX graph → StableHLO → XLA:CPU executable, run on axon memory.

Registered on first use through the ``torch_dynamo_backends`` entry point
(``torch.compile(model, backend="axon")`` works right after ``import torch``);
importing this package also registers the Dynamo device interface for axon
streams and events.
"""

from __future__ import annotations

import torch._dynamo.utils
from torch._dynamo.device_interface import register_interface_for_device

from . import report as _report_module
from .backend import axon_backend, decompositions
from .device_interface import AxonInterface
from .options import CompileOptions

register_interface_for_device("axon", AxonInterface)


def report() -> _report_module.CompileReport:
    """What was compiled in this process (print it for a summary)."""
    current = _report_module.current()
    current.graph_breaks = sum(torch._dynamo.utils.counters["graph_break"].values())
    return current


def reset_report() -> None:
    _report_module.reset()


backend = axon_backend

__all__ = ["AxonInterface", "CompileOptions", "axon_backend", "backend", "decompositions", "report",
           "reset_report"]
