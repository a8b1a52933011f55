"""What the CUDA backend emits around Hopper's wgmma loops, without a GPU.

Each check pins one piece of the instruction budget that made the K loop of
the 128x128x64 bf16 matmul as short as Triton's (see
benchmarks/results/2026-11-30-h200-hopper-loops.md):
  * no proxy fence after the cp.async wait (it compiles to MEMBAR.ALL.CTA);
  * the warp index comes from a shuffle, so ptxas keeps what is computed from
    it in uniform registers;
  * a thread's cp.async chunks go to one swizzled address plus constant steps;
  * wgmma descriptors take the warpgroup's rows and columns once, outside
    the unrolled steps;
  * the accumulator's epilogue conversion pads its scratch rows (bank
    conflicts) without upsetting ptxas's wgmma pipelining.
And f32 exp2 is ex2.approx.ftz, Triton's lowering: checked in the emulator,
whose tg_exp2 flushes like the hardware.
Execution of the same code is checked in test_wgmma_overlap.py and
test_tensor_cores.py (emulator) and on the GPU by the whole suite.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import tegula
import tegula.language as tl
from cuda_emulator import emulate, require_emulator
import matmul
from test_wgmma_overlap import MATMUL_SIG, SERIALIZED, cli_compile, k_loop


@pytest.fixture(scope="module")
def matmul_sm90(tmp_path_factory):
    text = cli_compile(matmul.matmul_kernel, MATMUL_SIG.format(bm=128, bn=128, bk=64), 90, 8, 3, "cuda,ptx,ptxas",
                       tmp_path_factory.mktemp("hopper-loop"))
    cuda = text[text.index("// ===== cuda ====="):text.index("// ===== ptx =====")]
    return text, cuda


def test_single_dot_loop_refills_under_a_branch(matmul_sm90):
    # A branch-free refill keeps every chunk's address live across
    # iterations: the gelu epilogue's registers went from 128 to 160 (one
    # block per SM). The kernel's single-dot loop keeps the branch.
    _, cuda = matmul_sm90
    body, _ = k_loop(cuda)
    assert re.search(r"if \(k\d+ \+ \d+ < trips\d+\)", body), body
    assert "const bool live" not in body


def test_no_proxy_fence_after_the_cp_async_wait(matmul_sm90):
    _, cuda = matmul_sm90
    body, _ = k_loop(cuda)
    assert "tg_cp_async_wait<" in body
    assert "tg_fence_proxy_async" not in body


def test_warp_index_is_warp_uniform(matmul_sm90):
    text, cuda = matmul_sm90
    assert "const int warp = tg_warp_index();" in cuda
    ptx = text[text.index("// ===== ptx ====="):text.index("// ===== ptxas =====")]
    assert re.search(r"shfl\.sync\.idx\.b32", ptx), "the warp index is not read through a shuffle"


def test_cp_async_chunks_lie_at_constant_steps(matmul_sm90):
    _, cuda = matmul_sm90
    body, _ = k_loop(cuda)
    # A: 128x64 bf16 (128-byte rows), a thread's chunks 32 rows apart; B: 64x128
    # (256-byte rows in two 128-byte blocks), 16 rows apart.
    assert "[] = {0u, 4096u, 8192u, 12288u};" in body
    assert "[] = {0u, 2048u, 4096u, 6144u};" in body
    assert not re.search(r"tg_cp_async<16>\(sm \+", body), "a chunk still computes its own swizzled address"


def test_wgmma_descriptors_take_the_warpgroup_offset_once(matmul_sm90):
    _, cuda = matmul_sm90
    body, _ = k_loop(cuda)
    assert "const unsigned long long da_w = da + " in body and "const unsigned long long db_w = db + " in body
    calls = re.findall(r"tg_wgmma_m64n128k16_bf16_kn\(([^;]*)\);", body)
    assert calls
    for call in calls:
        assert "da_w + " in call and "db_w + " in call
        assert "wm" not in call and "wn" not in call, call


def test_epilogue_scratch_is_padded_and_wgmma_not_serialized(matmul_sm90):
    text, cuda = matmul_sm90
    _, after = k_loop(cuda)
    # The accumulator's MMA layout is written down 8 rows of 128 bf16 per
    # store: 16 bytes of padding per row spread those rows over the banks.
    assert re.search(r">> 7\) << 3\)\)", after), "the epilogue scratch is not padded"
    assert not SERIALIZED.search(text), SERIALIZED.search(text).group(0)


@tegula.jit
def exp2_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.exp2(tl.load(x_ptr + offs, mask=mask, other=0.0)), mask=mask)


def test_exp2_is_ex2_approx_ftz(tmp_path):
    require_emulator()
    x = np.array([-200.0, -150.0, -127.5, -126.0, -30.25, -1.0, 0.0, 1e-40, 0.5, 3.75, 100.0, 127.9, 200.0,
                  -np.inf, np.inf, np.nan, -0.0], np.float32)
    y = np.full_like(x, 7.0)
    compiled = emulate(exp2_kernel, (1,), x, y, x.size, BLOCK=32, num_warps=1)
    assert "tg_exp2(" in compiled.source
    with np.errstate(over="ignore"):
        want = np.exp2(x.astype(np.float64)).astype(np.float32)
    want[want < np.finfo(np.float32).tiny] = 0.0  # subnormal results flush to zero
    normal = np.isfinite(want) & (want > 0)
    np.testing.assert_allclose(y[normal], want[normal], rtol=4 * 2.0 ** -23)
    assert np.all(y[x < -126.0] == 0.0)
    assert y[x == np.inf][0] == np.inf and y[x == -np.inf][0] == 0.0 and np.isnan(y[np.isnan(x)][0])
    assert y[7] == 1.0  # a subnormal input is read as zero
