"""Axon: a native PyTorch backend for AI accelerators, on an emulated device.

Importing this package (which ``import torch`` does automatically through the
``torch.backends`` entry point) makes the ``axon`` device usable everywhere:
``tensor.to("axon")``, ``torch.accelerator``, ``torch.axon`` (shaped like
``torch.cuda``), ``Tensor.axon()``, ``Module.axon()``, storages and
``torch.save``/``torch.load``.
"""

import importlib.util
import os

import torch


def _find_xla_cpu_plugin() -> None:
    """Points the emulated driver at XLA's CPU PJRT plugin (its "stablehlo-mlir" executables), unless set."""
    if os.environ.get("AXON_PJRT_CPU_PLUGIN"):
        return
    spec = importlib.util.find_spec("fastatomstruct_xla_cpu")
    if spec is not None and spec.origin is not None:
        library = os.path.join(os.path.dirname(spec.origin), "libpjrt_cpu.so")
        if os.path.isfile(library):
            os.environ["AXON_PJRT_CPU_PLUGIN"] = library


_find_xla_cpu_plugin()

from . import _C  # noqa: E402,F401  loading it registers the backend's C++ parts
from .device import (
    current_device,
    device,
    device_count,
    device_of,
    driver_capabilities,
    driver_name,
    get_amp_supported_dtype,
    get_device_capability,
    get_device_name,
    get_device_properties,
    init,
    is_available,
    is_bf16_supported,
    is_initialized,
    is_tf32_supported,
    set_device,
    synchronize,
    _initialized,
    _is_in_bad_fork,
    _lazy_init,
    _sleep,
)
from .fallback import fallback_mode, fallback_ops, reset_fallback_ops
from .memory import (
    empty_cache,
    get_memory_info,
    max_memory_allocated,
    max_memory_reserved,
    mem_get_info,
    memory_allocated,
    memory_reserved,
    memory_stats,
    memory_summary,
    reset_accumulated_memory_stats,
    reset_peak_memory_stats,
)
from .random import (
    default_generators,
    get_rng_state,
    get_rng_state_all,
    initial_seed,
    manual_seed,
    manual_seed_all,
    seed,
    seed_all,
    set_rng_state,
    set_rng_state_all,
    _get_generator,
)
from .streams import (
    Event,
    Stream,
    StreamContext,
    current_stream,
    default_stream,
    set_stream,
    stream,
)
from .runtime import is_launch_blocking, shutdown

# The exception torch.cuda.OutOfMemoryError names: code written for CUDA
# catches `torch.<device>.OutOfMemoryError`.
OutOfMemoryError = torch.OutOfMemoryError
from . import distributed  # noqa: F401  registers the "axon" torch.distributed backend

__all__ = [
    "Event", "OutOfMemoryError", "Stream", "StreamContext", "current_device", "current_stream", "default_stream", "device",
    "default_generators", "device_count", "device_of", "driver_capabilities", "driver_name", "empty_cache", "fallback_mode", "fallback_ops", "get_amp_supported_dtype", "get_device_capability",
    "get_device_name", "get_device_properties", "get_memory_info", "get_rng_state", "get_rng_state_all",
    "init", "initial_seed", "is_available", "is_bf16_supported", "is_initialized", "is_tf32_supported", "is_launch_blocking", "manual_seed",
    "manual_seed_all", "max_memory_allocated", "max_memory_reserved", "mem_get_info", "memory_allocated",
    "memory_reserved", "memory_stats", "memory_summary", "reset_accumulated_memory_stats", "reset_fallback_ops",
    "reset_peak_memory_stats", "seed", "seed_all", "set_device", "set_rng_state", "set_rng_state_all",
    "set_stream", "shutdown", "stream", "synchronize",
]


def _register_backend() -> None:
    if torch._C._get_privateuse1_backend_name() == "axon":
        return
    torch.utils.rename_privateuse1_backend("axon")
    torch._register_device_module("axon", _this_module())
    torch.utils.generate_methods_for_privateuse1_backend(
        for_tensor=True, for_module=True, for_packed_sequence=True, for_storage=True
    )


def _this_module():
    import sys

    return sys.modules[__name__]


def _autoload() -> None:
    """Entry point of the ``torch.backends`` group: importing is enough."""


_register_backend()
