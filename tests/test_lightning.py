"""Lightning on axon (torch_axon/lightning/): Trainer and Fabric with accelerator="axon", unchanged user code.

Lightning is an optional dependency; scripts/setup.sh installs it, so CI runs these."""

from __future__ import annotations

import pytest
import torch

lightning = pytest.importorskip("lightning", reason="Lightning is not installed (pip install lightning)")
from lightning.fabric import Fabric  # noqa: E402
from lightning.pytorch import LightningModule, Trainer  # noqa: E402
from lightning.pytorch.strategies import DDPStrategy, SingleDeviceStrategy  # noqa: E402


class _Regression(LightningModule):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.net = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
        self.devices_seen = set()
        self.dtypes_seen = set()
        self.losses = []

    def training_step(self, batch, _):
        x, y = batch
        out = self.net(x)
        self.devices_seen.add(out.device.type)
        self.dtypes_seen.add(out.dtype)
        loss = torch.nn.functional.mse_loss(out.float(), y)
        self.losses.append(loss.item())
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.05)


def _loader():
    generator = torch.Generator().manual_seed(1)
    x = torch.randn(64, 8, generator=generator)
    data = torch.utils.data.TensorDataset(x, x.sum(1, keepdim=True))
    return torch.utils.data.DataLoader(data, batch_size=16)


def _fit(**trainer_args):
    model = _Regression()
    trainer = Trainer(max_epochs=2, logger=False, enable_checkpointing=False, enable_progress_bar=False,
                      enable_model_summary=False, **trainer_args)
    trainer.fit(model, _loader())
    return model, trainer


def test_trainer_trains_on_axon_with_the_cpus_losses():
    model, trainer = _fit(accelerator="axon", devices=1)
    assert isinstance(trainer.strategy, SingleDeviceStrategy)
    assert trainer.strategy.root_device == torch.device("axon", 0)
    assert model.devices_seen == {"axon"}
    cpu_model, _ = _fit(accelerator="cpu", devices=1)
    torch.testing.assert_close(model.losses, cpu_model.losses, rtol=1e-4, atol=1e-5)


def test_a_chosen_device_index_is_used():
    if torch.axon.device_count() < 2:
        pytest.skip("needs two axon devices")
    model, trainer = _fit(accelerator="axon", devices=[1])
    assert trainer.strategy.root_device == torch.device("axon", 1)
    assert model.devices_seen == {"axon"}


def test_bf16_mixed_autocasts_on_axon():
    model, trainer = _fit(accelerator="axon", devices=1, precision="bf16-mixed")
    assert trainer.precision_plugin.device == "axon"
    assert model.dtypes_seen == {torch.bfloat16}
    assert model.losses[-1] < model.losses[0]


def test_several_devices_choose_ddp_over_the_axon_process_group():
    if torch.axon.device_count() < 2:
        pytest.skip("needs two axon devices")
    trainer = Trainer(accelerator="axon", devices=2, logger=False)
    assert isinstance(trainer.strategy, DDPStrategy)
    assert trainer.strategy.parallel_devices == [torch.device("axon", 0), torch.device("axon", 1)]
    assert trainer.strategy._get_process_group_backend() == "axon"


def test_fabric_runs_on_axon_with_bf16_mixed():
    fabric = Fabric(accelerator="axon", devices=1, precision="bf16-mixed")
    fabric.launch()
    assert fabric.device == torch.device("axon", 0)
    torch.manual_seed(0)
    model = torch.nn.Linear(8, 1)
    inside = []  # what the layer computes in, under Fabric's autocast (Fabric returns outputs in float32)
    model.register_forward_hook(lambda module, args, out: inside.append((out.device.type, out.dtype)))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    model, optimizer = fabric.setup(model, optimizer)
    x = torch.randn(16, 8, device=fabric.device)
    for _ in range(3):
        out = model(x)
        assert inside[-1] == ("axon", torch.bfloat16) and out.device.type == "axon"
        loss = out.float().pow(2).mean()
        fabric.backward(loss)
        optimizer.step()
        optimizer.zero_grad()


def test_bad_device_requests_raise():
    from lightning.fabric.utilities.exceptions import MisconfigurationException

    with pytest.raises(MisconfigurationException):
        Trainer(accelerator="axon", devices=torch.axon.device_count() + 1)
    with pytest.raises(MisconfigurationException):
        Trainer(accelerator="axon", devices=[torch.axon.device_count()])


def test_a_precision_plugin_the_user_gives_is_left_as_given():
    from lightning.pytorch.plugins.precision import MixedPrecision

    plugin = MixedPrecision("bf16-mixed", "cpu")
    trainer = Trainer(accelerator="axon", devices=1, plugins=[plugin], logger=False)
    assert trainer.precision_plugin is plugin and plugin.device == "cpu"
