"""A dot operand that is a transpose of a value in registers (dS of an attention backward held as dS^T): the
dot right after the transpose stages the source's registers into its shared-memory tile with rows along M/N
where the transposed value would have them along K, so the transpose itself is never emitted
(backends/cuda/codegen_mma.cpp, transpose_staged_by_dot). Run in the host CUDA emulator against NumPy, for
mma.sync (sm_80) and wgmma (sm_90), operand a and operand b, square and not; a transpose with an op between it
and its dot is converted as before, and gives the same numbers.
"""

from __future__ import annotations

import numpy as np
import pytest

import tegula
import tegula.language as tl
from cuda_emulator import emulate, require_emulator
from ops_util import random, rng_for, to_f64


@pytest.fixture(autouse=True)
def _emulator():
    require_emulator()


@tegula.jit
def transposed_operand_kernel(x_ptr, y_ptr, c_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
                              P: tl.constexpr, AS_B: tl.constexpr, BETWEEN: tl.constexpr):
    """s = x @ y ([M, N], the accumulator layout), then out = s^T @ c ([N, P], c [M, P]) or, with AS_B,
    out = c @ s^T ([P, M], c [P, N]). BETWEEN puts an op between the transpose and its dot."""
    rm, rn, rk, rp = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K), tl.arange(0, P)
    x = tl.load(x_ptr + rm[:, None] * K + rk[None, :])
    y = tl.load(y_ptr + rk[:, None] * N + rn[None, :])
    s = tl.dot(x, y).to(x.dtype)
    if AS_B:
        c = tl.load(c_ptr + rp[:, None] * N + rn[None, :])
        st = tl.trans(s)
        if BETWEEN:
            c = c * 2.0
        out = tl.dot(c, st)
        tl.store(out_ptr + rp[:, None] * M + rm[None, :], out)
    else:
        c = tl.load(c_ptr + rm[:, None] * P + rp[None, :])
        st = tl.trans(s)
        if BETWEEN:
            c = c * 2.0
        out = tl.dot(st, c)
        tl.store(out_ptr + rn[:, None] * P + rp[None, :], out)


@pytest.mark.parametrize("arch", [80, 90])
@pytest.mark.parametrize("as_b", [False, True], ids=["a", "b"])
@pytest.mark.parametrize("M,N,K,P,warps", [(64, 64, 32, 64, 4), (128, 64, 32, 128, 8), (64, 128, 16, 64, 4)])
@pytest.mark.parametrize("between", [False, True], ids=["next", "op-between"])
def test_transposed_operand_matches_numpy(arch, as_b, M, N, K, P, warps, between):
    rng = rng_for("transposed-operand", arch, as_b, M, N, K, P, between)
    x, y = random(rng, (M, K), "float16", low=-1, high=1), random(rng, (K, N), "float16", low=-1, high=1)
    c = random(rng, (P, N) if as_b else (M, P), "float16", low=-1, high=1)
    out = np.zeros((P, M) if as_b else (N, P), np.float32)
    compiled = emulate(transposed_operand_kernel, (1,), x, y, c, out, M=M, N=N, K=K, P=P, AS_B=as_b,
                       BETWEEN=between, num_warps=warps, arch=arch)
    staged = "the dot after it stages the operand's registers transposed" in compiled.source
    assert staged != between, compiled.source
    s = to_f64((to_f64(x) @ to_f64(y)).astype(np.float32).astype(np.float16))
    cc = to_f64(c) * (2.0 if between else 1.0)
    want = cc @ s.T if as_b else s.T @ cc
    # s rounded to float16 may differ by an ulp (2^-11) where the kernel's sums round otherwise
    bound = 2.0 ** -9 * ((np.abs(cc) @ np.abs(s).T) if as_b else (np.abs(s).T @ np.abs(cc))) + 1e-4
    assert np.all(np.abs(out - want) <= bound), np.max(np.abs(out - want) - bound)
