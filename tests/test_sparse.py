"""Sparse tensors (COO, CSR, CSC, BSR, BSC) on axon: members in axon memory,
every operator the CPU has, results equal to the CPU's, no CPU fallback."""

import io
import pathlib
import sys

import pytest
import torch
from conftest import run_python

LAYOUTS = [torch.sparse_coo, torch.sparse_csr, torch.sparse_csc, torch.sparse_bsr, torch.sparse_bsc]


@pytest.fixture(autouse=True)
def no_fallback():
    torch.axon.reset_fallback_ops()
    yield
    torch.axon.synchronize()
    assert torch.axon.fallback_ops() == {}


def dense_matrix(rows=6, columns=4, seed=0):
    generator = torch.Generator().manual_seed(seed)
    matrix = torch.randn(rows, columns, generator=generator)
    return matrix * (torch.rand(rows, columns, generator=generator) < 0.5)


def as_layout(tensor, layout):
    blocksize = (2, 2) if layout in (torch.sparse_bsr, torch.sparse_bsc) else None
    return tensor.to_sparse(layout=layout, blocksize=blocksize)


def members(tensor):
    if tensor.layout == torch.sparse_coo:
        return [tensor._indices(), tensor._values()]
    if tensor.layout in (torch.sparse_csr, torch.sparse_bsr):
        return [tensor.crow_indices(), tensor.col_indices(), tensor.values()]
    return [tensor.ccol_indices(), tensor.row_indices(), tensor.values()]


def assert_same(actual, expected):
    """Same layout, shape, dtype and members (so also the same values), and axon-resident."""
    if isinstance(expected, (list, tuple)):
        assert len(actual) == len(expected)
        for a, e in zip(actual, expected):
            assert_same(a, e)
        return
    assert actual.device.type == "axon", actual.device
    assert (actual.layout, actual.shape, actual.dtype) == (expected.layout, expected.shape, expected.dtype)
    if expected.layout == torch.strided:
        torch.testing.assert_close(actual.cpu(), expected)
        return
    for member in members(actual):
        assert member.device.type == "axon"
    for a, e in zip(members(actual.cpu()), members(expected)):
        torch.testing.assert_close(a, e)


def on_both(make):
    """make(device) on axon and on the CPU, from the same random numbers (drawn on the CPU)."""
    torch.manual_seed(0)
    on_axon = make("axon")
    torch.manual_seed(0)
    return on_axon, make("cpu")


@pytest.mark.parametrize("layout", LAYOUTS, ids=str)
def test_sparse_tensors_move_to_axon_and_back(layout):
    cpu = as_layout(dense_matrix(), layout)
    on_axon = cpu.to("axon")
    assert on_axon.layout == layout and all(m.device.type == "axon" for m in members(on_axon))
    assert_same(on_axon, cpu)
    back = on_axon.cpu()
    assert back.device.type == "cpu"
    for a, e in zip(members(back), members(cpu)):
        torch.testing.assert_close(a, e)


@pytest.mark.parametrize("layout", LAYOUTS, ids=str)
def test_conversions_between_layouts_run_on_axon(layout):
    dense = dense_matrix()
    converted = as_layout(dense.to("axon"), layout)
    assert_same(converted, as_layout(dense, layout))
    assert_same(converted.to_dense(), dense)
    assert_same(converted.to_sparse(), as_layout(dense, layout).to_sparse())


CASES = {
    "coalesce_sums_duplicates": lambda d: torch.sparse_coo_tensor(
        torch.tensor([[0, 0, 1, 0], [1, 1, 0, 2]]), torch.tensor([1.0, 2.0, 3.0, 4.0]), (2, 3)).to(d).coalesce(),
    "add": lambda d: dense_matrix().to_sparse().to(d) + dense_matrix(seed=1).to_sparse().to(d),
    "sub_scaled": lambda d: torch.sub(dense_matrix().to_sparse().to(d), dense_matrix(seed=1).to_sparse().to(d),
                                      alpha=0.5),
    "mul_by_scalar": lambda d: dense_matrix().to_sparse().to(d) * 3,
    "mul_sparse": lambda d: dense_matrix().to_sparse().to(d) * dense_matrix(seed=1).to_sparse().to(d),
    "div_by_scalar": lambda d: dense_matrix().to_sparse().to(d) / 4,
    "sparse_mm": lambda d: torch.sparse.mm(dense_matrix().to_sparse().to(d), torch.randn(4, 3).to(d)),
    "sparse_sparse_mm": lambda d: torch.sparse.mm(dense_matrix().to_sparse().to(d),
                                                  dense_matrix(4, 5, seed=2).to_sparse().to(d)),
    "addmm": lambda d: torch.addmm(torch.ones(6, 3).to(d), dense_matrix().to_sparse().to(d),
                                   torch.arange(12.0).reshape(4, 3).to(d), beta=0.5, alpha=2),
    "csr_matmul": lambda d: dense_matrix().to_sparse_csr().to(d) @ torch.randn(4, 3).to(d),
    "csr_matvec": lambda d: dense_matrix().to_sparse_csr().to(d) @ torch.randn(4).to(d),
    "bsr_matmul": lambda d: dense_matrix().to_sparse_bsr((2, 2)).to(d) @ torch.randn(4, 3).to(d),
    "csr_add": lambda d: dense_matrix().to_sparse_csr().to(d) + dense_matrix(seed=1).to_sparse_csr().to(d),
    "sparse_sum": lambda d: torch.sparse.sum(dense_matrix().to_sparse().to(d)),
    "sparse_sum_dim": lambda d: torch.sparse.sum(dense_matrix().to_sparse().to(d), dim=1),
    "sparse_softmax": lambda d: torch.sparse.softmax(dense_matrix().to_sparse().to(d), 1),
    "sparse_log_softmax": lambda d: torch.sparse.log_softmax(dense_matrix().to_sparse().to(d), 0),
    "index_select": lambda d: dense_matrix().to_sparse().to(d).index_select(0, torch.tensor([4, 0, 4]).to(d)),
    "sparse_mask": lambda d: torch.randn(6, 4).to(d).sparse_mask(dense_matrix().to_sparse().to(d)),
    "sampled_addmm": lambda d: torch.sparse.sampled_addmm(dense_matrix().to_sparse_csr().to(d),
                                                          torch.randn(6, 5).to(d), torch.randn(5, 4).to(d)),
    "mm_reduce_mean": lambda d: torch.sparse.mm(dense_matrix().to_sparse_csr().to(d), torch.randn(4, 3).to(d),
                                                "mean"),
    "hspmm": lambda d: torch.hspmm(dense_matrix().to_sparse().to(d), torch.randn(4, 3).to(d)),
    "smm": lambda d: torch.smm(dense_matrix().to_sparse().to(d), torch.randn(4, 3).to(d)),
    "transpose_coalesce": lambda d: dense_matrix().to_sparse().to(d).t().coalesce(),
    "cat": lambda d: torch.cat([dense_matrix().to_sparse().to(d), dense_matrix(seed=1).to_sparse().to(d)]),
    "narrow_copy": lambda d: dense_matrix().to_sparse().to(d).narrow_copy(0, 1, 3),
    "unary_ufuncs": lambda d: [f(dense_matrix().to_sparse_csr().to(d)) for f in (torch.sin, torch.abs, torch.relu)],
    "integer_values": lambda d: (dense_matrix() * 10).to(torch.int64).to_sparse().to(d) * 2,
    "hybrid_coo": lambda d: torch.randn(5, 3, 2).to(d).to_sparse(sparse_dim=1).coalesce(),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_operator_matches_the_cpu(name):
    actual, expected = on_both(CASES[name])
    assert_same(actual, expected)


def test_members_are_views_of_axon_memory():
    tensor = dense_matrix().to_sparse().to("axon")
    tensor._values().mul_(2)  # writes the tensor's own values, as on the CPU
    torch.testing.assert_close(tensor.to_dense().cpu(), dense_matrix() * 2)
    csr = dense_matrix().to_sparse_csr().to("axon")
    csr.values().zero_()
    assert csr.to_dense().abs().sum().item() == 0


def test_in_place_operators_update_the_sparse_tensor():
    tensor = dense_matrix().to_sparse().to("axon")
    tensor.mul_(3)
    tensor.add_(dense_matrix(seed=1).to_sparse().to("axon"))  # grows nnz: members are replaced
    expected = dense_matrix().to_sparse() * 3 + dense_matrix(seed=1).to_sparse()
    assert_same(tensor.coalesce(), expected.coalesce())
    dense = torch.zeros(6, 4, device="axon")
    dense.add_(tensor)  # dense += sparse
    torch.testing.assert_close(dense.cpu(), expected.to_dense())
    tensor.zero_()
    assert tensor._nnz() == 0 and tensor.shape == (6, 4)


def test_sparse_reads_see_queued_dense_work():
    """A sparse operator reads dense inputs only after the stream has computed them."""
    base = torch.randn(256, 256).to("axon")
    for _ in range(20):
        base = base * 1.01 + 0.5  # queued, not yet run
    result = torch.relu(base - base.mean()).to_sparse_csr()
    expected = torch.relu(base.cpu() - base.cpu().mean())
    torch.testing.assert_close(result.to_dense().cpu(), expected)


def test_mixed_devices_are_refused_at_the_call():
    with pytest.raises(RuntimeError, match="same device"):
        torch.sparse.mm(dense_matrix().to_sparse().to("axon"), torch.randn(4, 3))


def test_sparse_gradients_flow_into_axon_parameters():
    embedding_cpu = torch.nn.Embedding(10, 3, sparse=True)
    embedding = torch.nn.Embedding(10, 3, sparse=True).to("axon")
    embedding.load_state_dict(embedding_cpu.state_dict())
    indices = torch.tensor([[1, 2, 2], [7, 1, 0]])
    for module, device in ((embedding_cpu, "cpu"), (embedding, "axon")):
        module(indices.to(device)).pow(2).sum().backward()
    assert embedding.weight.grad.layout == torch.sparse_coo
    assert_same(embedding.weight.grad.coalesce(), embedding_cpu.weight.grad.coalesce())


def test_sparse_adam_trains_an_embedding_bag_as_on_the_cpu():
    def train(device):
        torch.manual_seed(0)
        bag = torch.nn.EmbeddingBag(20, 4, mode="sum", sparse=True).to(device)
        optimizer = torch.optim.SparseAdam(bag.parameters(), lr=0.1)
        generator = torch.Generator().manual_seed(1)
        for _ in range(3):
            indices = torch.randint(0, 20, (12,), generator=generator).to(device)
            offsets = torch.tensor([0, 5, 9]).to(device)
            optimizer.zero_grad()
            bag(indices, offsets).pow(2).mean().backward()
            optimizer.step()
        return bag.weight.detach()

    torch.testing.assert_close(train("axon").cpu(), train("cpu"))


def test_gradients_through_sparse_matmul():
    def gradients(device):
        sparse = dense_matrix().to_sparse().to(device).requires_grad_()
        weight = torch.arange(12.0).reshape(4, 3).to(device).requires_grad_()
        torch.sparse.mm(sparse, weight).sin().sum().backward()
        return sparse.grad.coalesce(), weight.grad

    actual, expected = on_both(gradients)
    assert_same(actual, expected)


@pytest.mark.parametrize("layout", [torch.sparse_coo, torch.sparse_csr], ids=str)
def test_save_and_load_keep_the_device_and_layout(layout):
    tensor = as_layout(dense_matrix(), layout).to("axon")
    buffer = io.BytesIO()
    torch.save(tensor, buffer)
    buffer.seek(0)
    loaded = torch.load(buffer)
    assert_same(loaded, as_layout(dense_matrix(), layout))


@pytest.mark.parametrize("model", ["gnn", "recommender"])
def test_sparse_example_models_train_as_on_the_cpu(model):
    """examples/train_sparse.py: a GCN over a CSR adjacency and an EmbeddingBag(sparse=True) recommender."""
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "examples"))
    import train_sparse

    cpu_losses, _ = train_sparse.MODELS[model]("cpu", 12)
    axon_losses, _ = train_sparse.MODELS[model]("axon", 12)
    assert sum(cpu_losses[-3:]) < sum(cpu_losses[:3])  # it learns
    torch.testing.assert_close(axon_losses, cpu_losses, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("reduce", ["sum", "mean", "amax", "amin"])
def test_reduced_sparse_matmul_gradients(reduce):
    """Kernels see whether their inputs require grad: amax/amin keep the indices their backward reads."""

    def gradients(device):
        sparse = dense_matrix(5, 5).to_sparse_csr().to(device).requires_grad_()
        weight = torch.arange(15.0).reshape(5, 3).to(device).requires_grad_()
        torch.sparse.mm(sparse, weight, reduce).pow(2).sum().backward()
        return sparse.grad.to_dense(), weight.grad

    actual, expected = on_both(gradients)
    assert_same(actual, expected)


def test_sparse_products_with_dense_results_queue_on_the_stream():
    """Once a synchronous run confirmed the dense meta kernel's prediction of a call signature's results,
    later calls of that signature queue like dense kernels (a synchronizing one would time out here)."""
    result = run_python("""
        import warnings
        import torch, torch_axon
        warnings.simplefilter("ignore")
        matrix = torch.eye(64) * 2
        sparse, dense = matrix.to_sparse_csr().to("axon"), torch.ones(64, 8).to("axon")
        torch.addmm(dense, sparse, dense)  # proves the signature
        stream = torch.axon.current_stream()
        gate = torch_axon._C._testing.close_gate(stream.device_index, stream.stream_id)
        product = torch.addmm(dense, sparse, dense * 3)
        queued = not stream.query()
        torch_axon._C._testing.open_gate(gate)
        print(queued, product.sum().item())
    """, timeout=60)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split() == ["True", str(64 * 8 * 7.0)]


def test_a_refuted_prediction_keeps_the_sparse_result():
    """sparse * dense is sparse, though the dense meta kernel predicts a dense result: every call stays right."""
    sparse, dense = dense_matrix().to_sparse().to("axon"), torch.full((6, 4), 2.0).to("axon")
    for _ in range(3):
        product = sparse * dense
        assert product.layout == torch.sparse_coo
        torch.testing.assert_close(product.to_dense().cpu(), dense_matrix() * 2)


def test_predictions_are_trusted_per_layout_and_size():
    """A signature confirmed for one sparse/dense split or size says nothing about another: each runs as the CPU."""
    hybrid = torch.randn(4, 3).to_sparse(sparse_dim=1)
    assert torch.sum(hybrid.to("axon"), dim=0).layout == torch.sum(hybrid, dim=0).layout
    full = torch.randn(4, 3).to_sparse()
    for _ in range(2):
        assert_same(torch.sum(full.to("axon"), dim=0), torch.sum(full, dim=0))
    sparse = dense_matrix(4, 3).to_sparse()
    for rows in (1, 5, 5):
        dense = torch.arange(rows * 4.0).reshape(rows, 4)
        actual, expected = torch.mm(dense.to("axon"), sparse.to("axon")), torch.mm(dense, sparse)
        assert_same(actual, expected)
        assert actual.stride() == expected.stride()


def test_a_confirmed_signature_still_raises_the_cpus_size_errors_at_the_call():
    sparse = dense_matrix(3, 4).to_sparse().to("axon")
    torch.add(torch.ones(3, 4).to("axon"), sparse)
    with pytest.raises(RuntimeError, match="same size"):
        torch.add(torch.ones(1, 4).to("axon"), sparse)


def test_in_place_operators_keep_views_of_the_members():
    tensor = dense_matrix().to_sparse().coalesce().to("axon")
    values, detached = tensor._values(), tensor.detach()
    tensor.sin_()
    expected = dense_matrix().to_sparse().coalesce()._values().sin()
    torch.testing.assert_close(values.cpu(), expected)
    torch.testing.assert_close(detached._values().cpu(), expected)
    csr = dense_matrix().to_sparse_csr().to("axon")
    csr_values = csr.values()
    csr.mul_(2)
    torch.testing.assert_close(csr_values.cpu(), dense_matrix().to_sparse_csr().values() * 2)


def test_invariant_checks_read_indices_only_when_they_hold_the_data():
    """check_sparse_tensor_invariants on memory the host cannot address (staged copies)."""
    result = run_python("""
        import warnings
        import torch, torch_axon
        warnings.simplefilter("ignore")
        matrix = torch.eye(6) * 3
        csr = matrix.to_sparse_csr().to("axon")
        with torch.sparse.check_sparse_tensor_invariants(True):
            for _ in range(2):
                product = torch.mm(csr, torch.ones(6, 2).to("axon"))
                dense = csr.to_dense()
        print(product.sum().item(), dense.sum().item())
    """, env={"AXON_EMULATED_PRIVATE_MEMORY": "1"}, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split() == ["36.0", "18.0"]


def test_sparse_tensors_on_another_device():
    """Placeholders and members go to the tensor's own device, whichever device is current."""
    on_second = dense_matrix().to_sparse().to("axon:1")
    assert on_second.device == torch.device("axon:1") and on_second._values().device == torch.device("axon:1")
    assert_same(on_second.coalesce() * 2, dense_matrix().to_sparse().coalesce() * 2)
    values = torch.ones(3, device="axon:1")
    for _ in range(30):
        values = values @ torch.eye(3, device="axon:1")  # queued work on axon:1's stream
    source = torch.sparse_coo_tensor(torch.tensor([[0, 1, 2], [0, 1, 2]], device="axon:1"), values + 1, (3, 3))
    target = torch.zeros(3, 3, device="axon:0").to_sparse()
    target.copy_(source)  # waits for axon:1's work, as a dense copy between devices does
    assert target.device == torch.device("axon:0")
    torch.testing.assert_close(target.to_dense().cpu(), torch.eye(3) * 2)
