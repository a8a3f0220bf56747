"""Instructions per tiny operator on each thread, axon against the CPU, counted by valgrind (callgrind).

    python bench/dispatch_instructions.py [--ops add,relu] [--calls 20000]

Wall-clock times of a 1-2 µs operator move by ±10% between runs on a shared host; instruction counts do not.
For each operator and device, a process runs `--calls` calls after a warm-up and another runs none; the
difference, divided by `--calls`, is what one call executes on the calling thread and, for axon, on the
device's worker. Needs valgrind on the PATH (Debian: `apt-get install valgrind`); each run takes a minute
or two. Instructions are not time (a thread that waits on memory another core wrote runs fewer
instructions per cycle), so read this next to `bench/operators.py`.
"""

from __future__ import annotations

import argparse
import glob
import os
import shutil
import subprocess
import sys
import tempfile

LOOP = r"""
import sys, torch
device, op, calls = sys.argv[1], sys.argv[2], int(sys.argv[3])
a = torch.randn(16, device=device)
b = torch.randn(16, device=device)
m = torch.randn(4, 4, device=device)
call = {
    "add": lambda: a + b,
    "mul_": lambda: a.mul_(1.0),
    "sum": lambda: a.sum(),
    "relu": lambda: torch.relu(a),
    "mm": lambda: m @ m,
    "zeros": lambda: torch.zeros(16, device=device),
}[op]
def run(count):
    for _ in range(count):
        call()
    if device == "axon":
        torch.axon.synchronize()
run(2000)
run(calls)
"""


def thread_totals(prefix: str) -> list[int]:
    """Instructions per thread of one callgrind run (files prefix-01, prefix-02, ...), in thread order."""
    totals = []
    for path in sorted(glob.glob(prefix + "-*")):
        with open(path) as profile:
            for line in profile:
                if line.startswith("summary:"):
                    totals.append(int(line.split()[1]))
                    break
    return totals


def counted(device: str, op: str, calls: int, workdir: str) -> list[int]:
    prefix = os.path.join(workdir, f"{device}-{op}-{calls}")
    script = os.path.join(workdir, "loop.py")
    env = dict(os.environ, TORCH_DEVICE_BACKEND_AUTOLOAD="1")
    subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={prefix}", "--separate-threads=yes",
                    sys.executable, script, device, op, str(calls)],
                   check=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return thread_totals(prefix)


def per_call(device: str, op: str, calls: int, workdir: str) -> tuple[float, float]:
    """(calling thread, busiest other thread) instructions per call."""
    baseline = counted(device, op, 0, workdir)
    loaded = counted(device, op, calls, workdir)
    deltas = [(after - before) / calls for before, after in zip(baseline, loaded)]
    caller = deltas[0]
    others = max(deltas[1:], default=0.0)
    return caller, others


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ops", default="add,relu", help="comma-separated: add, mul_, sum, relu, mm, zeros")
    parser.add_argument("--calls", type=int, default=20000)
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        sys.exit("valgrind is not installed (Debian: apt-get install valgrind)")
    with tempfile.TemporaryDirectory() as workdir:
        with open(os.path.join(workdir, "loop.py"), "w") as loop:
            loop.write(LOOP)
        print(f"{'operator':<10}{'cpu: caller':>14}{'axon: caller':>14}{'axon: worker':>14}{'caller axon/cpu':>17}")
        for op in args.ops.split(","):
            cpu_caller, _ = per_call("cpu", op, args.calls, workdir)
            axon_caller, axon_worker = per_call("axon", op, args.calls, workdir)
            print(f"{op:<10}{cpu_caller:>14.0f}{axon_caller:>14.0f}{axon_worker:>14.0f}"
                  f"{axon_caller / cpu_caller:>17.2f}")


if __name__ == "__main__":
    main()
