"""pytorch-labs/applied-ai's Triton kernels on Tegula, through the conformance shim's `triton` package, against
torch float64 references written here from the math. applied-ai is a collection of standalone kernel files (no
package); each file is loaded on its own from the checkout, unchanged:

  - kernels/triton/inference/fp8/splitk_gemm_fp8.py: `gemm_split_k` (float8 e4m3 split-K GEMM, split 4, fp16
    atomic_add of the partial sums);
  - kernels/triton/inference/fp8/scaled_fp8_gemm.py: `scaled_gemm_splitk` (the same with per-tensor scales and a
    column-major launch), launched with scaled_mm_splitk's configuration: the wrapper computes C but has no
    `return c`, so the harness makes the launch itself, argument for argument;
  - kernels/triton/inference/fp8/float8_groupwise_quant.py: `float8_groupwise_quantize` (1 x 128 groups, global
    tl.constexpr FP8_MAX / EPSILON), checked bit for bit against torch's float8_e4m3fn rounding of x / scale;
  - kernels/triton/inference/gptq/splitk_dequant_gemm.py (`matmul_split_k_kernel`), gptq/a100_qlinear.py
    (`_a100_quantized_matmul`) and gptq/h100_qlinear.py (`_h100_quantized_matmul`, block pointers): int4 GPTQ
    dequantizing GEMMs (packed int32 weights and zeros, fp16 scales, groups of 128), launched with their wrappers'
    configurations except where noted: matmul_split_k's wrapper reads the launch's n_regs / n_spills / shared /
    asm['ptx'] (CUDA compiler results) and writes them to ./matmul_split_k.txt, a100_qlinear's does the same, and
    both qlinear wrappers pass block_size_k 256 over groups of 128, so the kernels' `groupsize // block_size_k`
    is 0 and `k // 0` follows (undefined on any backend): the qlinear cases use block_size_k 128. a100_qlinear.py
    ends in `a100_qlinear = a100_qlinear.apply5d4` (an AttributeError): its code is run and that last
    statement's error caught; the kernel is defined by then. h100_qlinear's store masks rows with `< n`, so the
    case has m == n. None of the three masks its loads along M / N / K (a100 wraps rows with `% m`), so m, n and
    k are whole blocks (48 / 96, 96, 768 / 1536: not powers of two);
  - kernels/triton/inference/col_major_moe_gemm/v0_moe_fused.py, v1_moe_fused.py, v2_moe_fused.py: `fused_moe`
    (the two expert GEMMs of a top-k MoE layer, SiLU-and-mul between them; v1 split-K with atomic_add, v2 a
    column-major launch), float16 and bfloat16, prefill and decode configurations. v2's col_major maps pid to
    (pid % grid_n, pid // grid_m), a bijection onto the blocks only when grid_m == grid_n, so the v2 case
    picks sizes where both GEMMs have as many blocks along EM (the sorted-token buffer) as along N;
  - kernels/triton/training/rms_norm/fused_rms_norm.py: `fused_rms_norm_fn` forward and backward (the backward's
    per-"SM" partial weight gradients);
  - kernels/triton/training/fused_softmax/softmax.py and tutorials/triton/kernels/fused_softmax.py:
    `fused_softmax` forward and backward. The backward passes (dx, probs, grad) to a kernel whose parameters are
    (output, grad, input), so the kernel reads the incoming gradient g as the probabilities and returns
    p*g - g*sum(p*g), not p*g - p*sum(p*g): the library's bug, on a GPU too. The case checks the kernel against
    what that call computes (and says so in its name);
  - kernels/triton/inference/mamba/causal_1d_conv/causal_1d_conv/causal_1d_conv.py: `causal_conv1d_fn` forward
    (channel-last layout, bias, SiLU, initial states; its backward calls an undefined causal_conv1d_bwd);
  - kernels/triton/inference/paged_attention/attention_triton.py: `paged_attention_triton_v1` with one sequence
    (its query offset is seq_idx * num_seqs + head_idx * HEAD_SIZE, right only for sequence 0; v2 reads
    `weighted_values` before assigning it and compiles nowhere);
  - kernels/triton/inference/flash_attention/stay_attention.py: `flash_fn` (a persistent FlashAttention; each
    program keeps its running max and sum across its query tiles, so it is right only with one query tile per
    program: the case sets the multiprocessor count to the number of tiles, see the stand-ins);
  - kernels/triton/inference/torch_compile/flash_backward.py: `attention` (the non-causal forward, a head size
    padded to a power of two) and the custom ops `flash` (causal forward) and `flash_bwd` (what its registered
    backward calls: the dk / dv and dq kernels of Triton's tutorial). The two custom ops are called through
    their Python functions (CustomOpDef._init_fn, the function the decorator wrapped): torch runs a custom op's
    backend function under torch._disable_dynamo, which imports torch._dynamo and Inductor, which import
    triton.backends, absent from the stand-in package.

  - kernels/MoE/group_GEMM/triton/tgroup_gemm_forward.py (`_kernel_grouped_gemm`, bfloat16, and
    `_kernel_grouped_gemm_fp8_rowwise`, float8 e4m3 with row and column scales) and tgroup_gemm_backwards.py
    (`_kernel_grouped_gemm_backward_x_scheduled`, `_kernel_grouped_gemm_backward_w_scheduled`): persistent
    grouped GEMMs over groups of rows of different sizes (one empty), on their non-TMA paths
    (USE_TMA_LOAD = USE_TMA_STORE = False), launched directly with their wrappers' blocks and grids: the
    forward wrapper sets both TMA switches on and raises without TMA descriptors, and the backward wrapper
    raises without CUDA and catches any kernel error, falling back to PyTorch for grad_x.

  - the TMA kernels (Triton 3.0-3.3's host descriptors, tl._experimental_descriptor_load / store and
    descriptors written in the kernel): fp8/tma_gemm.py's `matmul` wrapper (descriptors filled into np.int8
    arrays, Triton 3.0's form, copied to tensors; tails in M, N and K); needs_perf_help/
    fp8_rowwise_tma_persistent.py's `_kernel_matmul_fp8_row_tma_persistent`, launched directly with
    matmul_fp8_row(tma_persistent=True)'s blocks, five descriptors and persistent grid (the wrapper falls back
    to torch on CPU tensors and calls prep_matmul, which the file does not define: C bfloat16, as FBGEMM's).
    The kernel casts C to C_ptr.dtype.element_ty, int8 for the wrapper's int8 descriptor tensor: that case
    fails by the library's bug (report()'s library dict); two more pass C's descriptor as a bfloat16 view of
    the same bytes; dev/triton_groupGEMM/groupgemm.py's `grouped_gemm` / `grouped_gemm_fp8_rowwise` wrappers
    (autotuned, TMA loads through tma_utils' TmaAutoTuneHelper, configs cut to one its prune keeps);
    tgroup_gemm_forward.py's TMA paths: its wrappers (TMA loads and stores) and the kernels launched directly
    with TMA loads and the pointer store. The wrappers' in-kernel output descriptors have rows N apart where
    y's are N * G (a descriptor has no stride argument): the library's bug, on a GPU too; those cases check
    what that layout writes. tgroup_gemm_backwards.py's wrapper sets USE_TMA_STORE False and its
    USE_TMA_LOAD does nothing: its kernels' TMA store paths, which no wrapper selects, are not run (left for
    later: their in-kernel descriptors take a load_size computed at run time).

Not covered: gptq/mixtral's w4a16_fused_moe_kernel (its store writes C rows at the
sorted-slot index, unmasked, past C's rows), gptq/small_benchmark_cuda_graphs.py (marlin and auto_gptq at
import), the tutorials' vector_add (its wrapper calls a.is_cuda() on a property) and
dev/triton_groupGEMM/triton_tutorial_groupgemm.py (it runs 1024-cubed GEMMs and benchmarks at import).

The library is not part of Tegula; point this at a checkout (git archive of pytorch-labs/applied-ai; written
against commit 4f8c39eb70d92e3848c65347ca077c8e723c74fd; einops must be importable):

    TEGULA_CONFORMANCE_DEVICE=cpu .venv/bin/python tools/conformance/applied_ai_ops.py <applied-ai checkout>

What the files import or ask of CUDA that a CPU machine lacks is stood in for (none of it a Triton kernel):

  - vllm._C.ops (the MoE files): moe_align_block_size (vLLM's CUDA op; here in torch: token slots sorted by
    expert, each expert's run padded to the block with the sentinel topk_ids.numel(), one expert id per block,
    the padded total) and silu_and_mul (silu(x[:, :d]) * x[:, d:]);
  - triton.ops.matmul_perf_model (Triton 3.0's, removed in 3.1; fp8_rowwise_tma_persistent.py imports its
    early_config_prune and estimate_matmul_time and uses neither): placeholders that raise;
  - torch.cuda.current_device() (groupgemm.py's early_config_prune asks it): 0;
  - torch.cuda.get_device_properties(): multi_processor_count from the case (5 for the RMS norm backward's
    per-SM partial sums, the tile count for stay_attention, else 2);
  - a torch function mode maps `device="cuda"` (a keyword argument of any torch function) to
    TEGULA_CONFORMANCE_DEVICE; without a GPU, torch.cuda.device(None) (causal_1d_conv enters it with a CPU
    tensor's device index) is a null context;
  - the autotuned kernels' config lists are cut, by setting their autotuners' `configs` (an attribute Triton's
    Autotuner has too): fused_rms_norm's two kernels keep num_warps 1 and 4 of their six, causal_1d_conv keeps
    BLOCK_M x BLOCK_N 32 x 64 and 64 x 32 of its eleven.
  - what the files print (configs, tl.static_print shapes, problem sizes) is swallowed, Python's stdout and
    the process's.

kernels/MoE/group_GEMM/triton/utils/tma_utils.py is the checkout's own, imported as `tma_utils` (both
group_GEMM files and groupgemm.py import it by that name; the two copies are the same file).

Result on the CPU backend, 2026-12-07: 53 of 54 lines match, the other failing by the library's own bug.

A case passes when every output is within tol * (the reference's largest magnitude): float32 1e-5, float16
1e-2, bfloat16 3e-2 (looser where the kernels round partial sums to float16: noted per case). Prints one line per
case (the largest absolute difference from the reference over the case's outputs, each output's difference, or
the first line of the error) and a summary line. Tegula's recompile warnings are off
unless TEGULA_RECOMPILE_WARNING is set (the kernels compile one specialization per dtype, head size and block
configuration, by design).
"""

import ast
import contextlib
import io
import os
import pathlib
import sys
import types

SHIM = pathlib.Path(__file__).resolve().parent / "shim"
if len(sys.argv) != 2:
    sys.exit("usage: applied_ai_ops.py <applied-ai checkout>")
AAI = pathlib.Path(sys.argv[1]).resolve()
INF = "kernels/triton/inference/"
FILES = {
    "splitk_gemm_fp8": INF + "fp8/splitk_gemm_fp8.py",
    "scaled_fp8_gemm": INF + "fp8/scaled_fp8_gemm.py",
    "float8_groupwise_quant": INF + "fp8/float8_groupwise_quant.py",
    "splitk_dequant_gemm": INF + "gptq/splitk_dequant_gemm.py",
    "a100_qlinear": INF + "gptq/a100_qlinear.py",
    "h100_qlinear": INF + "gptq/h100_qlinear.py",
    "v0_moe_fused": INF + "col_major_moe_gemm/v0_moe_fused.py",
    "v1_moe_fused": INF + "col_major_moe_gemm/v1_moe_fused.py",
    "v2_moe_fused": INF + "col_major_moe_gemm/v2_moe_fused.py",
    "fused_rms_norm": "kernels/triton/training/rms_norm/fused_rms_norm.py",
    "softmax": "kernels/triton/training/fused_softmax/softmax.py",
    "tutorial_fused_softmax": "tutorials/triton/kernels/fused_softmax.py",
    "causal_1d_conv": INF + "mamba/causal_1d_conv/causal_1d_conv/causal_1d_conv.py",
    "attention_triton": INF + "paged_attention/attention_triton.py",
    "stay_attention": INF + "flash_attention/stay_attention.py",
    "flash_backward": INF + "torch_compile/flash_backward.py",
    "tgroup_gemm_forward": "kernels/MoE/group_GEMM/triton/tgroup_gemm_forward.py",
    "tgroup_gemm_backwards": "kernels/MoE/group_GEMM/triton/tgroup_gemm_backwards.py",
    "tma_utils": "kernels/MoE/group_GEMM/triton/utils/tma_utils.py",
    "tma_gemm": INF + "fp8/tma_gemm.py",
    "fp8_rowwise_tma_persistent": "kernels/needs_perf_help/fp8_rowwise_tma_persistent.py",
    "groupgemm": "dev/triton_groupGEMM/groupgemm.py",
}
for _file in FILES.values():
    if not (AAI / _file).is_file():
        sys.exit(f"{AAI} holds no {_file}")
sys.path.insert(0, str(SHIM))

import torch  # noqa: E402

import standins  # noqa: E402

DEVICE = os.environ.get("TEGULA_CONFORMANCE_DEVICE", "cpu")
os.environ.setdefault("TEGULA_RECOMPILE_WARNING", "0")
torch.set_default_device(DEVICE)

import triton  # noqa: E402
from comparisons import check as comparisons_check, report  # noqa: E402

assert pathlib.Path(triton.__file__).is_relative_to(SHIM), f"the real Triton was imported: {triton.__file__}"

GPU = {"sms": 2}


torch.cuda.get_device_properties = lambda *a, **k: types.SimpleNamespace(multi_processor_count=GPU["sms"])
if DEVICE != "cuda":
    standins.CudaToDevice(DEVICE).__enter__()  # on for the rest of the process
    _cuda_device = torch.cuda.device
    torch.cuda.device = lambda index: contextlib.nullcontext() if index is None else _cuda_device(index)
    torch.cuda.current_device = lambda: 0


def moe_align_block_size(topk_ids, num_experts, block_size, sorted_ids, expert_ids, num_tokens_post_pad):
    """vLLM's CUDA op, in torch: fills sorted_ids (prefilled with the sentinel), expert_ids and the padded total."""
    flat = topk_ids.flatten()
    ids, experts = [], []
    for e in range(num_experts):
        slots = (flat == e).nonzero().flatten().tolist()
        if not slots:
            continue
        padded = -(-len(slots) // block_size) * block_size
        ids += slots + [flat.numel()] * (padded - len(slots))
        experts += [e] * (padded // block_size)
    sorted_ids[:len(ids)] = torch.tensor(ids, dtype=torch.int32)
    expert_ids[:len(experts)] = torch.tensor(experts, dtype=torch.int32)
    num_tokens_post_pad.fill_(len(ids))


def silu_and_mul(out, x):
    d = x.shape[-1] // 2
    out.copy_(torch.nn.functional.silu(x[..., :d].float()) * x[..., d:].float())


_vllm = types.ModuleType("vllm"); _vllm.__path__ = []
_vllm_c = types.ModuleType("vllm._C")
_vllm_c.ops = types.SimpleNamespace(moe_align_block_size=moe_align_block_size, silu_and_mul=silu_and_mul)
_vllm._C = _vllm_c
sys.modules.update({"vllm": _vllm, "vllm._C": _vllm_c})


# triton.ops (Triton 3.0's, removed in 3.1): fp8_rowwise_tma_persistent.py imports the matmul performance
# model's two functions and uses neither.
def _no_perf_model(*a, **k):
    raise NotImplementedError("triton.ops.matmul_perf_model is a placeholder in applied_ai_ops.py")


_ops = types.ModuleType("triton.ops"); _ops.__path__ = []
_perf = types.ModuleType("triton.ops.matmul_perf_model")
_perf.early_config_prune = _perf.estimate_matmul_time = _no_perf_model
_ops.matmul_perf_model = _perf
sys.modules.update({"triton.ops": _ops, "triton.ops.matmul_perf_model": _perf})


@contextlib.contextmanager
def _silenced():
    """stdout off, Python's and the process's (Tegula writes tl.static_print's lines to the C stdout)."""
    sys.stdout.flush()
    saved, null = os.dup(1), os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            yield
    finally:
        os.dup2(saved, 1)
        os.close(saved); os.close(null)


def quiet(fn, *args, **kwargs):
    with _silenced():
        return fn(*args, **kwargs)


def load(name, tolerate_last=False):
    """The checkout's file as module applied_ai.<name>. tolerate_last: run it and catch an error raised by its last
    statement (a100_qlinear.py's typo)."""
    full = "applied_ai." + name
    if full not in sys.modules:
        path = AAI / FILES[name]
        mod = types.ModuleType(full)
        mod.__file__ = str(path)
        sys.modules[full] = mod
        code = compile(path.read_text(), str(path), "exec")
        try:
            with _silenced():
                exec(code, mod.__dict__)
        except AttributeError as e:
            last = max(n.lineno for n in ast.parse(path.read_text()).body)
            tb = e.__traceback__
            while tb.tb_next is not None:
                tb = tb.tb_next
            if not (tolerate_last and tb.tb_lineno == last):
                del sys.modules[full]
                raise
        except BaseException:
            del sys.modules[full]
            raise
    return sys.modules[full]


# The group_GEMM files' `import tma_utils`: the checkout's own (it prints a line to stderr at import)
with contextlib.redirect_stderr(io.StringIO()):
    sys.modules["tma_utils"] = load("tma_utils")

torch.manual_seed(0)
results = []


def check(name, case, stages=("",), sms=2):
    GPU["sms"] = sms
    comparisons_check(results, name, case, stages)
    GPU["sms"] = 2


def leaf(t):
    return t.detach().clone().double().requires_grad_()


TOL = {torch.float32: 1e-5, torch.float16: 1e-2, torch.bfloat16: 3e-2}


# --- fp8 -------------------------------------------------------------------------------------------------------

def fp8_splitk(m, n, k, scaled=False, b_col_major=False):
    def run():
        a = (torch.randn(m, k) * 2).to(torch.float8_e4m3fn)
        b = (torch.randn(n, k) * 2).to(torch.float8_e4m3fn).T if b_col_major else \
            (torch.randn(k, n) * 2).to(torch.float8_e4m3fn)
        ref = a.double() @ b.double()
        if not scaled:
            c = load("splitk_gemm_fp8").gemm_split_k(a, b)
        else:
            mod = load("scaled_fp8_gemm")
            sa, sb = 0.5, 1.25
            block_m, block_n, block_k, split_k, group_m = 64, 64, 256, 4, 8  # scaled_mm_splitk's
            c = torch.zeros((m, n), dtype=torch.float16)
            grid = (triton.cdiv(m, block_m) * triton.cdiv(n, block_n), split_k)
            mod.scaled_gemm_splitk[grid](a, b, c, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                                         c.stride(0), c.stride(1), sa, sb, m, n, k,
                                         block_m, block_n, block_k, split_k, group_m, num_stages=3, num_warps=8)
            ref = ref * sa * sb
        # four float16 atomic adds of float32 partial sums: each rounds to float16
        yield {"c": (c, ref, 4e-3)}
    return run


check("fp8 gemm_split_k e4m3 m=192 n=320 k=1000", fp8_splitk(192, 320, 1000))
check("fp8 gemm_split_k B column-major m=64 n=192 k=700", fp8_splitk(64, 192, 700, b_col_major=True))
check("fp8 scaled_gemm_splitk (scaled_mm_splitk's launch) m=128 n=192 k=900", fp8_splitk(128, 192, 900, scaled=True))


def fp8_group_quant(shape, dtype):
    def run():
        x = (torch.randn(*shape) * 3).to(dtype)
        x.view(-1, 128)[1] = 0  # an all-zero group: scale EPSILON / 448
        y, s = quiet(load("float8_groupwise_quant").float8_groupwise_quantize, x, 128)
        groups = x.float().view(-1, 128)
        s_ref = groups.abs().amax(-1).clamp_min(1e-12) / 448.0
        y_ref = (groups / s_ref[:, None]).clamp(-448.0, 448.0).to(torch.float8_e4m3fn)
        yield {"scale": (s.view(-1), s_ref, 0.0), "y (e4m3 bits)": (y.view(-1, 128).float(), y_ref.float(), 0.0)}
    return run


check("float8_groupwise_quantize fp32 [5, 384]", fp8_group_quant((5, 384), torch.float32))
check("float8_groupwise_quantize bf16 [3, 7, 256]", fp8_group_quant((3, 7, 256), torch.bfloat16))


# --- gptq: int4 dequantizing GEMMs -----------------------------------------------------------------------------

def gptq_inputs(m, n, k, groupsize=128):
    a = (torch.randn(m, k) / 4).to(torch.float16)
    b = torch.randint(-2 ** 31, 2 ** 31, (k // 8, n), dtype=torch.int64).to(torch.int32)
    zeros = torch.randint(-2 ** 31, 2 ** 31, (k // groupsize, n // 8), dtype=torch.int64).to(torch.int32)
    scales = (torch.rand(k // groupsize, n) / 8 + 0.01).to(torch.float16)
    kk, nn = torch.arange(k), torch.arange(n)
    q = (b.long()[kk // 8] >> ((kk % 8) * 4)[:, None]) & 0xF  # [k, n]
    z = (zeros.long()[:, nn // 8] >> ((nn % 8) * 4)[None, :]) & 0xF  # [groups, n]
    s = scales.double()
    w = (q - z[kk // groupsize] - 1) * s[kk // groupsize]  # GPTQ: (q - (z + 1)) * scale
    return a, b, scales, zeros, a.double() @ w


def gptq(kind, m, n, k):
    def run():
        a, b, scales, zeros, ref = gptq_inputs(m, n, k)
        c = torch.zeros((m, n), dtype=torch.float16)
        common = (a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
                  scales.stride(0), scales.stride(1), zeros.stride(0), zeros.stride(1), 128, m, n, k)
        if kind == "splitk":  # matmul_split_k's configuration
            mod = load("splitk_dequant_gemm")
            bm, bn, bk, group_m, split_k = 16, 32, 128, 8, 4
            grid = (triton.cdiv(m, bm) * triton.cdiv(n, bn), split_k)
            mod.matmul_split_k_kernel[grid](a, b, c, scales, zeros, *common, bm, bn, bk, group_m, split_k,
                                            num_stages=3, num_warps=4)
            tol = 2e-2  # four float16 atomic adds
        elif kind == "a100":  # a100_qlinear's, block_size_k 128
            mod = load("a100_qlinear", tolerate_last=True)
            bm, bn, bk, group_m = 16, 32, 128, 8
            grid = (triton.cdiv(m, bm) * triton.cdiv(n, bn), 1)
            mod._a100_quantized_matmul[grid](a, b, c, scales, zeros, *common, bm, bn, bk, group_m,
                                             num_warps=4, num_stages=8)
            tol = 1e-2
        else:  # h100_qlinear's, block_size_k 128
            mod = load("h100_qlinear")
            bm, bn, bk, group_m = 16, 32, 128, 8
            grid = (triton.cdiv(m, bm) * triton.cdiv(n, bn), 1)
            mod._h100_quantized_matmul[grid](a, b, c, scales, zeros, *common, bm, bn, bk, group_m,
                                             fp8_fast_accum=False, num_warps=4, num_stages=4)
            tol = 1e-2
        yield {"c": (c, ref, tol)}
    return run


check("gptq matmul_split_k_kernel m=48 n=96 k=1536 split 4", gptq("splitk", 48, 96, 1536))
check("gptq _a100_quantized_matmul m=48 n=96 k=768 (block_k 128)", gptq("a100", 48, 96, 768))
check("gptq _h100_quantized_matmul m=n=96 k=768 (block_k 128)", gptq("h100", 96, 96, 768))


# --- col_major_moe_gemm: fused MoE ---------------------------------------------------------------------------

def moe(version, M, E, topk, H, N, dtype):
    """x [M, H], w1 [E, N, H] (gate and up halves), w2 [E, H, N / 2]: sum over the top-k experts of
    weight * w2 (silu(gate) * up)."""
    def run():
        mod = load(f"{version}_moe_fused")
        x = torch.randn(M, H).to(dtype)
        w1 = (torch.randn(E, N, H) / H ** 0.5).to(dtype); w2 = (torch.randn(E, H, N // 2) / (N / 2) ** 0.5).to(dtype)
        topk_w, topk_ids = torch.softmax(torch.randn(M, E), -1).topk(topk, -1)
        topk_w = (topk_w / topk_w.sum(-1, keepdim=True)).to(torch.float32).contiguous()
        out = quiet(mod.fused_moe, x, w1, w2, topk_w, topk_ids.to(torch.int32))
        xd, w1d, w2d = x.double(), w1.double(), w2.double()
        h = torch.einsum("mh,mkNh->mkN", xd, w1d[topk_ids])
        g, u = h.chunk(2, -1)
        ref = torch.einsum("mkn,mkhn,mk->mh", torch.nn.functional.silu(g) * u, w2d[topk_ids], topk_w.double())
        # the intermediate activations are stored in the input dtype (and v1 adds its split-K halves in it)
        yield {"out": (out, ref, 2 * TOL[dtype])}
    return run


check("moe v0 fused_moe fp16 prefill M=37 E=8 top2 H=200 N=272", moe("v0", 37, 8, 2, 200, 272, torch.float16))
check("moe v0 fused_moe bf16 decode M=3 E=8 top2", moe("v0", 3, 8, 2, 136, 208, torch.bfloat16))
check("moe v1 fused_moe split-K fp16 prefill M=37 E=8 top2", moe("v1", 37, 8, 2, 200, 272, torch.float16))
check("moe v1 fused_moe split-K fp16 decode M=3 E=8 top2", moe("v1", 3, 8, 2, 200, 272, torch.float16))
# v2: EM = 74 + 8 * 63 = 578 sorted slots, 10 blocks of 64; w1's N = 600 and w2's H = 600: 10 blocks too
check("moe v2 fused_moe col-major fp16 M=37 E=8 top2 N=H=600", moe("v2", 37, 8, 2, 600, 600, torch.float16))


# --- training: fused RMS norm, fused softmax -----------------------------------------------------------------

def cut_configs(kernel, keep):
    kernel.configs = [c for c in kernel.configs if keep(c)]
    if hasattr(kernel, "cache"):
        kernel.cache.clear()


def rms_norm(shape, dtype):
    def run():
        mod = load("fused_rms_norm")
        for kern in (mod._rms_norm_fwd_kernel, mod._rms_norm_bwd_kernel_sm):
            cut_configs(kern, lambda c: c.num_warps in (1, 4))
        x = torch.randn(*shape).to(dtype); w = (torch.rand(shape[-1]) + 0.5).to(dtype)
        xg, wg = x.clone().requires_grad_(), w.clone().requires_grad_()
        y = mod.fused_rms_norm_fn(xg, wg, eps=1e-6)
        xr, wr = leaf(x), leaf(w)
        ref = xr * torch.rsqrt(xr.pow(2).mean(-1, keepdim=True) + 1e-6) * wr
        tol = TOL[dtype]
        yield {"y": (y, ref, tol)}
        dy = torch.randn(*shape).to(dtype)
        y.backward(dy)
        ref.backward(dy.double())
        yield {"dx": (xg.grad, xr.grad, tol * 10), "dw": (wg.grad, wr.grad, tol * 10)}
    return run


check("fused_rms_norm fp32 [3, 37, 300] (5 SMs)", rms_norm((3, 37, 300), torch.float32), ("forward", "backward"), sms=5)
check("fused_rms_norm bf16 [37, 1000] (5 SMs)", rms_norm((37, 1000), torch.bfloat16), ("forward", "backward"), sms=5)


def softmax(name, shape, dtype):
    def run():
        mod = load(name)
        x = (torch.randn(*shape) * 3).to(dtype)
        xg = x.clone().requires_grad_()
        p = mod.fused_softmax(xg)
        xr = leaf(x)
        ref = torch.softmax(xr, -1)
        tol = TOL[dtype]
        yield {"p": (p, ref, tol)}
        g = torch.randn(*shape).to(dtype)
        p.backward(g)
        pd, gd = p.detach().double(), g.double()
        called = pd * gd - gd * (pd * gd).sum(-1, keepdim=True)  # what the library's argument order computes
        yield {"dx": (xg.grad, called, tol * 10)}
    return run


check("fused_softmax fp32 [4, 7, 1000]", softmax("softmax", (4, 7, 1000), torch.float32),
      ("forward", "backward (library's swapped p, g)"))
check("fused_softmax fp16 [19, 3000]", softmax("softmax", (19, 3000), torch.float16),
      ("forward", "backward (library's swapped p, g)"))
check("fused_softmax fp32 [3, 5000] (block 8192)", softmax("softmax", (3, 5000), torch.float32),
      ("forward", "backward (library's swapped p, g)"))
check("tutorial fused_softmax bf16 [33, 555]", softmax("tutorial_fused_softmax", (33, 555), torch.bfloat16),
      ("forward", "backward (library's swapped p, g)"))


# --- mamba causal_1d_conv ----------------------------------------------------------------------------------------

def causal_conv(batch, dim, seqlen, width, bias, silu, init, dtype):
    def run():
        mod = load("causal_1d_conv")
        cut_configs(mod._causal_conv1d_fwd_kernel, lambda c: (c.kwargs["BLOCK_M"], c.kwargs["BLOCK_N"]) in
                    ((32, 64), (64, 32)))
        x = torch.randn(batch, seqlen, dim).to(dtype).transpose(1, 2)  # channel last
        w = torch.randn(dim, width)
        b = torch.randn(dim) if bias else None
        s0 = torch.randn(batch, width - 1, dim).to(dtype).transpose(1, 2) if init else None
        out = mod.causal_conv1d_fn(x, w, b, initial_states=s0, activation="silu" if silu else None)
        xd = x.double()
        pad = s0.double() if init else torch.zeros(batch, dim, width - 1, dtype=torch.float64)
        xp = torch.cat([pad, xd], -1)  # [batch, dim, width - 1 + seqlen]
        ref = sum(w.double()[None, :, j:j + 1] * xp[:, :, j:j + seqlen] for j in range(width))
        if bias:
            ref = ref + b.double()[None, :, None]
        if silu:
            ref = torch.nn.functional.silu(ref)
        yield {"out": (out, ref, TOL[dtype])}
    return run


check("causal_conv1d fp32 width 4 bias silu b=2 d=200 L=77", causal_conv(2, 200, 77, 4, True, True, False,
                                                                         torch.float32))
check("causal_conv1d bf16 width 3 no bias d=96 L=130", causal_conv(3, 96, 130, 3, False, False, False, torch.bfloat16))
check("causal_conv1d fp32 width 4 initial states silu d=72 L=50", causal_conv(2, 72, 50, 4, True, True, True,
                                                                              torch.float32))


# --- attention kernels ---------------------------------------------------------------------------------------------

def paged_v1(heads, head, block, context, dtype=torch.float32):
    def run():
        mod = load("attention_triton")
        max_seq = triton.next_power_of_2(context)
        max_blocks = triton.next_power_of_2(max_seq // block)
        num_blocks = 40
        q = torch.randn(1, heads, head).to(dtype)
        k_cache = torch.randn(num_blocks, heads, head, block).to(dtype); v_cache = torch.randn_like(k_cache)
        tables = torch.randperm(num_blocks)[:max_blocks].to(torch.int32)[None]
        out = torch.empty(1, heads, head, dtype=dtype)
        scale = head ** -0.5
        quiet(mod.paged_attention_triton_v1, out, q, k_cache, v_cache, scale, tables,
              torch.tensor([context], dtype=torch.int32), block, 1, heads, max_seq, max_blocks, head)
        kk = k_cache[tables[0].long()].permute(0, 3, 1, 2).reshape(-1, heads, head)[:context].double()
        vv = v_cache[tables[0].long()].permute(0, 3, 1, 2).reshape(-1, heads, head)[:context].double()
        s = torch.einsum("hd,khd->hk", q[0].double(), kk) * scale
        ref = torch.einsum("hk,khd->hd", torch.softmax(s, -1), vv)[None]
        yield {"out": (out, ref, TOL[dtype] + 1e-6)}  # the kernel adds 1e-6 to the softmax denominator
    return run


check("paged_attention_v1 one sequence 3 heads D=64 block 16 context 150", paged_v1(3, 64, 16, 150))
check("paged_attention_v1 one sequence 2 heads D=32 block 8 context 37", paged_v1(2, 32, 8, 37))


def stay(B, H, seq):
    def run():
        mod = load("stay_attention")
        q, k, v = (torch.randn(B, H, seq, 128).to(torch.float16) for _ in range(3))
        o = mod.flash_fn(q, k, v)
        s = q.double() @ k.double().transpose(-1, -2) * 0.5  # flash_fn's sm_scale
        ref = torch.softmax(s, -1) @ v.double()
        yield {"o": (o, ref, 1e-2)}
    return run


check("stay_attention flash_fn fp16 B=1 H=2 seq 192 (3 tiles, 3 SMs)", stay(1, 2, 192), sms=3)
check("stay_attention flash_fn fp16 B=2 H=1 seq 64 (1 tile, 1 SM)", stay(2, 1, 64), sms=1)


def flash_fwd(B, H, seq, D, dtype=torch.float16, Hk=None, seq_k=None):
    """attention(): non-causal; Hk < H: the kernel's MQA / GQA mapping, query head h reads kv head h % Hk."""
    def run():
        mod = load("flash_backward")
        Hk_, seq_k_ = Hk or H, seq_k or seq
        q = torch.randn(B, H, seq, D).to(dtype)
        k, v = (torch.randn(B, Hk_, seq_k_, D).to(dtype) for _ in range(2))
        o = mod.attention(q, k, v, D ** -0.5)
        heads = torch.arange(H) % Hk_
        kd, vd = k.double()[:, heads], v.double()[:, heads]
        ref = torch.softmax(q.double() @ kd.transpose(-1, -2) * D ** -0.5, -1) @ vd
        yield {"o": (o, ref, TOL[dtype])}
    return run


def flash_causal_fwd(B, H, seq_q, seq_k, D, dtype=torch.bfloat16):
    """The `flash` custom op's causal forward alone, queries aligned to the end of the keys (rows that see no key
    give 0, and the kernel's early exit writes them)."""
    def run():
        mod = load("flash_backward")
        q = torch.randn(B, H, seq_q, D).to(dtype)
        k, v = (torch.randn(B, H, seq_k, D).to(dtype) for _ in range(2))
        o = mod.flash._init_fn(q, k, v, torch.empty_like(q), torch.empty(B, H, seq_q, dtype=torch.float32))
        s = q.double() @ k.double().transpose(-1, -2) * D ** -0.5
        keep = torch.arange(seq_q)[:, None] + (seq_k - seq_q) >= torch.arange(seq_k)[None, :]
        ref = torch.softmax(s.masked_fill(~keep, float("-inf")), -1).nan_to_num(0.0) @ v.double()
        yield {"o": (o, ref, TOL[dtype])}
    return run


def flash_causal(B, H, seq, D, dtype=torch.float16):
    def run():
        mod = load("flash_backward")
        q, k, v = (torch.randn(B, H, seq, D).to(dtype) for _ in range(3))
        o_buf = torch.empty_like(q); M = torch.empty(B, H, seq, dtype=torch.float32)
        o = mod.flash._init_fn(q, k, v, o_buf, M)
        qr, kr, vr = leaf(q), leaf(k), leaf(v)
        s = qr @ kr.transpose(-1, -2) * D ** -0.5
        s = s.masked_fill(~torch.ones(seq, seq, dtype=torch.bool).tril(), float("-inf"))
        ref = torch.softmax(s, -1) @ vr
        yield {"o": (o, ref, TOL[dtype])}
        do = torch.randn(B, H, seq, D).to(dtype)
        dq, dk, dv = mod.flash_bwd._init_fn(q, k, v, o_buf, M, do)  # what the registered backward calls
        ref.backward(do.double())
        yield {"dq": (dq, qr.grad, 2 * TOL[dtype]), "dk": (dk, kr.grad, 2 * TOL[dtype]),
               "dv": (dv, vr.grad, 2 * TOL[dtype])}
    return run


check("flash_backward attention (non-causal fwd) fp16 seq 200 D=64", flash_fwd(1, 2, 200, 64))
check("flash_backward attention (non-causal fwd) fp16 seq 77 D=80 (padded)", flash_fwd(2, 1, 77, 80))
check("flash_backward attention GQA 4/2 (h % hk) fp16 seq 150/260 D=64", flash_fwd(2, 4, 150, 64, Hk=2, seq_k=260))
check("flash_backward flash causal fwd bf16 q 300 k 170 (rows with no key)", flash_causal_fwd(1, 2, 300, 170, 64))
check("flash_backward flash causal fwd bf16 q 77 k 333", flash_causal_fwd(2, 1, 77, 333, 128))
# bfloat16: the backward rounds P and dS to tl.bfloat16 before its dots with dO and Q (a dot of bf16 and fp16
# operands is refused by Triton too)
check("flash_backward flash + flash_bwd (causal) bf16 seq 384 D=64", flash_causal(1, 2, 384, 64, torch.bfloat16),
      ("forward", "backward"))


# --- MoE/group_GEMM: grouped GEMM forward (bf16, fp8 rowwise) and backward, their non-TMA paths ----------------

def grouped(kind, m_sizes, N, K, sms=4):
    """x [M, K], w [N * G, K]; group g's rows (m_sizes[g] of them, in order) times its N rows of w."""
    def run():
        G, M = len(m_sizes), sum(m_sizes)
        sizes = torch.tensor(m_sizes, dtype=torch.int32)
        starts = [sum(m_sizes[:g]) for g in range(G)]
        fp8 = kind == "fp8 rowwise"
        x = torch.randn(M, K).to(torch.float8_e4m3fn if fp8 else torch.bfloat16)
        w = (torch.randn(N * G, K) / K ** 0.5 * (16 if fp8 else 1)).to(torch.float8_e4m3fn if fp8 else torch.bfloat16)
        xd, wd = x.double(), w.double()
        if kind in ("forward", "fp8 rowwise"):
            mod = load("tgroup_gemm_forward")
            y = torch.full((M, N * G), float("nan"), dtype=torch.bfloat16)
            args = dict(G=G, M_BUCKET=triton.next_power_of_2(M), N=N, K=K, NUM_SMS=sms, USE_TMA_LOAD=False,
                        USE_TMA_STORE=False, BLOCK_SIZE_M=64, BLOCK_SIZE_N=64, BLOCK_SIZE_K=32)
            grid = (min(sms, 4),)  # _grouped_gemm's grid
            if fp8:
                xs, ws = torch.rand(M) + 0.5, torch.rand(N * G) + 0.5
                mod._kernel_grouped_gemm_fp8_rowwise[grid](x, xs, w, ws, y, None, sizes, **args)
            else:
                mod._kernel_grouped_gemm[grid](x, w, y, None, sizes, **args)
            got, want = [], []
            for g in range(G):
                rows, cols = slice(starts[g], starts[g] + m_sizes[g]), slice(g * N, (g + 1) * N)
                r = xd[rows] @ wd[cols].T
                if fp8:
                    r = r * xs.double()[rows, None] * ws.double()[None, cols]
                got.append(y[rows, cols].flatten()); want.append(r.flatten())
            yield {"y (group blocks)": (torch.cat(got), torch.cat(want), 1e-2),
                   "y elsewhere untouched": (y.isnan().sum().double() - (M * N * G - sum(m * N for m in m_sizes)),
                                             torch.zeros(()), 0.0)}
            return
        mod = load("tgroup_gemm_backwards")
        gy = torch.randn(M, N * G).to(torch.bfloat16)
        offsets = torch.tensor([0] + list(torch.tensor(m_sizes).cumsum(0)), dtype=torch.int32)
        BLOCK = 64 if K <= 64 else 32  # grouped_gemm_backward's
        even_k = K % 8 == 0
        grid = (sms,)
        workspace = torch.empty(0, dtype=torch.uint8)
        if kind == "backward x":
            w_t = w.T.contiguous()
            gx = torch.zeros_like(x)
            mod._kernel_grouped_gemm_backward_x_scheduled[grid](
                gy, w_t, gx, offsets, workspace, G, M, N, K, gy.stride(0), gy.stride(1), 1, N * G,
                gx.stride(0), gx.stride(1), sms, False, False, BLOCK_SIZE_M=BLOCK, BLOCK_SIZE_N=BLOCK,
                BLOCK_SIZE_K=BLOCK, EVEN_K=even_k)
            ref = torch.cat([gy.double()[starts[g]:starts[g] + m_sizes[g], g * N:(g + 1) * N] @ wd[g * N:(g + 1) * N]
                             for g in range(G)])
            yield {"grad_x": (gx, ref, 1e-2)}
        else:
            x_t = x.T.contiguous()
            gw = torch.zeros_like(w)
            mod._kernel_grouped_gemm_backward_w_scheduled[grid](
                x_t, gy, gw, offsets, workspace, G, M, N, K, 1, M, gy.stride(0), gy.stride(1),
                gw.stride(0), gw.stride(1), sms, False, False, BLOCK_SIZE_N=BLOCK, BLOCK_SIZE_K=BLOCK,
                BLOCK_SIZE_M=BLOCK, EVEN_K=even_k)
            ref = torch.cat([gy.double()[starts[g]:starts[g] + m_sizes[g], g * N:(g + 1) * N].T
                             @ xd[starts[g]:starts[g] + m_sizes[g]] for g in range(G)])
            yield {"grad_w": (gw, ref, 1e-2)}
    return run


GROUPS = [37, 0, 100, 15]
check("group_GEMM _kernel_grouped_gemm bf16 groups 37/0/100/15 N=72 K=96", grouped("forward", GROUPS, 72, 96))
check("group_GEMM _kernel_grouped_gemm_fp8_rowwise e4m3 N=72 K=96", grouped("fp8 rowwise", GROUPS, 72, 96))
check("group_GEMM backward_x_scheduled bf16 N=72 K=96 (4 SMs)", grouped("backward x", GROUPS, 72, 96))
check("group_GEMM backward_w_scheduled bf16 N=72 K=60 (4 SMs)", grouped("backward w", GROUPS, 72, 60))



# --- TMA kernels: Triton 3.0-3.3's host descriptors and tl._experimental_descriptor_load / store -------------

def tma_gemm(m, n, k):
    """fp8/tma_gemm.py's matmul (its wrapper): a [m, k] @ b [n, k].T, fp8 e4m3 in, float16 out; descriptors
    filled into NumPy int8 arrays (Triton 3.0's fill_2d_tma_descriptor) and copied to tensors."""
    def run():
        a = (torch.randn(m, k) * 2).to(torch.float8_e4m3fn)
        b = (torch.randn(n, k) * 2).to(torch.float8_e4m3fn)
        c = load("tma_gemm").matmul(a, b)
        yield {"c": (c, a.double() @ b.double().T, 1e-2)}
    return run


check("fp8 tma_gemm matmul e4m3 m=100 n=136 k=608 (tails in m, n, k)", tma_gemm(100, 136, 608))
check("fp8 tma_gemm matmul e4m3 m=192 n=72 k=512", tma_gemm(192, 72, 512))


def fp8_rowwise_tma(M, N, K, sms, c_desc_bf16=False):
    """_kernel_matmul_fp8_row_tma_persistent, launched as matmul_fp8_row(tma_persistent=True) would: its blocks,
    its five descriptors (2-D for A, B, C, 1-D for the row scales), its persistent grid. The wrapper itself
    falls back to torch for CPU tensors and calls prep_matmul, which the file does not define: C is bfloat16
    with a float32 dot, as FBGEMM's prep_matmul makes it. The kernel stores acc.to(C_ptr.dtype.element_ty), and
    C_ptr is the wrapper's int8 descriptor tensor: C gets int8 values, on a GPU too (the library's bug).
    c_desc_bf16: C's descriptor passed as a bfloat16 view of the same 128 bytes, so the cast is to C's type."""
    def run():
        import numpy as np
        mod = load("fp8_rowwise_tma_persistent")
        a = (torch.randn(M, K) * 2).to(torch.float8_e4m3fn)
        b = (torch.randn(N, K) * 2).to(torch.float8_e4m3fn)
        a_scale, b_scale = torch.rand(M) + 0.5, torch.rand(N) + 0.5
        _, tl_dtype, _, _ = mod.get_fp8_constants()
        a_tl, b_tl = mod.convert_fp8_type(a, tl_dtype), mod.convert_fp8_type(b, tl_dtype)
        c = torch.empty((M, N), dtype=torch.bfloat16)
        BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M = 128, 256, 128, 8
        utils = triton.runtime.driver.active.utils
        descs = [np.empty(128, dtype=np.int8) for _ in range(5)]
        utils.fill_2d_tma_descriptor(a_tl.data_ptr(), M, K, BLOCK_M, BLOCK_K, a_tl.element_size(), descs[0])
        utils.fill_2d_tma_descriptor(b_tl.data_ptr(), N, K, BLOCK_N, BLOCK_K, b_tl.element_size(), descs[1])
        utils.fill_2d_tma_descriptor(c.data_ptr(), M, N, BLOCK_M, BLOCK_N, c.element_size(), descs[2])
        utils.fill_1d_tma_descriptor(a_scale.data_ptr(), M, BLOCK_M, a_scale.element_size(), descs[3])
        utils.fill_1d_tma_descriptor(b_scale.data_ptr(), N, BLOCK_N, b_scale.element_size(), descs[4])
        d_a, d_b, d_c, d_as, d_bs = (torch.tensor(d, device="cuda") for d in descs)
        if c_desc_bf16:
            d_c = d_c.view(torch.bfloat16)
        grid = (min(sms, triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N)),)
        mod._kernel_matmul_fp8_row_tma_persistent[grid](
            d_a, d_b, d_c, M, N, K, d_as, d_bs, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
            c.stride(0), c.stride(1), dot_out_dtype=triton.language.float32, allow_tf32=True,
            fp8_fast_accum=True, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, GROUP_M=GROUP_M,
            AB_DTYPE=False, NUM_SMS=sms, num_stages=3, num_warps=8)
        ref = a.double() @ b.double().T * a_scale.double()[:, None] * b_scale.double()[None, :]
        yield {"c": (c, ref, 1e-2)}
    return run


check("fp8_rowwise_tma_persistent e4m3 M=200 N=296 K=400 (wrapper's int8 C descriptor)",
      fp8_rowwise_tma(200, 296, 400, 2))
check("fp8_rowwise_tma_persistent e4m3 M=200 N=296 K=400 (4 tiles, 2 SMs; bf16 C descriptor)",
      fp8_rowwise_tma(200, 296, 400, 2, True))
check("fp8_rowwise_tma_persistent e4m3 M=64 N=136 K=256 (1 tile, 3 SMs; bf16 C descriptor)",
      fp8_rowwise_tma(64, 136, 256, 3, True))


def groupgemm_dev(m_sizes, N, K, fp8, sms=3):
    """dev/triton_groupGEMM/groupgemm.py's grouped_gemm / grouped_gemm_fp8_rowwise (the wrappers): TMA loads
    through tma_utils' TmaAutoTuneHelper, filled in the autotuner's grid function; y [M, N], group g's rows
    times w's rows g * N to (g + 1) * N. Its 72 autotune configs are cut to one the early prune keeps."""
    def run():
        mod = load("groupgemm")
        for kern in (mod._kernel_grouped_gemm, mod._kernel_grouped_gemm_fp8_rowwise):
            cut_configs(kern, lambda c: (c.kwargs["BLOCK_SIZE_M"], c.kwargs["BLOCK_SIZE_N"], c.kwargs["BLOCK_SIZE_K"],
                                         c.num_stages, c.num_warps) == (64, 128, 64, 3, 4))
        G, M = len(m_sizes), sum(m_sizes)
        sizes = torch.tensor(m_sizes, dtype=torch.int32)
        dt = torch.float8_e4m3fn if fp8 else torch.bfloat16
        x = torch.randn(M, K).to(dt)
        w = (torch.randn(N * G, K) / K ** 0.5 * (16 if fp8 else 1)).to(dt)
        if fp8:
            xs, ws = torch.rand(M) + 0.5, torch.rand(N * G) + 0.5
            y = mod.grouped_gemm_fp8_rowwise(x, w, sizes, xs, ws)
        else:
            y = mod.grouped_gemm(x, w, sizes)
        ref, start = [], 0
        for g, m in enumerate(m_sizes):
            r = x.double()[start:start + m] @ w.double()[g * N:(g + 1) * N].T
            if fp8:
                r = r * xs.double()[start:start + m, None] * ws.double()[None, g * N:(g + 1) * N]
            ref.append(r); start += m
        yield {"y": (y, torch.cat(ref), 1e-2)}
    return run


check("dev groupgemm grouped_gemm bf16 TMA loads groups 37/0/100/15 N=136 K=128",
      groupgemm_dev(GROUPS, 136, 128, False), sms=3)
check("dev groupgemm grouped_gemm_fp8_rowwise e4m3 TMA loads N=136 K=128", groupgemm_dev(GROUPS, 136, 128, True),
      sms=3)


def grouped_tma(m_sizes, N, K, fp8, store, sms=4):
    """tgroup_gemm_forward.py's TMA paths. store True: the wrappers grouped_gemm_forward /
    grouped_gemm_fp8_rowwise (USE_TMA_LOAD = USE_TMA_STORE = True). Their in-kernel output descriptor has
    global_size [m_size, N] at group g's corner of y [M, N * G]: a descriptor's rows are contiguous
    (experimental_device_tensormap_create2d has no stride argument), so group g's rows land N elements
    apart instead of N * G, on a GPU too: the library's bug. The case checks the elements that layout writes.
    store False: the kernels launched directly with the wrapper's descriptors, grid and blocks, TMA loads
    and the pointer store (USE_TMA_STORE = False), checked against the math."""
    def run():
        mod = load("tgroup_gemm_forward")
        G, M = len(m_sizes), sum(m_sizes)
        sizes = torch.tensor(m_sizes, dtype=torch.int32)
        dt = torch.float8_e4m3fn if fp8 else torch.bfloat16
        x = torch.randn(M, K).to(dt)
        w = (torch.randn(N * G, K) / K ** 0.5 * (16 if fp8 else 1)).to(dt)
        xs, ws = (torch.rand(M) + 0.5, torch.rand(N * G) + 0.5) if fp8 else (None, None)
        if store:
            y = mod.grouped_gemm_fp8_rowwise(x, w, sizes, xs, ws) if fp8 else mod.grouped_gemm_forward(x, w, sizes)
        else:
            helper = mod.utils.TmaAutoTuneHelper()
            for name, t, rows, block in (("x", x, M, 64), ("w", w, N * G, 64)):
                helper.init_tma_descriptor(name)
                helper.fill_2d_tma_descriptor(name, t.data_ptr(), rows, K, block, 32, t.element_size())
            dx, dw = helper.get_tma_descriptor_kernel_param("x"), helper.get_tma_descriptor_kernel_param("w")
            y = torch.full((M, N * G), float("nan"), dtype=torch.bfloat16)
            args = dict(G=G, M_BUCKET=triton.next_power_of_2(M), N=N, K=K, NUM_SMS=sms, USE_TMA_LOAD=True,
                        USE_TMA_STORE=False, BLOCK_SIZE_M=64, BLOCK_SIZE_N=64, BLOCK_SIZE_K=32)
            if fp8:
                mod._kernel_grouped_gemm_fp8_rowwise[(min(sms, 4),)](dx, xs, dw, ws, y, None, sizes, **args)
            else:
                mod._kernel_grouped_gemm[(min(sms, 4),)](dx, dw, y, None, sizes, **args)
        flat = y.flatten()
        got, want, start = [], [], 0
        for g, m in enumerate(m_sizes):
            r = x.double()[start:start + m] @ w.double()[g * N:(g + 1) * N].T
            if fp8:
                r = r * xs.double()[start:start + m, None] * ws.double()[None, g * N:(g + 1) * N]
            rows, cols = torch.arange(m)[:, None], torch.arange(N)[None, :]
            row_stride = N if store else N * G
            got.append(flat[start * N * G + g * N + rows * row_stride + cols].flatten()); want.append(r.flatten())
            start += m
        what = "y (the descriptors' row stride N)" if store else "y (group blocks)"
        yield {what: (torch.cat(got), torch.cat(want), 1e-2)}
    return run


check("group_GEMM grouped_gemm_forward bf16 TMA load+store (wrapper; library's row stride)",
      grouped_tma(GROUPS, 72, 96, False, True), sms=4)
check("group_GEMM grouped_gemm_fp8_rowwise e4m3 TMA load+store (wrapper; library's row stride)",
      grouped_tma(GROUPS, 72, 96, True, True), sms=4)
check("group_GEMM _kernel_grouped_gemm bf16 TMA loads, wrapper's descriptors N=72 K=96",
      grouped_tma(GROUPS, 72, 96, False, False), sms=4)
check("group_GEMM _kernel_grouped_gemm_fp8_rowwise e4m3 TMA loads N=72 K=96",
      grouped_tma(GROUPS, 72, 96, True, False), sms=4)



LIBRARY_BUGS = {
    "fp8_rowwise_tma_persistent e4m3 M=200 N=296 K=400 (wrapper's int8 C descriptor)":
        "the kernel casts C to C_ptr.dtype.element_ty, and C_ptr is matmul_fp8_row's int8 descriptor tensor "
        "(torch.tensor of an np.int8 array): int8 values go out through C's bfloat16 descriptor, on a GPU too",
}
sys.exit(report(results, library=LIBRARY_BUGS, library_name="applied-ai"))
