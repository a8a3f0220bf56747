"""Registers the axon accelerator with Lightning, and fixes two of Lightning's choices for it.

Lightning registers only its own accelerators. Importing Lightning from inside its own import would meet
half-initialized modules, so axon waits until a Trainer or Fabric is being built: the connectors that read the
registries (``_AcceleratorConnector`` of ``lightning.pytorch``, ``_Connector`` of ``lightning.fabric``, 2.6) are
wrapped as soon as their modules are imported, and the wrapped constructor registers ``axon`` first.

Two choices of those connectors know only the built-in device names:

- ``_choose_strategy``: one device gets ``SingleDeviceStrategy(device="cpu")`` unless the accelerator is CUDA or
  MPS, so a model trained with ``accelerator="axon"`` would silently stay on the CPU;
- ``_check_and_init_precision``: ``"16-mixed"``/``"bf16-mixed"`` build ``MixedPrecision(..., device="cuda")``
  unless the accelerator is the CPU or MPS, so autocast would target CUDA and, without CUDA, silently do nothing.

For the axon accelerator only, the wrapped connectors choose ``SingleDeviceStrategy`` on the axon device for one
device, and autocast on ``"axon"``. (Several devices already get DDP, whose default process-group backend for
axon tensors is ``axon``, as registered with ``torch.distributed``.) Upstream, both choices could ask the
accelerator for its device type instead of matching names: ``docs/lightning.md``.
"""

from __future__ import annotations

import functools
import importlib.abc
import importlib.machinery
import sys
from typing import Any


def _register_axon() -> None:
    from lightning.fabric.accelerators import ACCELERATOR_REGISTRY
    from lightning.pytorch.accelerators import AcceleratorRegistry

    from .accelerator import AxonAccelerator

    for registry in (AcceleratorRegistry, ACCELERATOR_REGISTRY):
        if "axon" not in registry:
            AxonAccelerator.register_accelerators(registry)


def _is_axon(accelerator_flag: Any) -> bool:
    from .accelerator import AxonAccelerator

    return accelerator_flag == "axon" or isinstance(accelerator_flag, AxonAccelerator)


def _wrap_connector(connector_class: type, single_device_strategy: str) -> None:
    if getattr(connector_class, "_axon_wrapped", False):
        return
    construct = connector_class.__init__
    choose_strategy = connector_class._choose_strategy
    init_precision = connector_class._check_and_init_precision

    @functools.wraps(construct)
    def __init__(self, *args, **kwargs):
        _register_axon()
        construct(self, *args, **kwargs)

    @functools.wraps(choose_strategy)
    def _choose_strategy(self):
        if _is_axon(self._accelerator_flag) and self._num_nodes_flag <= 1 and len(self._parallel_devices) <= 1:
            module_name, class_name = single_device_strategy.rsplit(".", 1)
            strategy = getattr(importlib.import_module(module_name), class_name)
            return strategy(device=self._parallel_devices[0] if self._parallel_devices else "axon")
        return choose_strategy(self)

    @functools.wraps(init_precision)
    def _check_and_init_precision(self):
        precision = init_precision(self)
        # The user's own plugin (the Trainer's connector keeps it as _precision_plugin_flag, Fabric's as
        # _precision_instance) is left as given.
        if precision is getattr(self, "_precision_plugin_flag", getattr(self, "_precision_instance", None)):
            return precision
        if _is_axon(self._accelerator_flag) and getattr(precision, "device", None) == "cuda":
            precision.device = "axon"  # MixedPrecision's autocast device
            if getattr(precision, "scaler", None) is not None:  # fp16's GradScaler, made for CUDA
                import torch

                precision.scaler = torch.amp.GradScaler(device="axon")
        return precision

    connector_class.__init__ = __init__
    connector_class._choose_strategy = _choose_strategy
    connector_class._check_and_init_precision = _check_and_init_precision
    connector_class._axon_wrapped = True


# Connector modules → (connector class, the single-device strategy of that half of Lightning).
_CONNECTORS = {
    "lightning.pytorch.trainer.connectors.accelerator_connector": (
        "_AcceleratorConnector", "lightning.pytorch.strategies.SingleDeviceStrategy"),
    "lightning.fabric.connector": ("_Connector", "lightning.fabric.strategies.SingleDeviceStrategy"),
}


def _wrap_module(name: str, module) -> None:
    class_name, strategy = _CONNECTORS[name]
    _wrap_connector(getattr(module, class_name), strategy)


class _WrapAfterImport(importlib.abc.MetaPathFinder):
    """Finds the connector modules as usual, and wraps their connector once the module has executed."""

    def find_spec(self, fullname, path, target=None):
        if fullname not in _CONNECTORS:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is not None and spec.loader is not None:
            spec.loader = _Wrapping(spec.loader, fullname)
        return spec


class _Wrapping(importlib.abc.Loader):
    def __init__(self, loader, name: str):
        self._loader = loader
        self._name = name

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        _wrap_module(self._name, module)


def install_lightning_registration() -> None:
    """Wraps connectors already imported, and the others when they are (idempotent)."""
    for name in _CONNECTORS:
        if name in sys.modules:
            _wrap_module(name, sys.modules[name])
    if not any(isinstance(finder, _WrapAfterImport) for finder in sys.meta_path):
        sys.meta_path.insert(0, _WrapAfterImport())
