"""Default torch.compile (Inductor) on axon vs Inductor on CPU tensors, in one run.

    python bench/default_compile.py [--models mlp,cnn,gpt]

The same models and steps as bench/compile.py (inference without grad; a training step of forward, loss and
backward). On the emulated driver a default compile of axon tensors runs Inductor's C++ kernels launched on
axon streams (torch_axon/inductor/). Reported: ms per call and Inductor-on-CPU time / Inductor-on-axon time
(higher is better for axon; the target is >= 0.95).
"""

from __future__ import annotations

import argparse
import sys
import warnings

from compile import measure_all, table_header, table_rows

warnings.simplefilter("ignore")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default="mlp,cnn,gpt")
    args = parser.parse_args()
    configurations = [("cpu inductor", "cpu", "inductor"), ("axon inductor", "axon", "inductor"),
                      ("axon eager", "axon", None)]
    ratios = [("cpu inductor", "axon inductor", "cpu/axon inductor")]
    print(table_header(configurations, ratios))
    for model_name in args.models.split(","):
        results = measure_all(model_name, configurations)
        print("\n".join(table_rows(model_name, configurations, results, ratios)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
