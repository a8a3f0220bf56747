"""Models built on TorchNeuron's published gaps run on axon and match the CPU.

Fused LSTM/GRU, bilinear and bicubic upsampling, advanced indexing and
linear algebra: each trains or evaluates on axon with results equal to the
CPU's, and without falling back to the CPU.
"""

import copy

import pytest
import torch
from torch import nn


@pytest.fixture(autouse=True)
def no_fallback():
    torch.axon.reset_fallback_ops()
    yield
    assert torch.axon.fallback_ops() == {}, "an operator fell back to the CPU"


def train_both(model: nn.Module, batches, loss_fn, steps: int = 3, lr: float = 0.01):
    models = {"cpu": model, "axon": copy.deepcopy(model).to("axon")}
    losses = {}
    for device, m in models.items():
        optimizer = torch.optim.Adam(m.parameters(), lr=lr)
        losses[device] = []
        for inputs, target in batches[:steps]:
            optimizer.zero_grad()
            loss = loss_fn(m(inputs.to(device)), target.to(device))
            loss.backward()
            optimizer.step()
            losses[device].append(loss.item())
    return losses, models


class RecurrentLanguageModel(nn.Module):
    def __init__(self, cell: type, vocab: int = 50, width: int = 32):
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.rnn = cell(width, width, num_layers=2, batch_first=True, dropout=0.0)
        self.head = nn.Linear(width, vocab)

    def forward(self, tokens):
        output, _ = self.rnn(self.embed(tokens))
        return self.head(output)


@pytest.mark.parametrize("cell", [nn.LSTM, nn.GRU], ids=["lstm", "gru"])
def test_recurrent_language_model(cell):
    torch.manual_seed(0)
    batches = [(torch.randint(0, 50, (4, 12)), torch.randint(0, 50, (4, 12))) for _ in range(3)]
    loss_fn = lambda logits, target: nn.functional.cross_entropy(logits.flatten(0, 1), target.flatten())  # noqa
    losses, models = train_both(RecurrentLanguageModel(cell), batches, loss_fn)
    torch.testing.assert_close(losses["axon"], losses["cpu"], rtol=1e-5, atol=1e-5)
    for cpu_p, axon_p in zip(models["cpu"].parameters(), models["axon"].parameters()):
        torch.testing.assert_close(axon_p.detach().cpu(), cpu_p.detach(), rtol=1e-4, atol=1e-5)


class UpsamplingNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.encode = nn.Conv2d(3, 8, 3, stride=2, padding=1)
        self.bilinear = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False)
        self.refine = nn.Conv2d(8, 8, 3, padding=1)
        self.bicubic = nn.Upsample(scale_factor=1.5, mode="bicubic", align_corners=True)
        self.head = nn.Conv2d(8, 3, 1)

    def forward(self, x):
        x = torch.relu(self.encode(x))
        x = torch.relu(self.refine(self.bilinear(x)))
        return self.head(self.bicubic(x))


def test_bilinear_and_bicubic_upsampling_network():
    torch.manual_seed(0)
    batches = [(torch.randn(2, 3, 16, 16), torch.randn(2, 3, 24, 24)) for _ in range(3)]
    losses, _ = train_both(UpsamplingNet(), batches, nn.functional.mse_loss)
    torch.testing.assert_close(losses["axon"], losses["cpu"], rtol=1e-5, atol=1e-6)
    x = torch.randn(1, 2, 5, 7)
    for mode in ("bilinear", "bicubic"):
        for align in (False, True):
            expected = nn.functional.interpolate(x, size=(9, 4), mode=mode, align_corners=align)
            actual = nn.functional.interpolate(x.to("axon"), size=(9, 4), mode=mode, align_corners=align)
            torch.testing.assert_close(actual.cpu(), expected)


def test_advanced_indexing():
    torch.manual_seed(0)
    cpu = torch.randn(6, 5)
    x = cpu.to("axon")
    rows, cols = torch.tensor([0, 2, 2, 5]), torch.tensor([1, 1, 4, 0])
    torch.testing.assert_close(x[rows.to("axon"), cols.to("axon")].cpu(), cpu[rows, cols])
    mask = cpu > 0.3
    torch.testing.assert_close(x[mask.to("axon")].cpu(), cpu[mask])
    expected = torch.zeros(6, 5).index_put_((rows, cols), torch.ones(4), accumulate=True)
    actual = torch.zeros(6, 5, device="axon").index_put_((rows.to("axon"), cols.to("axon")),
                                                         torch.ones(4, device="axon"), accumulate=True)
    torch.testing.assert_close(actual.cpu(), expected)
    masked_cpu, masked_axon = cpu.clone(), x.clone()
    masked_cpu[mask] = -1.0
    masked_axon[mask.to("axon")] = -1.0
    torch.testing.assert_close(masked_axon.cpu(), masked_cpu)
    # Gradients flow through advanced indexing.
    leaf_cpu, leaf_axon = cpu.clone().requires_grad_(), x.clone().requires_grad_()
    leaf_cpu[rows, cols].sum().backward()
    leaf_axon[rows.to("axon"), cols.to("axon")].sum().backward()
    torch.testing.assert_close(leaf_axon.grad.cpu(), leaf_cpu.grad)


def test_linear_algebra():
    torch.manual_seed(0)
    a = torch.randn(6, 6, dtype=torch.float64)
    spd = a @ a.T + 6 * torch.eye(6, dtype=torch.float64)
    b = torch.randn(6, 3, dtype=torch.float64)
    A, SPD, B = a.to("axon"), spd.to("axon"), b.to("axon")
    torch.testing.assert_close(torch.linalg.solve(A, B).cpu(), torch.linalg.solve(a, b))
    torch.testing.assert_close(torch.linalg.cholesky(SPD).cpu(), torch.linalg.cholesky(spd))
    q, r = torch.linalg.qr(A)
    torch.testing.assert_close((q @ r).cpu(), a)
    torch.testing.assert_close(q.cpu(), torch.linalg.qr(a)[0])
    u, s, vh = torch.linalg.svd(A)
    torch.testing.assert_close(s.cpu(), torch.linalg.svd(a)[1])
    torch.testing.assert_close((u @ torch.diag(s) @ vh).cpu(), a)
    eigenvalues, eigenvectors = torch.linalg.eigh(SPD)
    torch.testing.assert_close(eigenvalues.cpu(), torch.linalg.eigh(spd)[0])
    torch.testing.assert_close((eigenvectors @ torch.diag(eigenvalues) @ eigenvectors.T).cpu(), spd)
    # And their gradients.
    leaf_cpu, leaf_axon = spd.clone().requires_grad_(), SPD.clone().requires_grad_()
    torch.linalg.cholesky(leaf_cpu).sum().backward()
    torch.linalg.cholesky(leaf_axon).sum().backward()
    torch.testing.assert_close(leaf_axon.grad.cpu(), leaf_cpu.grad)
