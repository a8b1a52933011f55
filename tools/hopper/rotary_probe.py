"""rotary_qkv's forward and backward at train_gpt's shape (batch 32, 512 positions, 8 heads of 64,
bf16) for rows per program (rotary.BLOCK_R) against the copy rate and torch (eager and compiled, the
formulas of examples/train_gpt.py): ``python tools/hopper/rotary_probe.py``. Interleaved CUDA-event
medians, L2 flushed (tegula.testing.CudaTimer). Each op moves qkv once in and once out."""

import statistics

import torch

from tegula.testing import CudaTimer
from tegula.torch.ops import rotary

BLOCKS = (16, 32, 64, 128)


def torch_rotary(x, cos, sin):
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half].float(), x[..., half:].float()
    c, s = cos[:, None, :], sin[:, None, :]
    return torch.cat([x1 * c - x2 * s, x2 * c + x1 * s], -1).to(x.dtype)


def torch_rotary_qkv(qkv, cos, sin):
    q, k, v = qkv.unbind(2)
    return torch_rotary(q, cos, sin), torch_rotary(k, cos, sin), v.contiguous()


def main() -> None:
    B, T, H, D = 32, 512, 8, 64
    qkv = torch.randn(B, T, 3, H, D, device="cuda", dtype=torch.bfloat16)
    grads = [torch.randn(B, T, H, D, device="cuda", dtype=torch.bfloat16) for _ in range(3)]
    angles = torch.rand(T, D // 2, device="cuda") * 6
    cos, sin = angles.cos(), angles.sin()
    src, dst = torch.randn(qkv.numel(), device="cuda", dtype=qkv.dtype), torch.empty(qkv.numel(), device="cuda",
                                                                                      dtype=qkv.dtype)
    compiled = torch.compile(torch_rotary_qkv, fullgraph=True)

    def with_block(block, fn):
        def go():
            rotary.BLOCK_R = block
            fn()
        return go

    fns = {"copy": lambda: dst.copy_(src), "torch": lambda: torch_rotary_qkv(qkv, cos, sin),
           "torch.compile": lambda: compiled(qkv, cos, sin)}
    for block in BLOCKS:
        fns[f"fwd BLOCK_R {block}"] = with_block(block, lambda: rotary.rotary_qkv_forward(qkv, cos, sin))
        fns[f"bwd BLOCK_R {block}"] = with_block(block, lambda: rotary.rotary_qkv_backward(*grads, cos, sin))
    for f in fns.values():
        f()
    torch.cuda.synchronize()
    ms = [statistics.median(s) for s in CudaTimer().interleaved(list(fns.values()), 25)]
    moved = 2 * qkv.numel() * qkv.element_size()
    for name, t in zip(fns, ms):
        print(f"{name:>16}: {t * 1e3:7.1f} us  {moved / t / 1e6:6.0f} GB/s  {ms[0] / t:.2f} of copy", flush=True)


if __name__ == "__main__":
    main()
