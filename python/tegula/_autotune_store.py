"""The autotuner's on-disk memory: which config won, per kernel, key and device.

One small JSON file per tuning result, in ``<kernel cache>/autotune/``::

    <sha256 of the identity>.json   {"format", "kernel", "identity", "config", "timings"}

The identity hashed into the name is everything that could change the
answer: the Tegula version, the kernel's sources and globals (and those of
every ``@jit`` function it calls), the candidate configs, the tuning key's
values and the argument dtypes, and the device (CPU model or GPU name and
architecture). A new process with the same identity finds the file and
launches the stored config without timing anything.

The rules are the kernel cache's (src/runtime/disk_cache.cpp): the folder is
created 0700 and refused when another user owns it or others may write to
it; files are written under a temporary name and renamed into place, so a
reader never sees half a file; anything unreadable or inconsistent is a miss.
The file holds only a config's description, never code, and a stored config
is used only if it equals one of the kernel's current candidates.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import platform
import stat
import sys
import tempfile

from . import _C

FORMAT = 1
_MAX_FILE_BYTES = 1 << 20


def _digest(value) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=repr).encode()).hexdigest()


def kernel_identity(jit_fn) -> str:
    """A hash of the sources and globals the compiler would see for ``jit_fn``
    (and every @jit function it calls), as the kernel cache keys them."""
    from ._globals import collect_sources

    parts = []
    for source in collect_sources(jit_fn):
        globals_ = {name: [str(value.kind), value.int_value, repr(value.float_value), value.text,
                           value.function]
                    for name, value in sorted(source.globals.items())}
        parts.append([source.name, source.filename, source.first_line, source.source, globals_])
    return _digest(parts)


@functools.lru_cache(maxsize=None)
def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as info:
            for line in info:
                if line.lower().startswith(("model name", "hardware", "cpu model")):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


@functools.lru_cache(maxsize=None)
def _gpu_name(device: int) -> str:
    torch = sys.modules.get("torch")
    if torch is not None:
        try:
            return torch.cuda.get_device_name(device)
        except Exception:  # noqa: BLE001 - a name is a nicety; the arch still identifies the GPU
            pass
    cupy = sys.modules.get("cupy")
    if cupy is not None:
        try:
            name = cupy.cuda.runtime.getDeviceProperties(device)["name"]
            return name.decode() if isinstance(name, bytes) else str(name)
        except Exception:  # noqa: BLE001
            pass
    return "unknown GPU"


def device_identity(device: int | None) -> str:
    """'cpu <machine> <model> x<cores>' or 'cuda <GPU name> sm_<arch>': what a timing depends on."""
    if device is None:
        return f"cpu {platform.machine()} {_cpu_model()} x{os.cpu_count() or 1}"
    return f"cuda {_gpu_name(device)} sm_{_C.cuda_device_arch(device)}"


def entry_name(identity: dict) -> str:
    return _digest(identity)


class Store:
    """Reads and writes tuning results in one private folder."""

    def __init__(self, folder: str):
        self.folder = folder

    @classmethod
    def open(cls) -> "tuple[Store | None, str]":
        """(the store under the kernel cache folder, "") or (None, why it cannot
        be used safely)."""
        try:
            root = _C.cache_directory(_C.CompileOptions())
            folder = os.path.join(root, "autotune")
            os.makedirs(folder, mode=0o700, exist_ok=True)
            info = os.stat(folder)
        except (OSError, ValueError) as e:
            return None, str(e)
        if hasattr(os, "getuid") and info.st_uid != os.getuid():
            return None, f"{folder} belongs to another user"
        if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            return None, f"{folder} is writable by group or others (chmod 700 it)"
        return cls(folder), ""

    def _path(self, name: str) -> str:
        return os.path.join(self.folder, name + ".json")

    def load(self, name: str, identity: dict) -> dict | None:
        """The stored record for ``identity``, or None for a miss."""
        try:
            with open(self._path(name), "rb") as f:
                data = f.read(_MAX_FILE_BYTES + 1)
        except OSError:
            return None
        if len(data) > _MAX_FILE_BYTES:
            return None
        try:
            record = json.loads(data)
        except (ValueError, RecursionError):  # nesting deeper than the parser recurses: no record either
            return None
        if not isinstance(record, dict) or record.get("format") != FORMAT:
            return None
        # The name is a hash of the identity; comparing the identity itself
        # makes a collision or a hand-edited file a miss, not a wrong config.
        if record.get("identity") != json.loads(json.dumps(identity, default=repr)):
            return None
        if not isinstance(record.get("config"), dict):
            return None
        return record

    def save(self, name: str, identity: dict, config: dict, timings: list, kernel: str) -> str | None:
        """Writes the record atomically; returns None, or why it could not be written."""
        record = {"format": FORMAT, "kernel": kernel, "identity": identity, "config": config,
                  "timings": timings}
        text = json.dumps(record, indent=1, sort_keys=True, default=repr)
        try:
            fd, temporary = tempfile.mkstemp(dir=self.folder, prefix=".tmp-", suffix=".json")
        except OSError as e:
            return str(e)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
            os.replace(temporary, self._path(name))
        except OSError as e:
            try:
                os.unlink(temporary)
            except OSError:
                pass
            return str(e)
        return None
