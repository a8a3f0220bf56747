"""Failures raise within the timeout instead of hanging.

torchrun --nproc-per-node 2 tests/distributed/failures.py
- sizes that differ across ranks: DistBackendError on both ranks;
- a peer that never calls the collective: DistBackendError after the group's timeout;
- a peer that dies (rank 1 exits abruptly, with status 0 so torchrun does not
  kill rank 0 first): rank 0's next collectives raise.
Each check prints how long the failure took to surface.
"""

from __future__ import annotations

import datetime
import os
import time

import torch
import torch.distributed as dist
from common import device, rank, run_checks

import torch_axon  # noqa: F401

TIMEOUT_S = 4.0


def expect_failure(what, fn, limit_s):
    start = time.monotonic()
    try:
        fn()
    except dist.DistBackendError as error:
        elapsed = time.monotonic() - start
        print(f"[rank {rank()}] {what}: raised {type(error).__name__} after {elapsed:.2f}s: "
              f"{str(error).splitlines()[0]}", flush=True)
        assert elapsed < limit_s, f"{what}: took {elapsed:.1f}s (limit {limit_s}s)"
        return error
    raise AssertionError(f"{what}: did not raise")


def short_group():
    return dist.new_group([0, 1], timeout=datetime.timedelta(seconds=TIMEOUT_S))


def check_mismatched_sizes():
    group = short_group()
    t = torch.ones(4 + rank(), device=device())
    expect_failure("all_reduce of 4 vs 5 elements", lambda: dist.all_reduce(t, group=group), TIMEOUT_S + 5)


def check_peer_never_calls():
    group = short_group()
    if rank() == 0:
        error = expect_failure("all_reduce the peer never calls",
                               lambda: dist.all_reduce(torch.ones(3, device=device()), group=group), TIMEOUT_S + 5)
        assert "all_reduce" in str(error) and "4000 ms" in str(error), error
    else:
        time.sleep(TIMEOUT_S + 1)
    dist.barrier()


def check_dead_peer():
    dist.barrier()
    if rank() == 1:
        time.sleep(1.0)  # rank 0 is already waiting in the all_reduce below
        print("[rank 1] exiting abruptly", flush=True)
        os._exit(0)
    group_timeout = 10.0
    work = dist.all_reduce(torch.ones(3, device=device()), async_op=True)  # through the group's threads
    expect_failure("async all_reduce while the peer dies", work.wait, group_timeout + 5)
    expect_failure("all_reduce after the peer died",
                   lambda: dist.all_reduce(torch.ones(3, device=device())), group_timeout + 5)
    expect_failure("all_gather_into_tensor after the peer died",
                   lambda: dist.all_gather_into_tensor(torch.empty(6, device=device()), torch.ones(3, device=device())),
                   group_timeout + 5)


def main():
    torch.axon.set_device(device())
    dist.init_process_group(device_id=device(), timeout=datetime.timedelta(seconds=10))
    checks = [check_mismatched_sizes, check_peer_never_calls, check_dead_peer]
    only = os.environ.get("AXON_TEST_CHECKS")
    if only:
        checks = [c for c in checks if c.__name__ in only.split(",")]
    run_checks(checks, destroy=False)


if __name__ == "__main__":
    main()
