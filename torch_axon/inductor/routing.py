"""Where a default ``torch.compile`` of an axon graph goes: Inductor here, or the StableHLO backend.

``torch.compile`` without a backend calls ``torch._TorchCompileInductorWrapper`` directly (no registry lookup a
backend could hook), so axon wraps that class's ``__call__``: graphs without axon tensors go to Inductor
untouched; graphs with them register axon's Inductor code generator first (host-addressable memory) or go to
``torch_axon.compile.axon_backend`` (memory the host cannot address).
"""

from __future__ import annotations

import functools
from typing import Any

import torch


def _axon_devices(model: Any, example_inputs: Any) -> set[int]:
    """The axon devices a graph touches: its inputs', and those of the tensors its nodes make (a graph may take
    CPU inputs and create or move tensors onto axon)."""
    values = list(example_inputs)
    graph = getattr(model, "graph", None)
    if graph is not None:
        # Dynamo's graphs carry fake values as "example_value", traced ATen graphs as "val".
        values.extend(node.meta.get("example_value", node.meta.get("val")) for node in graph.nodes)
    devices = set()
    for value in values:
        for tensor in value if isinstance(value, (list, tuple)) else (value,):
            if isinstance(tensor, torch.Tensor) and tensor.device.type == "axon":
                devices.add(tensor.device.index or 0)
    return devices


def _host_addressable(device_index: int) -> bool:
    import torch_axon

    return torch_axon.driver_capabilities(device_index)["host_addressable_memory"]


def install_default_compile_routing() -> None:
    """Wraps the default compile path once (idempotent)."""
    wrapper_class = torch._TorchCompileInductorWrapper
    if getattr(wrapper_class.__call__, "_axon_routing", False):
        return
    inductor_call = wrapper_class.__call__

    @functools.wraps(inductor_call)
    def call(self, model_, inputs_, *args, **kwargs):
        devices = _axon_devices(model_, inputs_)
        if devices and not all(_host_addressable(index) for index in devices):
            from torch_axon.compile import axon_backend

            return axon_backend(model_, inputs_)
        if devices:
            from .extern_operators import tracing_axon_graph
            from .registration import AXON_INDUCTOR_CONFIG, register_inductor_backend

            register_inductor_backend()
            kwargs["config_patches"] = {**AXON_INDUCTOR_CONFIG, **(kwargs.get("config_patches") or {})}
            with tracing_axon_graph():
                return inductor_call(self, model_, inputs_, *args, **kwargs)
        return inductor_call(self, model_, inputs_, *args, **kwargs)

    call._axon_routing = True
    wrapper_class.__call__ = call
