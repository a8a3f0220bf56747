"""Moving modules onto axon keeps Parameter objects: ties, lazy parameters, `.data =`."""

import copy

import pytest
import torch
import torch.nn as nn


class TiedLanguageModel(nn.Module):
    """Input embedding and output projection share one matrix, as in GPT-2, BERT, T5."""

    def __init__(self, vocabulary: int = 32, width: int = 16):
        super().__init__()
        self.embed = nn.Embedding(vocabulary, width)
        self.mix = nn.Linear(width, width)
        self.head = nn.Linear(width, vocabulary, bias=False)
        self.head.weight = self.embed.weight

    def forward(self, tokens):
        return self.head(torch.tanh(self.mix(self.embed(tokens))))


def _train(model, device, steps=6):
    torch.manual_seed(1)
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.05)
    losses = []
    for _ in range(steps):
        tokens = torch.randint(0, 32, (4, 8))
        logits = model(tokens.to(device))
        loss = nn.functional.cross_entropy(logits.flatten(0, 1), tokens.flatten().to(device))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


@pytest.mark.parametrize("move", ["to", "axon", "to_device_dtype"])
def test_tied_weights_stay_tied(move):
    model = TiedLanguageModel()
    if move == "to":
        model.to("axon")
    elif move == "axon":
        model.axon()
    else:
        model.to("axon", torch.float64)
    assert model.head.weight is model.embed.weight
    assert model.embed.weight.device.type == "axon"
    assert isinstance(model.embed.weight, nn.Parameter)
    assert len(list(model.parameters())) == 3  # embed/head (one), mix.weight, mix.bias


def test_tied_model_trains_like_the_cpu():
    torch.manual_seed(0)
    cpu_model = TiedLanguageModel()
    axon_model = copy.deepcopy(cpu_model).to("axon")
    cpu_losses = _train(cpu_model, "cpu")
    axon_losses = _train(axon_model, "axon")
    assert axon_losses == pytest.approx(cpu_losses, rel=1e-5, abs=1e-6)
    assert axon_model.head.weight is axon_model.embed.weight
    torch.testing.assert_close(axon_model.embed.weight.cpu(), cpu_model.embed.weight.detach(), rtol=1e-5, atol=1e-6)


def test_parameter_objects_survive_a_round_trip_and_load_state_dict():
    model = TiedLanguageModel()
    weight = model.embed.weight
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)  # holds the objects, as users' code does
    model.to("axon")
    assert model.embed.weight is weight and weight.device.type == "axon"
    state = {key: value.cpu() * 0 + 1 for key, value in model.state_dict().items()}
    model.load_state_dict(state)
    assert model.head.weight is model.embed.weight and weight.device.type == "axon"
    assert torch.equal(weight.cpu(), torch.ones_like(weight.cpu()))
    model.cpu()
    assert model.embed.weight is weight and weight.device.type == "cpu"
    assert optimizer.param_groups[0]["params"][0] is weight


def test_gradients_move_with_their_parameters():
    layer = nn.Linear(3, 2)
    layer(torch.randn(4, 3)).sum().backward()
    expected = layer.weight.grad.clone()
    layer.to("axon")
    assert layer.weight.grad.device.type == "axon"
    torch.testing.assert_close(layer.weight.grad.cpu(), expected)


def test_lazy_modules_stay_uninitialized_until_first_call():
    layer = nn.LazyLinear(3).to("axon")
    assert isinstance(layer.weight, nn.parameter.UninitializedParameter)
    out = layer(torch.randn(2, 5, device="axon"))
    assert out.shape == (2, 3) and layer.weight.shape == (3, 5) and layer.weight.device.type == "axon"


def test_data_assignment_moves_a_tensor_between_cpu_and_axon():
    tensor = torch.zeros(3)
    tensor.data = torch.ones(3, device="axon")
    assert tensor.device.type == "axon" and tensor.sum().item() == 3
    tensor.data = torch.full((2,), 5.0)
    assert tensor.device.type == "cpu" and tensor.tolist() == [5.0, 5.0]


def test_set_onto_another_devices_storage_raises():
    source = torch.arange(4.0, device="axon:0").untyped_storage()
    with pytest.raises(RuntimeError, match="the devices must match"):
        torch.empty(0, device="axon:1").set_(source)
    with pytest.raises(RuntimeError, match="the devices must match"):
        torch.empty(0).set_(source)
