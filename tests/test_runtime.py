"""Driver-level behaviour seen from Python: shutdown, memory protection, config."""

from conftest import run_python


def test_use_after_shutdown_is_an_error():
    result = run_python(
        """
        import torch
        x = torch.ones(4, device="axon")
        torch.axon.shutdown()
        for attempt in (lambda: torch.ones(4, device="axon"), lambda: x + 1, lambda: torch.axon.synchronize(),
                        lambda: x.cpu()):
            try:
                attempt()
            except RuntimeError as error:
                print("shut down" in str(error).lower() or "shut_down" in str(error).lower())
            else:
                print("no error")
        del x  # freeing after shutdown is allowed
        print("done")
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["True", "True", "True", "True", "done"]


def test_protected_memory_catches_host_dereference():
    result = run_python(
        """
        import ctypes, torch
        assert torch.axon.get_device_properties(0).memory_protected
        x = torch.arange(8.0, device="axon")
        print((x * 2).sum().item(), flush=True)   # kernels still work
        ctypes.c_float.from_address(x.data_ptr()).value  # host code touching device memory
        print("not caught")
        """,
        env={"AXON_MEMORY_PROTECT": "1"},
    )
    assert result.stdout.split() == ["56.0"]
    assert result.returncode != 0  # killed by SIGSEGV


def test_device_count_and_capacity_come_from_the_environment():
    result = run_python(
        """
        import torch
        print(torch.axon.device_count(), torch.axon.get_device_properties(1).total_memory)
        """,
        env={"AXON_DEVICE_COUNT": "2", "AXON_DEVICE_MEMORY": "256MiB"},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["2", str(256 << 20)]


def test_malformed_configuration_is_reported_not_crashed():
    result = run_python(
        """
        import torch
        print(torch.axon.is_available())
        try:
            torch.ones(1, device="axon")
        except Exception as error:
            print(type(error).__name__, "AXON_DEVICE_MEMORY" in str(error))
        """,
        env={"AXON_DEVICE_MEMORY": "lots"},
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.split("\n")
    assert lines[0] == "False"
    assert lines[1].endswith("True")


def test_forked_child_cannot_use_devices():
    result = run_python(
        """
        import os, torch
        x = torch.ones(4, device="axon")
        pid = os.fork()
        if pid == 0:
            ok = torch.axon._is_in_bad_fork()
            try:
                x + 1
            except RuntimeError as error:
                ok = ok and "forked" in str(error) and "spawn" in str(error)
            else:
                ok = False
            del x  # dropping inherited tensors is allowed
            os._exit(0 if ok else 3)
        _, status = os.waitpid(pid, 0)
        print(os.waitstatus_to_exitcode(status), torch.axon._is_in_bad_fork(), (x + 1).sum().item())
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["0", "False", "8.0"]
