"""Default torch.compile (Inductor) on axon vs Inductor on CPU tensors and vs axon eager.

    python bench/default_compile.py [--models mlp,cnn,pooled_cnn,gpt]

The same models and steps as bench/compile.py (inference without grad; a training step of forward, loss and
backward; `pooled_cnn` is a CNN without batch norm, convolution, ReLU and max pooling twice). On the emulated
driver a default compile of axon tensors runs Inductor's C++ kernels launched on axon streams
(torch_axon/inductor/). Each device runs in processes of its own, alternating, best of two rounds
(timing.in_fresh_processes says why); the axon process measures the compiled model, then the eager one.
Reported: ms per call, Inductor-on-CPU time / Inductor-on-axon time (higher is better for axon; the target is
>= 0.95) and axon eager time / Inductor-on-axon time (what compiling gains on axon; issue 14's target >= 1.3).
"""

from __future__ import annotations

import argparse
import sys
import warnings

from compile import MODELS, measure
from timing import device_argument, in_fresh_processes, report_and_exit

warnings.simplefilter("ignore")
MODES = ("inference", "training")


def _models() -> list[str]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default="mlp,cnn,pooled_cnn,gpt")
    parser.add_argument("--device")
    return parser.parse_args().models.split(",")


def measure_device(device: str) -> dict[str, float]:
    """Seconds per call: `model mode inductor` on `device`, and `model mode eager` on axon."""
    import torch

    backends = ("inductor", "eager") if device == "axon" else ("inductor",)
    times = {}
    for model_name in _models():
        for backend in backends:
            torch._dynamo.reset()
            milliseconds = measure(MODELS[model_name], device, None if backend == "eager" else backend)
            for mode, value in zip(MODES, milliseconds):
                times[f"{model_name} {mode} {backend}"] = value / 1e3
    return times


def main() -> int:
    device = device_argument()
    if device is not None:
        report_and_exit(measure_device(device))
    models = _models()
    times = in_fresh_processes(__file__, arguments=("--models", ",".join(models)))
    cpu, axon = times["cpu"], times["axon"]
    print(f"{'model / mode':<22}{'cpu inductor ms':>18}{'axon inductor ms':>18}{'axon eager ms':>18}"
          f"{'cpu/axon inductor':>20}{'eager/compiled':>17}")
    for model_name in models:
        for mode in MODES:
            key = f"{model_name} {mode}"
            cpu_compiled, axon_compiled = cpu[f"{key} inductor"], axon[f"{key} inductor"]
            axon_eager = axon[f"{key} eager"]
            print(f"{key:<22}{cpu_compiled * 1e3:>18.2f}{axon_compiled * 1e3:>18.2f}{axon_eager * 1e3:>18.2f}"
                  f"{cpu_compiled / axon_compiled:>20.2f}{axon_eager / axon_compiled:>17.2f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
