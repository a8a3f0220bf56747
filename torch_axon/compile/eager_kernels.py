"""Compiled eager kernels: one ATen call lowered to a StableHLO executable for its exact call shape.

This is the second eager kernel provider (csrc/compiled_execution/). The C++ generic kernel asks `lower` once
per call shape (operator, each tensor's dtype and sizes, every other argument's value) and keeps the answer:
an executable handle and which of the call's tensors it binds, or None, which sends that call shape to the
host kernels for good. Later calls of the same shape launch the executable without entering Python.

The call becomes a one-node FX graph over the lowering table the compile path uses (lowering/), so an op
compiles here exactly when `torch.compile(backend="axon")` would lower it. In-place overloads (`add_`) lower
their functional twin (`add`), whose result the launch writes into `self`. Calls the table cannot express
exactly are declined: ops without a lowering, lowerings that need run-time checks (bounds, ties: those
raise or decide on the host), results whose dtype or shape differ from the call's.
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


def _one_node_graph(target, schema, args) -> torch.fx.GraphModule:
    graph = torch.fx.Graph()
    count = 0

    def placeholder():
        nonlocal count
        count += 1
        return graph.placeholder(f"t{count - 1}")

    positional, keywords = [], {}
    for argument, value in zip(schema.arguments, args):
        if isinstance(value, torch.Tensor):
            value = placeholder()
        elif isinstance(value, (list, tuple)):
            value = [placeholder() if isinstance(item, torch.Tensor) else item for item in value]
        if argument.kwarg_only:
            keywords[argument.name] = value
        else:
            positional.append(value)
    call = graph.call_function(target, tuple(positional), keywords)
    returns = len(target._schema.returns)
    if returns == 1:
        graph.output((call,))
    else:
        graph.output(tuple(graph.call_function(operator.getitem, (call, i)) for i in range(returns)))
    return torch.fx.GraphModule(torch.nn.Module(), graph)


def _decline(name: str, reason: str):
    with _lock:
        declined[name][reason] += 1
    return None


def lower(name: str, overload: str, args: list, results: list, device: int):
    """(executable handle, positions of the bound inputs among the call's tensors), or None.

    `args` are the call's arguments in schema order (axon tensors, Python values); `results` the tensors
    the launch must write, in the operator's return order (for in-place ops, `self`).
    """
    target = _target(name, overload)
    if target is None or lowering_for(target) is None:
        return _decline(name, "no lowering")
    if target._schema.is_mutable:
        return _decline(name, "its functional form mutates")
    schema = target._schema
    if len(schema.arguments) != len(args):
        return _decline(name, "the functional form takes other arguments")
    try:
        graph_module = _one_node_graph(target, schema, args)
        inputs = _flatten_tensors(args)
        lowered = lower_graph(graph_module, inputs)
    except (LoweringError, NotImplementedError, RuntimeError, TypeError, ValueError, IndexError) as error:
        return _decline(name, f"lowering: {type(error).__name__}")
    if lowered.checks:
        return _decline(name, "needs run-time checks")
    if lowered.outputs != [("tensor", i) for i in range(len(results))]:
        return _decline(name, "results are not fresh tensors")
    for meta, result in zip(lowered.output_meta, results):
        if tuple(meta.shape) != tuple(result.shape) or meta.dtype != result.dtype:
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
