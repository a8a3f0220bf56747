"""mode="max-autotune": matrix products compiled or run as library kernels, whichever this host runs faster.

Whether XLA's generated dot or the host library's GEMM (an axon eager op between partitions) makes a graph
faster depends on the host and the graph, and measurements disagree across hosts: on an AMD EPYC host the GPT
training step of bench/compile.py ran 0.67x axon eager with its products compiled and 0.86x with them
extern, while on an Intel host the two were even and the MLP's step lost 7% with them extern
(docs/benchmarks.md). No fixed default is right on both, so under max-autotune a graph that has matrix
products is placed twice, products compiled and products extern, and its first calls measure both, as
Inductor's max-autotune measures its candidate kernels.

Each call runs exactly one placement, on the caller's real inputs: both are complete implementations of the
graph. The first call of each placement compiles it and is not timed; then the placements take turns for
`TIMED_CALLS` calls each, every one timed between two synchronizations of the graph's device. The extern
placement is kept only when its median is below `MARGIN` times the compiled one's (the default's choice
stays on a near tie); the other placement is dropped. Until the choice, those synchronizations
make the calls wait for the device, and an error a kernel raises is reported by the call that launched it.
The two placements round differently (different summation orders in the products), so results agree to
floating-point tolerance, not bit for bit, between calls of the measuring phase; after it, one placement
runs. `torch_axon.compile.report()` shows each measured graph's times and choice.

Not measured: graphs without matrix products, and any graph while AXON_COMPILE_EXTERN is set, which
states the placement outright.
"""

from __future__ import annotations

import os
import statistics
import threading
import time

import torch
import torch.fx

from . import placement, report
from .partition import EXTERN_GROUPS, chosen_extern_kernels, extern_kernels

MODES = ("max-autotune", "max-autotune-no-cudagraphs")
TIMED_CALLS = 5
# Another placement replaces the first (products compiled, the default's choice) only when its median is at
# least this much lower: on a shared 2-core host one call's time moves by 10-30%, and a near tie measured
# that way picks at random.
MARGIN = 0.9
MATRIX_PRODUCTS = frozenset(op for name in ("mm", "bmm", "addmm", "baddbmm") for op in EXTERN_GROUPS[name])
COMPILED, EXTERN = "matrix products compiled", "matrix products extern"


def place(aten_module: torch.fx.GraphModule, job):
    """The "partitioned" stage: one placement (a GraphModule), or a MeasuredChoice between two."""
    kernels = extern_kernels()
    if job.options.mode not in MODES or "AXON_COMPILE_EXTERN" in os.environ:
        return placement.place(aten_module, job)
    products = {node.target for node in aten_module.graph.nodes if node.op == "call_function"} & MATRIX_PRODUCTS
    if not products - kernels:
        return placement.place(aten_module, job)
    alternative = _copy(aten_module)
    compiled = placement.place(aten_module, job)
    extern_job = job.replace(record=report.new_graph(f"{job.graph} ({EXTERN})"))
    with chosen_extern_kernels(kernels | MATRIX_PRODUCTS):
        extern = placement.place(alternative, extern_job)
    return MeasuredChoice(job.graph, {COMPILED: compiled, EXTERN: extern}, job.record)


def _copy(graph_module: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """A copy whose graph placement can rewrite without touching the original (node metadata shared)."""
    graph = torch.fx.Graph()
    graph.output(graph.graph_copy(graph_module.graph, {}))
    return torch.fx.GraphModule(graph_module, graph)


def _device_of(args) -> torch.device | None:
    for value in args:
        if isinstance(value, torch.Tensor) and value.device.type == "axon":
            return value.device
    return None


class MeasuredChoice:
    """Calls one of several equivalent placements of a graph; its first calls time them and keep the fastest."""

    def __init__(self, name: str, placements: dict, record) -> None:
        """`placements`: label -> placed GraphModule (or any callable), the default's placement first."""
        self.name = name
        self.placements = placements
        self.record = record
        self.times: dict[str, list[float]] = {label: [] for label in placements}
        self._runs = {label: self._run_of(module) for label, module in placements.items()}
        self._warm: set[str] = set()
        self._turn = 0
        self._chosen = None
        self.chosen_label: str | None = None
        self._lock = threading.Lock()

    @staticmethod
    def _run_of(placed):
        """A placed GraphModule's generated forward, called straight (as pipeline._runner does)."""
        if not isinstance(placed, torch.fx.GraphModule):
            return placed
        from torch.fx._lazy_graph_module import _LazyGraphModule

        _LazyGraphModule.force_recompile(placed)
        return placed.forward

    def __call__(self, *args):
        chosen = self._chosen
        if chosen is not None:
            return chosen(*args)
        with self._lock:
            labels = list(self._runs)
            label = labels[self._turn % len(labels)]
            self._turn += 1
            warm = label in self._warm
            self._warm.add(label)
        device = _device_of(args)
        if not warm or device is None:
            result = self._runs[label](*args)
            if device is None:
                with self._lock:  # nothing to time on: the placement that ran stays
                    if self._chosen is None:
                        self._choose(label)
            return result
        torch.axon.synchronize(device)
        start = time.perf_counter()
        result = self._runs[label](*args)
        torch.axon.synchronize(device)
        elapsed = time.perf_counter() - start
        with self._lock:
            self.times[label].append(elapsed)
            if self._chosen is None and all(len(t) >= TIMED_CALLS for t in self.times.values()):
                self._choose(self._fastest())
        return result

    def _fastest(self) -> str:
        """The first placement, unless another's median is below MARGIN times its median."""
        medians = {label: statistics.median(times) for label, times in self.times.items()}
        first = next(iter(medians))
        best = min(medians, key=medians.get)
        return best if medians[best] < MARGIN * medians[first] else first

    def _choose(self, label: str) -> None:
        self.chosen_label = label
        medians = {name: statistics.median(t) * 1e3 for name, t in self.times.items() if t}
        if self.record is not None:
            self.record.placement = label
            self.record.placement_ms = medians
        self._chosen = self._runs[label]
        # The other placements' executables go with them.
        self._runs = {label: self._runs[label]}
        self.placements = {label: self.placements[label]}

    def code(self) -> str:
        """Each placement's partitioned graph, for AXON_COMPILE_DUMP."""
        from . import dump

        return "\n".join(f"# {label}\n{dump.graph_code(module)}" for label, module in self.placements.items()
                         if isinstance(module, torch.fx.GraphModule))
