"""Device selection and properties, shaped like torch.cuda's."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import torch

from .. import _C


def _device_index(device: Any = None, optional: bool = True) -> int:
    """Index of an axon device given as torch.device, 'axon:N', int or None (current)."""
    if device is None:
        if not optional:
            raise ValueError("[axon] expected a device, got None")
        return _C._current_device()
    if isinstance(device, int):
        return device
    if isinstance(device, str):
        device = torch.device(device)
    if isinstance(device, torch.device):
        if device.type != "axon":
            raise ValueError(f"[axon] expected an axon device, got {device}")
        return _C._current_device() if device.index is None else device.index
    raise TypeError(f"[axon] expected a device (torch.device, str or int), got {type(device).__name__}")


def is_available() -> bool:
    return _C._device_count() > 0


def device_count() -> int:
    return _C._device_count()


def driver_name() -> str:
    """The driver the boundary's calls reach: "emulated" (default), "null", or a driver library's own name,
    chosen by AXON_DRIVER before the first use (runtime/include/axon/driver_api.h)."""
    return _C._driver_name()


# axon_capability values (runtime/include/axon/device.h).
_CAPABILITIES = {"host_addressable_memory": 1, "host_functions": 2, "import_host_memory": 3, "executables": 4}


def driver_capabilities(device: Any = None) -> dict[str, bool]:
    """What the driver of `device` can do beyond the required calls, by capability name."""
    index = _device_index(device)
    capabilities = {name: _C._driver_capability(index, value) for name, value in _CAPABILITIES.items()}
    # Executable formats the driver loads (runtime/include/axon/formats/).
    for executable_format in ("host-shared-object", "stablehlo-mlir"):
        capabilities[f"format:{executable_format}"] = _C._executable_format_supported(index, executable_format)
    return capabilities


# The driver starts when torch_axon loads, so the device module is always
# initialized. PyTorch probes this attribute (not is_initialized()) in places:
# torch.utils.checkpoint saves and restores the device RNG state around a
# recomputation only when it is truthy.
_initialized = True


def is_initialized() -> bool:
    return _initialized


def init() -> None:
    """Kept for torch.cuda parity: the driver needs no explicit initialization."""


def _lazy_init() -> None:
    pass


_in_bad_fork = False


def _mark_bad_fork() -> None:
    global _in_bad_fork
    _in_bad_fork = True


# The driver starts when torch_axon loads; a forked child gets a copy of its
# state but none of its worker threads, so the driver refuses it every call.
os.register_at_fork(after_in_child=_mark_bad_fork)


def _is_in_bad_fork() -> bool:
    """True in a child forked after the axon runtime started (use 'spawn' instead)."""
    return _in_bad_fork


def current_device() -> int:
    return _C._current_device()


def set_device(device: Any) -> None:
    index = _device_index(device)
    if index >= 0:
        _C._set_device(index)


class device:
    """Context manager that makes `device` current, then restores the previous one."""

    def __init__(self, device: Any):
        self.index = _device_index(device)
        self.previous = -1

    def __enter__(self):
        self.previous = _C._current_device()
        if self.index >= 0 and self.index != self.previous:
            _C._set_device(self.index)
        return self

    def __exit__(self, *exc):
        if self.previous != self.index:
            _C._set_device(self.previous)
        return False


class device_of(device):
    """Context manager that makes the device of tensor `obj` current (no-op for CPU tensors)."""

    def __init__(self, obj: torch.Tensor):
        super().__init__(obj.get_device() if obj.device.type == "axon" else -1)


def synchronize(device: Any = None) -> None:
    """Waits for all work queued on every stream of the device."""
    _C._synchronize(_device_index(device))


@dataclass(frozen=True)
class AxonDeviceProperties:
    name: str
    total_memory: int
    stream_priority_low: int
    stream_priority_high: int
    launch_blocking: bool
    memory_protected: bool
    multi_processor_count: int  # the driver's compute units (as torch.cuda names them; Inductor reads it)

    def __repr__(self) -> str:
        return (
            f"AxonDeviceProperties(name='{self.name}', total_memory={self.total_memory // (1024 * 1024)}MB, "
            f"launch_blocking={self.launch_blocking}, memory_protected={self.memory_protected})"
        )


def get_device_properties(device: Any = None) -> AxonDeviceProperties:
    return AxonDeviceProperties(**_C._device_properties(_device_index(device)))


def get_device_name(device: Any = None) -> str:
    return get_device_properties(device).name


def get_device_capability(device: Any = None) -> dict[str, Any]:
    """The dtypes axon tensors hold and convert between: torch.accelerator.get_device_capability's answer
    (csrc/core/guard.cpp), so both always agree."""
    index = _device_index(device)
    _C._device_properties(index)  # validates the index
    return torch.accelerator.get_device_capability(torch.device("axon", index))


def get_amp_supported_dtype() -> list[torch.dtype]:
    return [torch.float16, torch.bfloat16]


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """bfloat16 tensors and kernels are native on axon (as torch.cuda.is_bf16_supported)."""
    return is_available()


def is_tf32_supported() -> bool:
    """TensorFloat-32 is a CUDA matmul mode; axon computes float32 in full precision."""
    return False


def _sleep(cycles: int) -> None:
    """Keeps the current stream busy for `cycles` nanoseconds (torch.cuda._sleep's role in tests)."""
    _C._sleep(int(cycles))


