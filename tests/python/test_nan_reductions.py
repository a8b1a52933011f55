"""NaN in max/min reductions follows one rule (docs/language.md, "NaN in
max and min"): by default a NaN loses to every number, so tl.max/tl.min
return the max/min of the numbers (NaN only when all are NaN) and
argmax/argmin and return_indices point at that number; with
propagate_nan=tl.PropagateNan.ALL a NaN wins, so the value is NaN and the
index is the first NaN (NumPy's max/argmax). Ties go to the smaller index.
Checked against NumPy on random data with NaNs at random positions, many
ties, masked tails and non-power-of-two sizes, along both axes, on the CPU
backend and through the CUDA backend's code (the emulator).
"""

import numpy as np
import pytest

import tegula
import tegula.language as tl
from ops_util import rng_for


@tegula.jit
def nan_reduce_kernel(x_ptr, out_ptr, idx_ptr, M, N, PAD: tl.constexpr, NAN: tl.constexpr,
                      AXIS: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    rows = tl.arange(0, BM)
    cols = tl.arange(0, BN)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    x = tl.load(x_ptr + rows[:, None] * N + cols[None, :], mask=mask, other=PAD)
    if AXIS == 0:
        r = cols
        R: tl.constexpr = BN
    else:
        r = rows
        R: tl.constexpr = BM
    tl.store(out_ptr + 0 * R + r, tl.max(x, AXIS, propagate_nan=NAN))
    tl.store(out_ptr + 1 * R + r, tl.min(x, AXIS, propagate_nan=NAN))
    v, i = tl.max(x, AXIS, return_indices=True, propagate_nan=NAN)
    tl.store(out_ptr + 2 * R + r, v)
    tl.store(idx_ptr + 0 * R + r, i)
    v, i = tl.min(x, AXIS, return_indices=True, propagate_nan=NAN)
    tl.store(out_ptr + 3 * R + r, v)
    tl.store(idx_ptr + 1 * R + r, i)
    tl.store(idx_ptr + 2 * R + r, tl.argmax(x, AXIS, propagate_nan=NAN))
    tl.store(idx_ptr + 3 * R + r, tl.argmin(x, AXIS, propagate_nan=NAN))
    # The elementwise forms follow the same rule.
    y = tl.load(x_ptr + rows[:, None] * N + (N - 1 - cols)[None, :], mask=mask, other=PAD)
    tl.store(out_ptr + 4 * R + r, tl.max(tl.maximum(x, y, propagate_nan=NAN), AXIS, propagate_nan=NAN))


def ref_index(line, is_max, nan_wins):
    """The index the rule picks in one 1-D line."""
    nan = np.isnan(line)
    if nan.any() and (nan_wins or nan.all()):
        return int(np.argmax(nan))  # the first NaN
    numbers = np.flatnonzero(~nan)
    values = line[numbers]
    return int(numbers[np.argmax(values) if is_max else np.argmin(values)])  # first of ties


def reference(tile, axis, nan_wins):
    lines = tile.T if axis == 0 else tile
    amax = np.array([ref_index(ln, True, nan_wins) for ln in lines])
    amin = np.array([ref_index(ln, False, nan_wins) for ln in lines])
    vmax = lines[np.arange(len(lines)), amax]
    vmin = lines[np.arange(len(lines)), amin]
    return vmax, vmin, amax, amin


def hostile_data(rng, m, n):
    # Few distinct values (many ties), NaNs at random positions, one row all
    # NaN and one without NaN.
    x = rng.integers(-3, 4, size=(m, n)).astype(np.float32)
    x[rng.random((m, n)) < 0.25] = np.nan
    x[rng.integers(m)] = np.nan
    x[(rng.integers(m) + 1) % m] = rng.integers(-3, 4, size=n)
    if m > 2:
        x[0, 0] = np.nan  # the issue's case: a NaN first
    return x


def padded(x, bm, bn, pad):
    tile = np.full((bm, bn), pad, np.float32)
    tile[:x.shape[0], :x.shape[1]] = x
    return tile


CASES = [(5, 37, 8, 64), (8, 8, 8, 8), (3, 100, 4, 128), (1, 7, 2, 8)]


def check_outputs(x, out, idx, bm, bn, pad, axis, nan_wins):
    tile = padded(x, bm, bn, pad)
    vmax, vmin, amax, amin = reference(tile, axis, nan_wins)
    names = ["tl.max", "tl.min", "tl.max(return_indices) value", "tl.min(return_indices) value"]
    for got, want, what in zip(out[:4], [vmax, vmin, vmax, vmin], names):
        np.testing.assert_array_equal(got, want, err_msg=what)
    for got, want, what in zip(idx, [amax, amin, amax, amin],
                               ["tl.max index", "tl.min index", "tl.argmax", "tl.argmin"]):
        np.testing.assert_array_equal(got, want, err_msg=what)
    flipped = np.full_like(tile, pad)
    flipped[:x.shape[0], :x.shape[1]] = x[:, ::-1]
    both = np.maximum(tile, flipped) if nan_wins else np.fmax(tile, flipped)
    np.testing.assert_array_equal(out[4], reference(both, axis, nan_wins)[0], err_msg="tl.maximum then tl.max")


def run_case(launch, m, n, bm, bn, axis, nan_mode, pad):
    rng = rng_for("nan-reductions", m, n, axis, nan_mode, str(pad))
    x = hostile_data(rng, m, n)
    r = bn if axis == 0 else bm
    out = np.full((5, r), 123.0, np.float32)
    idx = np.full((4, r), -1, np.int32)
    launch(x, out, idx, m, n, pad, nan_mode, axis, bm, bn)
    check_outputs(x, out, idx, bm, bn, pad, axis, nan_mode == "all")


@pytest.mark.parametrize("m,n,bm,bn", CASES)
@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("nan_mode", ["none", "all"])
@pytest.mark.parametrize("pad", [float("nan"), 2.0])
def test_nan_rule_cpu(m, n, bm, bn, axis, nan_mode, pad):
    def launch(x, out, idx, m, n, pad, nan_mode, axis, bm, bn):
        nan_reduce_kernel[(1,)](x, out, idx, m, n, PAD=pad, NAN=nan_mode, AXIS=axis, BM=bm, BN=bn)
    run_case(launch, m, n, bm, bn, axis, nan_mode, pad)


def test_issue_case_agrees_with_itself():
    x = np.array([[np.nan, 5, 1, 3, 2, 2, 0, 4]], np.float32)
    for nan_mode, value, index in (("none", 5.0, 1), ("all", np.nan, 0)):
        out = np.zeros((5, 1), np.float32)
        idx = np.zeros((4, 1), np.int32)
        nan_reduce_kernel[(1,)](x, out, idx, 1, 8, PAD=0.0, NAN=nan_mode, AXIS=1, BM=1, BN=8)
        np.testing.assert_array_equal(out[[0, 2]].ravel(), [value, value])
        np.testing.assert_array_equal(idx[[0, 2]].ravel(), [index, index])


@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("nan_mode", ["none", "all"])
def test_nan_rule_emulated_cuda(axis, nan_mode):
    from cuda_emulator import emulate, require_emulator

    require_emulator()

    def launch(x, out, idx, m, n, pad, nan_mode, axis, bm, bn):
        emulate(nan_reduce_kernel, (1,), x, out, idx, m, n, num_warps=2,
                PAD=pad, NAN=nan_mode, AXIS=axis, BM=bm, BN=bn)
    run_case(launch, 5, 37, 8, 64, axis, nan_mode, float("nan"))
