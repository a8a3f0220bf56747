"""torch.distributed on axon: each test launches a torchrun job from tests/distributed/.

Workers print "[rank r] OK <check>" per check and "[rank r] ALL OK" at the end;
a test passes when every rank reports ALL OK within the time limit (a hang is
a failure: the job is killed at the limit).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import time

import pytest

import torch_axon  # noqa: F401

WORKERS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "distributed")
TORCHRUN = os.path.join(os.path.dirname(sys.executable), "torchrun")


def torchrun(script: str, processes: int, timeout: float = 240, env: dict[str, str] | None = None,
             reporting: int | None = None) -> str:
    """Runs the worker; `reporting` ranks (default all) must print ALL OK."""
    full_env = dict(os.environ)
    full_env.update({"OMP_NUM_THREADS": "1", "PYTHONFAULTHANDLER": "1"})
    full_env.update(env or {})
    # torchrun keeps its per-worker log folders in a fresh /tmp/torchelastic_* unless given --log-dir; a folder of
    # the test's own is removed with it.
    log_dir = tempfile.TemporaryDirectory(prefix="axon-torchrun-")
    command = [TORCHRUN, "--standalone", f"--nproc-per-node={processes}", f"--log-dir={log_dir.name}",
               os.path.join(WORKERS, script)]
    start = time.monotonic()
    try:
        with log_dir:
            result = subprocess.run(command, env=full_env, capture_output=True, text=True, check=False,
                                    timeout=timeout)
    except subprocess.TimeoutExpired as expired:
        output = (expired.stdout or b"").decode() if isinstance(expired.stdout, bytes) else (expired.stdout or "")
        pytest.fail(f"{script} hung: killed after {timeout}s\n{output[-4000:]}")
    output = result.stdout + result.stderr
    elapsed = time.monotonic() - start
    reported = set(re.findall(r"\[rank (\d+)\] ALL OK", output))
    failures = re.findall(r"\[rank \d+\] FAIL .*", output)
    assert result.returncode == 0 and len(reported) == (processes if reporting is None else reporting), (
        f"{script}: exit status {result.returncode} after {elapsed:.1f}s, ALL OK from ranks {sorted(reported)}, "
        f"failures {failures}\n{output[-6000:]}")
    return output


def test_every_collective_matches_gloo():
    output = torchrun("collectives.py", 2)
    assert output.count("OK check_") == 2 * 16


def test_every_collective_matches_gloo_on_device_memory_the_host_cannot_address():
    # AXON_EMULATED_PRIVATE_MEMORY=1: the driver says its memory is not host-addressable and only kernel
    # bodies may view it, so the transport must stage through pinned host copies.
    output = torchrun("collectives.py", 2, env={"AXON_EMULATED_PRIVATE_MEMORY": "1"})
    assert output.count("OK check_") == 2 * 16


def test_parallel_training_matches_one_process():
    output = torchrun("training.py", 2)
    for check in ("ddp_gpt", "ddp_comm_hook", "fsdp2_gpt", "fsdp2_mixed_precision", "zero_redundancy_optimizer",
                  "tensor_and_sequence_parallel", "dtensor_random_ops", "pipeline_parallel",
                  "distributed_checkpoint_resharding"):
        assert output.count(f"OK check_{check}") == 2, check


def test_fsdp_times_tensor_parallel_on_a_2d_mesh():
    output = torchrun("mesh_2d.py", 4)
    assert output.count("OK check_fsdp_tp_2d") == 4


def test_failures_raise_within_the_timeout():
    output = torchrun("failures.py", 2, timeout=120, reporting=1)  # rank 1 dies on purpose
    assert output.count("ranks called different collectives") == 2
    assert "a peer may have died" in output
    assert "async all_reduce while the peer dies: raised" in output
    assert "after the peer died: raised" in output


def test_importing_torch_registers_axon_as_the_backend_of_axon_tensors():
    # The backend class is an ordinary submodule of _C, derived from c10d's own Backend binding.
    code = ("import torch, torch_axon; import torch.distributed as dist; "
            "print(dist.Backend.default_device_backend_map['axon'], "
            "issubclass(torch_axon._C._distributed.ProcessGroupAxon, torch._C._distributed_c10d.Backend))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=120)
    assert result.stdout.split() == ["axon", "True"], result.stdout + result.stderr


def test_failures_in_the_data_path_raise_without_the_agreement_check():
    output = torchrun("failures.py", 2, timeout=120, reporting=1,
                      env={"AXON_DISTRIBUTED_CHECKS": "0",
                           "AXON_TEST_CHECKS": "check_peer_never_calls,check_dead_peer"})
    assert "failed while moving data" in output and "a peer may have died" in output
    assert "async all_reduce while the peer dies: raised" in output
