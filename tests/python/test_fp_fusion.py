"""The enable_fp_fusion launch option (FMA contraction on the CUDA backend).

The CPU backend never contracts: the option is accepted there, so one launch
line runs on both backends, and changes neither the result nor the compiled
kernel. On CUDA it is part of the cache key; compiling for an architecture
(cuda_arch=90) needs NVRTC but no GPU, so those tests skip only where NVRTC
cannot be loaded.
"""

import numpy as np
import pytest

import tegula
import tegula.language as tl
from tegula import _C


@tegula.jit
def multiply_add_kernel(x_ptr, y_ptr, z_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    y = tl.load(y_ptr + offs, mask=m)
    z = tl.load(z_ptr + offs, mask=m)
    tl.store(out_ptr + offs, x * y + z, mask=m)


def _inputs(n=1000):
    rng = np.random.default_rng(11)
    return [rng.standard_normal(n).astype(np.float32) for _ in range(3)]


@pytest.mark.parametrize("fusion", [None, True, False])
def test_cpu_never_contracts(fusion):
    x, y, z = _inputs()
    out = np.zeros_like(x)
    options = {} if fusion is None else {"enable_fp_fusion": fusion}
    multiply_add_kernel[(tegula.cdiv(x.size, 256),)](x, y, z, out, x.size, BLOCK=256, **options)
    # Separately rounded product and sum, bit for bit, whatever the option says.
    np.testing.assert_array_equal(out, x * y + z)


def test_cpu_kernel_is_the_same_with_either_setting():
    x, y, z = _inputs(64)
    out = np.zeros_like(x)
    plain = multiply_add_kernel.inspect(x, y, z, out, 64, BLOCK=64)
    unfused = multiply_add_kernel.inspect(x, y, z, out, 64, BLOCK=64, enable_fp_fusion=False)
    assert plain.key == unfused.key
    assert plain.source == unfused.source


def test_option_must_be_a_bool():
    x, y, z = _inputs(8)
    with pytest.raises(ValueError) as info:
        multiply_add_kernel[(1,)](x, y, z, np.zeros_like(x), 8, BLOCK=8, enable_fp_fusion=1)
    assert str(info.value) == ("error[E0705]: enable_fp_fusion of kernel 'multiply_add_kernel' must be a bool, "
                               "got 1")


def _request():
    x, y, z = _inputs(64)
    kernel = multiply_add_kernel
    request, _ = kernel._request_for(x, y, z, np.zeros_like(x), 64, BLOCK=64)
    return request


def test_cpu_cache_key_ignores_the_option():
    request = _request()
    assert (_C.cache_key(request, _C.CompileOptions(backend="cpu", fp_fusion=False)) ==
            _C.cache_key(request, _C.CompileOptions(backend="cpu")))


def _require_nvrtc():
    try:
        _C.cuda_target(arch=90)
    except RuntimeError as e:
        pytest.skip(f"NVRTC cannot be loaded here: {e}")


def test_cuda_key_and_source_follow_the_option(tmp_path):
    _require_nvrtc()
    request = _request()
    options = {}
    for fusion in (True, False):
        options[fusion] = _C.CompileOptions(backend="cuda", cuda_arch=90, keep_stages=True,
                                            cache_dir=str(tmp_path), fp_fusion=fusion)
    assert _C.CompileOptions(backend="cuda").fp_fusion is True  # Triton's default
    assert _C.cache_key(request, options[True]) != _C.cache_key(request, options[False])
    fused = _C.compile(request, options[True])
    separate = _C.compile(request, options[False])
    assert fused.key != separate.key
    assert "__fmul_rn(" not in fused.source and " * " in fused.source
    assert "__fmul_rn(" in separate.source
    # The contraction NVRTC made (fma.rn.f32 in the PTX) only where it was allowed.
    assert "fma.rn.f32" in fused.ptx
    assert "fma.rn.f32" not in separate.ptx
