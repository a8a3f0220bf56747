"""A lowered partition at run time: one XLA executable per concrete shape signature.

Dynamic shapes are handled by specialization: a graph captured with symbolic
sizes is lowered again for each new concrete signature (input shapes, dtypes
and integer arguments), and up to `max_specializations` executables are kept
(least recently used evicted). This keeps every executable fully static — the
form XLA optimizes best — while Dynamo itself does not recompile.

Ordering with axon's streams: before the call, the current stream of the
partition's device is synchronized (XLA sees all prior work); XLA's results
are complete before they are adopted, so later axon work sees them.

Run-time checks (lowering/checks.py): an executable whose lowering added
checks returns their table as its last result. After the call it is read:
a failed bounds check raises what the eager op raises (IndexError /
RuntimeError, with the offending index), and a result only the CPU kernel's
own algorithm decides (topk / unstable sort with ties) makes this call run
the partition eagerly on axon instead.
"""

from __future__ import annotations

import collections
import hashlib
import warnings

import torch
import torch.fx

from . import dump, executable, transfer
from .lowering import LoweringError, lower_graph
from .lowering.checks import RAISE
from .report import GraphRecord

_EAGER = object()


def _signature(args) -> tuple:
    key = []
    for value in args:
        if isinstance(value, torch.Tensor):
            key.append((tuple(value.shape), value.dtype, value.device.index))
        elif isinstance(value, (int, float, bool)):
            key.append(value)
        else:
            key.append(type(value).__name__)
    return tuple(key)


class CompiledPartition(torch.nn.Module):
    def __init__(self, graph_module: torch.fx.GraphModule, name: str, graph: str, options, record: GraphRecord):
        super().__init__()
        self.graph_module = graph_module
        self.name = name
        self.graph = graph
        self.options = options
        self.record = record
        self.specializations: collections.OrderedDict = collections.OrderedDict()
        self._warned_rerun = False
        output_node = next(n for n in reversed(graph_module.graph.nodes) if n.op == "output")
        _, self.output_spec = torch.utils._pytree.tree_flatten(output_node.args[0])

    def forward(self, *args):
        key = _signature(args)
        entry = self.specializations.get(key)
        if entry is None:
            entry = self._specialize(args, key)
        else:
            self.specializations.move_to_end(key)
        if entry is _EAGER:
            return self.graph_module(*args)
        compiled, lowered = entry
        tensors = [args[i] for i in lowered.tensor_inputs]
        devices = [t.device.index for t in tensors if t.device.type == "axon"]
        output_device = devices[0] if devices else torch.axon.current_device()
        xla_device = executable.device()
        # to_xla may queue a copy (non-dense or misaligned input): synchronize after it.
        inputs = [transfer.to_xla(t, xla_device) for t in tensors]
        for index in set(devices) | {output_device}:
            torch.axon.current_stream(index).synchronize()
        results = compiled.execute(inputs)
        for result in results:
            result.block_until_ready()
        if lowered.checks:
            table = transfer.read_checks(results.pop())
            if self._needs_eager(lowered.checks, table):
                return self.graph_module(*args)
        adopted = [transfer.from_xla(r, output_device) for r in results]
        for index, (result, tensor) in enumerate(zip(results, adopted)):
            if transfer.overlaps_any(result, inputs):
                # XLA returned an input's own buffer (an op that is the identity on it, such as floor of an
                # integer tensor, possibly reshaped): the graph's output is a new tensor, so it gets its own memory.
                adopted[index] = tensor.clone()
        flat = []
        for kind, payload in lowered.outputs:
            flat.append(adopted[payload] if kind == "tensor" else args[payload] if kind == "input" else payload)
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
                          f"{check.message}")
        return True

    def _specialize(self, args, key):
        tag = hashlib.sha1(repr(key).encode()).hexdigest()[:8]
        try:
            lowered = lower_graph(self.graph_module, list(args))
        except LoweringError as error:
            if self.options.strict:
                raise RuntimeError(f"[axon compile] strict mode: {self.name} of {self.graph} cannot be lowered "
                                   f"for inputs {key}: {error}") from error
            warnings.warn(f"[axon compile] {self.name} of {self.graph} runs eagerly on axon for inputs {key}: "
                          f"{error}")
            self._store(key, _EAGER)
            return _EAGER
        dump.dump(self.options.dump_dir, self.graph, f"03_{self.name}_{tag}.stablehlo.mlir", lowered.text)
        compiled = executable.compile_module(lowered.text)
        if self.options.dump_dir:
            hlo = "\n".join(m.to_string() for m in compiled.executable.hlo_modules())
            dump.dump(self.options.dump_dir, self.graph, f"04_{self.name}_{tag}.hlo.txt", hlo)
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
