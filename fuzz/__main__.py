"""The long run: `python -m fuzz --minutes 30 --seed-start N`, or one seed: `python -m fuzz --seed N`.

Seeds run in a worker process (`worker.py`) so that a crash or a hang costs
one seed, not the run: the worker is restarted after the seed it was running,
which is recorded (kind "crash" or "hang", with the unminimized program as
its reproducer). Prints a summary at the end and writes it, with every
failure, to <output>/summary.json; reproducers go to <output>/.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import pathlib
import select
import subprocess
import sys
import time


def parse(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m fuzz", description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=10, help="how long to run (default 10)")
    parser.add_argument("--seed-start", type=int, default=0, help="first seed (default 0)")
    parser.add_argument("--seeds", type=int, help="stop after this many seeds")
    parser.add_argument("--seed", type=int, help="run just this seed in this process and print it")
    parser.add_argument("--output", type=pathlib.Path, default=pathlib.Path("build/fuzz"),
                        help="directory for reproducers and summary.json (default build/fuzz/)")
    parser.add_argument("--compile-every", type=int, default=4,
                        help="also run the compile path on every Nth seed (0: never; default 4)")
    parser.add_argument("--minimize-seconds", type=float, default=120, help="time limit per minimization")
    parser.add_argument("--no-minimize", action="store_true")
    parser.add_argument("--length", type=int, help="statements per program (default: 12 to 48, from the seed)")
    parser.add_argument("--hang-seconds", type=float, default=120,
                        help="a seed running longer than this (plus minimization) counts as a hang")
    return parser.parse_args(argv)


def run_one(args) -> int:
    from .batch import run_seed, write_reproducer

    result = run_seed(args.seed, with_compile=args.compile_every > 0, shrink=not args.no_minimize,
                      minimize_seconds=args.minimize_seconds, length=args.length)
    print(result.program.text())
    print(f"\n# seed {args.seed}: {result.statements} statements, {result.seconds:.2f} s; " + "; ".join(result.notes))
    if result.failure is None:
        print("# OK: axon matches the CPU")
        return 0
    path = write_reproducer(args.output, result)
    print(f"# FAILED ({result.path}): {result.failure.describe(result.minimized or result.program)}")
    if result.minimized:
        print(f"# minimized ({result.minimized.origin}):\n{result.minimized.text()}")
    print(f"# reproducer: {path}")
    return 1


class Worker:
    def __init__(self, args, seed: int, deadline: float, stop: int | None):
        command = [sys.executable, "-m", "fuzz.worker", "--seed-start", str(seed), "--deadline", str(deadline),
                   "--output", str(args.output), "--compile-every", str(args.compile_every),
                   "--minimize-seconds", str(args.minimize_seconds)]
        command += ["--seed-stop", str(stop)] if stop is not None else []
        command += ["--no-minimize"] if args.no_minimize else []
        command += ["--length", str(args.length)] if args.length else []
        self.log = open(args.output / "worker.log", "a")  # noqa: SIM115  closed in close()
        env = dict(os.environ, PYTHONWARNINGS="ignore")
        env.setdefault("AXON_COMPILE_CACHE_DIR", "off")  # random graphs: nothing worth keeping on disk
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=self.log, env=env, text=True,
                                        bufsize=1)

    def lines(self, timeout: float):
        """Yields the worker's events; None when nothing came for `timeout` seconds."""
        while True:
            ready, _, _ = select.select([self.process.stdout], [], [], timeout)
            if not ready:
                yield None
                continue
            line = self.process.stdout.readline()
            if not line:
                return
            yield json.loads(line)

    def close(self) -> int:
        if self.process.poll() is None:
            self.process.kill()
        code = self.process.wait()
        self.log.close()
        return code


def crash_record(args, seed: int, kind: str, detail: str) -> dict:
    """Regenerates the seed's program in this process and writes it, unminimized, as the reproducer."""
    from .generator import generate

    try:
        program = generate(seed, args.length)
    except Exception as error:  # noqa: BLE001  the generator itself failed for this seed
        kind, detail, program = "fuzzer error", f"{detail}; generating the program raises {error!r}", None
    path = args.output / f"seed{seed}_{kind.replace(' ', '_')}.py"
    if program is not None:
        path.write_text(program.reproducer(f"{kind}: {detail} (run in a fresh process; not minimized)"))
    return {"event": "done", "seed": seed, "statements": len(program.statements) if program else 0, "seconds": 0,
            "compiled": False,
            "notes": [], "failure": f"{kind}: {detail}", "path": "eager", "signature": ["eager", kind, ""],
            "known": None, "flaky": False, "reproducer": str(path) if program else None, "minimized": None}


def run_many(args) -> int:
    args.output.mkdir(parents=True, exist_ok=True)
    started = time.time()
    deadline = started + args.minutes * 60
    stop = args.seed_start + args.seeds if args.seeds is not None else None
    records, seed = [], args.seed_start
    while time.time() < deadline and (stop is None or seed < stop):
        worker = Worker(args, seed, deadline, stop)
        current, finished = None, False
        for event in worker.lines(args.hang_seconds + args.minimize_seconds):
            if event is None:
                if current is not None:
                    records.append(crash_record(args, current, "hang", f"no result after "
                                                f"{args.hang_seconds + args.minimize_seconds:.0f} s"))
                    print(f"seed {current}: HANG", flush=True)
                break
            if event["event"] == "start":
                current = event["seed"]
            elif event["event"] == "done":
                records.append(event)
                current = None
                if event["failure"]:
                    print(f"seed {event['seed']}: {event['failure'][:200]}"
                          + (f" (known: {event['known']})" if event["known"] else ""), flush=True)
            elif event["event"] == "finished":
                finished = True
        code = worker.close()
        if finished:
            break
        if current is not None and (not records or records[-1]["seed"] != current):
            records.append(crash_record(args, current, "crash", f"the worker died (exit status {code})"))
            print(f"seed {current}: CRASH (exit status {code})", flush=True)
        seed = (records[-1]["seed"] + 1) if records else seed + 1
    summary = summarize(records, time.time() - started, args)
    print(summary)
    (args.output / "summary.json").write_text(json.dumps({"records": records}, indent=1))
    return 1 if any(record["failure"] and not record["known"] for record in records) else 0


def summarize(records: list[dict], seconds: float, args) -> str:
    failures = [record for record in records if record["failure"]]
    by_signature = collections.OrderedDict()
    for record in failures:
        by_signature.setdefault(tuple(record["signature"]), []).append(record)
    notes = collections.Counter(note.split(":")[0] for record in records for note in record["notes"])
    lines = [f"fuzz: {len(records)} programs ({sum(r['statements'] for r in records)} statements, "
             f"{sum(r['compiled'] for r in records)} also compiled) in {seconds / 60:.1f} minutes; seeds "
             f"{records[0]['seed'] if records else args.seed_start}..{records[-1]['seed'] if records else '-'}",
             f"errors the CPU raised: {notes.get('raised at the call', 0)} raised by axon at the call, "
             f"{notes.get('raised late (allowed)', 0)} late as allowed (data-dependent)",
             f"failures: {len(failures)} programs, {len(by_signature)} distinct "
             f"({sum(1 for group in by_signature.values() if group[0]['known'])} known)"]
    for signature, group in by_signature.items():
        first = group[0]
        status = f"known: {first['known']}" if first["known"] else "NEW"
        flaky = " flaky" if all(record["flaky"] for record in group) else ""
        lines.append(f"  [{status}{flaky}] {signature[0]} {signature[1]} [{signature[2]}] x{len(group)}, "
                     f"seeds {', '.join(str(r['seed']) for r in group[:5])}: {first['reproducer']}")
        lines.append(f"      {first['failure'][:300]}")
    lines.append(f"reproducers and summary.json: {args.output}/")
    return "\n".join(lines)


def main(argv=None) -> int:
    args = parse(argv)
    if args.seed is not None:
        return run_one(args)
    return run_many(args)


if __name__ == "__main__":
    sys.exit(main())
