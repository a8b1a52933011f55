"""The stand-in `triton` package of tools/conformance/shim: the module paths host code imports from
Triton (torch._inductor's among them: triton.backends.compiler, triton.compiler.compiler,
triton.runtime.cache) lead to Tegula's objects, and torch's helper module for generated kernels
loads through it and its helpers compile. Each check runs in a fresh interpreter, since the shim
takes the name `triton` for the process."""

import os
import pathlib
import subprocess
import sys
import textwrap

import pytest

SHIM = pathlib.Path(__file__).resolve().parents[2] / "tools" / "conformance" / "shim"


def run_with_shim(code: str, tmp_path: pathlib.Path) -> str:
    script = tmp_path / "with_shim.py"  # a file: kernels need their source
    script.write_text(textwrap.dedent(code))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(SHIM), os.environ.get("PYTHONPATH")])))
    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_triton_module_paths_lead_to_tegula(tmp_path):
    out = run_with_shim("""
        import tegula, tegula.compiler, tegula.runtime
        import triton.backends.compiler, triton.compiler.compiler, triton.runtime.cache
        from triton.compiler import CompiledKernel
        from triton.runtime.autotuner import OutOfResources
        from triton.runtime.jit import JITFunction, KernelInterface
        assert CompiledKernel is tegula.compiler.CompiledKernel is triton.compiler.compiler.CompiledKernel
        assert triton.compiler.compiler.ASTSource is tegula.compiler.ASTSource
        assert triton.backends.compiler.GPUTarget is tegula.runtime.GPUTarget
        # Reachable after `import triton` alone, as host code reads it (torch's create_tensor_descriptor_shim).
        assert triton.tools.tensor_descriptor.TensorDescriptor is tegula.TensorDescriptor
        # Triton's table of built backends lists Tegula's, under Triton's names, with Tegula's drivers.
        from tegula.runtime.driver import _CpuDriver, _CudaDriver
        names = {"cpu": "cpu", "cuda": "nvidia"}
        assert sorted(triton.backends.backends) == sorted(names[b] for b in tegula._C.backends())
        assert triton.backends.backends["cpu"].driver is _CpuDriver and tegula.backends.backends == {}
        if "nvidia" in triton.backends.backends:
            assert triton.backends.backends["nvidia"].driver is _CudaDriver
        assert OutOfResources is tegula.OutOfResources and KernelInterface is tegula.KernelInterface
        key = triton.runtime.cache.triton_key()
        assert key.startswith(tegula.__version__) and key == triton.runtime.cache.triton_key()
        print("ok")
    """, tmp_path)
    assert out.strip() == "ok"


def test_torch_finds_the_cpu_backend_and_its_triton_test_kernels_run(tmp_path):
    # torch's has_triton(include_cpu=True) asks its CPU device interface, which looks for "cpu" in
    # triton.backends.backends; torch.testing._internal.triton_utils defines its kernels only then.
    pytest.importorskip("torch")
    pytest.importorskip("expecttest")  # torch.testing._internal imports it
    out = run_with_shim("""
        import torch
        from torch.utils._triton import has_triton
        from torch._inductor.runtime import triton_helpers
        import triton
        from torch.testing._internal import triton_utils

        assert has_triton(include_cpu=True)
        triton_helpers.set_driver_to_cpu()  # Inductor's switch: the "cpu" entry's driver becomes the active one
        assert triton.runtime.driver.active.get_current_target().backend == "cpu"
        torch.manual_seed(0)
        x, y = torch.randn(1001), torch.randn(1001)
        out = torch.empty_like(x)
        triton_utils.add_kernel[(triton.cdiv(1001, 128),)](x, y, out, 1001, BLOCK_SIZE=128)
        torch.testing.assert_close(out, x + y, rtol=0, atol=0)
        print("ok")
    """, tmp_path)
    assert out.strip() == "ok"


def test_torch_helpers_for_generated_kernels_load_and_compile(tmp_path):
    pytest.importorskip("torch")
    out = run_with_shim("""
        import numpy as np
        import triton
        import triton.language as tl
        from torch._inductor.runtime import triton_helpers

        @triton.jit
        def argmax_rows(x_ptr, out_ptr, xnumel, r0_numel, XBLOCK: tl.constexpr, R0_BLOCK: tl.constexpr):
            xindex = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)[:, None]
            xmask = xindex < xnumel
            r0_index = tl.arange(0, R0_BLOCK)[None, :]
            r0_mask = r0_index < r0_numel
            tmp0 = tl.load(x_ptr + (r0_index + r0_numel * xindex), r0_mask & xmask, other=0.0)
            tmp1 = tl.where(r0_mask & xmask, tmp0, float("-inf"))
            tmp2 = tl.broadcast_to(r0_index, tmp1.shape)
            _, tmp3 = triton_helpers.max_with_index(tmp1, tmp2, 1)
            tl.store(out_ptr + xindex, tmp3[:, None], xmask)

        x = np.random.default_rng(3).standard_normal((13, 45)).astype(np.float32)
        out = np.zeros(13, np.int32)
        argmax_rows[(4,)](x, out, 13, 45, XBLOCK=4, R0_BLOCK=64)
        np.testing.assert_array_equal(out, x.argmax(1))
        print("ok")
    """, tmp_path)
    assert out.strip() == "ok"
