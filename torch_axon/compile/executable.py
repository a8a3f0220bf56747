"""StableHLO text → XLA:CPU executable, through jaxlib's in-process PJRT client, with two caches.

- In memory: one executable per distinct module text (and options) in this process.
- On disk: serialized executables under `cache_directory()`, keyed by a hash of the
  module text, the compile options and the compiler version, so a second process
  with a warm cache compiles nothing. Writes go to a temporary file renamed into
  place (readers never see a partial file) under an exclusive lock per key (two
  processes compiling the same graph compile it once).

PJRT is also how vendors ship compilers (TPU, Neuron, GPU plugins): a real chip
swaps the client here, nothing above it changes.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import tempfile
import threading
import time
from dataclasses import dataclass

from . import report


@dataclass
class Compiled:
    executable: object
    key: str
    seconds: float      # compile (or load) time
    source: str         # "compiled" | "disk" | "memory"


_memory: dict[str, object] = {}
_lock = threading.Lock()
_client = None


def client():
    """The XLA:CPU PJRT client (created on first use: importing jax costs ~0.7 s)."""
    global _client
    if _client is None:
        # No jax.config changes (they would leak into users' own jax code): transfer.py
        # uses jaxlib's DLPack entry points, which keep int64/float64 as they are.
        from jax.extend import backend

        _client = backend.get_backend("cpu")
    return _client


def compiler_version() -> str:
    import jaxlib

    return f"jaxlib-{jaxlib.__version__}/{client().platform_version}"


def cache_directory() -> str | None:
    """AXON_COMPILE_CACHE_DIR, else ~/.cache/torch_axon/xla; AXON_COMPILE_CACHE_DIR=off disables the disk cache."""
    configured = os.environ.get("AXON_COMPILE_CACHE_DIR")
    if configured and configured.lower() in ("0", "off", "none"):
        return None
    return configured or os.path.join(os.path.expanduser("~"), ".cache", "torch_axon", "xla")


def cache_key(text: str, options: str = "") -> str:
    digest = hashlib.sha256()
    for part in (text, options, compiler_version()):
        digest.update(part.encode())
        digest.update(b"\0")
    return digest.hexdigest()


def _compile_options():
    from jax._src.lib import xla_client

    return xla_client.CompileOptions()


def device():
    """The XLA device executables run on (the emulated axon device computes on the host CPU)."""
    return client().devices()[0]


def _devices():
    from jax._src.lib import xla_client

    return xla_client.DeviceList(tuple(client().devices()[:1]))


def compile_module(text: str, options: str = "") -> Compiled:
    """The executable for `text`: from memory, from disk, or compiled (and stored in both)."""
    key = cache_key(text, options)
    with _lock:
        if key in _memory:
            report.record_cache("memory")
            return Compiled(_memory[key], key, 0.0, "memory")
    start = time.perf_counter()
    directory = cache_directory()
    if directory is None:
        executable, source = _compile(text), "compiled"
    else:
        executable, source = _compile_through_disk(text, key, directory)
    with _lock:
        _memory[key] = executable
    seconds = time.perf_counter() - start
    report.record_cache(source, seconds)
    return Compiled(executable, key, seconds, source)


def _compile(text: str):
    try:
        return client().compile_and_load(text, _devices(), _compile_options())
    except Exception as error:  # XLA reports parse/verify errors as a generic runtime error
        raise RuntimeError(f"[axon compile] XLA rejected the lowered StableHLO module: {error}") from error


def _compile_through_disk(text: str, key: str, directory: str):
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, f"{key}.xla")
    loaded = _load(path)
    if loaded is not None:
        return loaded, "disk"
    with open(os.path.join(directory, f"{key}.lock"), "w") as lock_file:
        fcntl.flock(lock_file, fcntl.LOCK_EX)  # another process may be compiling this very module
        try:
            loaded = _load(path)
            if loaded is not None:
                return loaded, "disk"
            executable = _compile(text)
            serialized = client().serialize_executable(executable)
            handle, temporary = tempfile.mkstemp(dir=directory, prefix=f".{key}.", suffix=".tmp")
            with os.fdopen(handle, "wb") as stream:
                stream.write(serialized)
            os.replace(temporary, path)
            return executable, "compiled"
        finally:
            fcntl.flock(lock_file, fcntl.LOCK_UN)


def _load(path: str):
    try:
        with open(path, "rb") as stream:
            serialized = stream.read()
    except FileNotFoundError:
        return None
    try:
        return client().deserialize_executable(serialized, _devices(), _compile_options())
    except Exception:  # noqa: BLE001  (any load failure means: recompile)
        # A file from another jaxlib build or a damaged one: recompile and overwrite it.
        return None


def clear_memory_cache() -> None:
    with _lock:
        _memory.clear()
