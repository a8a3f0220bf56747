"""What fake tensors predict for axon results where PyTorch's rule for an out-of-tree device differs from axon.

Dynamo, AOTAutograd, Inductor and ``torch.export`` learn a graph's result layouts from fake tensors. For a
convolution, the fake kernel asks ATen which backend the device would run and that backend's layout; every
PrivateUse1 device gets the "overrideable" backend, whose layout is always contiguous. Axon's convolution runs the
CPU's kernels and gives their layout (channels-last results where oneDNN keeps channels-last inputs), so a fake
axon convolution asks axon instead (``torch_axon._C._convolution_result_format``, the rule axon's kernel itself
uses). Without it, a compiled channels-last model returned contiguous results where eager returned channels-last
ones, and Inductor, which lays out a convolution's inputs in the order of its predicted result, could not keep
axon graphs channels-last.

Graphs with symbolic sizes (Dynamo recompiles a function with dynamic shapes once it has seen a second batch size)
get the same rule, evaluated on CPU fake tensors with the same symbolic sizes and strides: the sizes it compares
become guards of the graph, as PyTorch's own fake kernel does for CPU tensors. Without it a compiled CNN failed at
its second batch size (``assert_size_stride``: Inductor had made the convolutions' inputs channels-last, axon's
kernel returned channels-last, the fake kernel had said contiguous).
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


def _all_hinted(*tensors) -> bool:
    from torch.fx.experimental.symbolic_shapes import has_guarding_hint

    return all(has_guarding_hint(size) for tensor in tensors for size in (*tensor.shape, *tensor.stride()))


def _symbolic_result_format(fake_mode, func, named) -> torch.memory_format:
    """convolution_result_format (host_execution/convolution.cpp) for fake axon tensors with symbolic sizes: the
    CPU's backend choice and that backend's layout, asked of CPU fake tensors shaped and strided as the axon ones, so
    that the size comparisons they make are recorded as the graph's guards."""
    input_, weight = named["input"], named["weight"]

    def on_cpu(tensor):
        return torch.empty_strided(tensor.shape, tensor.stride(), dtype=tensor.dtype, device="cpu")

    with fake_mode:
        cpu_input, cpu_weight = on_cpu(input_), on_cpu(weight)
        bias = named.get("bias") if func in _FORWARD else None
        backend = torch._C._select_conv_backend(
            cpu_input, cpu_weight, None if bias is None else on_cpu(bias), list(named["stride"]),
            list(named["padding"]), list(named["dilation"]), bool(named["transposed"]),
            list(named["output_padding"]), named["groups"],
            None if func in _FORWARD or named.get("bias_sizes") is None else list(named["bias_sizes"]))
        return torch._C._conv_determine_backend_memory_format(cpu_input, cpu_weight, backend)


def _axon_convolution(original, fake_mode, func, *args, **kwargs):
    result = original(fake_mode, func, *args, **kwargs)  # PyTorch's checks and, off axon, its answer
    normalized = normalize_function(func, args=args, kwargs=kwargs, normalize_to_only_use_kwargs=True)
    if normalized is None:
        return result
    named = normalized.kwargs
    input_, weight = named["input"], named["weight"]
    device = input_.fake_device
    if device.type != "axon":
        return result
    if _all_static(input_, weight):
        bias = named.get("bias") if func in _FORWARD else None
        memory_format = _C._convolution_result_format(
            input_, weight, bias, list(named["stride"]), list(named["padding"]), list(named["dilation"]),
            bool(named["transposed"]), list(named["output_padding"]), int(named["groups"]))
    elif _all_hinted(input_, weight):
        memory_format = _symbolic_result_format(fake_mode, func, named)
    else:
        return result  # sizes without hints (data-dependent): PyTorch's meta strides, as for CPU tensors
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
