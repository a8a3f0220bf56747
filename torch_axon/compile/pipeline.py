"""torch.compile(backend="axon") as a declared, ordered list of stages.

`PIPELINE` is the whole compiler: every tool iterates over it rather than
knowing the stages itself. `stage.run` runs one scope's stages in this order,
times each into the graph's report record and writes the dumps (their numbers
00, 01, ... follow this order: dump.py); `print(pipeline.listing())` lists it.
The scopes nest: the Dynamo scope's aot_autograd stage runs the graph scope
once per ATen graph, and the graph scope's partitioned stage leaves
`CompiledPartition`s that run the specialization scope per concrete shape.
"""

from __future__ import annotations

import torch
from functorch.compile import make_boxed_func
from torch._dynamo.backends.common import aot_autograd
from torch.fx._lazy_graph_module import _LazyGraphModule

from . import dump, executable, passes, placement, report, stage
from .decompositions import decompositions
from .lowering import lower_graph
from .partition import extern_kernels, mutates
from .stage import DYNAMO, GRAPH, SPECIALIZATION, GraphAndInputs, Stage


def _unchanged(artifact, job):
    return artifact


def _code_of_module(graph_module, job):
    return ".py", dump.graph_code(graph_module)


def _code_of_captured(captured: GraphAndInputs, job):
    return _code_of_module(captured.graph_module, job)


def _aot_autograd(captured: GraphAndInputs, job):
    """AOTAutograd with our decompositions; each ATen graph it hands back runs the graph scope."""

    def compiler(suffix):
        def compile_graph(aten_module, aten_inputs):
            name = f"{job.graph}_{suffix}"
            graph_job = job.replace(graph=name, record=report.new_graph(name),
                                    checks_in_stream_order=_changes_no_input(aten_module))
            partitioned = stage.run(graph_job, GRAPH, aten_module)["partitioned"]
            return make_boxed_func(_runner(partitioned))

        return compile_graph

    return aot_autograd(fw_compiler=compiler("forward"), bw_compiler=compiler("backward"),
                        inference_compiler=compiler("inference"),
                        decompositions=decompositions(kept=extern_kernels()))(captured.graph_module,
                                                                              captured.inputs)


def _changes_no_input(aten_module) -> bool:
    """Whether running an ATen graph leaves the data of every input as it was: no mutating op in it, and no
    input mutation AOTAutograd applies after it (its metadata; unknown without one, so False)."""
    context = torch._guards.TracingContext.try_get()
    metadata = getattr(context, "fw_metadata", None)
    if metadata is None or any(info.mutates_data for info in metadata.input_info):
        return False
    return not any(mutates(node) for node in aten_module.graph.nodes)


def _runner(partitioned):
    """What AOTAutograd calls for a partitioned graph: its generated forward, called straight. GraphModule's
    and nn.Module's call wrappers cost more than a small graph's whole launch."""
    _LazyGraphModule.force_recompile(partitioned)
    return partitioned.forward


def _fx_passes(aten_module, job):
    passes.run_all(aten_module)
    return aten_module


def _lower(specialization: GraphAndInputs, job):
    return lower_graph(specialization.graph_module, list(specialization.inputs), traced_strides=True)


def _stablehlo_text(lowered, job):
    return ".stablehlo.mlir", lowered.text


def _compile(lowered, job):
    return executable.compile_module(lowered.text, job.device)


def _executable_image(compiled, job):
    try:
        image_format, image = compiled.executable.serialize()
    except NotImplementedError:  # the driver keeps no compiled image of its programs
        return None
    return f".{image_format}", image


PIPELINE: tuple[Stage, ...] = (
    Stage("dynamo", DYNAMO, _unchanged, _code_of_captured, "the FX graph Dynamo captured"),
    Stage("aot_autograd", DYNAMO, _aot_autograd, None,
          "forward and backward ATen graphs, core-ATen decompositions applied (decompositions.py)"),
    Stage("aten", GRAPH, _unchanged, _code_of_module, "one ATen graph as AOTAutograd hands it over"),
    Stage("passes", GRAPH, _fx_passes, None, "FX clean-up before partitioning (passes.py)"),
    Stage("partitioned", GRAPH, placement.place, _code_of_module,
          "lowerable groups as CompiledPartitions, the rest eager axon ops (placement.py, partition.py)"),
    Stage("stablehlo", SPECIALIZATION, _lower, _stablehlo_text,
          "one partition lowered for concrete input shapes (lowering/)"),
    Stage("executable", SPECIALIZATION, _compile, _executable_image,
          "the driver's executable, cached in memory and on disk (executable.py)"),
)


def listing(pipeline=PIPELINE) -> str:
    """One line per stage, in order: scope, name, whether it dumps, what it does."""
    return "\n".join(f"{s.scope:<15} {s.name:<13} {'dump' if s.dump else '    '}  {s.summary}" for s in pipeline)
