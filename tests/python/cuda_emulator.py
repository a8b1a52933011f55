"""Runs kernels through the CUDA backend's generated code on the host.

`emulate(kernel, grid, *args, num_warps=..., arch=..., **constexprs)` compiles
`kernel` (a @tegula.jit function) for the CUDA backend without a GPU (NVRTC
must load: the generated code is also compiled for the device), then builds
its CUDA source against cuda_emulator.h with the system C++ compiler and runs
the grid on NumPy arrays, one host thread per CUDA thread. The tensor-core
paths (ldmatrix, mma, cp.async, wgmma) are emulated from the PTX ISA's
fragment tables, so the layouts, swizzles and pipelines the code generator
produces can be checked against NumPy here, before a GPU runs them.

Slow (threads and barriers): for small grids only.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import pathlib
import re
import shutil
import subprocess
import tempfile

import numpy as np
import pytest

from tegula import _C

_HERE = pathlib.Path(__file__).resolve().parent
_HEADER = _HERE / "cuda_emulator.h"
_KERNEL_MARK = "// ---- kernel ----"
_SHARED_DECL = re.compile(r"extern __shared__ __align__\(\d+\) unsigned char tg_smem\[\];")
_LIBS = {}

_C_TYPES = {
    "int": ctypes.c_int32, "unsigned": ctypes.c_uint32, "long long": ctypes.c_int64,
    "unsigned long long": ctypes.c_uint64, "float": ctypes.c_float, "double": ctypes.c_double,
    "bool": ctypes.c_bool, "short": ctypes.c_int16, "unsigned short": ctypes.c_uint16,
    "signed char": ctypes.c_int8, "unsigned char": ctypes.c_uint8,
}


def require_emulator():
    if shutil.which(os.environ.get("CXX", "c++")) is None:
        pytest.skip("no C++ compiler for the CUDA emulator")
    try:
        _C.cuda_target(arch=90)
    except RuntimeError as e:
        pytest.skip(f"NVRTC cannot be loaded here: {e}")


def compile_cuda(kernel, args, constexprs, num_warps=4, arch=90, num_stages=None):
    """The CompiledKernel of `kernel` for the CUDA backend (source kept), and
    the argument values in the order of its runtime parameters."""
    request, _ = kernel._request_for(*args, **constexprs)
    compile_options = _C.CompileOptions(backend="cuda", cuda_arch=arch, num_warps=num_warps, keep_stages=True)
    if num_stages is not None:
        compile_options.num_stages = num_stages
    compiled = _C.compile(request, compile_options)
    sig = kernel.signature
    named = {name: default for name, default in zip(sig.names, sig.defaults)}
    named.update(zip(sig.names, args))
    named.update(constexprs)
    ordered = [named[p[0]] for p in compiled.params]
    return compiled, ordered


def _translation_unit(source: str) -> tuple[str, list[str]]:
    prelude, _, kernel = source.partition(_KERNEL_MARK)
    if not kernel:
        raise AssertionError("generated CUDA source has no kernel marker")
    # Every inline PTX statement of the prelude compiles to nothing (the
    # header's asm(...) macro), the helpers that have them are emulated.
    prelude = prelude.replace("asm volatile(", "asm(")
    kernel = _SHARED_DECL.sub("unsigned char* const tg_smem = tg_emu::shared();", kernel)
    header = re.search(r"tegula_kernel\((.*?)\)\s*\{", kernel, re.S)
    params = [p.strip() for p in header.group(1).split(",") if p.strip()]
    types = [p.rsplit(" ", 1)[0] for p in params]
    calls = ", ".join(f"*reinterpret_cast<{t}*>(args[{i}])" for i, t in enumerate(types))
    # The host atomics (cuda_emulator_atomic.h) go between part 1 and the prelude.
    unit = (f'#define TG_EMU_PRELUDE\n#include "{_HEADER}"\n{(_HERE / "cuda_emulator_atomic.h").read_text()}\n'
            f'{prelude}\n#undef TG_EMU_PRELUDE\n'
            f'#include "{_HEADER}"\n{_KERNEL_MARK}{kernel}\n'
            'extern "C" void tg_emu_launch(void** args, unsigned gx, unsigned gy, unsigned gz, '
            'unsigned threads, unsigned shared_bytes) {\n'
            '  tg_emu::launch({gx, gy, gz}, threads, shared_bytes, [&] { tegula_kernel(' + calls + '); });\n}\n')
    return unit, types


def _build(unit: str):
    digest = hashlib.sha256((unit + _HEADER.read_text()).encode()).hexdigest()[:24]
    if digest in _LIBS:
        return _LIBS[digest]
    cache = pathlib.Path(os.environ.get("TEGULA_CACHE_DIR", tempfile.gettempdir())) / "cuda-emulator"
    cache.mkdir(parents=True, exist_ok=True)
    lib = cache / f"{digest}.so"
    if not lib.exists():
        src = cache / f"{digest}.cpp"
        src.write_text(unit)
        tmp = cache / f"{digest}.{os.getpid()}.so"
        cmd = [os.environ.get("CXX", "c++"), "-std=c++20", "-O1", "-g0", "-shared", "-fPIC", "-pthread", "-w",
               "-o", str(tmp), str(src)]
        result = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        if result.returncode != 0:
            raise AssertionError(f"emulated kernel does not compile ({src}):\n{result.stderr[-6000:]}")
        os.replace(tmp, lib)
    handle = ctypes.CDLL(str(lib))
    _LIBS[digest] = handle
    return handle


def emulate(kernel, grid, *args, num_warps=4, arch=90, num_stages=None, edit_source=None, **constexprs):
    """Runs `kernel[grid](*args, **constexprs)` through the CUDA backend's code
    on the host. Array arguments are NumPy arrays, written in place. Returns
    the CompiledKernel (its source and layouts, for inspection).
    `edit_source` (str -> str), when given, rewrites the generated CUDA before
    it runs: tests break a wait on purpose to show the emulator notices."""
    compiled, values = compile_cuda(kernel, args, constexprs, num_warps, arch, num_stages)
    unit, types = _translation_unit(edit_source(compiled.source) if edit_source else compiled.source)
    lib = _build(unit)
    keep, slots = [], (ctypes.c_void_p * max(1, len(types)))()
    for i, (ctype, value) in enumerate(zip(types, values)):
        if ctype.endswith("*"):
            assert isinstance(value, np.ndarray), f"argument {i} must be a NumPy array"
            cell = ctypes.c_void_p(value.ctypes.data)
        else:
            cell = _C_TYPES[ctype](value)
        keep.append(cell)
        slots[i] = ctypes.cast(ctypes.pointer(cell), ctypes.c_void_p)
    grid = tuple(grid) + (1,) * (3 - len(grid))
    lib.tg_emu_launch(slots, ctypes.c_uint(grid[0]), ctypes.c_uint(grid[1]), ctypes.c_uint(grid[2]),
                      ctypes.c_uint(compiled.num_threads), ctypes.c_uint(compiled.shared_bytes))
    return compiled
