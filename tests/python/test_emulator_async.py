"""The host emulator's async proxy on small hand-written kernels: TMA boxes (swizzles, out-of-bounds fill, clipped
stores) against a NumPy model of the layout, and the misuses it must report (deadlocks with what each thread
waits for, barrier counts, setmaxnreg counts, an mbarrier used before init, maps the driver would refuse).

The kernels use Tegula's device helpers (src/backends/cuda/prelude_async.h) through the prototypes' prelude, as
tests/python/hopper_prototypes.py builds them.
"""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

import cuda_emulator
import hopper_prototypes as hp
from cuda_emulator import EmulatorError, require_emulator

KERNELS = r"""
#include "hopper_prelude.cuh"

// The box of `map` at (c0, c1) through shared memory to out (the shared bytes as they landed); `announce`:
// the bytes thread 0's arrive.expect_tx announces.
extern "C" __global__ void load_box(const __grid_constant__ TgTensorMap map, unsigned char* out, int c0, int c1,
                                    int bytes, int announce) {
  extern __shared__ __align__(1024) unsigned char tg_smem[];
  const unsigned base = tg_shared_address(tg_smem), bar = base + 32768;
  if (threadIdx.x == 0) {
    tg_mbar_init(bar, 1);
    tg_fence_mbar_init();
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    tg_mbar_arrive_expect_tx(bar, announce);
    tg_tma_load_2d(base, &map, bar, c0, c1);
  }
  tg_mbar_wait(bar, 0);
  for (int i = threadIdx.x; i < bytes; i += blockDim.x) out[i] = tg_smem[i];
}

// in (bytes laid out as the box lands in shared memory) to the box of `map` at (c0, c1).
extern "C" __global__ void store_box(const __grid_constant__ TgTensorMap map, const unsigned char* in, int c0,
                                     int c1, int bytes) {
  extern __shared__ __align__(1024) unsigned char tg_smem[];
  for (int i = threadIdx.x; i < bytes; i += blockDim.x) tg_smem[i] = in[i];
  tg_fence_proxy_async();
  __syncthreads();
  if (threadIdx.x == 0) {
    tg_tma_store_2d(&map, tg_shared_address(tg_smem), c0, c1);
    tg_bulk_commit();
    tg_bulk_wait<0>();
  }
}

// Misuses, one per `mode`.
extern "C" __global__ void misuse(int mode) {
  extern __shared__ __align__(1024) unsigned char tg_smem[];
  const unsigned bar = tg_shared_address(tg_smem);
  const int warp = threadIdx.x / 32;
  if (mode == 0) {  // a wait nobody completes
    if (threadIdx.x == 0) {
      tg_mbar_init(bar, 2);
      tg_fence_mbar_init();
    }
    __syncthreads();
    if (threadIdx.x == 0) tg_mbar_arrive(bar);
    tg_mbar_wait(bar, 0);
  } else if (mode == 1) {  // two thread counts on one named barrier
    if (warp == 0) tg_named_barrier<64>(1);
    if (warp == 1) tg_named_barrier<96>(1);
  } else if (mode == 2) {
    tg_setmaxnreg_dec<20>();
  } else if (mode == 3) {
    tg_mbar_arrive(bar + 8);
  } else if (mode == 4) {  // a fresh barrier passes a wait for parity 1 (the phase before), not one for 0
    if (threadIdx.x == 0) tg_mbar_init(bar, 1);
    __syncthreads();
    tg_mbar_wait(bar, 1);
    __syncthreads();
    tg_mbar_wait(bar, 0);
  }
}
"""

ROWS, COLS = 40, 96  # a 16-bit tensor


@pytest.fixture(scope="module")
def lib():
    require_emulator()
    return cuda_emulator.build(hp.unit(KERNELS, [], ["load_box", "store_box", "misuse"]))


def swizzled(offset: np.ndarray, swizzle: int) -> np.ndarray:
    """The shared byte of box byte `offset` (a base on a 1024-byte line): bits [4, 4 + s) ^= bits [7, 7 + s)."""
    if swizzle == 0:
        return offset
    return offset ^ (((offset >> 7) & ((1 << swizzle) - 1)) << 4)


def box_bytes(tensor: np.ndarray, c0: int, c1: int, box_rows: int, box_cols: int, fill: int = 0) -> np.ndarray:
    """The box at (c0 along columns, c1 along rows) of `tensor`, out-of-bounds elements `fill`, dense, as bytes."""
    out = np.full((box_rows, box_cols), fill, tensor.dtype)
    for r in range(box_rows):
        for c in range(box_cols):
            if 0 <= c1 + r < tensor.shape[0] and 0 <= c0 + c < tensor.shape[1]:
                out[r, c] = tensor[c1 + r, c0 + c]
    return out.view(np.uint8).reshape(-1)


@pytest.mark.parametrize("swizzle,box_cols,coords,nan_fill", [
    (0, 24, (8, 3), False),      # no swizzle, 48-byte rows
    (3, 64, (-16, 30), False),   # 128-byte swizzle, out of bounds left and below
    (2, 32, (80, -5), True),     # 64-byte swizzle, out of bounds right and above, NaN fill
    (1, 16, (0, 0), False),      # 32-byte swizzle
])
def test_tma_load_lays_out_the_box(lib, swizzle, box_cols, coords, nan_fill):
    rng = np.random.default_rng(swizzle)
    tensor = rng.integers(0, 1 << 15, (ROWS, COLS), dtype=np.uint16)
    box_rows = 32
    fields = hp.harness.tensor_map_fields(ROWS, COLS, COLS, box_rows, box_cols)
    tmap = hp.encode(lib, fields, tensor, "fp16", swizzle=swizzle, oob_nan=nan_fill)
    nbytes = box_rows * box_cols * 2
    out = np.zeros(nbytes, np.uint8)
    values = [tmap, ctypes.c_void_p(out.ctypes.data), ctypes.c_int(coords[0]), ctypes.c_int(coords[1]),
              ctypes.c_int(nbytes), ctypes.c_int(nbytes)]
    cuda_emulator.run(lib, "load_box", values, (1,), 64, 32768 + 64)
    want = np.empty(nbytes, np.uint8)
    want[swizzled(np.arange(nbytes), swizzle)] = box_bytes(tensor, *coords, box_rows, box_cols,
                                                           fill=0x7e00 if nan_fill else 0)
    np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("swizzle", [0, 3])
def test_tma_store_writes_the_in_bounds_part(lib, swizzle):
    rng = np.random.default_rng(10 + swizzle)
    box_rows, box_cols, c0, c1 = 16, 64, 64, 30  # 32 columns and 10 rows of the box lie outside
    landed = rng.integers(0, 256, box_rows * box_cols * 2, dtype=np.uint8)
    tensor = np.full((ROWS, COLS), 7, np.uint16)
    fields = hp.harness.tensor_map_fields(ROWS, COLS, COLS, box_rows, box_cols)
    tmap = hp.encode(lib, fields, tensor, "bf16", swizzle=swizzle)
    values = [tmap, ctypes.c_void_p(landed.ctypes.data), ctypes.c_int(c0), ctypes.c_int(c1),
              ctypes.c_int(landed.size)]
    cuda_emulator.run(lib, "store_box", values, (1,), 64, 32768)
    dense = landed[swizzled(np.arange(landed.size), swizzle)].view(np.uint16).reshape(box_rows, box_cols)
    want = np.full((ROWS, COLS), 7, np.uint16)
    want[c1:, c0:] = dense[:ROWS - c1, :COLS - c0]
    np.testing.assert_array_equal(tensor, want)


def test_expect_tx_larger_than_the_box_is_a_deadlock(lib):
    tensor = np.zeros((ROWS, COLS), np.uint16)
    tmap = hp.encode(lib, hp.harness.tensor_map_fields(ROWS, COLS, COLS, 8, 64), tensor, "bf16")
    out = np.zeros(1024, np.uint8)
    values = [tmap, ctypes.c_void_p(out.ctypes.data), ctypes.c_int(0), ctypes.c_int(0), ctypes.c_int(1024),
              ctypes.c_int(1024 + 16)]
    with pytest.raises(EmulatorError, match=r"(?s)deadlock.*64 thread\(s\).*16 transaction bytes pending.*"
                                            r"expect_tx announced too many"):
        cuda_emulator.run(lib, "load_box", values, (1,), 64, 32768 + 64)


@pytest.mark.parametrize("mode,message", [
    (0, r"(?s)deadlock.*wait for mbarrier at shared 0x0 \(phase 0: 1 of 2 arrivals"),
    (1, r"named barrier 1: thread (3[2-9]|[45][0-9]|6[0-3]) arrives expecting 96 threads, the arrivals before it expected 64"),
    (2, r"setmaxnreg\.dec 20: the count must be a multiple of 8 in \[24, 256\]"),
    (3, r"mbarrier at shared 0x8 used before mbarrier\.init"),
    (4, r"(?s)deadlock.*128 thread\(s\).*to complete its phase of parity 0"),
])
def test_misuse_is_reported(lib, mode, message):
    with pytest.raises(EmulatorError, match=message):
        cuda_emulator.run(lib, "misuse", [ctypes.c_int(mode)], (1,), 128, 1024, registers=168)


def test_encoder_refuses_what_the_driver_refuses(lib):
    tensor = np.zeros((64, 1001), np.uint16)
    fields = {"globalDim": [1001, 64], "globalStrides": [2002], "boxDim": [64, 64], "elementStrides": [1, 1]}
    with pytest.raises(ValueError, match="multiple of 16"):
        hp.encode(lib, fields, tensor, "bf16")
    fields = {"globalDim": [1000, 64], "globalStrides": [2000], "boxDim": [128, 64], "elementStrides": [1, 1]}
    with pytest.raises(ValueError, match="exceeds the swizzle span"):
        hp.encode(lib, fields, tensor, "bf16")
