"""Inductor's C++ kernel scheduling, each kernel given a C entry point over 64-bit argument slots.

A kernel Inductor generates for the CPU is ``extern "C" void kernel(const float* in_ptr0, float* out_ptr0, const
int64_t ks0)``, called from Python through a binding that reads each tensor's data pointer at the call. On axon
the call must happen later, on the stream, so the source gains ``axon_slot_entry(const uint64_t* slots)``, which
unpacks one slot per argument and calls the kernel; the driver's host function calls it with pointers resolved
when the kernel runs (``csrc/host_execution/compiled_host_kernel.h``).
"""

from __future__ import annotations

from torch._inductor.codegen.cpp import CppScheduling
from torch._inductor.virtualized import V

from .argument_kinds import argument_kinds
from .kernel_source_rewrites import rewrite_kernel_source

SLOT_ENTRY_NAME = "axon_slot_entry"

# Inductor reads the kernel's declaration from the last `extern "C"` in the source, so the entry point's linkage
# comes from a macro defined before the kernel rather than that literal after it.
_PROLOGUE = '#define AXON_SLOT_ENTRY_LINKAGE extern "C" __attribute__((visibility("default")))\n#include <cstring>\n'


def _slot_value(index: int, c_type: str, kind: str) -> str:
    slot = f"slots[{index}]"
    if kind in ("r", "w"):
        return f"reinterpret_cast<{c_type}>({slot})"
    if kind == "i":
        return f"static_cast<int64_t>({slot})"
    return f"axon_slot_float({slot})"


def slot_entry_source(c_types: list[str]) -> str | None:
    """C++ for the slot entry point of a kernel with these argument types (None: some type has no slot form)."""
    kinds = argument_kinds(c_types)
    if kinds is None:
        return None
    arguments = ", ".join(_slot_value(i, c_type, kind) for i, (c_type, kind) in enumerate(zip(c_types, kinds)))
    return (
        "\nstatic inline float axon_slot_float(uint64_t slot) {\n"
        "    uint32_t bits = static_cast<uint32_t>(slot);\n"
        "    float value;\n"
        "    std::memcpy(&value, &bits, sizeof(value));\n"
        "    return value;\n"
        "}\n"
        f"AXON_SLOT_ENTRY_LINKAGE void {SLOT_ENTRY_NAME}(const uint64_t* slots) {{\n"
        f"    kernel({arguments});\n"
        "}\n"
    )


class AxonCppScheduling(CppScheduling):
    def define_kernel(self, src_code, nodes, kernel_args=None):
        if not V.graph.cpp_wrapper and src_code not in V.graph.wrapper_code.src_to_kernel:
            args = self.kernel_group.args if kernel_args is None else kernel_args
            _, _, c_types = args.cpp_argdefs()
            entry = slot_entry_source(list(c_types))
            if entry is not None:
                src_code = _PROLOGUE + rewrite_kernel_source(src_code) + entry
        return super().define_kernel(src_code, nodes, kernel_args)
