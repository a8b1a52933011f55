"""ring-flash-attention's Triton kernels (zhuzilin/ring-flash-attention, ring_flash_attn/triton_utils.py) on Tegula,
through the conformance shim's `triton` package, against exact references:

  - `flatten_varlen_lse` (`flatten_kernel`): (batch, nheads, max_seqlen) -> (nheads, total_seqlen), each sequence's
    first seqlen entries packed one after another at cu_seqlens[b];
  - `unflatten_varlen_lse` (`unflatten_kernel`): (total_seqlen, nheads) -> (batch, nheads, max_seqlen), the inverse
    (the entries past a sequence's length are left as torch.empty left them, so only the first seqlen compare);

on sequence lengths that are not powers of two (and one of length 0), contiguous and strided (a transposed lse)
inputs, float32 and float64, each checked bit for bit against indexing in torch, and against the library's own
torch versions (ring_flash_attn/utils.py's flatten_varlen_lse / unflatten_varlen_lse) where it loads. The library's
other files call flash-attn's CUDA kernels and torch.distributed; `update_out_and_lse` is torch, not Triton (there
is no Triton out / lse update in the repository), so it is not covered.

ring-flash-attention is not part of Tegula; point this at a checkout (a directory holding ring_flash_attn/; written
against commit 899628238f2f5bb8c028579c89b7cd56ea451d2a of 2025-08-04, whose triton_utils.py and utils.py this
imports unchanged):

    TEGULA_CONFORMANCE_DEVICE=cpu .venv/bin/python tools/conformance/ring_flash_attn_ops.py <ring-flash-attention>

Stand-ins (none of them is a Triton kernel or reached from one):

  - the package `ring_flash_attn` is a bare package (its __init__ imports flash_attn, a CUDA extension), and
    triton_utils.py and utils.py are loaded from their files under it;
  - torch.cuda.device (the wrappers enter `torch.cuda.device(lse.device.index)`, whose index is None for a CPU
    tensor, which torch refuses without CUDA): a null context for an index or device that is not a CUDA one.

No autotuning: the kernels are plain @triton.jit with BLOCK_M = 4 from the wrappers.

Prints one line per case and a summary line.
"""

import contextlib
import importlib.util
import os
import pathlib
import sys
import types
import warnings

SHIM = pathlib.Path(__file__).resolve().parent / "shim"
if len(sys.argv) != 2:
    sys.exit("usage: ring_flash_attn_ops.py <ring-flash-attention checkout>")
RING = pathlib.Path(sys.argv[1]).resolve()
if not (RING / "ring_flash_attn" / "triton_utils.py").is_file():
    sys.exit(f"{RING} holds no ring_flash_attn/triton_utils.py")
sys.path.insert(0, str(SHIM))
os.environ.setdefault("TEGULA_RECOMPILE_WARNING", "0")
warnings.filterwarnings("ignore", category=FutureWarning, message=r".*torch\.jit\.script")

import torch  # noqa: E402

DEVICE = os.environ.get("TEGULA_CONFORMANCE_DEVICE", "cpu")
torch.set_default_device(DEVICE)

import triton  # noqa: E402
from comparisons import check as comparisons_check  # noqa: E402

assert pathlib.Path(triton.__file__).is_relative_to(SHIM), f"the real Triton was imported: {triton.__file__}"

# --- stand-ins ---------------------------------------------------------------------------------------------------

_cuda_device = torch.cuda.device


def _device_context(device):
    """torch.cuda.device, a null context for a device (or index) that is not a CUDA one."""
    if DEVICE != "cuda" and (device is None or isinstance(device, int) or getattr(device, "type", "cuda") != "cuda"):
        return contextlib.nullcontext()
    return _cuda_device(device)


torch.cuda.device = _device_context

_pkg = types.ModuleType("ring_flash_attn")
_pkg.__path__ = [str(RING / "ring_flash_attn")]
sys.modules["ring_flash_attn"] = _pkg


def load(name):
    full = "ring_flash_attn." + name
    spec = importlib.util.spec_from_file_location(full, RING / "ring_flash_attn" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[full] = mod
    spec.loader.exec_module(mod)
    return mod


triton_utils = load("triton_utils")
try:
    ring_utils = load("utils")
except Exception as e:  # the library's torch versions are a second reference only
    print(f"(ring_flash_attn/utils.py did not load: {type(e).__name__}: {e}; comparing with torch indexing only)")
    ring_utils = None

# --- checks --------------------------------------------------------------------------------------------------------

torch.manual_seed(0)
results = []


def check(name, case):
    comparisons_check(results, name, case, ("",))


def cu(seqlens):
    return torch.tensor([0] + list(torch.tensor(seqlens).cumsum(0).tolist()), dtype=torch.int32)


def flatten_case(seqlens, nheads, dtype, strided=False):
    def case():
        c = cu(seqlens)
        B, max_len = len(seqlens), max(seqlens)
        if strided:  # (batch, max_seqlen, nheads) viewed as (batch, nheads, max_seqlen)
            lse = torch.randn(B, max_len, nheads, dtype=dtype).transpose(1, 2)
        else:
            lse = torch.randn(B, nheads, max_len, dtype=dtype)
        got = triton_utils.flatten_varlen_lse(lse, c)
        want = torch.cat([lse[b, :, :n] for b, n in enumerate(seqlens)], dim=1)
        comparisons = {"flat": (got, want, 0.0)}
        if ring_utils is not None:
            comparisons["vs utils.py"] = (got, ring_utils.flatten_varlen_lse(lse, c), 0.0)
        yield comparisons
    return case


def unflatten_case(seqlens, nheads, dtype, strided=False):
    def case():
        c = cu(seqlens)
        total, max_len = sum(seqlens), max(seqlens)
        if strided:  # (nheads, total) transposed, as the library's callers pass flatten's output
            lse = torch.randn(nheads, total, dtype=dtype).transpose(0, 1)
        else:
            lse = torch.randn(total, nheads, dtype=dtype)
        got = triton_utils.unflatten_varlen_lse(lse, c, max_len)
        keep = torch.arange(max_len)[None, :] < torch.tensor(seqlens)[:, None]  # (B, max_len)
        want = torch.zeros(len(seqlens), nheads, max_len, dtype=dtype)
        for b, n in enumerate(seqlens):
            want[b, :, :n] = lse[c[b]:c[b] + n].T
        keep = keep[:, None, :].expand_as(want)
        comparisons = {"unflat": (torch.where(keep, got, 0), want, 0.0)}
        if ring_utils is not None and dtype == torch.float32:  # utils.py's version allocates float32
            theirs = ring_utils.unflatten_varlen_lse(lse.unsqueeze(-1), c, max_len)
            comparisons["vs utils.py"] = (torch.where(keep, got, 0), torch.where(keep, theirs, 0), 0.0)
        yield comparisons
    return case


F32, F64 = torch.float32, torch.float64
check("flatten_varlen_lse fp32 seqlens 15,141,373 heads 5", flatten_case([15, 141, 373], 5, F32))
check("flatten_varlen_lse fp32 seqlens 7,1,30 heads 3", flatten_case([7, 1, 30], 3, F32))
check("flatten_varlen_lse fp64 seqlens 13,0,22 heads 2 (an empty sequence)", flatten_case([13, 0, 22], 2, F64))
check("flatten_varlen_lse fp32 seqlens 33,17 heads 6, strided lse", flatten_case([33, 17], 6, F32, strided=True))
check("unflatten_varlen_lse fp32 seqlens 15,141,373 heads 5", unflatten_case([15, 141, 373], 5, F32))
check("unflatten_varlen_lse fp32 seqlens 7,1,30 heads 3", unflatten_case([7, 1, 30], 3, F32))
check("unflatten_varlen_lse fp64 seqlens 13,0,22 heads 2 (an empty sequence)", unflatten_case([13, 0, 22], 2, F64))
check("unflatten_varlen_lse fp32 seqlens 33,17 heads 6, transposed lse", unflatten_case([33, 17], 6, F32,
                                                                                         strided=True))


def round_trip():
    seqlens = [15, 141, 373]
    c = cu(seqlens)
    lse = torch.randn(3, 5, 373)
    flat = triton_utils.flatten_varlen_lse(lse, c)
    back = triton_utils.unflatten_varlen_lse(flat.transpose(-2, -1), c, 373)
    keep = (torch.arange(373)[None, :] < torch.tensor(seqlens)[:, None])[:, None, :].expand_as(lse)
    yield {"round trip": (torch.where(keep, back, 0), torch.where(keep, lse, 0), 0.0)}


check("flatten then unflatten (the library's test_triton_kernels.py shapes)", round_trip)

for name, status, worst, why in results:
    err = "max err n/a" if worst != worst else f"max err {worst:.2g}"
    print(f"{name:72s} {status:4s} {err:16s} {why}")
print(f"{sum(r[1] == 'ok' for r in results)} of {len(results)} ring-flash-attention cases match the references")
