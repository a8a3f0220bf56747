"""Eager operators on axon match the CPU: factories, views, math, training."""

import copy
import pathlib
import sys

import pytest
import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "examples"))
from tiny_gpt import TinyGPT  # noqa: E402


def same(axon_tensor, cpu_tensor, **tolerances):
    assert axon_tensor.device.type == "axon"
    torch.testing.assert_close(axon_tensor.cpu(), cpu_tensor, **tolerances)


def test_factories():
    same(torch.zeros(2, 3, device="axon"), torch.zeros(2, 3))
    same(torch.ones(4, dtype=torch.int32, device="axon"), torch.ones(4, dtype=torch.int32))
    same(torch.full((2, 2), 3.5, device="axon"), torch.full((2, 2), 3.5))
    same(torch.arange(0, 10, 3, device="axon"), torch.arange(0, 10, 3))
    same(torch.linspace(0, 1, 7, device="axon"), torch.linspace(0, 1, 7))
    same(torch.eye(3, device="axon"), torch.eye(3))
    same(torch.empty(0, 4, device="axon"), torch.empty(0, 4))
    same(torch.tensor([[1, 2], [3, 4]], device="axon"), torch.tensor([[1, 2], [3, 4]]))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.float16, torch.int64,
                                   torch.complex64, torch.bool])
def test_item_and_round_trip_dtypes(dtype):
    cpu = (torch.arange(12).reshape(3, 4) % 3).to(dtype)
    x = cpu.to("axon")
    assert x.dtype == dtype
    same(x, cpu)
    assert x[1, 2].item() == cpu[1, 2].item()


def test_views_share_memory_with_their_base():
    base = torch.arange(24.0, device="axon").reshape(4, 6)
    view = base.t()[1:4, ::2]
    view.mul_(-1)
    expected = torch.arange(24.0).reshape(4, 6)
    expected.t()[1:4, ::2].mul_(-1)
    same(base, expected)
    strided = torch.as_strided(base, (3, 3), (1, 6), 2)
    same(strided, torch.as_strided(expected, (3, 3), (1, 6), 2))
    same(base.view(2, 12).unfold(1, 4, 4), expected.view(2, 12).unfold(1, 4, 4))
    same(torch.view_as_real(torch.ones(3, dtype=torch.complex64, device="axon")),
         torch.view_as_real(torch.ones(3, dtype=torch.complex64)))


def test_non_contiguous_inputs_and_out_and_inplace():
    a_cpu = torch.randn(5, 7).t()
    b_cpu = torch.randn(7, 5)
    a, b = a_cpu.to("axon"), b_cpu.to("axon")
    same(a + b, a_cpu + b_cpu)
    out = torch.empty(0, device="axon")  # resized by out=, as on CPU
    torch.mul(a, b, out=out)
    same(out, a_cpu * b_cpu)
    c = a.clone()
    c.addcmul_(a, b, value=0.5)
    same(c, a_cpu.clone().addcmul_(a_cpu, b_cpu, value=0.5))
    values, indices = torch.max(a, dim=1)
    cpu_values, cpu_indices = torch.max(a_cpu, dim=1)
    same(values, cpu_values)
    same(indices, cpu_indices)


def test_type_promotion_and_scalars():
    x = torch.arange(5, device="axon")
    same(x / 2, torch.arange(5) / 2)
    same(x * 1.5 + torch.tensor(1, dtype=torch.float64), torch.arange(5) * 1.5 + torch.tensor(1, dtype=torch.float64))
    same((x > 2) & (x < 4), (torch.arange(5) > 2) & (torch.arange(5) < 4))


def test_resize_and_set():
    x = torch.arange(4.0, device="axon")
    x.resize_(2, 4)
    assert x.shape == (2, 4)
    same(x.flatten()[:4], torch.arange(4.0))  # old contents kept
    y = torch.tensor([], device="axon")
    y.set_(x.untyped_storage(), 0, (2, 2), (1, 2))
    same(y, torch.arange(4.0).view(2, 2).t())


def test_reductions_and_linear_algebra():
    cpu = torch.randn(16, 16, dtype=torch.float64)
    x = cpu.to("axon")
    same(x.sum(), cpu.sum())
    same(x.mean(dim=0), cpu.mean(dim=0))
    same(x.var(dim=1, unbiased=True), cpu.var(dim=1, unbiased=True))
    same(torch.softmax(x, dim=-1), torch.softmax(cpu, dim=-1))
    same(x @ x.t(), cpu @ cpu.t())
    same(torch.cumsum(x, 0), torch.cumsum(cpu, 0))
    spd = cpu @ cpu.t() + 16 * torch.eye(16, dtype=torch.float64)
    same(torch.linalg.cholesky(spd.to("axon")), torch.linalg.cholesky(spd))


def test_indexing():
    cpu = torch.randn(6, 4)
    x = cpu.to("axon")
    index = torch.tensor([0, 2, 5])
    same(x[index.to("axon")], cpu[index])
    same(x[x > 0], cpu[cpu > 0])  # boolean mask: size depends on data
    same(torch.nonzero(x > 0), torch.nonzero(cpu > 0))
    accumulated = torch.zeros(4, device="axon").index_put_((torch.tensor([0, 0, 3], device="axon"),),
                                                           torch.ones(3, device="axon"), accumulate=True)
    same(accumulated, torch.tensor([2.0, 0.0, 0.0, 1.0]))
    same(torch.gather(x, 1, torch.tensor([[0], [1], [2], [3], [0], [1]], device="axon")),
         torch.gather(cpu, 1, torch.tensor([[0], [1], [2], [3], [0], [1]])))
    same(torch.cat([x, x], dim=1), torch.cat([cpu, cpu], dim=1))


def train(model, device, steps, inputs, targets, loss_fn, optimizer_cls, **optimizer_kwargs):
    model = model.to(device)
    optimizer = optimizer_cls(model.parameters(), **optimizer_kwargs)
    losses = []
    for step in range(steps):
        optimizer.zero_grad()
        loss = loss_fn(model, inputs[step].to(device), targets[step].to(device))
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses, model


@pytest.mark.parametrize("optimizer_kwargs", [
    {"foreach": False}, {"foreach": True}, {"fused": True},
], ids=["for-loop", "foreach", "fused"])
def test_mlp_training_matches_cpu(optimizer_kwargs):
    torch.manual_seed(0)
    make = lambda: torch.nn.Sequential(  # noqa: E731
        torch.nn.Linear(20, 64), torch.nn.GELU(), torch.nn.LayerNorm(64), torch.nn.Linear(64, 3))
    reference = make()
    inputs = torch.randn(8, 32, 20)
    targets = torch.randint(0, 3, (8, 32))
    loss_fn = lambda model, x, y: torch.nn.functional.cross_entropy(model(x), y)  # noqa: E731
    cpu_model, axon_model = make(), make()
    cpu_model.load_state_dict(reference.state_dict())
    axon_model.load_state_dict(reference.state_dict())
    cpu_losses, cpu_model = train(cpu_model, "cpu", 8, inputs, targets, loss_fn, torch.optim.AdamW, lr=1e-2,
                                  **optimizer_kwargs)
    axon_losses, axon_model = train(axon_model, "axon", 8, inputs, targets, loss_fn, torch.optim.AdamW, lr=1e-2,
                                    **optimizer_kwargs)
    torch.testing.assert_close(axon_losses, cpu_losses, rtol=1e-5, atol=1e-6)
    for cpu_parameter, axon_parameter in zip(cpu_model.parameters(), axon_model.parameters()):
        same(axon_parameter, cpu_parameter.detach(), rtol=1e-4, atol=1e-5)


def test_transformer_training_matches_cpu():
    torch.manual_seed(0)
    reference = TinyGPT(vocab=32, context=16, width=32, heads=4, layers=2)
    inputs = torch.randint(0, 32, (5, 4, 16))
    targets = torch.randint(0, 32, (5, 4, 16))
    loss_fn = lambda model, x, y: model(x, y)[1]  # noqa: E731
    models = []
    for _ in range(2):
        model = TinyGPT(vocab=32, context=16, width=32, heads=4, layers=2)
        model.load_state_dict(reference.state_dict())
        models.append(model)
    cpu_losses, _ = train(models[0], "cpu", 5, inputs, targets, loss_fn, torch.optim.AdamW, lr=1e-3)
    axon_losses, _ = train(models[1], "axon", 5, inputs, targets, loss_fn, torch.optim.AdamW, lr=1e-3)
    torch.testing.assert_close(axon_losses, cpu_losses, rtol=1e-5, atol=1e-6)


def test_gradients_match_cpu_for_a_cnn():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
                                torch.nn.MaxPool2d(2), torch.nn.Flatten(), torch.nn.Linear(8 * 4 * 4, 10))
    axon_model = copy.deepcopy(model)
    x = torch.randn(4, 3, 8, 8)
    model(x).sum().backward()
    cpu_grads = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    axon_model = axon_model.to("axon")
    axon_model(x.to("axon")).sum().backward()
    for cpu_grad, parameter in zip(cpu_grads, axon_model.parameters()):
        same(parameter.grad, cpu_grad, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_batch_norm_on_strided_inputs(dtype):
    # The CPU's native_batch_norm.out mishandles strided inputs; the
    # functional kernel is right. Axon must give the functional answer.
    torch.manual_seed(0)
    x = torch.randn(4, 10, dtype=dtype)
    cpu_norm = torch.nn.BatchNorm1d(5, dtype=dtype)
    axon_norm = copy.deepcopy(cpu_norm).to("axon")
    expected = cpu_norm(x[:, ::2])
    actual = axon_norm(x.to("axon")[:, ::2])
    same(actual, expected, rtol=1e-2, atol=1e-2) if dtype == torch.bfloat16 else same(actual, expected)
    same(axon_norm.running_mean, cpu_norm.running_mean)
    grad = torch.randn(8, 10, dtype=dtype)[::2, ::2]
    x_cpu = x[:, ::2].clone().requires_grad_()
    x_axon = x.to("axon")[:, ::2].clone().requires_grad_()
    cpu_norm(x_cpu).backward(grad)
    axon_norm(x_axon).backward(grad.to("axon"))
    tolerance = {"rtol": 5e-2, "atol": 5e-2} if dtype == torch.bfloat16 else {}
    same(x_axon.grad, x_cpu.grad, **tolerance)


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128, torch.float32])
@pytest.mark.parametrize("left", [True, False])
def test_linear_solves_on_either_side(dtype, left):
    torch.manual_seed(0)
    a = torch.randn(3, 3, dtype=dtype) + 3 * torch.eye(3)
    b = torch.randn(3, 2, dtype=dtype) if left else torch.randn(1, 3, dtype=dtype)
    solution = torch.linalg.solve(a.to("axon"), b.to("axon"), left=left).cpu()
    residual = (a @ solution - b) if left else (solution @ a - b)
    assert residual.abs().max() < 1e-4
    factors, pivots = torch.linalg.lu_factor(a)
    for adjoint in (False, True):
        expected = torch.linalg.lu_solve(factors, pivots, b, left=left, adjoint=adjoint)
        same(torch.linalg.lu_solve(factors.to("axon"), pivots.to("axon"), b.to("axon"), left=left, adjoint=adjoint),
             expected)


def test_cpu_index_tensors_index_axon_tensors():
    values = torch.arange(10.0, device="axon")
    assert values[torch.tensor([1, 2])].cpu().tolist() == [1.0, 2.0]
    assert values[torch.tensor([True] + [False] * 9)].cpu().tolist() == [0.0]
    values[torch.tensor([3, 4])] = 7.0
    values.index_put_((torch.tensor([0]),), torch.tensor(-1.0, device="axon"), accumulate=True)
    values.index_fill_(0, torch.tensor([9]), 5.0)
    assert values.cpu().tolist() == [-1.0, 1, 2, 7, 7, 5, 6, 7, 8, 5]
    matrix = torch.arange(12.0, device="axon").reshape(3, 4)
    same(matrix[torch.tensor([0, 2]), 1:], torch.arange(12.0).reshape(3, 4)[torch.tensor([0, 2]), 1:])
