"""The device calls Inductor's generated wrapper code makes on axon."""

from __future__ import annotations

from textwrap import dedent

from torch._inductor.codegen.common import DeviceOpOverrides


class AxonDeviceOpOverrides(DeviceOpOverrides):
    def import_get_raw_stream_as(self, name: str) -> str:
        # Kernels find their stream themselves (launch.py); the wrapper's raw-stream argument is unused.
        return dedent(
            f"""
            def {name}(_):
                return 0
            """
        )

    def set_device(self, device_idx: int) -> str:
        return f"torch.axon.set_device({device_idx})"

    def synchronize(self) -> str:
        return "torch.axon.synchronize()"

    def device_guard(self, device_idx: int) -> str:
        return f"torch.axon.device({device_idx})"

    def cpp_kernel_type(self) -> str:
        return "void*"
