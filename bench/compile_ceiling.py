"""How much can compiling gain on a training step? The time of its library kernels alone, against eager.

    python bench/compile_ceiling.py [--models mlp,cnn,pooled_cnn,gpt]

A compiled graph fuses the elementwise work, the reductions and the layout changes between the large library
kernels (matrix products, convolutions, attention), and removes Python's dispatch; it still calls the same
oneDNN/MKL/flash-attention kernels with the same shapes. So a step compiled perfectly takes at least the time
of those kernels run back to back, and `axon eager / library kernels alone` is the most compiling can gain.

The script records every ATen call of each training step of bench/compile.py on axon (a TorchDispatchMode),
then replays only the library kernels with the recorded arguments and times them. In the same process it
times the eager step, the compiled step (default `torch.compile`) and one 1024x1024x1024 product, whose rate is
this host's reference for a matrix product. Reported per model: ms per step, the library kernels' share of the
eager step, the ceiling eager / kernels, what compiling reached (eager / compiled), and the rate of the step's
matrix products and convolutions.
"""

from __future__ import annotations

import argparse
import math
import sys
import warnings

import torch
from compile import MODELS, _setups
from timing import seconds_per_call
from torch.utils._python_dispatch import TorchDispatchMode

warnings.simplefilter("ignore")
aten = torch.ops.aten

_PRODUCTS = {aten.mm.default, aten.addmm.default, aten.bmm.default, aten.baddbmm.default}
_CONVOLUTIONS = {aten.convolution.default, aten.convolution_backward.default}
_ATTENTION = {aten._scaled_dot_product_flash_attention_for_cpu.default,
              aten._scaled_dot_product_flash_attention_for_cpu_backward.default}
_LIBRARY_KERNELS = _PRODUCTS | _CONVOLUTIONS | _ATTENTION


class _Recorder(TorchDispatchMode):
    """Keeps (operator, args, kwargs) of each library kernel the step calls."""

    def __init__(self):
        super().__init__()
        self.calls = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in _LIBRARY_KERNELS:
            self.calls.append((func, args, kwargs))
        return func(*args, **kwargs)


def _product_flops(func, args) -> float:
    a, b = args[-2], args[-1]  # the factors: last in mm, addmm, bmm and baddbmm alike
    batch = a.shape[0] if a.dim() == 3 else 1
    return 2.0 * batch * a.shape[-2] * a.shape[-1] * b.shape[-1]


def _convolution_flops(func, args) -> float:
    """Multiply-adds of one direct convolution (each backward result costs about as much as the forward)."""
    if func is aten.convolution.default:
        x, weight, output = args[0], args[1], None
        output_mask = (True,)
    else:
        output, x, weight, output_mask = args[0], args[1], args[2], args[10]
    per_output = weight.shape[1] * math.prod(weight.shape[2:])  # weight.shape[1] is already per group
    if output is None:  # forward: the output's size from the input's batch and the weight's channels
        spatial = _forward_spatial(x, weight, args)
        outputs = x.shape[0] * weight.shape[0] * spatial
    else:
        outputs = output.numel()
    return 2.0 * outputs * per_output * sum(1 for wanted in output_mask[:2] if wanted)


def _forward_spatial(x, weight, args) -> int:
    stride, padding, dilation = args[3], args[4], args[5]
    size = 1
    for dim, length in enumerate(x.shape[2:]):
        kernel = dilation[dim] * (weight.shape[2 + dim] - 1) + 1
        size *= (length + 2 * padding[dim] - kernel) // stride[dim] + 1
    return size


def _replay(calls):
    def run():
        for func, args, kwargs in calls:
            func(*args, **kwargs)
    return run


def measure_model(name: str) -> dict[str, float]:
    torch._dynamo.reset()
    _, eager_step = _setups(MODELS[name], "axon", None)
    eager = seconds_per_call(eager_step, "axon", min_time=1.0)
    recorder = _Recorder()
    with recorder:
        eager_step()
    torch.axon.synchronize()
    calls = recorder.calls
    library = seconds_per_call(_replay(calls), "axon", min_time=1.0)
    result = {"eager": eager, "library": library}
    for group, operators, flops_of in (("products", _PRODUCTS, _product_flops),
                                       ("convolutions", _CONVOLUTIONS, _convolution_flops)):
        group_calls = [call for call in calls if call[0] in operators]
        if group_calls:
            flops = sum(flops_of(func, args) for func, args, _ in group_calls)
            result[group + " GFLOP/s"] = flops / seconds_per_call(_replay(group_calls), "axon", min_time=1.0) / 1e9
    del recorder, calls
    torch._dynamo.reset()
    _, compiled_step = _setups(MODELS[name], "axon", "inductor")
    result["compiled"] = seconds_per_call(compiled_step, "axon", min_time=1.0)
    return result


def reference_product_rate() -> float:
    a, b = torch.randn(1024, 1024, device="axon"), torch.randn(1024, 1024, device="axon")
    return 2.0 * 1024**3 / seconds_per_call(lambda: a @ b, "axon", min_time=1.0) / 1e9


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default="mlp,cnn,pooled_cnn,gpt")
    models = parser.parse_args().models.split(",")
    print(f"1024x1024x1024 matrix product on axon: {reference_product_rate():.0f} GFLOP/s (this host's reference)")
    print(f"{'training step':<14}{'eager ms':>10}{'kernels ms':>12}{'share':>8}{'ceiling':>9}{'compiled ms':>13}"
          f"{'reached':>9}{'products GFLOP/s':>18}{'convolutions GFLOP/s':>22}")
    for name in models:
        r = measure_model(name)
        products = f"{r['products GFLOP/s']:.0f}" if "products GFLOP/s" in r else "-"
        convolutions = f"{r['convolutions GFLOP/s']:.0f}" if "convolutions GFLOP/s" in r else "-"
        print(f"{name:<14}{r['eager'] * 1e3:>10.2f}{r['library'] * 1e3:>12.2f}{r['library'] / r['eager']:>8.2f}"
              f"{r['eager'] / r['library']:>9.2f}{r['compiled'] * 1e3:>13.2f}{r['eager'] / r['compiled']:>9.2f}"
              f"{products:>18}{convolutions:>22}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
