"""The pure-Python surface: language markers, dtypes, utilities, testing helpers."""

import numpy as np
import pytest

import tegula
import tegula.language as tl


def test_language_functions_are_markers():
    with pytest.raises(RuntimeError, match=r"^tl\.load can only be used inside a @tegula\.jit kernel$"):
        tl.load(None)
    with pytest.raises(RuntimeError, match=r"^tl\.exp can only be used inside a @tegula\.jit kernel$"):
        tl.math.exp(1.0)
    assert tl.exp is tl.math.exp
    for name in ["program_id", "num_programs", "arange", "zeros", "full", "where", "dot", "sum",
                 "max", "cumsum", "atomic_add", "atomic_cas", "rand", "sqrt", "rsqrt", "reshape",
                 "trans", "multiple_of", "static_range", "range", "device_print", "cast"]:
        assert callable(getattr(tl, name)), name


def test_dtypes_like_triton():
    assert str(tl.float32) == "fp32" and tl.float32.name == "fp32"
    assert str(tl.bfloat16) == "bf16" and str(tl.int1) == "int1" and str(tl.uint64) == "uint64"
    assert tl.float16.is_floating() and not tl.int32.is_floating()
    assert tl.int8.is_int_signed() and tl.uint8.is_int_unsigned()
    assert tl.float64.primitive_bitwidth == 64
    assert tl.float32 == tl.dtype("fp32") and hash(tl.float32) == hash(tl.dtype("fp32"))
    ptr = tl.pointer_type(tl.float16)
    assert ptr.element_ty is tl.float16 and str(ptr) == "pointer<fp16>" and ptr.is_ptr()
    assert repr(tl.float32) == "tegula.language.float32"


def test_constexpr_wraps_values():
    c = tl.constexpr(4)
    assert c.value == 4 and c == 4 and tl.constexpr(c).value == 4
    assert int(c) == 4 and repr(c) == "constexpr[4]"


@pytest.mark.parametrize("a, b, expected", [(0, 4, 0), (1, 4, 1), (8, 4, 2), (9, 4, 3)])
def test_cdiv(a, b, expected):
    assert tegula.cdiv(a, b) == expected


@pytest.mark.parametrize("n, expected", [(-5, 1), (0, 1), (1, 1), (2, 2), (3, 4), (1000, 1024),
                                         (1024, 1024), (1025, 2048)])
def test_next_power_of_2(n, expected):
    assert tegula.next_power_of_2(n) == expected


def test_runtime_stats_and_version():
    stats = tegula.runtime_stats()
    assert set(stats) == {"builds", "reused", "disk_hits", "disk_rejected", "frontend_runs"}
    assert tegula.__version__ == "0.1.0"
    assert issubclass(tegula.CompilationError, Exception)


def test_assert_close_passes_within_tolerance():
    x = np.linspace(0, 1, 100, dtype=np.float32)
    tegula.testing.assert_close(x, x + 1e-7)
    tegula.testing.assert_close(x.astype(np.float16), x.astype(np.float16))
    tegula.testing.assert_close(np.array([np.nan, 1.0]), np.array([np.nan, 1.0]))
    tegula.testing.assert_close(np.arange(5), np.arange(5))


def test_assert_close_reports_the_worst_element():
    expected = np.zeros((3, 4), dtype=np.float32)
    actual = expected.copy()
    actual[1, 2] = 0.5
    with pytest.raises(AssertionError) as info:
        tegula.testing.assert_close(actual, expected)
    message = str(info.value)
    assert "1 of 12 elements differ" in message
    assert "greatest absolute difference: 0.5 at index (1, 2)" in message


def test_assert_close_is_exact_for_integers():
    with pytest.raises(AssertionError, match="exact match"):
        tegula.testing.assert_close(np.array([1, 2, 3]), np.array([1, 2, 4]))


def test_assert_close_bfloat16_default_tolerance():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    x = np.array([1.0, 2.0, 3.0], dtype=np.float32)
    tegula.testing.assert_close(x.astype(ml_dtypes.bfloat16), x * (1 + 1e-3))
    with pytest.raises(AssertionError):
        tegula.testing.assert_close(x.astype(ml_dtypes.bfloat16), x * 1.1)


def test_assert_close_infinities_and_complex_values():
    """An infinite expected value allows no tolerance (inf <= inf would pass anything), and complex
    values compare as complex numbers, not through their real parts."""
    close = tegula.testing.assert_close
    close(np.array([1.0, np.inf, -np.inf]), np.array([1.0, np.inf, -np.inf]))
    for actual, expected in (([0.0], [np.inf]), ([-np.inf], [np.inf]), ([np.inf], [1e300])):
        with pytest.raises(AssertionError, match="greatest absolute difference: inf"):
            close(np.array(actual), np.array(expected))
    close(np.array([1 + 2j]), np.array([1 + 2j + 1e-9]))
    with pytest.raises(AssertionError, match="1 of 1 elements differ"):
        close(np.array([1 + 5j]), np.array([1 + 0j]))
    with pytest.raises(TypeError, match="assert_close compares numbers; the actual value has dtype <U1"):
        close(np.array(["a"]), np.array([1.0]))


def test_bench_arguments_are_checked():
    with pytest.raises(TypeError, match="the function to time must be callable, got int"):
        tegula.testing.do_bench(5)
    with pytest.raises(ValueError, match="warmup must be a time budget in ms >= 0, got inf"):
        tegula.testing.do_bench(lambda: None, warmup=float("inf"))
    with pytest.raises(TypeError, match="grad_to_none must be a list of tensors"):
        tegula.testing.do_bench(lambda: None, grad_to_none=5)


def test_assert_close_shape_mismatch():
    with pytest.raises(AssertionError, match=r"shapes differ: actual \(2,\), expected \(3,\)"):
        tegula.testing.assert_close(np.zeros(2), np.zeros(3))


def test_do_bench_returns_milliseconds():
    ms = tegula.testing.do_bench(lambda: sum(range(100)), warmup=1, rep=5)
    assert 0 < ms < 5
    lo, mid, hi = tegula.testing.do_bench(lambda: None, warmup=1, rep=2, quantiles=[0.2, 0.5, 0.8])
    assert lo <= mid <= hi
    assert isinstance(tegula.testing.do_bench(lambda: None, warmup=1, rep=1, return_mode="all"), list)


def test_console_script_runs_the_native_cli():
    import subprocess
    import sys

    from tegula import cli

    assert cli.executable().is_file()
    done = subprocess.run([sys.executable, "-m", "tegula.cli", "version"], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert tegula.__version__ in done.stdout


def test_dtype_name_lists_like_triton():
    assert tl.dtype.SINT_TYPES == ["int8", "int16", "int32", "int64"]
    assert tl.dtype.UINT_TYPES == ["int1", "uint8", "uint16", "uint32", "uint64"]
    assert tl.dtype.STANDARD_FP_TYPES == ["fp16", "bf16", "fp32", "fp64"]
    assert {"fp8e4nv", "fp8e5", "fp16", "bf16", "fp32", "fp64"} <= set(tl.dtype.FP_TYPES)
    kinds = list(map(tl.dtype, tl.dtype.SINT_TYPES + tl.dtype.UINT_TYPES + tl.dtype.FP_TYPES))
    assert all(d.is_int_signed() for d in kinds[:4]) and all(d.is_floating() for d in kinds[9:])
