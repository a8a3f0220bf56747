"""Prints the operators for csrc/ops/generic_operators.h.

Usage: python tools/list_generic_operators.py

Selects, from torchgen's native_functions.yaml (shipped in the torch wheel),
every operator overload that has a CPU kernel (directly, through a structured
delegate, or as a ufunc) and does not return a view, except those matched by
tools/generic_operator_exclusions.txt; plus the composite operators listed in
tools/generic_operator_inclusions.txt (their composite implementations refuse
devices other than CPU/CUDA).
"""

import pathlib
import re

import torchgen
import yaml

ROOT = pathlib.Path(__file__).resolve().parent
NATIVE = pathlib.Path(torchgen.__file__).parent / "packaged/ATen/native/native_functions.yaml"


def exclusion_patterns() -> list[re.Pattern]:
    lines = (ROOT / "generic_operator_exclusions.txt").read_text().splitlines()
    return [re.compile(line.strip()) for line in lines if line.strip() and not line.startswith("#")]


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

    excluded = exclusion_patterns()
    selected = []
    for name, entry in by_name.items():
        if any(pattern.search(name) for pattern in excluded):
            continue
        returns = entry["func"].split("->")[1]
        if re.search(r"Tensor\([a-z]\)(?!!)", returns):  # returns a view
            continue
        if has_cpu_kernel(entry):
            selected.append(name)
    inclusions = (ROOT / "generic_operator_inclusions.txt").read_text().splitlines()
    selected += [line.split("#")[0].strip() for line in inclusions if line.split("#")[0].strip()]
    print("\n".join(sorted(set(selected))))


if __name__ == "__main__":
    main()
