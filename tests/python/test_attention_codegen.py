"""What the CUDA backend makes of flash attention's key loop, without a GPU.

The loop of examples/flash_attention.py should cost one barrier per key block
on sm_80 (mma.sync; the pipeline's: K and V tiles landed, the previous stage
free) and two on sm_90a, where the P @ V wgmma group stays in flight into the
next iteration (the first dot's wait covers it) and the refill of the
previous stage waits behind a second barrier:
  * the running row max and row sum stay in the slice of the accumulator
    layout (reductions within threads and quad shuffles, no shared memory);
  * P = exp2(...) feeds the second dot from registers (mma.sync's C
    fragment is its A fragment; wgmma takes A from registers);
  * Q, the same every iteration, is staged in shared memory once, before
    the loop.
Execution of the same code is checked in test_attention.py (emulator).
"""

from __future__ import annotations

import re

import pytest

import tegula
import tegula.language as tl
from cuda_compile_util import compile_for_cuda
import flash_attention as attn

_STRIDES = "i32:16, i32:16, i32:16, i32:1"


def attention_signature(D: int, causal: bool) -> str:
    return (f"*bf16:16, *bf16:16, *bf16:16, *bf16:16, *fp32:16, {', '.join([_STRIDES] * 4)}, i32:16, i32:16, "
            f"fp32, {D}, 128, 64, {causal}")


def loop_bodies(source: str) -> list:
    """The text of every `for` over a runtime trip count (the key loops)."""
    bodies = []
    for m in re.finditer(r"for \(unsigned long long k\d+ = 0;[^\n]*\{", source):
        depth, i = 1, m.end()
        while depth:
            depth += {"{": 1, "}": -1}.get(source[i], 0)
            i += 1
        bodies.append(source[m.end():i])
    return bodies


@pytest.mark.parametrize("arch", [80, 90])
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_one_barrier_per_key_block(arch, causal, tmp_path):
    source = compile_for_cuda(attn.attention_fwd_kernel, attention_signature(128, causal), arch, tmp_path,
                              emit="cuda", num_warps=8)
    bodies = loop_bodies(source)
    assert len(bodies) == 2
    for body in bodies:
        # The pipeline's barriers, nothing else: no conversion of the row
        # statistics, no staging of P or Q.
        assert body.count("__syncthreads") == (2 if arch == 90 else 1), body
        if arch == 90:
            assert "stays in flight into the next iteration" in body
            # P @ V is not waited for in its own iteration: one wait, the first dot's.
            assert body.count("tg_wgmma_wait<0>") == 1, body
            assert "the previous iteration's in-flight group" in body
        assert "a in registers" in body, "P @ V does not take P from registers"
        assert "tg_cp_async_wait" in body
        # Two dots: the refill issues its copies every iteration, with the
        # source size zero past the last key block, not under a branch.
        assert re.search(r"const bool live\d+ = k\d+ \+ \d+ < trips\d+;", body), body
        assert not re.search(r"if \(k\d+ \+ \d+ < trips\d+\)", body), body
    assert source.count("is the same in every iteration: staged once") == 2  # Q, before each loop


@pytest.mark.parametrize("arch", [80, 90])
def test_row_statistics_keep_the_accumulator_layout(arch, tmp_path):
    text = compile_for_cuda(attn.attention_fwd_kernel, attention_signature(128, False), arch, tmp_path,
                            emit="layouts", num_warps=8)
    rows = [line for line in text.splitlines() if "tile<128xf32>" in line]
    assert rows, text
    # Every row vector (m_i, l_i, alpha, ...) lives in the rows' slice of an
    # accumulator layout; only the log-sum-exp converts, once, for its store.
    for line in rows:
        primary = line.split("; also")[0]
        assert "slice{dim=1, parent=" + ("wgmma" if arch >= 90 else "mma") in primary, line
    assert sum("; also blocked" in line for line in rows) == 1, rows
    # mma.sync: warps along the rows only, so row reductions stay in a warp
    # and P's registers are the next dot's A fragments.
    if arch < 90:
        assert "mma{wpc=[8, 1], warp_n=8}" in text


@pytest.mark.parametrize("arch", [80, 90])
def test_no_spills_and_tensor_core_products(arch, tmp_path):
    text = compile_for_cuda(attn.attention_fwd_kernel, attention_signature(128, True), arch, tmp_path,
                            emit="ptx,ptxas", num_warps=8)
    assert " 0 bytes spill stores" in text, text[text.find("ptxas info"):]
    if arch >= 90:
        # p @ v with A from registers: a register list where the descriptor was.
        assert re.search(r"wgmma\.mma_async\.sync\.aligned\.m64n128k16\.f32\.bf16\.bf16 \{[^}]*\}, \{%r", text)


@tegula.jit
def row_max_loop(A, B, Out, n_blocks, BLOCK: tl.constexpr):
    # Running row max of A @ B_j over column blocks j: a reduction of a
    # tensor-core tile carried around a loop, as in online softmax.
    offs = tl.arange(0, BLOCK)
    a = tl.load(A + offs[:, None] * BLOCK + offs[None, :])
    b_ptrs = B + offs[:, None] * BLOCK + offs[None, :]
    m = tl.full([BLOCK], float("-inf"), tl.float32)
    for j in range(n_blocks):
        b = tl.load(b_ptrs)
        s = tl.dot(a, b)
        m = tl.maximum(m, tl.max(s, 1))
        b_ptrs += BLOCK * BLOCK
    tl.store(Out + offs, m)


@pytest.mark.parametrize("arch,warps", [(80, 4), (90, 4)])
def test_reduce_of_a_tensor_core_tile_needs_no_shared_memory(arch, warps, tmp_path):
    text = compile_for_cuda(row_max_loop, "*fp16:16, *fp16:16, *fp32:16, i32, 64", arch, tmp_path,
                            emit="cuda,layouts", num_warps=warps)
    (body,) = loop_bodies(text)
    assert body.count("__syncthreads") == 1, body  # the pipeline's only
    assert "tg_shfl_xor" in body  # the row's lanes combine by shuffles
    carried = [line for line in text.splitlines() if "tile<64xf32>" in line]
    assert carried and all("slice{dim=1, parent=" in line for line in carried), carried
