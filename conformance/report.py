"""Runs the conformance harness and writes the coverage report.

    python -m conformance.report --sample                  # CI sample (one dtype, two samples per op)
    python -m conformance.report --full --output docs/coverage.md

Prints a TorchNeuron-shaped table (total, passed, failed, skipped for a
general reason, skipped for an axon-specific reason, operators without a
native kernel) and writes it, with every failure, as Markdown. Operators run
in worker processes; a worker that crashes is restarted after the operator
that crashed it, which is recorded as a failure.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

from .native_kernels import operators_without_native_kernel
from .results import Outcome
from .selection import entries, entry_label


def run_slice(start: int, stop: int, mode: str, output: pathlib.Path) -> subprocess.Popen:
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONWARNINGS="ignore")
    # stderr goes to a file: a pipe nobody drains while the worker runs fills up (C++ warnings printed by the
    # device's worker thread), and the worker then blocks writing to it, a hang measured in a full run.
    with open(output.with_suffix(".stderr"), "w") as stderr:
        return subprocess.Popen([sys.executable, "-m", "conformance.worker", "--start", str(start), "--stop",
                                 str(stop), "--mode", mode, "--output", str(output)],
                                env=env, stdout=subprocess.DEVNULL, stderr=stderr)


def _tail(path: pathlib.Path, characters: int = 200) -> str:
    return path.read_text(errors="replace")[-characters:] if path.exists() else ""


def report_progress(finished: int, total: int, rows: list[dict], started: float) -> None:
    """One line on stderr per finished slice: entries done, results and pass rate so far, time left."""
    passed = sum(row["outcome"] == Outcome.PASSED.value for row in rows)
    failed = sum(row["outcome"] == Outcome.FAILED.value for row in rows)
    elapsed = time.time() - started
    left = elapsed / finished * (total - finished) if finished else 0.0
    rate = f"{100 * passed / (passed + failed):.2f}% passed" if passed + failed else "none checked yet"
    print(f"[conformance] {finished}/{total} entries, {len(rows)} results, {rate}, {elapsed / 60:.1f} min, "
          f"about {left / 60:.1f} min left", file=sys.stderr, flush=True)


def collect(mode: str, jobs: int, only: set[str] | None) -> list[dict]:
    everything = entries()
    indices = [i for i, (_, info) in enumerate(everything) if only is None or info.name in only]
    rows: list[dict] = []
    started_at = time.time()
    finished = 0
    with tempfile.TemporaryDirectory() as directory:
        pending = collections.deque(indices)
        running: list[tuple[subprocess.Popen, pathlib.Path, list[int]]] = []
        chunk = max(1, min(40, len(indices) // max(1, jobs * 4) or 1))
        counter = 0
        while pending or running:
            while pending and len(running) < jobs:
                batch = [pending.popleft() for _ in range(min(chunk, len(pending)))]
                path = pathlib.Path(directory) / f"slice{counter}.jsonl"
                counter += 1
                # Slices are contiguous runs of indices so a worker can take [start, stop).
                contiguous = [batch[0]]
                for index in batch[1:]:
                    if index != contiguous[-1] + 1:
                        pending.appendleft(index)
                        break
                    contiguous.append(index)
                for index in reversed(batch[len(contiguous):]):
                    if index not in pending:
                        pending.appendleft(index)
                running.append((run_slice(contiguous[0], contiguous[-1] + 1, mode, path), path, contiguous))
            time.sleep(0.2)
            for entry in list(running):
                process, path, batch = entry
                if process.poll() is None:
                    continue
                running.remove(entry)
                done, started, slice_rows = set(), None, []
                if path.exists():
                    for line in path.read_text().splitlines():
                        row = json.loads(line)
                        if "done" in row:
                            done.add(row["done"])
                        elif "start" in row:
                            started = row["start"]
                        else:
                            slice_rows.append(row)
                rows.extend(slice_rows)
                finished += len(done & set(batch))
                report_progress(finished, len(indices), rows, started_at)
                if process.returncode != 0 or len(done) < len(batch):
                    crashed = started if started is not None and started not in done else batch[0]
                    crashed_label = entry_label(*everything[crashed])
                    rows = [r for r in rows if r["operator"] != crashed_label]
                    rows.append({"operator": crashed_label, "check": "process", "dtype": "-",
                                 "outcome": Outcome.FAILED.value,
                                 "detail": f"crashed the worker (exit {process.returncode}): "
                                           f"{_tail(path.with_suffix('.stderr'))!r}"})
                    finished += 1  # the crashed entry is reported as failed, not run again
                    rest = [i for i in batch if i not in done and i != crashed]
                    for index in reversed(rest):
                        pending.appendleft(index)
    return rows


def _layout_of(check: str) -> str:
    """Which tensors a check ran on: the sparse_* and nested_* checks, or dense tensors (all others)."""
    return check.split("_")[0] if check.startswith(("sparse_", "nested_")) else "dense"


def _by_layout(rows: list[dict]) -> list[str]:
    """Results per layout family and per check, so sparse and nested results read apart from dense ones."""
    lines = ["## By layout", "", "| layout | check | results | passed | failed | skipped | pass rate (non-skipped) |",
             "|---|---|---|---|---|---|---|"]
    groups = collections.defaultdict(collections.Counter)
    for row in rows:
        layout = _layout_of(row["check"])
        groups[(layout, row["check"] if layout != "dense" else "all")][row["outcome"]] += 1
    for (layout, check), counts in sorted(groups.items(), key=lambda item: (item[0][0] != "dense", item[0])):
        total = sum(counts.values())
        passed, failed = counts[Outcome.PASSED.value], counts[Outcome.FAILED.value]
        rate = passed / (passed + failed) if passed + failed else 1.0
        lines.append(f"| {layout} | {check} | {total} | {passed} | {failed} | {total - passed - failed} "
                     f"| {100 * rate:.2f}% |")
    return lines + [""]


def summarize(rows: list[dict], mode: str, seconds: float) -> tuple[str, dict]:
    counts = collections.Counter(row["outcome"] for row in rows)
    total = len(rows)
    passed = counts[Outcome.PASSED.value]
    failed = counts[Outcome.FAILED.value]
    skipped = counts[Outcome.SKIPPED.value]
    skipped_axon = counts[Outcome.SKIPPED_AXON.value]
    considered = total - skipped - skipped_axon
    rate = passed / considered if considered else 1.0
    missing = operators_without_native_kernel()
    reasons = collections.Counter(row["detail"] for row in rows if row["outcome"] == Outcome.SKIPPED_AXON.value)
    general = collections.Counter(row["detail"] for row in rows if row["outcome"] == Outcome.SKIPPED.value)
    lines = [
        f"# Axon operator coverage ({mode} run)",
        "",
        f"Command: `python -m conformance.report --{mode}`; {len({r['operator'] for r in rows})} entries "
        f"(op_db, module_db as `module:`, optim_db as `optim:`), "
        f"{seconds / 60:.1f} minutes on this machine, on driver `{os.environ.get('AXON_DRIVER') or 'emulated'}`.",
        "",
        "| results | passed | failed | skipped (general) | skipped (axon-specific) | pass rate (non-skipped) "
        "| operators without a native kernel |",
        "|---|---|---|---|---|---|---|",
        f"| {total} | {passed} | {failed} | {skipped} | {skipped_axon} | {100 * rate:.2f}% | {len(missing)} |",
        "",
    ]
    lines += _by_layout(rows)
    if reasons:
        lines += ["## Axon-specific skips", "", "| count | reason |", "|---|---|"]
        lines += [f"| {count} | {reason} |" for reason, count in reasons.most_common()]
        lines.append("")
    if general:
        lines += ["## General skips", "", "| count | reason |", "|---|---|"]
        lines += [f"| {count} | {reason} |" for reason, count in general.most_common()]
        lines.append("")
    if missing:
        lines += ["## Operators without a native kernel", "", ", ".join(f"`{name}`" for name in missing), ""]
    failures = [row for row in rows if row["outcome"] == Outcome.FAILED.value]
    lines += [f"## Failures ({len(failures)})", ""]
    lines += [f"- `{row['operator']}` [{row['check']}, {row['dtype']}]: {row['detail']}".replace("\n", " ")
              for row in sorted(failures, key=lambda r: (r["operator"], r["check"], r["dtype"]))]
    summary = {"total": total, "passed": passed, "failed": failed, "skipped": skipped,
               "skipped_axon": skipped_axon, "pass_rate": rate, "without_native_kernel": len(missing)}
    return "\n".join(lines) + "\n", summary


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--sample", action="store_true", help="the deterministic CI sample")
    mode.add_argument("--full", action="store_true", help="every dtype and sample of every OpInfo")
    parser.add_argument("--output", default=None, help="Markdown report path (default: build/coverage-<mode>.md)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--ops", default=None, help="comma-separated OpInfo names to run (default: all)")
    parser.add_argument("--min-pass-rate", type=float, default=None,
                        help="exit non-zero if the pass rate of non-skipped results is below this")
    args = parser.parse_args()
    mode_name = "sample" if args.sample else "full"
    started = time.time()
    rows = collect(mode_name, args.jobs, set(args.ops.split(",")) if args.ops else None)
    report, summary = summarize(rows, mode_name, time.time() - started)
    output = pathlib.Path(args.output or f"build/coverage-{mode_name}.md")
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(report)
    print("\n".join(report.splitlines()[4:9]))
    print(f"report: {output}")
    if args.min_pass_rate is not None and summary["pass_rate"] < args.min_pass_rate:
        print(f"FAILED: pass rate {100 * summary['pass_rate']:.2f}% < {100 * args.min_pass_rate:.2f}%")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
