"""PyTorch's own Triton test kernels, `torch/testing/_internal/triton_utils.py` of the installed torch, unchanged
on Tegula, through the conformance shim's `triton` package, against torch references written here from what
each kernel computes.

torch's module defines its kernels only when `torch.utils._triton.has_triton(include_cpu=True)` holds: the
`triton` package imports, torch._inductor.config.triton_disable_device_detection is off, and one of torch's
registered device interfaces is available, Triton-capable and finds its backend in `triton.backends.backends`
(the CPU interface looks for "cpu"). The shim's table lists the backends this Tegula build has ("cpu", and
"cuda" under Triton's name "nvidia") with Tegula's driver classes, so the check passes as it would under a
Triton built with a CPU backend; nothing of torch is stood in. torch.testing._internal imports expecttest,
which must be installed.

Cases (every kernel the module defines; grids as torch's tests launch them, `(cdiv(n, BLOCK),)` or a
`lambda meta` over the autotuned block sizes; random data; sizes that are not powers of two, so the last
program of a masked kernel has a tail):

  - pointwise: add_kernel (float32, float16, int32), sub_kernel, mul2_kernel, mul2_inplace_kernel,
    add_kernel_with_scaling, add_kernel_with_import (`from triton.language import load, store`),
    add_kernel_out_of_order_fn2, add_4_times_kernel (stores in a `for` and a `while` loop), cond_op_kernel
    (program 0 adds, the others multiply), atomic_add_kernel (into a random output), add_kernel_with_boolean_param
    (a bool argument, both values), masked_add_kernel_with_bool_tensor (a torch.bool mask loaded as data);
  - optional arguments: add_kernel_with_optional_param (ARGS_PASSED "two", and "one" with None for in_ptr1),
    add_kernel_with_none_param_and_equal_to_1_arg (None with stride 1, and a stride of 2 with both inputs);
  - autotuned: add_kernel_autotuned, sub_kernel_autotuned, add_kernel_autotuned_weird_param_order (out_ptr after
    the tuned constexpr, passed by keyword), add_kernel_2d_autotuned (a 2-D grid; it reads in_ptr0 twice, as the
    element and its transpose), add_kernel_autotuned_with_unsupported_args (warmup, rep, early_config_prune),
    strange_config_matmul_kernel (autotuned on M_ptr, N, K; M read from a tensor; at M = 0 the 16-row config
    returns at once and the 128-row one runs 4096 rows whose strideless stores overlap, so what it leaves depends
    on the config the timing picks: here M = 1, where both configs compute c[n] = sum_k a[k] b[k + n], the
    kernel's strideless indexing, and M = 0 launched with the 16-row config alone, which stores nothing);
  - calls between kernels: indirection_kernel (ACTIVATION "mul2_inplace_kernel", "add_kernel", and neither),
    zero_negs (a @jit helper; called from a kernel written here);
  - strides: double_strided_kernel on the left and right halves of a split tensor (row stride larger than the
    row, the right half at a storage offset), unmasked, so the sizes are multiples of the blocks;
  - block pointers: add_kernel_with_block_ptr, kernel_with_block_ptr_2d (boundary_check on dimension 0);
  - tensor descriptors through the module's create_tensor_descriptor_shim: add_kernel_with_tma_1d_new_api,
    add_kernel_with_tma_2d_new_api (host descriptors from TensorDescriptor.from_tensor, blocks past the edges),
    add_kernel_on_device_tma_new_api (tl.make_tensor_descriptor in the kernel, workspace None as torch's test);
  - docstrings: kernel_with_docstring_double_quotes, kernel_with_docstring_single_quotes,
    kernel_with_backslash_in_docstring (ones up to numel; the rest of the buffer untouched).

Triton 3.2/3.3's descriptor API, which Triton itself removed (its 3.7 has neither
triton.tools.experimental_descriptor nor tl._experimental_descriptor_load; torch's tests skip those cases when
has_triton_experimental_host_tma() is false), runs as Tegula implements it (docs/language.md): host descriptors
from create_tensor_descriptor_shim(..., new_api=False) for add_kernel_with_tma_1d_old_api / _2d_old_api, and
descriptors written into a workspace by the kernel for add_kernel_on_device_tma_old_api, each against x + y.

Expected refusals, reported as `refused (expected)` and counted apart from the passes: the six inline-assembly
kernels (inline_asm_kernel_is_pure_true / _false and kernel_inline_asm_double_quotes / _single_quotes carry PTX,
kernel_inline_asm_rocm_* AMD GCN assembly), which the CPU backend refuses before it writes any code (E0805). A
refusal passes only with the error expected; an expected refusal that runs, or fails otherwise, is a FAIL.

A case passes when every output is within tol * (the reference's largest magnitude): float32 1e-6 (the kernels
add or scale once; the atomic add, two adds, 4e-6), float16 2e-3 (the matmul's float16 output against a float64
sum), integers, copies and untouched memory exactly. Prints one line per case (ok / FAIL / refused (expected), the
largest difference, each output's difference or the first line of the error) and the total. Kernels launch directly (`kernel[grid](...)`) on CPU tensors, so on the CPU backend, whose
refusals the expected ones are (on the CUDA backend the PTX kernels would run).

    .venv/bin/python tools/conformance/torch_triton_utils_ops.py [-k SUBSTRING] [--json OUT]
"""

import argparse
import json
import os
import pathlib
import sys
import warnings

SHIM = pathlib.Path(__file__).resolve().parent / "shim"
sys.path.insert(0, str(SHIM))
os.environ.setdefault("TEGULA_RECOMPILE_WARNING", "0")
warnings.filterwarnings("ignore", category=FutureWarning)

import torch  # noqa: E402

import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from comparisons import check, refusal  # noqa: E402

assert pathlib.Path(triton.__file__).is_relative_to(SHIM), f"the real Triton was imported: {triton.__file__}"

from torch.utils._triton import has_triton  # noqa: E402

if not has_triton(include_cpu=True):
    sys.exit("torch's has_triton(include_cpu=True) is false under the shim: triton_utils defines no kernels; "
             f"triton.backends.backends = {triton.backends.backends}")

from torch.testing._internal import triton_utils as tu  # noqa: E402

DEVICE = "cpu"
F16, F32, F64, I32, I64 = torch.float16, torch.float32, torch.float64, torch.int32, torch.int64
TOL = {F32: 1e-6, F16: 2e-3, I32: 0, I64: 0, torch.bool: 0}
SHORT = {F32: "float32", F16: "float16", I32: "int32"}
cdiv = triton.cdiv


def rand(*shape, dtype=F32):
    """Random values of `dtype` on the conformance device (integers in [-1000, 1000))."""
    if dtype.is_floating_point:
        return torch.randn(*shape, dtype=F32).to(dtype).to(DEVICE)
    return torch.randint(-1000, 1000, shape, dtype=dtype).to(DEVICE)


def grid1(n):
    """The 1-D grid of torch's tests for an autotuned kernel: one program per BLOCK_SIZE elements."""
    return lambda meta: (cdiv(n, meta["BLOCK_SIZE"]),)


# --- pointwise ---------------------------------------------------------------------------------------------------


def binary(kernel, op, dtype=F32, n=1001, block=128):
    def case():
        x, y = rand(n, dtype=dtype), rand(n, dtype=dtype)
        out = torch.full_like(x, 7)
        kernel[(cdiv(n, block),)](x, y, out, n, BLOCK_SIZE=block)
        yield {"out": (out, op(x, y), TOL[dtype])}
    return case


def mul2():
    def case():
        x = rand(999)
        out = torch.empty_like(x)
        tu.mul2_kernel[(cdiv(999, 64),)](x, out, 999, BLOCK_SIZE=64)
        yield {"out": (out, 2 * x, TOL[F32])}
    return case


def mul2_inplace():
    def case():
        x = rand(999)
        want = 2 * x
        tu.mul2_inplace_kernel[(cdiv(999, 64),)](x, 999, BLOCK_SIZE=64)
        yield {"x (in place)": (x, want, TOL[F32])}
    return case


def scaling(factor):
    def case():
        x, y = rand(1000), rand(1000)
        out = torch.empty_like(x)
        tu.add_kernel_with_scaling[(cdiv(1000, 256),)](x, y, out, 1000, factor, BLOCK_SIZE=256)
        yield {"out": (out, (x.double() + y.double()) * factor, TOL[F32])}
    return case


def out_of_order():
    def case():
        x, y = rand(333), rand(333)
        out = torch.empty_like(x)
        tu.add_kernel_out_of_order_fn2[(cdiv(333, 32),)](x, y, 333, out, BLOCK_SIZE=32)
        yield {"out": (out, x + y, TOL[F32])}
    return case


def cond_op():
    def case():
        n, block = 700, 128
        x, y = rand(n), rand(n)
        out = torch.empty_like(x)
        tu.cond_op_kernel[(cdiv(n, block),)](x, y, out, n, BLOCK_SIZE=block)
        want = x * y
        want[:block] = x[:block] + y[:block]
        yield {"out": (out, want, TOL[F32])}
    return case


def atomic_add():
    def case():
        n = 1003
        x, y, out = rand(n), rand(n), rand(n)
        want = out.double() + x.double() + y.double()
        tu.atomic_add_kernel[(cdiv(n, 128),)](x, y, out, n, BLOCK_SIZE=128)
        yield {"out += x + y": (out, want, TOL[F32] * 4)}
    return case


def boolean_param(add_xy):
    def case():
        n = 900
        x, y = rand(n), rand(n)
        out = torch.empty_like(x)
        tu.add_kernel_with_boolean_param[(cdiv(n, 128),)](x, y, out, n, add_xy, BLOCK_SIZE=128)
        yield {"out": (out, x + y if add_xy else x, TOL[F32])}
    return case


def bool_tensor_mask():
    def case():
        n = 1001
        x, y = rand(n), rand(n)
        keep = torch.rand(n, device=DEVICE) < 0.4
        out = torch.empty_like(x)
        tu.masked_add_kernel_with_bool_tensor[(cdiv(n, 256),)](x, y, keep, out, n, BLOCK_SIZE=256)
        yield {"out": (out, torch.where(keep, x + y, x), TOL[F32])}
    return case


# --- optional arguments ------------------------------------------------------------------------------------------


def optional_param(two):
    def case():
        n = 555
        x, y = rand(n), rand(n)
        out = torch.empty_like(x)
        tu.add_kernel_with_optional_param[(cdiv(n, 64),)](x, y if two else None, out, n,
                                                          ARGS_PASSED="two" if two else "one", BLOCK_SIZE=64)
        yield {"out": (out, x + y if two else x, TOL[F32])}
    return case


def none_param_equal_to_1(stride, two):
    def case():
        n = 421
        x, y = rand(n * stride), rand(n)
        out = torch.full_like(x, 5.0)
        tu.add_kernel_with_none_param_and_equal_to_1_arg[(cdiv(n, 64),)](
            x, y if two else None, out, n, stride, ARGS_PASSED="two" if two else "one", BLOCK_SIZE=64)
        want = out.clone()
        want[::stride] = x[::stride] + y if two else x[::stride]
        yield {"out": (out, want, TOL[F32])}
    return case


# --- autotuned ---------------------------------------------------------------------------------------------------


def autotuned(kernel, op, n=1000):
    def case():
        x, y = rand(n), rand(n)
        out = torch.empty_like(x)
        kernel[grid1(n)](x, y, out, n)
        yield {"out": (out, op(x, y), TOL[F32])}
    return case


def weird_param_order():
    def case():
        n = 123
        x, y = rand(n), rand(n)
        out = torch.empty_like(x)
        tu.add_kernel_autotuned_weird_param_order[grid1(n)](in_ptr0=x, in_ptr1=y, n_elements=n, out_ptr=out)
        yield {"out": (out, x + y, TOL[F32])}
    return case


def add_2d_autotuned():
    def case():
        xs, ys = 100, 70
        a, unused = rand(xs * ys), rand(xs * ys)
        out = torch.full_like(a, 3.0)
        grid = lambda meta: (cdiv(xs, meta["BLOCK_SIZE_X"]), cdiv(ys, meta["BLOCK_SIZE_Y"]))  # noqa: E731
        tu.add_kernel_2d_autotuned[grid](a, unused, out, xs, ys)
        # out[x + xs * y] = a[x + xs * y] + a[y + ys * x]: the (ys, xs) matrix plus the transpose of the (xs, ys) one
        want = a.view(ys, xs) + a.view(xs, ys).t()
        yield {"out": (out.view(ys, xs), want, TOL[F32])}
    return case


def strange_config_matmul():
    def case():
        n, k = 70, 50
        a, b = rand(k), rand(k + n - 1)
        m = torch.tensor([1], dtype=I32, device=DEVICE)
        c = torch.full((n,), 9.0, dtype=F16, device=DEVICE)
        grid = lambda meta: (cdiv(1, meta["BLOCK_SIZE_M"]) * cdiv(n, meta["BLOCK_SIZE_N"]),)  # noqa: E731
        tu.strange_config_matmul_kernel[grid](a, b, c, m, n, k)
        # M = 1: row 0 only; the kernel indexes a at m + k and b at k + n (no strides), so c[n] = sum_k a[k] b[k + n]
        want = torch.stack([(a.double() * b.double()[j:j + k]).sum() for j in range(n)])
        yield {"c (float16)": (c, want, TOL[F16])}
    return case


def strange_config_m0():
    def case():
        n, k = 70, 50
        a, b = rand(k), rand(k + n - 1)
        m = torch.zeros(1, dtype=I32, device=DEVICE)
        c = torch.full((n,), 9.0, dtype=F16, device=DEVICE)
        # The autotuner's first config, launched as the autotuner launches it: M = 0 and BLOCK_SIZE_M 16 return.
        tu.strange_config_matmul_kernel.fn[(cdiv(n, 16),)](a, b, c, m, n, k, BLOCK_SIZE_M=16, BLOCK_SIZE_N=16,
                                                            BLOCK_SIZE_K=16, GROUP_SIZE_M=4, num_warps=4,
                                                            num_stages=4)
        yield {"c (untouched)": (c, torch.full((n,), 9.0, dtype=F16, device=DEVICE), 0)}
    return case


# --- calls between kernels ---------------------------------------------------------------------------------------


def indirection(activation):
    def case():
        n = 777
        x = rand(n)
        x0 = x.clone()
        out = torch.empty_like(x)
        tu.indirection_kernel[(cdiv(n, 128),)](x, out, n, BLOCK_SIZE=128, ACTIVATION=activation)
        if activation == "mul2_inplace_kernel":  # doubles x in place, then copies it
            yield {"x (in place)": (x, 2 * x0, TOL[F32]), "out": (out, 2 * x0, TOL[F32])}
        else:  # add_kernel writes x + x to out, which the copy of x then overwrites; or only the copy
            yield {"x (untouched)": (x, x0, 0), "out": (out, x0, TOL[F32])}
    return case


@triton.jit
def zero_negs_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tu.zero_negs(tl.load(x_ptr + offs, mask=mask)), mask=mask)


def zero_negs():
    def case():
        x = rand(1001)
        out = torch.empty_like(x)
        zero_negs_kernel[(cdiv(1001, 128),)](x, out, 1001, BLOCK=128)
        yield {"out": (out, x.clamp_min(0), 0)}
    return case


# --- strides -----------------------------------------------------------------------------------------------------


def double_strided(half):
    def case():
        inp = rand(48, 192)
        left, right = torch.split(inp, [96, 96], dim=1)  # row stride 192; the right half at offset 96
        src = left if half == "left" else right
        out = torch.full((48, 96), 11.0, device=DEVICE)
        xb, yb = 32, 16
        tu.double_strided_kernel[(src.size(1) // xb, src.size(0) // yb)](
            in_ptr=src, out_ptr=out, in_y_stride=src.stride(0), out_y_stride=out.stride(0), X_BLOCK_SIZE=xb,
            Y_BLOCK_SIZE=yb)
        yield {"out": (out, src * 2.0, TOL[F32]), "input (untouched)": (inp, inp.clone(), 0)}
    return case


# --- block pointers ----------------------------------------------------------------------------------------------


def block_ptr_add():
    def case():
        n = 1000
        x, y = rand(n), rand(n)
        out = torch.empty_like(x)
        tu.add_kernel_with_block_ptr[(cdiv(n, 128),)](x, y, out, n, BLOCK_SIZE=128)
        yield {"out": (out, x + y, TOL[F32])}
    return case


def block_ptr_2d():
    def case():
        n = 300
        x = rand(n, 1)
        out = torch.full((n + 20, 1), 4.0, device=DEVICE)
        tu.kernel_with_block_ptr_2d[(cdiv(n, 64),)](x, out, n, BLOCK_SIZE=64)
        want = torch.cat([x, torch.full((20, 1), 4.0, device=DEVICE)])
        yield {"out (rows past n untouched)": (out, want, 0)}
    return case


# --- tensor descriptors ------------------------------------------------------------------------------------------


def tma_1d_new():
    def case():
        n, block = 1000, 128
        x, y = rand(n), rand(n)
        out = torch.full((n,), 5.0, device=DEVICE)
        descs = [tu.create_tensor_descriptor_shim(t, [block]) for t in (x, y, out)]
        tu.add_kernel_with_tma_1d_new_api[(cdiv(n, block),)](*descs, BLOCK_SIZE=block)
        yield {"out": (out, x + y, TOL[F32])}
    return case


def tma_2d_new():
    def case():
        m, n, bx, by = 60, 44, 32, 16
        x, y = rand(m, n), rand(m, n)
        out = torch.full((m, n), 5.0, device=DEVICE)
        descs = [tu.create_tensor_descriptor_shim(t, [bx, by]) for t in (x, y, out)]
        tu.add_kernel_with_tma_2d_new_api[(cdiv(m, bx), cdiv(n, by))](*descs, BLOCK_SIZE_X=bx, BLOCK_SIZE_Y=by)
        yield {"out": (out, x + y, TOL[F32])}
    return case


def on_device_tma_new():
    def case():
        m, n, block = 50, 44, 32
        a, b = rand(m, n), rand(m, n)
        out = torch.zeros_like(a)
        grid = lambda meta: (cdiv(m, meta["BLOCK_SIZE"]), cdiv(n, meta["BLOCK_SIZE"]))  # noqa: E731
        tu.add_kernel_on_device_tma_new_api[grid](a, b, out, m, n, None, BLOCK_SIZE=block)
        yield {"out": (out, a + b, TOL[F32])}
    return case


# --- docstrings --------------------------------------------------------------------------------------------------


def docstring(kernel):
    def case():
        numel = 250
        out = torch.full((numel + 6,), -2.0, device=DEVICE)
        kernel[(cdiv(numel, 64),)](out, numel, BLOCK_SIZE=64)
        want = torch.cat([torch.ones(numel, device=DEVICE), torch.full((6,), -2.0, device=DEVICE)])
        yield {"out (past numel untouched)": (out, want, 0)}
    return case


# --- expected refusals -------------------------------------------------------------------------------------------

INLINE_ASM = r"E0805.*inline_asm_elementwise"


def inline_asm_shift(kernel):
    def launch():
        x, y = rand(128, dtype=I32), rand(128, dtype=I32)
        z = torch.empty_like(x)
        kernel[(1,)](x, y, z, n=5, BLOCK=128)
    return launch


def inline_asm_cos(kernel):
    def launch():
        x = rand(300)
        out = torch.empty_like(x)
        kernel[(cdiv(300, 128),)](x, out, 300, BLOCK_SIZE=128)
    return launch


def tma_old_host(two_d):
    """Triton 3.2/3.3's host descriptors (create_tensor_descriptor_shim(..., new_api=False)): blocks past the
    edges of a 60 x 44 matrix, and 1000 elements in blocks of 128."""
    def case():
        shape, blocks = ((60, 44), [32, 16]) if two_d else ((1000,), [128])
        x, y = rand(*shape), rand(*shape)
        out = torch.full(shape, 5.0, device=DEVICE)
        descs = [tu.create_tensor_descriptor_shim(t, blocks, new_api=False) for t in (x, y, out)]
        if two_d:
            tu.add_kernel_with_tma_2d_old_api[(cdiv(60, 32), cdiv(44, 16))](*descs, BLOCK_SIZE_X=32, BLOCK_SIZE_Y=16)
        else:
            tu.add_kernel_with_tma_1d_old_api[(cdiv(1000, 128),)](*descs, BLOCK_SIZE=128)
        yield {"out": (out, x + y, TOL[F32])}
    return case


def on_device_tma_old():
    """Descriptors the kernel writes into a workspace (experimental_device_tensormap_create2d), every program
    writing the same three."""
    def case():
        a, b = rand(64, 64), rand(64, 64)
        out = torch.zeros_like(a)
        workspace = torch.zeros(3 * 128, dtype=torch.uint8, device=DEVICE)
        tu.add_kernel_on_device_tma_old_api[(2, 2)](a, b, out, 64, 64, workspace, BLOCK_SIZE=32)
        yield {"out": (out, a + b, TOL[F32])}
    return case


# --- the cases ---------------------------------------------------------------------------------------------------

CASES = [
    *[(f"add_kernel {SHORT[d]}", binary(tu.add_kernel, torch.add, d)) for d in (F32, F16, I32)],
    ("sub_kernel float32", binary(tu.sub_kernel, torch.sub, n=777, block=256)),
    ("mul2_kernel", mul2()),
    ("mul2_inplace_kernel", mul2_inplace()),
    ("add_kernel_with_scaling 1.7", scaling(1.7)),
    ("add_kernel_with_scaling -3 (an int)", scaling(-3)),
    ("add_kernel_with_import (load / store imported)", binary(tu.add_kernel_with_import, torch.add, n=613, block=64)),
    ("add_kernel_out_of_order_fn2", out_of_order()),
    ("add_4_times_kernel (for and while loops)", binary(tu.add_4_times_kernel, torch.add, n=517, block=128)),
    ("cond_op_kernel (program 0 adds, others multiply)", cond_op()),
    ("atomic_add_kernel", atomic_add()),
    ("add_kernel_with_boolean_param True", boolean_param(True)),
    ("add_kernel_with_boolean_param False", boolean_param(False)),
    ("masked_add_kernel_with_bool_tensor", bool_tensor_mask()),
    ("add_kernel_with_optional_param two", optional_param(True)),
    ("add_kernel_with_optional_param one, in_ptr1 None", optional_param(False)),
    ("add_kernel_with_none_param_and_equal_to_1_arg None, stride 1", none_param_equal_to_1(1, False)),
    ("add_kernel_with_none_param_and_equal_to_1_arg two, stride 2", none_param_equal_to_1(2, True)),
    ("add_kernel_autotuned", autotuned(tu.add_kernel_autotuned, torch.add)),
    ("sub_kernel_autotuned", autotuned(tu.sub_kernel_autotuned, torch.sub, n=1234)),
    ("add_kernel_autotuned_weird_param_order", weird_param_order()),
    ("add_kernel_2d_autotuned 100 x 70", add_2d_autotuned()),
    ("add_kernel_autotuned_with_unsupported_args", autotuned(tu.add_kernel_autotuned_with_unsupported_args, torch.add,
                                                             n=999)),
    ("strange_config_matmul_kernel M=1 N=70 K=50", strange_config_matmul()),
    ("strange_config_matmul_kernel M=0, 16-row config (returns early)", strange_config_m0()),
    ("indirection_kernel mul2_inplace_kernel", indirection("mul2_inplace_kernel")),
    ("indirection_kernel add_kernel", indirection("add_kernel")),
    ("indirection_kernel neither", indirection("identity")),
    ("zero_negs (from a kernel written here)", zero_negs()),
    ("double_strided_kernel left half (row stride 192)", double_strided("left")),
    ("double_strided_kernel right half (storage offset 96)", double_strided("right")),
    ("add_kernel_with_block_ptr", block_ptr_add()),
    ("kernel_with_block_ptr_2d", block_ptr_2d()),
    ("add_kernel_with_tma_1d_new_api", tma_1d_new()),
    ("add_kernel_with_tma_2d_new_api 60 x 44", tma_2d_new()),
    ("add_kernel_on_device_tma_new_api 50 x 44", on_device_tma_new()),
    ("add_kernel_with_tma_1d_old_api (Triton 3.2/3.3 host descriptors)", tma_old_host(False)),
    ("add_kernel_with_tma_2d_old_api 60 x 44 (Triton 3.2/3.3 host descriptors)", tma_old_host(True)),
    ("add_kernel_on_device_tma_old_api (descriptors written in the kernel)", on_device_tma_old()),
    *[(name, docstring(getattr(tu, name))) for name in ("kernel_with_docstring_double_quotes",
                                                         "kernel_with_docstring_single_quotes",
                                                         "kernel_with_backslash_in_docstring")],
]

REFUSALS = [
    *[(name, inline_asm_shift(getattr(tu, name)), INLINE_ASM) for name in ("inline_asm_kernel_is_pure_true",
                                                                          "inline_asm_kernel_is_pure_false")],
    *[(name, inline_asm_cos(getattr(tu, name)), INLINE_ASM) for name in ("kernel_inline_asm_double_quotes",
                                                                        "kernel_inline_asm_single_quotes",
                                                                        "kernel_inline_asm_rocm_double_quotes",
                                                                        "kernel_inline_asm_rocm_single_quotes")],
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-k", dest="only", help="run the cases whose name contains this")
    parser.add_argument("--json", type=pathlib.Path, help="write every case's outcome here")
    args = parser.parse_args()
    torch.manual_seed(0)
    results = []
    for name, case in CASES:
        if not args.only or args.only in name:
            check(results, name, case, stages=("run",))
    for name, launch, expected in REFUSALS:
        if not args.only or args.only in name:
            refusal(results, name, launch, expected)
    width = max(len(r[0]) for r in results) if results else 10
    for name, status, worst, text in results:
        print(f"{name:<{width}}  {status:<18}  {worst:9.2e}  {text}")
    passed = sum(r[1] == "ok" for r in results)
    refused = sum(r[1] == "refused (expected)" for r in results)
    failed = len(results) - passed - refused
    print(f"{passed} of {len(results) - refused} cases match; {refused} refused as expected; {failed} failed")
    if args.json:
        args.json.write_text(json.dumps([{"case": n, "status": s, "worst": None if w != w else w, "text": t}
                                         for n, s, w, t in results], indent=1))
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
