"""Compiled eager kernels against host kernels and the CPU (csrc/compiled_execution/).

    python bench/eager_kernels.py [--driver pjrt|emulated] [--steps 10]

1. First call of each operator at a new shape, compiled: in a fresh process with an empty compile cache
   (cold), then in another fresh process with the cache the first one wrote (warm disk cache); and the
   steady time per call afterwards, compiled and as a host kernel.
2. The GPT training step of bench/training.py: CPU, axon with host kernels, axon with compiled kernels, in
   one process, with how many call shapes one step compiles and how many of its calls ran compiled.

Each part runs in its own processes, on the driver given (default pjrt: the driver whose memory the host
cannot address, where `auto` picks compiled kernels).
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

OPS = {
    "add": "lambda a, b, i: a + b",
    "mul_scalar": "lambda a, b, i: a * 1.5",
    "mm": "lambda a, b, i: a @ b",
    "softmax": "lambda a, b, i: a.softmax(-1)",
    "layer_norm": "lambda a, b, i: torch.nn.functional.layer_norm(a, a.shape[-1:])",
    "sum": "lambda a, b, i: a.sum(0)",
    "gelu": "lambda a, b, i: torch.nn.functional.gelu(a)",
    "add_ (in place)": "lambda a, b, i: a.add_(b)",
    "embedding": "lambda a, b, i: torch.nn.functional.embedding(i, a)",
    "index_select": "lambda a, b, i: a.index_select(1, i)",
}


def first_calls() -> dict:
    import torch
    from timing import seconds_per_call

    import torch_axon  # noqa: F401

    torch.axon.set_eager_kernels("compiled")
    results = {}
    for size, (name, source) in enumerate(OPS.items()):
        function = eval(source, {"torch": torch})  # noqa: S307  the table above
        n = 64 + size  # a shape no other operator here uses
        a, b = torch.randn(n, n, device="axon"), torch.randn(n, n, device="axon")
        i = torch.randint(0, n, (n,), device="axon")  # indices, for the indexing operators
        torch.axon.synchronize()
        start = time.perf_counter()
        function(a, b, i)
        torch.axon.synchronize()
        first = time.perf_counter() - start
        call = functools.partial(function, a, b, i)
        compiled = seconds_per_call(call, "axon", min_time=0.2)
        torch.axon.set_eager_kernels("host")
        host = seconds_per_call(call, "axon", min_time=0.2)
        torch.axon.set_eager_kernels("compiled")
        results[name] = {"first_ms": first * 1e3, "compiled_us": compiled * 1e6, "host_us": host * 1e6}
    results["stats"] = torch.axon.compiled_kernel_stats()
    return results


def gpt_steps(steps: int) -> dict:
    import torch
    from timing import seconds_per_call
    from training import gpt, step_function

    import torch_axon  # noqa: F401

    torch.manual_seed(0)
    reference, inputs, target = gpt()
    times, counts = {}, {}
    for label, device, mode in (("cpu", "cpu", None), ("axon host kernels", "axon", "host"),
                                ("axon compiled kernels", "axon", "compiled")):
        if mode:
            torch.axon.set_eager_kernels(mode)
        model, _, _ = gpt()
        model.load_state_dict(reference.state_dict())
        step = step_function(model, inputs, target, device)
        torch.axon.reset_compiled_kernel_stats()
        start = time.perf_counter()
        step()
        if device == "axon":
            torch.axon.synchronize()
        first = time.perf_counter() - start
        lowered = torch.axon.compiled_kernel_stats()
        torch.axon.reset_compiled_kernel_stats()
        step()
        per_step = torch.axon.compiled_kernel_stats()
        times[label] = {"first_s": first, "step_ms": seconds_per_call(step, device, min_time=1.0) * 1e3}
        counts[label] = {"first_step": lowered, "later_step": per_step}
    return {"times": times, "counts": counts}


def run_worker(part: str, env: dict, steps: int) -> dict:
    here = pathlib.Path(__file__).resolve().parent
    code = (f"import json, sys; sys.path.insert(0, {str(here)!r}); import eager_kernels as b; "
            f"print('RESULT' + json.dumps(b.{part}({'' if part == 'first_calls' else steps})))")
    result = subprocess.run([sys.executable, "-c", code], env={**os.environ, **env}, capture_output=True, text=True,
                            cwd=here)
    if result.returncode != 0:
        raise SystemExit(result.stderr[-4000:])
    line = next(line for line in result.stdout.splitlines() if line.startswith("RESULT"))
    return json.loads(line[len("RESULT"):])


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--driver", default="pjrt", choices=["pjrt", "emulated"])
    parser.add_argument("--steps", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as cache:
        # Compile at each shape's first call (the default waits for the second), to time the compile itself.
        env = {"AXON_DRIVER": args.driver, "AXON_COMPILE_CACHE_DIR": cache, "AXON_EAGER_COMPILE_AFTER": "1"}
        cold = run_worker("first_calls", env, args.steps)
        warm = run_worker("first_calls", env, args.steps)
    print(f"\nFirst call at a new shape, compiled kernels, driver {args.driver} (ms), and steady time per call (µs)")
    print(f"{'operator':<18}{'cold cache ms':>15}{'warm disk ms':>15}{'compiled µs':>14}{'host µs':>10}")
    for name in OPS:
        print(f"{name:<18}{cold[name]['first_ms']:>15.1f}{warm[name]['first_ms']:>15.1f}"
              f"{warm[name]['compiled_us']:>14.1f}{warm[name]['host_us']:>10.1f}")
    print(f"counters, cold process: {cold['stats']}")

    with tempfile.TemporaryDirectory() as cache:
        env = {"AXON_DRIVER": args.driver, "AXON_COMPILE_CACHE_DIR": cache, "AXON_EAGER_COMPILE_AFTER": "1"}
        gpt = run_worker("gpt_steps", env, args.steps)
    cpu = gpt["times"]["cpu"]["step_ms"]
    print(f"\nGPT training step (bench/training.py's), driver {args.driver}")
    print(f"{'':<24}{'first step s':>14}{'step ms':>10}{'/ CPU':>8}")
    for label, measured in gpt["times"].items():
        print(f"{label:<24}{measured['first_s']:>14.2f}{measured['step_ms']:>10.1f}{measured['step_ms'] / cpu:>8.2f}")
    counts = gpt["counts"]["axon compiled kernels"]
    print(f"compiled kernels, first step: {counts['first_step']}")
    print(f"compiled kernels, a later step: {counts['later_step']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
