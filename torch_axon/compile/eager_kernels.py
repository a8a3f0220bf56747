"""Compiled eager kernels: one ATen call lowered to a StableHLO executable for its exact call shape.

This is the second eager kernel provider (csrc/compiled_execution/). The C++ generic kernel asks `lower` once
per call shape (operator, each tensor's dtype and sizes, every other argument's value) and keeps the answer:
an executable handle and which of the call's tensors it binds, or None, which sends that call shape to the
host kernels for good. Later calls of the same shape launch the executable without entering Python.

The call is traced into an FX graph with the compile path's core-ATen decompositions (decompositions.py)
and lowered with its table (lowering/), so an op compiles here exactly when `torch.compile(backend="axon")`
would lower it: `gelu_backward` or `addcdiv` become the elementwise ops they decompose into. In-place
overloads (`add_`) lower their functional twin (`add`), whose result the launch writes into `self`. Calls
the table cannot express exactly are declined: operators without a lowering (for every call shape at once),
lowerings that need run-time checks (bounds, ties: those raise or decide on the host), results whose dtype
or shape differ from the call's.
"""

from __future__ import annotations

import collections
import operator
import threading

import torch
import torch.fx

from . import executable
from .lowering import LoweringError
from .lowering.graph import lower_graph
from .lowering.registry import lowering_for

# Executables handed to C++ by handle: kept alive here for the life of the process.
_kept: list = []
_lock = threading.Lock()
# Why call shapes were declined, per operator: "aten::nonzero" -> {"no lowering": 3}.
declined: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
compiled: collections.Counter = collections.Counter()


def _target(name: str, overload: str):
    """The OpOverload to lower for operator `name` (ns::op) and `overload`: itself, or the functional
    twin of an in-place overload. None when there is none."""
    namespace, _, op_name = name.partition("::")
    functional = op_name[:-1] if op_name.endswith("_") and not op_name.endswith("__") else op_name
    packet = getattr(getattr(torch.ops, namespace, None), functional, None)
    if packet is None:
        return None
    try:
        return getattr(packet, overload or "default")
    except AttributeError:
        return None


def _flatten_tensors(args) -> list[torch.Tensor]:
    flat = []
    for value in args:
        if isinstance(value, torch.Tensor):
            flat.append(value)
        elif isinstance(value, (list, tuple)):
            flat.extend(item for item in value if isinstance(item, torch.Tensor))
    return flat


def _memory_order(tensor: torch.Tensor) -> list[int]:
    """The tensor's dimensions from outermost to innermost in memory: `tensor.permute(order)` is contiguous
    (the identity for a contiguous tensor; C++ only offers dense tensors)."""
    if tensor.is_contiguous():
        return list(range(tensor.dim()))
    return sorted(range(tensor.dim()), key=lambda d: (-tensor.stride(d), d))


def _inverse(order: list[int]) -> list[int]:
    inverse = [0] * len(order)
    for position, dim in enumerate(order):
        inverse[dim] = position
    return inverse


def _is_identity(order: list[int]) -> bool:
    return order == sorted(order)


def _traced_graph(target, schema, args, input_orders, result_orders) -> torch.fx.GraphModule:
    """The call as an FX graph over its tensors' memory (each input a contiguous array in its memory order,
    each result returned in its memory order), with core-ATen decompositions applied as the compile path
    applies them (decompositions.py): an op the table lowers stays one node, others become the ops they
    decompose into."""
    from torch.fx.experimental.proxy_tensor import make_fx

    def call(*physical):
        supply = iter(p if _is_identity(order) else p.permute(_inverse(order))
                      for p, order in zip(physical, input_orders))

        def take(value):
            if isinstance(value, torch.Tensor):
                return next(supply)
            if isinstance(value, (list, tuple)):
                return [next(supply) if isinstance(item, torch.Tensor) else item for item in value]
            return value

        positional, keywords = [], {}
        for argument, value in zip(schema.arguments, args):
            if argument.kwarg_only:
                keywords[argument.name] = take(value)
            else:
                positional.append(take(value))
        result = target(*positional, **keywords)
        results = tuple(result) if isinstance(result, (tuple, list)) else (result,)
        return tuple(r if _is_identity(order) else r.permute(order) for r, order in zip(results, result_orders))

    inputs = [t.permute(order) for t, order in zip(_flatten_tensors(args), input_orders)]
    return make_fx(call, decomposition_table=_decompositions(), tracing_mode="fake")(*inputs)


_table = None


def _decompositions():
    global _table
    if _table is None:
        from .decompositions import decompositions

        _table = decompositions()
    return _table


def _unlowered(graph_module: torch.fx.GraphModule) -> list[str]:
    return sorted({str(node.target) for node in graph_module.graph.nodes
                   if node.op == "call_function" and node.target is not operator.getitem
                   and lowering_for(node.target) is None})


def _decline(name: str, reason: str, whole_operator: bool = False):
    """None: host kernels for this call shape; False: for every call of the operator."""
    with _lock:
        declined[name][reason] += 1
    return False if whole_operator else None


def lower(name: str, overload: str, args: list, results: list, device: int):
    """(executable handle, positions of the bound inputs among the call's tensors); None to leave this call
    shape to host kernels; False to leave the whole operator to them.

    `args` are the call's arguments in schema order (axon tensors, Python values); `results` the tensors
    the launch must write, in the operator's return order (for in-place ops, `self`).
    """
    target = _target(name, overload)
    if target is None or target._schema.is_mutable or len(target._schema.arguments) != len(args):
        return _decline(name, "no functional form", whole_operator=True)
    if lowering_for(target) is None and target not in _decompositions():
        return _decline(name, "no lowering", whole_operator=True)
    inputs = _flatten_tensors(args)
    input_orders = [_memory_order(t) for t in inputs]
    result_orders = [_memory_order(r) for r in results]
    if len(target._schema.returns) != len(results):
        return _decline(name, "returns differ from the functional form's", whole_operator=True)
    try:
        graph_module = _traced_graph(target, target._schema, args, input_orders, result_orders)
    except Exception as error:  # noqa: BLE001  any tracing failure leaves this call to the host kernels
        return _decline(name, f"tracing: {type(error).__name__}")
    unlowered = _unlowered(graph_module)
    if unlowered:
        return _decline(name, f"decomposes into {', '.join(unlowered)}", whole_operator=True)
    try:
        lowered = lower_graph(graph_module, [t.permute(order) for t, order in zip(inputs, input_orders)])
    except (LoweringError, NotImplementedError, RuntimeError, TypeError, ValueError, IndexError) as error:
        return _decline(name, f"lowering: {type(error).__name__}")
    if lowered.checks:
        return _decline(name, "needs run-time checks")
    if lowered.outputs != [("tensor", i) for i in range(len(results))]:
        return _decline(name, "results are not fresh tensors")
    for meta, result, order in zip(lowered.output_meta, results, result_orders):
        if tuple(meta.shape) != tuple(result.permute(order).shape) or meta.dtype != result.dtype:
            return _decline(name, "result dtype or shape differs")
    try:
        program = executable.compile_module(lowered.text, device)
    except RuntimeError:
        return _decline(name, "the driver rejected the module")
    with _lock:
        _kept.append(program.executable)
        compiled[name] += 1
    return program.executable.handle, list(lowered.tensor_inputs)


def report() -> str:
    """Which operators compiled how many call shapes, and why others were declined."""
    lines = [f"compiled: {sum(compiled.values())} call shapes of {len(compiled)} operators"]
    for name, count in compiled.most_common():
        lines.append(f"  {name}: {count}")
    if declined:
        lines.append("declined (host kernels):")
        for name, reasons in sorted(declined.items()):
            lines.append(f"  {name}: " + ", ".join(f"{reason} ×{n}" for reason, n in reasons.items()))
    return "\n".join(lines)
