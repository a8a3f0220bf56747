"""torch.compile(backend="axon"): the pipeline, as explicit stages.

  Dynamo FX graph                       (00_dynamo.py)
  → AOTAutograd: forward and backward ATen graphs with core-ATen decompositions (01_aten.py)
  → FX passes (passes.py)
  → partition: lowerable groups vs eager axon nodes (02_partitioned.py)
  → per group and concrete shape: StableHLO (03_*.stablehlo.mlir)
  → XLA:CPU executable, cached in memory and on disk (04_*.hlo.txt)

Set AXON_COMPILE_DUMP=<dir> to write every stage.
"""

from __future__ import annotations

import itertools
import operator
import warnings

import torch
from functorch.compile import make_boxed_func
from torch._decomp import core_aten_decompositions
from torch._dynamo.backends.common import aot_autograd

from . import dump, passes, report
from .compiled_partition import CompiledPartition
from .options import CompileOptions
from .partition import EXTERN_REASON, RETURNED_VIEW_REASON, SIZE_ARITHMETIC_REASON, partition

_graph_counter = itertools.count()
_warned_ops: set[str] = set()


# Ops lowered directly rather than decomposed: max_unpool's decomposition offsets the user's per-plane indices
# into one flat index, after which eager's per-plane bounds check can no longer be made.
_LOWERED_WHOLE = (torch.ops.aten.max_unpool2d, torch.ops.aten.max_unpool3d)


def decompositions():
    """Core-ATen decompositions (minus _LOWERED_WHOLE): what remains is the op set the lowering table targets."""
    table = core_aten_decompositions()
    for packet in _LOWERED_WHOLE:
        for name in packet.overloads():
            table.pop(getattr(packet, name), None)
    return table


def axon_backend(graph_module: torch.fx.GraphModule, example_inputs, mode=None, options=None):
    compile_options = CompileOptions.from_dynamo(mode, options)
    name = f"graph_{next(_graph_counter)}"
    dump.dump(compile_options.dump_dir, name, "00_dynamo.py", dump.graph_code(graph_module))

    def compiler(suffix):
        def compile_graph(aten_module, aten_inputs):
            return make_boxed_func(compile_aten_graph(aten_module, compile_options, f"{name}_{suffix}"))

        return compile_graph

    return aot_autograd(fw_compiler=compiler("forward"), bw_compiler=compiler("backward"),
                        inference_compiler=compiler("inference"),
                        decompositions=decompositions())(graph_module, example_inputs)


def compile_aten_graph(aten_module: torch.fx.GraphModule, options: CompileOptions, name: str):
    """Stages after AOTAutograd, for one forward / backward / inference graph."""
    record = report.new_graph(name)
    dump.dump(options.dump_dir, name, "01_aten.py", dump.graph_code(aten_module))
    passes.run_all(aten_module)
    operators = [n for n in aten_module.graph.nodes if n.op == "call_function"]
    record.nodes = len(operators)
    partitioned, reasons = partition(aten_module)
    eager = {node: why for node, why in reasons.items() if node.target is not operator.getitem}
    # Extern kernels (AXON_COMPILE_EXTERN=1), returned views of inputs and size arithmetic are placement
    # choices, not gaps: strict mode lets them through, and they are not warned about.
    chosen = (EXTERN_REASON, RETURNED_VIEW_REASON, SIZE_ARITHMETIC_REASON)
    gaps = {node: why for node, why in eager.items() if why not in chosen}
    if gaps and options.strict:
        listing = "; ".join(f"{node.target}: {why}" for node, why in gaps.items())
        raise RuntimeError(f"[axon compile] strict mode: {len(gaps)} op(s) of {name} cannot be lowered to "
                           f"StableHLO: {listing}")
    for node, why in eager.items():
        op = str(node.target)
        record.eager_ops[op] += 1
        if op not in _warned_ops and why not in chosen:
            _warned_ops.add(op)
            warnings.warn(f"[axon compile] {op} runs eagerly on axon inside compiled graphs ({why}); "
                          "options={'strict': True} makes this an error")
    record.lowered_nodes = record.nodes - len(eager)
    for child_name, child in list(partitioned.named_children()):
        if child_name.startswith("fused_"):
            setattr(partitioned, child_name, CompiledPartition(child, child_name, name, options, record))
            record.partitions += 1
    dump.dump(options.dump_dir, name, "02_partitioned.py", dump.graph_code(partitioned))
    return partitioned
