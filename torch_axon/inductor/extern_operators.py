"""Operators that axon graphs call as axon's own kernels instead of Inductor's generated code.

Inductor decomposes these into code that, on the CPU's C++ generator (which axon graphs use), runs several times
slower than the kernel it replaces; measured on axon tensors, forward and backward, compiled against eager:
- max pooling with indices: each window's argmax comes from vector masks cast element by element to 64-bit
  indices, the backward is a scatter of atomic adds. A ReLU and a 2×2 pooling of 32×32×32×32 floats took
  7.1-7.7 ms against 0.41 ms eager (Inductor on CPU tensors: 7.1 against 0.77), and a conv-ReLU-pool network's
  compiled training step 2.8 times its eager time;
- scatters with atomic adds: gather's backward and scatter_add (2.3×), index_select's backward, index_add
  (2.1×), embedding's backward (2.7×), unfold's backward, col2im (2.8×);
- roll (3.1×, its indices computed modulo the size), group norm (1.9×), grid sampling (1.7×);
- batch norm in training, forward and backward: each channel's statistics come from a Welford reduction over
  channel groups of one vector, a parallel region per group, each striding over the whole input (a channels-last
  32×32×32×32 batch norm and ReLU forward 8.7 ms against 0.58 eager on a 2-core AVX2 host; a CNN's compiled
  training step 21.1 ms against 14.0 eager, 12.5 with axon's kernels).
In axon graphs their decompositions decline and they lower to extern calls of axon's kernels, launched on the
stream like every extern kernel. Graphs without axon tensors keep Inductor's own code. A max pooling whose indices
nothing uses (inference) keeps Inductor's code: without indices it is a few vector maxima, fused with the
normalization and activation before it (a CNN's compiled inference step 1.52-1.64 ms against 1.63-1.74).

Nearest upsampling (2-d, 7.7× eager's time) is decomposed earlier: PyTorch registers Python kernels for it at
the autograd and composite keys, which the tracer runs before it asks any decomposition table. While Inductor
traces an axon graph (`tracing_axon_graph`, entered by routing.py), those kernels step aside for axon tensors,
so the operator and its backward reach the graph whole. Bilinear upsampling likewise, but only where its
input needs a gradient: Inductor's forward code is faster than axon's kernel (0.6 of its time) and only the
backward, a scatter of atomic adds, is slow (3.9× forward and backward). Other tracers (the StableHLO backend's,
export) keep PyTorch's decomposition.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools

import torch
from torch._C import DispatchKey

aten = torch.ops.aten
_OPERATORS = (aten.max_pool2d_with_indices.default, aten.max_pool2d_with_indices_backward.default,
              aten.max_pool3d_with_indices.default,
              aten.upsample_nearest2d.default, aten.upsample_nearest2d_backward.default,
              aten._upsample_nearest_exact2d.default, aten._upsample_nearest_exact2d.vec,
              aten._upsample_nearest_exact2d_backward.default,
              aten.scatter_add.default, aten.index_add.default, aten.embedding_dense_backward.default,
              aten.roll.default, aten.col2im.default, aten.native_group_norm.default,
              aten.native_group_norm_backward.default, aten.grid_sampler_2d.default,
              aten.grid_sampler_2d_backward.default,
              aten._native_batch_norm_legit_functional.default, aten._native_batch_norm_legit.no_stats,
              aten.native_batch_norm_backward.default)
_PYTHON_DECOMPOSED = (aten.upsample_nearest2d.vec, aten.upsample_nearest2d.default,
                      aten._upsample_nearest_exact2d.vec, aten._upsample_nearest_exact2d.default)
# Inductor's forward code beats axon's kernel here; its backward (a scatter of atomic adds) does not.
_PYTHON_DECOMPOSED_FORWARD_ONLY = (aten.upsample_bilinear2d.vec, aten.upsample_bilinear2d.default)
_FAKE_LAYOUT_IS_CONTIGUOUS = (aten.roll.default,)
# Their fake kernels give the result layouts axon's kernels give whatever the input layouts (channels-last or not,
# gradients in either), so they take their inputs as Inductor laid them out: in a channels-last graph, traced
# (contiguous) layouts cost a conversion before and after each pooling.
_FAKE_LAYOUT_AS_KERNEL = (aten.max_pool2d_with_indices.default, aten.max_pool2d_with_indices_backward.default,
                          aten.max_pool3d_with_indices.default,
                          aten.upsample_nearest2d.default, aten.upsample_nearest2d_backward.default,
                          aten._upsample_nearest_exact2d.default, aten._upsample_nearest_exact2d_backward.default)
# Their kernels lay results out as the input, dense channels-last or contiguous; so do their fake kernels for such
# inputs, except the backwards', which follow the gradient: the gradient is laid out as the input. (Group norm's
# backward in a channels-last graph got a contiguous gradient and a channels-last input: the fake kernel said
# contiguous, the kernel gave channels-last, and Inductor's assertion failed.)
_NORMALIZATION_FORWARD = (aten._native_batch_norm_legit_functional.default, aten._native_batch_norm_legit.no_stats,
                          aten.native_group_norm.default)
_NORMALIZATION_BACKWARD = (aten.native_batch_norm_backward.default, aten.native_group_norm_backward.default)
# Its kernel is fast where the gradient has the input's layout (a contiguous gradient for a channels-last input of
# 32×64×16×16 took 1.27 ms against 0.34): a channels-last input's gradient is made channels-last, on the small side.
_POOLING_BACKWARD = (aten.max_pool2d_with_indices_backward.default,)
_INDUCTOR_CODE_WITHOUT_INDICES = (aten.max_pool2d_with_indices.default, aten.max_pool3d_with_indices.default)
# In graphs traced with symbolic sizes batch norm keeps Inductor's decomposition, as on CPU tensors: with axon's
# kernel, a view saved for its backward (instance norm's [1, batch x channels, height, width]) reached Inductor's
# stride reasoning for graph outputs, which fails on such sizes (a TypeError comparing strides, or ValueRangeError).
_DECOMPOSED_AT_SYMBOLIC_SIZES = (aten._native_batch_norm_legit_functional.default,
                                 aten._native_batch_norm_legit.no_stats, aten.native_batch_norm_backward.default)
_tracing_axon_graph = contextvars.ContextVar("tracing_axon_graph", default=False)


@contextlib.contextmanager
def tracing_axon_graph():
    """Inductor is tracing and compiling a graph with axon tensors."""
    token = _tracing_axon_graph.set(True)
    try:
        yield
    finally:
        _tracing_axon_graph.reset(token)


def takes_either_layout(operator) -> bool:
    """Axon's kernel for `operator` in a graph takes channels-last or contiguous inputs as Inductor lays them out."""
    return operator in (*_FAKE_LAYOUT_AS_KERNEL, *_NORMALIZATION_FORWARD, *_NORMALIZATION_BACKWARD)


def _on_axon(value) -> bool:
    """`value` is a traced tensor (decompositions), an Inductor IR node (lowerings) or a number (never on axon)."""
    if isinstance(value, torch.Tensor):
        device = value.device
    else:
        device = value.get_device() if hasattr(value, "get_device") else None
    return device is not None and device.type == "axon"


def _indices_unused(first) -> bool:
    """Nothing uses the indices (second result) of the max pooling being lowered: no backward saves them."""
    from torch._inductor.virtualized import V

    return all(user.args[1] != 1 for user in V.graph.current_node.users)


def _symbolic_sizes(first) -> bool:
    """`first` (a traced tensor or an IR node) has symbolic sizes: the graph was traced with dynamic shapes."""
    from torch.fx.experimental.symbolic_shapes import free_symbols

    sizes = first.shape if isinstance(first, torch.Tensor) else first.get_size()
    return any(bool(free_symbols(size)) for size in sizes if not isinstance(size, int))


def _never(first) -> bool:
    return False


def _on_axon_instead(original, on_axon, *, unless=_never):
    """`original` (a decomposition or a lowering), with calls whose first argument is on axon going to `on_axon`
    unless `unless(first argument)`."""

    @functools.wraps(original)
    def call(first, *args, **kwargs):
        if _on_axon(first) and not unless(first):
            return on_axon(first, *args, **kwargs)
        return original(first, *args, **kwargs)

    call._axon_extern = True
    return call


def _decline(*args, **kwargs):
    return NotImplemented  # the operator stays whole for its lowering


def _laid_out_as_traced(operator, extern_call):
    """`extern_call` with its tensor arguments in the layouts the graph was traced with, so the kernel gives the
    result layouts the fake tensors predicted (Inductor asserts them), except for `_FAKE_LAYOUT_AS_KERNEL`, which
    take any. roll's fake result is contiguous whatever its input's layout while the kernel keeps the input's, so
    its input is made contiguous."""

    def call(*args, **kwargs):
        from torch._inductor import lowering
        from torch._inductor.virtualized import V

        if operator in _FAKE_LAYOUT_IS_CONTIGUOUS:
            args, kwargs = lowering.require_contiguous(V.graph.current_node, *args, **kwargs)
        elif operator in _NORMALIZATION_FORWARD:
            args = (_dense_as_itself_or_contiguous(args[0]), *args[1:])
        elif operator in _NORMALIZATION_BACKWARD:
            input_ = _dense_as_itself_or_contiguous(args[1])
            args = (_laid_out_as(args[0], input_), input_, *args[2:])
        elif operator in _POOLING_BACKWARD and _is_dense_channels_last(args[1]):
            args = (_laid_out_as(args[0], args[1]), *args[1:])
        elif operator not in _FAKE_LAYOUT_AS_KERNEL:
            args, kwargs = lowering.constrain_to_fx_strides(V.graph.current_node, *args, **kwargs)
        return extern_call(*args, **kwargs)

    call._axon_extern = True
    return call


def _channels_last_order(value):
    """The channels-last stride order for `value`'s rank, or None where it has none."""
    from torch._inductor import ir

    return {4: ir.NHWC_STRIDE_ORDER, 5: ir.NHWDC_STRIDE_ORDER}.get(len(value.get_size()))


def _is_dense_channels_last(value) -> bool:
    from torch._inductor import ir

    layout = value.maybe_get_layout() if ir.is_storage_and_layout(value) else None
    return isinstance(layout, ir.FixedLayout) and ir.Layout.is_channels_last_contiguous(layout.size, layout.stride)


def _dense_as_itself_or_contiguous(value):
    """`value` as it is where it is dense channels-last, else contiguous."""
    from torch._inductor import ir

    return value if _is_dense_channels_last(value) else ir.ExternKernel.require_contiguous(value)


def _laid_out_as(value, model):
    """`value` channels-last where `model` (dense) is, else contiguous."""
    from torch._inductor import ir

    if _is_dense_channels_last(model):
        return ir.ExternKernel.require_stride_order(value, _channels_last_order(model))
    return ir.ExternKernel.require_contiguous(value)


def _extern_call(operator):
    """A lowering that calls axon's kernel for `operator` (an Inductor fallback, not listed as one)."""
    from torch._inductor import lowering

    return _laid_out_as_traced(operator, lowering.fallback_handler(operator, add_to_fallback_set=False))


def _stepping_aside(operator, python_kernel, *, only_for_gradients=False):
    @functools.wraps(python_kernel)
    def kernel(input_, *args, **kwargs):
        if _tracing_axon_graph.get() and _on_axon(input_) and (
                not only_for_gradients or (input_.requires_grad and torch.is_grad_enabled())):
            with torch._C._DisablePythonDispatcher():  # the C++ kernels: autograd's, then the tracer's
                return operator(input_, *args, **kwargs)
        return python_kernel(input_, *args, **kwargs)

    kernel._axon_extern = True
    return kernel


def install_extern_operators() -> None:
    """Wraps Inductor's decompositions and lowerings of `_OPERATORS` (idempotent)."""
    from torch._inductor import decomposition, lowering

    for operator in _OPERATORS:
        current = decomposition.decompositions.get(operator)
        if current is not None and not getattr(current, "_axon_extern", False):
            decomposition.decompositions[operator] = _on_axon_instead(
                current, _decline, unless=_symbolic_sizes if operator in _DECOMPOSED_AT_SYMBOLIC_SIZES else _never)
        current = lowering.lowerings.get(operator)
        extern_call = _extern_call(operator)
        if current is None:  # only ever decomposed: only axon's calls get here, and any call is an extern one
            lowering.lowerings[operator] = extern_call
        elif not getattr(current, "_axon_extern", False):
            lowering.lowerings[operator] = _on_axon_instead(
                current, extern_call, unless=_indices_unused if operator in _INDUCTOR_CODE_WITHOUT_INDICES else _never)
    # Bilinear upsampling's forward is decomposed while tracing (Inductor's code is the faster there) and has no
    # lowering; should a trace keep it whole (a CI run saw one, after other tests' compiles), it runs as axon's
    # kernel instead of failing Inductor's assertion that an operator with a decomposition gets no fallback.
    bilinear = aten.upsample_bilinear2d.default
    if bilinear not in lowering.lowerings:
        lowering.lowerings[bilinear] = _extern_call(bilinear)
    decomposition.fast_random_decomps.cache_clear()  # a copy of the table, made at the first compile
    for operator in _PYTHON_DECOMPOSED + _PYTHON_DECOMPOSED_FORWARD_ONLY:
        for key in (DispatchKey.Autograd, DispatchKey.CompositeImplicitAutograd):
            current = operator.py_kernels.get(key)
            if current is not None and not getattr(current, "_axon_extern", False):
                operator.py_kernels[key] = _stepping_aside(
                    operator, current, only_for_gradients=operator in _PYTHON_DECOMPOSED_FORWARD_ONLY)
        operator._dispatch_cache.clear()
