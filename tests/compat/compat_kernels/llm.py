"""Layers of LLM training as kernel libraries write them: rotary position
embeddings, SwiGLU forward and backward, and the embedding lookup with its
scatter-add backward (atomic adds: token ids repeat)."""

import os

if os.environ.get("TEGULA_COMPAT_RUNTIME", "tegula") == "triton":
    import triton
    import triton.language as tl
else:
    import tegula as triton
    import tegula.language as tl


@triton.jit
def rope_kernel(x_ptr, out_ptr, cos_ptr, sin_ptr, pos_ptr, n_heads, stride_tok, stride_head, stride_cs,
                HALF: tl.constexpr, BLOCK_H: tl.constexpr, BLOCK_D: tl.constexpr):
    # x: [tokens, heads, 2 * HALF]. Each head's first and second halves are
    # rotated as pairs (x1, x2) -> (x1 cos - x2 sin, x2 cos + x1 sin) by the
    # angles of the token's position (cos, sin: [positions, HALF]).
    tok = tl.program_id(0)
    pos = tl.load(pos_ptr + tok)
    heads = tl.arange(0, BLOCK_H)
    dims = tl.arange(0, BLOCK_D)
    dmask = dims < HALF
    cos = tl.load(cos_ptr + pos * stride_cs + dims, mask=dmask, other=0.0)[None, :]
    sin = tl.load(sin_ptr + pos * stride_cs + dims, mask=dmask, other=0.0)[None, :]
    mask = (heads[:, None] < n_heads) & dmask[None, :]
    offs = tok * stride_tok + heads[:, None] * stride_head + dims[None, :]
    x1 = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    x2 = tl.load(x_ptr + offs + HALF, mask=mask, other=0.0).to(tl.float32)
    out_ty = out_ptr.dtype.element_ty
    tl.store(out_ptr + offs, (x1 * cos - x2 * sin).to(out_ty), mask=mask)
    tl.store(out_ptr + offs + HALF, (x2 * cos + x1 * sin).to(out_ty), mask=mask)


@triton.jit
def silu(x):
    return x * tl.sigmoid(x)


@triton.jit
def swiglu_fwd_kernel(gate_ptr, up_ptr, out_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < n_cols
    offs = row * stride + cols
    gate = tl.load(gate_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    up = tl.load(up_ptr + offs, mask=mask, other=0.0)
    out = silu(gate).to(up.dtype) * up
    tl.store(out_ptr + offs, out, mask=mask)


@triton.jit
def swiglu_bwd_kernel(dout_ptr, gate_ptr, up_ptr, dgate_ptr, dup_ptr, stride, n_cols, BLOCK: tl.constexpr):
    # out = silu(g) * u:  du = dout * silu(g),  dg = dout * u * sig(g) * (1 + g * (1 - sig(g)))
    row = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < n_cols
    offs = row * stride + cols
    dout = tl.load(dout_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    gate = tl.load(gate_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    up = tl.load(up_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    sig = tl.sigmoid(gate)
    silu_gate = gate * sig
    dgate = dout * up * sig * (1.0 + gate * (1.0 - sig))
    tl.store(dgate_ptr + offs, dgate.to(dgate_ptr.dtype.element_ty), mask=mask)
    tl.store(dup_ptr + offs, (dout * silu_gate).to(dup_ptr.dtype.element_ty), mask=mask)


@triton.jit
def embedding_fwd_kernel(ids_ptr, weight_ptr, out_ptr, n_tokens, dim,
                         BLOCK_T: tl.constexpr, BLOCK_D: tl.constexpr):
    toks = tl.program_id(0) * BLOCK_T + tl.arange(0, BLOCK_T)
    dims = tl.program_id(1) * BLOCK_D + tl.arange(0, BLOCK_D)
    ids = tl.load(ids_ptr + toks, mask=toks < n_tokens, other=0)
    mask = (toks[:, None] < n_tokens) & (dims[None, :] < dim)
    rows = tl.load(weight_ptr + ids[:, None] * dim + dims[None, :], mask=mask)
    tl.store(out_ptr + toks[:, None] * dim + dims[None, :], rows, mask=mask)


@triton.jit
def embedding_bwd_kernel(ids_ptr, dout_ptr, dweight_ptr, n_tokens, dim,
                         BLOCK_T: tl.constexpr, BLOCK_D: tl.constexpr):
    toks = tl.program_id(0) * BLOCK_T + tl.arange(0, BLOCK_T)
    dims = tl.program_id(1) * BLOCK_D + tl.arange(0, BLOCK_D)
    ids = tl.load(ids_ptr + toks, mask=toks < n_tokens, other=0)
    mask = (toks[:, None] < n_tokens) & (dims[None, :] < dim)
    grads = tl.load(dout_ptr + toks[:, None] * dim + dims[None, :], mask=mask, other=0.0)
    tl.atomic_add(dweight_ptr + ids[:, None] * dim + dims[None, :], grads, mask=mask)
