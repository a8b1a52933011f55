"""Triton's launch options, the compiled-kernel handle a launch returns
(`.asm`, `.metadata`), `None` and tuples as arguments, and Triton's dtype
attributes.

Every option Triton's launch and `triton.Config` accept is accepted; values
no Tegula backend can honour are refused with E0705 naming the option.
Results are checked against NumPy on random data on the CPU; the CUDA side
(maxnreg, PTX and cubin in `.asm`, ptxas's register count) through NVRTC,
which needs no GPU.
"""

import re
import sys
import types

import numpy as np
import pytest

import tegula
import tegula.language as tl
from tegula import _C


@tegula.jit
def scale_kernel(x_ptr, out_ptr, n, factor, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * factor, mask=mask)


def _data(n=1000, seed=3):
    return np.random.default_rng(seed).standard_normal(n).astype(np.float32)


def _launch(**options):
    x = _data()
    out = np.zeros_like(x)
    handle = scale_kernel[(tegula.cdiv(x.size, 128),)](x, out, x.size, 1.5, BLOCK=128, **options)
    np.testing.assert_allclose(out, x * np.float32(1.5), rtol=1e-6)
    return handle


# --- options every backend accepts -----------------------------------------------------------

@pytest.mark.parametrize("options", [
    {"num_ctas": 1},
    {"num_warps": 2, "num_stages": 2, "num_ctas": 1},
    {"maxnreg": None}, {"maxnreg": 64},
    {"launch_pdl": True}, {"launch_pdl": False},
    {"launch_cooperative_grid": False},
    {"debug": True}, {"debug": False}, {"debug": None},
    {"sanitize_overflow": True}, {"sanitize_overflow": False},
    {"enable_fp_fusion": False}, {"enable_reflect_ftz": True}, {"enable_fast_math": False},
    {"num_cpu_threads": 0}, {"num_cpu_threads": 2},
    {"ptx_version": None, "ir_override": None, "extern_libs": None, "arch": None, "ptx_options": None},
    {"cluster_dims": (1, 1, 1), "instrumentation_mode": "", "warp_size": 32},
    {"num_buffers_warp_spec": 0, "num_consumer_groups": 0, "reg_dec_producer": 0, "reg_inc_consumer": 0},
    {"max_num_imprecise_acc_default": None, "assume_in_bounds": False, "ukernels": None},
])
def test_triton_launch_options_are_accepted(options):
    _launch(**options)


def test_debug_keyword_compiles_a_debug_kernel():
    assert _launch(debug=True).debug is True
    assert _launch(debug=False).debug is False
    assert _launch().debug is scale_kernel.debug


def test_options_that_change_code_are_in_the_key():
    x = _data(64)
    out = np.zeros_like(x)
    keys = {scale_kernel._launcher.specialization(x, out, 64, 1.0, BLOCK=64, **options)
            for options in ({}, {"maxnreg": 32}, {"maxnreg": 40}, {"debug": True}, {"num_warps": 8})}
    assert len(keys) == 5
    # Options that change nothing share the kernel of the launch without them.
    plain = scale_kernel._launcher.specialization(x, out, 64, 1.0, BLOCK=64)
    for options in ({"num_ctas": 1}, {"launch_pdl": True}, {"sanitize_overflow": False}, {"ir_override": None}):
        assert scale_kernel._launcher.specialization(x, out, 64, 1.0, BLOCK=64, **options) == plain


def test_callable_grid_sees_the_options():
    x = _data()
    out = np.zeros_like(x)
    seen = {}

    def grid(meta):
        seen.update(meta)
        return (tegula.cdiv(meta["n"], meta["BLOCK"]),)

    scale_kernel[grid](x, out, x.size, 2.0, BLOCK=256, num_ctas=1, maxnreg=48, num_warps=2)
    np.testing.assert_allclose(out, x * np.float32(2.0), rtol=1e-6)
    assert seen["num_ctas"] == 1 and seen["maxnreg"] == 48 and seen["num_warps"] == 2


# --- refusals ----------------------------------------------------------------------------------

@pytest.mark.parametrize("options, fragment", [
    ({"num_ctas": 2}, "num_ctas=2 of kernel 'scale_kernel' asks for a cluster of 2 thread blocks"),
    ({"launch_cooperative_grid": True}, "launch_cooperative_grid=True of kernel 'scale_kernel' asks that every"),
    ({"ir_override": "kernel.ttgir"}, "ir_override='kernel.ttgir' of kernel 'scale_kernel' is not supported"),
    ({"cluster_dims": (2, 1, 1)}, "cluster_dims=(2, 1, 1) of kernel 'scale_kernel' is not supported"),
    ({"num_ctas": 0}, "num_ctas of kernel 'scale_kernel' must be a positive int, got 0"),
    ({"maxnreg": 0}, "maxnreg of kernel 'scale_kernel' must be a positive int or None, got 0"),
    ({"launch_pdl": 1}, "launch_pdl of kernel 'scale_kernel' must be a bool, got 1"),
    ({"debug": "yes"}, "debug of kernel 'scale_kernel' must be a bool or None, got 'yes'"),
    ({"num_cpu_threads": -1}, "num_cpu_threads of kernel 'scale_kernel' must be an int >= 0, got -1"),
])
def test_options_that_cannot_be_honoured_are_refused(options, fragment):
    x = _data(16)
    with pytest.raises(ValueError) as info:
        scale_kernel[(1,)](x, np.zeros_like(x), 16, 1.0, BLOCK=16, **options)
    assert fragment in str(info.value) and info.value.code == "E0705"
    with pytest.raises(ValueError):  # warmup takes the launch's path
        scale_kernel.warmup(x, np.zeros_like(x), 16, 1.0, BLOCK=16, grid=(1,), **options)


def test_unknown_keywords_are_still_refused():
    x = _data(16)
    with pytest.raises(TypeError, match="unexpected keyword argument 'num_ctaz'"):
        scale_kernel[(1,)](x, np.zeros_like(x), 16, 1.0, BLOCK=16, num_ctaz=1)


def test_config_takes_tritons_options():
    config = tegula.Config({"BLOCK": 128}, num_warps=4, num_stages=2, num_ctas=1, maxnreg=64, num_cpu_threads=0)
    assert config.all_kwargs() == {"BLOCK": 128, "num_warps": 4, "num_stages": 2, "num_ctas": 1, "maxnreg": 64,
                                   "num_cpu_threads": 0}
    # repr and str name what differs from the launch's defaults.
    assert repr(config) == "Config({'BLOCK': 128}, num_stages=2, maxnreg=64, num_cpu_threads=0)"
    assert str(config) == "BLOCK: 128, num_stages: 2, maxnreg: 64, num_cpu_threads: 0"
    with pytest.raises(ValueError, match="maxnreg must be a positive int or None"):
        tegula.Config({}, maxnreg=-3)


def test_a_config_reads_the_launch_defaults_as_tritons_does(backend):
    """Host code passes a config's options on to its own launches (torchao's int8 matmul passes
    num_warps, num_stages and num_ctas of configs that set only the first two)."""
    bare = tegula.Config({})
    assert (bare.num_warps, bare.num_stages, bare.num_ctas, bare.maxnreg) == (4, 3, 1, None)
    assert bare.all_kwargs() == {"num_warps": 4, "num_stages": 3, "num_ctas": 1} and str(bare) == "(defaults)"
    config = tegula.Config({"BLOCK": 64}, num_warps=2, num_stages=2)
    x = np.random.default_rng(3).standard_normal(100).astype(np.float32)
    out = backend.empty(100, np.float32)
    scale_kernel[(2,)](backend.array(x), out, 100, 2.0, num_warps=config.num_warps, num_stages=config.num_stages,
                       num_ctas=config.num_ctas, **config.kwargs)
    np.testing.assert_array_equal(backend.numpy(out), x * 2)


@tegula.autotune(configs=[tegula.Config({"BLOCK": 64}, num_ctas=1, maxnreg=32),
                          tegula.Config({"BLOCK": 256}, num_ctas=1, num_warps=2)], key=["n"])
@tegula.jit
def tuned_scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 3.0, mask=mask)


def test_autotune_launches_configs_with_tritons_options():
    x = _data(777)
    out = np.zeros_like(x)
    tuned_scale_kernel[lambda meta: (tegula.cdiv(777, meta["BLOCK"]),)](x, out, 777)
    np.testing.assert_allclose(out, x * np.float32(3.0), rtol=1e-6)


# --- the compiled-kernel handle ----------------------------------------------------------------

def test_warmup_compiles_without_running():
    x = _data(300, seed=5)
    out = np.full_like(x, -7.0)
    handle = scale_kernel.warmup(x, out, 300, 4.0, BLOCK=128, grid=(3,))
    assert np.all(out == -7.0)  # nothing ran
    launched = scale_kernel[(3,)](x, out, 300, 4.0, BLOCK=128)
    assert launched is handle  # the same specialization
    np.testing.assert_allclose(out, x * np.float32(4.0), rtol=1e-6)


def test_run_is_tritons_spelling_of_a_launch():
    x = _data(200, seed=8)
    out = np.zeros_like(x)
    handle = scale_kernel.run(x, out, 200, 0.5, BLOCK=64, grid=(4,), warmup=True)
    assert np.all(out == 0)
    assert scale_kernel.run(x, out, 200, 0.5, BLOCK=64, grid=(4,), num_ctas=1) is handle
    np.testing.assert_allclose(out, x * np.float32(0.5), rtol=1e-6)


def test_asm_holds_every_stage_by_name_on_the_cpu():
    handle = _launch()
    asm = handle.asm
    assert list(asm)[0] == "lowered"  # pipeline order: Tegula's stages first
    assert asm["lowered"].startswith("kernel @scale_kernel(%x_ptr: ptr<f32>")
    assert 'extern "C" void tegula_kernel(' in asm["cpp"]
    assert isinstance(asm["so"], bytes) and asm["so"][:4] == b"\x7fELF"
    assert "ptx" not in asm  # the CPU backend has none
    assert handle.asm.keys() == asm.keys()  # a second read gives the same


def test_metadata_on_the_cpu():
    handle = _launch(num_warps=2, num_stages=4, maxnreg=80)
    meta = handle.metadata
    assert meta.name == "scale_kernel" and meta.backend_name == "cpu"
    # num_stages and maxnreg change nothing the CPU builds: one kernel serves
    # every value, and its metadata says None rather than one launch's value.
    assert (meta.num_warps, meta.num_stages, meta.num_ctas, meta.maxnreg) == (2, None, 1, None)
    assert meta.shared == 0 and meta.enable_fp_fusion is True and meta.debug is False
    assert meta.n_regs is None and meta.n_spills is None  # no registers to count on the CPU
    assert handle.n_regs is None and handle.n_spills is None


def _require_nvrtc():
    try:
        _C.cuda_target(arch=90)
    except RuntimeError as e:
        pytest.skip(f"NVRTC cannot be loaded here: {e}")


def _cuda_kernel(tmp_path, **options):
    x = _data(64)
    request, _ = scale_kernel._request_for(x, np.zeros_like(x), 64, 1.0, BLOCK=64)
    return _C.compile(request, _C.CompileOptions(backend="cuda", cuda_arch=90, cache_dir=str(tmp_path), **options))


def test_cuda_asm_has_ptx_and_cubin(tmp_path):
    _require_nvrtc()
    kernel = _cuda_kernel(tmp_path)  # compiled without its stages: asm makes them
    asm = kernel.asm
    assert ".visible .entry tegula_kernel" in asm["ptx"] and "ld.global" in asm["ptx"]
    assert isinstance(asm["cubin"], bytes) and asm["cubin"][:4] == b"\x7fELF"
    assert "__global__" in asm["cuda"] and "lowered" in asm
    meta = kernel.metadata
    assert meta.backend_name == "cuda" and meta.num_warps == 4 and meta.num_threads == 128
    assert isinstance(meta.n_regs, int) and meta.n_regs > 0 and meta.n_spills == 0
    assert kernel.n_regs == meta.n_regs


def test_cuda_maxnreg_sets_the_entry_register_cap(tmp_path):
    _require_nvrtc()
    capped = _cuda_kernel(tmp_path, maxnreg=42)
    plain = _cuda_kernel(tmp_path)
    assert capped.key != plain.key
    ptx = capped.asm["ptx"]
    entry = ptx[ptx.index(".visible .entry"):ptx.index("{", ptx.index(".visible .entry"))]
    assert ".maxnreg 42" in entry
    assert ".maxnreg" not in plain.asm["ptx"]
    assert capped.metadata.maxnreg == 42 and capped.n_regs <= 42


# --- None as an argument ---------------------------------------------------------------------------

@tegula.jit
def affine_kernel(x_ptr, w_ptr, b_ptr, out_ptr, n, HAS_W: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    y = tl.load(x_ptr + offs, mask=mask)
    if HAS_W:
        y = y * tl.load(w_ptr + offs, mask=mask)
    if b_ptr is not None:
        y = y + tl.load(b_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, y, mask=mask)


@pytest.mark.parametrize("with_w, with_b", [(True, True), (True, False), (False, True), (False, False)])
def test_none_argument_is_a_constant(with_w, with_b):
    rng = np.random.default_rng(17)
    n = 1000
    x, w, b = (rng.standard_normal(n).astype(np.float32) for _ in range(3))
    out = np.zeros_like(x)
    affine_kernel[(tegula.cdiv(n, 128),)](x, w if with_w else None, b if with_b else None, out, n,
                                          HAS_W=with_w, BLOCK=128)
    expected = x * (w if with_w else 1) + (b if with_b else 0)
    np.testing.assert_allclose(out, expected, rtol=1e-6)


def test_none_argument_specializes_the_kernel():
    x = _data(64)
    launcher = affine_kernel._launcher
    with_b = launcher.specialization(x, None, x, x, 64, HAS_W=False, BLOCK=64)
    without_b = launcher.specialization(x, None, None, x, 64, HAS_W=False, BLOCK=64)
    assert with_b != without_b
    kernel = affine_kernel.warmup(x, None, None, x, 64, HAS_W=False, BLOCK=64)
    assert [name for name, _, _ in kernel.params] == ["x_ptr", "out_ptr", "n"]  # no parameter for None


@tegula.jit
def loads_none_kernel(x_ptr, w_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    w = tl.load(w_ptr + offs)  # w_ptr is None here
    tl.store(out_ptr + offs, tl.load(x_ptr + offs) * w)


def test_dereferencing_none_is_a_located_error():
    x = _data(16)
    with pytest.raises(tegula.CompilationError) as info:
        loads_none_kernel[(1,)](x, None, np.zeros_like(x), BLOCK=16)
    text = str(info.value)
    assert "test_launch_options.py" in text and "w_ptr + offs" in text and "None" in text


# --- tuples as constexprs ----------------------------------------------------------------------------

@tegula.jit
def reshape_kernel(x_ptr, out_ptr, SHAPE: tl.constexpr, NEW_SHAPE: tl.constexpr):
    rows = tl.arange(0, SHAPE[0])[:, None]
    cols = tl.arange(0, SHAPE[1])[None, :]
    x = tl.load(x_ptr + rows * SHAPE[1] + cols)
    y = tl.reshape(x, NEW_SHAPE)
    flat = tl.reshape(y, (SHAPE[0] * SHAPE[1],))
    tl.store(out_ptr + tl.arange(0, SHAPE[0] * SHAPE[1]), flat + len(NEW_SHAPE))


@pytest.mark.parametrize("shape, new_shape", [((8, 16), (16, 8)), ((8, 16), (128,)), ((4, 32), (2, 8, 8))])
def test_tuple_constexpr(shape, new_shape):
    x = np.random.default_rng(23).standard_normal(shape).astype(np.float32)
    out = np.zeros(x.size, np.float32)
    reshape_kernel[(1,)](x, out, SHAPE=shape, NEW_SHAPE=new_shape)
    np.testing.assert_array_equal(out, x.reshape(new_shape).reshape(-1) + len(new_shape))


def test_tuples_specialize_by_value():
    x = np.zeros((8, 16), np.float32)
    launcher = reshape_kernel._launcher
    assert (launcher.specialization(x, x, SHAPE=(8, 16), NEW_SHAPE=(16, 8)) !=
            launcher.specialization(x, x, SHAPE=(8, 16), NEW_SHAPE=(8, 16)))
    with pytest.raises(TypeError, match="must be an int, float, bool, str, None, tl.dtype, a function of the tile language, a @jit "
                       "function, a tuple of them or another hashable value the kernel does not use, got list"):
        reshape_kernel[(1,)](x, x, SHAPE=(8, [16]), NEW_SHAPE=(16, 8))


# --- dtypes ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype, info", [(tl.float16, np.finfo(np.float16)), (tl.float32, np.finfo(np.float32)),
                                         (tl.float64, np.finfo(np.float64))])
def test_float_dtype_attributes_match_numpy(dtype, info):
    assert dtype.fp_mantissa_width == info.nmant
    assert dtype.exponent_bias == info.maxexp - 1
    assert dtype.primitive_bitwidth == info.bits and dtype.itemsize == info.bits // 8
    assert dtype.is_floating() and dtype.is_standard_floating() and dtype.kind() == tl.dtype.KIND.FLOATING


def test_small_float_dtype_attributes():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    for dtype, np_type in ((tl.bfloat16, ml_dtypes.bfloat16), (tl.float8e4nv, ml_dtypes.float8_e4m3fn),
                           (tl.float8e5, ml_dtypes.float8_e5m2), (tl.float8e4b8, ml_dtypes.float8_e4m3fnuz),
                           (tl.float8e5b16, ml_dtypes.float8_e5m2fnuz)):
        info = ml_dtypes.finfo(np_type)
        assert dtype.fp_mantissa_width == info.nmant, dtype
        assert dtype.exponent_bias == -info.minexp + 1, dtype  # bias = 1 - min normal exponent
        assert dtype.primitive_bitwidth == info.bits


@pytest.mark.parametrize("name", ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"])
def test_int_dtype_attributes_match_numpy(name):
    dtype, info = getattr(tl, name), np.iinfo(getattr(np, name))
    assert dtype.int_bitwidth == info.bits == dtype.primitive_bitwidth
    assert dtype.get_int_max_value() == info.max and dtype.get_int_min_value() == info.min
    signed = name.startswith("int")
    assert dtype.is_int_signed() == signed and dtype.is_int_unsigned() == (not signed)
    assert dtype.int_signedness == (tl.dtype.SIGNEDNESS.SIGNED if signed else tl.dtype.SIGNEDNESS.UNSIGNED)
    assert getattr(dtype, f"is_{name}")() and dtype.kind() == tl.dtype.KIND.INTEGRAL
    assert tl.int1.kind() == tl.dtype.KIND.BOOLEAN and tl.int1.is_int1()


def test_dtype_repr_evaluates_back():
    import tegula as tegula_module  # noqa: F401  (the name eval reads)
    for name in ("int1", "int8", "uint32", "float16", "bfloat16", "float32", "float64"):
        dtype = getattr(tl, name)
        assert repr(dtype) == f"tegula.language.{name}"
        assert eval(repr(dtype), {"tegula": tegula_module}) is dtype
    assert repr(tl.pointer_type(tl.float32)) == "tegula.language.pointer_type(tegula.language.float32)"


def test_dtype_repr_under_a_triton_package_that_reexports_tegula(monkeypatch):
    triton = types.ModuleType("triton")
    triton.language = tl
    monkeypatch.setitem(sys.modules, "triton", triton)
    monkeypatch.setitem(sys.modules, "triton.language", tl)
    assert repr(tl.int8) == "triton.language.int8"
    assert eval(repr(tl.float32), {"triton": triton}) is tl.float32


@tegula.jit
def opaque_constexpr_kernel(x_ptr, TAG: tl.constexpr, USE: tl.constexpr):
    tl.static_print("compiling", TAG is None)
    if USE:
        tl.store(x_ptr, TAG + 1.0)
    else:
        tl.store(x_ptr + tl.arange(0, 4), tl.load(x_ptr + tl.arange(0, 4)) + 1.0)


def test_other_hashable_constexprs_key_the_compile_and_cannot_be_used(capfd):
    """Triton takes any value for a constexpr (its tests pass uuid.uuid4() to compile afresh): a value the
    kernel only holds keys the compile by its repr; computing with it is a located error."""
    import uuid

    x = np.zeros(4, np.float32)
    tag = uuid.uuid4()
    launcher = opaque_constexpr_kernel._launcher
    assert launcher.specialization(x, TAG=tag, USE=False) == launcher.specialization(x, TAG=tag, USE=False)
    assert launcher.specialization(x, TAG=tag, USE=False) != launcher.specialization(x, TAG=uuid.uuid4(), USE=False)
    for t in (tag, tag, uuid.uuid4()):
        opaque_constexpr_kernel[(1,)](x, TAG=t, USE=False)
    np.testing.assert_array_equal(x, 3.0)
    with pytest.raises(tegula.CompilationError, match=re.escape("the host object UUID('")):
        opaque_constexpr_kernel[(1,)](x, TAG=uuid.uuid4(), USE=True)
    for refused, name in (([1], "list"), ({1: 2}, "dict"), (np.zeros(2), "ndarray"), (print, "builtin_function_or_method")):
        with pytest.raises(TypeError, match=f"another hashable value the kernel does not use, got {name}"):
            opaque_constexpr_kernel[(1,)](x, TAG=refused, USE=False)
