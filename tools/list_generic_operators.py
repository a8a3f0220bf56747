"""Prints the operators for csrc/ops/generic_operators.h.

Usage: python tools/list_generic_operators.py > /tmp/ops.txt

Selects, from torchgen's native_functions.yaml (shipped in the torch wheel),
every overload of the families in tools/generic_operator_families.txt that has
a CPU kernel (directly, through a structured delegate, or as a ufunc) and does
not return a view, minus the operators with hand-written kernels.
"""

import pathlib
import re

import torchgen
import yaml

ROOT = pathlib.Path(__file__).resolve().parent
NATIVE = pathlib.Path(torchgen.__file__).parent / "packaged/ATen/native/native_functions.yaml"
HAND_WRITTEN = {
    "empty.memory_format", "empty_strided", "as_strided", "view", "_reshape_alias", "unfold", "view_as_real",
    "view_as_complex", "resize_", "set_", "record_stream", "_copy_from", "_copy_from_and_resize",
    "_local_scalar_dense", "uniform_", "normal_", "bernoulli_.float", "random_", "random_.from", "random_.to",
    "native_dropout",
}


def main() -> None:
    entries = yaml.load(NATIVE.read_text(), Loader=yaml.CSafeLoader)
    by_name = {entry["func"].split("(")[0]: entry for entry in entries}

    def has_cpu_kernel(entry: dict, depth: int = 0) -> bool:
        if "ufunc_inner_loop" in entry:
            return True
        for keys in entry.get("dispatch", {}):
            if "CPU" in [key.strip() for key in keys.split(",")]:
                return True
        delegate = entry.get("structured_delegate")
        return delegate is not None and depth < 2 and has_cpu_kernel(by_name[delegate], depth + 1)

    families = set((ROOT / "generic_operator_families.txt").read_text().split())
    selected = []
    for name, entry in by_name.items():
        family = name.split(".")[0]
        if (family not in families and family.rstrip("_") not in families) or name in HAND_WRITTEN:
            continue
        returns = entry["func"].split("->")[1]
        if re.search(r"Tensor\([a-z]\)(?!!)", returns):  # returns a view
            continue
        if has_cpu_kernel(entry):
            selected.append(name)
    print("\n".join(sorted(selected)))


if __name__ == "__main__":
    main()
