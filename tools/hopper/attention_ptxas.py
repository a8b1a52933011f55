"""What ptxas says (registers, spills) of the descriptor attention kernels at the tables' tiles, sm_90:
``python tools/hopper/attention_ptxas.py`` (needs NVRTC; no GPU launch). A spilling dK/dV loop runs its
local-memory traffic beside the tensor cores, so every kernel here should say ``0 bytes spill stores``.
"""

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "python"))
from cuda_emulator import compile_cuda  # noqa: E402

from tegula.torch.ops import attention_tma as at  # noqa: E402


def main() -> None:
    B, H, S = 4, 16, 4096
    for D in sorted(at.DKDV):
        q = torch.empty(B, H, S, D, dtype=torch.bfloat16)
        lse, delta = torch.empty(B, H, S), torch.empty(B, H, S)
        v = at.rows_view(q.shape, q.stride(), 2, 0)
        views = (*v, *v, *v, *v, H, S, D ** -0.5)
        for causal in (False, True):
            for name, kernel, config, extra, args in (
                    *((f"dkdv ahead {ahead}", at.attention_dkdv_tma_kernel, at.tiles_for(at.DKDV[D], causal)[:4],
                       {"AHEAD": ahead}, (q, q, q, q, lse, delta, q, q)) for ahead in (False, True)),
                    ("dq", at.attention_dq_tma_kernel, at.tiles_for(at.DQ[D], causal)[:4], {"TAIL": False},
                     (q, q, q, q, q, lse, q, delta))):
                bm, bn, warps, stages = config
                strides = q.stride()[:3]  # O's and the gradients' (dQ's, or dK's and dV's after their offsets)
                tail = ((*strides, *strides) if kernel is at.attention_dq_tma_kernel else (0, 0, *strides)) + (None, None)
                compiled, _ = compile_cuda(kernel, (*args, *views, *tail), dict(HEAD_DIM=D, BLOCK_M=bm, BLOCK_N=bn,
                                                                         CAUSAL=causal, **extra),
                                           num_warps=warps, num_stages=stages)
                info = " ".join(line.strip() for line in compiled.asm["ptxas"].splitlines()
                                if "registers" in line or "spill" in line)
                print(f"D {D} {'causal' if causal else 'full'} {name} {config}: {info}", flush=True)


if __name__ == "__main__":
    main()
