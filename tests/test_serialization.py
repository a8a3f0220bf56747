"""torch.save / torch.load of axon tensors and modules, both directions."""

import io

import pytest
import torch


def round_trip(obj, **load_kwargs):
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    buffer.seek(0)
    return torch.load(buffer, **load_kwargs)


def test_axon_tensor_round_trip_keeps_device():
    x = torch.randn(3, 5, device="axon:1")
    loaded = round_trip(x)
    assert loaded.device == torch.device("axon:1")
    assert torch.equal(loaded.cpu(), x.cpu())


def test_map_location_both_directions():
    x = torch.randn(4, device="axon")
    to_cpu = round_trip(x, map_location="cpu")
    assert to_cpu.device.type == "cpu" and torch.equal(to_cpu, x.cpu())
    cpu = torch.randn(4)
    to_axon = round_trip(cpu, map_location="axon:2")
    assert to_axon.device == torch.device("axon:2") and torch.equal(to_axon.cpu(), cpu)
    mapped = round_trip(x, map_location={"axon:0": "axon:3"})
    assert mapped.device == torch.device("axon:3")


def test_module_state_dict_and_views_share_storage():
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2)).to("axon")
    loaded = round_trip(model.state_dict())
    for key, value in model.state_dict().items():
        assert loaded[key].device == value.device and torch.equal(loaded[key].cpu(), value.cpu())
    base = torch.arange(10.0, device="axon")
    pair = round_trip({"base": base, "view": base[2:5]})
    pair["view"].fill_(-1)
    assert pair["base"].cpu()[2:5].tolist() == [-1.0, -1.0, -1.0]


def test_storage_methods():
    x = torch.arange(6.0)
    storage = x.untyped_storage().axon()
    assert storage.is_axon and storage.device.type == "axon"
    assert torch.equal(torch.tensor([], device="axon").set_(storage).view(torch.float32).cpu(), x)


def test_loading_onto_a_missing_device_is_an_error():
    buffer = io.BytesIO()
    torch.save(torch.ones(2, device="axon"), buffer)
    buffer.seek(0)
    count = torch.axon.device_count()
    with pytest.raises((RuntimeError, IndexError), match="device"):
        torch.load(buffer, map_location=f"axon:{count}")
