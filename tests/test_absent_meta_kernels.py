"""Operators PyTorch gives no meta kernel run asynchronously with their meta kernels from
ops/absent_meta_kernels.h: fused optimizers, cummax/cummin, logcumsumexp. Results equal the CPU's."""

import pytest
import torch
from conftest import run_python

import torch_axon  # noqa: F401

OPTIMIZERS = {
    "sgd fused": lambda params: torch.optim.SGD(params, lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01,
                                                fused=True),
    "sgd fused, tensor lr": lambda params: torch.optim.SGD(params, lr=torch.tensor(0.1), momentum=0.9, fused=True),
    "adagrad fused": lambda params: torch.optim.Adagrad(params, lr=0.1, weight_decay=0.01, fused=True),
    "adam fused, tensor lr": lambda params: torch.optim.Adam(params, lr=torch.tensor(1e-2), amsgrad=True, fused=True),
    "adamw fused, tensor lr": lambda params: torch.optim.AdamW(params, lr=torch.tensor(1e-2), fused=True),
}


@pytest.mark.parametrize("name", OPTIMIZERS)
def test_fused_optimizers_update_as_on_the_cpu(name):
    torch.manual_seed(0)
    weights = [torch.randn(64, 32), torch.randn(32), torch.randn(7, 3, 5)]
    gradients = [[torch.randn_like(w) for w in weights] for _ in range(3)]
    results = {}
    for device in ("cpu", "axon"):
        params = [torch.nn.Parameter(w.clone().to(device)) for w in weights]
        optimizer = OPTIMIZERS[name](params)
        for step in gradients:
            for param, grad in zip(params, step):
                param.grad = grad.to(device)
            optimizer.step()
        results[device] = [p.detach().cpu() for p in params]
    for cpu, axon in zip(results["cpu"], results["axon"]):
        assert torch.equal(cpu, axon)


@pytest.mark.parametrize("operator", ["cummax", "cummin"])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cumulative_extrema_equal_the_cpu(operator, dim):
    x = torch.randn(8, 33, 40)
    x[:, 3] = x[:, 2]  # ties: the CPU's index rule
    values, indices = getattr(torch, operator)(x.to("axon"), dim)
    expected_values, expected_indices = getattr(torch, operator)(x, dim)
    assert torch.equal(values.cpu(), expected_values) and torch.equal(indices.cpu(), expected_indices)


def test_logcumsumexp_equals_the_cpu_and_raises_its_errors_at_the_call():
    x = torch.randn(6, 50, 9, dtype=torch.float64)
    for dim in (0, 1, 2):
        assert torch.equal(torch.logcumsumexp(x.to("axon"), dim).cpu(), torch.logcumsumexp(x, dim))
    out = torch.empty(3, device="axon", dtype=torch.float64)
    torch.logcumsumexp(x.to("axon"), 1, out=out)
    assert out.shape == x.shape and torch.equal(out.cpu(), torch.logcumsumexp(x, 1))
    with pytest.raises(RuntimeError) as on_cpu:
        torch.logcumsumexp(torch.arange(5), 0)
    with pytest.raises(RuntimeError) as on_axon:
        torch.logcumsumexp(torch.arange(5, device="axon"), 0)
    assert str(on_axon.value) == str(on_cpu.value)


def test_a_fused_step_with_mismatched_lists_raises_the_cpus_error_at_the_call():
    def call(device):
        param = torch.zeros(4, device=device)
        torch._fused_sgd_([param], [torch.zeros(4, device=device), torch.zeros(4, device=device)], [],
                          weight_decay=0.0, momentum=0.0, lr=0.1, dampening=0.0, nesterov=False, maximize=False,
                          is_first_step=True)

    with pytest.raises(RuntimeError) as on_cpu:
        call("cpu")
    with pytest.raises(RuntimeError) as on_axon:
        call("axon")
    assert str(on_axon.value).splitlines()[0] == str(on_cpu.value).splitlines()[0]


def test_these_operators_return_while_the_stream_is_held():
    # Without a meta kernel each call drained the stream and ran at once: it would wait
    # for the gate here, and the subprocess would time out.
    result = run_python("""
        import torch, torch_axon
        params = [torch.nn.Parameter(torch.randn(256, 256, device="axon")) for _ in range(3)]
        optimizers = [torch.optim.SGD(params, lr=0.1, momentum=0.9, fused=True),
                      torch.optim.Adagrad(params, lr=0.1, fused=True),
                      torch.optim.Adam(params, lr=torch.tensor(1e-3), fused=True)]
        x = torch.randn(16, 64, 64, device="axon")
        def calls():
            for optimizer in optimizers:
                for p in params:
                    p.grad = torch.ones_like(p)
                optimizer.step()
            return torch.cummax(x, 1), torch.cummin(x, 0), torch.logcumsumexp(x, 2)
        calls()  # new shapes: the CPU kernel runs once on stand-ins
        torch.axon.synchronize()
        stream = torch.axon.current_stream()
        gate = torch_axon._C._testing.close_gate(stream.device_index, stream.stream_id)
        calls()
        queued = not stream.query()
        torch_axon._C._testing.open_gate(gate)
        torch.axon.synchronize()
        print(queued)
    """, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split() == ["True"]


def synchronous_runs(name):
    return torch_axon._C._testing.synchronous_runs().get(name, 0)


LOSSES = {
    "aten::multi_margin_loss_backward": lambda x, device: torch.nn.functional.multi_margin_loss(
        x, torch.tensor([1, 0, 4, 2], device=device), p=2,
        weight=torch.linspace(0.5, 1.5, 5, dtype=x.dtype, device=device)),
    "aten::multilabel_margin_loss_backward": lambda x, device: torch.nn.functional.multilabel_margin_loss(
        x, torch.tensor([[1, -1, 0, 0, 0], [3, 2, -1, 0, 0], [0, 1, 2, 3, 4], [4, -1, 0, 0, 0]], device=device)),
    "aten::_ctc_loss_backward": lambda x, device: torch.nn.functional.ctc_loss(
        x.log_softmax(-1).view(4, 1, 5).expand(4, 2, 5), torch.tensor([[1, 2], [3, 3]], device=device), [4, 4],
        [2, 1]),
}


@pytest.mark.parametrize("backward", LOSSES)
def test_loss_gradients_equal_the_cpu_without_draining_the_stream(backward):
    torch.manual_seed(0)
    x = torch.randn(4, 5, dtype=torch.float64)
    gradients = {}
    for device in ("cpu", "axon"):
        leaf = x.clone().to(device).requires_grad_()
        LOSSES[backward](leaf, device).backward()
        gradients[device] = leaf.grad.cpu()
    assert torch.equal(gradients["axon"], gradients["cpu"])
    before = synchronous_runs(backward)
    leaf = x.to("axon").requires_grad_()
    LOSSES[backward](leaf, "axon").backward()
    assert synchronous_runs(backward) == before


def test_distribution_gradients_equal_the_cpu_without_draining_the_stream():
    torch.manual_seed(0)
    alpha = torch.rand(3, 40, dtype=torch.float64) * 3 + 0.1
    x = torch.distributions.Dirichlet(alpha).sample()
    total = alpha.sum(-1, keepdim=True).expand_as(alpha).contiguous()
    sample = torch._standard_gamma(alpha)
    calls = {
        "aten::_dirichlet_grad": lambda d: torch._dirichlet_grad(x.to(d), alpha.to(d), total.to(d)),
        "aten::_standard_gamma_grad": lambda d: torch._standard_gamma_grad(alpha.to(d), sample.to(d)),
    }
    for name, call in calls.items():
        assert torch.equal(call("axon").cpu(), call("cpu")), name
        before = synchronous_runs(name)
        call("axon")
        assert synchronous_runs(name) == before, name


def test_binomial_and_dirichlet_samples_are_queued_and_in_range():
    count = torch.full((4, 1000), 10.0, device="axon")
    prob = torch.rand(4, 1000, device="axon")
    alpha = torch.rand(4, 1000, 5, device="axon") + 0.5
    torch.binomial(count, prob), torch.distributions.Dirichlet(alpha).sample()  # new shapes: stand-ins
    before = {name: synchronous_runs(name) for name in ("aten::binomial", "aten::_sample_dirichlet")}
    torch.manual_seed(1)
    draws = torch.binomial(count, prob)
    samples = torch.distributions.Dirichlet(alpha).sample()
    assert {name: synchronous_runs(name) for name in before} == before
    assert draws.shape == count.shape and samples.shape == alpha.shape
    assert bool(((draws >= 0) & (draws <= 10) & (draws == draws.round())).all())
    assert torch.allclose(samples.sum(-1), torch.ones(4, 1000, device="axon"), atol=1e-5)
    # Mean of Binomial(10, p) is 10 p: over 4000 draws the average error is small.
    assert abs(float((draws - 10 * prob).mean())) < 0.2
    torch.manual_seed(1)
    assert torch.equal(torch.binomial(count, prob), draws)  # the axon generator's stream, as for any random op
