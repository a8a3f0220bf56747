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
checks writes their table as its last result. Such a call reads it (a few
bytes copied to the host, so it waits for the launch): a failed bounds check
raises what the eager op raises (IndexError / RuntimeError, with the offending
index), and a result only the CPU kernel's own algorithm decides (topk /
unstable sort with ties) makes this call run the partition eagerly on axon instead.
"""

from __future__ import annotations

import collections
import hashlib
import warnings

import torch
import torch.fx

from . import bindings, executable, stage
from .input_layout import input_layout
from .lowering import LoweringError
from .lowering.checks import RAISE

_EAGER = object()


def _layouts(args) -> list:
    return [input_layout(value) if isinstance(value, torch.Tensor) else None for value in args]


def _signature(args, layouts) -> tuple:
    key = []
    for value, layout in zip(args, layouts):
        if isinstance(value, torch.Tensor):
            key.append((tuple(value.shape), value.dtype, value.device.index, layout))
        elif isinstance(value, (int, float, bool)):
            key.append(value)
        else:
            key.append(type(value).__name__)
    return tuple(key)


def _device_of(args) -> int:
    """The axon device a call runs on: its first axon tensor's, else the current one."""
    for value in args:
        if isinstance(value, torch.Tensor) and value.device.type == "axon":
            return value.device.index
    return torch.axon.current_device()


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

    def forward(self, *args):
        layouts = _layouts(args)
        key = _signature(args, layouts)
        entry = self.specializations.get(key)
        if entry is None:
            entry = self._specialize(args, key)
        else:
            self.specializations.move_to_end(key)
        if entry is _EAGER:
            return self.graph_module(*args)
        compiled, lowered = entry
        device = torch.device("axon", compiled.device)
        inputs = [bindings.input_binding(args[i], device, layouts[i]) for i in lowered.tensor_inputs]
        inputs += bindings.start_bindings([layouts[i] for i in lowered.tensor_inputs], device)
        results, delivered = bindings.result_bindings(lowered, device)
        compiled.launch(inputs + results, label=self.name)
        if lowered.checks:
            table = results.pop().tolist()
            if self._needs_eager(lowered.checks, table):
                return self.graph_module(*args)
        flat = []
        for kind, payload in lowered.outputs:
            flat.append(delivered[payload] if kind == "tensor" else args[payload] if kind == "input" else payload)
        return torch.utils._pytree.tree_unflatten(flat, self.output_spec)

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
        entry = (compiled.executable, lowered)
        self._store(key, entry)
        return entry

    def _store(self, key, entry) -> None:
        self.specializations[key] = entry
        while len(self.specializations) > self.options.max_specializations:
            self.specializations.popitem(last=False)
