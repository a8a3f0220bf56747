"""Splits an ATen graph into partitions the lowering table covers and nodes that run eagerly on axon.

A node is lowered when the table has its op, it is not a random op (those run
eagerly on axon's Philox generator, so compiled dropout draws exactly what
eager dropout draws under the same seed), an extern kernel (EXTERN_KERNELS),
a view the graph returns (returned_views) or host size arithmetic, every
tensor it touches is on axon, no argument is a symbolic float or bool, and a
trial lowering of the node alone succeeds. Maximal groups of such nodes
become submodules (`fused_N`) that `CompiledPartition` replaces; everything
else stays in the parent graph and runs as ordinary axon ops.
"""

from __future__ import annotations

import operator
import os

import torch
import torch.fx
from torch.fx.experimental.symbolic_shapes import optimization_hint
from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
from torch.fx.passes.operator_support import OperatorSupportBase

from .lowering import LoweringError, lowering_for
from .lowering.builder import FunctionBuilder, Value
from .lowering.context import LoweringContext
from .node_metadata import facts_for

aten = torch.ops.aten

# Ops a backend may prefer to serve with its tuned library kernels instead of
# compiler-generated code, like Inductor's extern kernels: they run as axon ops
# between compiled partitions, kept whole by the decompositions. By default
# convolutions and attention do. XLA:CPU's convolution gradients take about
# twice the time of oneDNN's: the CNN training step ran 0.61x axon eager with
# them extern against 0.41x compiled. Decomposed attention runs at about 0.6x
# of the CPU's flash kernels, and taking it out of the executables made the GPT
# training step 8-12% faster (in one process, each configuration its own
# compiled function; docs/benchmarks.md, 2026-12-04). 2-D max and average
# pooling forwards are axon's own kernels, 4-12x the CPU's (and XLA's lowering
# of them); as extern kernels the CNN's compiled training step went from
# 16.0-17.4 to 12.8-13.7 ms, inference unchanged (2026-12-05). Matrix
# products stay compiled: XLA's dots are close to MKL's here, and taking them
# out as well gained nothing in the GPT step and lost 7% in the MLP's.
EXTERN_GROUPS = {
    "mm": (aten.mm.default,),
    "bmm": (aten.bmm.default,),
    "addmm": (aten.addmm.default,),
    "baddbmm": (aten.baddbmm.default,),
    "convolution": (aten.convolution.default, aten.convolution_backward.default),
    "attention": (aten._scaled_dot_product_flash_attention_for_cpu.default,
                  aten._scaled_dot_product_flash_attention_for_cpu_backward.default),
    "pooling": (aten.max_pool2d_with_indices.default, aten.avg_pool2d.default),
}
EXTERN_KERNELS = {op for ops in EXTERN_GROUPS.values() for op in ops}
EXTERN_REASON = "extern kernel: runs as the axon library op"
DEFAULT_EXTERN = "convolution,attention,pooling"


def extern_kernels() -> set:
    """AXON_COMPILE_EXTERN: unset for DEFAULT_EXTERN, "0" for none, "1" for all of EXTERN_KERNELS, or a comma
    list of EXTERN_GROUPS names ("convolution,mm")."""
    setting = os.environ.get("AXON_COMPILE_EXTERN", DEFAULT_EXTERN).strip()
    if setting in ("", "0"):
        return set()
    if setting == "1":
        return set(EXTERN_KERNELS)
    names = {name.strip() for name in setting.split(",")}
    unknown = names - set(EXTERN_GROUPS)
    if unknown:
        raise ValueError(f"AXON_COMPILE_EXTERN: unknown {sorted(unknown)}; known: {sorted(EXTERN_GROUPS)}, 0 or 1")
    return {op for name in names for op in EXTERN_GROUPS[name]}


def _hint(value) -> int:
    return optimization_hint(value, fallback=8) if isinstance(value, torch.SymInt) else int(value)


def _is_axon_tensor(value) -> bool:
    return isinstance(value, torch.Tensor) and value.device.type == "axon"


def _concrete(value):
    """The node value with symbolic sizes replaced by their hints (trial lowering needs numbers)."""
    if isinstance(value, torch.Tensor):
        return torch.empty([_hint(s) for s in value.shape], dtype=value.dtype, device="meta")
    if isinstance(value, (list, tuple)):
        return type(value)(_concrete(v) for v in value)
    if isinstance(value, torch.SymInt):
        return _hint(value)
    return value


SIZE_ARITHMETIC_REASON = "symbolic size arithmetic (host integers, not device work)"


def why_not_lowered(node: torch.fx.Node) -> str | None:
    """None if `node` can be lowered, else the reason (shown in the report and in strict mode)."""
    if node.op != "call_function":
        return "not an operator call"
    if not isinstance(node.target, torch._ops.OpOverload) and isinstance(node.meta.get("val"), (torch.SymInt, int)):
        return SIZE_ARITHMETIC_REASON
    if node.target is operator.getitem:
        source = node.args[0]
        return why_not_lowered(source) if isinstance(source, torch.fx.Node) else "getitem of a constant"
    if node.target in extern_kernels():
        return EXTERN_REASON
    lowering = lowering_for(node.target)
    if lowering is None:
        return "no StableHLO lowering"
    if isinstance(node.target, torch._ops.OpOverload) and torch.Tag.nondeterministic_seeded in node.target.tags:
        return "random op (runs on axon's generator)"
    values = [node.meta.get("val")]
    values += [a.meta.get("val") for a in node.all_input_nodes]
    for value in values:
        for leaf in torch.utils._pytree.tree_leaves(value):
            if isinstance(leaf, torch.Tensor) and not _is_axon_tensor(leaf):
                return f"tensor on {leaf.device}"
            if isinstance(leaf, (torch.SymFloat, torch.SymBool)):
                return "symbolic float/bool argument"
    return _trial_lowering(node, lowering)


def _trial_lowering(node: torch.fx.Node, lowering) -> str | None:
    """Lowers `node` alone, its inputs as function arguments, with symbolic sizes at their hints."""
    context = LoweringContext(FunctionBuilder())
    try:
        env = {}
        for index, source in enumerate(node.all_input_nodes):
            value = _concrete(source.meta.get("val"))
            env[source] = Value(f"%arg{index}", tuple(value.shape), value.dtype) if isinstance(
                value, torch.Tensor) else value
        args = torch.fx.node.map_arg(node.args, lambda n: env[n])
        kwargs = torch.fx.node.map_arg(node.kwargs, lambda n: env[n])
        args, kwargs = _concrete(args), {k: _concrete(v) for k, v in kwargs.items()}
        context.call(lowering, node, facts_for(node, _concrete(node.meta.get("val"))), args, kwargs)
        return None
    except LoweringError as error:
        return str(error) or "lowering refused these arguments"
    except Exception as error:  # noqa: BLE001  a lowering bug must not break the model: run the node eagerly
        return f"lowering failed: {type(error).__name__}: {error}"


RETURNED_VIEW_REASON = "returned view (runs as an axon view of its base, keeping the aliasing)"


def _is_view(node: torch.fx.Node) -> bool:
    """Whether `node` is an ATen view op (its result aliases its first argument), or an item of one's results."""
    if node.op != "call_function":
        return False
    if node.target is operator.getitem:
        return isinstance(node.args[0], torch.fx.Node) and _is_view(node.args[0])
    if not isinstance(node.target, torch._ops.OpOverload):
        return False
    returns = node.target._schema.returns
    return bool(returns) and returns[0].alias_info is not None and not returns[0].alias_info.is_write


def returned_views(graph: torch.fx.Graph) -> set[torch.fx.Node]:
    """The view nodes on each chain of views that ends at a graph output.

    Such an output aliases its base (a graph input, or another output or intermediate). AOTAutograd
    rebuilds or trusts it at run time from the returned tensor itself: with symbolic shapes it takes the
    sizes, strides and storage offset of what the backend returned, so a compiled copy (offset 0) would put
    `x.chunk(2)[-1]` at the first chunk, and a copy of an output's view would not see later writes to that
    output. Run eagerly they are real views of their base: right offsets and aliasing, and no copy."""
    output = next(n for n in reversed(graph.nodes) if n.op == "output")
    views: set[torch.fx.Node] = set()
    for node in torch.utils._pytree.tree_leaves(output.args[0]):
        while isinstance(node, torch.fx.Node) and _is_view(node) and node not in views:
            views.add(node)
            node = node.args[0]
    return views


def separate_returned_views(graph_module: torch.fx.GraphModule) -> int:
    """Gives the in-graph users of returned views their own copy of the view chain; returns how many inputs
    were rewired.

    A returned view runs eagerly (returned_views), so a compiled user of it would take it as an outside
    input: AOTAutograd's forward graphs return many views as saved activations (q, k, v split from one
    projection, a weight's transpose), and the GPT forward fell into 31 partitions, each bound to strided
    copies. The copy is an ordinary view op the user's partition lowers; the returned node keeps the aliasing."""
    graph = graph_module.graph
    views = returned_views(graph)
    copies: dict[torch.fx.Node, torch.fx.Node] = {}

    def copy_of(node):
        if not isinstance(node, torch.fx.Node) or node not in views:
            return node
        if node not in copies:
            args = torch.fx.node.map_arg(node.args, copy_of)
            kwargs = torch.fx.node.map_arg(node.kwargs, copy_of)
            with graph.inserting_after(node):
                copies[node] = graph.create_node(node.op, node.target, args, kwargs, name=f"{node.name}_in_graph")
            copies[node].meta = dict(node.meta)
        return copies[node]

    rewired = 0
    for view in list(views):
        for user in list(view.users):
            if user.op == "output" or user in views or user in copies.values() or mutates(user) or _eager(user):
                continue
            user.replace_input_with(view, copy_of(view))
            rewired += 1
    if rewired:
        graph.lint()
        graph_module.recompile()
    return rewired


def _eager(node: torch.fx.Node) -> bool:
    """Whether `node` is an operator that runs eagerly whatever its arguments."""
    if not isinstance(node.target, torch._ops.OpOverload):
        return False
    return node.target in extern_kernels() or lowering_for(node.target) is None


def mutates(node: torch.fx.Node) -> bool:
    """Whether `node` is an operator that writes one of its arguments."""
    return isinstance(node.target, torch._ops.OpOverload) and node.target._schema.is_mutable


class _LoweringSupport(OperatorSupportBase):
    def __init__(self, eager_views: set[torch.fx.Node]) -> None:
        self.reasons: dict[torch.fx.Node, str] = {}
        self.eager_views = eager_views

    def is_node_supported(self, submodules, node: torch.fx.Node) -> bool:
        reason = RETURNED_VIEW_REASON if node in self.eager_views else why_not_lowered(node)
        if reason is not None and node.op == "call_function":
            self.reasons[node] = reason
        return reason is None


def partition(graph_module: torch.fx.GraphModule):
    """Fuses lowerable nodes into `fused_N` submodules; returns (module, {eager node: reason})."""
    separate_returned_views(graph_module)
    support = _LoweringSupport(returned_views(graph_module.graph))
    partitioner = CapabilityBasedPartitioner(graph_module, support, allows_single_node_partition=True)
    fused = partitioner.fuse_partitions(partitioner.propose_partitions())
    return fused, support.reasons
