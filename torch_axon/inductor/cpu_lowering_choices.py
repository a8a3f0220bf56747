"""Lowering choices Inductor makes for device type "cpu" only, which axon graphs (the same C++ kernels) take too.

Concatenation. Inductor lowers `cat` on other devices to one generated kernel that, for each output element,
picks its input by comparing the index against each input's range. On GPUs that fuses the producers; the C++
generator writes it as a scalar loop of masked loads. For "cpu" Inductor takes a ConcatKernel instead: each
input is copied (or computed) straight into its slice of the output, vector code. A GPT's compiled backward
joins the query, key and value gradients so, and the masked kernel took 337 µs a call where eager's `cat` took
100 µs. Axon graphs now get the ConcatKernel where the CPU would, and Inductor's own lowering for the cases its
CPU branch treats apart (8-bit integers, one input, skipped empty inputs, mixed dtypes).

Division by a constant. Elsewhere Inductor multiplies by the reciprocal; for "cpu" it divides, as eager does
(PyTorch issue 157959): `x / 3.0` compiled on axon differed from eager in the last bit for a third of the
elements, and compiled on the CPU in none. Axon graphs divide.

Variance. For "cpu" Inductor computes variances of rows up to `config.cpp.use_two_step_variance_threshold`
(1024) long in two passes, mean then squared deviations, and Welford's one-pass update only above; for other
devices the bound is `config.unroll_reductions_threshold` (8). Axon graphs take the CPU's bound, so their
variances (and the normalizations built on them) are the CPU graphs' to the bit.

When to realize an intermediate (`ir.is_cpu`, which only these heuristics ask): for "cpu" Inductor stores a
reused result of a costly function (exp, log, tanh, sigmoid, ...) instead of recomputing it in each user, and
allows larger inlined expressions and more reads before it stores one. Stored, a softmax's exponentials stay in a
per-row buffer of the fused kernel; recomputed, a compiled softmax times a weight took 1.49-1.57 ms against the
CPU graph's 1.19-1.25. Axon graphs take the CPU's thresholds.

A convolution's bias. For other devices Inductor peels the bias off a convolution (cuDNN is slower with it) and
adds it in a generated kernel; in a CNN's training graph that was one more pass over each convolution's result
inside the batch norm's kernel. Axon's convolution is oneDNN's, which adds the bias as it writes its result, as
on the CPU, so axon graphs keep the bias in the convolution.
"""

from __future__ import annotations

import functools

import torch

from .extern_operators import _on_axon


def _concatenation_on_axon(original):
    @functools.wraps(original)
    def cat(inputs, dim=0):
        from torch._inductor import config, ir, lowering
        from torch._inductor.virtualized import V

        def empty_1d(input_):
            size = input_.get_size()
            return len(size) == 1 and V.graph.sizevars.statically_known_equals(size[0], 0)

        if (not inputs or not _on_axon(inputs[0]) or len(inputs) < 2 or config.force_pointwise_cat
                or len({input_.get_dtype() for input_ in inputs}) != 1
                or inputs[0].get_dtype() in (torch.int8, torch.uint8) or any(map(empty_1d, inputs))):
            return original(inputs, dim)
        return ir.TensorBox(ir.ConcatKernel.create(inputs, lowering._validate_dim(inputs[0], dim, 0)))

    cat._axon_choice = True
    return cat


def _division_on_axon(original):
    @functools.wraps(original)
    def div_prim(a, b):
        from torch._inductor import lowering
        from torch._inductor.virtualized import ops

        integral = all(lowering.is_boolean_type(x) or lowering.is_integer_type(x) for x in (a, b))
        if integral or not _on_axon(a):
            return original(a, b)
        return lowering.make_pointwise(lambda *args: ops.truediv(*args))(a, b)  # the CPU's branch

    div_prim._axon_choice = True
    return div_prim


def _two_step_variance_on_axon(original):
    @functools.wraps(original)
    def use_two_step_variance(x, axis, keepdim, input_dtype):
        import sympy
        from torch._inductor import config, lowering

        if not _on_axon(x):
            return original(x, axis, keepdim, input_dtype)
        # The CPU's branch: no split check, no minimum size.
        kwargs = lowering._make_reduction_inner(x, axis=lowering._validate_reduction_axis(x, axis),
                                                keepdims=keepdim, dtype=None, override_return_dtype=None)
        numel = lowering.sympy_product(kwargs["reduction_ranges"])
        return (isinstance(numel, sympy.Integer) and int(numel) <= config.cpp.use_two_step_variance_threshold
                and lowering.sympy_product(kwargs["ranges"]) != 1)

    use_two_step_variance._axon_choice = True
    return use_two_step_variance


def _cpu_or_axon(original):
    @functools.wraps(original)
    def is_cpu(x) -> bool:
        from torch._inductor import ir

        return original(x) or ir.get_device_type(x) == "axon"

    is_cpu._axon_choice = True
    return is_cpu


def _convolution_on_axon(original):
    @functools.wraps(original)
    def convolution(x, weight, bias, *args, **kwargs):
        from torch._inductor import ir

        if bias is None or not _on_axon(x):
            return original(x, weight, bias, *args, **kwargs)
        # The lowering asks the device type of `x` once, to decide whether to peel the bias; for the duration of
        # the call that one node answers "cpu" (Inductor lowers a graph on one thread).
        device_type = ir.get_device_type

        def cpu_for_this_input(node):
            return "cpu" if node is x else device_type(node)

        ir.get_device_type = cpu_for_this_input
        try:
            return original(x, weight, bias, *args, **kwargs)
        finally:
            ir.get_device_type = device_type

    convolution._axon_choice = True
    return convolution


def _replace(module, name, wrap):
    """Wraps `module.name` with `wrap`: the module global, which Inductor's other lowerings call by name, and its
    entries in the lowering table."""
    from torch._inductor import lowering

    current = getattr(module, name)
    if getattr(current, "_axon_choice", False):
        return
    wrapped = wrap(current)
    setattr(module, name, wrapped)
    for key in [key for key, value in lowering.lowerings.items() if value is current]:
        lowering.lowerings[key] = wrapped


def install_cpu_lowering_choices() -> None:
    """Wraps Inductor's `cat`, `div_prim` and `convolution` lowerings, its two-step variance choice and its
    realization heuristics' device test (idempotent)."""
    from torch._inductor import ir, lowering
    from torch._inductor.kernel import conv

    _replace(ir, "is_cpu", _cpu_or_axon)
    _replace(lowering, "cat", _concatenation_on_axon)
    _replace(lowering, "div_prim", _division_on_axon)
    _replace(lowering, "use_two_step_variance", _two_step_variance_on_axon)
    _replace(conv, "convolution", _convolution_on_axon)
