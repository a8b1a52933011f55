"""torchtitan's Triton kernels on Tegula, through the conformance shim's `triton` package, forward and backward,
against float64 references (the library's own pure-torch references where it has them, run in float64, or the
math written here).

pytorch/torchtitan: the repository's newest commit (b5bcd76c of 2026-08-21) holds three files of Triton kernels; the
others left the tree earlier and are read from the last commit that held each (the SOURCES table below):

  - b5bcd76c (2026-08-21, HEAD): torchtitan/distributed/minimal_async_ep/kernels.py (MinimalAsyncEP's routing
    metadata, top-k reduce / expand / score-gradient kernels and its copies into peers' buffers through tables of
    addresses), overrides/fused_swiglu.py (torchtitan::silu_and_mul, forward and backward, with grouped_mm offsets),
    overrides/fused_mla.py (DeepSeek-V3 MLA: Q RoPE in place, K assembly, the KV backward);
  - 18300a1e (2026-04-02): models/common/moe/kernels.py (generate_permute_indices' _fill_indices_kernel);
  - 6e06a49c (2025-10-13, before experiments/kernels and experiments/deepseek_v3 were removed):
    experiments/kernels/triton_contiguous_group_gemm (cg_forward.py, cg_backward.py, cg_reference.py,
    tma_cuda_autotune.py), experiments/kernels/triton_mg_group_gemm/torchao_pr (mg_grouped_gemm.py,
    tma_autotuning.py, reference_utils.py), experiments/deepseek_v3/dsgemm_kernels.py;
  - 88247277 (2025-02-05, before the fused RMS norm was removed): models/norms.py.

Result on the CPU backend (2026-12-07): 95 of 96 lines match (a case's forward and backward are a line each), 1
kernel is refused as expected and 1 line fails by torchtitan's own bug, in about 50 seconds on two cores from an
empty Tegula cache (7 with a warm one); the same under TEGULA_DEBUG=1 (no access out of bounds; the peer copies
write through addresses made from integers, which debug mode cannot bound). No divergence from Triton and no Tegula
bug was found. torchtitan's bug: the
contiguous grouped GEMM's weight-gradient kernel (_kernel_cg_backward_dw) maps programs to tiles by (N * K) //
(BLOCK_SIZE_N * BLOCK_SIZE_K), which leaves tiles of every expert's gradient unwritten (zero) where N is not a
multiple of min(128, N) or K of min(32, K); its wrapper does not check. A further property of the library: with
float32 inputs, ContiguousGroupedGEMM's forward still gives bfloat16, so its backward's tl.dot mixes a bfloat16
gradient with float32 weights, which Triton refuses and Tegula too (an expected refusal below).

Cases (inputs seeded per case by the CRC of its name, so -k reproduces a case's data; sizes that are not powers of
two and masked tails where the kernels allow, groups and experts with no tokens; an output the harness allocates
starts as NaN, and the peers' buffers start random, their rows no kernel should touch checked unchanged):

  - minimal_async_ep: copy_full_counts_to_peers (1 to 4 peers, 1500 experts over two blocks, rows of padded stride)
    and copy_rows_to_peers (2 to 4 peers, rows sent nowhere (rank -1), gathered source rows, an active prefix of 30
    or 0 rows, 2100 columns over two blocks, bfloat16 and float32), both writing through int64 tables of the peers'
    buffers' addresses (buffers in one process here); fill_dispatch_metadata and fill_combine_metadata (strided
    inputs, as the library's own test, empty experts and segments, counts over two 256-row blocks);
    invert_flat_indices; reduce_topk_slots, expand_topk_grad and topk_scores_grad with no scores, slot-ordered and
    row-ordered scores, float32 and bfloat16 (and bfloat16 in, float32 out); all of them on no rows and on rows of
    no columns; indices and copies exactly;
  - fused_swiglu: torchtitan::silu_and_mul through its custom op and registered autograd, forward and backward,
    float32 / bfloat16 / float16, 2100 columns (two column programs), gate and up as the halves of
    FusedGroupedExperts' [rows, F, 2] projection (column stride 2, and a gradient of column stride 2 with them),
    int32 and int64 grouped_mm offsets with empty experts and capacity rows past the last offset (which the
    kernels skip; not compared);
  - fused_mla: fused_mla_q (RoPE on Q's positional tail in place; the backward rotates the gradient back in place)
    and fused_mla_kv (K = K-nope and the rotated, head-broadcast k_pe; V a view; the backward packs dK-nope and dV
    and sums dK-pe over heads, rounded to bfloat16 / float16 as the library keeps eager's rounding) against
    ComplexRoPE's definition in float64 autograd: heads 3 to 70 (two head blocks), rope dims with masked pairs
    (6 of 8), random, 1-D (broadcast) and absent positions, k_pe a slice of the kv-down projection and strided
    gradients of K and V;
  - moe: generate_permute_indices and fill_indices_wrapper (grid-stride programs over experts, BLOCK_SIZE chunks,
    int32 and int64 counts, experts with no tokens padded to the alignment) against the library's own
    fill_indices_cpu and the definition, exactly;
  - contiguous grouped GEMM: cg_grouped_gemm_forward (persistent, NUM_SMS 132, 5, 3 or 2: the tile loop),
    cg_grouped_gemm_forward_dynamic, cg_backward.cg_grouped_gemm forward and backward, and
    cg_grouped_gemm_backward_inputs / _weights, under the library's autotuner and early_config_prune, groups of 128
    and 256 rows, unused experts, N and K of 40 to 384 (masked where the kernel masks), float32 / bfloat16 /
    float16, against cg_reference.pytorch_reference in float64;
  - M*G grouped GEMM: _kernel_mg_forward_no_tma (no wrapper calls it) and _kernel_mg_dw_tma with USE_TMA_LOAD and
    USE_TMA_STORE off, launched as the file's wrappers launch its kernels, under the autotuner and early_config_prune
    (which keeps K a multiple of BLOCK_SIZE_K, and prunes every config unless M_BUCKET // G >= 64 and N >= 128 on
    the CPU backend's SM count), empty groups and ragged ones, N of 130 to 256, against reference_utils'
    compute_reference_forward / _backward in float64;
  - dsgemm: groupwise_activation_quant through DeepSeek's dynamic_quant_kernel (rows below switching_size) and the
    grid-stride kernel (1 or several programs a row), 2-D and 3-D, blocks of 64 and 128, an all-zero block (scale
    1e-9 and zero codes in the grid-stride kernel; in the dynamic one, which has no floor, scale 0 and NaN codes,
    0 / 0, checked as such);
  - norms (2025): fused_rms_norm_fn (TritonFusedRMSNorm through its local_map, forward and backward under both
    autotuners), 1 to 132 SMs for the backward's per-program weight-gradient rows, N of 77 to 2048.

Tolerances, relative to the reference's largest magnitude: float32 1e-5, float16 2e-3, bfloat16 2e-2 (the kernels
compute in float32 and round to their output's dtype; the contiguous GEMM's persistent forward, and so its
gradients, are bfloat16); float8 codes within half an e4m3 step of the quotient by the kernel's own scale, scales
1e-6; indices, copies, metadata and untouched memory exactly.

Expected refusal (counted apart; it passes only with the error named): ContiguousGroupedGEMM's backward on float32
inputs (above): E0314.

M*G TMA kernels (_kernel_mg_forward_hopper, _kernel_mg_forward_tma, _kernel_mg_dx_tma, and _kernel_mg_dw_tma with
TMA loads and store) use Triton 3.3's experimental descriptor API (tl.extra.cuda.experimental_device_tensormap_create2d,
tl._experimental_descriptor_load / _store, removed from Triton in 2025, #6488), which Tegula implements
(docs/language.md): checked cases, their host descriptors filled in the grid function as the wrappers'
TmaDescriptorHelper fills them (tegula.experimental_descriptor.fill_2d_tma_descriptor into 128-byte buffers),
bf16 / fp16, empty and ragged groups.

torchtitan is not part of Tegula; point this at torchtitan's git directory (the files are taken from their commits
into a temporary tree; the `fetch` mirror's bare directory will do) or at a tree holding them, e.g.

    for c in <each commit of SOURCES>; do git -C <torchtitan> archive $c <its paths> | tar -x -C <tree>; done
    TEGULA_CONFORMANCE_DEVICE=cpu .venv/bin/python tools/conformance/torchtitan_ops.py <git dir or tree> \\
        [-k SUBSTRING] [--json out.json]

Stand-ins, none of them a Triton kernel or reached from one:

  - torchtitan's packages import bare (no __init__ runs), and the names the two override files import from the rest
    of torchtitan (its config system's derive / override, the FeedForward, GroupedExperts and DeepSeek-V3
    Attention classes they subclass, ShardingConfig, dense_param_placement, get_spmd_backend, ComplexRoPE,
    AttentionMasksType, _maybe_check_max_pos) and from spmd_types are placeholders; no case reaches them (the cases
    call silu_and_mul_op, fused_mla_q and fused_mla_kv, not the modules);
  - torch.library.custom_op(device_types="cuda") also registers the ops for the CPU, while those files load;
  - torch.cuda.get_device_properties(...).multi_processor_count (the persistent grids' NUM_SMS) and
    torch.cuda.current_device() (the M*G autotuner's pruning) without a GPU, during those cases; norms.py's
    torchtitan.utils.device_module.get_device_properties(...).multi_processor_count, set per case.

Not covered:

  - the M*G wrappers (grouped_gemm_forward / _backward, grouped_gemm_dx_tma / _dw_tma, GroupedGemmMg) and the
    contiguous GEMM's TmaDescriptorHelper: they need Triton 3.3's host TMA API (tl.nv_tma_desc_type,
    driver.active.utils.fill_2d_tma_descriptor) on a Hopper GPU and raise before any kernel otherwise;
  - experiments/deepseek_v3/symm_mem_recipes (on-device all-to-all-v and barriers): PTX inline assembly over
    symmetric memory of several ranks; experiments/deepseek_v3/group_gemms.py: host wrappers over DeepGEMM,
    torchao and the kernels above;
  - overrides/helion_rope.py: a Helion kernel, not Triton;
  - older copies of kernels covered here: overrides/fused_grouped_experts.py (the same silu_and_mul kernels, removed
    on 2026-06-21), models/moe/kernels.py, experiments/kernels/moe/indices.py, experiments/deepseek_v3/indices.py
    and moe_kernels.py (the same _fill_indices_kernel), triton_mg_group_gemm's mg_grouped_gemm.py,
    autows_version.py and grid_stride_kernels_old.py (work-in-progress copies of torchao_pr's, in the tree from
    2025-04-02 to 04-03; their one other kernel, _kernel_quantize_fp8_row, is FBGEMM's row-wise float8 quantizer,
    which fbgemm_ops.py runs from FBGEMM), torchtrain/models/norms.py (2024); the cg and mg debug, benchmark and
    unit-test scripts (they launch the same kernels on CUDA);
  - the library's own 2**31-element tests of minimal_async_ep's int64 offsets (gigabytes of memory).

Library properties the cases step around: generate_permute_indices' kernel does not mask at max_len (fill_indices_cpu
clamps), so max_len holds every padded expert; the contiguous GEMM assumes groups of whole BLOCK_SIZE_M blocks
(group_size_m 128 or 256 here) and its dw kernel the N and K above; silu_and_mul leaves rows past the last offset
unwritten (capacity padding, by design).

Prints one line per case and stage (ok / FAIL / refused (expected), the largest absolute difference from the
reference, each output's difference or the first line of the error) and the totals.
"""

import argparse
import contextlib
import dataclasses
import os
import pathlib
import sys
import types
import warnings
import zlib

SHIM = pathlib.Path(__file__).resolve().parent / "shim"
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

# Each file from the newest commit that holds it (torchtitan's experiments/kernels and experiments/deepseek_v3
# left the tree on 2025-10-13, models/common/moe/kernels.py on 2026-04-02, the fused RMS norm on 2025-02-06).
SOURCES = {
    "b5bcd76c66d0acb1a08b176d9639425bc55e0b2a": (  # HEAD, 2026-08-21
        "torchtitan/distributed/minimal_async_ep/kernels.py",
        "torchtitan/overrides/fused_swiglu.py",
        "torchtitan/overrides/fused_mla.py",
    ),
    "18300a1ee927d082b1774e67291911494a57112b": (  # 2026-04-02, the parent of fe80b63cf
        "torchtitan/models/common/moe/kernels.py",
    ),
    "6e06a49cd0b67191f4056f7c265bb227365a70f1": (  # 2025-10-13, the parent of 8631e19f2
        "torchtitan/experiments/kernels/triton_contiguous_group_gemm/cg_forward.py",
        "torchtitan/experiments/kernels/triton_contiguous_group_gemm/cg_backward.py",
        "torchtitan/experiments/kernels/triton_contiguous_group_gemm/cg_reference.py",
        "torchtitan/experiments/kernels/triton_contiguous_group_gemm/tma_cuda_autotune.py",
        "torchtitan/experiments/kernels/triton_mg_group_gemm/torchao_pr/mg_grouped_gemm.py",
        "torchtitan/experiments/kernels/triton_mg_group_gemm/torchao_pr/tma_autotuning.py",
        "torchtitan/experiments/kernels/triton_mg_group_gemm/torchao_pr/reference_utils.py",
        "torchtitan/experiments/deepseek_v3/dsgemm_kernels.py",
    ),
    "88247277c6b91b3490838dff08b0649c64c62e08": (  # 2025-02-05, the parent of 37c4b8181
        "torchtitan/models/norms.py",
    ),
}

_parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
_parser.add_argument("source", type=pathlib.Path,
                     help="a tree holding the files listed in the docstring, or torchtitan's git directory")
_parser.add_argument("-k", dest="only", help="run only the cases whose name holds this")
_parser.add_argument("--json", type=pathlib.Path, help="write every case's outcome here")
ARGS = _parser.parse_args()


import git_sources  # noqa: E402

SRC = git_sources.source_tree(ARGS.source, SOURCES, "torchtitan_ops_")
sys.path.insert(0, str(SHIM))
os.environ.setdefault("TEGULA_RECOMPILE_WARNING", "0")

import importlib  # noqa: E402
import logging  # noqa: E402

import torch  # noqa: E402

DEVICE = os.environ.get("TEGULA_CONFORMANCE_DEVICE", "cpu")
torch.set_default_device(DEVICE)

import triton  # noqa: E402
from comparisons import check, exact, fp8_codes, refusal, report  # noqa: E402
from tegula.experimental_descriptor import fill_2d_tma_descriptor  # noqa: E402
import standins  # noqa: E402
from standins import module  # noqa: E402

assert pathlib.Path(triton.__file__).is_relative_to(SHIM), f"the real Triton was imported: {triton.__file__}"

# --- loading -------------------------------------------------------------------------------------------------------


def _config_class():
    @dataclasses.dataclass(kw_only=True, slots=True)
    class Config:
        pass
    return Config


def _module_class(name):
    """A stand-in for one of torchtitan's model classes that an override subclasses: a Module with a Config."""
    return type(name, (torch.nn.Module,), {"Config": _config_class()})


def _decorator_factory(*args, **kwargs):
    return lambda fn: fn


# torch looks spmd_types up once (torch.distributed._is_spmd_types_available) when its DTensor modules load: they
# load first, so that torch does not take the stand-in below for the package.
import torch.distributed.tensor.experimental  # noqa: E402,F401

# The names the override files import from the rest of torchtitan (its config system, models, sharding
# protocols) and from spmd_types, which the kernels and the functions the cases call do not use.
module("spmd_types", V="V", R="R", S=lambda dim: ("S", dim), PartitionSpec=lambda *a: a,
       register_autograd_function=lambda cls: cls, local=contextlib.nullcontext,
       assert_type=lambda *a, **k: None, is_type_checking=lambda: False, local_map=_decorator_factory)
module("torchtitan.config", derive=lambda cfg, cls, **kw: cls(), override=_decorator_factory)
module("torchtitan.protocols")
module("torchtitan.protocols.sharding", ShardingConfig=type("ShardingConfig", (), {}))
module("torchtitan.distributed.utils", get_spmd_backend=lambda: "none")
module("torchtitan.models.common.decoder_sharding", dense_param_placement=lambda **kw: None)
module("torchtitan.models.common.feed_forward", FeedForward=_module_class("FeedForward"))
module("torchtitan.models.common.attention", AttentionMasksType=object)
module("torchtitan.models.common.rope", _maybe_check_max_pos=lambda *a, **k: None,
       ComplexRoPE=type("ComplexRoPE", (), {}))
module("torchtitan.models.deepseek_v3")
module("torchtitan.models.deepseek_v3.model", Attention=_module_class("Attention"))
# norms.py (2025) reads the device's SM count through torchtitan.utils.device_module.
SM_COUNT = {"n": 132}
module("torchtitan.utils", device_module=types.SimpleNamespace(
    get_device_properties=lambda device: types.SimpleNamespace(multi_processor_count=SM_COUNT["n"])))

standins.bare_packages(SRC, "torchtitan")
import torchtitan.models.common.moe as _moe_package  # noqa: E402

_moe_package.GroupedExperts = _module_class("GroupedExperts")  # fused_swiglu.py subclasses it


@contextlib.contextmanager
def cuda_ops_on_device():
    """torch.library.custom_op(..., device_types="cuda") registers the op for the conformance device too."""
    real = torch.library.custom_op
    if DEVICE != "cuda":
        def custom_op(*args, **kwargs):
            if kwargs.get("device_types") == "cuda":
                kwargs["device_types"] = ("cuda", DEVICE)
            return real(*args, **kwargs)
        torch.library.custom_op = custom_op
    try:
        yield
    finally:
        torch.library.custom_op = real


@contextlib.contextmanager
def cuda_device_queries(sm_count=132):
    """torch.cuda.get_device_properties(...).multi_processor_count and torch.cuda.current_device() without a GPU,
    for the host code that sizes persistent grids and the autotuners' pruning."""
    if DEVICE == "cuda":
        yield
        return
    real = torch.cuda.get_device_properties, torch.cuda.current_device
    torch.cuda.get_device_properties = lambda *a, **k: types.SimpleNamespace(multi_processor_count=sm_count)
    torch.cuda.current_device = lambda: 0
    try:
        yield
    finally:
        torch.cuda.get_device_properties, torch.cuda.current_device = real


CG_DIR = SRC / "torchtitan/experiments/kernels/triton_contiguous_group_gemm"
sys.path.append(str(CG_DIR))  # cg_backward.py imports tma_cuda_autotune and cg_forward by their bare names
with cuda_ops_on_device():
    ep = importlib.import_module("torchtitan.distributed.minimal_async_ep.kernels")
    swiglu = importlib.import_module("torchtitan.overrides.fused_swiglu")
    mla = importlib.import_module("torchtitan.overrides.fused_mla")
moe = importlib.import_module("torchtitan.models.common.moe.kernels")
cg_forward = importlib.import_module("torchtitan.experiments.kernels.triton_contiguous_group_gemm.cg_forward")
cg_backward = importlib.import_module("torchtitan.experiments.kernels.triton_contiguous_group_gemm.cg_backward")
cg_reference = importlib.import_module("torchtitan.experiments.kernels.triton_contiguous_group_gemm.cg_reference")
mg = importlib.import_module("torchtitan.experiments.kernels.triton_mg_group_gemm.torchao_pr.mg_grouped_gemm")
mg_reference = importlib.import_module(
    "torchtitan.experiments.kernels.triton_mg_group_gemm.torchao_pr.reference_utils")
dsgemm = importlib.import_module("torchtitan.experiments.deepseek_v3.dsgemm_kernels")
norms = importlib.import_module("torchtitan.models.norms")

for _mod in (ep, swiglu, mla, moe, cg_forward, cg_backward, cg_reference, mg, mg_reference, dsgemm, norms):
    assert pathlib.Path(_mod.__file__).is_relative_to(SRC), f"another copy: {_mod.__file__}"

logging.getLogger().setLevel(logging.WARNING)  # the grouped GEMM files set INFO, and log every call
warnings.filterwarnings("ignore", message=r"autotune of kernel .* skipped config")

# --- cases ---------------------------------------------------------------------------------------------------------

F16, BF16, F32, F64 = torch.float16, torch.bfloat16, torch.float32, torch.float64
I32, I64 = torch.int32, torch.int64
TOL = {F32: 1e-5, F16: 2e-3, BF16: 2e-2}
SHORT = {F32: "fp32", F16: "fp16", BF16: "bf16"}
FB = ("forward", "backward")
results = []


def case(name, run, stages=("run",)):
    if ARGS.only is not None and ARGS.only not in name:
        return
    torch.manual_seed(zlib.crc32(name.encode()))  # each case's inputs do not depend on the cases run before it
    check(results, name, run, stages)


def expect_refusal(name, launch, expected):
    if ARGS.only is not None and ARGS.only not in name:
        return
    torch.manual_seed(zlib.crc32(name.encode()))
    refusal(results, name, launch, expected)


# --- distributed/minimal_async_ep/kernels.py: MinimalAsyncEP's routing metadata, top-k reduce and peer copies --------


def peer_buffers(ep_size, rows, cols, dtype, pad=3):
    """ep_size peer buffers [rows, cols] of random contents, rows `pad` elements apart (so DST_ROW_STRIDE is not
    cols), and the int64 table of their addresses the kernels write through."""
    if dtype.is_floating_point:
        bufs = [torch.randn(rows, cols + pad).to(dtype)[:, :cols] for _ in range(ep_size)]
    else:
        bufs = [torch.randint(-99, 99, (rows, cols + pad), dtype=dtype)[:, :cols] for _ in range(ep_size)]
    return bufs, torch.tensor([b.data_ptr() for b in bufs], dtype=I64)


def strided(t):
    """t's values in a tensor of stride 2 (every other element of a buffer), as MinimalAsyncEP's slices are."""
    storage = torch.full((t.numel() * 2,), 12345, dtype=t.dtype)
    view = storage[::2]
    view.copy_(t)
    return view


def counts_case(rank, ep_size, num_experts):
    def run():
        counts = torch.randint(0, 500, (num_experts,), dtype=I64)
        dsts, ptrs = peer_buffers(ep_size, ep_size, num_experts, I64)
        want = [d.clone() for d in dsts]
        for w in want:
            w[rank] = counts
        ep.copy_full_counts_to_peers_kernel(counts, dsts, rank=rank, ep_size=ep_size, num_experts=num_experts,
                                            dst_ptrs=ptrs)
        yield {f"peer {p}": exact(dsts[p], want[p]) for p in range(ep_size)}
    return run


def dispatch_case(ep_size, local_experts, max_count, zeros=()):
    def run():
        E = ep_size * local_experts
        counts = torch.randint(0, max_count + 1, (E,), dtype=I64)
        counts[list(zeros)] = 0
        counts[0] = max_count
        starts = torch.cumsum(counts, 0) - counts
        dest_offsets = torch.randint(0, 10000, (E,), dtype=I64)
        ranks, rows = ep.fill_dispatch_metadata_kernel(
            strided(counts), strided(dest_offsets), strided(starts), num_routed_tokens=int(counts.sum()),
            num_local_experts=local_experts, max_tokens_per_segment=max_count)
        want_ranks = torch.repeat_interleave(torch.arange(E) // local_experts, counts)
        want_rows = torch.cat([dest_offsets[e] + torch.arange(int(counts[e])) for e in range(E)])
        yield {"dst_ranks": exact(ranks, want_ranks), "dst_rows": exact(rows, want_rows)}
    return run


def combine_case(ep_rank, ep_size, local_experts, max_len, zeros=()):
    def run():
        E = ep_size * local_experts
        segments = local_experts * ep_size  # segment = local expert * EP_SIZE + source rank
        lens = torch.randint(0, max_len + 1, (segments,), dtype=I64)
        lens[list(zeros)] = 0
        lens[1] = max_len
        out_starts = torch.cumsum(lens, 0) - lens
        source_starts = torch.randint(0, 100000, (ep_size, E), dtype=I64)
        total = int(lens.sum())
        src_2d = torch.full((ep_size, 2 * E), -7, dtype=I64)
        src_2d[:, ::2] = source_starts  # a column stride of 2, as in the library's test
        ranks, rows, valid = ep.fill_combine_metadata_kernel(
            strided(lens), strided(out_starts), src_2d[:, ::2], ep_rank=ep_rank, ep_size=ep_size,
            num_local_experts=local_experts, receive_capacity=total + 9, max_tokens_per_segment=max_len)
        seg = torch.arange(segments)
        src_rank, local = seg % ep_size, seg // ep_size
        first = source_starts[src_rank, ep_rank * local_experts + local]
        want_ranks = torch.repeat_interleave(src_rank, lens)
        want_rows = torch.cat([first[s] + torch.arange(int(lens[s])) for s in range(segments)])
        yield {"dst_ranks": exact(ranks[:total], want_ranks), "dst_rows": exact(rows[:total], want_rows),
               "num_valid_rows": exact(valid, torch.tensor([total]))}
    return run


def invert_case(n):
    def run():
        flat = torch.randperm(n, dtype=I64)
        got = ep.invert_flat_indices_kernel(flat, num_rows=n)
        want = torch.empty_like(flat)
        want[flat] = torch.arange(n)
        yield {"slot_to_row": exact(got, want)}
    return run


def topk_routing(tokens, top_k):
    """flat_indices (routed row -> top-k slot token * top_k + j, a permutation) and its inverse."""
    flat = torch.randperm(tokens * top_k, dtype=I64)
    slot_to_row = torch.empty_like(flat)
    slot_to_row[flat] = torch.arange(len(flat))
    return flat, slot_to_row


def reduce_case(tokens, top_k, cols, dtype, scores=None):
    """scores: None, "slot" (slot-ordered) or "row" (routed-row ordered)."""
    def run():
        flat, slot_to_row = topk_routing(tokens, top_k)
        routed = torch.randn(tokens * top_k, cols).to(dtype)
        s = torch.rand(tokens * top_k) if scores else None
        got = ep.reduce_topk_slots_kernel(routed, slot_to_row, s, num_tokens=tokens, top_k=top_k,
                                          scores_are_slot_ordered=scores == "slot")
        rows = slot_to_row.view(tokens, top_k)
        vals = routed.double()[rows]  # [tokens, top_k, cols]
        if scores == "slot":
            vals = vals * s.double().view(tokens, top_k, 1)
        elif scores == "row":
            vals = vals * s.double()[rows][..., None]
        yield {"out": (got, vals.sum(1), TOL[dtype])}
    return run


def expand_case(tokens, top_k, cols, dtype, out_dtype, scores=None):
    def run():
        flat, _ = topk_routing(tokens, top_k)
        grad = torch.randn(tokens, cols).to(dtype)
        s = torch.rand(tokens * top_k) if scores else None
        got = ep.expand_topk_grad_kernel(grad, flat, s, top_k=top_k, dtype=out_dtype,
                                         scores_are_slot_ordered=scores == "slot")
        want = grad.double()[flat // top_k]
        if scores == "slot":
            want = want * s.double()[flat][:, None]
        elif scores == "row":
            want = want * s.double()[:, None]
        # a copy without scores is exact; a scaled one rounds once to out_dtype
        tol = TOL[out_dtype] if scores else (0.0 if dtype == out_dtype else TOL[out_dtype])
        yield {"grad_routed": (got, want, tol),
               "dtype": exact(torch.tensor(got.dtype == out_dtype), torch.tensor(True))}
    return run


def scores_grad_case(tokens, top_k, cols, dtype, slot_ordered):
    def run():
        flat, _ = topk_routing(tokens, top_k)
        routed = torch.randn(tokens * top_k, cols).to(dtype)
        grad = torch.randn(tokens, cols).to(dtype)
        got = ep.topk_scores_grad_kernel(routed, grad, flat, top_k=top_k, dtype=F32,
                                         scores_are_slot_ordered=slot_ordered)
        dots = (routed.double() * grad.double()[flat // top_k]).sum(1)
        want = torch.empty_like(dots)
        if slot_ordered:
            want[flat] = dots
        else:
            want = dots
        yield {"grad_scores": (got, want, TOL[F32])}  # float32 sums of exact products
    return run


def copy_rows_case(ep_size, num_rows, cols, dtype, block_m, gather=False, valid=None, skipped=0):
    def run():
        capacity = num_rows + 5
        src = torch.randn(num_rows + 4, 2 * cols).to(dtype)[:, ::2]  # a column stride of 2
        dsts, ptrs = peer_buffers(ep_size, capacity, cols, dtype)
        ranks = torch.randint(0, ep_size, (num_rows,), dtype=I64)
        ranks[torch.randperm(num_rows)[:skipped]] = -1  # rows that go nowhere
        dst_rows = torch.randperm(capacity, dtype=I64)[:num_rows]
        src_rows = torch.randperm(num_rows + 4, dtype=I64)[:num_rows] if gather else None
        nvalid = torch.tensor([valid], dtype=I64) if valid is not None else None
        want = [d.clone() for d in dsts]
        limit = num_rows if valid is None else min(valid, num_rows)
        for r in range(limit):
            if ranks[r] >= 0:
                want[int(ranks[r])][int(dst_rows[r])] = src[int(src_rows[r]) if gather else r]
        ep.copy_rows_to_peers_kernel(src, dsts, ranks, dst_rows, ep_size=ep_size, num_rows=num_rows,
                                     num_cols=cols, dst_ptrs=ptrs, block_m=block_m, src_rows=src_rows,
                                     num_valid_rows=nvalid)
        yield {f"peer {p}": exact(dsts[p], want[p]) for p in range(ep_size)}
    return run


case("ep.copy_full_counts rank 2 of 3, 1500 experts (2 blocks)", counts_case(2, 3, 1500))
case("ep.copy_full_counts rank 0 of 1, 7 experts", counts_case(0, 1, 7))
case("ep.copy_full_counts rank 3 of 4, 130 experts", counts_case(3, 4, 130))
case("ep.fill_dispatch_metadata EP 3 x 4 local experts, up to 300 tokens (2 blocks), 3 empty, strided inputs",
     dispatch_case(3, 4, 300, zeros=(2, 5, 11)))
case("ep.fill_dispatch_metadata EP 1 x 5 local experts, up to 9 tokens, 2 empty",
     dispatch_case(1, 5, 9, zeros=(1, 3)))
case("ep.fill_combine_metadata rank 1 of EP 3 x 2 local experts, up to 270 rows, 2 empty segments",
     combine_case(1, 3, 2, 270, zeros=(0, 4)))
case("ep.fill_combine_metadata rank 0 of EP 2 x 3 local experts, up to 17 rows",
     combine_case(0, 2, 3, 17, zeros=(5,)))
case("ep.invert_flat_indices 1500 rows (2 blocks)", invert_case(1500))
case("ep.invert_flat_indices 7 rows", invert_case(7))
for _scores in (None, "slot", "row"):
    case(f"ep.reduce_topk_slots fp32 37 tokens, top-3, 300 cols, scores {_scores}",
         reduce_case(37, 3, 300, F32, _scores))
case("ep.reduce_topk_slots bf16 9 tokens, top-2, 2100 cols (2 column blocks), slot scores",
     reduce_case(9, 2, 2100, BF16, "slot"))
case("ep.reduce_topk_slots fp32 5 tokens, top-1, 7 cols", reduce_case(5, 1, 7, F32))
for _scores in (None, "slot", "row"):
    case(f"ep.expand_topk_grad fp32 37 tokens, top-3, 300 cols, scores {_scores}",
         expand_case(37, 3, 300, F32, F32, _scores))
case("ep.expand_topk_grad bf16 9 tokens, top-2, 2100 cols, slot scores",
     expand_case(9, 2, 2100, BF16, BF16, "slot"))
case("ep.expand_topk_grad bf16 -> fp32 11 tokens, top-4, 130 cols", expand_case(11, 4, 130, BF16, F32))
for _slot in (True, False):
    case(f"ep.topk_scores_grad fp32 37 tokens, top-3, 300 cols, {'slot' if _slot else 'row'}-ordered",
         scores_grad_case(37, 3, 300, F32, _slot))
case("ep.topk_scores_grad bf16 9 tokens, top-2, 1000 cols, slot-ordered", scores_grad_case(9, 2, 1000, BF16, True))
case("ep.copy_rows_to_peers fp32 3 peers, 37 rows (4 skipped), 300 cols, gathered, 30 valid, block_m 4",
     copy_rows_case(3, 37, 300, F32, 4, gather=True, valid=30, skipped=4))
case("ep.copy_rows_to_peers bf16 2 peers, 13 rows, 100 cols, block_m 1", copy_rows_case(2, 13, 100, BF16, 1))
case("ep.copy_rows_to_peers fp32 4 peers, 6 rows (1 skipped), 2100 cols (2 column blocks), block_m 2",
     copy_rows_case(4, 6, 2100, F32, 2, skipped=1))
case("ep.copy_rows_to_peers bf16 2 peers, 9 rows, 33 cols, 0 valid", copy_rows_case(2, 9, 33, BF16, 4, valid=0))


def empty_case():
    """No routed rows (grids with no programs), and rows of no columns (tl.sum over a fully masked block)."""
    none = torch.empty(0, dtype=I64)
    yield {"invert": exact(torch.tensor(ep.invert_flat_indices_kernel(none, num_rows=0).shape), torch.tensor([0])),
           "reduce": exact(torch.tensor(ep.reduce_topk_slots_kernel(torch.randn(0, 5), none, None, num_tokens=0,
                                                                    top_k=2).shape), torch.tensor([0, 5])),
           "expand": exact(torch.tensor(ep.expand_topk_grad_kernel(torch.randn(0, 5), none, None, top_k=2,
                                                                   dtype=F32).shape), torch.tensor([0, 5])),
           "scores of 0 columns": exact(ep.topk_scores_grad_kernel(torch.randn(4, 0), torch.randn(2, 0),
                                                                   torch.randperm(4), top_k=2, dtype=F32),
                                        torch.zeros(4))}


case("ep kernels on 0 rows and on rows of 0 columns", empty_case)



# --- overrides/fused_swiglu.py: torchtitan::silu_and_mul, forward and backward through its autograd ---------------


def silu_mul_ref(gate, up):
    return torch.nn.functional.silu(gate) * up


def swiglu_case(rows, cols, dtype, counts=None, fused_layout=False, offsets_dtype=I32):
    """counts: tokens per expert, whose cumulative sums are the grouped_mm offsets; rows past the last offset
    (capacity padding) are skipped by the kernels and not compared. fused_layout: gate and up are the two
    halves of FusedGroupedExperts' [rows, cols, 2] projection (column stride 2)."""
    def run():
        if fused_layout:
            leaf = torch.randn(rows, cols, 2).to(dtype).requires_grad_()
            gate, up = leaf.unbind(-1)
            leaves = [leaf]
        else:
            gate = torch.randn(rows, cols).to(dtype).requires_grad_()
            up = torch.randn(rows, cols).to(dtype).requires_grad_()
            leaves = [gate, up]
        offsets = None
        active = rows
        if counts is not None:
            offsets = torch.cumsum(torch.tensor(counts), 0).to(offsets_dtype)
            active = int(offsets[-1])
        out = swiglu.silu_and_mul_op(gate, up, offsets) if offsets is not None else swiglu.silu_and_mul_op(gate, up)
        g64 = gate.detach().double().requires_grad_()
        u64 = up.detach().double().requires_grad_()
        want = silu_mul_ref(g64, u64)
        yield {"out": (out[:active], want[:active], TOL[dtype])}
        # a gradient of column stride 2 where gate and up are strided too: the kernels take every tensor's strides
        dy = torch.randn(rows, 2 * cols).to(dtype)[:, ::2] if fused_layout else torch.randn(rows, cols).to(dtype)
        grads = torch.autograd.grad(out, leaves, dy)
        wg, wu = torch.autograd.grad(want, [g64, u64], dy.double())
        if fused_layout:
            got_g, got_u = grads[0].unbind(-1)
        else:
            got_g, got_u = grads
        yield {"dgate": (got_g[:active], wg[:active], TOL[dtype]), "dup": (got_u[:active], wu[:active], TOL[dtype])}
    return run


case("silu_and_mul fp32 37 x 300", swiglu_case(37, 300, F32), FB)
case("silu_and_mul bf16 37 x 300", swiglu_case(37, 300, BF16), FB)
case("silu_and_mul fp16 9 x 2100 (2 column blocks)", swiglu_case(9, 2100, F16), FB)
case("silu_and_mul bf16 fused [R, F, 2] layout, 70 rows, F 96, offsets of 5 experts (2 empty), 60 active",
     swiglu_case(70, 96, BF16, counts=[13, 0, 30, 0, 17], fused_layout=True), FB)
case("silu_and_mul fp32 fused layout, 21 rows, F 33, offsets of 3 experts, 1 active",
     swiglu_case(21, 33, F32, counts=[0, 1, 0], fused_layout=True), FB)
case("silu_and_mul fp32 13 rows, F 50, offsets of 2 experts, all 13 active", swiglu_case(13, 50, F32, counts=[6, 7]),
     FB)
case("silu_and_mul bf16 40 rows, F 20, int64 offsets of 4 experts, 23 active",
     swiglu_case(40, 20, BF16, counts=[5, 9, 0, 9], offsets_dtype=I64), FB)


# --- overrides/fused_mla.py: DeepSeek-V3 MLA's Q RoPE in place, K assembly and the KV backward -------------------


def rope_cache(max_pos, pairs):
    """ComplexRoPE's cache: cis(pos * freq) for each pair, complex64 [max_pos, pairs]."""
    freqs = 1.0 / (10000.0 ** (torch.arange(pairs, dtype=F64) * 2 / (2 * pairs)))
    angles = torch.outer(torch.arange(max_pos, dtype=F64), freqs)
    return torch.polar(torch.ones_like(angles), angles).to(torch.complex64)


def rotate(x, cache, pos):
    """ComplexRoPE on x [B, L, ..., 2 P] (adjacent pairs as complex numbers) at positions pos [B, L], float64."""
    c = torch.view_as_real(cache).double()[pos]  # [B, L, P, 2]
    while c.dim() < x.dim() + 1:
        c = c.unsqueeze(2)
    xe, xo = x[..., 0::2], x[..., 1::2]
    cos, sin = c[..., 0], c[..., 1]
    return torch.stack([xe * cos - xo * sin, xe * sin + xo * cos], -1).flatten(-2)


def positions_of(kind, B, L, max_pos):
    if kind == "random":
        return torch.randint(0, max_pos, (B, L), dtype=I64), None
    if kind == "1-D":
        p = torch.randperm(max_pos)[:L].to(I32)
        return p.long().expand(B, L), p
    return torch.arange(L).expand(B, L), None  # None: the library uses 0 .. L - 1


def mla_q_case(B, L, H, nope, rope, dtype, pos_kind="random"):
    def run():
        max_pos = L + 11
        cache = rope_cache(max_pos, rope // 2)
        pos, given = positions_of(pos_kind, B, L, max_pos)
        if pos_kind == "random":
            given = pos
        leaf = torch.randn(B, L, H, nope + rope).to(dtype).requires_grad_()
        q = leaf.clone()  # the Q projection's output, rotated in place (mark_dirty)
        out = mla.fused_mla_q(q, cache, given, nope)
        l64 = leaf.detach().double().requires_grad_()
        want = torch.cat([l64[..., :nope], rotate(l64[..., nope:], cache, pos)], -1)
        yield {"q": (out, want, TOL[dtype])}
        dy = torch.randn(out.shape).to(dtype)
        # the backward rotates the incoming gradient in place (contiguous() returns it as it is): give it a copy
        (got,) = torch.autograd.grad(out, [leaf], dy.clone())
        (wgrad,) = torch.autograd.grad(want, [l64], dy.double())
        yield {"dq": (got, wgrad, TOL[dtype])}
    return run


def mla_kv_case(B, L, H, nope, v_dim, rope, dtype, pos_kind="random", lora=0):
    """lora: k_pe is the tail of a [B, L, lora + rope] kv-down projection (torch.split, as the model's), so its
    row stride is not rope."""
    def run():
        max_pos = L + 5
        cache = rope_cache(max_pos, rope // 2)
        pos, given = positions_of(pos_kind, B, L, max_pos)
        if pos_kind == "random":
            given = pos
        kv = torch.randn(B, L, H, nope + v_dim).to(dtype).requires_grad_()
        if lora:
            kv_down = torch.randn(B, L, lora + rope).to(dtype).requires_grad_()
            k_pe = torch.split(kv_down, [lora, rope], dim=-1)[1]
        else:
            kv_down = k_pe = torch.randn(B, L, rope).to(dtype).requires_grad_()
        k, v = mla.fused_mla_kv(kv, k_pe, cache, given, nope)
        kv64 = kv.detach().double().requires_grad_()
        kpe64 = k_pe.detach().double().requires_grad_()
        k_rot = rotate(kpe64, cache, pos)[:, :, None, :].expand(B, L, H, rope)
        want_k = torch.cat([kv64[..., :nope], k_rot], -1)
        want_v = kv64[..., nope:]
        yield {"k": (k, want_k, TOL[dtype]), "v": exact(v, kv.detach()[..., nope:])}
        dk = torch.randn(k.shape).to(dtype)
        dv = torch.randn(v.shape).to(dtype)
        if lora:  # gradients that are views (strided), as a fused attention backward may hand them over
            dk = torch.randn(*k.shape[:-1], 2 * k.shape[-1]).to(dtype)[..., ::2]
            dv = torch.randn(*v.shape[:-1], v.shape[-1] + 8).to(dtype)[..., 8:]
        gkv, gkpe = torch.autograd.grad((k, v), [kv, kv_down], (dk, dv))
        gkpe = gkpe[..., -rope:]
        wkv, wkpe = torch.autograd.grad((want_k, want_v), [kv64, kpe64], (dk.double(), dv.double()))
        yield {"dkv": (gkv, wkv, TOL[dtype]), "dk_pe": (gkpe, wkpe, TOL[dtype])}
    return run


case("fused_mla_q fp32 B 2, L 7, 5 heads, nope 24, rope 16, random positions", mla_q_case(2, 7, 5, 24, 16, F32), FB)
case("fused_mla_q bf16 B 1, L 9, 20 heads (BLOCK_H 32), nope 32, rope 12 (6 of 8 pairs), no positions",
     mla_q_case(1, 9, 20, 32, 12, BF16, "none"), FB)
case("fused_mla_q fp16 B 3, L 4, 70 heads (2 head blocks), nope 16, rope 8, 1-D positions",
     mla_q_case(3, 4, 70, 16, 8, F16, "1-D"), FB)
case("fused_mla_kv fp32 B 2, L 5, 3 heads, nope 24, v 20, rope 16, random positions",
     mla_kv_case(2, 5, 3, 24, 20, 16, F32), FB)
case("fused_mla_kv bf16 B 1, L 6, 20 heads, nope 32, v 48, rope 12, 1-D positions",
     mla_kv_case(1, 6, 20, 32, 48, 12, BF16, "1-D"), FB)
case("fused_mla_kv fp32 B 2, L 4, 6 heads, nope 16, v 16, rope 16, k_pe a slice of the kv-down projection, strided "
     "gradients",
     mla_kv_case(2, 4, 6, 16, 16, 16, F32, lora=40), FB)
case("fused_mla_kv fp16 B 2, L 3, 70 heads (2 head blocks in the backward), nope 16, v 16, rope 8, no positions",
     mla_kv_case(2, 3, 70, 16, 16, 8, F16, "none"), FB)



# --- models/common/moe/kernels.py: the permutation indices of the expert-parallel token shuffle ------------------


def permute_case(experts_per_rank, num_ranks, max_tokens, alignment, dtype=I32, zeros=(), extra=7, direct=None):
    """generate_permute_indices against the library's own fill_indices_cpu (its pure-torch reference) and the
    definition; direct: (block_size, max_blocks) to call fill_indices_wrapper with a small grid, so that
    programs loop over experts (grid stride) and experts over BLOCK_SIZE chunks."""
    def run():
        n = experts_per_rank * num_ranks
        tokens = torch.randint(0, max_tokens + 1, (n,), dtype=dtype)
        tokens[list(zeros)] = 0
        per_expert = tokens.view(num_ranks, -1).sum(0).long()
        m_sizes_want = (per_expert.clamp_min(alignment) + alignment - 1) // alignment * alignment
        max_len = int(m_sizes_want.sum()) + extra  # the kernel does not mask at max_len: it must hold them all
        if direct is None:
            got, m_sizes, m_offsets = moe.generate_permute_indices(tokens, experts_per_rank, num_ranks, max_len,
                                                                   alignment)
        else:
            starts = torch.cumsum(tokens, 0) - tokens
            m_sizes = m_sizes_want.to(I32)
            m_offsets = torch.cumsum(m_sizes, 0)  # int64, as generate_permute_indices' write offsets are
            got = moe.fill_indices_wrapper(tokens, starts, m_offsets - m_sizes, experts_per_rank, num_ranks,
                                           max_len, block_size=direct[0], max_blocks=direct[1])
        starts = torch.cumsum(tokens, 0) - tokens
        write = torch.cumsum(m_sizes_want, 0) - m_sizes_want
        library_ref = moe.fill_indices_cpu(tokens, starts, write, experts_per_rank, num_ranks, max_len)
        want = torch.full((max_len,), -1, dtype=I64)  # from the definition: expert e's rows, rank by rank
        for e in range(experts_per_rank):
            w = int(write[e])
            for r in range(num_ranks):
                i = r * experts_per_rank + e
                want[w:w + int(tokens[i])] = int(starts[i]) + torch.arange(int(tokens[i]))
                w += int(tokens[i])
        yield {"indices": exact(got, want), "vs fill_indices_cpu": exact(got, library_ref),
               "m_sizes": exact(m_sizes, m_sizes_want), "m_offsets": exact(m_offsets, torch.cumsum(m_sizes_want, 0))}
    return run


case("moe.generate_permute_indices 4 experts x 2 ranks, int32, 3 empty, alignment 8",
     permute_case(4, 2, 9, 8, zeros=(1, 5, 6)))
case("moe.generate_permute_indices 13 experts x 3 ranks, int64, up to 200 tokens (2 chunks), alignment 16",
     permute_case(13, 3, 200, 16, dtype=I64, zeros=(4, 17)))
case("moe.generate_permute_indices 1 expert x 1 rank, no tokens (the alignment's padding only), alignment 32",
     permute_case(1, 1, 0, 32))
case("moe.fill_indices_wrapper 10 experts x 2 ranks, 3 programs (grid stride), BLOCK_SIZE 32, expert 7 empty",
     permute_case(10, 2, 90, 4, zeros=(7, 17), direct=(32, 3)))
case("moe.fill_indices_wrapper 5 experts x 4 ranks, 1 program, BLOCK_SIZE 16, int64",
     permute_case(5, 4, 40, 1, dtype=I64, direct=(16, 1)))


# --- experiments/kernels/triton_contiguous_group_gemm: the contiguous grouped GEMM, forward and backward ------------


def cg_inputs(groups, experts, N, K, dtype, group_size=128, unused=()):
    """x [groups * group_size, K], w [experts, N, K] and each row's expert, constant over each group of
    group_size rows (a group's expert never one of `unused`)."""
    M = groups * group_size
    x = torch.randn(M, K).to(dtype)
    w = (torch.randn(experts, N, K) / K ** 0.5).to(dtype)
    allowed = torch.tensor([e for e in range(experts) if e not in unused])
    per_group = allowed[torch.randint(0, len(allowed), (groups,))]
    indices = per_group.repeat_interleave(group_size).to(I32)
    return x, w, indices


def cg_forward_case(kind, groups, experts, N, K, dtype, group_size=128, sms=132, unused=()):
    """kind: "persistent" (cg_grouped_gemm_forward, whose output is always bfloat16, on NUM_SMS programs) or
    "dynamic" (cg_grouped_gemm_forward_dynamic, output in the input's dtype); against the library's
    pytorch_reference (cg_reference.py) in float64."""
    def run():
        x, w, indices = cg_inputs(groups, experts, N, K, dtype, group_size, unused)
        with cuda_device_queries(sms):
            if kind == "persistent":
                y = cg_forward.cg_grouped_gemm_forward(x, w, indices, group_size_m=group_size)
            else:
                y = cg_forward.cg_grouped_gemm_forward_dynamic(x, w, indices, group_size_m=group_size)
        want = cg_reference.pytorch_reference(x.double(), w.double(), indices, group_size)
        out_dtype = BF16 if kind == "persistent" else dtype
        yield {"y": (y, want, TOL[out_dtype]),
               "dtype": exact(torch.tensor(y.dtype == out_dtype), torch.tensor(True))}
    return run


def cg_autograd_case(groups, experts, N, K, dtype, group_size=128, sms=132, unused=()):
    """cg_backward.cg_grouped_gemm (ContiguousGroupedGEMM): the persistent forward (bfloat16 out), then the
    dx kernel (autotuned) and the dw kernel. The dw kernel maps programs to tiles by (N * K) //
    (BLOCK_N * BLOCK_K) with BLOCK_N = min(128, N), BLOCK_K = min(32, K): N and K are multiples of those."""
    def run():
        x, w, indices = cg_inputs(groups, experts, N, K, dtype, group_size, unused)
        x.requires_grad_()
        w.requires_grad_()
        with cuda_device_queries(sms):
            y = cg_backward.cg_grouped_gemm(x, w, indices, group_size)
        x64 = x.detach().double().requires_grad_()
        w64 = w.detach().double().requires_grad_()
        want = cg_reference.pytorch_reference(x64, w64, indices, group_size)
        yield {"y": (y, want, TOL[BF16])}
        dy = torch.randn(y.shape).to(y.dtype)
        with cuda_device_queries(sms):
            gx, gw = torch.autograd.grad(y, [x, w], dy)
        wx, ww = torch.autograd.grad(want, [x64, w64], dy.double())
        # the gradients are computed and stored in bfloat16 (the output's dtype) before autograd casts them
        yield {"dx": (gx, wx, TOL[BF16]), "dw": (gw, ww, TOL[BF16])}
    return run


def cg_backward_direct_case(groups, experts, N, K, dtype, group_size=128, unused=()):
    """cg_grouped_gemm_backward_inputs and _weights on their own, with a gradient in `dtype` (their outputs take
    its dtype)."""
    def run():
        x, w, indices = cg_inputs(groups, experts, N, K, dtype, group_size, unused)
        dy = torch.randn(x.shape[0], N).to(dtype)
        gx = cg_backward.cg_grouped_gemm_backward_inputs(dy, w, indices, group_size)
        gw = cg_backward.cg_grouped_gemm_backward_weights(dy, x, indices, experts, group_size)
        wx = torch.empty(x.shape, dtype=F64)
        ww = torch.zeros(w.shape, dtype=F64)
        for start in range(0, x.shape[0], group_size):
            e = int(indices[start])
            rows = slice(start, start + group_size)
            wx[rows] = dy.double()[rows] @ w.double()[e]
            ww[e] += dy.double()[rows].T @ x.double()[rows]
        out = {"dx": (gx, wx, TOL[dtype]), "dw": (gw, ww, TOL[dtype])}
        if N % min(128, N) or K % min(32, K):
            # where N or K is not a multiple of the dw kernel's blocks: the tiles its map reaches
            bn, bk = min(128, N), min(32, K)
            per_expert = (N * K) // (bn * bk)
            written = torch.zeros(w.shape, dtype=torch.bool)
            for pid in range(experts * triton.cdiv(N, bn) * triton.cdiv(K, bk)):
                e, pos = divmod(pid, per_expert)
                n, k = divmod(pos, K // bk)
                if e < experts:
                    written[e, n * bn:(n + 1) * bn, k * bk:(k + 1) * bk] = True
            out["dw where written"] = (gw[written], ww[written], TOL[dtype])
            out["dw's last tile zero"] = exact(gw[~written], torch.zeros_like(gw[~written]))
        yield out
    return run


case("cg.forward persistent bf16 4 groups of 128, 5 experts (2 unused), N 200, K 72",
     cg_forward_case("persistent", 4, 5, 200, 72, BF16, unused=(1, 3)))
case("cg.forward persistent fp32 in (bf16 out) 3 groups, 4 experts, N 384, K 256, 3 SMs (tile loop)",
     cg_forward_case("persistent", 3, 4, 384, 256, F32, sms=3))
case("cg.forward persistent bf16 2 groups of 256, 3 experts, N 130, K 40, 5 SMs",
     cg_forward_case("persistent", 2, 3, 130, 40, BF16, group_size=256, sms=5))
case("cg.forward dynamic fp32 3 groups, 4 experts (1 unused), N 100, K 50",
     cg_forward_case("dynamic", 3, 4, 100, 50, F32, unused=(2,)))
case("cg.forward dynamic bf16 4 groups, 6 experts, N 256, K 128", cg_forward_case("dynamic", 4, 6, 256, 128, BF16))
case("cg.forward dynamic fp16 2 groups of 256, 2 experts, N 72, K 200",
     cg_forward_case("dynamic", 2, 2, 72, 200, F16, group_size=256))
case("cg.cg_grouped_gemm bf16 4 groups, 6 experts (2 unused), N 256, K 96",
     cg_autograd_case(4, 6, 256, 96, BF16, unused=(0, 4)), FB)
case("cg.cg_grouped_gemm bf16 3 groups of 256, 3 experts, N 128, K 64, 2 SMs",
     cg_autograd_case(3, 3, 128, 64, BF16, group_size=256, sms=2), FB)


def cg_autograd_fp32():
    x, w, indices = cg_inputs(2, 3, 128, 64, F32)
    x.requires_grad_()
    with cuda_device_queries():
        y = cg_backward.cg_grouped_gemm(x, w, indices)
        y.backward(torch.randn(y.shape).to(y.dtype))


# With float32 inputs the forward's output, so the incoming gradient, is bfloat16: the dx kernel's
# tl.dot(grad_output, weights) then mixes bfloat16 and float32, which Triton refuses ("Both operands must be
# same dtype") and Tegula too.
expect_refusal("cg.cg_grouped_gemm fp32 inputs: the backward's tl.dot of a bf16 gradient and fp32 weights",
               cg_autograd_fp32, r"E0314.*same dtype")
case("cg.backward_inputs / _weights fp32 3 groups, 4 experts (1 unused), N 256, K 64",
     cg_backward_direct_case(3, 4, 256, 64, F32, unused=(3,)))
case("cg.backward_inputs / _weights bf16 2 groups of 256, 3 experts, N 64, K 32",
     cg_backward_direct_case(2, 3, 64, 32, BF16, group_size=256))
CG_DW_TILES = "cg.backward_inputs / _weights fp32 2 groups, 2 experts, N 200 (not a multiple of BLOCK_SIZE_N 128), K 64"
case(CG_DW_TILES, cg_backward_direct_case(2, 2, 200, 64, F32))



# --- experiments/kernels/triton_mg_group_gemm/torchao_pr: the M*G grouped GEMM's pointer kernels -------------------
#
# The file's wrappers (grouped_gemm_forward, grouped_gemm_backward, grouped_gemm_dx_tma / _dw_tma, GroupedGemmMg) fill
# Triton 3.3's host TMA descriptors, so the cases launch its two kernels that run on plain pointers as the wrappers
# launch the others: _kernel_mg_forward_no_tma (which no wrapper calls) and _kernel_mg_dw_tma with USE_TMA_LOAD and
# USE_TMA_STORE off, each under its autotuner and early_config_prune (BLOCK_SIZE_M 128; K a multiple of BLOCK_SIZE_K;
# M_BUCKET // G of 64 or more, and N of at least 128 with the CPU backend's SM count of its threads, or every config
# is pruned). Every group shares the one weight [N, K], as the kernels
# index it; the references are the file set's own compute_reference_forward / _backward in float64.


def mg_inputs(sizes, N, K, dtype):
    m_sizes = torch.tensor(sizes, dtype=I32)
    M = int(m_sizes.sum())
    x = torch.randn(M, K).to(dtype)
    w = (torch.randn(N, K) / K ** 0.5).to(dtype)
    return m_sizes, x, w, M


def mg_forward_case(sizes, N, K, dtype, sms):
    def run():
        m_sizes, x, w, M = mg_inputs(sizes, N, K, dtype)
        y = torch.full((M, N), float("nan")).to(dtype)
        with cuda_device_queries(sms):
            mg._kernel_mg_forward_no_tma[(sms,)](x, w, y, None, m_sizes, len(sizes), triton.next_power_of_2(M), N,
                                                 K, sms, False, False, TMA_SIZE=128)
        want = mg_reference.compute_reference_forward(x.double(), w.double(), m_sizes)
        yield {"y": (y, want, TOL[dtype])}
    return run


def mg_dw_case(sizes, N, K, dtype, sms):
    def run():
        m_sizes, x, w, M = mg_inputs(sizes, N, K, dtype)
        dy = torch.randn(M, N).to(dtype)
        dw = torch.zeros(N, K, dtype=dtype)  # as grouped_gemm_dw_tma allocates it
        with cuda_device_queries(sms):
            mg._kernel_mg_dw_tma[(sms,)](x, dy, dw, torch.empty(1, dtype=torch.uint8), m_sizes, len(sizes),
                                         triton.next_power_of_2(M), N, K, sms, False, False, TMA_SIZE=128)
        _, want = mg_reference.compute_reference_backward(x.double(), w.double(), m_sizes, dy.double())
        yield {"dw": (dw, want, TOL[dtype])}
    return run


case("mg.forward_no_tma fp32 3 groups of 100 / 0 / 77 rows, N 200, K 128, 4 programs",
     mg_forward_case([100, 0, 77], 200, 128, F32, 4))
case("mg.forward_no_tma bf16 4 groups of 64 / 130 / 0 / 61, N 256, K 192, 3 programs",
     mg_forward_case([64, 130, 0, 61], 256, 192, BF16, 3))
case("mg.forward_no_tma fp16 1 group of 300, N 130, K 64, 132 programs", mg_forward_case([300], 130, 64, F16, 132))
case("mg.dw pointer path fp32 3 groups of 100 / 0 / 77 rows, N 200, K 128, 4 programs",
     mg_dw_case([100, 0, 77], 200, 128, F32, 4))
case("mg.dw pointer path bf16 2 groups of 150 / 90, N 136, K 64, 2 programs", mg_dw_case([150, 90], 136, 64, BF16, 2))
case("mg.dw pointer path fp16 5 groups (2 empty), N 160, K 256, 7 programs",
     mg_dw_case([40, 0, 333, 0, 11], 160, 256, F16, 7))


def mg_descriptor(name, descriptors, t, block_dims):
    """A 2-D descriptor of the row-major tensor `t` in blocks of `block_dims`, filled as the wrappers'
    TmaDescriptorHelper fills it (driver.active.utils.fill_2d_tma_descriptor into a 128-byte buffer, in the
    grid function, once the autotuner has picked the block sizes); the kernel gets the buffer."""
    desc = descriptors.setdefault(name, torch.zeros(128, dtype=torch.uint8))
    fill_2d_tma_descriptor(t.data_ptr(), t.shape[0], t.shape[1], *block_dims, t.element_size(), desc.data_ptr())
    return desc


def mg_tma_case(kernel, sizes, N, K, dtype, sms):
    """A kernel of the file's TMA path (Triton 3.3's experimental descriptor API, which Triton removed in 2025,
    #6488), launched as its wrapper launches it: host descriptors of the inputs (and of dw's output) filled in
    the grid function, a per-program 128-byte workspace the kernel writes its output's descriptor into with
    tl.extra.cuda.experimental_device_tensormap_create2d, loads and stores through tl._experimental_descriptor_*."""
    def run():
        m_sizes, x, w, M = mg_inputs(sizes, N, K, dtype)
        G, bucket, d = len(sizes), triton.next_power_of_2(M), {}
        workspace = torch.empty(sms * 128, dtype=torch.uint8)
        with cuda_device_queries(sms):
            if kernel == "forward_hopper":  # each group its own N // G rows of w, y [M, N // G]
                y = torch.full((M, N // G), float("nan")).to(dtype)
                mg._kernel_mg_forward_hopper[lambda META: (mg_descriptor("x", d, x, (META["BLOCK_SIZE_M"], META["BLOCK_SIZE_K"])), mg_descriptor("w", d, w, (META["BLOCK_SIZE_N"], META["BLOCK_SIZE_K"])), sms)[2:]](
                    d.setdefault("x", torch.zeros(128, dtype=torch.uint8)), d.setdefault("w", torch.zeros(128, dtype=torch.uint8)),
                    y, workspace, m_sizes, G, bucket, N, K, sms, TMA_SIZE=128, USE_EPILOGUE_SUBTILING=False)
                bounds, n = [0, *torch.cumsum(m_sizes, 0).tolist()], N // G
                want = torch.cat([x[bounds[g]:bounds[g + 1]].double() @ w[g * n:(g + 1) * n].double().T
                                  for g in range(G)])
                yield {"y": (y, want, TOL[dtype])}
            elif kernel == "forward_tma":
                y = torch.full((M, N), float("nan")).to(dtype)
                mg._kernel_mg_forward_tma[lambda META: (mg_descriptor("x", d, x, (META["BLOCK_SIZE_M"], META["BLOCK_SIZE_K"])), mg_descriptor("w", d, w, (META["BLOCK_SIZE_N"], META["BLOCK_SIZE_K"])), sms)[2:]](
                    d.setdefault("x", torch.zeros(128, dtype=torch.uint8)), d.setdefault("w", torch.zeros(128, dtype=torch.uint8)),
                    y, workspace, m_sizes, None, None, G, bucket, N, K, sms, True, True, TMA_SIZE=128, USE_FP8=False)
                want = mg_reference.compute_reference_forward(x.double(), w.double(), m_sizes)
                yield {"y": (y, want, TOL[dtype])}
            elif kernel == "dx_tma":
                dy = torch.randn(M, N).to(dtype)
                dx = torch.full((M, K), float("nan")).to(dtype)
                mg._kernel_mg_dx_tma[lambda META: (mg_descriptor("dy", d, dy, (META["BLOCK_SIZE_M"], META["BLOCK_SIZE_N"])), mg_descriptor("w", d, w, (META["BLOCK_SIZE_N"], META["BLOCK_SIZE_K"])), sms)[2:]](
                    d.setdefault("dy", torch.zeros(128, dtype=torch.uint8)), d.setdefault("w", torch.zeros(128, dtype=torch.uint8)),
                    dx, workspace, m_sizes, G, bucket, N, K, sms, True, True, TMA_SIZE=128)
                want, _ = mg_reference.compute_reference_backward(x.double(), w.double(), m_sizes, dy.double())
                yield {"dx": (dx, want, TOL[dtype])}
            else:  # dw: TMA loads of x and dy, the TMA store through grad_w's descriptor (its `workspace`)
                dy = torch.randn(M, N).to(dtype)
                dw = torch.full((N, K), float("nan")).to(dtype)
                mg._kernel_mg_dw_tma[lambda META: (mg_descriptor("x", d, x, (META["BLOCK_SIZE_M"], META["BLOCK_SIZE_K"])), mg_descriptor("dy", d, dy, (META["BLOCK_SIZE_M"], META["BLOCK_SIZE_N"])), mg_descriptor("dw", d, dw, (META["BLOCK_SIZE_N"], META["BLOCK_SIZE_K"])), sms)[3:]](
                    d.setdefault("x", torch.zeros(128, dtype=torch.uint8)), d.setdefault("dy", torch.zeros(128, dtype=torch.uint8)),
                    dw, d.setdefault("dw", torch.zeros(128, dtype=torch.uint8)), m_sizes, G, bucket, N, K, sms, True, True,
                    TMA_SIZE=128)
                _, want = mg_reference.compute_reference_backward(x.double(), w.double(), m_sizes, dy.double())
                yield {"dw": (dw, want, TOL[dtype])}
    return run


case("mg.forward_hopper (TMA) bf16 3 groups of 128 / 0 / 70 rows, N 384 (128 a group), K 128, 4 programs",
     mg_tma_case("forward_hopper", [128, 0, 70], 384, 128, BF16, 4))
case("mg.forward_tma fp16 3 groups of 100 / 0 / 77 rows, N 200, K 128, 4 programs",
     mg_tma_case("forward_tma", [100, 0, 77], 200, 128, F16, 4))
case("mg.dx_tma bf16 2 groups of 150 / 61, N 256, K 192, 3 programs",
     mg_tma_case("dx_tma", [150, 61], 256, 192, BF16, 3))
case("mg.dw_tma (TMA loads and store) fp16 3 groups of 100 / 0 / 77, N 136, K 64, 4 programs",
     mg_tma_case("dw_tma", [100, 0, 77], 136, 64, F16, 4))


# --- experiments/deepseek_v3/dsgemm_kernels.py: DeepSeek's 1 x 128 groupwise float8 activation quantizer -----------


def quant_case(shape, block, dtype, switching=2048, zero_block=False):
    """groupwise_activation_quant: rows below `switching` run dynamic_quant_kernel (DeepSeek's, a program a
    block: scale = amax / 448, no floor, so an all-zero block gives 0 / 0), others grid_stride_quant_kernel (a
    program a row and a grid-stride loop over its blocks, scale floored at 1e-9)."""
    def run():
        x = torch.randn(shape).to(dtype) * 3
        rows = x.numel() // shape[-1]
        if zero_block:
            x.view(rows, -1)[rows // 2, block:2 * block] = 0
        y, s = dsgemm.groupwise_activation_quant(x, block, switching_size=switching)
        blocks = x.double().reshape(rows, -1, block)
        amax = blocks.abs().amax(-1) / 448.0
        if rows >= switching:
            amax = amax.clamp_min(1e-9)
        want_s = amax.reshape(*shape[:-1], shape[-1] // block)
        quotient = blocks / s.double().reshape(rows, -1, 1)
        yield {"scales": (s, want_s, 1e-6), "codes": fp8_codes(y.reshape(rows, -1, block), quotient),
               "shapes": exact(torch.tensor([*y.shape, *s.shape]), torch.tensor([*shape, *want_s.shape]))}
    return run


def quant_zero_block_dynamic():
    """dynamic_quant_kernel has no floor under its scale: an all-zero block gets scale 0 and codes 0 / 0, NaN
    (the float8 NaN, as Triton's conversion gives it), the other blocks their codes as usual."""
    rows, cols, block = 16, 384, 128
    x = (torch.randn(rows, cols) * 3).to(BF16)
    x[5, block:2 * block] = 0
    y, s = dsgemm.groupwise_activation_quant(x, block)
    blocks = x.double().view(rows, -1, block)
    zero = blocks.abs().amax(-1) == 0
    codes = y.view(torch.uint8).view(rows, -1, block)
    live = codes[~zero].view(torch.float8_e4m3fn)
    yield {"scales": (s, blocks.abs().amax(-1) / 448.0, 1e-6),
           "zero block NaN": exact(torch.isnan(y.float()).view(rows, -1, block).all(-1), zero),
           "codes": fp8_codes(live, (blocks / s.double()[..., None])[~zero])}


case("dsgemm.groupwise_activation_quant bf16 37 x 384, 128 blocks (dynamic kernel)", quant_case((37, 384), 128, BF16))
case("dsgemm.groupwise_activation_quant bf16 16 x 384, an all-zero block (dynamic kernel: scale 0, NaN codes)",
     quant_zero_block_dynamic)
case("dsgemm.groupwise_activation_quant fp32 2 x 5 x 256, 64 blocks (dynamic kernel)",
     quant_case((2, 5, 256), 64, F32))
case("dsgemm.groupwise_activation_quant bf16 300 x 640, 128 blocks, a zero block (grid stride, 1 program a row)",
     quant_case((300, 640), 128, BF16, switching=8, zero_block=True))
case("dsgemm.groupwise_activation_quant fp32 20 x 512, 128 blocks (grid stride, 4 programs a row)",
     quant_case((20, 512), 128, F32, switching=4))


# --- models/norms.py (2025-02-05): the fused RMS norm, forward and backward -----------------------------------------


def rmsnorm_case(shape, dtype, sm_count, eps=1e-6):
    """fused_rms_norm_fn (TritonFusedRMSNorm) under its autotuners; the backward sums sm_count programs' partial
    weight gradients (torchtitan.utils.device_module's SM count, stood in)."""
    def run():
        x = torch.randn(shape).to(dtype).requires_grad_()
        w = (1 + 0.5 * torch.randn(shape[-1])).to(dtype).requires_grad_()
        SM_COUNT["n"] = sm_count
        y = norms.fused_rms_norm_fn(x, w, eps=eps)
        x64 = x.detach().double().requires_grad_()
        w64 = w.detach().double().requires_grad_()
        want = x64 * torch.rsqrt(x64.pow(2).mean(-1, keepdim=True) + eps) * w64
        yield {"y": (y, want, TOL[dtype])}
        dy = torch.randn(shape).to(dtype)
        gx, gw = torch.autograd.grad(y, [x, w], dy)
        wx, ww = torch.autograd.grad(want, [x64, w64], dy.double())
        yield {"dx": (gx, wx, TOL[dtype]), "dw": (gw, ww, TOL[dtype])}
    return run


case("fused_rms_norm fp32 4 x 9 x 1000, 132 SMs (most programs idle)", rmsnorm_case((4, 9, 1000), F32, 132), FB)
case("fused_rms_norm bf16 37 x 300, 4 SMs (10 rows a program)", rmsnorm_case((37, 300), BF16, 4), FB)
case("fused_rms_norm fp16 5 x 2048, 3 SMs", rmsnorm_case((5, 2048), F16, 3), FB)
case("fused_rms_norm fp32 1 x 77, 1 SM", rmsnorm_case((1, 77), F32, 1), FB)

# --- report --------------------------------------------------------------------------------------------------------

LIBRARY_BUGS = {
    CG_DW_TILES: "torchtitan's _kernel_cg_backward_dw maps programs to tiles by (N * K) // (BLOCK_SIZE_N * "
                 "BLOCK_SIZE_K), 3 here for a grid of 2 x 2 tiles an expert, so the last tile of every expert's "
                 "weight gradient (rows 128-199, columns 32-63) is never written and stays zero; "
                 "cg_grouped_gemm_backward_weights does not check N and K",
}
sys.exit(report(results, ARGS.json, library=LIBRARY_BUGS, library_name="torchtitan"))
