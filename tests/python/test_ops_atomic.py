"""Atomics: tl.atomic_add/max/min/and/or/xor/xchg/cas over every dtype they
support, against NumPy references.

What is checked: the new memory value and the returned old values of every
op (masked tails untouched, masked lanes returning 0), float max/min in
IEEE totalOrder (signed zeros, infinities, NaNs of both signs), scalar and
tile pointers with broadcasting, updates that collide inside one tile
(histograms) and across many concurrent programs (exact for integers), the
old values handed out by a contended counter (a permutation), the spin lock
of Triton's tutorial 05, every `sem` and `scope`, program order around
atomics, and the located errors for bad arguments. The CUDA code of
representative kernels is compiled to PTX for sm_90 and sm_80 wherever
NVRTC loads, GPU or not.
"""

import os

import numpy as np
import pytest

import tegula
import tegula.language as tl
from ops_util import check, np_dtype, random, rng_for, round_to, to_f64
from tegula import _C

NUMBERS = ["int32", "uint32", "int64", "uint64", "float16", "bfloat16", "float32", "float64"]
INTEGERS = ["int32", "uint32", "int64", "uint64"]
FLOATS = ["float16", "bfloat16", "float32", "float64"]


# --- references ---------------------------------------------------------------------


def bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).view(np.dtype(f"u{a.dtype.itemsize}"))


def total_order_key(a: np.ndarray) -> np.ndarray:
    """Floats as signed integers ordered like IEEE totalOrder: -NaN < -inf <
    ... < -0.0 < +0.0 < ... < +inf < +NaN."""
    s = np.ascontiguousarray(a).view(np.dtype(f"i{a.dtype.itemsize}")).astype(np.int64)
    magnitude = (1 << (8 * a.dtype.itemsize - 1)) - 1
    return np.where(s < 0, s ^ magnitude, s)


def ref_max(old, val, name):
    if name in FLOATS:
        return np.where(total_order_key(val) > total_order_key(old), val, old)
    return np.maximum(old, val)


def ref_min(old, val, name):
    if name in FLOATS:
        return np.where(total_order_key(val) < total_order_key(old), val, old)
    return np.minimum(old, val)


def ref_add(old, val, name):
    with np.errstate(all="ignore"):
        if name in ("float16", "bfloat16"):
            return round_to(old.astype(np.float64) + val.astype(np.float64), name)
        return (old + val).astype(old.dtype)  # integers wrap


def same_bits(actual, expected, what):
    """Exact comparison, NaN payloads and signed zeros included."""
    a, e = bits(np.asarray(actual)), bits(np.asarray(expected))
    bad = np.flatnonzero(a.reshape(-1) != e.reshape(-1))
    assert bad.size == 0, (f"{what}: {bad.size} of {a.size} elements differ, first at {bad[0]}: "
                           f"{np.asarray(actual).reshape(-1)[bad[0]]!r} != {np.asarray(expected).reshape(-1)[bad[0]]!r}")


def data(rng, n, name, specials=False):
    """Random values of `name`; with `specials`, float data also holds
    +-0.0, +-inf and NaNs of both signs."""
    if name in INTEGERS:
        return random(rng, n, name)
    out = random(rng, n, name)
    if specials:
        planted = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan], dtype=np.float64).astype(np_dtype(name))
        neg_nan = bits(planted[5:6]).copy()
        neg_nan |= np.array(1 << (8 * planted.itemsize - 1), dtype=neg_nan.dtype)  # -np.nan may stay positive
        planted[5:6] = neg_nan.view(planted.dtype)
        where = rng.choice(n, size=min(n, 4 * planted.size), replace=False)
        out[where] = np.resize(planted, where.size)
    return out


# --- every op on every dtype, distinct addresses ---------------------------------------------


@tegula.jit
def every_op_kernel(t_ptr, v_ptr, c_ptr, old_ptr, n, NPAD: tl.constexpr, BITWISE: tl.constexpr,
                    BLOCK: tl.constexpr):
    # Row k of t_ptr/old_ptr (NPAD elements each) is op k's memory and old values.
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    v = tl.load(v_ptr + offs, mask=m)
    tl.store(old_ptr + 0 * NPAD + offs, tl.atomic_add(t_ptr + 0 * NPAD + offs, v, mask=m))
    tl.store(old_ptr + 1 * NPAD + offs, tl.atomic_max(t_ptr + 1 * NPAD + offs, v, mask=m))
    tl.store(old_ptr + 2 * NPAD + offs, tl.atomic_min(t_ptr + 2 * NPAD + offs, v, mask=m))
    tl.store(old_ptr + 3 * NPAD + offs, tl.atomic_xchg(t_ptr + 3 * NPAD + offs, v, mask=m))
    # atomic_cas has no mask: the padded tail swaps too (cmp and val are 0 there).
    c = tl.load(c_ptr + offs, mask=m)
    tl.store(old_ptr + 4 * NPAD + offs, tl.atomic_cas(t_ptr + 4 * NPAD + offs, c, v))
    if BITWISE:
        tl.store(old_ptr + 5 * NPAD + offs, tl.atomic_and(t_ptr + 5 * NPAD + offs, v, mask=m))
        tl.store(old_ptr + 6 * NPAD + offs, tl.atomic_or(t_ptr + 6 * NPAD + offs, v, mask=m))
        tl.store(old_ptr + 7 * NPAD + offs, tl.atomic_xor(t_ptr + 7 * NPAD + offs, v, mask=m))


@pytest.mark.parametrize("name", NUMBERS)
def test_every_op_every_dtype(backend, name):
    n, block = 1000, 128
    programs = tegula.cdiv(n, block)
    npad = programs * block
    rng = rng_for("every_op", name)
    rows = 8 if name in INTEGERS else 5
    start = np.stack([data(rng, npad, name, specials=True) for _ in range(rows)])
    val = data(rng, n, name, specials=True)
    # cmp equals the memory at every other element, so half the CAS swap.
    cmp = data(rng, n, name)
    cmp[::2] = start[4, :n:2]
    t = backend.array(start.copy())
    old = backend.full((rows, npad), 7, np_dtype(name))
    every_op_kernel[(programs,)](t, backend.array(val), backend.array(cmp), old, n, NPAD=npad,
                                 BITWISE=name in INTEGERS, BLOCK=block)
    t, old = backend.numpy(t), backend.numpy(old)

    v = np.zeros(npad, np_dtype(name))
    v[:n] = val
    c = np.zeros(npad, np_dtype(name))
    c[:n] = cmp
    masked = np.arange(npad) >= n
    ops = {0: ("add", lambda o: ref_add(o, v, name)), 1: ("max", lambda o: ref_max(o, v, name)),
           2: ("min", lambda o: ref_min(o, v, name)), 3: ("xchg", lambda o: v),
           4: ("cas", lambda o: np.where(bits(o) == bits(c), v, o))}
    if name in INTEGERS:
        ops.update({5: ("and", lambda o: o & v), 6: ("or", lambda o: o | v), 7: ("xor", lambda o: o ^ v)})
    for row, (op, reference) in ops.items():
        expected = reference(start[row])
        if op != "cas":
            expected = np.where(masked, start[row], expected)  # the masked tail is untouched
        if op == "add" and name in FLOATS:
            check(t[row], expected, name, ulps=0, atol=0, what=f"{name} atomic_add memory")
        else:
            same_bits(t[row], expected, f"{name} atomic_{op} memory")
        expected_old = start[row] if op == "cas" else np.where(masked, np.zeros_like(start[row]), start[row])
        same_bits(old[row], expected_old, f"{name} atomic_{op} old values (masked lanes: 0)")


# --- shapes: scalar pointers, broadcasting, 2-D tiles -------------------------------------


@tegula.jit
def scalar_counter_kernel(counter_ptr, old_ptr, MASK_ODD: tl.constexpr):
    pid = tl.program_id(0)
    if MASK_ODD:
        old = tl.atomic_add(counter_ptr, 1, mask=pid % 2 == 0)
    else:
        old = tl.atomic_add(counter_ptr, 1)
    tl.store(old_ptr + pid, old)


@pytest.mark.parametrize("name", ["int32", "uint64"])
def test_scalar_pointer_once_per_program_returns_permutation(backend, name):
    programs = 97
    counter = backend.zeros(1, np_dtype(name))
    old = backend.full(programs, 12345, np_dtype(name))
    scalar_counter_kernel[(programs,)](counter, old, MASK_ODD=False)
    assert int(backend.numpy(counter)[0]) == programs  # one add per program, not per thread
    assert sorted(int(x) for x in backend.numpy(old)) == list(range(programs))


def test_masked_scalar_atomic(backend):
    programs = 40
    counter = backend.full(1, 5, np.int32)
    old = backend.full(programs, -1, np.int32)
    scalar_counter_kernel[(programs,)](counter, old, MASK_ODD=True)
    assert int(backend.numpy(counter)[0]) == 5 + programs // 2
    old = backend.numpy(old)
    assert sorted(old[0::2].tolist()) == list(range(5, 5 + programs // 2))
    assert old[1::2].tolist() == [0] * (programs // 2)  # masked off: 0


@tegula.jit
def broadcast_kernel(sum_ptr, grid_ptr, v_ptr, old_ptr, R: tl.constexpr, C: tl.constexpr):
    r = tl.arange(0, R)[:, None]
    c = tl.arange(0, C)[None, :]
    v = tl.load(v_ptr + r * C + c)
    # A scalar pointer with a tile of values: every element hits one address.
    tl.atomic_add(sum_ptr, v)
    # A 2-D tile of pointers, a scalar value and a 2-D mask (columns < 5).
    old = tl.atomic_max(grid_ptr + r * C + c, 3, mask=c < 5)
    tl.store(old_ptr + r * C + c, old)


def test_broadcast_scalar_pointer_and_2d_tiles(backend):
    rows, cols = 8, 16
    rng = rng_for("broadcast")
    v = random(rng, (rows, cols), "int64", low=-1000, high=1000)
    start = random(rng, (rows, cols), "int32", low=-10, high=10)
    total = backend.full(1, 17, np.int64)
    grid = backend.array(start.copy())
    old = backend.full((rows, cols), 99, np.int32)
    broadcast_kernel[(1,)](total, grid, backend.array(v), old, R=rows, C=cols)
    assert int(backend.numpy(total)[0]) == 17 + int(v.sum())
    in_mask = np.arange(cols)[None, :] < 5
    check(backend.numpy(grid), np.where(in_mask, np.maximum(start, 3), start), "int32")
    check(backend.numpy(old), np.where(in_mask, start, 0), "int32")


@tegula.jit
def small_tile_kernel(p_ptr, sums_ptr, N: tl.constexpr):
    # 16 elements over 4 warps: the CUDA layout holds each element in 8
    # threads, and only one of them may add. Every thread then sums its own
    # copy of the old values: 128 stores from different threads show
    # whether the replicas received the owners' values.
    i = tl.arange(0, N)
    old = tl.atomic_add(p_ptr + i, i + 1)
    j = tl.arange(0, 128)
    tl.store(sums_ptr + tl.program_id(0) * 128 + j, tl.sum(old) + j * 0)


def check_small_tile(p, sums, start, programs):
    check(p, start + programs * (np.arange(16) + 1), "int32", what="each element added once per program")
    totals = sums.reshape(programs, 128)
    assert (totals == totals[:, :1]).all(), "threads disagree on the old values"
    step = int((np.arange(16) + 1).sum())
    assert sorted(totals[:, 0].tolist()) == [int(start.sum()) + k * step for k in range(programs)]


def test_replicated_small_tile_updates_once(backend):
    start = np.arange(16, dtype=np.int32) * 10
    p = backend.array(start.copy())
    sums = backend.zeros(3 * 128, np.int32)
    small_tile_kernel[(3,)](p, sums, N=16, num_warps=4)
    check_small_tile(backend.numpy(p), backend.numpy(sums), start, 3)


# --- contention --------------------------------------------------------------------------------


@tegula.jit
def histogram_kernel(x_ptr, hist_ptr, old_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    tl.store(old_ptr + offs, tl.atomic_add(hist_ptr + x, 1, mask=m), mask=m)


@pytest.mark.parametrize("n,programs", [(1000, 1), (30000, 30)])
def test_histogram_repeated_indices(backend, n, programs):
    bins = 5
    rng = rng_for("histogram", n)
    x = rng.integers(0, bins, n).astype(np.int32)
    hist = backend.zeros(bins, np.int32)
    old = backend.full(n, -1, np.int32)
    histogram_kernel[(programs,)](backend.array(x), hist, old, n, BLOCK=1024)
    check(backend.numpy(hist), np.bincount(x, minlength=bins), "int32", what="no update lost")
    old = backend.numpy(old)
    for b in range(bins):  # the lanes of bin b were handed 0, 1, ..., count - 1
        assert sorted(old[x == b].tolist()) == list(range(int((x == b).sum())))


@tegula.jit
def contention_kernel(c_ptr, a_ptr, v_ptr, n, K: tl.constexpr, BITWISE: tl.constexpr, BLOCK: tl.constexpr):
    # Every element updates counter offs % K of each op's row of K counters.
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    a = tl.load(a_ptr + offs, mask=m)
    v = tl.load(v_ptr + offs, mask=m)
    p = c_ptr + offs % K
    tl.atomic_add(p, a, mask=m)
    tl.atomic_max(p + K, v, mask=m)
    tl.atomic_min(p + 2 * K, v, mask=m)
    if BITWISE:
        tl.atomic_and(p + 3 * K, v | 5, mask=m)  # keep some bits through thousands of ands
        tl.atomic_or(p + 4 * K, v & 0x50, mask=m)
        tl.atomic_xor(p + 5 * K, v, mask=m)


@pytest.mark.parametrize("name", NUMBERS)
def test_contention_is_exact(backend, name):
    n, k = (20000, 3) if name in INTEGERS or name in ("float32", "float64") else (256, 4)
    rng = rng_for("contention", name)
    # Floats add small integers: every partial sum is exact in every format,
    # so the sum is exact whatever order the additions land in.
    a = random(rng, n, name) if name in INTEGERS else rng.integers(0, 4, n).astype(np_dtype(name))
    v = data(rng, n, name, specials=True)
    rows = 6 if name in INTEGERS else 3
    start = np.stack([data(rng, k, name) for _ in range(rows)])
    counters = backend.array(start.copy())
    contention_kernel[(tegula.cdiv(n, 256),)](counters, backend.array(a), backend.array(v), n, K=k,
                                              BITWISE=name in INTEGERS, BLOCK=256)
    counters = backend.numpy(counters)
    expected = start.copy()
    with np.errstate(over="ignore"):
        for j in range(k):
            s = np.concatenate([start[0, j:j + 1], a[j::k]])
            expected[0, j] = s.sum(dtype=s.dtype) if name in INTEGERS else to_f64(s).sum()
            for row, pick in ((1, np.argmax), (2, np.argmin)):
                s = np.concatenate([start[row, j:j + 1], v[j::k]])
                expected[row, j] = s[pick(total_order_key(s) if name in FLOATS else s)]
            if name in INTEGERS:
                expected[3, j] = np.bitwise_and.reduce(np.concatenate([start[3, j:j + 1], v[j::k] | 5]))
                expected[4, j] = np.bitwise_or.reduce(np.concatenate([start[4, j:j + 1], v[j::k] & 0x50]))
                expected[5, j] = np.bitwise_xor.reduce(np.concatenate([start[5, j:j + 1], v[j::k]]))
    for row, op in enumerate(["add", "max", "min", "and", "or", "xor"][:rows]):
        same_bits(counters[row], expected[row], f"{name} atomic_{op} under contention")


# --- spin lock (Triton tutorial 05 style) --------------------------------------------------------


@tegula.jit
def locked_accumulate_kernel(lock_ptr, count_ptr, acc_ptr, x_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + pid * n + offs, mask=m)
    while tl.atomic_cas(lock_ptr, 0, 1) == 1:
        pass
    acc = tl.load(acc_ptr + offs, mask=m)
    tl.store(acc_ptr + offs, acc + x, mask=m)
    count = tl.load(count_ptr)
    tl.store(count_ptr, count + 1)  # plain load and store: only the lock protects them
    tl.atomic_xchg(lock_ptr, 0)


@pytest.mark.parametrize("name", ["int32", "float32"])
def test_spin_lock_serializes_programs(backend, name):
    programs, n = 64, 24
    rng = rng_for("lock", name)
    x = random(rng, (programs, n), name, low=-100, high=100)
    lock = backend.zeros(1, np.int32)
    count = backend.zeros(1, np.int32)
    acc = backend.zeros(n, np_dtype(name))
    locked_accumulate_kernel[(programs,)](lock, count, acc, backend.array(x), n, BLOCK=32)
    assert int(backend.numpy(count)[0]) == programs
    assert int(backend.numpy(lock)[0]) == 0
    expected = to_f64(x).sum(axis=0)
    if name == "int32":
        check(backend.numpy(acc), expected.astype(np.int32), name)
    else:
        check(backend.numpy(acc), expected.astype(np.float32), name, rtol=1e-5, atol=1e-3)


# --- memory order, scope and program order ------------------------------------------------------


@tegula.jit
def sem_scope_kernel(p_ptr, old_ptr, SEM: tl.constexpr, SCOPE: tl.constexpr):
    i = tl.arange(0, 32)
    old = tl.atomic_add(p_ptr + i, 1, sem=SEM, scope=SCOPE)
    tl.store(old_ptr + i, old)
    (p_ptr + 32).atomic_cas(0, 5, sem=SEM, scope=SCOPE)  # atomics are tensor methods too


@pytest.mark.parametrize("sem,scope", [(None, None), ("relaxed", "cta"), ("acquire", "gpu"), ("release", "sys"),
                                       ("acq_rel", None)])
def test_every_sem_and_scope(backend, sem, scope):
    p = backend.zeros(33, np.int32)
    old = backend.zeros(32, np.int32)
    sem_scope_kernel[(4,)](p, old, SEM=sem, SCOPE=scope)
    p = backend.numpy(p)
    assert p[:32].tolist() == [4] * 32 and p[32] == 5
    assert set(backend.numpy(old).tolist()) <= {0, 1, 2, 3}


@tegula.jit
def program_order_kernel(p_ptr, old_ptr, after_ptr, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    tl.store(p_ptr + i, i * 10)
    # Each lane updates an element another lane (thread) stored just before.
    old = tl.atomic_add(p_ptr + (BLOCK - 1 - i), 1)
    tl.store(old_ptr + i, old)
    tl.store(after_ptr + i, tl.load(p_ptr + i))


def test_program_order_around_atomics(backend):
    block = 256
    p = backend.zeros(block, np.int32)
    old = backend.zeros(block, np.int32)
    after = backend.zeros(block, np.int32)
    program_order_kernel[(1,)](p, old, after, BLOCK=block)
    i = np.arange(block)
    check(backend.numpy(old), (block - 1 - i) * 10, "int32", what="the atomic sees the earlier store")
    check(backend.numpy(after), i * 10 + 1, "int32", what="the later load sees the atomic")


# --- errors ------------------------------------------------------------------------------------


def compile_error(kernel, *args, **kwargs):
    with pytest.raises(tegula.CompilationError) as info:
        kernel[(1,)](*args, **kwargs)
    return str(info.value)


def located(message, line_text, column_text, text):
    """The message is at the line holding `line_text`, column of `column_text` there."""
    with open(__file__) as f:
        lines = f.read().splitlines()
    numbers = [k for k, s in enumerate(lines, 1) if line_text in s and s.lstrip().startswith("tl.")]
    assert len(numbers) == 1, line_text
    col = lines[numbers[0] - 1].index(column_text) + 1
    first = message.splitlines()[0]
    assert f"{os.path.basename(__file__)}:{numbers[0]}:{col}: error[E" in first, message
    assert first.endswith(f"]: {text}"), message  # error[CODE]: the codes are in test_diagnostic_codes.py
    assert "^" in message, message


@tegula.jit
def bad_sem_kernel(p_ptr):
    tl.atomic_add(p_ptr, 1, sem="seq_cst")  # bad sem


@tegula.jit
def bad_scope_kernel(p_ptr):
    tl.atomic_xchg(p_ptr, 1, scope="device")  # bad scope


@tegula.jit
def bad_dtype_kernel(p_ptr):
    tl.atomic_add(p_ptr, 1)  # bad dtype


@tegula.jit
def bitwise_float_kernel(p_ptr):
    tl.atomic_or(p_ptr, 1)  # bitwise float


@tegula.jit
def not_a_pointer_kernel(n):
    tl.atomic_cas(n, 0, 1)  # not a pointer


def test_error_invalid_sem():
    msg = compile_error(bad_sem_kernel, np.zeros(1, np.int32))
    located(msg, "# bad sem", "sem=", 'invalid sem "seq_cst" for tl.atomic_add')
    assert 'hint: use one of "relaxed", "acquire", "release", "acq_rel", or None for "acq_rel"' in msg


def test_error_invalid_scope():
    msg = compile_error(bad_scope_kernel, np.zeros(1, np.int32))
    located(msg, "# bad scope", "scope=", 'invalid scope "device" for tl.atomic_xchg')
    assert 'hint: use one of "cta", "gpu", "sys", or None for "gpu"' in msg


def test_error_unsupported_dtype():
    msg = compile_error(bad_dtype_kernel, np.zeros(4, np.int8))
    located(msg, "# bad dtype", "p_ptr", "tl.atomic_add does not support int8 elements")
    assert "hint: supported element types: int32, uint32, int64, uint64, fp16, bf16, fp32, fp64" in msg


def test_error_bitwise_on_floats():
    msg = compile_error(bitwise_float_kernel, np.zeros(4, np.float32))
    located(msg, "# bitwise float", "p_ptr", "tl.atomic_or does not support fp32 elements")
    assert "hint: supported element types: int32, uint32, int64, uint64" in msg


def test_error_not_a_pointer():
    msg = compile_error(not_a_pointer_kernel, 3)
    located(msg, "# not a pointer", "n,", "the pointer of tl.atomic_cas must be a pointer or a tile of pointers, but it is a scalar of type i32")


# --- CUDA code, compiled without a GPU --------------------------------------------------------------


def _require_nvrtc():
    try:
        _C.cuda_target(arch=90)
    except RuntimeError as e:
        pytest.skip(f"NVRTC cannot be loaded here: {e}")


def _ptx(kernel, arch, tmp_path, args, meta):
    request, _ = kernel._request_for(*args, **meta)
    options = _C.CompileOptions(backend="cuda", cuda_arch=arch, keep_stages=True, cache_dir=str(tmp_path))
    return _C.compile(request, options).ptx


def _every_op_args(name):
    z = np.zeros(8 * 128, np_dtype(name))
    return (z, z, z, z, 100), {"NPAD": 128, "BITWISE": name in INTEGERS, "BLOCK": 128}


# (kernel, args, meta, instructions the PTX must hold on sm_90, on sm_80)
CUDA_CASES = {
    "int32 ops": (every_op_kernel, *_every_op_args("int32"),
                  ["atom.global.gpu.acq_rel.add.u32", "atom.global.gpu.acq_rel.max.s32",
                   "atom.global.acq_rel.gpu.cas.b32", "atom.global.gpu.acq_rel.exch.b32",
                   "atom.global.gpu.acq_rel.xor.b32"], None),
    "uint64 ops": (every_op_kernel, *_every_op_args("uint64"),
                   ["atom.global.gpu.acq_rel.min.u64", "atom.global.gpu.acq_rel.and.b64"], None),
    "float32 ops": (every_op_kernel, *_every_op_args("float32"),
                    ["atom.global.gpu.acq_rel.add.f32", "atom.global.gpu.acq_rel.max.s32",
                     "atom.global.gpu.acq_rel.min.u32"], None),
    "float64 ops": (every_op_kernel, *_every_op_args("float64"), ["atom.global.gpu.acq_rel.add.f64"], None),
    "float16 ops": (every_op_kernel, *_every_op_args("float16"),
                    ["atom.global.gpu.acq_rel.add.noftz.f16", "atom.global.relaxed.gpu.cas.b16"], None),
    "bfloat16 ops": (every_op_kernel, *_every_op_args("bfloat16"),
                     ["atom.global.gpu.acq_rel.add.noftz.bf16"], ["atom.global.relaxed.gpu.cas.b16"]),
    "scalar counter": (scalar_counter_kernel, (np.zeros(1, np.int32), np.zeros(1, np.int32)),
                       {"MASK_ODD": True}, ["atom.global.gpu.acq_rel.add.u32", "bar.sync"], None),
    "replicated tile": (small_tile_kernel, (np.zeros(16, np.int32), np.zeros(384, np.int32)), {"N": 16},
                        ["atom.global.gpu.acq_rel.add.u32"], None),
    "spin lock": (locked_accumulate_kernel, (np.zeros(1, np.int32), np.zeros(1, np.int32),
                                             np.zeros(32, np.float32), np.zeros(32, np.float32), 24),
                  {"BLOCK": 32}, ["atom.global.acq_rel.gpu.cas.b32", "atom.global.gpu.acq_rel.exch.b32"], None),
    "sem and scope": (sem_scope_kernel, (np.zeros(33, np.int32), np.zeros(32, np.int32)),
                      {"SEM": "release", "SCOPE": "sys"}, ["atom.global.sys.release.add.u32",
                                                           "atom.global.release.sys.cas.b32"], None),
}


@pytest.mark.parametrize("arch", [90, 80])
@pytest.mark.parametrize("case", list(CUDA_CASES))
def test_cuda_ptx(tmp_path, case, arch):
    _require_nvrtc()
    kernel, args, meta, sm90, sm80 = CUDA_CASES[case]
    ptx = _ptx(kernel, arch, tmp_path, args, meta)
    want = sm90 if arch == 90 or sm80 is None else sm80
    for instruction in want:
        assert instruction in ptx, f"{case} on sm_{arch}: no {instruction}"


# --- the generated CUDA code, run on the host (tests/python/cuda_emulator.py) ------------------------
#
# The emulator runs each block's threads concurrently (blocks one after the
# other) with host atomics in place of PTX `atom` (cuda_emulator_atomic.h),
# so the owner and broadcast logic, the barriers and the helpers built on
# integer and compare-and-swap atomics are checked here without a GPU.


@pytest.mark.parametrize("name", ["int32", "uint64", "float32", "float64", "float16"])
def test_emulated_cuda_every_op(name):
    from cuda_emulator import emulate, require_emulator

    require_emulator()
    n, block = 200, 128
    programs = tegula.cdiv(n, block)
    npad = programs * block
    rng = rng_for("emulated", name)
    rows = 8 if name in INTEGERS else 5
    start = np.stack([data(rng, npad, name, specials=True) for _ in range(rows)])
    val = data(rng, n, name, specials=True)
    cmp = data(rng, n, name)
    cmp[::2] = start[4, :n:2]
    t, old = start.copy(), np.full((rows, npad), 7, np_dtype(name))
    emulate(every_op_kernel, (programs,), t, val, cmp, old, n, NPAD=npad, BITWISE=name in INTEGERS, BLOCK=block)
    v, c = np.zeros(npad, np_dtype(name)), np.zeros(npad, np_dtype(name))
    v[:n], c[:n] = val, cmp
    masked = np.arange(npad) >= n
    expected = {0: ref_add(start[0], v, name), 1: ref_max(start[1], v, name), 2: ref_min(start[2], v, name),
                3: v, 4: np.where(bits(start[4]) == bits(c), v, start[4])}
    if name in INTEGERS:
        expected.update({5: start[5] & v, 6: start[6] | v, 7: start[7] ^ v})
    for row, e in expected.items():
        if row != 4:
            e = np.where(masked, start[row], e)
        if row == 0 and name in FLOATS:
            check(t[row], e, name, ulps=0, atol=0, what=f"{name} row {row}")
        else:
            same_bits(t[row], e, f"{name} row {row}")
        e_old = start[row] if row == 4 else np.where(masked, np.zeros_like(start[row]), start[row])
        same_bits(old[row], e_old, f"{name} row {row} old values")


def test_emulated_cuda_replicas_and_scalars():
    from cuda_emulator import emulate, require_emulator

    require_emulator()
    start = np.arange(16, dtype=np.int32) * 10
    p, sums = start.copy(), np.zeros(3 * 128, np.int32)
    emulate(small_tile_kernel, (3,), p, sums, N=16, num_warps=4)
    check_small_tile(p, sums, start, 3)

    counter, old = np.full(1, 5, np.int32), np.full(6, -1, np.int32)
    emulate(scalar_counter_kernel, (6,), counter, old, MASK_ODD=True)
    assert counter[0] == 8 and old.tolist() == [5, 0, 6, 0, 7, 0]

    x = np.random.default_rng(1).integers(0, 5, 700).astype(np.int32)
    hist, got = np.zeros(5, np.int32), np.full(700, -1, np.int32)
    emulate(histogram_kernel, (1,), x, hist, got, 700, BLOCK=1024, num_warps=4)
    check(hist, np.bincount(x, minlength=5), "int32")
    for b in range(5):
        assert sorted(got[x == b].tolist()) == list(range(int((x == b).sum())))


def test_emulated_cuda_lock_and_program_order():
    from cuda_emulator import emulate, require_emulator

    require_emulator()
    x = np.arange(4 * 24, dtype=np.float32).reshape(4, 24)
    lock, count, acc = np.zeros(1, np.int32), np.zeros(1, np.int32), np.zeros(24, np.float32)
    emulate(locked_accumulate_kernel, (4,), lock, count, acc, x, 24, BLOCK=32)
    assert lock[0] == 0 and count[0] == 4
    check(acc, x.sum(axis=0), "float32", ulps=0, atol=0)

    p, old, after = np.zeros(256, np.int32), np.zeros(256, np.int32), np.zeros(256, np.int32)
    emulate(program_order_kernel, (1,), p, old, after, BLOCK=256)
    i = np.arange(256)
    check(old, (255 - i) * 10, "int32")
    check(after, i * 10 + 1, "int32")
