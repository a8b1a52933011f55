"""The tegula.torch workloads (issue 17): the training ops, attention, and a
training step of examples/train_gpt.py, each measured as Cases of
``gpu_workloads`` on either device (``torch_run`` times them on the CPU).

Three groups, none in the default run (``--only`` picks them):

- ``torch_ops``: each op of ``tegula.torch.ops`` forward (``<op>.fwd``) and
  forward plus backward (``<op>.fwd+bwd``: the output, then
  ``torch.autograd.grad`` of it for a fixed upstream gradient) against the
  same formula in eager torch (the reference) and through torch.compile.
  In bf16 (the GPU's dtype) every variant's outputs are checked against the
  formula computed in float32 from the same inputs, not against eager bf16,
  which rounds every intermediate. GB/s count the bytes an op must move at least (its inputs read and its
  outputs written once; per-row statistics and weight vectors not counted);
  ``linear_cross_entropy`` counts flops (its matmuls: 2 M V C forward, 6 M V
  C forward and backward) and its floor is eager torch's rate, as does
  ``rotary_attention`` (causal; the attention's ``2 B H T^2 D`` forward,
  3.5 times that forward and backward; torch: rotate-half and SDPA).
- ``torch_attention``: ``ops.attention`` forward, and its backward alone
  (from the forward's saved output and log-sum-exp; SDPA's backward through
  ``torch.autograd.grad`` of a kept graph) against SDPA, bf16, head dims 64
  and 128, causal and not, in TFLOP/s: ``4 B H S^2 D`` forward, 2.5 times
  that backward, halved when causal. The floor is SDPA's rate.
- ``train_gpt``: one training step (forward, backward, AdamW) of the
  example's model, ``--ops tegula`` against ``--ops torch`` eager and that
  model through torch.compile(fullgraph=True), in tokens/s, every variant on
  one fixed batch from the same initial weights; the reference is eager
  torch, and each variant's loss at its second step is checked against it.
  float32, and on the GPU also mixed precision (the forward under bf16
  autocast, ``train_gpt.step.bf16``).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import sys
from pathlib import Path

from .gpu_workloads import Case

TORCH_WORKLOADS = ("torch_ops", "torch_attention", "train_gpt")
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _train_gpt():
    if str(EXAMPLES) not in sys.path:
        sys.path.insert(0, str(EXAMPLES))
    import train_gpt
    return train_gpt


# --- torch references ---------------------------------------------------------------------------------


def _references(torch):
    """The eager formulas the ops replace (train_gpt's TorchOps, and the chain)."""
    F = torch.nn.functional
    ops = _train_gpt().TorchOps

    def fused_chain(x, residual, keep, bias, weight, alpha=0.5, p=0.1, eps=1e-6):
        h = F.gelu(x * alpha + bias, approximate="tanh") * keep.to(x.dtype) / (1 - p) + residual
        return ops.rms_norm(h, weight, eps)

    def rotary_attention(qkv, cos, sin):
        # The model runs it under bf16 autocast: the fp32 tables rotate q and k in fp32, and SDPA casts
        # them back to v's dtype. Without autocast SDPA refuses the mixed dtypes.
        low = qkv.dtype in (torch.float16, torch.bfloat16)
        with torch.autocast(qkv.device.type, dtype=qkv.dtype if low else torch.bfloat16, enabled=low):
            return ops.rotary_attention(qkv, cos, sin, True)

    return {"rms_norm": ops.rms_norm, "add_rms_norm": lambda x, r, w: ops.add_rms_norm(x, r, w)[1],
            "layer_norm": ops.layer_norm, "fused_chain": fused_chain, "swiglu": ops.swiglu,
            "silu_and_mul": ops.silu_and_mul, "rotary_embedding": ops.rotary_embedding,
            "rotary_attention": rotary_attention,
            "cross_entropy": lambda logits, targets: F.cross_entropy(logits, targets),
            "linear_cross_entropy": lambda x, w, targets: F.cross_entropy(F.linear(x, w), targets)}


# --- the ops' inputs ------------------------------------------------------------------------------------
# Each maker returns (shape text, inputs, which inputs get gradients, bytes fwd, bytes fwd+bwd or flops).


def _sizes(quick: bool, device: str) -> dict:
    if quick or device == "cpu":
        return dict(M=96, N=200, T=24, H=3, D=64, B=2, V=300, C=48)
    return dict(M=16384, N=4096, T=4096, H=32, D=128, B=4, V=32768, C=2048)


def _op_inputs(torch, name: str, device: str, dtype, quick: bool):
    s = _sizes(quick, device)
    gen = torch.Generator(device=device).manual_seed(17)
    e = torch.finfo(dtype).bits // 8

    def randn(*shape, scale=1.0, shift=0.0):
        return (torch.randn(*shape, device=device, generator=gen) * scale + shift).to(dtype)

    M, N = s["M"], s["N"]
    if name == "rms_norm":
        return f"{M}x{N}", (randn(M, N, scale=2, shift=0.5), randn(N, shift=1)), (0, 1), 2 * M * N * e, 5 * M * N * e
    if name == "add_rms_norm":  # forward: h = x + r and y written; backward: h's and y's gradients
        return (f"{M}x{N}", (randn(M, N, scale=2, shift=0.5), randn(M, N), randn(N, shift=1)), (0, 1, 2),
                4 * M * N * e, 8 * M * N * e)
    if name == "layer_norm":
        return (f"{M}x{N}", (randn(M, N, scale=2, shift=1), randn(N, shift=1), randn(N)), (0, 1, 2),
                2 * M * N * e, 5 * M * N * e)
    if name == "fused_chain":
        keep = (torch.rand(M, N, device=device, generator=gen) > 0.1).to(torch.int8)
        inputs = (randn(M, N, scale=2), randn(M, N), keep, randn(N), randn(N))
        return f"{M}x{N}", inputs, (0, 1, 3, 4), (3 * e + 1) * M * N, (8 * e + 2) * M * N
    if name == "swiglu":
        width = N * 2 if not quick and device != "cpu" else N
        return f"{M}x{width}", (randn(M, width, scale=3), randn(M, width)), (0, 1), 3 * M * width * e, \
            8 * M * width * e
    if name == "silu_and_mul":
        width = N * 2 if not quick and device != "cpu" else N
        return f"{M}x{2 * width}", (randn(M, 2 * width, scale=3),), (0,), 3 * M * width * e, 8 * M * width * e
    if name == "rotary_embedding":
        from tegula.torch import ops
        B, T, H, D = s["B"], s["T"], s["H"], s["D"]
        cos, sin = ops.rotary_tables(T, D, dtype=dtype, device=device)
        n = B * T * H * D
        return f"{B}x{T}x{H}x{D}", (randn(B, T, H, D), cos, sin), (0,), 2 * n * e, 4 * n * e
    if name == "rotary_attention":  # causal; flops: the attention's (4 B H T^2 D, halved), backward 2.5x
        from tegula.torch import ops
        B, T, H, D = s["B"], s["T"], s["H"], s["D"]
        cos, sin = ops.rotary_tables(T, D, device=device)
        flops = 4 * B * H * T * T * D // 2
        return f"{B}x{T}x3x{H}x{D}", (randn(B, T, 3, H, D), cos, sin), (0,), flops, int(3.5 * flops)
    if name == "cross_entropy":
        rows, V = (M, s["V"]) if quick or device == "cpu" else (8192, s["V"])
        targets = torch.randint(0, V, (rows,), device=device, generator=gen)
        return f"{rows}x{V}", (randn(rows, V, scale=4), targets), (0,), rows * V * e, 3 * rows * V * e
    if name == "linear_cross_entropy":
        rows, V, C = (M, s["V"], s["C"]) if quick or device == "cpu" else (4096, s["V"], s["C"])
        targets = torch.randint(0, V, (rows,), device=device, generator=gen)
        return (f"{rows}x{C}x{V}", (randn(rows, C), randn(V, C, scale=1 / math.sqrt(C)), targets), (0, 1),
                2 * rows * V * C, 6 * rows * V * C)
    raise KeyError(name)


OPS = ("rms_norm", "add_rms_norm", "layer_norm", "fused_chain", "swiglu", "silu_and_mul", "rotary_embedding",
       "rotary_attention", "cross_entropy", "linear_cross_entropy")
COMPUTE_BOUND_OPS = ("rotary_attention", "linear_cross_entropy")
LOSSES = ("cross_entropy", "linear_cross_entropy")


def _in_dtype_of_first(fn, *inputs):
    return fn(*inputs).to(inputs[0].dtype)


def _narrowed(build, fn, dtype):
    """build(fn)'s callable with its outputs cast to `dtype`."""
    run = build(fn)

    def call():
        out = run()
        return tuple(t.to(dtype) for t in out) if isinstance(out, tuple) else out.to(dtype)
    return call


def _tolerance(torch, dtype, backward: bool) -> tuple:
    """(atol, rtol): bf16 against torch in float32 on the same inputs (each output
    rounded once, the upstream gradient rounded), float32 against eager float32
    (summation order)."""
    if dtype == torch.bfloat16:
        return (5e-2, 5e-2) if backward else (3e-2, 3e-2)
    return (1e-3, 1e-3) if backward else (1e-4, 1e-4)


def _forward(fn, inputs):
    return lambda: fn(*inputs)


def _forward_backward(torch, fn, inputs, with_grad, upstream_gen_seed=23, upstream_dtype=None):
    """The callable computing fn's output and its gradients for a fixed upstream gradient
    (rounded to `upstream_dtype` first when given: a float32 check of bf16 variants sees
    the upstream gradient they see); returns (output, grads...)."""
    leaves = [t.detach().requires_grad_(i in with_grad) for i, t in enumerate(inputs)]
    wanted = [leaves[i] for i in with_grad]
    probe = fn(*leaves)
    probes = probe if isinstance(probe, tuple) else (probe,)  # several outputs: each gets an upstream gradient
    gen = torch.Generator(device=probes[0].device.type).manual_seed(upstream_gen_seed)
    upstream = [torch.randn(p.shape, device=p.device, generator=gen).to(upstream_dtype or p.dtype).to(p.dtype)
                for p in probes]
    del probe, probes

    def run():
        out = fn(*leaves)
        outs = out if isinstance(out, tuple) else (out,)
        return (*(o.detach() for o in outs), *torch.autograd.grad(outs, wanted, upstream))
    return run


def op_cases(torch, device: str, quick: bool, num_warps=None, dtype=None) -> list:
    """Each op forward and forward+backward; float32 on the CPU, bf16 on the GPU unless `dtype` says."""
    from tegula.torch import ops
    dtype = dtype or (torch.float32 if device == "cpu" else torch.bfloat16)
    references = _references(torch)
    cases = []
    for name in OPS:
        shape, inputs, with_grad, work_fwd, work_both = _op_inputs(torch, name, device, dtype, quick)
        mine, theirs = getattr(ops, name), references[name]
        if name == "rotary_attention":
            mine = lambda qkv, cos, sin: ops.rotary_attention(qkv, cos, sin, causal=True)  # noqa: E731
        if name in LOSSES:  # Tegula's losses are float32; torch's have the logits' dtype
            mine = functools.partial(_in_dtype_of_first, mine)
        compute = name in COMPUTE_BOUND_OPS
        for suffix, work, backward in (("fwd", work_fwd, False), ("fwd+bwd", work_both, True)):
            if name == "add_rms_norm":
                # The op returns (h, y), and the model uses both (h is the next residual): every variant
                # writes h = x + r and takes both gradients. With y alone torch.compile dropped h's store
                # and the backward's read of h's gradient.
                mine, theirs = ops.add_rms_norm, _train_gpt().TorchOps.add_rms_norm
            # Factories run after every case is built: each binds its own op and inputs now.
            if backward:
                build = functools.partial(_forward_backward, torch, inputs=inputs, with_grad=with_grad)
            else:
                build = functools.partial(_forward, inputs=inputs)
            variants = {"tegula": functools.partial(build, mine), "torch": functools.partial(build, theirs)}
            # A cold torch.compile takes seconds per case, most of a quick run: there the first op keeps
            # the peer, so the path stays exercised.
            if not quick or name == OPS[0]:
                variants["torch.compile"] = lambda build=build, theirs=theirs: build(torch.compile(theirs))
            check_with = None
            if dtype != torch.float32:  # checked against torch in float32 on the same (rounded) inputs
                wide = tuple(t.float() if t.is_floating_point() else t for t in inputs)
                wide_build = (functools.partial(_forward_backward, torch, inputs=wide, with_grad=with_grad,
                                                upstream_dtype=dtype)
                              if backward else functools.partial(_forward, inputs=wide))
                check_with = functools.partial(_narrowed, wide_build, theirs, dtype)
            cases.append(Case(f"ops.{name}.{suffix}", shape, str(dtype).removeprefix("torch."),
                              0 if compute else work, work if compute else 0, None, variants,
                              compute_bound=compute, tolerance=_tolerance(torch, dtype, backward),
                              compare_all=True, check_with=check_with,
                              atol_per_rms=dtype != torch.float32 and backward))
    return cases


# --- attention --------------------------------------------------------------------------------------------


def attention_cases(torch, device: str, quick: bool, num_warps=None) -> list:
    import importlib
    attention_op = importlib.import_module("tegula.torch.ops.attention")  # the module, not the function
    F = torch.nn.functional
    small = quick or device == "cpu"
    B, H, S = (1, 2, 80) if small else (4, 16, 4096)
    dims = (32, 64) if small else (64, 128)
    cases = []
    for D in dims:
        for causal in (False, True):
            gen = torch.Generator(device=device).manual_seed(D + causal)
            q, k, v, do = (torch.randn(B, H, S, D, device=device, generator=gen).to(torch.bfloat16)
                           for _ in range(4))
            scale = 1.0 / math.sqrt(D)
            forward_flops = 4 * B * H * S * S * D // (2 if causal else 1)
            name = f"ops.attention_d{D}{'_causal' if causal else ''}"

            def tegula_fwd(q=q, k=k, v=v, causal=causal, scale=scale):
                return lambda: attention_op.attention_forward(q, k, v, causal, scale)[0]

            def sdpa_fwd(q=q, k=k, v=v, causal=causal):
                return lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal)

            def tegula_bwd(q=q, k=k, v=v, do=do, causal=causal, scale=scale):
                out, lse = attention_op.attention_forward(q, k, v, causal, scale)
                return lambda: attention_op.attention_backward(do, q, k, v, out, lse, causal, scale)

            def sdpa_bwd(q=q, k=k, v=v, do=do, causal=causal):
                leaves = [t.detach().clone().requires_grad_() for t in (q, k, v)]
                out = F.scaled_dot_product_attention(*leaves, is_causal=causal)
                return lambda: torch.autograd.grad(out, leaves, do, retain_graph=True)

            shape = f"{B}x{H}x{S}x{D}"
            cases.append(Case(f"{name}.fwd", shape, "bfloat16", 4 * B * H * S * D * 2, forward_flops, None,
                              {"tegula": tegula_fwd, "sdpa": sdpa_fwd}, reference="sdpa", compute_bound=True,
                              tolerance=(2e-2, 2e-2)))
            cases.append(Case(f"{name}.bwd", shape, "bfloat16", 8 * B * H * S * D * 2, int(2.5 * forward_flops),
                              None, {"tegula": tegula_bwd, "sdpa": sdpa_bwd}, reference="sdpa",
                              compute_bound=True, tolerance=(3e-2, 3e-2), compare_all=True))
    return cases


# --- a training step -------------------------------------------------------------------------------------


def train_case(torch, device: str, quick: bool, num_warps=None) -> list:
    """The training step in float32 and, on a GPU, under bf16 autocast (mixed precision)."""
    tg = _train_gpt()
    base = tg.default_config("cpu" if quick else device)
    if quick:  # one layer: the same step, half the graph for torch.compile to compile
        base = dataclasses.replace(base, layers=1)
    corpus = tg.markov_corpus(base.vocab, 4 * base.batch * (base.context + 1) + 100)
    tokens, targets = next(tg.batches(corpus, base, base.seed))
    tokens, targets = tokens.to(device), targets.to(device)

    def variant(config, ops_name: str, compile: bool):
        model = tg.make_model(config, ops_name).to(device)
        optimizer = tg.make_optimizer(model, config)
        forward = torch.compile(model, fullgraph=True) if compile else model
        autocast = tg.forward_precision(config, device)

        def step():
            optimizer.zero_grad(set_to_none=True)
            with autocast:
                loss = forward(tokens, targets)
            loss.backward()
            optimizer.step()
            return loss.detach()
        return step

    c = base
    shape = f"{c.layers}L d{c.dim} h{c.heads} ctx{c.context} b{c.batch} V{c.vocab}"
    cases = []
    for precision in ("float32", "bfloat16") if device == "cuda" else ("float32",):
        config = dataclasses.replace(base, precision=precision)
        # bf16 products round differently in the two variants: the first step's loss agrees to ~1e-3.
        variants = {"tegula": functools.partial(variant, config, "tegula", False),
                    "torch": functools.partial(variant, config, "torch", False),
                    "torch.compile": functools.partial(variant, config, "torch", True)}
        if device == "cuda":  # the Tegula ops under torch.compile too, which fuses the torch ops between them
            variants["tegula.compile"] = functools.partial(variant, config, "tegula", True)
        cases.append(Case("train_gpt.step" + ("" if precision == "float32" else ".bf16"), shape, precision, 0, 0, None,
                          variants, tolerance=(0.0, 1e-3 if precision == "float32" else 1e-2),
                          tokens=c.batch * c.context))
    return cases


CASE_LISTS = {"torch_ops": op_cases, "torch_attention": attention_cases, "train_gpt": train_case}
