"""The "partitioned" stage: splits an ATen graph into lowered partitions and eager axon nodes, says which
nodes run eagerly and why (a warning, or an error in strict mode), and makes each partition a
`CompiledPartition` that runs the pipeline's specialization stages at its first call per shape."""

from __future__ import annotations

import operator
import warnings

import torch

from .compiled_partition import CompiledPartition
from .partition import EXTERN_REASON, RETURNED_VIEW_REASON, SIZE_ARITHMETIC_REASON, partition

_warned_ops: set[str] = set()

# Extern kernels (AXON_COMPILE_EXTERN=1), returned views (partition.returned_views) and size arithmetic are placement
# choices, not gaps: strict mode lets them through, and they are not warned about.
_CHOSEN = (EXTERN_REASON, RETURNED_VIEW_REASON, SIZE_ARITHMETIC_REASON)


def place(aten_module: torch.fx.GraphModule, job) -> torch.fx.GraphModule:
    record, name = job.record, job.graph
    operators = [n for n in aten_module.graph.nodes if n.op == "call_function"]
    record.nodes = len(operators)
    partitioned, reasons = partition(aten_module)
    eager = {node: why for node, why in reasons.items() if node.target is not operator.getitem}
    gaps = {node: why for node, why in eager.items() if why not in _CHOSEN}
    if gaps and job.options.strict:
        listing = "; ".join(f"{node.target}: {why}" for node, why in gaps.items())
        raise RuntimeError(f"[axon compile] strict mode: {len(gaps)} op(s) of {name} cannot be lowered to "
                           f"StableHLO: {listing}")
    for node, why in eager.items():
        op = str(node.target)
        record.eager_ops[op] += 1
        if op not in _warned_ops and why not in _CHOSEN:
            _warned_ops.add(op)
            warnings.warn(f"[axon compile] {op} runs eagerly on axon inside compiled graphs ({why}); "
                          "options={'strict': True} makes this an error", stacklevel=1)
    record.lowered_nodes = record.nodes - len(eager)
    for child_name, child in list(partitioned.named_children()):
        if child_name.startswith("fused_"):
            setattr(partitioned, child_name, CompiledPartition(child, child_name, job))
            record.partitions += 1
    return partitioned
