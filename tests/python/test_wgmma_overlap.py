"""Hopper wgmma groups stay in flight across K iterations, without a GPU.

In a pipelined K loop whose only tensor-core dot is a wgmma accumulating in
place (the matmul), iteration k issues its group, waits with wait_group 1
(group k-1 done), passes a barrier (every warpgroup's k-1 done) and only then
refills the stage k-1 read; the loop waits for the last group after it ends.
No instruction touches a wgmma's registers between the wgmmas of a group, so
ptxas serializes nothing (no C7514/C7515/C7519 remarks): matmul and attention.
The emulator (cuda_emulator.h) applies each wgmma group only when a wait
covers it and reads its operands from shared memory then, so a missing or
too-weak wait shows up as a wrong product: checked by breaking one on purpose.
"""

from __future__ import annotations

import re
import subprocess

import numpy as np
import pytest

import tegula
from cuda_compile_util import require_nvrtc
from cuda_emulator import emulate, require_emulator
from ops_util import eps, random, rng_for, to_f64
from tegula.cli import executable
import flash_attention as attn
import matmul

SERIALIZED = re.compile(r"\(C75(14|15|19)\)")
MATMUL_SIG = ("*bf16:16, *bf16:16, *bf16:16, i32:16, i32:16, i32:16, i32:16, i32:1, i32:16, i32:1, i32:16, i32:1, "
              "{bm}, {bn}, {bk}, 8")
_STRIDES = "i32:16, i32:16, i32:16, i32:1"


def attention_signature(D: int, causal: bool) -> str:
    return (f"*bf16:16, *bf16:16, *bf16:16, *bf16:16, *fp32:16, {', '.join([_STRIDES] * 4)}, i32:16, i32:16, "
            f"fp32, {D}, 128, 64, {causal}")


def cli_compile(kernel, signature: str, arch: int, warps: int, stages: int, emit: str, cache_dir) -> str:
    require_nvrtc(arch)
    cmd = [str(executable()), "compile", f"{kernel.fn.__code__.co_filename}::{kernel.fn.__name__}", "--backend",
           "cuda", "--arch", str(arch), "--num-warps", str(warps), "--num-stages", str(stages), "--signature",
           signature, "--emit", emit, "--cache-dir", str(cache_dir)]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, f"{' '.join(cmd)}\n{result.stderr}"
    return result.stdout


def k_loop(source: str) -> tuple[str, str]:
    """The body of the (only) loop over a runtime trip count, and what follows it."""
    m = re.search(r"for \(unsigned long long k\d+ = 0;[^\n]*\{", source)
    assert m, "no K loop"
    depth, i = 1, m.end()
    while depth:
        depth += {"{": 1, "}": -1}.get(source[i], 0)
        i += 1
    return source[m.end():i], source[i:]


MATMUL_CONFIGS = [(128, 128, 64, 8, 3), (128, 128, 64, 4, 3), (128, 256, 64, 8, 4), (64, 128, 32, 4, 2)]


@pytest.mark.parametrize("bm,bn,bk,warps,stages", MATMUL_CONFIGS)
def test_matmul_keeps_one_wgmma_group_in_flight(bm, bn, bk, warps, stages, tmp_path):
    text = cli_compile(matmul.matmul_kernel, MATMUL_SIG.format(bm=bm, bn=bn, bk=bk), 90, warps, stages,
                       "cuda,ptxas", tmp_path)
    body, after = k_loop(text)
    assert body.count("tg_wgmma_wait<1>();") == 1 and "tg_wgmma_wait<0>" not in body, body
    assert body.count("tg_wgmma_commit();") == 1
    # Tiles landed / every warpgroup's previous group done.
    assert body.count("__syncthreads();") == 2, body
    wait = body.index("tg_wgmma_wait<1>")
    refill = body.index("tg_cp_async<")
    assert body.index("tg_wgmma_commit") < wait < body.rindex("__syncthreads") < refill, body
    assert re.search(rf"of iteration k\d+ \+ {stages - 1} into stage", body[wait:refill]), body
    # The last group is waited for right after the loop, and the accumulator
    # pinned behind the wait, before anything else runs.
    assert after.lstrip().startswith("tg_wgmma_wait<0>();"), after[:300]
    assert after.index("tg_pin(") < after.index("tg_cp_async_wait<0>();")
    assert not SERIALIZED.search(text), SERIALIZED.search(text).group(0)
    assert " 0 bytes spill stores" in text


@pytest.mark.parametrize("D", [64, 128])
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_attention_wgmmas_are_not_serialized(D, causal, tmp_path):
    text = cli_compile(attn.attention_fwd_kernel, attention_signature(D, causal), 90, 8, 3, "cuda,ptxas", tmp_path)
    assert not SERIALIZED.search(text), [line for line in text.splitlines() if SERIALIZED.search(line)][:3]
    for body in re.split(r"for \(unsigned long long k\d+ = 0;", text)[1:]:
        # p @ v: every A fragment word is packed before the fence that starts its wgmmas.
        dot = body[body.index("a in registers"):]
        dot = dot[:dot.index("tg_wgmma_commit")]
        assert re.search(r"fa\d+\[j\d+\]\[\w+\]\[3\] = ", dot[:dot.index("tg_wgmma_fence")]), dot
        assert not re.search(r"fa\d+\[[^\]]*\]\[[^\]]*\]\[\d\] = ", dot[dot.index("tg_wgmma_fence"):]), dot
        # Two dots with a softmax between them: each waits for its own group.
        head = body[:body.index("tg_wgmma_commit")]
        assert "tg_wgmma_wait<1>" not in head


def test_sm80_matmul_loop_is_unchanged(tmp_path):
    text = cli_compile(matmul.matmul_kernel, MATMUL_SIG.format(bm=128, bn=128, bk=64), 80, 8, 3, "cuda,ptxas",
                       tmp_path)
    body, _ = k_loop(text)
    assert "wgmma" not in text
    assert body.count("__syncthreads();") == 1
    # The refill is issued at the top of the iteration, before the mma.
    assert body.index("tg_cp_async<") < body.index("tg_mma_bf16")


# --- execution on the host ------------------------------------------------------------------


def run_matmul(M, N, K, blocks, warps, stages, edit_source=None):
    rng = rng_for("wgmma-overlap", M, N, K, *blocks.values(), warps, stages)
    a = random(rng, (M, K), "bfloat16", low=-2, high=2)
    b = random(rng, (K, N), "bfloat16", low=-2, high=2)
    c = np.zeros((M, N), np.float32)
    grid = (tegula.cdiv(M, blocks["BLOCK_M"]) * tegula.cdiv(N, blocks["BLOCK_N"]),)
    compiled = emulate(matmul.matmul_kernel, grid, a, b, c, M, N, K, K, 1, N, 1, N, 1, num_warps=warps,
                       num_stages=stages, edit_source=edit_source, **blocks)
    a64, b64 = to_f64(a), to_f64(b)
    want = a64 @ b64
    tol = K * 2.0 ** -22 * (np.abs(a64) @ np.abs(b64)) + 1e-6  # exact products, f32 sums
    return compiled, c, want, tol


@pytest.mark.parametrize("M,N,K,bk,warps,stages", [
    (192, 128, 208, 64, 8, 3),   # two warpgroups along M, K tail of 16, a partial row tile
    (128, 128, 144, 32, 4, 2),   # one warpgroup, two stages: the refill right behind the wait
    (128, 256, 208, 64, 8, 4),   # four stages, two programs along N, K tail
])
def test_in_flight_matmul_is_exact(M, N, K, bk, warps, stages):
    require_emulator()
    blocks = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": bk, "GROUP_M": 8}
    compiled, c, want, tol = run_matmul(M, N, K, blocks, warps, stages)
    assert "stays in flight into the next iteration" in compiled.source
    bad = np.abs(c - want) > tol
    assert not bad.any(), f"{bad.sum()} of {bad.size} wrong, worst {np.abs(c - want).max()}"


@pytest.mark.parametrize("breakage", ["none", "no final wait", "wait_group 2"])
def test_emulator_catches_a_missing_wait(breakage):
    # Without the wait after the loop the last group never lands; with
    # wait_group 2 the stage of group k-1 is refilled before that group has
    # read it, which shows when copies land as soon as they are issued
    # (TG_EMU_EAGER_COPIES). Either way the product is wrong; unbroken, the
    # same code is exact with eager copies too.
    require_emulator()

    def edit(source: str) -> str:
        broken = source
        if breakage == "no final wait":
            broken = source.replace("tg_wgmma_wait<0>();  // the last iteration's wgmma group", "")
        elif breakage == "wait_group 2":
            broken = source.replace("tg_wgmma_wait<1>();", "tg_wgmma_wait<2>();")
        assert (broken == source) == (breakage == "none")
        return "#define TG_EMU_EAGER_COPIES\n" + broken

    blocks = {"BLOCK_M": 64, "BLOCK_N": 128, "BLOCK_K": 32, "GROUP_M": 8}
    _, c, want, tol = run_matmul(64, 128, 160, blocks, 4, 3, edit_source=edit)
    assert (np.abs(c - want) > tol).any() == (breakage != "none")
