"""Runs a slice of the harness's entries (op_db, module_db, optim_db) and streams results as JSON lines.

    python -m conformance.worker --start 0 --stop 50 --mode sample --output results.jsonl

Each operator's results are followed by a line {"done": index}, so a
coordinator can tell where a crashed worker stopped.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys

import torch

from .module_cases import run_module
from .opinfo_cases import run_operator
from .optimizer_cases import run_optimizer
from .selection import entries, sample_settings


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--start", type=int, required=True)
    parser.add_argument("--stop", type=int, required=True)
    parser.add_argument("--mode", choices=["sample", "full"], required=True)
    parser.add_argument("--output", required=True)
    args = parser.parse_args()
    everything = entries()
    with open(args.output, "a", encoding="utf-8") as output:
        for index in range(args.start, min(args.stop, len(everything))):
            kind, info = everything[index]
            output.write(json.dumps({"start": index}) + "\n")
            output.flush()
            if kind == "op":
                results = run_operator(info, **(sample_settings(info) if args.mode == "sample" else {}))
            elif kind == "module":
                results = run_module(info, **({"dtypes": (torch.float32,), "max_inputs": 2}
                                              if args.mode == "sample" else {}))
            else:
                results = run_optimizer(info)
            for result in results:
                row = dataclasses.asdict(result)
                row["outcome"] = result.outcome.value
                output.write(json.dumps(row) + "\n")
            output.write(json.dumps({"done": index}) + "\n")
            output.flush()
    torch.axon.synchronize()
    return 0


if __name__ == "__main__":
    sys.exit(main())
