"""Registers axon with Inductor: code generation, wrapper and device op overrides, Dynamo's device interface."""

from __future__ import annotations

import functools
import hashlib
import pathlib

import torch

# Inductor settings for axon graphs. Some of Inductor's CPU behaviour is keyed on the device type "cpu":
#  - the scheduler's loop reordering and reindexing after fusion skip CPU nodes (the C++ kernels group loops
#    differently from the GPU code generators), so axon, whose kernels are those C++ kernels, turns them off;
#  - the code generator Inductor assumes for a device, get_current_backend(), is config.cpu_backend for "cpu"
#    and config.cuda_backend for any other type: axon's is "cpp", the C++ generator (this changes nothing for
#    CUDA tensors, which never share a graph with axon ones);
#  - layout optimization (channels-last convolutions) is decided for "cpu" graphs by one rule, always on where
#    oneDNN runs the convolutions, and for other devices by heuristics tuned on GPUs (off in training graphs
#    whose channels are all 64 or fewer, for example). Axon's convolutions are the CPU's oneDNN kernels, so axon
#    graphs take the CPU's rule ("force", which still yields to a user's layout_optimization=False; graphs
#    without convolutions are unaffected). Fake tensors predict axon's convolution layouts (fake_tensors.py),
#    which Inductor's channels-last lowering relies on.
AXON_INDUCTOR_CONFIG = {"loop_ordering_after_fusion": False, "loop_reindexing_after_fusion": False,
                        "force_layout_optimization": True, "cuda_backend": "cpp"}


def _axon_cache_key_tag() -> str:
    """A digest of the code through which axon changes what Inductor makes of a graph (this package, the C++ it
    puts into kernels, and the fake tensor rules). Inductor's and AOTAutograd's disk caches key on the graph, the
    configuration and torch's own sources, not on axon's, so an entry made under an earlier axon would otherwise be
    served as it was."""
    package = pathlib.Path(__file__).resolve().parent
    digest = hashlib.sha256()
    for source in sorted(package.glob("*.py")) + sorted(package.glob("*.h")) + [package.parent / "fake_tensors.py"]:
        digest.update(source.read_bytes())
    return "axon-" + digest.hexdigest()[:16]


@functools.cache
def register_inductor_backend() -> None:
    from torch._inductor.codegen.common import register_backend_for_device, register_device_op_overrides

    import torch_axon.compile  # noqa: F401  registers the Dynamo device interface for axon

    from .channels_last_activations import install_channels_last_activations
    from .cpu_lowering_choices import install_cpu_lowering_choices
    from .device_op_overrides import AxonDeviceOpOverrides
    from .extern_operators import install_extern_operators
    from .scheduling import AxonCppScheduling
    from .wrapper import AxonPythonWrapperCodegen

    register_backend_for_device("axon", AxonCppScheduling, AxonPythonWrapperCodegen)
    register_device_op_overrides("axon", AxonDeviceOpOverrides())
    install_extern_operators()
    install_cpu_lowering_choices()
    install_channels_last_activations()
    # Process-wide, not per axon graph: a backward graph is compiled at the first backward call, outside any
    # context the compile call could set. CPU graphs compiled from here on carry the tag too.
    config = torch.compiler.config
    config.cache_key_tag = "+".join(filter(None, (config.cache_key_tag, _axon_cache_key_tag())))
