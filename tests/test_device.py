"""Devices: enumeration, selection, properties, the device guard."""

import os
import subprocess
import sys
import warnings

import pytest
import torch


def test_accelerator_reports_axon():
    assert torch.accelerator.is_available()
    assert torch.accelerator.current_accelerator() == torch.device("axon")
    assert torch.accelerator.device_count() == torch.axon.device_count() >= 4
    assert torch.axon.is_available()


def test_device_properties():
    properties = torch.axon.get_device_properties(0)
    assert properties.name == torch.axon.get_device_name(0)
    assert properties.total_memory > 0
    assert torch.axon.get_memory_info(0)[1] == properties.total_memory
    assert properties.stream_priority_high < properties.stream_priority_low


def test_set_device_and_context_manager():
    assert torch.axon.current_device() == 0
    torch.axon.set_device(1)
    assert torch.axon.current_device() == 1
    assert torch.accelerator.current_device_index() == 1
    assert torch.empty(2, device="axon").device == torch.device("axon:1")
    with torch.axon.device(2):
        assert torch.axon.current_device() == 2
        assert torch.ones(3, device="axon").device == torch.device("axon:2")
    assert torch.axon.current_device() == 1
    torch.accelerator.set_device_index(0)
    assert torch.axon.current_device() == 0


def test_operators_run_on_their_tensors_device():
    x = torch.arange(6.0, device="axon:3")
    y = x * 2 + 1
    assert y.device == torch.device("axon:3")
    assert torch.axon.current_device() == 0
    assert torch.equal(y.cpu(), torch.arange(6.0) * 2 + 1)


def test_copies_between_devices():
    source = torch.randn(64, 33)
    on_one = source.to("axon:1")
    on_two = on_one.to("axon:2")
    assert on_two.device == torch.device("axon:2")
    assert torch.equal(on_two.cpu(), source)
    # Non-contiguous source and dtype change across devices.
    converted = torch.empty(33, 64, dtype=torch.float64, device="axon:3")
    converted.copy_(on_one.t())
    assert torch.equal(converted.cpu(), source.t().double())


def test_device_of_and_tensor_helpers():
    x = torch.zeros(2, device="axon:1")
    with torch.axon.device_of(x):
        assert torch.axon.current_device() == 1
    assert x.is_axon
    assert torch.zeros(2).axon().device == torch.device("axon:0")
    module = torch.nn.Linear(2, 2).axon(1)
    assert module.weight.device == torch.device("axon:1")


@pytest.mark.parametrize("index", [-2, 999])
def test_bad_device_index_is_an_error(index):
    count = torch.axon.device_count()
    if index < 0:
        with pytest.raises((RuntimeError, ValueError, IndexError)):
            torch.empty(1, device=f"axon:{index}")
        return
    with pytest.raises(IndexError, match=f"invalid device index {index}.*< {count}"):
        torch.axon.set_device(index)
    with pytest.raises(IndexError, match=f"invalid device index {count}"):
        torch.empty(1, device=f"axon:{count}")
    with pytest.raises(IndexError, match=f"invalid device index {count}"):
        torch.ones(1).to(f"axon:{count}")


def test_mixing_devices_in_one_op_is_an_error():
    a = torch.ones(3, device="axon:0")
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device.*axon:0.*axon:1"):
        a + torch.ones(3, device="axon:1")
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device.*cpu"):
        a + torch.ones(3)
    # 0-dim CPU tensors are scalars, accepted as on CUDA.
    assert torch.equal((a + torch.tensor(2.0)).cpu(), torch.full((3,), 3.0))


def test_device_module_answers_what_pytorch_probes():
    # Attributes PyTorch's own code reads from device modules (checkpoint,
    # autocast, functorch's RNG, test utilities), answered as torch.cuda does.
    module = torch.get_device_module("axon")
    assert module._initialized is True and module.is_initialized()
    module._lazy_init()
    assert module.is_bf16_supported() and module.is_bf16_supported(including_emulation=False)
    assert module.OutOfMemoryError is torch.OutOfMemoryError
    assert module._get_generator(torch.device("axon:0")).device == torch.device("axon:0")
    assert module.get_amp_supported_dtype() == [torch.float16, torch.bfloat16]


def test_sleep_keeps_the_stream_busy():
    start = torch.axon.Event(enable_timing=True)
    end = torch.axon.Event(enable_timing=True)
    start.record()
    torch.axon._sleep(20_000_000)  # 20 ms of device time
    end.record()
    end.synchronize()
    assert start.elapsed_time(end) >= 15


def test_the_driver_is_chosen_at_run_time():
    # The emulated driver by default, with every capability; the null skeleton by AXON_DRIVER=null in the same
    # build, where the package still imports, reports no devices and refuses device work with the driver's detail.
    assert torch.axon.driver_name() == "emulated"
    assert torch.axon.driver_capabilities(0) == {"host_addressable_memory": True, "host_functions": True,
                                                 "import_host_memory": True, "executables": True,
                                                 "format:host-shared-object": True, "format:stablehlo-mlir": True}
    script = (
        "import torch, torch_axon\n"
        "assert torch.axon.driver_name() == 'null', torch.axon.driver_name()\n"
        "assert torch.axon.device_count() == 0 and not torch.axon.is_available()\n"
        "try:\n"
        "    torch.ones(2, device='axon')\n"
        "except NotImplementedError as error:\n"
        "    assert 'not supported by the null driver' in str(error), error\n"
        "else:\n"
        "    raise AssertionError('device work on the null driver did not raise')\n"
    )
    for driver in ("null",):
        result = subprocess.run([sys.executable, "-c", script], env={**os.environ, "AXON_DRIVER": driver},
                                capture_output=True, text=True, timeout=120)
        assert result.returncode == 0, result.stderr[-2000:]
    bogus = subprocess.run([sys.executable, "-c", "import torch, torch_axon; print(torch.axon.device_count())"],
                           env={**os.environ, "AXON_DRIVER": "/nonexistent/libdriver.so"}, capture_output=True,
                           text=True, timeout=120)
    assert bogus.returncode == 0 and bogus.stdout.strip() == "0", bogus.stderr[-2000:]


def test_device_capability_lists_the_dtypes_axon_holds_and_converts():
    capability = torch.accelerator.get_device_capability()
    dtypes = capability["supported_dtypes"]
    assert torch.axon.get_device_capability(0) == capability  # one answer, from the C++ hook
    assert {torch.float32, torch.bfloat16, torch.float16, torch.int64, torch.bool, torch.complex64,
            torch.float8_e4m3fn, torch.uint32} <= set(dtypes)
    assert not {torch.qint8, torch.quint8, torch.bits8, torch.int4} & set(dtypes)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # complex -> real discards the imaginary part, as on the CPU
        for source in dtypes:
            for target in dtypes:
                converted = torch.ones(2, dtype=source, device="axon").to(target)
                assert converted.dtype == target and converted.cpu().dtype == target
    with pytest.raises(IndexError):
        torch.axon.get_device_capability(torch.axon.device_count())
