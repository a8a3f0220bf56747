"""Operators without an axon kernel: CPU fallback, warning, listing, error mode."""

import warnings

import pytest
import torch
from conftest import run_python

# A custom operator with only a CPU kernel: it has no axon kernel by design.
_library = torch.library.Library("axon_fallback_test", "DEF")
_library.define("twice(Tensor x) -> Tensor")
_library.define("twice_(Tensor(a!) x) -> Tensor(a!)")
_library.impl("twice", lambda x: x * 2, "CPU")
_library.impl("twice_", lambda x: x.mul_(2), "CPU")


def twice_on_axon():
    return torch.ops.axon_fallback_test.twice(torch.arange(8.0, device="axon"))


def test_fallback_runs_on_cpu_and_is_listed():
    torch.axon.reset_fallback_ops()
    first = twice_on_axon()
    twice_on_axon()
    assert first.device.type == "axon"
    torch.testing.assert_close(first.cpu(), torch.arange(8.0) * 2)
    assert torch.axon.fallback_ops() == {"axon_fallback_test::twice": 2}
    assert torch.axon.fallback_mode() == "warn"


def test_fallback_warns_once_per_operator():
    result = run_python(
        """
        import torch
        library = torch.library.Library("axon_fallback_test", "DEF")
        library.define("twice(Tensor x) -> Tensor")
        library.impl("twice", lambda x: x * 2, "CPU")
        for _ in range(3):
            torch.ops.axon_fallback_test.twice(torch.ones(2, device="axon"))
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr.count("'axon_fallback_test::twice' has no axon kernel yet and ran on the CPU") == 1


def test_fallback_error_mode_names_the_operator():
    result = run_python(
        """
        import torch
        assert torch.axon.fallback_mode() == "error"
        library = torch.library.Library("axon_fallback_test", "DEF")
        library.define("twice(Tensor x) -> Tensor")
        library.impl("twice", lambda x: x * 2, "CPU")
        try:
            torch.ops.axon_fallback_test.twice(torch.ones(2, device="axon"))
        except NotImplementedError as error:
            print(error)
        """,
        env={"AXON_FALLBACK": "error"},
    )
    assert result.returncode == 0, result.stderr
    assert "axon_fallback_test::twice" in result.stdout and "AXON_FALLBACK=error" in result.stdout


def test_fallback_in_place_updates_axon_tensor():
    torch.axon.reset_fallback_ops()
    x = torch.arange(6.0, device="axon").reshape(2, 3)
    view = x[:, 1:]
    result = torch.ops.axon_fallback_test.twice_(view)
    assert result.device.type == "axon"
    torch.testing.assert_close(x.cpu(), torch.tensor([[0.0, 2.0, 4.0], [3.0, 8.0, 10.0]]))


def test_fallback_warning_is_a_python_warning():
    # Custom operators are called through torch.ops, outside PyTorch's own
    # warning translation: the warning must still reach Python's warnings.
    library = torch.library.Library("axon_fallback_warning_test", "DEF")
    library.define("thrice(Tensor x) -> Tensor")
    library.impl("thrice", lambda x: x * 3, "CPU")
    with pytest.warns(UserWarning, match="'axon_fallback_warning_test::thrice' has no axon kernel yet"):
        result = torch.ops.axon_fallback_warning_test.thrice(torch.ones(2, device="axon"))
    assert result.cpu().tolist() == [3.0, 3.0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        torch.ops.axon_fallback_warning_test.thrice(torch.ones(2, device="axon"))  # once per operator


def test_fallback_warning_obeys_python_w_error():
    result = run_python(
        """
        import torch
        library = torch.library.Library("axon_fallback_test", "DEF")
        library.define("twice(Tensor x) -> Tensor")
        library.impl("twice", lambda x: x * 2, "CPU")
        try:
            torch.ops.axon_fallback_test.twice(torch.ones(2, device="axon"))
        except UserWarning as warning:
            print("raised:", warning)
        """,
        env={"PYTHONWARNINGS": "error"},
    )
    assert result.returncode == 0, result.stderr
    assert "raised: [axon] the operator 'axon_fallback_test::twice'" in result.stdout
