"""verl's Triton kernels (volcengine/verl, verl/utils/kernel) on Tegula, through the conformance shim's `triton`
package, against torch float64 references written here from the math.

Cases:

  - the fused linear + cross-entropy / entropy of kernels.py through linear_cross_entropy.py's autograd Function
    `linear_cross_entropy(hidden, weight, labels, temperature, reduction)`, forward (logprobs of the labels and
    the entropy of softmax(hidden @ weight.T / temperature); `efficient_entropy_kernel_general_mainloop` over
    1024-column vocabulary splits and `efficient_entropy_triton_kernel_epilogue`) and backward (d_hidden, d_weight
    for random upstream gradients of both outputs) under each backward method the library implements:
    _Split_Dlogits_N (its default: `efficient_entropy_backward_kernel_general_d_logits_split_N` over 9504-column
    splits, one and two of them, then torch matmuls), _Total_Separate (`..._general_d_logits` over the whole
    vocabulary) and _Total_Fuse_MN (`..._general_mainloop_MN`, which atomically adds both gradients in float32);
    reductions none, sum and mean; temperatures 1, 1.5 and 0.7; float32, bfloat16 and float16 inputs; 2-D and 3-D
    hidden; token counts that leave a partial 128-row block (77, 80, 112, 122, 203, 208, 2 x 61); hidden sizes
    128 / 256 / 384 (the host asserts multiples of 128);
  - the same kernels' tensor-descriptor paths (USE_TMA, `tl.make_tensor_descriptor` in the kernel): kernels.py
    decides SUPPORT_CUDA_TMA at import from the CUDA capability, so these cases set it to True and register an
    allocator as the module does where TMA is supported;
  - tensor parallelism (a dist_process_group: the vocabulary sharded over 2 ranks, `rank` offsets in the
    kernels, `efficient_entropy_triton_kernel_epilogue_tp` and `efficient_entropy_triton_epilogue_tp_update`
    around all-reduces of the per-split maxima, the label logits and the accumulators; backward per shard,
    d_hidden summed over the ranks as the library's test does), float32 with reduction mean and bfloat16 with none;
  - `efficient_entropy_backward_kernel_d_hidden` and `efficient_entropy_backward_kernel_d_weight`, which no host
    function of verl launches: launched here on the forward's maximum / accumulator / entropy_b, with the grids
    their program-id arithmetic implies (cdiv(tokens, BLOCK_SIZE_M) * cdiv(hidden, BLOCK_SIZE_K) and
    cdiv(vocab, BLOCK_SIZE_N) * cdiv(hidden, BLOCK_SIZE_K)), float32 and bfloat16, reductions none, sum and mean;
  - fp8_kernel.py's blockwise float8 e4m3 quantizer `_blockwise_cast_to_fp8_kernel` through
    `scaled_fp8_blockwise` (padding to whole blocks, then cropping), `blockwise_cast_to_fp8_triton` on shapes
    that end in partial blocks (the kernel's masks), blocks 128 x 128 and 64 x 32, float32 / bfloat16 / float16
    inputs, a transposed (non-contiguous) input (the num_warps=1 launch) and an all-zero block (the 1e-10 floor).

Inputs are seeded per case (the seed is the case name's CRC, so -k reproduces a case's data). A case passes when
every output's largest difference from its reference is at most the tolerance times the reference's largest
magnitude: float32 1e-5, float16 2e-3, bfloat16 2e-2 (by the type of hidden / weight; the forward's outputs are
float32 either way); the quantizer's scales 1e-6 relative to each, its codes within half an e4m3 step of x / scale.

Result on the CPU backend: 53 of 59 lines match. The six that fail are verl's own bugs, which any machine
shows (Tegula computes what the kernels say):

  - Vocabularies that are not a multiple of 1024 (4 lines: "vocab 1500", plain and TMA, forward and backward).
    The forward mainloop sums exp(logit - max) over every column of a 1024-column split; columns past the end of
    the vocabulary are loaded as zero weights (`other=0.0`; the TMA path's descriptor pads with zeros too), so
    each counts as a logit of 0 in the softmax's denominator: num_splits * 1024 - vocab phantom terms shift the
    log-sum-exp, hence logprobs, entropy and, through the saved accumulator, both gradients. The same outputs
    match a reference with 524 zero logits appended to each row to 1e-6 (the "zero-padded reference" case).
    Real vocabularies mostly are not multiples of 1024 (151936 = 148 * 1024 + 384); there the error is small
    only because a few hundred phantom terms are lost among 150k. Taking the split's max over the columns below
    min((pid_n + 1) * vocab_per_split, vocab_size) only (-inf elsewhere) and zeroing exp_logits in the others
    fixes it.
  - Reductions "sum" and "mean" when the token count is not a multiple of 16 (2 lines: 203 tokens; 208 tokens
    match, and so do 1 / 17 / 203 tokens with reduction "none"). `efficient_entropy_triton_kernel_epilogue`
    sums `global_logprobs` over its whole 16-row block: in the rows past num_tokens the accumulator is 0 (its
    loads' `other=0.0`), log(0) = -inf, and the row contributes +inf, so the loss is inf. Where the rows are
    masked before tl.sum (tl.where(offs_m < num_tokens, global_logprobs, 0.0)) the loss is right;
    `efficient_entropy_triton_epilogue_tp_update` has the same unmasked sum. The backward does not read the
    loss, so its lines pass.

With both changes made to a copy of kernels.py, every linear_cross_entropy case matches the math (and the
zero-padded reference no longer does).

verl is not part of Tegula; point this at a tree holding verl/utils/kernel/{kernels,linear_cross_entropy,
fp8_kernel}.py and verl/utils/device.py (`git archive HEAD verl/utils/kernel verl/utils/device.py | tar -x -C
<tree>`; written against commit b178a3cd56f58b2d502255daba591e92833930a7 of 2026-01-29):

    TEGULA_CONFORMANCE_DEVICE=cpu .venv/bin/python tools/conformance/verl_ops.py <verl tree> [-k SUBSTRING] \
        [--json out.json]

`import verl` pulls in ray, transformers and the trainers, so the verl packages are imported bare
(standins.bare_packages: no __init__ runs) and the three kernel files and device.py load from the tree with their
own imports. Stand-ins for what a CPU machine lacks (none is a Triton kernel or reached by one):

  - torch, through standins.cuda_claims: Tensor.is_cuda says yes for the conformance device's tensors (the host
    functions assert CUDA tensors) and device="cuda" allocations go to that device;
  - torch.cuda.nvtx.range, where torch has no NVTX (a CPU-only build; linear_cross_entropy.py wraps both passes
    in NVTX ranges): a context manager that does nothing;
  - for the tensor-parallel cases, kernels.py's `dist` (torch.distributed with NCCL): get_rank / get_world_size
    / all_reduce (SUM, MAX) over the ranks of one process, each rank a thread; the threads take turns (one runs
    while the others wait in an all-reduce), so no two launch kernels at once; and kernels.py's get_torch_device
    (verl's answers torch.cpu on this machine, whose Stream.record_event takes no event, unlike CUDA's that the
    forward calls): torch.cpu's Stream with a record_event that takes one, its Event, stream and a
    current_stream; the CPU runs in order, so recording and waiting do nothing.

Not covered: BackwardEnum._Split_Dlogits_M (verl raises NotImplementedError), and verl's other Triton use
(verl/utils/torch_functional.py calls flash-attention's cross_entropy_loss, covered by flash_attn_ops.py). Prints
one line per case (ok / FAIL, the largest difference from the reference, each output's difference or the first
line of the error) and the total.
"""

import argparse
import contextlib
import importlib
import json
import os
import pathlib
import sys
import threading
import types
import zlib

SHIM = pathlib.Path(__file__).resolve().parent / "shim"
_parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
_parser.add_argument("source", type=pathlib.Path, help="a tree holding verl/utils/kernel and verl/utils/device.py")
_parser.add_argument("-k", dest="only", help="run only the cases whose name holds this")
_parser.add_argument("--json", type=pathlib.Path, help="write every case's outcome here")
ARGS = _parser.parse_args()
SRC = ARGS.source.resolve()
for _file in ("verl/utils/kernel/kernels.py", "verl/utils/kernel/linear_cross_entropy.py",
              "verl/utils/kernel/fp8_kernel.py", "verl/utils/device.py"):
    if not (SRC / _file).is_file():
        sys.exit(f"{SRC} holds no {_file}")
sys.path.insert(0, str(SHIM))
os.environ.setdefault("TEGULA_RECOMPILE_WARNING", "0")

import torch  # noqa: E402

import standins  # noqa: E402

DEVICE = os.environ.get("TEGULA_CONFORMANCE_DEVICE", "cpu")

import triton  # noqa: E402
from comparisons import check, exact, fp8_codes  # noqa: E402

assert pathlib.Path(triton.__file__).is_relative_to(SHIM), f"the real Triton was imported: {triton.__file__}"

# --- stand-ins -----------------------------------------------------------------------------------------------------

standins.bare_packages(SRC, "verl")
_CLAIMS = standins.cuda_claims(DEVICE)  # on for the rest of the process (kept referenced: its exit undoes it)
_CLAIMS.__enter__()
try:
    with torch.cuda.nvtx.range("probe"):
        pass
except (RuntimeError, AttributeError):  # a CPU-only build of torch has no NVTX
    torch.cuda.nvtx.range = lambda *args, **kwargs: contextlib.nullcontext()

kernels = importlib.import_module("verl.utils.kernel.kernels")
if DEVICE != "cuda":
    class _Stream(torch.cpu.Stream):
        """torch.cpu's stream, whose record_event takes the event as CUDA's does (torch.cpu.Stream.record_event
        takes none); the CPU runs everything in order, so recording and waiting do nothing."""

        def __init__(self, device=None, priority=-1):
            super().__init__(priority)

        def record_event(self, event=None):
            return event

    kernels.get_torch_device = lambda: types.SimpleNamespace(
        Stream=_Stream, Event=torch.cpu.Event, stream=torch.cpu.stream, current_stream=lambda device=None: _Stream())
lce = importlib.import_module("verl.utils.kernel.linear_cross_entropy")
fp8 = importlib.import_module("verl.utils.kernel.fp8_kernel")
assert kernels.HAVE_TRITON and fp8.is_triton_available()

F16, BF16, F32, F64 = torch.float16, torch.bfloat16, torch.float32, torch.float64
E4M3 = torch.float8_e4m3fn
TOL = {F32: 1e-5, F16: 2e-3, BF16: 2e-2}
SHORT = {F32: "fp32", F16: "fp16", BF16: "bf16"}
cdiv = triton.cdiv
results = []


def case(name, run, stages=("forward", "backward")):
    if ARGS.only is not None and ARGS.only not in name:
        return
    torch.manual_seed(zlib.crc32(name.encode()))  # each case's inputs do not depend on the cases run before it
    check(results, name, run, stages)


@contextlib.contextmanager
def backward_method(method):
    """kernels.py's module-wide backward method, for one case."""
    saved = kernels._config._backward
    kernels.set_backward_method(method)
    try:
        yield
    finally:
        kernels.set_backward_method(saved)


@contextlib.contextmanager
def tma(on):
    """kernels.py's SUPPORT_CUDA_TMA (decided at import from the CUDA capability), and the allocator its
    device-side descriptors take where it is true, as the module registers it."""
    saved = kernels.SUPPORT_CUDA_TMA
    kernels.SUPPORT_CUDA_TMA = on
    if on:
        triton.set_allocator(lambda size, alignment, stream: torch.empty(size, dtype=torch.int8, device=DEVICE))
    try:
        yield
    finally:
        kernels.SUPPORT_CUDA_TMA = saved


# --- references ----------------------------------------------------------------------------------------------------

def entropy_reference(hidden, weight, labels, temperature, reduction, phantom=0):
    """logprobs of the labels and entropy of softmax(hidden @ weight.T / temperature) in float64, on leaves that
    want gradients; `phantom` zero logits appended to each row (the kernel's padded vocabulary columns)."""
    h = hidden.detach().double().reshape(-1, hidden.shape[-1]).requires_grad_()
    w = weight.detach().double().requires_grad_()
    logits = h @ w.T / temperature
    if phantom:
        logits = torch.cat([logits, logits.new_zeros(logits.shape[0], phantom)], 1)
    lse = logits.logsumexp(-1)
    entropy = lse - (logits.softmax(-1) * logits).sum(-1)
    logprobs = logits.gather(1, labels.reshape(-1, 1).long())[:, 0] - lse
    if reduction == "sum":
        logprobs = logprobs.sum()
    elif reduction == "mean":
        logprobs = logprobs.mean()
    return h, w, logprobs, entropy


def inputs(tokens, hidden_size, vocab, dtype, scale=0.5):
    """hidden (tokens may be a (batch, seq) pair), weight and labels as verl's test makes them: uniform in
    [-scale, scale], labels anywhere in the vocabulary."""
    shape = tokens if isinstance(tokens, tuple) else (tokens,)
    hidden = (torch.rand(*shape, hidden_size, device=DEVICE) * 2 - 1).mul(scale).to(dtype).requires_grad_()
    weight = (torch.rand(vocab, hidden_size, device=DEVICE) * 2 - 1).mul(scale).to(dtype).requires_grad_()
    labels = torch.randint(0, vocab, shape, device=DEVICE)
    return hidden, weight, labels


def upstream(n, reduction):
    """Random upstream gradients of (logprobs, entropy), float32 as the outputs are."""
    dlogprobs = torch.randn((n,) if reduction == "none" else (), device=DEVICE)
    return dlogprobs, torch.randn(n, device=DEVICE)


def linear_ce(dtype, tokens=203, hidden_size=256, vocab=2048, temperature=1.0, reduction="none",
              method=None, use_tma=False, phantom=None):
    """linear_cross_entropy forward and backward against the float64 reference (with `phantom` zero logits when
    given: the zero-padded reference)."""
    def run():
        hidden, weight, labels = inputs(tokens, hidden_size, vocab, dtype)
        n = labels.numel()
        tol = TOL[dtype]
        with tma(use_tma), backward_method(method if method is not None else kernels._config._backward):
            logprobs, entropy = lce.linear_cross_entropy(hidden, weight, labels, float(temperature), reduction)
            h, w, ref_lp, ref_ent = entropy_reference(hidden, weight, labels, temperature, reduction,
                                                      phantom or 0)
            yield {"logprobs": (logprobs, ref_lp, tol), "entropy": (entropy, ref_ent, tol)}
            dlogprobs, dentropy = upstream(n, reduction)
            d_hidden, d_weight = torch.autograd.grad((logprobs, entropy), (hidden, weight), (dlogprobs, dentropy))
        ref_dh, ref_dw = torch.autograd.grad((ref_lp, ref_ent), (h, w), (dlogprobs.double(), dentropy.double()))
        yield {"d_hidden": (d_hidden.reshape(n, -1), ref_dh, tol), "d_weight": (d_weight, ref_dw, tol)}
    return run


# --- tensor parallelism: ranks as threads that take turns ----------------------------------------------------------

class ThreadRanks:
    """torch.distributed's get_rank / get_world_size / all_reduce for `world` ranks of one process, each a thread.
    A thread runs only while it holds the turn; an all-reduce gives the turn up until every rank has arrived (the
    last to arrive reduces), so kernels never launch from two threads at once."""

    ReduceOp = torch.distributed.ReduceOp

    def __init__(self, world):
        self.world = world
        self.turn = threading.Lock()
        self.local = threading.local()
        self.pending = {}
        self.barrier = threading.Barrier(world, action=self._reduce, timeout=600)

    def get_rank(self, group=None):
        return self.local.rank

    def get_world_size(self, group=None):
        return self.world

    def all_reduce(self, tensor, op=torch.distributed.ReduceOp.SUM, group=None, async_op=False):
        assert not async_op
        self.pending[self.local.rank] = (tensor, op)
        self.turn.release()
        try:
            self.barrier.wait()
        finally:
            self.turn.acquire()

    def _reduce(self):
        tensors = [self.pending[r][0] for r in range(self.world)]
        ops = {self.pending[r][1] for r in range(self.world)}
        assert len(ops) == 1, f"ranks disagree on the reduction: {ops}"
        stacked = torch.stack([t.clone() for t in tensors])
        op = ops.pop()
        if op == self.ReduceOp.SUM:
            total = stacked.sum(0)
        elif op == self.ReduceOp.MAX:
            total = stacked.amax(0)
        else:
            raise NotImplementedError(f"all_reduce {op}")
        for t in tensors:
            t.copy_(total)
        self.pending.clear()

    def run(self, fn):
        """fn(rank) on every rank; the ranks' results, or the first rank's error."""
        out, errors = [None] * self.world, [None] * self.world

        def body(rank):
            with self.turn:
                self.local.rank = rank
                try:
                    out[rank] = fn(rank)
                except BaseException as e:  # the other ranks must not wait for this one any more
                    errors[rank] = e
                    self.barrier.abort()
        threads = [threading.Thread(target=body, args=(r,)) for r in range(self.world)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        first = next((e for e in errors if e is not None and not isinstance(e, threading.BrokenBarrierError)), None)
        if first is None:
            first = next((e for e in errors if e is not None), None)
        if first is not None:
            raise first
        return out


def tensor_parallel(dtype, reduction, tokens=122, world=2, hidden_size=128, vocab_per_rank=2048, temperature=1.0):
    def run():
        hidden, weight, labels = inputs(tokens, hidden_size, vocab_per_rank * world, dtype)
        n = labels.numel()
        tol = TOL[dtype]
        dlogprobs, dentropy = upstream(n, reduction)
        ranks = ThreadRanks(world)
        group = object()  # what the host functions compare with None and hand to the stand-in
        shards = weight.detach().split(vocab_per_rank)

        def rank_fn(rank):
            h = hidden.detach().clone().requires_grad_()
            w = shards[rank].clone().requires_grad_()
            logprobs, entropy = lce.linear_cross_entropy(h, w, labels, float(temperature), reduction, group)
            d_h, d_w = torch.autograd.grad((logprobs, entropy), (h, w), (dlogprobs, dentropy))
            return logprobs.detach(), entropy.detach(), d_h, d_w

        saved = kernels.dist
        kernels.dist = ranks
        try:
            outs = ranks.run(rank_fn)
        finally:
            kernels.dist = saved
        h, w, ref_lp, ref_ent = entropy_reference(hidden, weight, labels, temperature, reduction)
        fwd = {}
        for r, (logprobs, entropy, _, _) in enumerate(outs):
            fwd[f"logprobs rank {r}"] = (logprobs, ref_lp, tol)
            fwd[f"entropy rank {r}"] = (entropy, ref_ent, tol)
        yield fwd
        ref_dh, ref_dw = torch.autograd.grad((ref_lp, ref_ent), (h, w), (dlogprobs.double(), dentropy.double()))
        yield {"d_hidden (summed over ranks)": (sum(o[2].double() for o in outs), ref_dh, tol),
               "d_weight (shards)": (torch.cat([o[3] for o in outs]), ref_dw, tol)}
    return run


# --- the d_hidden / d_weight kernels no host function launches -----------------------------------------------------

def split_kernels(dtype, reduction, tokens=203, hidden_size=256, vocab=2048, temperature=1.3):
    def run():
        hidden, weight, labels = inputs(tokens, hidden_size, vocab, dtype)
        hidden, weight = hidden.detach(), weight.detach()
        red = kernels.get_entropy_reduction_enum_number(reduction)
        _, _, maximum, accu, entropy_b = kernels.efficient_entropy_forward(hidden, weight, labels, red, temperature)
        dlogprobs, dentropy = upstream(tokens, reduction)
        d_hidden = torch.empty_like(hidden)
        d_weight = torch.empty_like(weight)
        common = (tokens, hidden_size, vocab, 0, hidden, *hidden.stride(), weight, *weight.stride(), labels,
                  labels.stride(0), maximum, maximum.stride(0), accu, accu.stride(0), dentropy, dentropy.stride(0),
                  dlogprobs, dlogprobs.stride(0) if reduction == "none" else 0, red, entropy_b, entropy_b.stride(0))
        kernels.efficient_entropy_backward_kernel_d_hidden[
            lambda meta: (cdiv(tokens, meta["BLOCK_SIZE_M"]) * cdiv(hidden_size, meta["BLOCK_SIZE_K"]),)](
            *common, d_hidden, *d_hidden.stride(), 1.0 / temperature)
        kernels.efficient_entropy_backward_kernel_d_weight[
            lambda meta: (cdiv(vocab, meta["BLOCK_SIZE_N"]) * cdiv(hidden_size, meta["BLOCK_SIZE_K"]),)](
            *common, d_weight, *d_weight.stride(), 1.0 / temperature)
        h, w, ref_lp, ref_ent = entropy_reference(hidden, weight, labels, temperature, reduction)
        ref_dh, ref_dw = torch.autograd.grad((ref_lp, ref_ent), (h, w), (dlogprobs.double(), dentropy.double()))
        tol = TOL[dtype]
        yield {"d_hidden": (d_hidden, ref_dh, tol), "d_weight": (d_weight, ref_dw, tol)}
    return run


# --- fp8_kernel.py -------------------------------------------------------------------------------------------------

def blockwise_reference(x, bm, bn):
    """Per (bm x bn) block of x (partial blocks at the edges): scale = max(absmax, 1e-10) / 448 in float64, and the
    quotient x / scale every element's code rounds."""
    M, N = x.shape
    xd = x.double()
    scale = torch.empty(cdiv(M, bm), cdiv(N, bn), dtype=F64, device=x.device)
    for i in range(scale.shape[0]):
        for j in range(scale.shape[1]):
            scale[i, j] = xd[i * bm:(i + 1) * bm, j * bn:(j + 1) * bn].abs().max().clamp_min(1e-10) / 448.0
    full = scale.repeat_interleave(bm, 0)[:M].repeat_interleave(bn, 1)[:, :N]
    return scale, xd / full


def fp8_blockwise(dtype, shape, block, entry="scaled_fp8_blockwise", transposed=False, zero_block=False):
    def run():
        M, N = shape
        x = torch.randn(N, M, device=DEVICE).T if transposed else torch.randn(M, N, device=DEVICE)
        x = (x * 3).to(dtype)
        if zero_block:
            x[:block[0], block[1]:2 * block[1]] = 0
        if transposed:
            assert not x.is_contiguous()
        if entry == "scaled_fp8_blockwise":
            y, s = fp8.scaled_fp8_blockwise(x, list(block))
        else:
            y, s = fp8.blockwise_cast_to_fp8_triton(x, list(block))
        ref_s, quotient = blockwise_reference(x, *block)
        yield {"scale (relative)": ((s.double() - ref_s) / ref_s, torch.zeros_like(ref_s), 1e-6),
               "codes": fp8_codes(y, quotient),
               "shape / dtype": exact(torch.tensor([*y.shape, *s.shape, y.dtype == E4M3, s.dtype == F32]),
                                      torch.tensor([M, N, *ref_s.shape, True, True]))}
    return run


# --- cases ---------------------------------------------------------------------------------------------------------

SPLIT_N, SEPARATE, FUSE_MN = (kernels.BackwardEnum._Split_Dlogits_N, kernels.BackwardEnum._Total_Separate,
                              kernels.BackwardEnum._Total_Fuse_MN)

case("linear_cross_entropy fp32, none, T 1, 203 x 256 -> 2048", linear_ce(F32))
case("linear_cross_entropy bf16, none, T 1.5, 2 x 61 x 384 -> 3072", linear_ce(BF16, (2, 61), 384, 3072, 1.5))
case("linear_cross_entropy fp16, none, T 0.7, 203 x 256 -> 2048", linear_ce(F16, temperature=0.7))
case("linear_cross_entropy fp32, sum, T 1.5, 208 tokens", linear_ce(F32, 208, temperature=1.5, reduction="sum"))
case("linear_cross_entropy bf16, mean, 208 tokens", linear_ce(BF16, 208, reduction="mean"))
case("linear_cross_entropy fp32, sum, 203 tokens (not a multiple of 16)", linear_ce(F32, 203, reduction="sum"))
case("linear_cross_entropy fp32, mean, 203 tokens (not a multiple of 16)", linear_ce(F32, 203, reduction="mean"))
case("linear_cross_entropy fp32, split-N backward over 2 splits, 77 x 128 -> 10240",
     linear_ce(F32, 77, 128, 10240, 1.2, method=SPLIT_N))
case("linear_cross_entropy bf16, split-N backward over 2 splits, mean, 80 tokens",
     linear_ce(BF16, 80, 128, 10240, reduction="mean", method=SPLIT_N))
for _dtype in (F32, BF16):
    case(f"linear_cross_entropy {SHORT[_dtype]}, total-separate backward, T 1.5",
         linear_ce(_dtype, temperature=1.5, method=SEPARATE))
    case(f"linear_cross_entropy {SHORT[_dtype]}, fuse-MN backward (atomics), T 1.5",
         linear_ce(_dtype, temperature=1.5, method=FUSE_MN))
case("linear_cross_entropy fp32, fuse-MN backward, sum, 208 tokens", linear_ce(F32, 208, reduction="sum",
                                                                               method=FUSE_MN))
for _method, _label in ((SPLIT_N, "split-N"), (SEPARATE, "total-separate"), (FUSE_MN, "fuse-MN")):
    case(f"linear_cross_entropy bf16, TMA descriptors, {_label} backward",
         linear_ce(BF16, 122, 256, 3072, 1.5, method=_method, use_tma=True))
case("linear_cross_entropy fp32, TMA descriptors, mean, 208 tokens", linear_ce(F32, 208, reduction="mean",
                                                                               use_tma=True))
case("linear_cross_entropy fp32, vocab 1500 (not a multiple of 1024)", linear_ce(F32, 122, 128, 1500))
case("linear_cross_entropy bf16, vocab 1500, TMA descriptors", linear_ce(BF16, 122, 128, 1500, use_tma=True))
case("linear_cross_entropy fp32, vocab 1500, zero-padded reference (524 phantom zero logits)",
     linear_ce(F32, 122, 128, 1500, phantom=2048 - 1500))
case("linear_cross_entropy fp32, tensor parallel over 2 ranks, mean, 112 tokens", tensor_parallel(F32, "mean", 112))
case("linear_cross_entropy bf16, tensor parallel over 2 ranks, none, T 1.5",
     tensor_parallel(BF16, "none", temperature=1.5))
for _dtype in (F32, BF16):
    for _reduction in ("none", "sum", "mean"):
        case(f"backward_kernel_d_hidden + _d_weight {SHORT[_dtype]}, {_reduction}",
             split_kernels(_dtype, _reduction), stages=("run",))
for _dtype in (F32, BF16, F16):
    case(f"scaled_fp8_blockwise {SHORT[_dtype]} 300 x 200, 128 x 128 blocks (padded)",
         fp8_blockwise(_dtype, (300, 200), (128, 128)), stages=("run",))
case("blockwise_cast_to_fp8_triton fp32 300 x 200, 128 x 128 (masked partial blocks), a zero block",
     fp8_blockwise(F32, (300, 200), (128, 128), entry="direct", zero_block=True), stages=("run",))
case("blockwise_cast_to_fp8_triton bf16 100 x 150, 64 x 32 blocks", fp8_blockwise(BF16, (100, 150), (64, 32),
                                                                                   entry="direct"), stages=("run",))
case("scaled_fp8_blockwise fp32 256 x 384 transposed (non-contiguous, num_warps 1)",
     fp8_blockwise(F32, (256, 384), (128, 128), transposed=True), stages=("run",))
case("blockwise_cast_to_fp8_triton bf16 200 x 300 transposed, 64 x 32 blocks",
     fp8_blockwise(BF16, (200, 300), (64, 32), entry="direct", transposed=True), stages=("run",))

for name, status, worst, why in results:
    err = "max err n/a" if worst != worst else f"max err {worst:.2g}"
    print(f"{name:92s} {status:4s} {err:16s} {why}")
print(f"{sum(r[1] == 'ok' for r in results)} of {len(results)} cases match")
if ARGS.json:
    ARGS.json.write_text(json.dumps([{"case": n, "status": s, "worst": None if w != w else w, "text": t}
                                     for n, s, w, t in results], indent=1))
