"""How much of OpInfo's op database the compile path lowers to StableHLO.

    python -m conformance.lowering_coverage [--output docs/compile_coverage.md] [--ops a,b] [--samples 1]

For every OpInfo: take a sample input on axon (float32 when the op supports it,
else its first supported dtype), trace it with AOTAutograd (functionalized, as the backend does) and the core-ATen
decompositions the backend uses, and ask the partitioner's own test
(`partition.why_not_lowered`: a lowering exists and a trial lowering succeeds)
about every operator node. An op "lowers" when every node does. Ops that cannot
be measured this way (sparse, data-dependent output shapes, tracing failures, no
ATen operator left in the graph) are listed apart with the reason, not counted.
Random ops run on axon's generator by design (see partition.py) and are listed
apart too.
"""

from __future__ import annotations

import argparse
import collections
import json
import operator
import os
import subprocess
import sys
import tempfile
import time
import warnings

import torch

from .comparison import to_axon
from .selection import operators

# torch_axon and the compile stack are imported by the measuring child only (see `_worker`): the parent
# just collects results, so a crash or a teardown problem there cannot take the report with it.

# Ops whose inputs axon cannot hold, or whose outputs are not tensors a graph can hold.
_UNMEASURABLE_PREFIXES = {"sparse.": "sparse layouts have no StableHLO lowering (they run eagerly)",
                          "_refs.": "reference impl"}


def _label(op) -> str:
    return f"{op.name}.{op.variant_test_name}" if op.variant_test_name else op.name


def _dtype(op):
    supported = op.supported_dtypes("cpu")
    if torch.float32 in supported:
        return torch.float32
    for dtype in (torch.int64, torch.bool, torch.complex64):
        if dtype in supported:
            return dtype
    return sorted(supported, key=str)[0] if supported else None


def _is_core(target) -> bool:
    """Core ATen (the opset decompositions target) or a prim: what the lowering table is meant to cover."""
    if not isinstance(target, torch._ops.OpOverload):
        return False
    return torch.Tag.core in target.tags or target.namespace == "prims"


def _is_random(node) -> bool:
    return isinstance(node.target, torch._ops.OpOverload) and torch.Tag.nondeterministic_seeded in node.target.tags


def _aten_graph(function, tensors):
    """(graph, example inputs): the inference graph the backend would see — AOTAutograd with the backend's
    decompositions (functionalized), after the backend's FX passes."""
    from functorch.compile import aot_function

    from torch_axon.compile import passes
    from torch_axon.compile.backend import decompositions

    captured = []

    def capture(graph_module, example_inputs):
        passes.run_all(graph_module)
        captured.append((graph_module, list(example_inputs)))
        return graph_module

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with torch.no_grad():
            aot_function(function, fw_compiler=capture, decompositions=decompositions())(*tensors)
    return captured[0]


def _verify(graph_module, example_inputs) -> str | None:
    """Lowers the whole graph and has MLIR parse and verify the StableHLO module (types, shapes, attribute
    spelling): a trial lowering of one node only shows that text was produced. None when it verifies."""
    from jax._src.interpreters import mlir
    from jax._src.lib.mlir import ir

    from torch_axon.compile.lowering import lower_graph

    inputs = [torch.zeros([int(s) for s in value.shape], dtype=value.dtype, device="axon")
              if isinstance(value, torch.Tensor) else value for value in example_inputs]
    try:
        text = lower_graph(graph_module, inputs).text
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ir.Module.parse(text, context=_mlir_context(mlir))
    except Exception as error:  # noqa: BLE001  (the reason is the report)
        return f"StableHLO does not verify: {type(error).__name__}: {' '.join(str(error).split())[:200]}"
    return None


_MLIR_CONTEXT = []


def _mlir_context(mlir):
    if not _MLIR_CONTEXT:
        _MLIR_CONTEXT.append(mlir.make_ir_context())
    return _MLIR_CONTEXT[0]


def classify(op, max_samples: int = 1):
    """("lowers" | "missing" | "noncore" | "random" | "skipped", detail) for one OpInfo.

    "noncore": some node that does not lower is not a core-ATen operator (the decompositions keep a
    linalg, FFT, special-function... op): the op has no core-ATen decomposition to lower.
    """
    for prefix, reason in _UNMEASURABLE_PREFIXES.items():
        if op.name.startswith(prefix):
            return "skipped", reason
    dtype = _dtype(op)
    if dtype is None:
        return "skipped", "no CPU dtype to sample"
    if dtype.is_complex:
        return "skipped", "complex-only op"
    try:
        samples = list(op.sample_inputs("cpu", dtype, requires_grad=False))[:max_samples]
    except Exception as error:  # noqa: BLE001  (an OpInfo's generator failing is a reportable outcome)
        return "skipped", f"sample generation failed: {type(error).__name__}"
    if not samples:
        return "skipped", "no samples"
    missing: dict[str, str] = {}
    random_ops: set[str] = set()
    noncore: set[str] = set()
    from torch_axon.compile.partition import why_not_lowered

    traced_any = False
    trace_error = None
    for sample in samples:
        storages: dict = {}
        with torch.no_grad():
            sample_input = to_axon(sample.input, storages)
            args = to_axon(sample.args, storages)
            kwargs = to_axon(sample.kwargs, storages)
        if kwargs.get("device") == "cpu":
            kwargs["device"] = "axon"
        leaves, spec = torch.utils._pytree.tree_flatten((sample_input, args, kwargs))
        positions = [i for i, leaf in enumerate(leaves) if isinstance(leaf, torch.Tensor)]
        if any(leaf.is_sparse or leaf.is_nested for leaf in leaves if isinstance(leaf, torch.Tensor)):
            return "skipped", "sparse or nested inputs"

        def call(*tensors, leaves=leaves, positions=positions, spec=spec):
            flat = list(leaves)
            for position, tensor in zip(positions, tensors):
                flat[position] = tensor
            a, b, c = torch.utils._pytree.tree_unflatten(flat, spec)
            return op.op(a, *b, **c)

        try:
            graph, example_inputs = _aten_graph(call, [leaves[i] for i in positions])
        except Exception as error:  # noqa: BLE001
            text = f"{type(error).__name__}: {error}".splitlines()[0]
            trace_error = "data-dependent output shape" if "data-dependent" in text.lower() or \
                "DynamicOutputShape" in text or "GuardOnDataDependent" in text else f"trace failed: {text[:120]}"
            continue
        nodes = [n for n in graph.graph.nodes if n.op == "call_function" and n.target is not operator.getitem]
        if not nodes:
            continue
        traced_any = True
        lowered_all = True
        for node in nodes:
            if _is_random(node):
                random_ops.add(str(node.target))
                continue
            reason = why_not_lowered(node)
            if reason is not None:
                lowered_all = False
                missing.setdefault(str(node.target), reason.splitlines()[0][:160])
                if not _is_core(node.target):
                    noncore.add(str(node.target))
        if lowered_all and not random_ops:
            failure = _verify(graph, example_inputs)
            if failure is not None:
                missing.setdefault("(whole graph)", failure)
    if not traced_any:
        return "skipped", trace_error or "graph has no ATen operators"
    if noncore:
        return "noncore", {name: why for name, why in missing.items() if name in noncore}
    if missing:
        return "missing", missing
    if random_ops:
        return "random", sorted(random_ops)
    return "lowers", None


def _selected(names):
    return [op for op in operators() if names is None or op.name in names or _label(op) in names]


def _worker(names, max_samples: int, start: int, results_path: str) -> None:
    """Measures ops from index `start` on, appending one JSON line per op (the parent survives crashes)."""
    import torch_axon  # noqa: F401  (registers the device)

    with open(results_path, "a") as handle:
        for index, op in enumerate(_selected(names)[start:], start):
            handle.write(json.dumps({"index": index, "label": _label(op), "started": True}) + "\n")
            handle.flush()
            kind, detail = classify(op, max_samples)
            handle.write(json.dumps({"index": index, "label": _label(op), "kind": kind, "detail": detail}) + "\n")
            handle.flush()


def run(names=None, max_samples: int = 1, progress: bool = False):
    """{label: (kind, detail)}, measured in a child process restarted after any op that crashes it."""
    results: dict = {}
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "results.jsonl")
        start = 0
        while True:
            command = [sys.executable, "-m", "conformance.lowering_coverage", "--worker", path, "--start",
                       str(start), "--samples", str(max_samples)] + (["--ops", ",".join(sorted(names))] if names
                                                                       else [])
            code = subprocess.call(command, stdout=subprocess.DEVNULL,
                                   stderr=None if progress else subprocess.DEVNULL)
            started = None
            with open(path) as handle:
                for line in handle:
                    record = json.loads(line)
                    if "kind" in record:
                        results[record["label"]] = (record["kind"], record["detail"])
                        started = None
                    else:
                        started = record
            if code == 0 or started is None:
                break
            results[started["label"]] = ("skipped", f"measuring crashes the process (exit {code}); not measured")
            if progress:
                print(f"  crashed: {started['label']} (exit {code})", file=sys.stderr, flush=True)
            start = started["index"] + 1
    return results


def render(results) -> str:
    counts = collections.Counter(kind for kind, _ in results.values())
    measured = counts["lowers"] + counts["missing"]
    percent = 100.0 * counts["lowers"] / measured if measured else 0.0
    everything = measured + counts["noncore"]
    overall = 100.0 * counts["lowers"] / everything if everything else 0.0
    lines = [
        "# torch.compile(backend=\"axon\"): StableHLO lowering coverage over OpInfo",
        "",
        "Generated by `python -m conformance.lowering_coverage --output docs/compile_coverage.md`.",
        "Each OpInfo is traced on axon (float32, else its first supported dtype; one sample) with the",
        "core-ATen decompositions the backend uses; it *lowers* when every ATen node passes the",
        "partitioner's test (a lowering exists and a trial lowering of the node succeeds).",
        "",
        f"**{counts['lowers']} of {measured} ops with core-ATen decompositions lower completely: {percent:.1f}%.**",
        "",
        f"Counting also the {counts['noncore']} ops whose decomposed graphs keep non-core operators without a "
        f"lowering (linalg, FFT, special functions, ...): {counts['lowers']} of {everything}, {overall:.1f}%.",
        f"Not counted: {counts['random']} random ops (run on axon's generator by design), "
        f"{counts['skipped']} ops that cannot be measured (listed below).",
        "",
        "An op that lowers completely counts as lowering even when some of its operators are not core ATen.",
        "",
    ]
    missing_ops = collections.Counter()
    for kind, detail in results.values():
        if kind == "missing":
            missing_ops.update(detail.keys())
    if missing_ops:
        lines += ["## Core ATen operators without a lowering, by OpInfo ops affected", "", "| ATen op | ops |",
                  "|---|---|"]
        lines += [f"| `{name}` | {count} |" for name, count in missing_ops.most_common()]
        lines.append("")
    lines += ["## Ops with core-ATen decompositions that do not lower completely", "",
              "| OpInfo | ATen op: reason |", "|---|---|"]
    for label, (kind, detail) in sorted(results.items()):
        if kind == "missing":
            reasons = "; ".join(f"`{name}`: {why}" for name, why in sorted(detail.items()))
            lines.append(f"| {label} | {reasons.replace('|', '/')} |")
    lines += ["", "## Ops without a core-ATen decomposition (non-core operators left, no lowering)", "",
              "| OpInfo | non-core ATen ops |", "|---|---|"]
    for label, (kind, detail) in sorted(results.items()):
        if kind == "noncore":
            lines.append(f"| {label} | {', '.join(f'`{name}`' for name in sorted(detail))} |")
    lines += ["", "## Random ops (eager on axon's Philox generator by design)", "", "| OpInfo | random ATen ops |",
              "|---|---|"]
    for label, (kind, detail) in sorted(results.items()):
        if kind == "random":
            lines.append(f"| {label} | {', '.join(f'`{d}`' for d in detail)} |")
    lines += ["", "## Not measured", "", "| OpInfo | reason |", "|---|---|"]
    for label, (kind, detail) in sorted(results.items()):
        if kind == "skipped":
            lines.append(f"| {label} | {str(detail).replace('|', '/')} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", help="write the markdown report here")
    parser.add_argument("--ops", help="comma-separated OpInfo names (default: all)")
    parser.add_argument("--progress", action="store_true", help="show the measuring process's output")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--start", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--samples", type=int, default=1, help="samples traced per op")
    parser.add_argument("--min-rate", type=float, default=None,
                        help="exit non-zero when fewer than this fraction of ops with core-ATen decompositions lower")
    options = parser.parse_args(argv)
    names = set(options.ops.split(",")) if options.ops else None
    if options.worker:
        # Measure the lowering table itself: ops the backend routes to axon's library kernels by choice
        # (partition.EXTERN_KERNELS) still count when their lowering works.
        os.environ["AXON_COMPILE_EXTERN"] = "0"
        _worker(names, options.samples, options.start, options.worker)
        return 0
    start = time.perf_counter()
    results = run(names, options.samples, options.progress)
    text = render(results)
    print(text)
    print(f"({len(results)} OpInfos in {time.perf_counter() - start:.0f}s)", file=sys.stderr)
    if options.output:
        with open(options.output, "w") as handle:
            handle.write(text)
    if options.min_rate is not None:
        rate = lowering_rate(results)
        if rate < options.min_rate:
            print(f"FAILED: {rate:.1%} of ops with core-ATen decompositions lower, below {options.min_rate:.0%}",
                  file=sys.stderr)
            return 1
    return 0


def lowering_rate(results) -> float:
    counts = collections.Counter(kind for kind, _ in results.values())
    measured = counts["lowers"] + counts["missing"]
    return counts["lowers"] / measured if measured else 0.0


if __name__ == "__main__":
    sys.exit(main())
