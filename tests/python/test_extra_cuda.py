"""tl.extra.cuda: globaltimer, smid, num_warps, num_threads, gdc_wait and
gdc_launch_dependents, with the meanings docs/language.md gives them on the
CPU (a monotonic nanosecond clock, the core the program runs on, the
launch's warps and threads as constants, no-op orderings) and their CUDA
code (special registers, griddepcontrol on sm_90)."""

import os
import time

import numpy as np
import pytest

import tegula
import tegula.language as tl
from ops_util import grid1


@tegula.jit
def clock_kernel(t_ptr, s_ptr, x_ptr, n, BLOCK: tl.constexpr):
    tl.extra.cuda.gdc_wait()
    start = tl.extra.cuda.globaltimer()
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    tl.store(x_ptr + offs, x * 2.0, mask=m)
    tl.extra.cuda.gdc_launch_dependents()
    end = tl.extra.cuda.globaltimer()
    tl.store(t_ptr + 2 * tl.program_id(0), start)
    tl.store(t_ptr + 2 * tl.program_id(0) + 1, end)
    tl.store(s_ptr + tl.program_id(0), tl.extra.cuda.smid())


def test_globaltimer_smid_and_ordering(backend):
    if backend.name != "cpu":
        pytest.skip("the CPU's meanings; CUDA's are the special registers (test_cuda_code)")
    n, block = 1000, 128
    programs = (n + block - 1) // block
    x = np.arange(n, dtype=np.float32)
    t = np.zeros(2 * programs, np.int64)
    s = np.full(programs, -1, np.int32)
    before = time.monotonic_ns()
    clock_kernel[grid1(n, block)](t, s, x, n, BLOCK=block)
    after = time.monotonic_ns()
    assert (x == 2 * np.arange(n, dtype=np.float32)).all()  # the gdc_* calls change nothing
    starts, ends = t[0::2], t[1::2]
    assert (before <= starts).all() and (starts <= ends).all() and (ends <= after).all()
    assert ((0 <= s) & (s < os.cpu_count())).all()


@tegula.jit
def threads_kernel(out_ptr, w_ptr):
    threads: tl.constexpr = tl.extra.cuda.num_threads()
    offs = tl.arange(0, threads)
    tl.store(out_ptr + offs, 1)
    tl.store(w_ptr, tl.extra.cuda.num_warps())


@pytest.mark.parametrize("warps", [1, 2, 8])
def test_num_threads_and_num_warps_are_the_launch_constants(backend, warps):
    out = backend.zeros(512, np.int32)
    w = backend.zeros(1, np.int32)
    threads_kernel[(1,)](out, w, num_warps=warps)
    out = backend.numpy(out)
    assert out.sum() == 32 * warps and (out[: 32 * warps] == 1).all()
    assert backend.numpy(w)[0] == warps


def test_cuda_code(tmp_path):
    from cuda_compile_util import compile_for_cuda

    for arch in (80, 90):
        source = compile_for_cuda(clock_kernel, "*i64:16, *i32:16, *fp32:16, i32, 128", arch, tmp_path,
                                  emit="cuda,ptx,ptxas")
        assert "%%globaltimer" in source and "%%smid" in source
        assert ("griddepcontrol.wait" in source) == (arch >= 90)
        assert ("griddepcontrol.launch_dependents" in source) == (arch >= 90)
    source = compile_for_cuda(threads_kernel, "*i32:16, *i32:16", 90, tmp_path, emit="cuda,ptx,ptxas", num_warps=8)
    assert "256" in source
