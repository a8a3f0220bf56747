"""torch.use_deterministic_algorithms on axon (torch_axon/global_modes.py, csrc/ops/tensor_factories.cpp).

The CPU kernels behind axon's operators read PyTorch's deterministic setting when the device's worker runs them,
so changing the setting first waits for the work already queued; and new memory is filled as the CPU and CUDA
fill it in that mode.
"""

import pytest
import torch
from torch.testing._internal.common_utils import DeterministicGuard


def _duplicate_index_copy(device):
    generator = torch.Generator().manual_seed(0)
    source = torch.rand(40000, 4, 3, generator=generator)
    index = torch.randint(2000, (40000,), generator=generator)
    return torch.zeros(2000, 4, 3).to(device), index.to(device), source.to(device)


def test_index_copy_queued_under_the_guard_writes_duplicates_in_index_order():
    # As PyTorch's test_index_copy_deterministic: the result is read after the guard is left. The CPU kernel used
    # to run on the worker once the setting was off again, copying duplicate indices from two threads at once
    # (17,616 of 24,000 elements differed).
    x, index, source = _duplicate_index_copy("axon")
    with DeterministicGuard(True):
        result = torch.index_copy(x, 0, index, source)
    expected = torch.zeros(2000, 4, 3)
    for position, row in enumerate(index.tolist()):
        expected[row] = source[position].cpu()
    assert torch.equal(result.cpu(), expected)


def test_changing_the_setting_waits_for_queued_work():
    a = torch.randn(1024, 1024, device="axon")
    stream = torch.axon.current_stream()
    for _ in range(4):
        for _ in range(8):
            a = a @ a / 32
        torch.use_deterministic_algorithms(True)
        assert stream.query()
        for _ in range(8):
            a = a @ a / 32
        torch.use_deterministic_algorithms(False)
        assert stream.query()
    torch.utils.deterministic.fill_uninitialized_memory = True
    assert stream.query()


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.complex64, torch.int64, torch.uint8,
                                   torch.bool])
def test_new_memory_is_filled_as_on_the_cpu(dtype):
    with DeterministicGuard(True):
        for make in (lambda device: torch.empty(3, 5, dtype=dtype, device=device),
                     lambda device: torch.empty_strided((3, 5), (1, 3), dtype=dtype, device=device),
                     lambda device: torch.zeros(4, dtype=dtype, device=device).resize_(3, 3)):
            torch.testing.assert_close(make("axon").cpu(), make("cpu"), rtol=0, atol=0, equal_nan=True)



def test_an_alert_the_cpu_kernel_raises_comes_at_the_call_after_the_shape_was_seen_without_the_mode():
    # put_ without accumulation has no deterministic implementation: the CPU raises at the call. Its call shape,
    # seen first without the mode, must not let the later call skip the check (PyTorch's
    # test_nondeterministic_alert_put).
    target = torch.randn(10, device="axon")
    indices = torch.tensor([0, 0], device="axon")
    values = torch.tensor([0.0, 1.0], device="axon")
    target.put_(indices, values)
    with DeterministicGuard(True):
        with pytest.raises(RuntimeError, match="put_ does not have a deterministic implementation"):
            target.put_(indices, values)
        torch.axon.synchronize()  # nothing was left queued to fail
    with DeterministicGuard(True, warn_only=True):
        with pytest.warns(UserWarning, match="put_ does not have a deterministic implementation"):
            target.put_(indices, values)
    target.put_(indices, values)
    torch.axon.synchronize()
    assert target.cpu()[0].item() == 1.0
