"""Runs a slice of op_db and streams results as JSON lines (one process per slice).

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

from .opinfo_cases import run_operator
from .selection import operators, sample_settings


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--start", type=int, required=True)
    parser.add_argument("--stop", type=int, required=True)
    parser.add_argument("--mode", choices=["sample", "full"], required=True)
    parser.add_argument("--output", required=True)
    args = parser.parse_args()
    ops = operators()
    with open(args.output, "a", encoding="utf-8") as output:
        for index in range(args.start, min(args.stop, len(ops))):
            op = ops[index]
            output.write(json.dumps({"start": index}) + "\n")
            output.flush()
            settings = sample_settings(op) if args.mode == "sample" else {}
            for result in run_operator(op, **settings):
                row = dataclasses.asdict(result)
                row["outcome"] = result.outcome.value
                output.write(json.dumps(row) + "\n")
            output.write(json.dumps({"done": index}) + "\n")
            output.flush()
    torch.axon.synchronize()
    return 0


if __name__ == "__main__":
    sys.exit(main())
