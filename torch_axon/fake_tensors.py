"""What fake tensors predict for axon results where PyTorch's rule for an out-of-tree device differs from axon.

Dynamo, AOTAutograd, Inductor and ``torch.export`` learn a graph's result layouts from fake tensors. For a
convolution, the fake kernel asks ATen which backend the device would run and that backend's layout; every
PrivateUse1 device gets the "overrideable" backend, whose layout is always contiguous. Axon's convolution runs the
CPU's kernels and gives their layout (channels-last results where oneDNN keeps channels-last inputs), so a fake
axon convolution asks axon instead (``torch_axon._C._convolution_result_format``, the rule axon's kernel itself
uses). Without it, a compiled channels-last model returned contiguous results where eager returned channels-last
ones, and Inductor, which lays out a convolution's inputs in the order of its predicted result, could not keep
axon graphs channels-last.
"""

from __future__ import annotations

import functools

import torch
from torch._subclasses import fake_impls
from torch._subclasses.fake_tensor import FakeTensor, in_kernel_invocation_manager
from torch.fx.operator_schemas import normalize_function

from . import _C

aten = torch.ops.aten
_FORWARD = (aten.convolution.default, aten._convolution.default, aten._convolution.deprecated)
_RANKS = {torch.channels_last: 4, torch.channels_last_3d: 5}


def _all_static(*tensors) -> bool:
    return all(isinstance(size, int) for tensor in tensors for size in (*tensor.shape, *tensor.stride()))


def _shaped_like(meta: torch.Tensor | None, memory_format: torch.memory_format) -> torch.Tensor | None:
    """An empty meta tensor shaped like `meta` in `memory_format` where it applies to `meta`'s rank, else with
    `meta`'s own strides: what axon's convolution allocates for a result (host_execution/convolution.cpp)."""
    if meta is None:
        return None
    if meta.dim() == _RANKS.get(memory_format):
        return torch.empty(meta.shape, dtype=meta.dtype, device="meta", memory_format=memory_format)
    return torch.empty_strided(meta.shape, meta.stride(), dtype=meta.dtype, device="meta")


def _axon_convolution(original, fake_mode, func, *args, **kwargs):
    result = original(fake_mode, func, *args, **kwargs)  # PyTorch's checks and, off axon, its answer
    normalized = normalize_function(func, args=args, kwargs=kwargs, normalize_to_only_use_kwargs=True)
    if normalized is None:
        return result
    named = normalized.kwargs
    input_, weight = named["input"], named["weight"]
    device = input_.fake_device
    if device.type != "axon" or not _all_static(input_, weight):
        return result
    bias = named.get("bias") if func in _FORWARD else None
    memory_format = _C._convolution_result_format(
        input_, weight, bias, list(named["stride"]), list(named["padding"]), list(named["dilation"]),
        bool(named["transposed"]), list(named["output_padding"]), int(named["groups"]))
    with in_kernel_invocation_manager(fake_mode):
        metas = func(**named)  # the meta kernel's strides, which axon keeps for contiguous results
        if func in _FORWARD:
            return FakeTensor(fake_mode, _shaped_like(metas, memory_format), device)
        grad_input, grad_weight, grad_bias = metas
        return tuple(None if meta is None else FakeTensor(fake_mode, meta, device) for meta in (
            _shaped_like(grad_input, memory_format), _shaped_like(grad_weight, memory_format),
            _shaped_like(grad_bias, torch.contiguous_format)))


def install_fake_tensor_rules() -> None:
    """Puts axon's rule in front of the fake convolution kernels (idempotent; other devices keep PyTorch's)."""
    for op in (*_FORWARD, aten.convolution_backward.default):
        original = fake_impls.op_implementations_dict[op]
        if getattr(original, "_axon_rule", False):
            continue
        rule = functools.partial(_axon_convolution, original)
        rule._axon_rule = True
        fake_impls.op_implementations_dict[op] = rule
