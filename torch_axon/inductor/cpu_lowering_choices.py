"""Lowering choices Inductor makes for device type "cpu" only, which axon graphs (the same C++ kernels) take too.

Concatenation. Inductor lowers `cat` on other devices to one generated kernel that, for each output element,
picks its input by comparing the index against each input's range. On GPUs that fuses the producers; the C++
generator writes it as a scalar loop of masked loads. For "cpu" Inductor takes a ConcatKernel instead: each
input is copied (or computed) straight into its slice of the output, vector code. A GPT's compiled backward
joins the query, key and value gradients so, and the masked kernel took 337 µs a call where eager's `cat` took
100 µs. Axon graphs now get the ConcatKernel where the CPU would, and Inductor's own lowering for the cases its
CPU branch treats apart (8-bit integers, one input, skipped empty inputs, mixed dtypes).
"""

from __future__ import annotations

import functools

import torch

aten = torch.ops.aten


def _concatenation_on_axon(original):
    @functools.wraps(original)
    def cat(inputs, dim=0):
        from torch._inductor import config, ir, lowering
        from torch._inductor.virtualized import V

        def empty_1d(input_):
            size = input_.get_size()
            return len(size) == 1 and V.graph.sizevars.statically_known_equals(size[0], 0)

        device = inputs[0].get_device() if inputs else None
        if (device is None or device.type != "axon" or len(inputs) < 2 or config.force_pointwise_cat
                or len({input_.get_dtype() for input_ in inputs}) != 1
                or inputs[0].get_dtype() in (torch.int8, torch.uint8) or any(map(empty_1d, inputs))):
            return original(inputs, dim)
        return ir.TensorBox(ir.ConcatKernel.create(inputs, lowering._validate_dim(inputs[0], dim, 0)))

    cat._axon_choice = True
    return cat


def install_cpu_lowering_choices() -> None:
    """Wraps Inductor's `cat` lowering (idempotent)."""
    from torch._inductor import lowering

    current = lowering.lowerings[aten.cat]
    if not getattr(current, "_axon_choice", False):
        wrapped = _concatenation_on_axon(current)
        for key in [key for key, value in lowering.lowerings.items() if value is current]:
            lowering.lowerings[key] = wrapped
