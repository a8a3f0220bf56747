"""`import torch` alone makes axon usable (torch.backends entry point)."""

from conftest import run_python


def test_axon_works_without_importing_torch_axon():
    result = run_python(
        """
        import sys
        import torch
        assert "torch_axon" in sys.modules, "autoload did not import torch_axon"
        x = torch.randn(4, 4).to("axon")
        value = (x @ x).sum().item()
        expected = (x.cpu() @ x.cpu()).sum().item()
        assert abs(value - expected) < 1e-4, (value, expected)
        print(torch.accelerator.current_accelerator())
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "axon"


def test_autoload_can_be_disabled():
    result = run_python(
        """
        import sys
        import torch
        print("torch_axon" in sys.modules)
        """,
        env={"TORCH_DEVICE_BACKEND_AUTOLOAD": "0"},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"
