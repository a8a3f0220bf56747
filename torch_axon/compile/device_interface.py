"""Dynamo's view of the axon device: lets torch.compile trace code that uses axon streams and events."""

from __future__ import annotations

import torch
from torch._dynamo.device_interface import DeviceInterface

import torch_axon


class AxonInterface(DeviceInterface):
    # Subclasses of torch.Stream / torch.Event, which Dynamo knows how to capture.
    Stream = torch_axon.Stream
    Event = torch_axon.Event

    class Worker:
        @staticmethod
        def set_device(device: int) -> None:
            torch_axon.set_device(device)

        @staticmethod
        def current_device() -> int:
            return torch_axon.current_device()

        @staticmethod
        def get_device_properties(device=None):
            return torch_axon.get_device_properties(device)

    current_device = staticmethod(torch_axon.current_device)
    set_device = staticmethod(torch_axon.set_device)
    device_count = staticmethod(torch_axon.device_count)
    is_available = staticmethod(torch_axon.is_available)
    stream = staticmethod(torch_axon.stream)
    current_stream = staticmethod(torch_axon.current_stream)
    set_stream = staticmethod(torch_axon.set_stream)
    synchronize = staticmethod(torch_axon.synchronize)
    get_device_properties = staticmethod(torch_axon.get_device_properties)
    memory_allocated = staticmethod(torch_axon.memory_allocated)

    @staticmethod
    def maybe_exchange_device(device: int) -> int:
        previous = torch_axon.current_device()
        if device != previous:
            torch_axon.set_device(device)
        return previous

    exchange_device = maybe_exchange_device

    @staticmethod
    def _set_stream_by_id(stream_id: int, device_index: int, device_type: int) -> None:
        torch_axon.set_stream(torch_axon.Stream(stream_id=stream_id, device_index=device_index,
                                                device_type=device_type))

    @staticmethod
    def get_raw_stream(device_index: int) -> int:
        return torch_axon.current_stream(device_index).stream_id

    @staticmethod
    def get_compute_capability(device=None) -> str:
        return "axon-emulated"

    @staticmethod
    def is_bf16_supported(including_emulation: bool = False) -> bool:
        return True

    @staticmethod
    def is_dtype_supported(dtype: torch.dtype, including_emulation: bool = False) -> bool:
        return True

    @staticmethod
    def is_triton_capable(device=None) -> bool:
        return False
