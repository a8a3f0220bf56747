"""gather, scatter_add and scatter_add_ by axon's own kernels (csrc/host_execution/scatter_gather_rows.h).

Every case compares with the CPU bit for bit (dtype, sizes, strides, bytes) and checks by the direct kernels'
launch counter whether axon's kernel took the call or left it to the generic kernel, so a case the kernel got
wrong cannot pass by having been declined.
"""

import pytest
import torch
from conftest import assert_same_bits, direct_launches, draw


def check(function, *cpu_args, direct):
    """`function` on axon copies of `cpu_args` against the CPU: dtype, sizes, strides and bytes; and the path."""
    axon_args = [a.to("axon") if isinstance(a, torch.Tensor) else a for a in cpu_args]
    before = direct_launches()
    got = function(*axon_args)
    taken = direct_launches() > before
    expected = function(*cpu_args)
    assert got.device.type == "axon" and got.stride() == expected.stride()
    assert_same_bits([expected], [got])
    assert taken == direct, f"axon's kernel {'not ' if direct else ''}taken"


def index(*shape, high, seed):
    return torch.randint(0, high, shape, generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64,
                                   torch.int32, torch.int16, torch.int8, torch.uint8])
def test_gather_every_element_size(dtype):
    source = (draw(6, 9, seed=1) * 50).to(dtype)
    check(lambda s, i: torch.gather(s, 1, i), source, index(6, 13, high=9, seed=2), direct=True)


@pytest.mark.parametrize("dim", [0, 1, 2, -1, -3])
def test_gather_along_each_dimension(dim):
    source = draw(5, 6, 7, seed=3)
    shape = [5, 6, 7]
    shape[dim] = 11
    check(lambda s, i: torch.gather(s, dim, i), source, index(*shape, high=source.size(dim), seed=4), direct=True)


def test_gather_large_enough_to_split_among_threads():
    source = draw(4096, 256, seed=5)
    check(lambda s, i: torch.gather(s, 0, i), source, index(2048, 256, high=4096, seed=6), direct=True)
    check(lambda s, i: torch.gather(s, 1, i), source, index(4096, 64, high=256, seed=7), direct=True)


def test_gather_one_dimension_and_special_values():
    source = torch.tensor([0.0, -0.0, float("nan"), float("inf"), -float("inf"), 1e-45])
    check(lambda s, i: torch.gather(s, 0, i), source, torch.tensor([5, 4, 3, 2, 1, 0, 1, 1]), direct=True)


@pytest.mark.parametrize("name,function", [
    ("index smaller outside dim", lambda s, i: torch.gather(s, 0, i[:, :3].contiguous())),
    ("transposed source", lambda s, i: torch.gather(s.t().contiguous().t(), 0, i)),
    ("transposed index", lambda s, i: torch.gather(s, 0, i.t().contiguous().t())),
    ("empty index", lambda s, i: torch.gather(s, 0, i[:0])),
    ("int32 index", lambda s, i: torch.gather(s, 0, i.int())),
    ("bool source", lambda s, i: torch.gather(s > 0, 0, i)),
    ("complex source", lambda s, i: torch.gather(torch.complex(s, -s), 0, i)),
])
def test_gather_other_calls_take_the_generic_kernel(name, function):
    check(function, draw(8, 5, seed=8), index(4, 5, high=8, seed=9), direct=False)


@pytest.mark.parametrize("name,function", [
    ("index of another rank", lambda s, i: torch.gather(s, 0, i[0])),
    ("index larger outside dim", lambda s, i: torch.gather(s, 0, torch.cat([i, i], 1))),
    ("dim out of range", lambda s, i: torch.gather(s, 2, i)),
])
def test_gather_calls_the_cpu_refuses_raise_its_errors_at_the_call(name, function):
    source, idx = draw(8, 5, seed=8), index(4, 5, high=8, seed=9)
    with pytest.raises((RuntimeError, IndexError)) as cpu_error:
        function(source, idx)
    with pytest.raises(type(cpu_error.value)) as axon_error:
        function(source.to("axon"), idx.to("axon"))
    assert str(axon_error.value) == str(cpu_error.value)


def test_gather_zero_dimensional_source():
    check(lambda s, i: torch.gather(s, 0, i), torch.tensor(2.5), torch.tensor(0), direct=False)


@pytest.mark.parametrize("bad", [8, -1, 1 << 40])
def test_gather_index_out_of_bounds_raises_the_cpus_error(bad):
    source, idx = draw(8, 5, seed=10), index(4, 5, high=8, seed=11)
    idx[2, 3] = bad
    with pytest.raises(RuntimeError) as cpu_error:
        torch.gather(source, 0, idx)
    result = torch.gather(source.to("axon"), 0, idx.to("axon"))
    with pytest.raises(RuntimeError, match="out of bounds") as axon_error:
        torch.axon.synchronize()
    assert str(cpu_error.value).splitlines()[0] in str(axon_error.value)
    del result
    check(lambda s, i: torch.gather(s, 0, i), source, index(4, 5, high=8, seed=12), direct=True)  # still usable


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_scatter_add_in_place_adds_in_the_cpus_order(dtype, dim):
    # Few destinations, many contributions each: any other order of the additions changes the last bits.
    destination = draw(8, 300, seed=13).to(dtype) if dim == 0 else draw(300, 8, seed=13).to(dtype)
    source = (draw(2000, 300, seed=14) if dim == 0 else draw(300, 2000, seed=14)).to(dtype) * 1e3
    idx = index(*source.shape, high=8, seed=15)
    check(lambda d, i, s: d.scatter_add_(dim, i, s), destination, idx, source, direct=True)


def test_scatter_add_large_enough_to_split_among_threads():
    destination, source = draw(1024, 512, seed=16), draw(4096, 512, seed=17)
    check(lambda d, i, s: d.scatter_add_(0, i, s), destination, index(4096, 512, high=1024, seed=18), source,
          direct=True)
    # Along the last dimension each slice's index row is read straight through (scatter_gather_rows.cpp).
    destination, source = draw(2048, 64, seed=19), draw(2048, 512, seed=20)
    check(lambda d, i, s: d.scatter_add_(1, i, s), destination, index(2048, 512, high=64, seed=21), source,
          direct=True)


def test_scatter_add_functional_leaves_self_alone():
    destination, source, idx = draw(6, 7, seed=19), draw(6, 20, seed=20), index(6, 20, high=7, seed=21)
    on_axon = destination.to("axon")
    check(lambda d, i, s: torch.scatter_add(d, 1, i, s), destination, idx, source, direct=True)
    result = torch.scatter_add(on_axon, 1, idx.to("axon"), source.to("axon"))
    assert_same_bits([destination], [on_axon])
    assert result.data_ptr() != on_axon.data_ptr()


def test_gather_gradient_is_the_cpus():
    source, idx = draw(64, 33, seed=22), index(64, 50, high=33, seed=23)
    gradients = []
    for device in ("cpu", "axon"):
        leaf = source.to(device, copy=True).requires_grad_()
        (torch.gather(leaf, 1, idx.to(device)) * torch.arange(50.0, device=device)).sum().backward()
        gradients.append(leaf.grad)
    before = direct_launches()
    assert_same_bits([gradients[0]], [gradients[1]])
    assert direct_launches() == before  # reading the gradient queued nothing


@pytest.mark.parametrize("name,function", [
    ("half destination", lambda d, i, s: d.half().scatter_add_(0, i, s.half())),
    ("source larger than index", lambda d, i, s: d.scatter_add_(0, i[:2].contiguous(), s)),
    ("transposed source", lambda d, i, s: d.scatter_add_(0, i, s.t().contiguous().t())),
    ("int64 destination", lambda d, i, s: d.long().scatter_add_(0, i, s.long())),
])
def test_scatter_add_other_calls_take_the_generic_kernel(name, function):
    check(function, draw(5, 4, seed=24), index(3, 4, high=5, seed=25), draw(3, 4, seed=26) * 10, direct=False)


def test_scatter_add_source_sharing_the_destination_takes_the_generic_kernel():
    def scatter_into_itself(buffer, idx):
        buffer = buffer.clone()
        return buffer.scatter_add_(0, idx, buffer[:, :3])

    check(scatter_into_itself, draw(4, 6, seed=27), index(4, 3, high=4, seed=28), direct=False)


def test_scatter_add_index_out_of_bounds_leaves_the_destination_untouched():
    destination, source = draw(8, 300, seed=29), draw(50, 300, seed=30)
    idx = index(50, 300, high=8, seed=31)
    idx[49, 299] = 8
    with pytest.raises(RuntimeError) as cpu_error:
        destination.clone().scatter_add_(0, idx, source)
    on_axon = destination.to("axon")
    on_axon.scatter_add_(0, idx.to("axon"), source.to("axon"))
    with pytest.raises(RuntimeError, match="out of bounds") as axon_error:
        torch.axon.synchronize()
    assert str(cpu_error.value).splitlines()[0] in str(axon_error.value)
    assert_same_bits([destination], [on_axon])


@pytest.mark.parametrize("shape,dim", [((2, 3, 1), 1), ((2, 3), 1), ((3, 2), 0), ((2, 3, 4), 1), ((2, 3, 1, 1), 1),
                                       ((4, 3, 2), -1)])
@pytest.mark.parametrize("op", ["gather", "scatter_add_"])
def test_several_indices_out_of_bounds_name_the_one_the_cpu_names(shape, dim, op):
    size = shape[dim]
    idx = index(*shape, high=size, seed=32)
    flat = idx.view(-1)
    flat[1], flat[-1], flat[len(flat) // 2] = size + 5, size + 7, -3  # several bad ones, in different slices
    data = draw(*shape, seed=33)

    def run(device):
        if op == "gather":
            return torch.gather(data.to(device), dim, idx.to(device)).cpu()
        return data.to(device, copy=True).scatter_add_(dim, idx.to(device), data.to(device)).cpu()

    with pytest.raises(RuntimeError) as cpu_error:
        run("cpu")
    before = direct_launches()
    with pytest.raises(RuntimeError) as axon_error:
        run("axon")
    assert direct_launches() > before
    assert str(axon_error.value).splitlines()[0].endswith(str(cpu_error.value).splitlines()[0])


def _scripted_indexing(x, index):
    masked = x[x > 0.5]
    columns = x[:, index]
    rows = x[index]
    x[x < 0.25] = 1.0
    x[:, index] = 2.0
    x[index, 0] += 1.0
    return masked, columns, rows, x


def test_torchscript_indexing_gives_the_cpus_results():
    # TorchScript passes index lists (Tensor?[]) typed with its own Optional[Tensor], which
    # isOptionalTensorList() does not recognize: `x[mask] = 1.0` raised "expected an axon tensor or device
    # argument" (PyTorch's test_jit_indexing).
    scripted = torch.jit.script(_scripted_indexing)
    x = torch.rand(5, 4, generator=torch.Generator().manual_seed(0))
    index = torch.tensor([0, 2, 2])
    for got, want in zip(scripted(x.to("axon"), index.to("axon")), _scripted_indexing(x.clone(), index)):
        assert torch.equal(got.cpu(), want)
