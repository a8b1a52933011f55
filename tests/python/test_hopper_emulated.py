"""The hand-written Hopper prototypes (tools/hopper) run in the host CUDA emulator, against NumPy.

ws_matmul.cu and ws_attention.cu use what the CUDA backend will emit on sm_90a: TMA copies completing on
mbarriers, a producer warpgroup and consumer warpgroups with setmaxnreg, named-barrier hand-overs, wgmma with A
from registers, TMA stores of stmatrix-staged tiles, clusters with multicast. The emulator (cuda_emulator_async.h)
lands the copies at seeded random points, keeps the mbarriers' phases and transaction bytes, and reports
deadlocks and the async proxy's races, so the layouts, phases and hand-overs are checked here on the CPU; each
broken protocol the prototypes can be compiled with (their TG_BUG_* switches) must be reported.
"""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest

import hopper_prototypes as hp
from cuda_emulator import EmulatorError, require_emulator

_NP = {"bf16": ml_dtypes.bfloat16, "fp16": np.float16, "e4m3": ml_dtypes.float8_e4m3fn}


@pytest.fixture(autouse=True)
def _emulator():
    require_emulator()


def bits(rng, shape, dtype):
    """Random N(0, 1) values rounded to `dtype`, as (bit patterns, float64 values)."""
    x = rng.standard_normal(shape).astype(_NP[dtype])
    return x.view(np.uint8 if dtype == "e4m3" else np.uint16), x.astype(np.float64)


def values(c_bits, dtype):
    return c_bits.view(_NP[dtype]).astype(np.float64)


def close(got, want, what):
    """16-bit outputs of sums of exact products: the output rounding (2^-8 relative for bf16) dominates."""
    assert not np.isnan(got).any(), f"{what}: {np.isnan(got).sum()} elements never written"
    err = np.abs(got - want)
    tol = 2.0 ** -7 * np.abs(want) + 1e-2
    assert (err <= tol).all(), f"{what}: {(err > tol).sum()} of {err.size} wrong, worst {err.max()}"


# --- the matmul ----------------------------------------------------------------------------------------------------
def run_matmul(name, M, N, K, dtype="bf16", grid=None, bugs=(), seed=0, registers=None):
    v = hp.bench_proto.BY_NAME[name]
    rng = np.random.default_rng([M, N, K, len(name)])
    a, a64 = bits(rng, (M, K), dtype)
    b_t, b_t64 = bits(rng, (N, K), dtype)
    b = b_t if v.b_kmajor else np.ascontiguousarray(b_t.T)
    # Few CTAs, so a CTA walks several tiles (phases carried across them).
    grid = grid or hp.bench_proto.grid_size(v, M, N, sms=2 * v.cluster)
    scales = (0.5, 0.25) if v.fp8 else (1.0, 1.0)
    c = hp.matmul(v, a, b, dtype, grid, bugs=bugs, seed=seed, registers=registers, scales=scales)
    want = (a64 @ b_t64.T) * scales[0] * scales[1]
    return values(c, "fp16" if dtype == "fp16" else "bf16"), want


@pytest.mark.parametrize("name,dtype,shape", [
    ("coop_128x256_s3_tmastore", "bf16", (256, 256, 192)),
    ("coop_128x256_s3_tmastore", "fp16", (200, 264, 40)),    # ragged M, N and K (zero fill, clipped stores)
    ("pingpong_128x128_s6", "bf16", (256, 256, 192)),
    ("pingpong_128x128_s5_tmastore", "fp16", (200, 264, 136)),
])
def test_matmul_prototype(name, dtype, shape):
    got, want = run_matmul(name, *shape, dtype=dtype)
    close(got, want, f"{name} {dtype} {shape}")


@pytest.mark.slow
@pytest.mark.parametrize("name,dtype,shape", [
    ("coop_128x256_s4_cluster2", "bf16", (256, 256, 192)),   # multicast B, remote releases
    ("coop_128x256_s4_bkmajor", "fp16", (128, 256, 320)),
    ("fp8_coop_128x256_s3_tmastore", "e4m3", (200, 264, 272)),
])
def test_matmul_prototype_more(name, dtype, shape):
    got, want = run_matmul(name, *shape, dtype=dtype)
    close(got, want, f"{name} {dtype} {shape}")


@pytest.mark.parametrize("seed", [1, 2])
def test_matmul_prototype_other_interleavings(seed):
    got, want = run_matmul("pingpong_128x128_s6", 256, 256, 192, seed=seed)
    close(got, want, f"seed {seed}")


# Each broken protocol, and what the emulator must say about it.
MATMUL_BUGS = {
    # The consumers pass a fresh full barrier at once and read a stage the copies have not filled.
    "TG_BUG_FULL_PARITY": ("coop_128x256_s3_tmastore", r"still in flight|went ahead without waiting"),
    # The phase completes on the producer's arrival alone: the copies land after it.
    "TG_BUG_NO_EXPECT_TX": ("coop_128x256_s3_tmastore",
                            r"still in flight|without its bytes|more bytes landed|went ahead without waiting"),
    "TG_BUG_SHORT_EXPECT_TX": ("coop_128x256_s3_tmastore",
                               r"without its bytes|still in flight|went ahead without waiting"),
    # The producer refills a stage while the consumers' wgmmas still read it.
    "TG_BUG_EARLY_RELEASE": ("coop_128x256_s3_tmastore", r"refilled before its readers released it"),
    "TG_BUG_NO_PROXY_FENCE": ("coop_128x256_s3_tmastore", r"no fence\.proxy\.async"),
    # One CTA: each consumer stages two tiles through its staging tile.
    "TG_BUG_NO_STORE_WAIT": ("pingpong_128x128_s5_tmastore", r"stmatrix .* still reads .*wait_group\.read"),
}


@pytest.mark.parametrize("bug", sorted(MATMUL_BUGS))
def test_broken_matmul_protocol_is_reported(bug):
    name, message = MATMUL_BUGS[bug]
    with pytest.raises(EmulatorError, match=message):
        run_matmul(name, 256, 256, 192, grid=1, bugs=(bug,))


def test_every_matmul_bug_switch_is_tested():
    assert hp.bug_switches(hp.bench_proto.SOURCE) == sorted(MATMUL_BUGS)


def test_short_register_pool_is_a_deadlock():
    # 160 registers a thread at launch: the producer's setmaxnreg.dec 40 frees 120 x 128, the consumers' .inc 232
    # need 72 x 256 of them.
    with pytest.raises(EmulatorError, match=r"(?s)deadlock.*setmaxnreg\.inc 232.*needs"):
        run_matmul("coop_128x256_s3_tmastore", 128, 256, 64, registers=160)


# --- the attention forward -----------------------------------------------------------------------------------------
def run_attention(name, B, H, S, causal, dtype="bf16", grid=None, bugs=(), seed=0):
    v = hp.bench_attention.BY_NAME[name]
    rng = np.random.default_rng([B, H, S, v.d, int(causal)])
    (q, q64), (k, k64), (vv, v64) = (bits(rng, (B, H, S, v.d), dtype) for _ in range(3))
    grid = grid or v.grid(B, H, S, sms=2)
    o, lse = hp.attention(v, q, k, vv, dtype, causal, grid, bugs=bugs, seed=seed)
    scores = np.einsum("bhqd,bhkd->bhqk", q64, k64) / math.sqrt(v.d)
    if causal:
        scores = np.where(np.tril(np.ones((S, S), bool)), scores, -np.inf)
    top = scores.max(axis=-1, keepdims=True)
    p = np.exp(scores - top)
    want_o = np.einsum("bhqk,bhkd->bhqd", p / p.sum(axis=-1, keepdims=True), v64)
    want_lse = (top[..., 0] + np.log(p.sum(axis=-1)))
    return values(o, dtype), want_o, lse.astype(np.float64), want_lse


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("name,shape", [
    ("d64_pp_ov_s2", (1, 2, 128)),
    ("d64_pp_ov_s2", (1, 2, 77)),      # fewer keys than a block: zero fill past S, masked
])
def test_attention_prototype(name, shape, causal):
    o, want_o, lse, want_lse = run_attention(name, *shape, causal)
    # P is rounded to 16 bits before P V: a few 2^-8 of the largest |V| per row.
    assert not np.isnan(o).any()
    assert np.abs(o - want_o).max() < 0.02, np.abs(o - want_o).max()
    np.testing.assert_allclose(lse, want_lse, rtol=1e-4, atol=1e-4)


@pytest.mark.slow
@pytest.mark.parametrize("name,shape,causal", [
    ("d128_pp_ov_s2", (1, 1, 200), True),   # D 128, a ragged second tile
    ("d128_pp_s2", (1, 2, 130), False),     # no overlap: each GEMM waited at once
    ("d128_ov_s2", (2, 1, 128), True),      # no ping-pong
])
def test_attention_prototype_more(name, shape, causal):
    o, want_o, lse, want_lse = run_attention(name, *shape, causal, dtype="fp16")
    assert np.abs(o - want_o).max() < 0.02, np.abs(o - want_o).max()
    np.testing.assert_allclose(lse, want_lse, rtol=1e-4, atol=1e-4)


ATTENTION_BUGS = {
    # Consumers pass K's full barrier a phase early (reading a buffer not yet filled) or wait for a phase that
    # never comes.
    "TG_BUG_K_PARITY": r"(?s)still in flight|went ahead without waiting|deadlock.*wait for mbarrier",
    # Consumer 0 waits for a turn consumer 1 waits to be handed.
    "TG_BUG_NO_FIRST_HANDOVER": r"(?s)deadlock.*wait for named barrier 1 \(128 of 256 arrived\)",
    "TG_BUG_CONSUMER_REGS": r"(?s)deadlock.*setmaxnreg\.inc 248 .* needs",
}


@pytest.mark.parametrize("bug", sorted(ATTENTION_BUGS))
def test_broken_attention_protocol_is_reported(bug):
    with pytest.raises(EmulatorError, match=ATTENTION_BUGS[bug]):
        run_attention("d64_pp_ov_s2", 1, 2, 128, False, bugs=(bug,))


def test_every_attention_bug_switch_is_tested():
    assert hp.bug_switches(hp.bench_attention.SOURCE) == sorted(ATTENTION_BUGS)
