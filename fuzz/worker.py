"""The process that runs seeds for `python -m fuzz`: one JSON line per event on stdout.

Run by the parent (`__main__.py`), which restarts it after a crash or a hang
and records the seed it was running.
"""

from __future__ import annotations

import argparse
import faulthandler
import json
import pathlib
import sys
import time
import traceback
import warnings

from .batch import run_seed, write_reproducer


def emit(**fields) -> None:
    sys.stdout.write(json.dumps(fields) + "\n")
    sys.stdout.flush()


def main(argv=None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed-start", type=int, required=True)
    parser.add_argument("--seed-stop", type=int)
    parser.add_argument("--deadline", type=float, required=True, help="time.time() at which to stop")
    parser.add_argument("--output", type=pathlib.Path, required=True)
    parser.add_argument("--compile-every", type=int, default=4)
    parser.add_argument("--minimize-seconds", type=float, default=120)
    parser.add_argument("--no-minimize", action="store_true")
    parser.add_argument("--length", type=int)
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    faulthandler.enable()  # a crash leaves the Python stack in the worker's log
    seed = args.seed_start
    while time.time() < args.deadline and (args.seed_stop is None or seed < args.seed_stop):
        emit(event="start", seed=seed)
        with_compile = args.compile_every > 0 and seed % args.compile_every == 0
        try:
            result = run_seed(seed, with_compile, not args.no_minimize, args.minimize_seconds, args.length)
        except Exception:  # noqa: BLE001  a bug of the fuzzer itself: report it, go on
            emit(event="done", seed=seed, statements=0, seconds=0, compiled=with_compile, notes=[],
                 failure=f"fuzzer error: {traceback.format_exc(limit=-3)}", path="fuzzer",
                 signature=["fuzzer", "fuzzer error", ""], known=None, flaky=False, reproducer=None, minimized=None)
            seed += 1
            continue
        record = {"event": "done", "seed": seed, "statements": result.statements, "seconds": round(result.seconds, 3),
                  "compiled": with_compile, "notes": result.notes, "failure": None}
        if result.failure:
            path = write_reproducer(args.output, result)
            record.update(failure=result.failure.describe(result.minimized or result.program), path=result.path,
                          signature=list(result.signature), known=result.known.key if result.known else None,
                          flaky=result.flaky, reproducer=str(path),
                          minimized=len(result.minimized.statements) if result.minimized else None)
        emit(**record)
        seed += 1
    emit(event="finished", next_seed=seed)


if __name__ == "__main__":
    main()
