"""Which ATen operators have no native axon kernel."""

from __future__ import annotations

import torch

import torch_axon  # noqa: F401  registers the backend

_COMPOSITE_KEYS = ("CompositeImplicitAutograd", "CompositeExplicitAutograd",
                   "CompositeExplicitAutogradNonFunctional")


def operators_without_native_kernel() -> list[str]:
    """aten operators that have a CPU kernel but reach axon only through the CPU fallback.

    Excludes composite operators (they decompose into operators that do have
    kernels) and layouts axon does not support (sparse, quantized, MKL-DNN,
    nested), whose exclusion is justified in tools/generic_operator_exclusions.txt.
    """
    import re

    excluded = re.compile(r"sparse|mkldnn|nested|_to_dense|(?<!fake_)quantize_per|_quantized|^aten::dequantize|"
                          r"_make_per_|_dyn_quant|_pin_memory|is_pinned|^aten::quantized_")
    missing = []
    for schema in torch._C._jit_get_all_schemas():
        if not schema.name.startswith("aten::"):
            continue
        name = schema.name + (f".{schema.overload_name}" if schema.overload_name else "")
        if not torch._C._dispatch_has_kernel(name):
            continue  # a TorchScript builtin, not a dispatcher operator
        has = lambda key: torch._C._dispatch_has_kernel_for_dispatch_key(name, key)  # noqa: E731
        if not has("CPU") or any(has(key) for key in _COMPOSITE_KEYS) or has("PrivateUse1"):
            continue
        if excluded.search(schema.name):
            continue
        missing.append(name)
    return sorted(set(missing))
