"""A lowered partition at run time: one driver executable per concrete shape signature.

Dynamic shapes are handled by specialization: a graph captured with symbolic
sizes is lowered again for each new concrete signature (input shapes, dtypes,
devices, strided layouts of inputs and integer arguments), and up to
`max_specializations` executables are kept (least recently used evicted).
This keeps every executable fully static — the form XLA optimizes best —
while Dynamo itself does not recompile.

A call launches its executable on the current stream of the partition's
device, with the input tensors and new result tensors as bindings
(bindings.py), and returns without waiting: compiled work is ordered with
eager work by stream semantics alone, as a CUDA kernel is. AXON_LAUNCH_BLOCKING=1
makes the launch synchronous, and a failure inside it is reported like any
failed kernel (at the next synchronizing call, or at once when blocking).

Run-time checks (lowering/checks.py): an executable whose lowering added
checks writes their table as its last result. A failed bounds check raises what
the eager op raises (IndexError / RuntimeError, with the offending index). Where
the graph changes no input's data and the driver runs host functions, the table
is reported in stream order (csrc/core/stream_checks.h): the call returns
without waiting and the error is raised by the next synchronizing call, as an
eager kernel's own failure is (at once under AXON_LAUNCH_BLOCKING=1). Otherwise
the call reads the table (a few bytes copied to the host, so it waits for the
launch) and raises at once, before anything uses its results. A result only the
CPU kernel's own algorithm decides (topk / unstable sort with ties) makes the
call run the partition eagerly on axon instead, so such calls always read it.
"""

from __future__ import annotations

import collections
import hashlib
import warnings

import torch
import torch.fx

from .. import _C
from . import bindings, executable, stage
from .input_layout import input_layout
from .lowering import LoweringError
from .lowering.checks import RAISE

_EAGER = object()
_AS_IT_IS = "row-major"  # a tensor bound as it is, in a specialization key


def _describe(args) -> tuple[tuple, list]:
    """(this call's specialization key, each argument's input layout). A tensor's key names its shape, dtype,
    device and how it is bound: as it is (row-major), through a layout (input_layout.py), or copied."""
    key, layouts = [], []
    for value in args:
        layout = None
        if isinstance(value, torch.Tensor):
            contiguous = value.is_contiguous()
            if not contiguous:
                layout = input_layout(value)
            key.append((tuple(value.shape), value.dtype, value.device, _AS_IT_IS if contiguous else layout))
        elif isinstance(value, (int, float, bool)):
            key.append(value)
        else:
            key.append(type(value).__name__)
        layouts.append(layout)
    return tuple(key), layouts


def _device_of(args) -> int:
    """The axon device a call runs on: its first axon tensor's, else the current one."""
    for value in args:
        if isinstance(value, torch.Tensor) and value.device.type == "axon":
            return value.device.index
    return torch.axon.current_device()


class _Specialization:
    """One executable of a partition and what its calls need. `direct` (a torch_axon._C.DirectLaunch) is set
    when a call can bind its inputs as they are and its results as new row-major tensors, with nothing to
    read back: every argument a tensor or a number, every tensor input row-major on the executable's device
    and not complex (whose conjugate and negative views need resolving), no result layout, run-time checks
    only if reported in stream order, each output a result or an argument. Such calls are checked and launched
    in C++; most calls of small graphs are."""

    def __init__(self, executable, lowered, key, name: str, arrangement: str, job: stage.Job):
        self.executable = executable
        self.lowered = lowered
        self.device = torch.device("axon", executable.device)
        # Reports the run-time checks in stream order (the module's docstring says when), else None.
        self.check_report = self._check_report(job)
        self.direct = self._direct_launch(key, name, arrangement)

    def _check_report(self, job):
        checks = self.lowered.checks
        if not (checks and job.checks_in_stream_order and all(check.on_failure == RAISE for check in checks)
                and executable.reports_checks_in_stream_order(self.executable.device)):
            return None
        return _C.CheckReport([(check.error.__name__, check.text(job.graph)) for check in checks])

    def _direct_launch(self, key, name, arrangement):
        lowered = self.lowered
        if ((lowered.checks and self.check_report is None) or arrangement == "tree"
                or any(layout is not None for layout in lowered.output_layouts)):
            return None
        arguments = []
        for entry in key:
            if isinstance(entry, tuple):
                shape, dtype, device, binding = entry
                if binding is not _AS_IT_IS or device != self.device or dtype.is_complex:
                    return None
                arguments.append(("tensor", list(shape), dtype))
            elif isinstance(entry, (int, float, bool)):
                arguments.append(("number", entry))
            else:
                return None
        outputs = []
        for kind, payload in lowered.outputs:
            if kind not in ("tensor", "input"):
                return None
            outputs.append(("result" if kind == "tensor" else "argument", payload))
        results = [(list(meta.shape), meta.dtype) for meta in lowered.output_meta]
        return _C.DirectLaunch(self.executable, arguments, list(lowered.tensor_inputs), results, outputs,
                               arrangement == "single", name, self.check_report)


class CompiledPartition(torch.nn.Module):
    def __init__(self, graph_module: torch.fx.GraphModule, name: str, job: stage.Job):
        super().__init__()
        self.graph_module = graph_module
        self.name = name
        self.job = job              # of the graph this partition belongs to: its specializations run in it
        self.graph = job.graph
        self.options = job.options
        self.record = job.record
        self.specializations: collections.OrderedDict = collections.OrderedDict()
        self._warned_rerun = False
        output_node = next(n for n in reversed(graph_module.graph.nodes) if n.op == "output")
        _, self.output_spec = torch.utils._pytree.tree_flatten(output_node.args[0])
        spec = self.output_spec
        # How the outputs are arranged: one tensor, a flat tuple (most partitions), or another structure.
        self._arrangement = "single" if spec.is_leaf() else "tuple" if spec.type is tuple and all(
            child.is_leaf() for child in spec.children()) else "tree"
        # The last specialization called, when it is direct: tried first, in C++, by every call.
        self._direct: _Specialization | None = None

    # Called straight, without nn.Module's hook machinery: a partition has no hooks, and a small graph's call
    # is mostly such overhead.
    def __call__(self, *args):
        if self._direct is not None:
            outputs = self._direct.direct(*args)
            if outputs is not None:
                return outputs
        # `_direct` is always the most recently used specialization, so its calls need not reorder the LRU.
        self._direct = None
        key, layouts = _describe(args)
        entry = self.specializations.get(key)
        if entry is None:
            entry = self._specialize(args, key)
        else:
            self.specializations.move_to_end(key)
        if entry is _EAGER:
            return self.graph_module(*args)
        if entry.direct is not None:
            outputs = entry.direct(*args)
            if outputs is not None:
                self._direct = entry
                return outputs
        return self._bound_call(entry, args, layouts)

    forward = __call__

    def _bound_call(self, entry, args, layouts):
        lowered, device = entry.lowered, entry.device
        inputs = [bindings.input_binding(args[i], device, layouts[i]) for i in lowered.tensor_inputs]
        inputs += bindings.start_bindings([layouts[i] for i in lowered.tensor_inputs], device)
        results, delivered = bindings.result_bindings(lowered, device)
        entry.executable.launch(inputs + results, "main", self.name)
        if entry.check_report is not None:
            entry.check_report(results.pop())
        elif lowered.checks:
            table = results.pop().tolist()
            if self._needs_eager(lowered.checks, table):
                return self.graph_module(*args)
        return self._outputs(lowered, args, delivered)

    def _arranged(self, flat):
        if self._arrangement == "single":
            return flat[0]
        if self._arrangement == "tuple":
            return tuple(flat)
        return torch.utils._pytree.tree_unflatten(flat, self.output_spec)

    def _outputs(self, lowered, args, delivered):
        flat = []
        for kind, payload in lowered.outputs:
            flat.append(delivered[payload] if kind == "tensor" else args[payload] if kind == "input" else payload)
        return self._arranged(flat)

    def _needs_eager(self, checks, table) -> bool:
        """Raises the first failed bounds check (graph order, as eager would meet it); True when a
        tie check failed, so the partition must run eagerly for this call."""
        failed = [(check, value) for check, (position, value) in zip(checks, table) if position >= 0]
        for check, value in failed:
            if check.on_failure == RAISE:
                raise check.exception(value, self.graph)
        if not failed:
            return False
        self.record.eager_reruns += 1
        if not self._warned_rerun:
            self._warned_rerun = True
            check = failed[0][0]
            warnings.warn(f"[axon compile] {self.name} of {self.graph} runs eagerly for this call: {check.op} "
                          f"{check.message}", stacklevel=1)
        return True

    def _specialize(self, args, key):
        tag = hashlib.sha1(repr(key).encode()).hexdigest()[:8]
        device = _device_of(args)
        try:
            if not executable.supported(device):
                raise LoweringError(f"the driver ({torch.axon.driver_name()}) does not load "
                                    f"{executable.SOURCE_FORMAT} executables")
            results = stage.run(self.job.replace(label=f"{self.name}_{tag}", device=device),
                                stage.SPECIALIZATION, stage.GraphAndInputs(self.graph_module, args))
        except LoweringError as error:
            if self.options.strict:
                raise RuntimeError(f"[axon compile] strict mode: {self.name} of {self.graph} cannot be lowered "
                                   f"for inputs {key}: {error}") from error
            warnings.warn(f"[axon compile] {self.name} of {self.graph} runs eagerly on axon for inputs {key}: "
                          f"{error}", stacklevel=1)
            self._store(key, _EAGER)
            return _EAGER
        lowered, compiled = results["stablehlo"], results["executable"]
        self.record.executables += 1
        self.record.runtime_checks += len(lowered.checks)
        self.record.compile_seconds += compiled.seconds
        entry = _Specialization(compiled.executable, lowered, key, self.name, self._arrangement, self.job)
        self._store(key, entry)
        return entry

    def _store(self, key, entry) -> None:
        self.specializations[key] = entry
        while len(self.specializations) > self.options.max_specializations:
            self.specializations.popitem(last=False)
