"""The differential fuzzer (fuzz/): its parts, and the CI batch of seeded programs run on the CPU and on axon.

The batch is bounded (CI_SEEDS, with the compile path on every
COMPILE_EVERY-th seed; about two minutes on 2 cores). A group of seeds whose
failures all match known issues (fuzz/known_issues.py) is xfail with the
issues named; any other failure fails with its minimized reproducer in the
message. Longer runs:
`python -m fuzz --minutes 30 --seed-start N` (docs/fuzzing.md).
"""

import subprocess
import sys
import types

import pytest
import torch

from fuzz import ordering
from fuzz.batch import headline, run_seed, shrink_program
from fuzz.execution import check
from fuzz.generator import generate
from fuzz.minimize import closure, minimize
from fuzz.program import Program, Statement

CI_SEEDS = range(0, 150)
SEEDS_PER_TEST = 10
COMPILE_EVERY = 5


def statement(code, label, defines=(), uses=(), effects=(), stream=None, sync=False):
    return Statement(code, label, tuple(defines), tuple(uses), tuple(effects), stream, sync)


def test_programs_are_deterministic_and_correctly_ordered():
    for seed in range(12):
        first, second = generate(seed), generate(seed)
        assert first.text() == second.text()
        assert ordering.check(first.statements) is None, seed
    assert generate(0).text() != generate(1).text()


def test_ordering_model_requires_the_synchronization_cuda_requires():
    make = statement("t0 = make((4,), torch.float32, D0, 1)", "make", ["t0"], [], [("new", "t0", "default0")])
    side = statement("s0 = S.Stream(D0)", "stream.new", ["s0"], [], [("stream", "s0", 0)])
    read_on_side = statement("t1 = t0 + 1", "add", ["t1"], ["t0", "s0"],
                             [("read", "t0", "s0"), ("new", "t1", "s0")], stream="s0")
    assert "not ordered after" in ordering.check([make, side, read_on_side])
    wait = statement("s0.wait_stream(S.default_stream(D0))", "stream.wait_stream", [], ["s0"],
                     [("wait_stream", "s0", "default0")])
    assert ordering.check([make, side, wait, read_on_side]) is None
    free = statement("del t0", "del", [], ["t0"], [("del", "t0")])
    assert "without record_stream" in ordering.check([make, side, wait, read_on_side, free])
    record = statement("S.record_stream(t0, s0)", "record_stream", [], ["t0", "s0"], [("record_stream", "t0", "s0")])
    assert ordering.check([make, side, wait, read_on_side, record, free]) is None
    # The host reading a pinned buffer written by a non_blocking copy needs a synchronize first.
    copy = statement("h0 = torch.empty(4, pin_memory=PIN); h0.copy_(t0, non_blocking=True)", "copy", ["h0"], ["t0"],
                     [("new", "h0", "host"), ("read", "t0", "default0"), ("write", "h0", "default0")])
    host_read = statement("n0 = h0.sum().item()", "item", ["n0"], ["h0"], [("read", "h0", "host")])
    assert "not ordered after" in ordering.check([make, copy, host_read])
    sync = statement("S.synchronize(D0)", "device.synchronize", [], [], [("host_sync_device", 0)], sync=True)
    assert ordering.check([make, copy, sync, host_read]) is None


def test_minimizer_keeps_what_the_cause_needs():
    program = next(p for p in map(generate, range(100)) if any(s.label == "matmul" for s in p.statements))

    def fails(candidate):
        return any(s.label == "matmul" for s in candidate.statements)
    small = minimize(program, fails)
    assert fails(small) and len(small.statements) < len(program.statements)
    assert closure(small, range(len(small.statements))) == list(range(len(small.statements)))
    assert ordering.check(small.statements) is None
    assert small.origin.startswith("minimized from")


def test_a_wrong_axon_result_is_found_and_minimized(monkeypatch):
    """A fault injected into the axon run (maximum computes minimum) is reported at the right statement."""
    import fuzz.prelude as prelude

    original = prelude.bindings

    def faulty(device_type):
        names = original(device_type)
        if device_type == "axon":
            public = {name: getattr(torch, name) for name in dir(torch) if not name.startswith("__")}
            names["torch"] = types.SimpleNamespace(**public)
            names["torch"].maximum = torch.minimum
        return names
    monkeypatch.setattr(prelude, "bindings", faulty)
    lines = [("t0 = make((3, 4), torch.float32, D0, 1)", "make", ["t0"], [], [("new", "t0", "default0")]),
             ("t1 = make((4,), torch.float32, D0, 2)", "make", ["t1"], [], [("new", "t1", "default0")]),
             ("t2 = t0 + t1", "add", ["t2"], ["t0", "t1"], [("read", "t0", "default0"), ("read", "t1", "default0"),
                                                           ("new", "t2", "default0")]),
             ("t3 = torch.maximum(t0, t1)", "maximum", ["t3"], ["t0", "t1"],
              [("read", "t0", "default0"), ("read", "t1", "default0"), ("new", "t3", "default0")]),
             ("t4 = t3.sum(0)", "sum", ["t4"], ["t3"], [("read", "t3", "default0"), ("new", "t4", "default0")])]
    program = Program(0, [statement(*line) for line in lines], {f"t{i}": 0 for i in range(5)})
    failure = check(program).failure
    assert failure is not None and (failure.kind, failure.label) == ("values", "maximum")
    small = shrink_program(program, failure)
    assert [s.label for s in small.statements] == ["make", "make", "maximum"]


def test_reproducer_is_a_standalone_script(tmp_path):
    program = generate(3)
    path = tmp_path / "reproducer.py"
    path.write_text(program.reproducer("no failure: a self-check"))
    done = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "axon matches the CPU" in done.stdout or "CPU:" in done.stdout


@pytest.mark.parametrize("first", range(CI_SEEDS.start, CI_SEEDS.stop, SEEDS_PER_TEST),
                         ids=lambda first: f"seeds{first}-{first + SEEDS_PER_TEST - 1}")
def test_seeds(first):
    """Seeds in groups (each test's teardown audits the allocator, which takes a while)."""
    new, known = [], []
    for seed in range(first, min(first + SEEDS_PER_TEST, CI_SEEDS.stop)):
        result = run_seed(seed, with_compile=seed % COMPILE_EVERY == 0, shrink=False)
        if result.failure is None:
            continue
        if result.known is not None:
            known.append(f"seed {seed}: known issue {result.known.key}: {result.known.description}")
            continue
        result.minimized = shrink_program(result.program, result.failure, result.path, max_seconds=60)
        new.append(f"seed {seed}: {headline(result)}\nminimized program ({result.minimized.origin}; full "
                   f"reproducer: python -m fuzz --seed {seed}):\n{result.minimized.text()}")
    if new:
        pytest.fail("\n\n".join(new + known), pytrace=False)
    if known:
        pytest.xfail("; ".join(known))
