"""Hints: tl.multiple_of, tl.max_contiguous, tl.max_constancy and tl.assume
feed the axis analysis (docs/passes.md), so offsets the compiler cannot see
through (a runtime modulo, a loaded start index, a runtime stride) still get
the fast memory paths when the kernel promises their shape:

* the CUDA backend emits 16-byte vector loads (`tg_vec<float, 4>`);
* the CPU backend checks once that the whole tile is in bounds and then runs
  the element loop without masks, through row base pointers.

Each kernel takes a HINT flag: the generated code is compared with and
without the hints, and both versions must compute the same (right) result.
"""

import re

import numpy as np
import pytest

import tegula
import tegula.language as tl
from cache_util import seed_precompiled_prelude
from ops_util import check, rng_for


@tegula.jit
def wrapped_copy_kernel(x_ptr, y_ptr, n, period, HINT: tl.constexpr, BLOCK: tl.constexpr):
    # `% period` hides that the offsets are BLOCK consecutive values starting
    # at a multiple of BLOCK (true when period is a multiple of BLOCK).
    offs = (tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)) % period
    if HINT:
        offs = tl.max_contiguous(tl.multiple_of(offs, BLOCK), BLOCK)
    m = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=m) * 2.0, mask=m)


@tegula.jit
def gather_rows_kernel(x_ptr, starts_ptr, y_ptr, n, HINT: tl.constexpr, BLOCK: tl.constexpr):
    # Each program copies BLOCK elements from a start index it loads.
    pid = tl.program_id(0)
    start = tl.load(starts_ptr + pid)
    if HINT:
        start = tl.multiple_of(start, 16)
    offs = start + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(y_ptr + pid * BLOCK + tl.arange(0, BLOCK), tl.load(x_ptr + offs, mask=m, other=-1.0))


@tegula.jit
def strided_rows_kernel(x_ptr, y_ptr, stride, n, HINT: tl.constexpr, BLOCK: tl.constexpr):
    if HINT:
        tl.assume(stride % 16 == 0)
    pid = tl.program_id(0)
    offs = pid * stride + tl.arange(0, BLOCK)
    m = tl.arange(0, BLOCK) < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=m) + 1.0, mask=m)


@tegula.jit
def wrapped_copy_statement_kernel(x_ptr, y_ptr, n, period, HINT: tl.constexpr, BLOCK: tl.constexpr):
    # Triton's hints annotate the value itself: as a statement, with the result unused, they
    # still promise the fact for the later uses of offs.
    offs = (tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)) % period
    if HINT:
        tl.max_contiguous(tl.multiple_of(offs, BLOCK), BLOCK)
    m = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=m) * 2.0, mask=m)


@pytest.mark.parametrize("hint", [False, True])
def test_wrapped_offsets(backend, hint):
    block, n = 128, 1000
    period = 1024  # a multiple of BLOCK: the promise holds
    rng = rng_for("wrapped", hint)
    x = rng.standard_normal(period).astype(np.float32)
    for kernel in (wrapped_copy_kernel, wrapped_copy_statement_kernel):
        y = backend.zeros(period, np.float32)
        kernel[(period // block + 2,)](backend.array(x), y, n, period, HINT=hint, BLOCK=block)
        want = np.zeros(period, np.float32)
        want[:n] = x[:n] * 2
        check(backend.numpy(y), want, "float32", ulps=0, atol=0)


@pytest.mark.parametrize("hint", [False, True])
def test_loaded_start_indices(backend, hint):
    block, n = 64, 1000
    starts = np.array([0, 960, 512, 16, 992, 48], np.int32)  # multiples of 16; some run past n
    rng = rng_for("gather_rows", hint)
    x = rng.standard_normal(n).astype(np.float32)
    y = backend.zeros(len(starts) * block, np.float32)
    gather_rows_kernel[(len(starts),)](backend.array(x), backend.array(starts), y, n, HINT=hint, BLOCK=block)
    want = np.full(len(starts) * block, -1.0, np.float32)
    for p, s in enumerate(starts):
        k = min(block, n - s)
        want[p * block: p * block + k] = x[s: s + k]
    check(backend.numpy(y), want, "float32", ulps=0, atol=0)


@pytest.mark.parametrize("hint", [False, True])
def test_assumed_stride(backend, hint):
    block, rows, n, stride = 64, 5, 50, 80
    rng = rng_for("strided", hint)
    x = rng.standard_normal(rows * stride).astype(np.float32)
    y = backend.zeros(rows * stride, np.float32)
    strided_rows_kernel[(rows,)](backend.array(x), y, stride, n, HINT=hint, BLOCK=block)
    want = np.zeros(rows * stride, np.float32)
    for r in range(rows):
        want[r * stride: r * stride + n] = x[r * stride: r * stride + n] + 1
    check(backend.numpy(y), want, "float32", ulps=0, atol=0)


# --- generated code -----------------------------------------------------------------------

# Blocks of 512 elements: with 4 warps a thread holds 4 consecutive f32.
SIGNATURES = {
    wrapped_copy_kernel: "*fp32:16, *fp32:16, i32, i32, {hint}, 512",
    wrapped_copy_statement_kernel: "*fp32:16, *fp32:16, i32, i32, {hint}, 512",
    gather_rows_kernel: "*fp32:16, *i32:16, *fp32:16, i32, {hint}, 512",
    strided_rows_kernel: "*fp32:16, *fp32:16, i32, i32, {hint}, 512",
}


@pytest.mark.parametrize("kernel", list(SIGNATURES), ids=lambda k: k.fn.__name__)
def test_cuda_vector_loads_come_from_hints(kernel, tmp_path):
    from cuda_compile_util import compile_for_cuda

    for arch in (80, 90):
        plain = compile_for_cuda(kernel, SIGNATURES[kernel].format(hint=False), arch, tmp_path, emit="cuda")
        hinted = compile_for_cuda(kernel, SIGNATURES[kernel].format(hint=True), arch, tmp_path, emit="cuda,ptxas")
        # A vector read is `const tg_vec<float, 4> w = *...`: the loads of x.
        # (The store of gather_rows_kernel is aligned without hints.)
        assert "const tg_vec<float, 4>" not in plain, "without hints the offsets are not provably aligned"
        assert "const tg_vec<float, 4>" in hinted, "16-byte vector loads with the hints"


def cpu_source(kernel, hint, tmp_path):
    import subprocess

    from tegula.cli import executable

    path = kernel.fn.__code__.co_filename
    cmd = [str(executable()), "compile", f"{path}::{kernel.fn.__name__}", "--signature",
           SIGNATURES[kernel].format(hint=hint), "--emit", "cpp", "--cache-dir", str(seed_precompiled_prelude(tmp_path))]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.mark.parametrize("kernel", [wrapped_copy_kernel, wrapped_copy_statement_kernel], ids=lambda k: k.fn.__name__)
def test_cpu_full_tile_path_comes_from_hints(kernel, tmp_path):
    plain = cpu_source(kernel, False, tmp_path)
    hinted = cpu_source(kernel, True, tmp_path)
    marker = "the whole tile is in bounds"
    assert marker not in plain
    assert marker in hinted
    # The unmasked copy reads and writes through row base pointers.
    assert "// &v" in hinted and "// &v" not in plain


# --- tl.assume of signs --------------------------------------------------------------------


@tegula.jit
def signed_offsets_kernel(x_ptr, y_ptr, a, b, c, d, BLOCK: tl.constexpr):
    # a >= 0, b > 0, 0 <= c promise least values (an `at_least` hint each: the CUDA backend's TMA stores need
    # offsets known >= 0); d > -5 and a tile's bound promise nothing the compiler records.
    offs = tl.arange(0, BLOCK)
    tl.assume((a >= 0) & (b > 0) & (0 <= c))
    tl.assume(d > -5)
    tl.assume(offs >= 0)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs) * (a + b + c + d))


def test_assumed_signs_become_hints(backend):
    x = rng_for("signs", True).standard_normal(64).astype(np.float32)
    request, _ = signed_offsets_kernel._request_for(x, x, 5, 2, 3, 4, BLOCK=64)  # not 1: it would be a constant
    compiled = tegula._C.compile(request, tegula._C.CompileOptions(backend="cpu", keep_stages=True))
    lowered = compiled.stages["lowered"]
    assert [int(v) for v in re.findall(r"at_least = \[(\d+)\]", lowered)] == [0, 1, 0], lowered
    y = backend.zeros(64, np.float32)
    signed_offsets_kernel[(1,)](backend.array(x), y, 5, 2, 3, -4, BLOCK=64)
    check(backend.numpy(y), x * np.float32(6), "float32", ulps=0, atol=0)


@tegula.jit
def hints_in_a_loop_kernel(x_ptr, y_ptr, n, start, BLOCK: tl.constexpr):
    # Inside the loop, facts about values computed there hold for their later uses in the loop; `start`
    # comes from outside and keeps none (its hinted copy would exist in the loop only).
    for k in range(0, n, BLOCK):
        offs = k * 2
        tl.assume(offs % 16 == 0)
        tl.assume(offs >= 0)
        tl.assume(start >= 0)
        tl.multiple_of(offs, 32)
        o = offs + tl.arange(0, BLOCK)
        tl.store(y_ptr + o, tl.load(x_ptr + o) + start)
    tl.store(y_ptr, start.to(tl.float32))


def test_hints_inside_a_loop(backend):
    n, block = 64, 16
    x = rng_for("loop", True).standard_normal(2 * n + block).astype(np.float32)
    request, _ = hints_in_a_loop_kernel._request_for(x, x, n, 7, BLOCK=block)
    compiled = tegula._C.compile(request, tegula._C.CompileOptions(backend="cpu", keep_stages=True))
    lowered = compiled.stages["lowered"]
    body = lowered[lowered.index("for "):]
    assert "divisibility = [16]" in body and "at_least = [0]" in body and "divisibility = [32]" in body, lowered
    assert lowered.count("at_least") == 1, lowered  # not for start
    # the store after the loop reads start itself, and the loop's loads use the hinted offsets
    y = backend.zeros(2 * n + block, np.float32)
    hints_in_a_loop_kernel[(1,)](backend.array(x), y, n, 7, BLOCK=block)
    want = np.zeros_like(x)
    for k in range(0, n, block):
        want[2 * k:2 * k + block] = x[2 * k:2 * k + block] + 7
    want[0] = 7
    check(backend.numpy(y), want, "float32", ulps=0, atol=0)


@tegula.jit
def two_facts_kernel(x_ptr, y_ptr, a, BLOCK: tl.constexpr):
    tl.assume((a % 16 == 0) & (a >= 0))
    offs = a + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs) * 2.0)


def test_two_facts_of_one_value_make_one_hint(backend):
    # Both facts land on the one copy the variables are rebound to.
    x = rng_for("two facts", True).standard_normal(64).astype(np.float32)
    request, _ = two_facts_kernel._request_for(x, x, 5, BLOCK=32)
    lowered = tegula._C.compile(request, tegula._C.CompileOptions(backend="cpu", keep_stages=True)).stages["lowered"]
    hints = [line for line in lowered.splitlines() if " = hint " in line]
    assert len(hints) == 1 and "divisibility = [16]" in hints[0] and "at_least = [0]" in hints[0], lowered
    y = backend.zeros(64, np.float32)
    two_facts_kernel[(1,)](backend.array(x), y, 16, BLOCK=32)
    want = np.zeros_like(x)
    want[16:48] = x[16:48] * 2
    check(backend.numpy(y), want, "float32", ulps=0, atol=0)


# --- a false promise -------------------------------------------------------------------------


@tegula.jit
def wrapped_columns_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    # kernl's linear layer: columns wrapped modulo n, then promised contiguous over the block, which is
    # false in the last, partial block (its offsets run 96..99, 0..27 for n = 100).
    raw = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    offs = tl.max_contiguous(tl.multiple_of(raw % n, BLOCK), BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs) + 1.0, mask=offs < n)


def test_cpu_checks_a_promised_run_before_relying_on_it():
    """On the CPU a run that only a hint calls contiguous is read from its first address only where its
    rows end where counting up would: a promise broken by a wrap computes every address, as the
    program says, instead of writing past the array (a GPU's 16-byte vectors happen to land right)."""
    n, guard = 100, 64
    x = rng_for("false-hint", True).standard_normal(n).astype(np.float32)
    y = np.zeros(n + guard, np.float32)
    wrapped_columns_kernel[(tegula.cdiv(n, 32),)](x, y[:n], n, BLOCK=32)
    np.testing.assert_array_equal(y[:n], x + 1.0)
    np.testing.assert_array_equal(y[n:], 0.0)  # nothing past the array
    # The same kernel where the promise holds (n a multiple of the block) takes the fast copy.
    x = rng_for("true-hint", True).standard_normal(128).astype(np.float32)
    y = np.zeros(128, np.float32)
    wrapped_columns_kernel[(4,)](x, y, 128, BLOCK=32)
    np.testing.assert_array_equal(y, x + 1.0)
