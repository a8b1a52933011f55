"""A few compat kernels compiled by Tegula's CUDA backend through NVRTC for
sm_90 and sm_80, without a GPU: the patterns that stress code generation
(a spin lock in a while loop, dot with online softmax, block pointers,
int64 sort, a scan over a tuple). Skips where NVRTC cannot be loaded; runs
only for Tegula on the CPU (on a GPU the whole suite runs there).

`pytest tests/compat --compat-cuda-archs=90,80` does the same for every
kernel specialization the suite launches."""

import numpy as np
import pytest

from compat_kernels import matmul, norm, scan
from compat_util import RUNTIME


def compile_for_cuda(kernel, arch, args, constexprs):
    from tegula import _C

    request, _ = kernel._request_for(*args, **constexprs)
    options = _C.CompileOptions(backend="cuda", cuda_arch=arch)
    return _C.compile(request, options)


def f32(*shape):
    return np.zeros(shape, np.float32)


def f16(*shape):
    return np.zeros(shape, np.float16)


CASES = {
    "layer norm backward (spin lock)": (
        norm.layer_norm_bwd_dx_kernel,
        (f32(4, 300), f32(4, 300), f32(8, 300), f32(8, 300), f32(4, 300), f32(300), f32(4), f32(4),
         np.zeros(16, np.int32), 300, 300), {"GROUP_SIZE": 8, "BLOCK_N": 512}),
    "fused attention (causal)": (
        matmul.attention_fwd_kernel,
        (f16(3, 50, 32), f16(3, 50, 32), f16(3, 50, 32), f16(3, 50, 32), 0.17, 50, 1600, 32),
        {"HEAD_DIM": 32, "BLOCK_M": 32, "BLOCK_N": 16, "CAUSAL": True}),
    "block-pointer matmul": (
        matmul.matmul_block_ptr_kernel,
        (f16(90, 70), f16(70, 50), f16(90, 50), 90, 50, 70, 70, 1, 50, 1, 50, 1),
        {"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 32}),
    "top-k by int64 sort": (
        scan.topk_rows_kernel, (f32(9, 200), f32(9, 8), np.zeros((9, 8), np.int32), 200, 200),
        {"K": 8, "BLOCK": 256}),
    "associative scan over a tuple": (
        scan.linear_recurrence_kernel, (f32(4, 300), f32(4, 300), f32(4, 300), 300, 300), {"BLOCK": 512}),
}


@pytest.mark.skipif(RUNTIME != "tegula", reason="checks Tegula's CUDA backend")
@pytest.mark.parametrize("arch", [90, 80])
@pytest.mark.parametrize("case", list(CASES))
def test_compiles_for_cuda(rt, case, arch):
    if rt.is_cuda:
        pytest.skip("on a GPU the suite itself runs these kernels")
    from tegula import _C

    try:
        _C.cuda_target(arch=arch)
    except RuntimeError as e:
        pytest.skip(f"NVRTC cannot be loaded here: {e}")
    kernel, args, constexprs = CASES[case]
    compiled = compile_for_cuda(kernel, arch, args, constexprs)
    assert compiled.backend == "cuda" and compiled.backend_kind == "device"
