"""Zero-copy adoption of host buffers (e.g. XLA's outputs) as axon tensors, and owning host aliases."""

import gc

import pytest
import torch
from conftest import run_python

import torch_axon

jax = pytest.importorskip("jax")
jnp = jax.numpy

DEVICE = 1
adopt = torch_axon._C._adopt_host_tensor
host_alias = torch_axon._C._host_alias


def stats():
    return torch.axon.memory_stats(DEVICE)


@pytest.fixture(autouse=True)
def clean_device():
    gc.collect()
    torch.axon.synchronize(DEVICE)
    torch.axon.empty_cache()
    yield
    gc.collect()
    torch.axon.empty_cache()


def test_jax_buffer_is_adopted_without_a_copy():
    array = jnp.arange(24, dtype=jnp.float32).reshape(4, 6)
    pointer = array.unsafe_buffer_pointer()
    cpu = torch.from_dlpack(array)
    assert cpu.data_ptr() == pointer

    adopted = adopt(cpu, DEVICE)
    assert adopted.device == torch.device("axon", DEVICE)
    assert adopted.dtype == torch.float32 and adopted.shape == (4, 6) and adopted.stride() == (6, 1)
    assert host_alias(adopted).data_ptr() == pointer
    assert torch.equal(adopted.cpu(), torch.arange(24, dtype=torch.float32).reshape(4, 6))


def test_values_are_right_after_ops_on_the_adopted_tensor():
    array = jnp.linspace(-1.0, 1.0, 12, dtype=jnp.float32).reshape(3, 4)
    expected = torch.from_dlpack(array).clone()
    adopted = adopt(torch.from_dlpack(array), DEVICE)
    assert torch.allclose((adopted * 2 + 1).cpu(), expected * 2 + 1)
    assert torch.allclose((adopted @ adopted.t()).cpu(), expected @ expected.t())
    assert torch.allclose(adopted.sum(dim=1).cpu(), expected.sum(dim=1))


def test_statistics_count_the_exact_size_and_go_back_down():
    base = stats()
    array = jnp.ones(1000, dtype=jnp.float32)  # 4000 bytes: not a multiple of the allocator's rounding
    adopted = adopt(torch.from_dlpack(array), DEVICE)
    after = stats()
    for key in ("allocated_bytes", "reserved_bytes", "active_bytes", "requested_bytes"):
        assert after[f"{key}.all.current"] == base[f"{key}.all.current"] + 4000, key
        assert after[f"{key}.small_pool.current"] == base[f"{key}.small_pool.current"] + 4000, key
        assert after[f"{key}.all.peak"] >= after[f"{key}.all.current"], key
    for key in ("allocation", "segment", "active"):
        assert after[f"{key}.all.current"] == base[f"{key}.all.current"] + 1, key
    assert torch.axon.memory_allocated(DEVICE) == base["allocated_bytes.all.current"] + 4000
    assert torch.axon.memory_reserved(DEVICE) == base["reserved_bytes.all.current"] + 4000
    assert torch.axon.max_memory_allocated(DEVICE) >= torch.axon.memory_allocated(DEVICE)
    free_before, total = torch.axon.mem_get_info(DEVICE)

    del adopted, array
    gc.collect()
    final = stats()
    for key in ("allocated_bytes", "reserved_bytes", "active_bytes", "requested_bytes", "allocation", "segment",
                "active"):
        assert final[f"{key}.all.current"] == base[f"{key}.all.current"], key
    assert torch.axon.mem_get_info(DEVICE) == (free_before + 4000, total)  # the driver's capacity, too


def test_empty_cache_never_releases_adopted_memory():
    source = torch.arange(300000, dtype=torch.int32)  # large pool
    adopted = adopt(source, DEVICE)
    reserved = torch.axon.memory_reserved(DEVICE)
    assert stats()["reserved_bytes.large_pool.current"] >= source.nbytes
    torch.axon.empty_cache()
    assert torch.axon.memory_reserved(DEVICE) == reserved
    assert torch.equal(adopted.cpu(), source)


def test_adopted_tensor_keeps_the_jax_buffer_alive():
    array = jnp.arange(4096, dtype=jnp.int32)
    pointer = array.unsafe_buffer_pointer()
    adopted = adopt(torch.from_dlpack(array), DEVICE)
    del array
    gc.collect()
    # New jax buffers of the same size must not land on the adopted bytes.
    others = [jnp.full(4096, -1, dtype=jnp.int32) for _ in range(8)]
    assert all(other.unsafe_buffer_pointer() != pointer for other in others)
    assert host_alias(adopted).data_ptr() == pointer
    assert torch.equal(adopted.cpu(), torch.arange(4096, dtype=torch.int32))


def test_host_alias_writes_through_both_ways_and_keeps_the_storage_alive():
    source = torch.zeros(8, dtype=torch.float64)
    adopted = adopt(source, DEVICE)
    alias = host_alias(adopted)
    assert alias.device.type == "cpu" and alias.data_ptr() == source.data_ptr()

    alias[2] = 5.0
    assert adopted.cpu()[2].item() == 5.0 and source[2].item() == 5.0
    adopted.fill_(3.0)
    torch.axon.synchronize(DEVICE)  # the alias does not wait for queued work
    assert torch.equal(alias, torch.full((8,), 3.0, dtype=torch.float64))
    assert torch.equal(source, alias)

    allocated = torch.axon.memory_allocated(DEVICE)
    del adopted
    gc.collect()
    assert torch.axon.memory_allocated(DEVICE) == allocated  # the alias holds the axon storage
    del alias
    gc.collect()
    assert torch.axon.memory_allocated(DEVICE) == allocated - 64


def test_host_alias_of_allocated_memory():
    on_device = torch.arange(10, dtype=torch.float32, device=f"axon:{DEVICE}")[2:8:2]
    torch.axon.synchronize(DEVICE)
    alias = host_alias(on_device)
    assert alias.device.type == "cpu"
    assert alias.shape == on_device.shape and alias.stride() == on_device.stride()
    assert alias.storage_offset() == on_device.storage_offset()
    assert torch.equal(alias, torch.tensor([2.0, 4.0, 6.0]))


def test_non_contiguous_views_keep_sizes_strides_and_offset():
    base = torch.arange(60, dtype=torch.int16).reshape(6, 10)
    view = base[1:5:2, 3:9].t()
    adopted = adopt(view, DEVICE)
    assert adopted.shape == view.shape and adopted.stride() == view.stride()
    assert adopted.storage_offset() == view.storage_offset()
    assert adopted.untyped_storage().nbytes() == base.untyped_storage().nbytes()
    assert torch.equal(adopted.cpu(), view)
    assert host_alias(adopted).data_ptr() == view.data_ptr()


def test_views_of_one_buffer_share_one_adopted_storage():
    base = torch.arange(100, dtype=torch.float32)
    allocated = torch.axon.memory_allocated(DEVICE)
    first = adopt(base[:50], DEVICE)
    second = adopt(base[50:], DEVICE)
    again = adopt(torch.from_dlpack(base), DEVICE)  # another CPU storage over the same bytes
    assert first.untyped_storage().data_ptr() == second.untyped_storage().data_ptr() == again.data_ptr()
    assert torch.axon.memory_allocated(DEVICE) == allocated + 400  # counted once
    second.zero_()
    assert first.cpu().sum().item() == sum(range(50)) and again.cpu()[50:].sum().item() == 0
    del first, second, again
    gc.collect()
    assert torch.axon.memory_allocated(DEVICE) == allocated
    readopted = adopt(base, DEVICE)  # the import ended, so the bytes can be adopted afresh
    assert torch.axon.memory_allocated(DEVICE) == allocated + 400
    del readopted


def test_bfloat16_from_jax():
    array = jnp.linspace(-4.0, 4.0, 33, dtype=jnp.bfloat16)
    adopted = adopt(torch.from_dlpack(array), DEVICE)
    assert adopted.dtype == torch.bfloat16
    expected = torch.linspace(-4.0, 4.0, 33, dtype=torch.float32).to(torch.bfloat16)
    assert torch.equal(adopted.cpu(), expected)
    assert torch.equal((adopted * 2).cpu(), expected * 2)
    assert host_alias(adopted).data_ptr() == array.unsafe_buffer_pointer()


def test_flags_and_empty_tensors():
    conjugated = torch.tensor([1 + 2j, 3 - 1j]).conj()
    adopted = adopt(conjugated, DEVICE)
    assert adopted.is_conj() and torch.equal(adopted.cpu(), conjugated)
    allocated = torch.axon.memory_allocated(DEVICE)
    empty = adopt(torch.empty(0, 3), DEVICE)
    assert empty.shape == (0, 3) and empty.device == torch.device("axon", DEVICE)
    assert torch.axon.memory_allocated(DEVICE) == allocated


def test_record_stream_and_work_on_other_streams():
    source = torch.arange(1 << 16, dtype=torch.float32)
    adopted = adopt(source, DEVICE)
    side = torch.axon.Stream(DEVICE)
    side.wait_stream(torch.axon.current_stream(DEVICE))
    with torch.axon.stream(side):
        doubled = adopted * 2
        adopted.record_stream(side)
    del adopted
    gc.collect()  # waits for `side` before ending the import
    side.synchronize()
    assert torch.equal(doubled.cpu(), source * 2)


def test_bad_input_raises_clear_errors():
    on_device = torch.ones(2, device=f"axon:{DEVICE}")
    with pytest.raises(ValueError, match=r"\[adopt_host_tensor\] expected a CPU tensor, got a tensor on axon:1"):
        adopt(on_device, DEVICE)
    with pytest.raises(ValueError, match="expected a strided tensor"):
        adopt(torch.eye(3).to_sparse(), DEVICE)
    with pytest.raises(IndexError, match="device"):
        adopt(torch.ones(2), torch.axon.device_count())
    with pytest.raises(IndexError, match="device"):
        adopt(torch.ones(2), -1)
    with pytest.raises(ValueError, match=r"\[host_alias\] expected a strided axon tensor, got a .* on cpu"):
        host_alias(torch.ones(2))
    with pytest.raises(TypeError):
        adopt([1, 2], DEVICE)

    source = torch.ones(4)
    kept = adopt(source, DEVICE)
    with pytest.raises(ValueError, match="already adopted on axon:1"):
        adopt(source, 0)
    del kept


def test_out_of_memory_after_emptying_the_cache():
    result = run_python(
        """
        import torch, torch_axon
        adopt = torch_axon._C._adopt_host_tensor
        cached = torch.empty(512 * 1024, dtype=torch.uint8, device="axon:0")
        del cached  # cached by the allocator: still holds half the device
        adopted = adopt(torch.ones(768 * 1024, dtype=torch.uint8), 0)  # fits once the cache is emptied
        assert torch.axon.memory_reserved(0) == 768 * 1024, torch.axon.memory_reserved(0)
        try:
            adopt(torch.ones(512 * 1024, dtype=torch.uint8), 0)
        except torch.OutOfMemoryError as error:
            assert "out of memory on device 0" in str(error), str(error)
            print("refused")
        assert torch.axon.memory_allocated(0) == 768 * 1024
        """,
        env={"AXON_DEVICE_MEMORY": "1MiB"},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "refused"
