"""The ``axon`` accelerator for Lightning (Trainer and Fabric)."""

from __future__ import annotations

from typing import Any

import torch
from lightning.pytorch.accelerators.accelerator import Accelerator
from lightning.pytorch.utilities.exceptions import MisconfigurationException


def _parse_devices(devices: Any) -> list[int]:
    """Device indices from Lightning's ``devices`` argument: a count, ``-1``/``"auto"`` for all, a list of
    indices, or a string of either ("2", "0,1")."""
    count = torch.axon.device_count()
    if devices in ("auto", -1, "-1"):
        return list(range(count))
    if isinstance(devices, str):
        devices = [int(part) for part in devices.split(",") if part.strip()] if "," in devices else int(devices)
    if isinstance(devices, int):
        if devices < 1 or devices > count:
            raise MisconfigurationException(f"devices={devices} requested, but axon has {count} devices")
        return list(range(devices))
    indices = [int(index) for index in devices]
    for index in indices:
        if not 0 <= index < count:
            raise MisconfigurationException(f"axon device {index} requested, but axon has {count} devices")
    return indices


class AxonAccelerator(Accelerator):
    """Runs the model on ``axon`` devices: one device with ``SingleDeviceStrategy``, several with DDP over the
    ``axon`` process group."""

    def setup_device(self, device: torch.device) -> None:
        if device.type != "axon":
            raise MisconfigurationException(f"Device should be axon, got {device} instead")
        torch.axon.set_device(device)

    def get_device_stats(self, device: Any) -> dict[str, Any]:
        return torch.axon.memory_stats(device)

    def teardown(self) -> None:
        torch.axon.empty_cache()

    @staticmethod
    def parse_devices(devices: Any) -> list[int]:
        return _parse_devices(devices)

    @staticmethod
    def get_parallel_devices(devices: Any) -> list[torch.device]:
        return [torch.device("axon", index) for index in _parse_devices(devices)]

    @staticmethod
    def auto_device_count() -> int:
        return torch.axon.device_count()

    @staticmethod
    def is_available() -> bool:
        return torch.axon.is_available()

    @staticmethod
    def name() -> str:
        return "axon"

    @classmethod
    def register_accelerators(cls, accelerator_registry) -> None:
        accelerator_registry.register("axon", cls, description=cls.__name__)
