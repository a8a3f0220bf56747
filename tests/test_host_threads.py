"""Which host threads run CPU kernels in parallel: only the device's worker, so libgomp keeps spinning."""

import pytest
import torch
from conftest import requires_not_blocking, run_python

pytestmark = requires_not_blocking


@pytest.mark.skipif(torch.get_num_threads() < 2, reason="parallel kernels need at least two intra-op threads")
def test_working_out_a_new_shape_starts_no_openmp_team_on_the_calling_thread():
    # A fresh process: another test's CPU work would already have given the main thread a team.
    result = run_python(
        """
        import os
        import torch
        import torch.nn.functional as F

        def threads():
            return len(os.listdir("/proc/self/task"))

        x = torch.randn(8, 128, 256, device="axon")
        (x + x).sum().item()  # the worker's own parallel kernels start its helpers
        before = threads()
        # New operators and shapes: their output layouts are worked out on this thread,
        # with the CPU kernels run on stand-ins of these sizes (parallel on the CPU).
        F.gelu(x).sum().item()
        x.view(1024, 256).softmax(-1).sum().item()
        F.layer_norm(x, (256,)).sum().item()
        print(before, threads())
        """,
        env={"TORCH_DEVICE_BACKEND_AUTOLOAD": "1"},
    )
    assert result.returncode == 0, result.stderr
    before, after = map(int, result.stdout.split())
    assert after == before, "a new thread started while the calling thread worked out output layouts"
