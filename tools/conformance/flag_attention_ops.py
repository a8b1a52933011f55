"""FlagAttention's Triton kernels (FlagOpen/FlagAttention, src/flag_attn) on Tegula, through the conformance shim's
`triton` package, against torch float64 references written here from the math:

  - flash.py (`flag_attn.flash_attention`): FlashAttention-2 forward (`_fwd_kernel`) and backward
    (`_bwd_preprocess`, `_bwd_kv_kernel`, `_bwd_q_kernel`), causal and not, with queries shorter and longer than
    the keys (P_SEQ = N - M of either sign; rows of a causal M > N that see no key give 0 and a log-normalizer of
    -inf), GQA / MQA, strided (B, T, H, D) inputs, the log-normalizer and total-attention outputs
    (total.py's `_total_attention_kernel`), dropout (the mask rebuilt with flag_attn.testing.recompute_mask,
    FlagAttention's own Triton kernel over the same tl.rand stream, the way its tests check dropout) and the
    split-KV path flash.py takes when the batch fills few multiprocessors (split_kv.py's
    `_fwd_split_kv_kernel` and `_fwd_combine_kv_splits`);
  - split_kv.py (`flag_attn.flash_attention_split_kv`, flash decoding): forward, with one split and several;
  - piecewise.py (`flag_attn.piecewise_attention`): forward and backward, causal and not;
  - paged.py (`flag_attn.paged_attention`): `_paged_attn_kernel` without partitions (query group 1, the
    tl.sum path, and GQA groups, the tl.dot path) and with partitions plus `_paged_attn_v2_reduce_kernel`.

FlagAttention asserts head sizes of 16, 32, 64 or 128 (paged: up to 512) and the paged reduction's query
groups are powers of two; the sequence lengths here are not (a few are whole multiples of the blocks, the kernels'
DIVISIBLE_M / DIVISIBLE_N paths without masks). Inputs are float16 and bfloat16 (what the library
is written for) and float32. A case passes when every output is within tol * (the reference's largest
magnitude): float32 1e-5 (2e-3 on the split-KV paths, which keep each split's partial output in float16,
flash.py's and split_kv.py's choice; the backward after such a forward too, as its delta = rowsum(o * do)),
float16 1e-2 forward and 2e-2 gradients, bfloat16 3e-2 and 6e-2 (P is rounded to the input dtype before P @ V
and dS @ K).

FlagAttention is not part of Tegula; point this at a checkout (a directory holding src/flag_attn; this imports
the package from there, unchanged):

    TEGULA_CONFORMANCE_DEVICE=cpu .venv/bin/python tools/conformance/flag_attention_ops.py <FlagAttention checkout>

FlagAttention imports only torch and triton (and pytest, in flag_attn/testing/piecewise.py). What its host code
asks of CUDA is stood in for, all at torch's level (nothing of the library, Tegula or the shim):

  - torch.cuda.get_device_capability(): (8, 0), the A100 its config tables are tuned for (their larger blocks:
    128 x 64 forward), or (9, 0) for the cases marked "[generic config]", which take the tables' fallback
    (32 x 32 blocks, several blocks along both sequences);
  - torch.cuda.get_device_properties(): multi_processor_count 2 (this machine's cores), or 108 (an A100's) for
    the cases marked "[108 SMs]": flash.py and split_kv.py choose their number of KV splits from it
    (num_splits_herustic), so small batches take the split-KV path there;
  - a torch function mode maps `device="cuda"` (a keyword argument of any torch function: split_kv.py and
    flash.py allocate their split-KV scratch so) to TEGULA_CONFORMANCE_DEVICE;
  - without a GPU: torch.cuda.device takes a CPU torch.device as index -1, a no-op (testing/dropout.py's
    recompute_mask enters it with the tensors' device; torch.cuda.device_of(tensor), which the other wrappers
    enter, is one already), torch.cuda.current_device() is 0 and torch.cuda.default_generators holds one
    generator whose state is CUDA's Philox state (a seed and an offset, 16 bytes), so that dropout.py's
    philox_cuda_seed_offset works as on a GPU.

Prints one line per case (the largest absolute difference from the reference over the case's outputs, each
output's difference, or the first line of the error) and a summary line. Tegula's recompile warnings are off
unless TEGULA_RECOMPILE_WARNING is set (the kernels compile one specialization per dtype, head size and block
configuration, by design).
"""

import os
import pathlib
import sys
import types

SHIM = pathlib.Path(__file__).resolve().parent / "shim"
if len(sys.argv) != 2:
    sys.exit("usage: flag_attention_ops.py <FlagAttention checkout>")
FLAG = pathlib.Path(sys.argv[1]).resolve()
for _file in ("flash.py", "split_kv.py", "piecewise.py", "paged.py", "total.py", "dropout.py", "testing/dropout.py"):
    if not (FLAG / "src" / "flag_attn" / _file).is_file():
        sys.exit(f"{FLAG} holds no src/flag_attn/{_file}")
sys.path.insert(0, str(SHIM))
sys.path.insert(1, str(FLAG / "src"))

import torch  # noqa: E402

import standins  # noqa: E402

DEVICE = os.environ.get("TEGULA_CONFORMANCE_DEVICE", "cpu")
os.environ.setdefault("TEGULA_RECOMPILE_WARNING", "0")
torch.set_default_device(DEVICE)

import triton  # noqa: E402
from comparisons import check as comparisons_check  # noqa: E402

assert pathlib.Path(triton.__file__).is_relative_to(SHIM), f"the real Triton was imported: {triton.__file__}"

GPU = {"capability": (8, 0), "sms": 2}  # what the stand-ins below report; a case may change them


class _PhiloxGenerator:
    """CUDA's default generator as dropout.py reads it: get_state() is 16 bytes, a seed and an offset (int64)."""
    def __init__(self, seed):
        self.state = torch.tensor([seed, 0], dtype=torch.int64, device="cpu").view(torch.uint8)

    def get_state(self):
        return self.state.clone()

    def set_state(self, state):
        self.state = state.clone()


class _CudaDevice(torch.cuda.device):
    """torch.cuda.device, which takes a CPU torch.device as index -1 (a no-op, as torch.cuda.device_of does)."""
    def __init__(self, device):
        if isinstance(device, torch.device) and device.type == "cpu":
            device = -1
        elif isinstance(device, _TORCH_CUDA_DEVICE):  # torch.cuda.device_of(tensor): its index
            device = device.idx
        super().__init__(device)


_TORCH_CUDA_DEVICE = torch.cuda.device


torch.cuda.get_device_capability = lambda *a, **k: GPU["capability"]
torch.cuda.get_device_properties = lambda *a, **k: types.SimpleNamespace(multi_processor_count=GPU["sms"])
if DEVICE != "cuda":
    standins.CudaToDevice(DEVICE).__enter__()  # on for the rest of the process
    torch.cuda.device = _CudaDevice
    torch.cuda.current_device = lambda: 0
    torch.cuda.default_generators = (_PhiloxGenerator(20240605),)

import flag_attn  # noqa: E402

torch.manual_seed(0)
results = []


def check(name, case, stages=("forward", "backward"), capability=(8, 0), sms=2):
    GPU.update(capability=capability, sms=sms)
    comparisons_check(results, name, case, stages)
    GPU.update(capability=(8, 0), sms=2)


def leaf(t):
    return t.detach().clone().double().requires_grad_()


TOL = {torch.float32: (1e-5, 1e-5), torch.float16: (1e-2, 2e-2), torch.bfloat16: (3e-2, 6e-2)}


def qkv(B, Hq, Hk, M, N, D, dtype, bthd=False, count=3):
    """Random q [B, Hq, M, D] and k / v (and more) [B, Hk, N, D]; bthd: views of (B, T, H, D) tensors."""
    def make(H, T):
        if bthd:
            return torch.randn(B, T, H, D).to(dtype).transpose(1, 2)
        return torch.randn(B, H, T, D).to(dtype)
    return [make(Hq, M)] + [make(Hk, N) for _ in range(count - 1)]


def attention_ref(q, k, v, causal, scale, keep=None, p=0.0):
    """float64 q [B, H, M, D], k / v [B, Hk, N, D]: (out, log-normalizer, total attention over the queries,
    rows that see some key). Query i sits at key position N - M + i; keep: the dropout mask (True keeps)."""
    H, Hk, M, N = q.shape[1], k.shape[1], q.shape[2], k.shape[2]
    k = k.repeat_interleave(H // Hk, 1); v = v.repeat_interleave(H // Hk, 1)
    s = q @ k.transpose(-1, -2) * scale
    allowed = torch.ones(M, N, dtype=torch.bool)
    if causal:
        allowed = torch.arange(M)[:, None] + (N - M) >= torch.arange(N)[None, :]
        s = s.masked_fill(~allowed, float("-inf"))
    lse = torch.logsumexp(s, -1)
    prob = torch.softmax(s, -1).nan_to_num(0.0)  # rows that see no key: 0
    total = prob.sum(-2)
    if keep is not None:
        prob = prob * keep / (1 - p)
    return prob @ v, lse, total, allowed.any(-1)


# --- flash.py: FlashAttention forward and backward ----------------------------------------------------------

def flash(B, Hq, Hk, M, N, D, causal, dtype=torch.float32, bthd=False, aux=False, dropout=0.0, scale=None,
          split_tol=False):
    def run():
        q, k, v = qkv(B, Hq, Hk, M, N, D, dtype, bthd)
        do = torch.randn(B, Hq, M, D).to(dtype)
        ftol, btol = TOL[dtype]
        if split_tol:  # o passes through float16 partial outputs; the backward's delta = rowsum(o * do) too
            ftol, btol = max(ftol, 2e-3), max(btol, 2e-3)
        qg, kg, vg = (t.detach().clone().requires_grad_() for t in (q, k, v))
        out = flag_attn.flash_attention(qg, kg, vg, causal, sm_scale=scale, dropout_p=dropout,
                                        return_log_normalizer=True, return_total_attention=aux,
                                        return_seed_offset=dropout > 0)
        o, lse, total = out[0], out[1], out[2]
        keep = None
        if dropout > 0:
            seed, offset = out[3], out[4]
            keep = flag_attn.testing.recompute_mask(B, Hq, M, N, dropout, seed, offset, q.device)
            kept = keep.double().mean().item()
            if not abs(kept - (1 - dropout)) < 0.05:
                raise AssertionError(f"recompute_mask kept {kept:.3f} of the scores, not about {1 - dropout}")
        qr, kr, vr = leaf(q), leaf(k), leaf(v)
        sm = scale if scale is not None else D ** -0.5
        o_ref, lse_ref, total_ref, rows = attention_ref(qr, kr, vr, causal, sm, keep, dropout)
        got = {"o": (o, o_ref, ftol)}
        got["lse"] = (lse[:, :, rows], lse_ref[:, :, rows], ftol)
        if not rows.all():
            got["lse of empty rows"] = (lse[:, :, ~rows].clamp(min=-1e30), torch.full_like(lse[:, :, ~rows], -1e30),
                                        0.0)
        if aux:
            got["total attention"] = (total, total_ref, ftol)
        yield got
        o.backward(do)
        o_ref.backward(do.double())
        yield {"dq": (qg.grad, qr.grad, btol), "dk": (kg.grad, kr.grad, btol), "dv": (vg.grad, vr.grad, btol)}
    return run


check("flash MHA fp16 M=100 N=150", flash(2, 3, 3, 100, 150, 64, False, torch.float16))
check("flash MHA fp16 causal M=100 N=150", flash(2, 3, 3, 100, 150, 64, True, torch.float16))
check("flash causal M=150 N=100 (rows with no key) fp16", flash(2, 2, 2, 150, 100, 64, True, torch.float16))
check("flash GQA 6/2 bf16 causal M=N=77", flash(1, 6, 2, 77, 77, 64, True, torch.bfloat16))
check("flash MQA 4/1 fp32 D=32 M=45 N=203", flash(1, 4, 1, 45, 203, 32, False))
check("flash fp32 causal D=128 (B,T,H,D) strides", flash(2, 2, 2, 70, 91, 128, True, bthd=True))
check("flash fp16 D=128 causal [generic config]", flash(2, 2, 2, 77, 131, 128, True, torch.float16),
      capability=(9, 0))
check("flash GQA 4/2 fp32 D=16 M=N=300 [generic config]", flash(1, 4, 2, 300, 300, 16, True),
      capability=(9, 0))
check("flash causal fp32 M=96 N=160 (whole blocks) [generic config]", flash(2, 2, 2, 96, 160, 64, True),
      capability=(9, 0))
check("flash GQA 6/3 fp16 M=N=192 (whole blocks) [generic config]", flash(1, 6, 3, 192, 192, 32, False, torch.float16),
      capability=(9, 0))
check("flash aux outputs (lse, total attention) fp16", flash(2, 2, 2, 100, 150, 64, False, torch.float16, aux=True))
check("flash aux outputs causal fp32 [generic config]", flash(2, 2, 1, 70, 90, 32, True, aux=True),
      capability=(9, 0))
check("flash dropout 0.3 fp16", flash(2, 2, 2, 100, 150, 64, False, torch.float16, dropout=0.3))
check("flash dropout 0.5 causal fp32 sm_scale 0.3", flash(2, 2, 2, 60, 75, 32, True, dropout=0.5, scale=0.3))
check("flash split-kv decode fp16 M=1 N=333 [108 SMs]", flash(1, 2, 2, 1, 333, 64, False, torch.float16), sms=108)
check("flash split-kv GQA 4/2 causal M=7 N=300 fp32 [108 SMs]", flash(1, 4, 2, 7, 300, 64, True, split_tol=True),
      sms=108)
check("flash split-kv fp32 aux outputs M=20 N=290 [108 SMs]",
      flash(1, 2, 2, 20, 290, 32, False, aux=True, split_tol=True), sms=108)


# --- split_kv.py: flash decoding ------------------------------------------------------------------------------

def split_kv(B, Hq, Hk, M, N, D, causal, dtype=torch.float32, tol=None):
    def run():
        q, k, v = qkv(B, Hq, Hk, M, N, D, dtype)
        o = flag_attn.flash_attention_split_kv(q, k, v, causal)
        o_ref, _, _, _ = attention_ref(q.double(), k.double(), v.double(), causal, D ** -0.5)
        yield {"o": (o, o_ref, tol or max(TOL[dtype][0], 2e-3))}
    return run


check("split_kv decode M=1 N=333 3 splits fp16 [108 SMs]", split_kv(1, 4, 4, 1, 333, 64, False, torch.float16),
      ("",), sms=108)
check("split_kv GQA 8/2 causal M=5 N=517 fp32 [108 SMs]", split_kv(2, 8, 2, 5, 517, 128, True), ("",), sms=108)
check("split_kv bf16 M=3 N=200 [108 SMs]", split_kv(1, 2, 1, 3, 200, 32, False, torch.bfloat16), ("",), sms=108)
check("split_kv one split (squeezed) fp32 M=40 N=100", split_kv(2, 2, 2, 40, 100, 64, False), ("",), sms=2)


# --- piecewise.py ---------------------------------------------------------------------------------------------

def piecewise(B, H, M, N, D, w, causal, dtype=torch.float32, capability=(8, 0)):
    def run():
        q1, k1, q2, k2, v = qkv(B, H, H, M, N, D, dtype, count=5)
        q2 = torch.randn(B, H, M, D).to(dtype)
        do = torch.randn(B, H, M, D).to(dtype)
        ftol, btol = TOL[dtype]
        ins = [t.detach().clone().requires_grad_() for t in (q1, k1, q2, k2, v)]
        o = flag_attn.piecewise_attention(*ins, w, causal)
        refs = [leaf(t) for t in (q1, k1, q2, k2, v)]
        rq1, rk1, rq2, rk2, rv = refs
        ms, ns = torch.arange(M)[:, None] + (N - M), torch.arange(N)[None, :]
        s = torch.where(ms - ns >= w, rq2 @ rk2.transpose(-1, -2), rq1 @ rk1.transpose(-1, -2)) * D ** -0.5
        if causal:
            s = s.masked_fill(~(ms >= ns), float("-inf"))
        o_ref = torch.softmax(s, -1) @ rv
        yield {"o": (o, o_ref, ftol)}
        o.backward(do)
        o_ref.backward(do.double())
        yield {n: (t.grad, r.grad, btol) for n, t, r in zip(("dq1", "dk1", "dq2", "dk2", "dv"), ins, refs)}
    return run


check("piecewise fp16 M=100 N=150 w=40", piecewise(2, 2, 100, 150, 64, 40, False, torch.float16))
check("piecewise causal fp16 M=N=130 w=50", piecewise(1, 3, 130, 130, 64, 50, True, torch.float16))
check("piecewise causal fp32 D=32 M=70 N=111 w=25 [generic config]", piecewise(2, 2, 70, 111, 32, 25, True),
      capability=(9, 0))
check("piecewise causal fp16 M=96 N=224 w=70 (whole blocks) [generic config]",
      piecewise(1, 2, 96, 224, 64, 70, True, torch.float16), capability=(9, 0))
check("piecewise bf16 D=128 M=90 N=90 w=30", piecewise(1, 2, 90, 90, 128, 30, False, torch.bfloat16))


# --- paged.py -------------------------------------------------------------------------------------------------

def paged(context_lens, Hq, Hk, D, block, num_splits=0, dtype=torch.float32, tol=None):
    def run():
        num_blocks = 60
        S = len(context_lens)
        q = torch.randn(S, Hq, D).to(dtype)
        k_cache = torch.randn(num_blocks, Hk, block, D).to(dtype); v_cache = torch.randn_like(k_cache)
        max_len = max(context_lens)
        max_blocks = -(-max_len // block)
        tables = torch.stack([torch.randperm(num_blocks)[:max_blocks] for _ in context_lens]).to(torch.int32)
        lens = torch.tensor(context_lens, dtype=torch.int32)
        scale = D ** -0.5
        o = flag_attn.paged_attention(q, k_cache, v_cache, lens, tables, scale, max_len, num_splits)
        ref = torch.empty(S, Hq, D, dtype=torch.float64)
        for i, L in enumerate(context_lens):
            kk = k_cache[tables[i].long()].transpose(1, 2).reshape(-1, Hk, D)[:L].double()  # [L, Hk, D]
            vv = v_cache[tables[i].long()].transpose(1, 2).reshape(-1, Hk, D)[:L].double()
            kk = kk.repeat_interleave(Hq // Hk, 1); vv = vv.repeat_interleave(Hq // Hk, 1)
            s = torch.einsum("hd,khd->hk", q[i].double(), kk) * scale
            ref[i] = torch.einsum("hk,khd->hd", torch.softmax(s, -1), vv)
        yield {"o": (o, ref, tol or TOL[dtype][0])}
    return run


check("paged MHA (group 1, tl.sum path) block 16 fp32", paged([37, 150, 1, 83], 4, 4, 64, 16), ("",))
check("paged GQA 8/1 (tl.dot path) block 16 fp16", paged([37, 150, 1, 83], 8, 1, 64, 16, dtype=torch.float16),
      ("",))
check("paged GQA 16/2 block 32 fp32 D=128", paged([200, 45, 77], 16, 2, 128, 32), ("",))
check("paged MHA 3 partitions + v2 reduce fp32", paged([300, 97, 5, 211], 4, 4, 64, 16, num_splits=3), ("",))
check("paged GQA 8/2 3 partitions + v2 reduce fp16",
      paged([300, 97, 5, 211], 8, 2, 64, 16, num_splits=3, dtype=torch.float16), ("",))
check("paged GQA 4/2 5 partitions + v2 reduce bf16 block 32",
      paged([500, 33, 260], 4, 2, 32, 32, num_splits=5, dtype=torch.bfloat16), ("",))


for name, status, worst, why in results:
    err = "max err n/a" if worst != worst else f"max err {worst:.2g}"
    print(f"{name:72s} {status:4s} {err:16s} {why}")
print(f"{sum(r[1] == 'ok' for r in results)} of {len(results)} FlagAttention cases match the torch float64 references")
