#!/usr/bin/env python
"""Runs PyTorch's own device-generic test files against a device (axon by default) and summarizes them.

Usage:
    python tools/run_upstream_tests.py TEST_DIR SPEC [SPEC ...] [options]

TEST_DIR is a checkout of PyTorch's `test/` folder (matching the installed wheel); each SPEC is a test file
relative to it, optionally followed by `:` and a pytest -k expression, e.g.

    python tools/run_upstream_tests.py /work/upstream_tests/test \
        test_view_ops.py test_indexing.py "test_unary_ufuncs.py:float32 or int64" \
        "test_ops.py:float32 and test_out_" test_ops.py:test_dtypes

Each SPEC runs in its own pytest process (`-p no:cacheprovider -q -rf`, junit XML per SPEC) with
PYTORCH_TESTING_DEVICE_ONLY_FOR=<device>, the working directory set to TEST_DIR and TEST_DIR on sys.path,
under a wall-clock timeout (SIGINT, then SIGKILL). Results are recorded test by test through a small
pytest plugin (this file, loaded with `-p`), so a file that times out still reports what it ran.

A SPEC whose pytest dies by a signal (a crash, or the extension rebuilt under it: SIGBUS) is resumed up to
--resume times without the tests it finished; a test running during two such deaths is reported as an error.
`--shuffle SEED` runs tests in a seeded random order, so a SPEC cut by its timeout reports a fair sample.

Printed: passed / failed / errors / skipped per SPEC and the pass rate of non-skipped tests overall.
Written to --out: failures.txt (`test id | first line of the message`), summary.json, <spec>.xml,
<spec>.log (pytest's output) and <spec>.jsonl (one line per test).

`--ids FILE` reruns the test ids listed in FILE (the first column of a failures.txt); with `--device cpu`
the ids are translated (PRIVATEUSE1 or AXON -> CPU, _axon -> _cpu), which shows whether a failure is the
device's or the test file's (a test file newer or older than the wheel fails on the CPU too).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

LOG_ENV = "RUN_UPSTREAM_TESTS_LOG"

# ---------------------------------------------------------------------------------------------------------
# pytest plugin half: active only inside the pytest processes this script starts (LOG_ENV is set there).


def _first_line(text: str) -> str:
    for line in str(text).splitlines():
        line = line.strip()
        if line:
            return line[:400]
    return ""


def _message(report) -> str:
    longrepr = report.longrepr
    if longrepr is None:
        return ""
    if isinstance(longrepr, tuple) and len(longrepr) == 3:  # a skip: (path, line, reason)
        return _first_line(longrepr[2])
    crash = getattr(longrepr, "reprcrash", None)
    if crash is not None and getattr(crash, "message", None):
        return _first_line(crash.message)
    return _first_line(str(longrepr).splitlines()[-1] if str(longrepr) else "")


def _record(entry: dict) -> None:
    path = os.environ.get(LOG_ENV)
    if not path:
        return
    with open(path, "a") as handle:
        handle.write(json.dumps(entry) + "\n")


def pytest_runtest_logreport(report):  # noqa: D401 - pytest hook
    if not os.environ.get(LOG_ENV):
        return
    outcome = report.outcome  # passed / failed / skipped
    if hasattr(report, "wasxfail"):
        outcome = "xfailed" if report.skipped else "xpassed"
    _record({"id": report.nodeid, "when": report.when, "outcome": outcome, "message": _message(report),
             "duration": round(getattr(report, "duration", 0.0), 3)})


def pytest_collection_modifyitems(session, config, items):
    """With RUN_UPSTREAM_TESTS_SHUFFLE=<seed>, runs the tests in a seeded random order, so that a run cut by
    its timeout is a fair sample of the whole selection instead of its alphabetical head."""
    seed = os.environ.get(LOG_ENV + "_SHUFFLE") if os.environ.get(LOG_ENV) else None
    if seed:
        import random
        random.Random(int(seed)).shuffle(items)
    done_file = os.environ.get(LOG_ENV + "_DONE") if os.environ.get(LOG_ENV) else None
    if done_file:  # a resumed run: leave out the tests the crashed process already finished
        done = set(Path(done_file).read_text().splitlines())
        kept = [item for item in items if item.nodeid not in done]
        config.hook.pytest_deselected(items=[item for item in items if item.nodeid in done])
        items[:] = kept


def pytest_collectreport(report):
    if not os.environ.get(LOG_ENV) or not report.failed:
        return
    _record({"id": report.nodeid or "<collection>", "when": "collect", "outcome": "failed",
             "message": _message(report), "duration": 0.0})


# ---------------------------------------------------------------------------------------------------------
# runner half


def _final_outcomes(log_path: Path) -> dict[str, tuple[str, str]]:
    """test id -> (passed | failed | error | skipped, message) from the plugin's per-phase records."""
    phases: dict[str, dict[str, tuple[str, str]]] = {}
    order: list[str] = []
    if log_path.exists():
        for line in log_path.read_text().splitlines():
            try:
                entry = json.loads(line)
            except json.JSONDecodeError:
                continue
            if entry["id"] not in phases:
                phases[entry["id"]] = {}
                order.append(entry["id"])
            phases[entry["id"]][entry["when"]] = (entry["outcome"], entry["message"])
    result: dict[str, tuple[str, str]] = {}
    for test_id in order:
        p = phases[test_id]
        if "collect" in p:
            result[test_id] = ("error", p["collect"][1])
            continue
        setup = p.get("setup", ("passed", ""))
        call = p.get("call")
        teardown = p.get("teardown", ("passed", ""))
        if setup[0] == "skipped" or (call and call[0] in ("skipped", "xfailed")):
            result[test_id] = ("skipped", (call or setup)[1])
        elif setup[0] == "failed":
            result[test_id] = ("error", setup[1])
        elif call is None:
            result[test_id] = ("error", "interrupted (timeout) before the test body ran")
        elif call[0] == "failed":
            result[test_id] = ("failed", call[1])
        elif teardown[0] == "failed":
            result[test_id] = ("error", "teardown: " + teardown[1])
        else:
            result[test_id] = ("passed", "")
    return result


def _finished_and_running(log_path: Path, since_line: int = 0) -> tuple[set[str], list[str]]:
    """Ids whose every phase was recorded, and ids whose setup (at or after line `since_line` of the log, i.e.
    in the attempt that died) was recorded but not their teardown."""
    started: list[str] = []
    finished: set[str] = set()
    if log_path.exists():
        for number, line in enumerate(log_path.read_text().splitlines()):
            try:
                entry = json.loads(line)
            except json.JSONDecodeError:
                continue
            if entry["when"] == "setup" and number >= since_line:
                started.append(entry["id"])
            if entry["when"] == "teardown" or (entry["when"] == "setup" and entry["outcome"] != "passed"):
                finished.add(entry["id"])
    return finished, [t for t in dict.fromkeys(started) if t not in finished]


def _spec_name(spec: str, index: int) -> str:
    file_part, _, expr = spec.partition(":")
    base = Path(file_part).stem
    if expr:
        base += "__" + re.sub(r"[^A-Za-z0-9]+", "_", expr).strip("_")[:60]
    return f"{index:02d}_{base}"


def _translate(test_id: str, device: str) -> str:
    if device == "axon":
        return test_id
    upper = {"cpu": "CPU", "cuda": "CUDA", "meta": "META"}.get(device, device.upper())
    # Generic classes are named after the dispatch key (TestFooPRIVATEUSE1) or, for some files, the device
    # (TestOldViewOpsAXON).
    test_id = test_id.replace("PRIVATEUSE1::", f"{upper}::").replace("AXON::", f"{upper}::")
    return re.sub(r"_axon(?=_|$|\[)", f"_{device}", test_id)


def _run_one(args, test_dir: Path, out: Path, name: str, targets: list[str], expr: str | None) -> dict:
    log_path = out / f"{name}.jsonl"
    log_path.unlink(missing_ok=True)
    env = dict(os.environ)
    env["PYTORCH_TESTING_DEVICE_ONLY_FOR"] = args.device
    env[LOG_ENV] = str(log_path)
    here = str(Path(__file__).resolve().parent)
    env["PYTHONPATH"] = os.pathsep.join([str(test_dir), here] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    env.setdefault("PYTHONUNBUFFERED", "1")
    if args.shuffle is not None:
        env[LOG_ENV + "_SHUFFLE"] = str(args.shuffle)
    command = [args.python, "-m", "pytest", "-p", "no:cacheprovider", "-p", Path(__file__).stem, "-q", "-rf",
               f"--junitxml={out / (name + '.xml')}", "-o", "junit_family=xunit1"]
    if expr:
        command += ["-k", expr]
    if len(" ".join(targets)) > 100_000:  # long id lists go through pytest's @argfile
        argfile = out / f"{name}.args"
        argfile.write_text("\n".join(targets) + "\n")
        command.append(f"@{argfile}")
    else:
        command += targets
    command += args.pytest_args
    if args.nice:
        command = ["nice", "-n", str(args.nice)] + command
    started = time.monotonic()
    timed_out = False
    crashes: dict[str, int] = {}  # test id -> how many times the process died while it ran
    (out / f"{name}.log").write_text("")
    for _attempt in range(args.resume + 1):
        left = args.timeout - (time.monotonic() - started)
        first_line = len(log_path.read_text().splitlines()) if log_path.exists() else 0
        if left <= 0:
            timed_out = True
            break
        with open(out / f"{name}.log", "a") as log:
            log.write("$ " + " ".join(command) + "\n")
            log.flush()
            process = subprocess.Popen(command, cwd=test_dir, env=env, stdout=log, stderr=subprocess.STDOUT,
                                       start_new_session=True)
            try:
                returncode = process.wait(timeout=left)
            except subprocess.TimeoutExpired:
                timed_out = True
                os.killpg(process.pid, signal.SIGINT)  # pytest writes its junit XML and summary on SIGINT
                try:
                    returncode = process.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    os.killpg(process.pid, signal.SIGKILL)
                    returncode = process.wait()
        if timed_out or returncode >= 0:
            break
        # killed by a signal (SIGSEGV/SIGBUS: a crash, or the extension rebuilt under the running process):
        # resume with the tests not yet finished; a test that was running during two crashes is left out
        finished, running = _finished_and_running(log_path, first_line)
        for test_id in running:
            crashes[test_id] = crashes.get(test_id, 0) + 1
        skip = finished | {t for t, n in crashes.items() if n >= 2}
        done_path = out / f"{name}.done"
        done_path.write_text("\n".join(sorted(skip)) + "\n")
        env[LOG_ENV + "_DONE"] = str(done_path)
        print(f"  {name}: pytest died with signal {-returncode} (running: {', '.join(running) or '-'}); "
              f"resuming in {args.resume_wait:.0f}s", flush=True)
        time.sleep(args.resume_wait)
    outcomes = _final_outcomes(log_path)
    if timed_out:  # the test cut short by the timeout did not fail: it is left out of the counts
        outcomes = {k: v for k, v in outcomes.items() if not v[1].startswith("interrupted (timeout)")}
    for test_id, count in crashes.items():
        if outcomes.get(test_id, ("", ""))[0] in ("error", "") and count:
            outcomes[test_id] = ("error", f"the test process died (signal) while this test ran, {count} time(s)")
    counts = {k: 0 for k in ("passed", "failed", "error", "skipped")}
    for outcome, _ in outcomes.values():
        counts[outcome] += 1
    if not outcomes and returncode not in (0, 5):
        counts["error"] += 1
        outcomes[f"{name}::<run>"] = ("error", f"pytest exited {returncode} without running a test; see {name}.log")
    return {"name": name, "targets": targets, "k": expr, "returncode": returncode, "timed_out": timed_out,
            "seconds": round(time.monotonic() - started, 1), "counts": counts, "outcomes": outcomes}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("test_dir", type=Path, help="PyTorch's test/ folder")
    parser.add_argument("specs", nargs="*", help="FILE or FILE:K_EXPRESSION, relative to test_dir")
    parser.add_argument("--device", default="axon", help="PYTORCH_TESTING_DEVICE_ONLY_FOR (default axon)")
    parser.add_argument("--timeout", type=float, default=1500, help="seconds per SPEC (default 1500)")
    parser.add_argument("--out", type=Path, default=None, help="results folder (default TEST_DIR/../results)")
    parser.add_argument("--ids", type=Path, default=None, help="rerun the test ids listed in this file")
    parser.add_argument("--nice", type=int, default=15, help="niceness of the pytest processes (0: none)")
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--shuffle", type=int, default=None, metavar="SEED",
                        help="run each SPEC's tests in a seeded random order (a timed-out run is then a fair sample)")
    parser.add_argument("--resume", type=int, default=3,
                        help="times to resume a SPEC whose pytest died by a signal, skipping finished tests "
                             "(default 3)")
    parser.add_argument("--resume-wait", type=float, default=60.0,
                        help="seconds to wait before resuming (lets a rebuild of the extension finish)")
    parser.add_argument("--failures", type=Path, default=None, help="failure list (default OUT/failures.txt)")
    parser.add_argument("--pytest-arg", dest="pytest_args", action="append", default=[],
                        help="extra pytest argument (repeatable), e.g. --pytest-arg=--maxfail=500")
    args = parser.parse_intermixed_args(argv)
    test_dir = args.test_dir.resolve()
    out = (args.out or test_dir.parent / "results").resolve()
    out.mkdir(parents=True, exist_ok=True)

    runs: list[tuple[str, list[str], str | None]] = []
    if args.ids:
        by_file: dict[str, list[str]] = {}
        for line in args.ids.read_text().splitlines():
            test_id = line.split(" | ")[0].strip()
            if not test_id or test_id.startswith("#") or "::" not in test_id:
                continue
            by_file.setdefault(test_id.split("::")[0], []).append(_translate(test_id, args.device))
        for index, (file, ids) in enumerate(sorted(by_file.items())):
            runs.append((_spec_name(file, index) + f"_ids_{args.device}", ids, None))
    for index, spec in enumerate(args.specs, start=len(runs)):
        file_part, _, expr = spec.partition(":")
        runs.append((_spec_name(spec, index), [file_part], expr or None))
    if not runs:
        parser.error("give at least one SPEC or --ids")

    results = []
    header = f"{'run':58s} {'passed':>7s} {'failed':>7s} {'errors':>7s} {'skipped':>8s} {'pass%':>7s} {'secs':>7s}"
    print(header, flush=True)
    for name, targets, expr in runs:
        result = _run_one(args, test_dir, out, name, targets, expr)
        results.append(result)
        c = result["counts"]
        ran = c["passed"] + c["failed"] + c["error"]
        rate = f"{100.0 * c['passed'] / ran:6.1f}%" if ran else "    -  "
        flag = "  TIMEOUT (partial)" if result["timed_out"] else ""
        print(f"{name:58s} {c['passed']:7d} {c['failed']:7d} {c['error']:7d} {c['skipped']:8d} {rate:>7s} "
              f"{result['seconds']:7.0f}{flag}", flush=True)

    total = {k: sum(r["counts"][k] for r in results) for k in ("passed", "failed", "error", "skipped")}
    ran = total["passed"] + total["failed"] + total["error"]
    rate = 100.0 * total["passed"] / ran if ran else 0.0
    print(f"{'TOTAL':58s} {total['passed']:7d} {total['failed']:7d} {total['error']:7d} {total['skipped']:8d} "
          f"{rate:6.1f}%", flush=True)
    print(f"pass rate of non-skipped tests: {total['passed']}/{ran} = {rate:.1f}% (device {args.device})")

    failures_path = args.failures or out / "failures.txt"
    with open(failures_path, "w") as handle:
        for result in results:
            for test_id, (outcome, message) in result["outcomes"].items():
                if outcome in ("failed", "error"):
                    handle.write(f"{test_id} | {outcome.upper()}: {message}\n")
    summary = {"device": args.device, "test_dir": str(test_dir), "total": total, "pass_rate": round(rate, 2),
               "runs": [{k: v for k, v in r.items() if k != "outcomes"} for r in results]}
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(f"failures: {failures_path}\nsummary: {out / 'summary.json'}")
    return 0 if total["failed"] + total["error"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
