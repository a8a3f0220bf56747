"""Lowers one FX graph of ATen ops (a partition the table fully covers) to a StableHLO module.

Shapes are concrete: `propagate_shapes` runs the graph under a FakeTensorMode
on fakes of the actual call's inputs, so a graph captured with symbolic sizes
(dynamic=True) lowers once per concrete shape signature.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, field

import torch
import torch.fx
from torch._subclasses.fake_tensor import FakeTensorMode

from ..input_layout import input_layout
from ..node_metadata import facts_for
from ..output_layout import output_layout
from .builder import FunctionBuilder, LoweringError, Value, i64_array
from .context import LoweringContext
from .registry import lowering_for


@dataclass
class LoweredGraph:
    """A module text and how to call it: which inputs are tensors, what comes out."""

    text: str
    tensor_inputs: list[int]        # positions of the graph inputs passed to XLA
    outputs: list                   # per graph output: ("tensor", k) | ("input", i) | ("value", python value)
    output_meta: list               # fake tensors of the results as the graph returns them, in XLA order
    # Run-time checks (checks.py): when present, the last XLA result is their [len(checks), 2] int64 table.
    checks: list = field(default_factory=list)
    # Per tensor input: None (bound as it is), or the InputLayout (input_layout.py) through which it is bound
    # without a copy; the module slices and transposes it back. When a layout is sliced, the module's last
    # argument is one int64 vector: the starts of the call's sliced layouts, concatenated in input order.
    input_layouts: list = field(default_factory=list)
    # Per XLA result (output_layout.py): None (row-major, as traced or as the format writes it), or the
    # OutputLayout that gives it the traced dimension order: the module writes it transposed into that order.
    output_layouts: list = field(default_factory=list)


def propagate_shapes(graph_module: torch.fx.GraphModule, inputs) -> dict[torch.fx.Node, object]:
    """Each node's output (fake value) for these concrete inputs."""
    mode = FakeTensorMode(allow_non_fake_inputs=True)
    with mode:
        fakes = [mode.from_tensor(x) if isinstance(x, torch.Tensor) else x for x in inputs]
    outputs = {}

    class Recorder(torch.fx.Interpreter):
        def run_node(self, node):
            outputs[node] = super().run_node(node)
            return outputs[node]

    with mode:
        Recorder(graph_module).run(*fakes)
    return outputs


def lower_graph(graph_module: torch.fx.GraphModule, inputs, name: str = "main", *,
                traced_strides: bool = False) -> LoweredGraph:
    """`traced_strides`: lay results out in the order the graph's ops give them (output_layout.py), not row-major."""
    outputs = propagate_shapes(graph_module, inputs)
    builder = FunctionBuilder()
    context = LoweringContext(builder)
    env: dict[torch.fx.Node, object] = {}
    arguments: list[Value] = []
    tensor_inputs: list[int] = []
    layouts = [input_layout(value) if isinstance(value, torch.Tensor) else None for value in inputs]
    starts_count = sum(len(layout.order) for layout in layouts if layout is not None and layout.sliced)
    starts = Value("%starts", (starts_count,), torch.int64) if starts_count else None
    starts_read = 0                 # entries of `starts` the sliced layouts before this input take
    placeholders: dict[torch.fx.Node, int] = {}
    for node in graph_module.graph.nodes:
        if node.op == "placeholder":
            value, layout = inputs[len(placeholders)], layouts[len(placeholders)]
            if isinstance(value, torch.Tensor):
                argument = Value(f"%arg{len(arguments)}", tuple(value.shape) if layout is None else layout.region,
                                 value.dtype)
                arguments.append(argument)
                tensor_inputs.append(len(placeholders))
                env[node] = argument
                if layout is not None:
                    env[node] = _read_through(context, argument, layout, starts, starts_read)
                    starts_read += len(layout.order) if layout.sliced else 0
            else:
                env[node] = value  # SymInt / scalar inputs: specialized (part of the cache key)
            placeholders[node] = len(placeholders)
        elif node.op == "get_attr":
            env[node] = _embed_constant(context, _attribute(graph_module, node.target))
        elif node.op == "call_function":
            env[node] = _lower_node(context, node, env, outputs[node])
        elif node.op == "output":
            bound = (tensor_inputs, [layouts[i] for i in tensor_inputs])
            return _finish(context, arguments + ([starts] if starts else []), bound, placeholders, node, env,
                           outputs, name, traced_strides)
        else:
            raise LoweringError(f"unexpected FX node {node.op} {node.target}")
    raise LoweringError("graph has no output")


def _attribute(graph_module: torch.fx.GraphModule, target: str):
    value = graph_module
    for part in target.split("."):
        value = getattr(value, part)
    return value


# Lifted constants (index tables, masks) are embedded in the module; larger ones would bloat every
# specialization's text, so they make the graph run eagerly instead.
_MAX_EMBEDDED_ELEMENTS = 4096


def _embed_constant(context: LoweringContext, value):
    if not isinstance(value, torch.Tensor):
        return value
    if value.numel() > _MAX_EMBEDDED_ELEMENTS:
        raise LoweringError(f"constant tensor of {value.numel()} elements")
    if value.numel() == 0:
        return context.builder.constant(0, value.dtype, tuple(value.shape))
    from torch._subclasses.fake_tensor import unset_fake_temporarily

    with unset_fake_temporarily():
        values = value.detach().cpu().tolist()
    return context.builder.array_constant(values, tuple(value.shape), value.dtype)


def _lower_node(context: LoweringContext, node: torch.fx.Node, env, output):
    if node.target is operator.getitem:
        container, index = node.args
        return env[container][index]
    lowering = lowering_for(node.target)
    if lowering is None:
        raise LoweringError(f"no lowering for {node.target}")
    args = torch.fx.node.map_arg(node.args, lambda n: env[n])
    kwargs = torch.fx.node.map_arg(node.kwargs, lambda n: env[n])
    result = context.call(lowering, node, facts_for(node, output), args, kwargs)
    if isinstance(result, (list, tuple)):
        return list(result)
    if isinstance(result, Value) and isinstance(output, torch.Tensor):
        if tuple(output.shape) != result.shape or output.dtype != result.dtype:
            raise LoweringError(f"{node.target}: lowering produced {result.shape} {result.dtype}, "
                                f"expected {tuple(output.shape)} {output.dtype}")
    return result


def _read_through(context: LoweringContext, region: Value, layout, starts: Value | None, offset: int) -> Value:
    """The input a strided binding stands for: its box sliced out of the region at its starts (entries
    `offset`... of the `starts` argument), in its own dimension order."""
    box = region
    if layout.sliced:
        corner = [context.reshape(context.slice(starts, [offset + d], [offset + d + 1]), ())
                  for d in range(region.rank)]
        box = context.op("stablehlo.dynamic_slice", [region, *corner], layout.shape, region.dtype,
                         f"slice_sizes = {i64_array(layout.shape)}")
    return context.transpose(box, [layout.order.index(d) for d in range(len(layout.order))])


def _finish(context, arguments, bound, placeholders, output_node, env, node_outputs, name,
            traced_strides) -> LoweredGraph:
    """The module text; `bound` is (tensor_inputs, input_layouts) of LoweredGraph."""
    builder = context.builder
    results: list[Value] = []
    result_meta: list = []
    result_layouts: list = []
    outputs: list = []
    flat_outputs, _ = torch.utils._pytree.tree_flatten(output_node.args[0])
    for node in flat_outputs:
        value = env[node] if isinstance(node, torch.fx.Node) else node
        if isinstance(value, Value):
            if isinstance(node, torch.fx.Node) and node.op == "placeholder":
                # The graph returns its input itself; an op that merely lowers to its input (floor of an integer
                # tensor) returns a new tensor, so it stays an XLA result (copied if XLA hands back the input).
                outputs.append(("input", placeholders[node]))
            else:
                outputs.append(("tensor", len(results)))
                meta = node_outputs[node]
                layout = output_layout(meta) if traced_strides else None
                if layout is not None:
                    value = context.transpose(value, layout.order)
                results.append(value)
                result_meta.append(meta)
                result_layouts.append(layout)
        else:
            outputs.append(("value", value))
    if context.checks:
        rows = [context.reshape(row, (1, 2)) for _, row in context.checks]
        table = rows[0] if len(rows) == 1 else context.op("stablehlo.concatenate", rows, (len(rows), 2),
                                                          torch.int64, "dimension = 0 : i64")
        results.append(table)
    signature = ", ".join(f"{a.name}: {a.type}" for a in arguments)
    result_types = ", ".join(v.type for v in results)
    body = "\n    ".join(builder.lines)
    returns = ", ".join(v.name for v in results)
    text = (f"module @axon_graph attributes {{mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32}} {{\n"
            f"  func.func public @{name}({signature}) -> ({result_types}) {{\n"
            f"    {body}\n"
            f'    "func.return"({returns}) : ({result_types}) -> ()\n'
            f"  }}\n}}\n")
    tensor_inputs, input_layouts = bound
    return LoweredGraph(text, tensor_inputs, outputs, result_meta, [check for check, _ in context.checks],
                        input_layouts, result_layouts)
