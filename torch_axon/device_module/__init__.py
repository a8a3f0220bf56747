"""torch.axon: the device module, shaped like torch.cuda.

PyTorch finds it as ``torch.axon`` and through ``torch.get_device_module("axon")``;
its generic code (autocast, checkpointing, the testing utilities) probes the
same names here as on torch.cuda: device selection and properties, streams
and events, memory statistics, the default generators, plus Axon's own
questions about the driver (``driver_name``, ``driver_capabilities``) and the
CPU fallback (``fallback_ops``). The compiler (``torch_axon.compile``) and the
distributed backend (``torch_axon.distributed``) are not part of it.
"""

import torch

from .device import (
    _initialized as _initialized,
)
from .device import (
    _is_in_bad_fork as _is_in_bad_fork,
)
from .device import (
    _lazy_init as _lazy_init,
)
from .device import (
    _sleep as _sleep,
)
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
)
from .eager_kernels import compiled_kernel_stats, eager_kernels, reset_compiled_kernel_stats, set_eager_kernels
from .fallback import fallback_mode, fallback_ops, reset_fallback_ops
from .memory import (
    empty_cache,
    get_memory_info,
    get_per_process_memory_fraction,
    max_memory_allocated,
    max_memory_reserved,
    mem_get_info,
    memory_allocated,
    memory_reserved,
    memory_stats,
    memory_summary,
    reset_accumulated_memory_stats,
    reset_peak_memory_stats,
    set_per_process_memory_fraction,
)
from .random import (
    _get_generator as _get_generator,
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
)
from .runtime import is_launch_blocking, shutdown
from .streams import (
    Event,
    Stream,
    StreamContext,
    current_stream,
    default_stream,
    set_stream,
    stream,
)

# The exception torch.cuda.OutOfMemoryError names: code written for CUDA
# catches `torch.<device>.OutOfMemoryError`.
OutOfMemoryError = torch.OutOfMemoryError

__all__ = [
    "Event", "OutOfMemoryError", "Stream", "StreamContext", "compiled_kernel_stats", "current_device",
    "current_stream", "default_generators", "default_stream", "device", "device_count", "device_of",
    "driver_capabilities", "driver_name", "eager_kernels", "empty_cache", "fallback_mode", "fallback_ops",
    "get_amp_supported_dtype", "get_device_capability", "get_device_name", "get_device_properties",
    "get_memory_info", "get_per_process_memory_fraction", "get_rng_state", "get_rng_state_all", "init",
    "initial_seed", "is_available", "is_bf16_supported", "is_initialized", "is_launch_blocking", "is_tf32_supported",
    "manual_seed", "manual_seed_all", "max_memory_allocated", "max_memory_reserved", "mem_get_info",
    "memory_allocated", "memory_reserved", "memory_stats", "memory_summary", "reset_accumulated_memory_stats",
    "reset_compiled_kernel_stats", "reset_fallback_ops", "reset_peak_memory_stats", "seed", "seed_all", "set_device",
    "set_eager_kernels", "set_per_process_memory_fraction", "set_rng_state", "set_rng_state_all", "set_stream",
    "shutdown", "stream", "synchronize",
]
