"""torch.compile benchmarks: compiled axon vs axon eager vs torch eager (CPU) vs Inductor (CPU).

    python bench/compile.py [--models mlp,cnn,gpt] [--skip-inductor]

For each model, inference (no grad) and one training step (forward, loss,
backward; the optimizer is left out so the number is the compiled graphs').
Ratios are against axon eager and against Inductor, measured in the same run.
Also: cold compile time (empty disk cache), warm-cache load time in a fresh
process (nothing compiled), a compiled call's launch time against its run
time, and the per-call overhead of a tiny graph.
Targets: GPT training step compiled >= 1.3x faster than axon eager, and no
slower than 1.2x Inductor's time.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
import warnings

import torch
from timing import seconds_per_call
from torch import nn
from training import TinyGPT, cnn, gpt, mlp, pooled_cnn

warnings.simplefilter("ignore")
MODELS = {"mlp": mlp, "cnn": cnn, "pooled_cnn": pooled_cnn, "gpt": gpt}


def _loss(model, inputs, target, is_gpt):
    if is_gpt:
        return model(inputs[0], target)[1]
    return nn.functional.cross_entropy(model(*inputs), target)


def _setups(factory, device, backend):
    torch.manual_seed(0)
    model, inputs, target = factory()
    model = model.to(device)
    inputs = tuple(t.to(device) for t in inputs)
    target = target.to(device)
    forward = model if backend is None else torch.compile(model, backend=backend)
    is_gpt = isinstance(model, TinyGPT)

    def inference():
        with torch.no_grad():
            forward(*inputs)

    def training():
        model.zero_grad(set_to_none=True)
        _loss(forward, inputs, target, is_gpt).backward()

    return inference, training


def measure(factory, device, backend):
    inference, training = _setups(factory, device, backend)
    start = time.perf_counter()
    inference()
    training()
    first_calls = time.perf_counter() - start
    return (seconds_per_call(inference, device, min_time=1.0) * 1e3,
            seconds_per_call(training, device, min_time=1.0) * 1e3, first_calls)


def measure_all(model_name, configurations):
    """measure() for each (name, device, backend) configuration, from a fresh Dynamo each time."""
    results = {}
    for name, device, backend in configurations:
        torch._dynamo.reset()
        results[name] = measure(MODELS[model_name], device, backend)
    return results


def table_header(configurations, ratios) -> str:
    """Columns: ms per call of each configuration, then each ratio (numerator, denominator, title)."""
    return (f"{'model / mode':<22}" + "".join(f"{name + ' ms':>18}" for name, _, _ in configurations)
            + "".join(f"{title:>{len(title) + 3}}" for _, _, title in ratios))


def table_rows(model_name, configurations, results, ratios) -> list[str]:
    rows = []
    for index, mode in enumerate(("inference", "training")):
        row = f"{model_name + ' ' + mode:<22}" + "".join(f"{results[n][index]:>18.2f}" for n, _, _ in configurations)
        row += "".join(f"{results[a][index] / results[b][index]:>{len(title) + 3}.2f}" for a, b, title in ratios)
        rows.append(row)
    return rows


_CACHE_PROBE = """
    import sys, time, torch, warnings
    warnings.simplefilter("ignore")
    sys.path.insert(0, {bench!r})
    from compile import _setups, MODELS
    import torch_axon.compile as c
    inference, training = _setups(MODELS["gpt"], "axon", "axon")
    start = time.perf_counter()
    inference(); training(); torch.axon.synchronize()
    elapsed = time.perf_counter() - start
    r = c.report()
    print("PROBE", elapsed, r.cache["compiled"], r.cache["disk"], r.compile_seconds)
"""


def cache_probe(directory: str) -> tuple[float, int, int, float]:
    env = dict(os.environ, AXON_COMPILE_CACHE_DIR=directory)
    code = textwrap.dedent(_CACHE_PROBE.format(bench=os.path.dirname(os.path.abspath(__file__))))
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=900,
                            check=False)
    line = next((text for text in result.stdout.splitlines() if text.startswith("PROBE")), None)
    if line is None:
        raise RuntimeError(result.stderr[-2000:])
    _, elapsed, compiled, loaded, seconds = line.split()
    return float(elapsed), int(compiled), int(loaded), float(seconds)


def tiny_overhead(function, *args) -> tuple[float, float]:
    """µs per call of `function` on axon, eager and compiled."""
    eager = seconds_per_call(lambda: function(*args), "axon") * 1e6
    compiled_function = torch.compile(function, backend="axon")
    compiled = seconds_per_call(lambda: compiled_function(*args), "axon") * 1e6
    return eager, compiled


def _add_one(x):
    return x + 1


def _lookup(weight, tokens):
    return nn.functional.embedding(tokens, weight) * 2


def launch_versus_run(model: str) -> tuple[float, float]:
    """Compiled inference: the time until the call returns (its launch) vs until the device has run
    it, in ms (medians of 20 calls after warm-up). A call that waited for the device would take as
    long as the run; run-time checks (the GPT's embedding and loss index bounds) are reported in stream
    order, so they do not make it wait."""
    torch._dynamo.reset()
    inference, _ = _setups(MODELS[model], "axon", "axon")
    for _ in range(3):
        inference()
    torch.axon.synchronize()
    launches, runs = [], []
    for _ in range(20):
        start = time.perf_counter()
        inference()
        launched = time.perf_counter()
        torch.axon.synchronize()
        launches.append(launched - start)
        runs.append(time.perf_counter() - start)
    return statistics.median(launches) * 1e3, statistics.median(runs) * 1e3


def dynamic_shapes() -> list[str]:
    """First call at each new batch size vs a repeated call, dynamic=True vs Dynamo's default."""
    lines = []
    for label, dynamic in (("dynamic=True", True), ("dynamic=False", False)):
        torch._dynamo.reset()
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(256, 512), nn.GELU(), nn.Linear(512, 256), nn.LayerNorm(256)).to("axon")
        compiled = torch.compile(model, backend="axon", dynamic=dynamic)
        firsts, repeats = [], []
        for batch in (8, 24, 40, 56):
            x = torch.randn(batch, 256, device="axon")
            start = time.perf_counter()
            compiled(x)
            torch.axon.synchronize()
            firsts.append(time.perf_counter() - start)
            repeats.append(seconds_per_call(lambda model=compiled, inputs=x: model(inputs), "axon", min_time=0.2))
        lines.append(f"  {label:<14} first call per new shape: " + ", ".join(f"{t * 1e3:.0f}" for t in firsts)
                     + " ms; repeated call: " + ", ".join(f"{t * 1e3:.2f}" for t in repeats) + " ms")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default="mlp,cnn,gpt")
    parser.add_argument("--skip-inductor", action="store_true")
    args = parser.parse_args()
    os.environ.setdefault("AXON_COMPILE_CACHE_DIR", tempfile.mkdtemp(prefix="axon-bench-cache-"))

    configurations = [("axon eager", "axon", None), ("axon compiled", "axon", "axon"),
                      ("cpu eager", "cpu", None)]
    if not args.skip_inductor:
        configurations.append(("cpu inductor", "cpu", "inductor"))
    ratios = [("axon eager", "axon compiled", "eager/compiled")]
    if not args.skip_inductor:
        ratios.append(("axon compiled", "cpu inductor", "compiled/inductor"))
    lines = [table_header(configurations, ratios)]
    for model_name in args.models.split(","):
        results = measure_all(model_name, configurations)
        lines.extend(table_rows(model_name, configurations, results, ratios))
        first = "  ".join(f"{n}: {results[n][2]:.1f} s" for n, _, _ in configurations)
        lines.append(f"  first inference+training call (includes compilation) — {first}")
    print("\nCompiled vs eager, time per call (lower is better)")
    print("\n".join(lines))

    with tempfile.TemporaryDirectory() as directory:
        cold = cache_probe(directory)
        warm = cache_probe(directory)
    print(f"\nGPT first inference+training in a fresh process: cold cache {cold[0]:.2f} s "
          f"({cold[1]} executables compiled, {cold[3]:.2f} s in XLA); warm cache {warm[0]:.2f} s "
          f"({warm[1]} compiled, {warm[2]} loaded from disk, {warm[3]:.2f} s loading)")
    print("\nDynamic shapes (MLP block, batch 8, 24, 40, 56):")
    print("\n".join(dynamic_shapes()))
    for model_name in ("mlp", "cnn", "gpt"):
        launch, run = launch_versus_run(model_name)
        print(f"{model_name.upper()} compiled inference: the call returns after {launch:.2f} ms (launch), "
              f"the device is done after {run:.2f} ms (run)")
    eager, compiled = tiny_overhead(_add_one, torch.randn(4, device="axon"))
    print(f"Tiny graph (x + 1 on 4 floats): axon eager {eager:.1f} us/call, compiled {compiled:.1f} us/call")
    # Its index bounds check is reported in stream order: the call does not wait for the device.
    eager, compiled = tiny_overhead(_lookup, torch.randn(100, 8, device="axon"), torch.tensor([[3, 7]], device="axon"))
    print(f"Tiny checked graph (embedding of 2 tokens, times 2): axon eager {eager:.1f} us/call, "
          f"compiled {compiled:.1f} us/call")
    return 0


if __name__ == "__main__":
    sys.exit(main())
