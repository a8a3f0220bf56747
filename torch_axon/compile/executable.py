"""StableHLO text → a driver executable for one axon device, with two caches.

The driver compiles: the module is loaded as an executable of format
"stablehlo-mlir" (runtime/include/axon/formats/stablehlo.h), which a real
chip's driver hands to its own compiler (a PJRT plugin, for example) and the
emulated driver to XLA's CPU compiler. Nothing here knows which.

- In memory: one executable per distinct module text (and options) and device in this process.
- On disk: the driver's compiled image of the executable (axon_executable_serialize: its
  own format, loaded again without compiling) under `cache_directory()`, keyed by a hash
  of the module text, the options and the driver's name, so a second process with a warm
  cache compiles nothing. An image the driver no longer loads (another build) is
  recompiled and overwritten. Writes go to a temporary file renamed into place (readers
  never see a partial file) under an exclusive lock per key (two processes compiling the
  same graph compile it once). A driver that cannot serialize simply has no disk cache.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import tempfile
import threading
import time
from dataclasses import dataclass

import torch

from .. import _C
from . import report

SOURCE_FORMAT = "stablehlo-mlir"


@dataclass
class Compiled:
    executable: object  # torch_axon._C.Executable
    key: str
    seconds: float      # compile (or load) time
    source: str         # "compiled" | "disk" | "memory"


_memory: dict[tuple[str, int], object] = {}
_lock = threading.Lock()


def compiler_identity() -> str:
    return f"axon-driver:{_C._driver_name()}"


def cache_directory() -> str | None:
    """AXON_COMPILE_CACHE_DIR, else ~/.cache/torch_axon/executables; AXON_COMPILE_CACHE_DIR=off disables it."""
    configured = os.environ.get("AXON_COMPILE_CACHE_DIR")
    if configured and configured.lower() in ("0", "off", "none"):
        return None
    return configured or os.path.join(os.path.expanduser("~"), ".cache", "torch_axon", "executables")


def cache_key(text: str, options: str = "") -> str:
    digest = hashlib.sha256()
    for part in (text, options, compiler_identity()):
        digest.update(part.encode())
        digest.update(b"\0")
    return digest.hexdigest()


def supported(device: int) -> bool:
    """Whether `device`'s driver compiles StableHLO (without it, compiled graphs run eagerly)."""
    return _C._executable_format_supported(device, SOURCE_FORMAT)


def reports_checks_in_stream_order(device: int) -> bool:
    """Whether `device`'s driver runs host functions (AXON_CAPABILITY_HOST_FUNCTIONS), which report an
    executable's run-time checks in stream order (csrc/core/stream_checks.h)."""
    return torch.axon.driver_capabilities(device)["host_functions"]


def compile_module(text: str, device: int, options: str = "") -> Compiled:
    """The executable of `text` for axon device `device`: from memory, from disk, or compiled."""
    key = cache_key(text, options)
    with _lock:
        if (key, device) in _memory:
            report.record_cache("memory")
            return Compiled(_memory[key, device], key, 0.0, "memory")
    start = time.perf_counter()
    directory = cache_directory()
    if directory is None:
        executable, source = _compile(text, device), "compiled"
    else:
        executable, source = _compile_through_disk(text, device, key, directory)
    with _lock:
        _memory[key, device] = executable
    seconds = time.perf_counter() - start
    report.record_cache(source, seconds)
    return Compiled(executable, key, seconds, source)


def _compile(text: str, device: int):
    try:
        return _C.Executable(device, SOURCE_FORMAT, text.encode())
    except (RuntimeError, ValueError) as error:  # the compiler's parse/verify message is in the driver's detail
        raise RuntimeError(f"[axon compile] the driver rejected the lowered StableHLO module: {error}") from error


def _compile_through_disk(text: str, device: int, key: str, directory: str):
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, f"{key}.image")
    loaded = _load(path, device)
    if loaded is not None:
        return loaded, "disk"
    with open(os.path.join(directory, f"{key}.lock"), "w") as lock_file:
        fcntl.flock(lock_file, fcntl.LOCK_EX)  # another process may be compiling this very module
        try:
            loaded = _load(path, device)
            if loaded is not None:
                return loaded, "disk"
            executable = _compile(text, device)
            try:
                image_format, image = executable.serialize()
            except NotImplementedError:  # the driver keeps no image of its programs: nothing to cache
                return executable, "compiled"
            handle, temporary = tempfile.mkstemp(dir=directory, prefix=f".{key}.", suffix=".tmp")
            with os.fdopen(handle, "wb") as stream:
                stream.write(image_format.encode() + b"\n" + image)
            os.replace(temporary, path)
            return executable, "compiled"
        finally:
            fcntl.flock(lock_file, fcntl.LOCK_UN)


def _load(path: str, device: int):
    try:
        with open(path, "rb") as stream:
            contents = stream.read()
    except FileNotFoundError:
        return None
    image_format, _, image = contents.partition(b"\n")
    try:
        return _C.Executable(device, image_format.decode(), image)
    except (RuntimeError, ValueError, UnicodeDecodeError):  # another build's image, or a damaged one: recompile
        return None


def clear_memory_cache() -> None:
    with _lock:
        _memory.clear()
