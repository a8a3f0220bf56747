"""PyTorch on the PJRT driver (runtime/pjrt_driver) with XLA's CPU plugin.

The driver is chosen once per process, so each test runs its code in a fresh
interpreter with AXON_DRIVER=pjrt. torch_axon points AXON_PJRT_PLUGIN at the
installed XLA CPU plugin. Device memory there is PJRT buffers, which the host
cannot address: eager kernels stage their operands through pinned host
buffers (csrc/host_execution/device_memory_views.h), compiled graphs run as
PJRT executables, and collectives stage through pinned host copies.
"""

from __future__ import annotations

import pytest
from conftest import run_python
from test_distributed import torchrun

PJRT = {"AXON_DRIVER": "pjrt"}


def run_on_pjrt(code: str, timeout: float = 300) -> str:
    result = run_python(code, PJRT, timeout=timeout)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result.stdout


def test_the_devices_are_the_plugins_and_their_memory_is_not_host_addressable():
    out = run_on_pjrt("""
        import torch, torch_axon
        print("driver", torch.axon.driver_name(), torch.axon.device_count())
        print("name", torch.axon.get_device_name(0))
        try:
            torch_axon._C._host_alias(torch.ones(2, device="axon"))
        except NotImplementedError as error:
            print("refused", "not host-addressable" in str(error))
    """)
    assert "driver pjrt 4" in out
    assert "name Axon PJRT cpu" in out
    assert "refused True" in out


def test_eager_operators_match_the_cpu():
    out = run_on_pjrt("""
        import torch, torch_axon
        torch.manual_seed(0)
        a, b = torch.randn(6, 7), torch.randn(7, 5)
        image, kernel = torch.randn(2, 3, 9, 9), torch.randn(4, 3, 3, 3)
        index = torch.tensor([4, 0, 2])
        checks = {
            "matmul": lambda t: t["a"] @ t["b"],
            "softmax": lambda t: torch.softmax(t["a"], dim=1),
            "conv2d": lambda t: torch.nn.functional.conv2d(t["image"], t["kernel"], padding=1),
            "strided_view": lambda t: t["a"][1:5:2, ::3] * 2,
            "transpose_contiguous": lambda t: t["a"].t().contiguous(),
            "index_select": lambda t: t["a"].index_select(0, t["index"]),
            "sort": lambda t: torch.sort(t["a"], dim=1).values,
            "nonzero": lambda t: torch.nonzero(t["a"] > 0),
            "cumsum_double": lambda t: t["a"].double().cumsum(0),
        }
        cpu = {"a": a, "b": b, "image": image, "kernel": kernel, "index": index}
        dev = {name: value.to("axon") for name, value in cpu.items()}
        for name, check in checks.items():
            expected, actual = check(cpu), check(dev)
            assert actual.device.type == "axon", name
            print(name, bool(torch.allclose(actual.cpu(), expected, atol=1e-5)))

        # In-place writes into part of a tensor, and the bytes around them.
        x_cpu, x = a.clone(), a.to("axon")
        x_cpu[2:4, 1:6].add_(10)
        x[2:4, 1:6].add_(10)
        x_cpu[:, 0] = 7
        x[:, 0] = 7
        print("partial_writes", torch.equal(x.cpu(), x_cpu))
        print("item", (a.to("axon").sum().item() - a.sum().item()) < 1e-4)

        # Copies across devices and back.
        y = a.to("axon:0").to("axon:3")
        print("cross_device", y.device.index == 3 and torch.equal(y.cpu(), a))

        # Random numbers follow the device generator's seed, whatever the driver.
        torch.manual_seed(42)
        first = torch.randn(8, device="axon").cpu()
        torch.manual_seed(42)
        print("seeded_random", torch.equal(first, torch.randn(8, device="axon").cpu()))
    """)
    lines = dict(line.split() for line in out.strip().splitlines())
    assert lines and all(value == "True" for value in lines.values()), out


def test_a_training_loop_matches_the_cpu():
    out = run_on_pjrt("""
        import copy, torch, torch_axon
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.LayerNorm(32),
                                    torch.nn.Linear(32, 4))
        twin = copy.deepcopy(model).to("axon")
        optimizers = [torch.optim.AdamW(m.parameters(), lr=1e-2) for m in (model, twin)]
        data, target = torch.randn(64, 16), torch.randint(0, 4, (64,))
        for step in range(5):
            losses = []
            for m, optimizer, device in zip((model, twin), optimizers, ("cpu", "axon")):
                loss = torch.nn.functional.cross_entropy(m(data.to(device)), target.to(device))
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                losses.append(loss.item())
            print("step", step, abs(losses[0] - losses[1]))
    """)
    differences = [float(line.split()[-1]) for line in out.strip().splitlines()]
    assert len(differences) == 5 and max(differences) < 1e-5, out


def test_compiled_graphs_run_as_pjrt_executables():
    out = run_on_pjrt("""
        import torch, torch_axon
        def f(x, w):
            return torch.tanh(x @ w).sum(dim=1) * 3
        x, w = torch.randn(8, 16), torch.randn(16, 4)
        compiled = torch.compile(f, backend="axon")
        actual = compiled(x.to("axon"), w.to("axon"))
        print("match", bool(torch.allclose(actual.cpu(), f(x, w), atol=1e-5)), actual.device.type)
    """)
    assert "match True axon" in out, out


@pytest.mark.parametrize("plugin, detail", [
    ("/nonexistent/libpjrt_missing.so", "cannot load the PJRT plugin"),
    ("/bin/ls", "PJRT plugin"),
])
def test_an_unusable_plugin_raises_at_first_device_use(plugin, detail):
    result = run_python("""
        import torch, torch_axon
        print("imported")
        try:
            torch.ones(2, device="axon")
        except RuntimeError as error:
            print("raised", str(error))
    """, dict(PJRT, AXON_PJRT_PLUGIN=plugin))
    assert result.returncode == 0, result.stderr[-3000:]
    assert "imported" in result.stdout
    assert "raised" in result.stdout and detail in result.stdout, result.stdout


def test_collectives_and_ddp_stage_through_host_copies():
    output = torchrun("collectives.py", 2, env=PJRT)
    assert output.count("OK check_") == 2 * 16


def test_ddp_on_two_processes_matches_one_process():
    # DDP's GPT losses and parameters on 2 ranks against the same training on one process (check_ddp_gpt).
    output = torchrun("training.py", 2, env=dict(PJRT, AXON_TEST_CHECKS="check_ddp_gpt,check_fsdp2_gpt"))
    assert output.count("OK check_ddp_gpt") == 2
    assert output.count("OK check_fsdp2_gpt") == 2
