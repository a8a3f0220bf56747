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
lowerings whose run-time checks cannot be reported in stream order (ties, which decide on the host; index
bounds of calls that write the caller's tensors, in place or out=, or on a driver without host functions),
results whose dtype or shape differ from the call's. A call's failed bounds check raises the CPU kernel's
exception at the next synchronizing call, as a host kernel's own failure does.
"""

from __future__ import annotations

import collections
import math
import operator
import threading

import torch
import torch.fx

from . import executable
from .lowering import LoweringError
from .lowering.checks import RAISE
from .lowering.graph import lower_graph
from .lowering.registry import lowering_for

_lock = threading.Lock()
# Why call shapes were declined, per operator: "aten::nonzero" -> {"no lowering": 3}.
declined: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
compiled: collections.Counter = collections.Counter()


def _target(name: str, overload: str):
    """(the OpOverload to lower, positions of the call's out= arguments) for operator `name` (ns::op) and
    `overload`: itself; the functional twin of an in-place overload (`add_` -> `add`); or the overload of
    the same arguments without `out` (`mul.out` -> `mul.Tensor`). None when there is none."""
    namespace, _, op_name = name.partition("::")
    packet = getattr(getattr(torch.ops, namespace, None), op_name, None)
    called = getattr(packet, overload or "default", None) if packet is not None else None
    if called is None:
        return None
    arguments = called._schema.arguments
    outs = [i for i, argument in enumerate(arguments) if argument.is_out]
    wanted = [(a.name, str(a.type)) for a in arguments if not a.is_out]
    if outs:
        twin = _overload_taking(packet, wanted)
    elif op_name.endswith("_") and not op_name.endswith("__"):
        # Matched by argument names and types: pow_.Scalar's twin is pow.Tensor_Scalar, not pow.Scalar.
        twin = _overload_taking(getattr(getattr(torch.ops, namespace), op_name[:-1], None), wanted)
    else:
        twin = called
    return (twin, outs) if twin is not None else None


def _overload_taking(packet, wanted):
    """The functional overload of `packet` whose arguments are `wanted` ((name, type) pairs), or None."""
    for candidate in packet.overloads() if packet is not None else ():
        twin = getattr(packet, candidate)
        if not twin._schema.is_mutable and [(a.name, str(a.type)) for a in twin._schema.arguments] == wanted:
            return twin
    return None


def _tensor_positions(args, outs) -> dict:
    """{"inputs": the C++ position of each tensor the functional form takes, "count": all the call's tensors}."""
    inputs, count = [], 0
    for i, value in enumerate(args):
        for _ in _flatten_tensors([value]):
            if i not in outs:
                inputs.append(count)
            count += 1
    return {"inputs": inputs, "count": count}


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
    graph_module = make_fx(call, decomposition_table=_decompositions(), tracing_mode="fake")(*inputs)
    # Every node comes from the one call, whose errors its run-time checks raise (take's, not index's).
    for node in graph_module.graph.nodes:
        if node.op == "call_function":
            node.meta.setdefault("original_aten", target)
    return graph_module


_table = None


def _decompositions():
    global _table
    if _table is None:
        from .decompositions import decompositions

        _table = decompositions()
    return _table


def _reads_what_it_writes(args, results, in_place: bool) -> bool:
    """Whether a tensor the call writes is also another operand (C++ lets only exact matches through); an
    in-place call's `self` does not count (its program reads `self` before writing it)."""
    written = {(r.data_ptr(), tuple(r.shape), r.stride()) for r in results}
    operands = _flatten_tensors(args)[1 if in_place else 0:]
    return any((t.data_ptr(), tuple(t.shape), t.stride()) in written for t in operands)


def _elementwise(graph_module: torch.fx.GraphModule) -> bool:
    """Only pointwise ops (and the memory-order permutes): each result element reads its own input
    elements, so a program that reads before it writes gives what the CPU's in-place kernel gives."""
    for node in graph_module.graph.nodes:
        if node.op != "call_function" or node.target is torch.ops.aten.permute.default:
            continue
        if torch.Tag.pointwise not in getattr(node.target, "tags", ()):
            return False
    return True


def _unlowered(graph_module: torch.fx.GraphModule) -> list[str]:
    return sorted({str(node.target) for node in graph_module.graph.nodes
                   if node.op == "call_function" and node.target is not operator.getitem
                   and lowering_for(node.target) is None})


# The lowering table computes float16/bfloat16 ops in those dtypes, rounding after every step, where the CPU
# computes in float32 and rounds once: the results differ in the last bits, so these stay host kernels.
_ROUNDED_DIFFERENTLY = (torch.float16, torch.bfloat16)

# Operators whose CPU kernels raise for some input values, which a program cannot report: integer division
# by zero (ZeroDivisionError), binary cross-entropy outside [0, 1], and the linear-algebra kernels that raise
# on singular or non-positive-definite input.
_INTEGER_DIVISIONS = {"aten::div", "aten::floor_divide", "aten::remainder", "aten::fmod"}
_RAISING = ("aten::binary_cross_entropy", "aten::linalg_", "aten::_linalg_", "aten::cholesky", "aten::inverse",
            "aten::lu", "aten::triangular_solve")


def _raises_on_values(target, tensors) -> bool:
    name = target._schema.name
    if name.startswith(_RAISING):
        return True
    return name in _INTEGER_DIVISIONS and not any(t.is_floating_point() or t.is_complex() for t in tensors)


class _Declined(Exception):
    def __init__(self, reason: str, whole_operator: bool = False):
        super().__init__(reason)
        self.reason, self.whole_operator = reason, whole_operator


def _decline(name: str, reason: str, whole_operator: bool = False):
    """None: host kernels for this call shape; False: for every call of the operator."""
    with _lock:
        declined[name][reason] += 1
    return False if whole_operator else None


def lower(name: str, overload: str, args: list, results: list, device: int):
    """(executable, bound inputs, operand dtypes, run-time checks); None to leave this call shape to host
    kernels; False to leave the whole operator to them.

    `args` are the call's arguments in schema order (axon tensors, Python values); `results` the tensors
    the launch must write, in the operator's return order (for in-place ops, `self`). The bound inputs are
    positions among the call's tensors (argument order), then past them among its floating values: those
    become 0-d operands of the dtypes returned, and the program serves every such value (compiled_kernel.h).
    """
    found = _target(name, overload)
    if found is None:
        return _decline(name, "no functional form", whole_operator=True)
    target, outs = found
    # The call's tensors, numbered as C++ numbers them (out= tensors included); the program binds the others.
    positions = _tensor_positions(args, outs)
    args = [value for i, value in enumerate(args) if i not in outs]
    if target._schema.is_mutable or len(target._schema.arguments) != len(args):
        return _decline(name, "no functional form", whole_operator=True)
    if lowering_for(target) is None and target not in _decompositions():
        return _decline(name, "no lowering", whole_operator=True)
    if len(target._schema.returns) != len(results):
        return _decline(name, "returns differ from the functional form's", whole_operator=True)
    tensors = _flatten_tensors(args) + list(results)
    if any(t.dtype in _ROUNDED_DIFFERENTLY for t in tensors):
        return _decline(name, "float16/bfloat16 (the lowerings round each step; the CPU computes in float32)")
    if _raises_on_values(target, tensors):
        return _decline(name, "the CPU kernel raises on some values",
                        whole_operator=target._schema.name not in _INTEGER_DIVISIONS)
    floats = _floats(args)
    attempts = [True, False] if floats and all(_generic(value) for value in floats) else [False]
    for operands in attempts:
        try:
            lowered, dtypes = _lower_call(target, args, results, operands, in_place=not outs and name.endswith("_"),
                                          writes_operands=bool(outs) or name.endswith("_"))
            break
        except _Declined as declined_call:
            if not operands:
                return _decline(name, declined_call.reason, declined_call.whole_operator)
    try:
        program = executable.compile_module(lowered.text, device)
    except RuntimeError:
        return _decline(name, "the driver rejected the module")
    with _lock:
        compiled[name] += 1
    inputs, count = positions["inputs"], positions["count"]
    bound = [inputs[p] if p < len(inputs) else count + p - len(inputs) for p in lowered.tensor_inputs]
    # The executable object itself: C++ keeps a reference to it for the life of the process.
    checks = [(check.error.__name__, f"{name}: {check.message}") for check in lowered.checks]
    return program.executable, bound, [str(d).removeprefix("torch.") for d in dtypes], checks


def _checks_reportable(checks, writes_operands: bool, device: torch.device) -> bool:
    """Whether a program's run-time checks can be reported as a host kernel reports its own failure, at the
    next synchronizing call (csrc/core/stream_checks.h): each raises (ties, which rerun on the host, cannot),
    the call writes none of the caller's tensors (an in-place call's `self` or its `out=` tensors would hold
    the program's in-range writes when the error comes), and the driver runs host functions."""
    return (not writes_operands and all(check.on_failure == RAISE for check in checks)
            and executable.reports_checks_in_stream_order(device.index))


def _lower_call(target, args, results, operands: bool, in_place: bool, writes_operands: bool):
    """(LoweredGraph, operand dtypes) of the call; raises _Declined. `writes_operands`: the results are the
    caller's tensors (in place or out=), not new ones."""
    inputs = _flatten_tensors(args)
    input_orders = [_memory_order(t) for t in inputs]
    result_orders = [_memory_order(r) for r in results]
    dtypes = []
    try:
        if operands:
            graph_module, dtypes = _operand_graph(target, args, input_orders, result_orders)
        else:
            graph_module = _traced_graph(target, target._schema, args, input_orders, result_orders)
    except _Declined:
        raise
    except Exception as error:  # noqa: BLE001  any tracing failure leaves this call to the host kernels
        raise _Declined(f"tracing: {type(error).__name__}") from None
    if _reads_what_it_writes(args, results, in_place) and not _elementwise(graph_module):
        raise _Declined("writes an operand it reads, and is not elementwise")
    unlowered = _unlowered(graph_module)
    if unlowered:
        raise _Declined(f"decomposes into {', '.join(unlowered)}")
    device = (inputs or results)[0].device
    bound = [t.permute(order) for t, order in zip(inputs, input_orders)]
    bound += [torch.empty((), dtype=dtype, device=device) for dtype in dtypes]
    try:
        lowered = lower_graph(graph_module, bound)
    except (LoweringError, NotImplementedError, RuntimeError, TypeError, ValueError, IndexError) as error:
        raise _Declined(f"lowering: {type(error).__name__}") from None
    if lowered.checks and not _checks_reportable(lowered.checks, writes_operands, device):
        raise _Declined("needs run-time checks it cannot report in stream order")
    if any(layout is not None for layout in lowered.input_layouts):
        raise _Declined("reads a strided input")  # the C++ side binds the operands as they are
    if lowered.outputs != [("tensor", i) for i in range(len(results))]:
        raise _Declined("results are not fresh tensors")
    for meta, result, order in zip(lowered.output_meta, results, result_orders):
        if tuple(meta.shape) != tuple(result.permute(order).shape) or meta.dtype != result.dtype:
            raise _Declined("result dtype or shape differs")
    return lowered, dtypes


# ---- floating values as operands -------------------------------------------------------------------------

# Traces run with stand-in values from two distinct series (exact in float32, unlike any decomposition's
# constants): a literal that differs between the traces yet is no stand-in was computed from a value, so the
# program cannot take that value as an operand.
# The two series differ in sign, magnitude and step, so that a literal computed from a value's sign, size or
# difference from another value also differs between the traces.
_STAND_INS = ((1536.0078125, 0.0078125), (-2049.015625, -0.01171875))


def _floats(args) -> list[float]:
    """The call's floating values in argument order (as the C++ key reads them)."""
    found = []
    for value in args:
        if type(value) is float:
            found.append(value)
        elif isinstance(value, (list, tuple)):
            found.extend(item for item in value if type(item) is float)
    return found


def _generic(value: float) -> bool:
    """Values one operand program serves: decompositions may special-case 0 and ±1 (addmm's beta == 0)."""
    return math.isfinite(value) and value not in (0.0, 1.0, -1.0)


def _with_values(args, values):
    supply = iter(values)

    def swap(value):
        return next(supply) if type(value) is float else value

    return [[swap(item) for item in value] if isinstance(value, (list, tuple)) else swap(value) for value in args]


def _operand_graph(target, args, input_orders, result_orders):
    """The call's graph with each floating value read from a new 0-d placeholder, and their dtypes."""
    count = len(_floats(args))
    traces = []
    for base, step in _STAND_INS:
        values = [base + k * step for k in range(count)]
        traces.append((values, _traced_graph(target, target._schema, _with_values(args, values), input_orders,
                                             result_orders)))
    (first_values, graph_module), (second_values, other) = traces
    nodes, other_nodes = list(graph_module.graph.nodes), list(other.graph.nodes)
    if len(nodes) != len(other_nodes):
        raise _Declined("the graph depends on a value")
    index = {node: i for i, node in enumerate(nodes)} | {node: i for i, node in enumerate(other_nodes)}
    uses: list[tuple[torch.fx.Node, object, int]] = []  # (node, argument position or name, value index)
    for node, twin in zip(nodes, other_nodes):
        if node.op != twin.op or node.target != twin.target:
            raise _Declined("the graph depends on a value")
        if node.op == "get_attr":
            mine, theirs = _attribute(graph_module, node.target), _attribute(other, twin.target)
            if not (isinstance(mine, torch.Tensor) and isinstance(theirs, torch.Tensor)
                    and mine.shape == theirs.shape and mine.dtype == theirs.dtype
                    and torch.equal(mine.cpu(), theirs.cpu())):
                raise _Declined("a constant depends on a value")
            continue
        if node.op != "call_function":
            continue
        schema = getattr(node.target, "_schema", None)
        pairs = [(i, a, b) for i, (a, b) in enumerate(zip(node.args, twin.args))]
        pairs += [(key, node.kwargs[key], twin.kwargs.get(key)) for key in node.kwargs]
        for where, a, b in pairs:
            if _same(a, b, index):
                continue
            if type(a) is float and a in first_values and b == second_values[first_values.index(a)] \
                    and _takes_tensor(schema, where):
                uses.append((node, where, first_values.index(a)))
                continue
            raise _Declined("a value is folded into the graph")
    dtypes = []
    for index in range(count):
        kinds = {_operand_dtype(node) for node, _, k in uses if k == index}
        if len(kinds) != 1 or None in kinds:
            raise _Declined("a value has no single floating use")
        dtypes.append(kinds.pop())
    graph = graph_module.graph
    anchor = [n for n in graph.nodes if n.op == "placeholder"]
    placeholders = []
    for index in range(count):
        if anchor:
            with graph.inserting_after(anchor[-1]):
                anchor.append(graph.placeholder(f"value{index}"))
        else:
            with graph.inserting_before(next(iter(graph.nodes))):
                anchor.append(graph.placeholder(f"value{index}"))
        placeholders.append(anchor[-1])
    for node, where, index in uses:
        if isinstance(where, int):
            node.update_arg(where, placeholders[index])
        else:
            node.update_kwarg(where, placeholders[index])
    graph_module.recompile()
    return graph_module, dtypes


def _same(a, b, index) -> bool:
    """Whether two traces' arguments match: nodes by their position in their graph, other values by
    equality."""
    if isinstance(a, torch.fx.Node) or isinstance(b, torch.fx.Node):
        return isinstance(a, torch.fx.Node) and isinstance(b, torch.fx.Node) and index[a] == index[b]
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y, index) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


def _attribute(graph_module, target: str):
    value = graph_module
    for part in target.split("."):
        value = getattr(value, part)
    return value


def _takes_tensor(schema, where) -> bool:
    if schema is None:
        return False
    arguments = schema.arguments
    argument = arguments[where] if isinstance(where, int) else next((a for a in arguments if a.name == where), None)
    return argument is not None and isinstance(argument.type, torch._C.TensorType)


def _operand_dtype(node: torch.fx.Node):
    """float32/float64: the dtype of the tensor the value meets (a wrapped number takes its dtype)."""
    for arg in node.args:
        value = arg.meta.get("val") if isinstance(arg, torch.fx.Node) else None
        if isinstance(value, torch.Tensor):
            return value.dtype if value.dtype in (torch.float32, torch.float64) else None
    return None


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
