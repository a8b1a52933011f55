"""tegula.RecompileWarning: a kernel that compiles for many specializations in
one process says so once, naming what varies and what to do about it."""

import warnings

import numpy as np
import pytest

import tegula
import tegula.language as tl


@pytest.fixture
def check_on(monkeypatch):
    monkeypatch.setenv("TEGULA_RECOMPILE_WARNING", "4")


def _kernel():
    # A fresh kernel per test: the log belongs to the function.
    @tegula.jit
    def bump(x_ptr, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n, other=0) + 1, mask=offs < n)

    return bump


def _recompile_warnings(record):
    return [w for w in record if issubclass(w.category, tegula.RecompileWarning)]


def test_warns_once_naming_what_varies_at_the_callers_line(check_on):
    bump = _kernel()
    x = np.zeros(256, np.float32)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        for i in range(10):
            bump[(1,)](x, [1, 16, 7][i % 3], BLOCK=16 << (i % 2))  # the launch the warning points at
    found = _recompile_warnings(record)
    assert len(found) == 1
    text = str(found[0].message)
    assert "kernel 'bump' has compiled 4 specializations" in text
    assert "n (i32 equal to 1, i32 divisible by 16, i32)" in text and "BLOCK (16, 32)" in text
    assert "do_not_specialize=['n']" in text and "TEGULA_RECOMPILE_WARNING=0" in text
    assert found[0].filename == __file__


def test_a_constexpr_of_many_values_is_advised_to_be_rounded_first(check_on):
    """BLOCK sizes a tile here: the advice must not only say to make it a runtime argument, which
    tl.arange refuses."""
    bump = _kernel()
    x = np.zeros(256, np.float32)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        for block in (16, 32, 64, 128):
            bump[(1,)](x, 5, BLOCK=block)
    (found,) = _recompile_warnings(record)
    text = str(found.message)
    assert "BLOCK (16, 32, 64, 128)" in text
    assert ("a constexpr that takes many values (BLOCK) compiles once per value: round it to fewer values "
            "(a power of two), or, if it sets no tile shape, pass it as a runtime argument") in text


def test_the_same_specialization_again_and_a_failed_compile_do_not_count(check_on):
    bump = _kernel()
    x = np.zeros(64, np.float32)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        for _ in range(6):
            bump[(1,)](x, 5, BLOCK=16)
        for _ in range(3):
            with pytest.raises(tegula.CompilationError):
                bump[(1,)](x, 5, BLOCK=48)  # not a power of two: no kernel, no specialization
        bump[(1,)](x, 5, BLOCK=32)
    assert not _recompile_warnings(record)
    assert len(bump._specializations.seen) == 2


def test_an_autotuners_trials_do_not_count(check_on):
    configs = [tegula.Config({"BLOCK": 16 << i}) for i in range(6)]
    bump = tegula.autotune(configs=configs, key=["n"], warmup=1, rep=1)(_kernel())
    x = np.zeros(1024, np.float32)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        bump[(1,)](x, 100)
    assert not _recompile_warnings(record)


@pytest.mark.parametrize("setting", ["0", "off"])
def test_zero_turns_it_off_and_junk_keeps_the_default(monkeypatch, setting):
    monkeypatch.setenv("TEGULA_RECOMPILE_WARNING", setting)
    bump = _kernel()
    x = np.zeros(64, np.float32)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        for i in range(9):
            bump[(1,)](x, 3, BLOCK=1 << i)
    assert len(_recompile_warnings(record)) == (0 if setting == "0" else 1)
    said = [w for w in record if issubclass(w.category, RuntimeWarning) and "TEGULA_RECOMPILE_WARNING" in str(w.message)]
    assert len(said) == (0 if setting == "0" else 1)


@tegula.aggregate
class _Job:
    ptr: tl.tensor
    n: tl.tensor
    FLAG: tl.constexpr


def test_fields_of_aggregates_are_named_and_the_advice_fits_the_declaration(check_on):
    @tegula.jit
    def run(job, other):
        tl.store(job.ptr, job.n + job.FLAG)

    x = np.zeros(1, np.int32)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        for i in range(6):
            run[(1,)](_Job(x, [1, 16, 5][i % 3], i % 2), 0)
    text = str(_recompile_warnings(record)[0].message)
    assert "job.n (i32 equal to 1, i32 divisible by 16, i32)" in text and "job.FLAG (0, 1)" in text
    assert "do_not_specialize=['job']" in text


def test_the_setting_is_a_plain_count(monkeypatch):
    from tegula import _recompiles
    for text, expected in (("1", 2), ("3", 3), ("0", 0), ("3_0", 8), ("\u0663", 8), (" 5 ", 5)):
        monkeypatch.setenv("TEGULA_RECOMPILE_WARNING", text)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert _recompiles.threshold() == expected, text


def test_no_advice_where_a_second_compile_is_the_point(check_on):
    # Two dtypes, a flag, an optional pointer and two block sizes are each worth their own code: the warning
    # names them but advises nothing for them; an address that differs only in its alignment is advised.
    @tegula.jit
    def scale(x_ptr, w_ptr, n, FLAG: tl.constexpr, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs, mask=offs < n)
        if w_ptr is not None:
            x = x * tl.load(w_ptr + offs, mask=offs < n)
        if FLAG:
            x = x + 1
        tl.store(x_ptr + offs, x, mask=offs < n)

    f32, f64 = np.zeros(64, np.float32), np.zeros(64, np.float64)
    shifted = np.zeros(65, np.float32)[1:]
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        scale[(1,)](f32, None, 5, FLAG=False, BLOCK=16)
        scale[(1,)](f64, f64, 5, FLAG=True, BLOCK=16)
        scale[(1,)](shifted, None, 5, FLAG=False, BLOCK=32)
        scale[(1,)](f32, f32, 5, FLAG=True, BLOCK=32)
    text = str(_recompile_warnings(record)[0].message)
    assert "x_ptr (*f32 16-byte aligned, *f64 16-byte aligned, *f32 not 16-byte aligned)" in text, text
    assert "do_not_specialize_on_alignment=['x_ptr']" in text
    for unwanted in ("['w_ptr']", "(FLAG)", "(BLOCK)", "do_not_specialize=['n']"):
        assert unwanted not in text, text
