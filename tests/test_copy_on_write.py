"""Tensor._lazy_clone on axon: one allocation shared until a write, then the writer's own copy.

Axon's kernels take their pointers when they are queued, so the written storages get their copies before
(core/copy_on_write.h); the clone must never see a write made through the original, nor the original one made
through the clone, whichever kernel path the write takes.
"""

import pytest
import torch
from conftest import run_python

is_cow = torch._C._is_cow_tensor
address = torch._C._data_address


def shared_pair(values=None):
    original = torch.arange(12.0, device="axon") if values is None else values.to("axon")
    clone = original._lazy_clone()
    assert is_cow(original) and is_cow(clone) and address(original) == address(clone)
    return original, clone


WRITES = {
    "add_ (direct kernel)": lambda t: t.add_(1),
    "mul_ by a tensor": lambda t: t.mul_(torch.full_like(t, 2)),
    "exp_ (generic kernel)": lambda t: t.exp_(),
    "out=": lambda t: torch.add(t, 1, out=t),
    "index_put_": lambda t: t.__setitem__(3, 7.0),
    "index_add_": lambda t: t.index_add_(0, torch.tensor([1, 2], device=t.device), torch.ones(2, device=t.device)),
    "uniform_": lambda t: t.uniform_(),
    "copy_ from the host": lambda t: t.copy_(torch.zeros(12)),
    "copy_ on the device": lambda t: t.copy_(torch.zeros(12, device="axon")),
    "zero_": lambda t: t.zero_(),
    "fill_": lambda t: t.fill_(5),
    "_foreach_add_": lambda t: torch._foreach_add_([t], 1.0),
    "a view's add_": lambda t: t.view(3, 4)[1].add_(10),
    "resize_": lambda t: t.resize_(20).fill_(1),
}


@pytest.mark.parametrize("write", WRITES, ids=list(WRITES))
@pytest.mark.parametrize("through", ["original", "clone"])
def test_a_write_reaches_only_the_tensor_written(write, through):
    original, clone = shared_pair()
    written, other = (original, clone) if through == "original" else (clone, original)
    WRITES[write](written)
    host = torch.arange(12.0)
    WRITES[write](host)
    assert torch.equal(other.cpu(), torch.arange(12.0)), f"{write} through the {through} changed the other tensor"
    if write != "uniform_":
        assert torch.equal(written.cpu(), host)
    assert not is_cow(written) or write == "resize_"


def test_reading_shares_and_the_last_sharer_keeps_the_memory():
    original, clone = shared_pair()
    before = address(original)
    total = (original + clone).sum() + original.mean() + clone[3:].max()
    assert total.item() == pytest.approx(132 + 5.5 + 11)
    assert is_cow(original) and is_cow(clone), "a read gave a tensor memory of its own"
    original.add_(1)  # the first writer gets a copy
    assert address(original) != before and address(clone) == before
    clone.add_(2)  # the last sharer takes the shared memory back, without a copy
    assert not is_cow(clone) and address(clone) == before
    assert torch.equal(original.cpu(), torch.arange(12.0) + 1)
    assert torch.equal(clone.cpu(), torch.arange(12.0) + 2)
    again = clone._lazy_clone()  # memory taken back can be shared again
    clone.mul_(0)
    assert torch.equal(again.cpu(), torch.arange(12.0) + 2) and clone.cpu().sum() == 0


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64, torch.bool, torch.complex64])
def test_each_dtype_shares_and_copies(dtype):
    original, clone = shared_pair(torch.tensor([[0, 1], [2, 3]], dtype=dtype))
    original.view(4).add_(torch.ones(1, dtype=dtype, device="axon"))
    assert torch.equal(clone.cpu(), torch.tensor([[0, 1], [2, 3]], dtype=dtype))
    assert torch.equal(original.cpu(), torch.tensor([[0, 1], [2, 3]], dtype=dtype) + torch.ones(1, dtype=dtype))


@pytest.mark.parametrize(
    "call",
    [
        lambda mean, var, x: torch.nn.functional.batch_norm(x, mean, var, training=True),
        lambda mean, var, x: torch.native_batch_norm(x, None, None, mean, var, True, 0.1, 1e-5),
        lambda mean, var, x: torch.batch_norm_update_stats(x, mean, var, 0.1),
        lambda mean, var, x: torch._native_batch_norm_legit(x, None, None, mean, var, True, 0.1, 1e-5),
    ],
    ids=["functional", "native_batch_norm", "batch_norm_update_stats", "legit"],
)
@pytest.mark.parametrize("shape", [(4, 3), (4, 3, 5, 5)])
def test_running_statistics_written_without_a_schema_annotation_are_copied_first(call, shape):
    # native_batch_norm and batch_norm_update_stats write running_mean/running_var, and their schemas
    # do not say so: the generic kernel knows them by name (operator_plan.cpp, writes_without_annotation).
    mean = torch.zeros(3, device="axon")
    shared = mean._lazy_clone()
    x = torch.randn(*shape)
    call(shared, torch.ones(3, device="axon"), x.to("axon"))
    expected_mean = torch.zeros(3)
    call(expected_mean, torch.ones(3), x)
    assert mean.cpu().count_nonzero() == 0
    torch.testing.assert_close(shared.cpu(), expected_mean)


def test_memory_is_freed_once_every_sharer_is_gone():
    torch.axon.synchronize()
    base = torch.axon.memory_allocated()
    original, clone = shared_pair(torch.ones(1 << 16))
    more = clone._lazy_clone()
    original.add_(1)
    assert torch.axon.memory_allocated() == base + 2 * (1 << 18)
    del original, clone
    assert torch.axon.memory_allocated() == base + (1 << 18)  # `more` still holds the shared block
    more.record_stream(torch.axon.Stream())  # a shared block is found by its address
    del more
    torch.axon.synchronize()
    assert torch.axon.memory_allocated() == base


def test_a_write_inside_parallel_for_is_refused_as_on_the_cpu():
    shared = torch.tensor([[0, 1], [2, 3]], device="axon")._lazy_clone()
    with pytest.raises(RuntimeError, match="Materializing a storage"):
        torch._test_parallel_materialize(shared, 1, False)


def test_memory_the_host_cannot_address_is_copied_for_its_writer_too():
    output = run_python(
        """
import torch
original = torch.arange(12.0, device="axon")
clone = original._lazy_clone()
original.exp_()
clone.add_(1)
mean = torch.zeros(3, device="axon")
shared = mean._lazy_clone()
torch.native_batch_norm(torch.randn(4, 3, device="axon"), None, None, shared, torch.ones(3, device="axon"),
                        True, 0.1, 1e-5)
print(torch.equal(original.cpu(), torch.arange(12.0).exp()), torch.equal(clone.cpu(), torch.arange(12.0) + 1),
      mean.cpu().count_nonzero().item() == 0, shared.cpu().count_nonzero().item() > 0)
""",
        {"TORCH_DEVICE_BACKEND_AUTOLOAD": "1", "AXON_EMULATED_PRIVATE_MEMORY": "1"},
    )
    assert output.returncode == 0, output.stderr
    assert output.stdout.split() == ["True"] * 4


@pytest.mark.skipif(torch.axon.device_count() < 2, reason="needs two axon devices")
@pytest.mark.parametrize("current", [0, 1])
def test_a_copy_from_another_device_gives_the_destination_its_copy_on_its_own_device(current):
    # The copy of the shared memory is made on the destination's device and stream, before the cross-device
    # copy's write, whichever device is current.
    destination = torch.arange(1 << 16, dtype=torch.float32, device="axon:1")
    clone = destination._lazy_clone()
    source = torch.full((1 << 16,), 7.0, device="axon:0")
    with torch.axon.device(current):
        for _ in range(3):
            destination.copy_(source)
    assert destination.device == torch.device("axon:1") and destination.untyped_storage().device == destination.device
    assert torch.equal(destination.cpu(), torch.full((1 << 16,), 7.0))
    assert torch.equal(clone.cpu(), torch.arange(1 << 16, dtype=torch.float32))


@pytest.mark.parametrize(
    "call",
    [
        lambda written, read: torch._foreach_add_([written], [read]),
        lambda written, read: torch._foreach_add([read], [written]),
    ],
    ids=["in place", "fresh results"],
)
def test_a_foreach_call_only_reading_shared_memory_keeps_it_shared(call):
    original, clone = shared_pair()
    written = torch.ones(12, device="axon")
    call(written, original)
    assert is_cow(original) and is_cow(clone) and address(original) == address(clone), "a read copied shared memory"
    assert torch.equal(clone.cpu(), torch.arange(12.0))


def test_a_host_alias_of_shared_memory_writes_only_its_own_tensor():
    import torch_axon

    original, clone = shared_pair()
    torch.axon.synchronize()  # the alias waits for no work queued before it
    host = torch_axon._C._host_alias(original)
    host.add_(100)  # a CPU write, straight into the alias's memory
    assert torch.equal(clone.cpu(), torch.arange(12.0)), "writing a host alias changed the lazy clone"
    assert torch.equal(original.cpu(), torch.arange(12.0) + 100)


READS_OF_AN_INDEX = {
    "gather": lambda x, index, src: x.gather(0, index),
    "scatter_add": lambda x, index, src: x.scatter_add(0, index, src),
    "scatter_add_": lambda x, index, src: x.clone().scatter_add_(0, index, src),
    "scatter_reduce amax": lambda x, index, src: x.scatter_reduce(0, index, src, "amax"),
}


@pytest.mark.parametrize("call", READS_OF_AN_INDEX, ids=list(READS_OF_AN_INDEX))
def test_an_index_only_read_keeps_sharing_its_memory(call):
    # The direct scatter and gather kernels gave every operand its own copy, the index they only read included
    # (PyTorch's test_cow_input failed on scatter_reduce's backward, which gathers and scatters with it).
    x, src = torch.arange(5.0), torch.arange(6.0) + 10
    index = torch.tensor([0, 1, 0, 1, 2, 1])
    shared = index.to("axon")._lazy_clone()
    result = READS_OF_AN_INDEX[call](x.to("axon"), shared, src.to("axon"))
    assert torch.equal(result.cpu(), READS_OF_AN_INDEX[call](x, index, src))
    assert is_cow(shared), f"{call} copied the index it only reads"
