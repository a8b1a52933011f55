"""f16 gathered and scattered on the CPU backend (codegen_fusion.cpp).

No x86 instruction gathers or scatters 16-bit elements, so an element loop
that does stays scalar; its f16 conversions then go through the host's
F16C instructions (prelude.h, tg_scalar_f16_to_f32) instead of the bit-exact
code meant for vectors. The results must not change: checked bit for bit
against NumPy's float16 arithmetic (one rounding per op, as Tegula's) on
random values with subnormals, infinities, NaNs and overflow, masked tails
and a non-power-of-two size, and in the generated source.
"""

import numpy as np
import pytest

import tegula
import tegula.language as tl


@pytest.fixture(autouse=True)
def _cpu_only(backend):
    if backend.name != "cpu":
        pytest.skip("CPU code generation")


SCALAR_LOOP = "keep this loop scalar"


@tegula.jit
def gather_kernel(x_ptr, idx_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    inside = offs < n
    idx = tl.load(idx_ptr + offs, mask=inside, other=0)
    x = tl.load(x_ptr + idx, mask=inside & (idx >= 0), other=-1.0)
    tl.store(out_ptr + offs, x * 1.5 - 0.75, mask=inside)


@tegula.jit
def scatter_kernel(x_ptr, idx_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    inside = offs < n
    idx = tl.load(idx_ptr + offs, mask=inside, other=0)
    x = tl.load(x_ptr + offs, mask=inside, other=0.0)
    tl.store(out_ptr + idx, x * x + x, mask=inside)


@tegula.jit
def contiguous_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    inside = offs < n
    x = tl.load(x_ptr + offs, mask=inside, other=0.0)
    tl.store(out_ptr + offs, x * 1.5 - 0.75, mask=inside)


def half_values(rng, n):
    """Random f16 bit patterns (every class: zeros, subnormals, normals,
    infinities and quiet NaNs), signalling NaNs left out: those come out
    quiet from the host's conversion, as IEEE 754 has it."""
    bits = rng.integers(0, 1 << 16, size=n, dtype=np.uint32).astype(np.uint16)
    nan = (bits & 0x7C00) == 0x7C00
    nan &= (bits & 0x03FF) != 0
    bits[nan] |= 0x0200
    bits[:8] = [0x0000, 0x8000, 0x0001, 0x83FF, 0x7C00, 0xFC00, 0x7BFF, 0x7E00]
    return bits.view(np.float16)


def same_bits(got, want):
    got_nan, want_nan = np.isnan(got), np.isnan(want)
    np.testing.assert_array_equal(got_nan, want_nan)
    np.testing.assert_array_equal(got[~got_nan].view(np.uint16), want[~want_nan].view(np.uint16))


@pytest.mark.parametrize("n", [1000, 4096])
def test_gathered_half_computes_exactly(n):
    rng = np.random.default_rng(n)
    x = half_values(rng, n)
    idx = rng.integers(-5, n, size=n).astype(np.int32)  # some out of range: masked off
    out = np.full(n, 7.0, dtype=np.float16)
    gather_kernel[(tegula.cdiv(n, 256),)](x, idx, out, n, BLOCK=256)
    with np.errstate(over="ignore", invalid="ignore"):
        loaded = np.where(idx >= 0, x[np.maximum(idx, 0)], np.float16(-1.0))
        want = loaded * np.float16(1.5) - np.float16(0.75)
    same_bits(out, want)


@pytest.mark.parametrize("n", [1000, 4096])
def test_scattered_half_computes_exactly(n):
    rng = np.random.default_rng(n + 1)
    x = half_values(rng, n)
    idx = rng.permutation(n).astype(np.int32)
    out = np.full(n, 7.0, dtype=np.float16)
    scatter_kernel[(tegula.cdiv(n, 256),)](x, idx, out, n, BLOCK=256)
    want = np.empty_like(out)
    with np.errstate(over="ignore", invalid="ignore"):
        want[idx] = x * x + x
    same_bits(out, want)


def test_only_gathering_loops_convert_by_host_instructions():
    x = np.ones(1000, dtype=np.float16)
    idx = np.arange(1000, dtype=np.int32)
    gathered = gather_kernel.inspect(x, idx, x, 1000, BLOCK=256).source
    scattered = scatter_kernel.inspect(x, idx, x, 1000, BLOCK=256).source
    contiguous = contiguous_kernel.inspect(x, x, 1000, BLOCK=256).source
    assert SCALAR_LOOP in gathered and SCALAR_LOOP in scattered
    assert "constexpr tg_scalar_f16_to_f32 tg_f16_to_f32{};" in gathered
    # A loop over consecutive elements vectorizes: its conversions stay the bit-exact vector code.
    assert SCALAR_LOOP not in contiguous
    # Gathering f32 needs no f16 conversions.
    x32 = x.astype(np.float32)
    assert SCALAR_LOOP not in gather_kernel.inspect(x32, idx, x32, 1000, BLOCK=256).source
