"""What torch.compile(backend="axon") did in this process: graphs, lowered vs eager nodes, graph
breaks, compile times, cache hits and misses.

`torch_axon.compile.report()` returns a `CompileReport`; `print(report())` prints the summary.
"""

from __future__ import annotations

import collections
import threading
from dataclasses import dataclass, field

_lock = threading.Lock()


@dataclass
class GraphRecord:
    name: str
    nodes: int = 0
    lowered_nodes: int = 0
    eager_ops: collections.Counter = field(default_factory=collections.Counter)
    partitions: int = 0
    executables: int = 0          # concrete-shape specializations compiled or loaded
    compile_seconds: float = 0.0
    runtime_checks: int = 0       # index-bounds and tie checks in those executables (lowering/checks.py)
    eager_reruns: int = 0         # calls a tie check sent to eager execution
    # Seconds spent in each pipeline stage (pipeline.py) of this graph and its specializations, by stage name.
    stage_seconds: collections.Counter = field(default_factory=collections.Counter)


@dataclass
class CompileReport:
    graphs: list[GraphRecord] = field(default_factory=list)
    graph_breaks: int = 0
    cache: collections.Counter = field(default_factory=collections.Counter)  # compiled / disk / memory
    compile_seconds: float = 0.0

    @property
    def lowered_nodes(self) -> int:
        return sum(g.lowered_nodes for g in self.graphs)

    @property
    def eager_ops(self) -> collections.Counter:
        total = collections.Counter()
        for graph in self.graphs:
            total.update(graph.eager_ops)
        return total

    def stage_breakdown(self) -> dict[str, float]:
        """Seconds this process spent compiling, by step. Dynamo's tracing and AOTAutograd come from Dynamo's
        own timers (torch._dynamo.utils.compilation_time_metrics; 0 where they are missing), without the
        parts of ours they contain. The rest come from the pipeline's stages (pipeline.py)."""
        stages = collections.Counter()
        for graph in self.graphs:
            stages.update(graph.stage_seconds)
        from torch._dynamo import utils as dynamo_utils

        metrics = getattr(dynamo_utils, "compilation_time_metrics", {})
        total = {name: sum(metrics.get(name, ())) for name in
                 ("_compile.compile_inner", "OutputGraph.call_user_compiler", "create_aot_dispatcher_function")}
        partitioning = stages["aten"] + stages["passes"] + stages["partitioned"]
        return {
            "Dynamo tracing": max(0.0, total["_compile.compile_inner"] - total["OutputGraph.call_user_compiler"]),
            "AOTAutograd": max(0.0, total["create_aot_dispatcher_function"] - partitioning),
            "partitioning": partitioning,
            "lowering to StableHLO": stages["stablehlo"],
            "XLA compile or load": stages["executable"],
        }

    def __str__(self) -> str:
        breakdown = ", ".join(f"{name} {seconds:.2f} s" for name, seconds in self.stage_breakdown().items())
        lines = [f"torch.compile(backend='axon'): {len(self.graphs)} graph(s), {self.graph_breaks} graph break(s)",
                 f"  time by step: {breakdown}",
                 (f"  nodes lowered to StableHLO: {self.lowered_nodes}; run eagerly (not lowered): "
                  f"{sum(self.eager_ops.values())}"),
                 (f"  XLA executables: {self.cache['compiled']} compiled, {self.cache['disk']} loaded from disk, "
                  f"{self.cache['memory']} reused in memory; {self.compile_seconds:.2f} s compiling/loading")]
        for op, count in self.eager_ops.most_common():
            lines.append(f"    eager: {op} x{count}")
        for graph in self.graphs:
            lines.append(f"  {graph.name}: {graph.nodes} ops, {graph.lowered_nodes} lowered in "
                         f"{graph.partitions} partition(s), {graph.executables} executable(s), "
                         f"{graph.compile_seconds:.2f} s")
            if graph.runtime_checks or graph.eager_reruns:
                lines.append(f"    {graph.runtime_checks} run-time check(s); {graph.eager_reruns} call(s) rerun "
                             "eagerly (ties only the CPU kernel can order)")
        return "\n".join(lines)


_report = CompileReport()


def current() -> CompileReport:
    return _report


def reset() -> None:
    global _report
    with _lock:
        _report = CompileReport()


def new_graph(name: str) -> GraphRecord:
    record = GraphRecord(name)
    with _lock:
        _report.graphs.append(record)
    return record


def record_cache(source: str, seconds: float = 0.0) -> None:
    with _lock:
        _report.cache[source] += 1
        _report.compile_seconds += seconds


def record_graph_breaks(count: int) -> None:
    with _lock:
        _report.graph_breaks = count
