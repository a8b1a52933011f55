"""Runs the hand-written Hopper prototypes (tools/hopper/ws_matmul.cu, ws_attention.cu) in the host CUDA emulator.

The unit is the prototype's source with its -D flags as #defines, with hopper_prelude.cuh (and Tegula's preludes it
includes, src/backends/cuda/prelude_mma.h and prelude_async.h) between the emulator header's two parts, as
cuda_emulator.py does for generated code. Launches take the variants, tensor maps and grids of
tools/hopper/bench_proto.py and bench_attention.py, with the maps encoded by the emulator's stand-in for
cuTensorMapEncodeTiled; the register count at launch is the variant's, so setmaxnreg's pool is the device's.
"""

from __future__ import annotations

import ctypes
import pathlib
import re
import sys

import numpy as np

import cuda_emulator

HOPPER = pathlib.Path(__file__).resolve().parents[2] / "tools" / "hopper"
sys.path.insert(0, str(HOPPER))
import bench_attention  # noqa: E402
import bench_proto  # noqa: E402
import harness  # noqa: E402

_INCLUDE = '#include "hopper_prelude.cuh"'
_SWIZZLE_128B = 3
_DATA_TYPES = {"bf16": 9, "fp16": 6, "e4m3": 0}  # CUtensorMapDataType (e4m3 as bytes, as harness.Driver.encode)


def unit(source, defines: list, entries: list) -> str:
    """The emulator's translation unit of a prototype (a path, or CUDA text that includes hopper_prelude.cuh)
    compiled with `defines` (["-DTG_X=1", ...])."""
    text = source.read_text() if isinstance(source, pathlib.Path) else source
    head, found, rest = text.partition(_INCLUDE)
    assert found, "the source does not include hopper_prelude.cuh"
    prelude = harness.PRELUDE.read_text().replace(f'#include "out/{harness.TEGULA_PRELUDE_FILE}"',
                                                 harness.tegula_prelude_text())
    flags = ""
    for d in defines:
        name, _, value = d[2:].partition("=")
        flags += f"#define {name} {value or 1}\n"
    header = cuda_emulator._HEADER
    body = (f'{flags}#define TG_EMU_PRELUDE\n#include "{header}"\n{head}{prelude}\n#undef TG_EMU_PRELUDE\n'
            f'#include "{header}"\n#define asm(...) ((void)0)\n{rest}\n')
    body = body.replace("asm volatile(", "asm(")
    body = cuda_emulator._SHARED_DECL.sub("unsigned char* const tg_smem = tg_emu::shared();", body)
    return body + "".join(cuda_emulator.launcher(e) for e in entries)


def _aligned_map():
    """128 bytes on a 64-byte boundary, as the kernel's TgTensorMap parameter is declared."""
    memory = np.zeros(128 + 64, np.uint8)
    return (ctypes.c_ubyte * 128).from_buffer(memory, (-memory.ctypes.data) % 64)


def encode(lib, fields: dict, array: np.ndarray, dtype: str, swizzle: int = _SWIZZLE_128B, oob_nan: bool = False):
    """A tensor map of `array` with harness.tensor_map_fields' fields, 128-byte swizzle unless `swizzle` says
    (CUtensorMapSwizzle: 0 none, 1 32B, 2 64B, 3 128B) (what harness.Driver.encode asks the driver for). Raises
    ValueError where the driver would refuse the map."""
    rank = len(fields["globalDim"])
    out = _aligned_map()
    u64, u32 = ctypes.c_ulonglong, ctypes.c_uint
    lib.tg_emu_encode_tensor_map_tiled.restype = ctypes.c_char_p
    error = lib.tg_emu_encode_tensor_map_tiled(
        out, _DATA_TYPES[dtype], u32(rank), ctypes.c_void_p(array.ctypes.data),
        (u64 * rank)(*fields["globalDim"]), (u64 * max(1, rank - 1))(*fields["globalStrides"]),
        (u32 * rank)(*fields["boxDim"]), (u32 * rank)(*fields["elementStrides"]), 0, swizzle, 0, int(oob_nan))
    if error:
        raise ValueError(error.decode())
    return out


def _pointer(array: np.ndarray) -> ctypes.c_void_p:
    return ctypes.c_void_p(array.ctypes.data)


def matmul(v, a: np.ndarray, b: np.ndarray, dtype: str, grid: int, bugs: tuple = (), registers: int = None,
           seed: int = 0, group_m: int = 8, scales=(1.0, 1.0)) -> np.ndarray:
    """C = A @ B by ws_matmul.cu's variant `v` (a bench_proto.Variant) on `grid` CTAs: a [M, K] and b [K, N] (or
    [N, K] for K-major variants) as 16-bit (or e4m3) bit patterns, uint16 (uint8); C as uint16 bits. `bugs`: the
    TG_BUG_* switches to compile in."""
    M, K = a.shape
    N = b.shape[0] if v.b_kmajor else b.shape[1]
    entry = bench_proto.entry(dtype)
    lib = cuda_emulator.build(unit(v.source, v.defines() + [f"-D{bug}=1" for bug in bugs], [entry]))
    c = np.full((M, N), 0x7fc0, np.uint16)  # NaN: an element never written shows
    fields = bench_proto.operand_maps(v, M, N, K)
    out_type = "fp16" if dtype == "fp16" else "bf16"
    maps = [encode(lib, fields["a"], a, dtype), encode(lib, fields["b"], b, dtype), encode(lib, fields["c"], c, out_type)]
    values = maps + [_pointer(c), ctypes.c_int32(M), ctypes.c_int32(N), ctypes.c_int32(K), ctypes.c_int32(group_m)]
    if v.fp8:
        scale = [np.array([s], np.float32) for s in scales]
        values += [_pointer(scale[0]), _pointer(scale[1])]
    cuda_emulator.run(lib, entry, values, (grid,), v.threads, v.smem_bytes, cluster=v.cluster,
                      registers=v.launch_registers if registers is None else registers, seed=seed)
    return c


def attention(v, q: np.ndarray, k: np.ndarray, v_: np.ndarray, dtype: str, causal: bool, grid: int,
              bugs: tuple = (), seed: int = 0) -> tuple:
    """(O as uint16 bits, LSE) by ws_attention.cu's variant `v` (a bench_attention.Variant): q, k, v [B, H, S, D] as
    16-bit bit patterns (uint16)."""
    B, H, S, D = q.shape
    entry = bench_attention.entry(dtype, causal)
    lib = cuda_emulator.build(unit(v.source, v.defines() + [f"-D{bug}=1" for bug in bugs], [entry]))
    o = np.full(q.shape, 0x7fc0, np.uint16)
    lse = np.full((B, H, S), np.nan, np.float32)
    fields = bench_attention.operand_maps(v, B, H, S)
    maps = [encode(lib, fields[name], x, dtype) for name, x in (("q", q), ("k", k), ("v", v_))]
    values = maps + [_pointer(o), _pointer(lse), ctypes.c_int32(S), ctypes.c_int32(B * H)]
    cuda_emulator.run(lib, entry, values, (grid,), v.threads, v.smem_bytes, registers=v.launch_registers, seed=seed)
    return o, lse


def bug_switches(source: pathlib.Path) -> list:
    """The TG_BUG_* switches a prototype documents."""
    return sorted(set(re.findall(r"\bTG_BUG_[A-Z_]+\b", source.read_text())))
