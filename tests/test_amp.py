"""torch.autocast("axon"): CUDA's per-operator precision policies."""

import pytest
import torch


def test_autocast_policies():
    model = torch.nn.Linear(8, 8).to("axon")
    x = torch.randn(4, 8, device="axon")
    assert torch.axon.get_amp_supported_dtype() == [torch.float16, torch.bfloat16]
    with torch.autocast("axon", dtype=torch.bfloat16):
        y = model(x)
        assert y.dtype == torch.bfloat16  # matmul runs in lower precision
        assert torch.softmax(y, dim=-1).dtype == torch.float32  # softmax in float32
    with torch.autocast("axon"):
        assert model(x).dtype == torch.float16  # PrivateUse1's default autocast dtype


def test_autocast_training_step_and_banned_op():
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1)).to("axon")
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x, target = torch.randn(32, 8, device="axon"), torch.rand(32, 1, device="axon")
    with torch.autocast("axon", dtype=torch.bfloat16):
        loss = torch.nn.functional.binary_cross_entropy_with_logits(model(x), target)
    loss.backward()
    optimizer.step()
    assert all(p.grad.dtype == torch.float32 for p in model.parameters())
    with torch.autocast("axon", dtype=torch.bfloat16), pytest.raises(RuntimeError, match="unsafe to autocast"):
        torch.nn.functional.binary_cross_entropy(torch.sigmoid(model(x)), target)
