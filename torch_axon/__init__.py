"""Axon: a native PyTorch backend for AI accelerators, on an emulated device.

Importing this package (which ``import torch`` does automatically through the
``torch.backends`` entry point) makes the ``axon`` device usable everywhere:
``tensor.to("axon")``, ``torch.accelerator``, ``torch.axon`` (the device module,
``torch_axon/device_module/``, shaped like ``torch.cuda``), ``Tensor.axon()``,
``Module.axon()``, storages and ``torch.save``/``torch.load``; the ``axon``
torch.distributed backend (``torch_axon.distributed``); and
``torch.compile(backend="axon")`` (``torch_axon.compile``).
"""

import importlib.util
import os

import torch


def _find_xla_cpu_plugin() -> None:
    """Points the drivers at XLA's CPU PJRT plugin where no plugin is named: the emulated driver's
    "stablehlo-mlir" executables (AXON_PJRT_CPU_PLUGIN) and, under AXON_DRIVER=pjrt, the PJRT driver's
    device (AXON_PJRT_PLUGIN; name another plugin there to run on its devices)."""
    wanted = ["AXON_PJRT_CPU_PLUGIN"]
    if os.environ.get("AXON_DRIVER") == "pjrt":
        wanted.append("AXON_PJRT_PLUGIN")
    wanted = [name for name in wanted if not os.environ.get(name)]
    if not wanted:
        return
    spec = importlib.util.find_spec("fastatomstruct_xla_cpu")
    if spec is not None and spec.origin is not None:
        library = os.path.join(os.path.dirname(spec.origin), "libpjrt_cpu.so")
        if os.path.isfile(library):
            for name in wanted:
                os.environ[name] = library
            # This build's loader logs an error-level line for every executable loaded from the compile cache
            # (tuning flags such as +prefer-no-gather read as missing CPU features); the image was compiled on
            # this very host. Failures still reach Axon as PJRT statuses.
            os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


_find_xla_cpu_plugin()

# Order matters: _C loads the driver, which reads AXON_PJRT_CPU_PLUGIN.
from . import _C  # noqa: E402,F401,I001  loading it registers the backend's C++ parts
from . import device_module  # noqa: E402
from . import distributed  # noqa: E402,F401  registers the "axon" torch.distributed backend
from .device_module import *  # noqa: E402,F403  torch_axon.<name> is torch.axon.<name>
from .device_module import __all__ as __all__  # noqa: E402


def _register_backend() -> None:
    if torch._C._get_privateuse1_backend_name() == "axon":
        return
    torch.utils.rename_privateuse1_backend("axon")
    torch._register_device_module("axon", device_module)
    torch.utils.generate_methods_for_privateuse1_backend(
        for_tensor=True, for_module=True, for_packed_sequence=True, for_storage=True
    )


def _autoload() -> None:
    """Entry point of the ``torch.backends`` group: importing is enough."""


_register_backend()

# Changing determinism first waits for queued work, which the worker's CPU kernels run under the old setting.
from .global_modes import install_launch_ordered_modes  # noqa: E402

install_launch_ordered_modes()

# Default torch.compile (Inductor) on axon graphs; registration with Inductor itself waits for the first one.
from .inductor import install_default_compile_routing  # noqa: E402

install_default_compile_routing()

# Fake tensors (Dynamo, AOTAutograd, Inductor, export) predict the layouts axon's convolutions give.
from .fake_tensors import install_fake_tensor_rules  # noqa: E402

install_fake_tensor_rules()

# Trainer(accelerator="axon") and Fabric(accelerator="axon"), registered when Lightning is imported (if ever).
from .lightning import install_lightning_registration  # noqa: E402

install_lightning_registration()


def _lower_eager_kernel(name, overload, args, results, device):
    """Compiled eager kernels (csrc/compiled_execution/) ask here once per call shape; the lowering
    table is imported at the first such call, not with torch_axon."""
    from .compile import eager_kernels

    return eager_kernels.lower(name, overload, args, results, device)


_C._set_eager_kernel_lowerer(_lower_eager_kernel)
