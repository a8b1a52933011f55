"""What a Triton 3.2 user gets on the CUDA backend when a host TMA descriptor (create_2d_tma_descriptor)
goes straight to a launch, as Inductor 2.6 and FBGEMM of that era pass it; and the copy-to-device route."""
import numpy as np
import torch

import tegula
import tegula.language as tl
from tegula.experimental_descriptor import create_2d_tma_descriptor


@tegula.jit
def copy(src, dst, BM: tl.constexpr, BN: tl.constexpr):
    pm = tl.program_id(0)
    x = tl._experimental_descriptor_load(src, [pm * BM, 0], [BM, BN], tl.float32)
    tl._experimental_descriptor_store(dst, x + 1.0, [pm * BM, 0])


M, N, BM = 100, 32, 16
x = torch.randn(M, N, device="cuda")
y = torch.zeros_like(x)
dx = create_2d_tma_descriptor(x.data_ptr(), M, N, BM, N, 4)
dy = create_2d_tma_descriptor(y.data_ptr(), M, N, BM, N, 4)
for how, a, b in (("direct", dx, dy),
                  ("copied", torch.from_numpy(np.asarray(dx)).cuda(), torch.from_numpy(np.asarray(dy)).cuda())):
    y.zero_()
    try:
        copy[((M + BM - 1) // BM,)](a, b, BM, N)
        torch.cuda.synchronize()
        print(how, "ok" if torch.equal(y, x + 1) else f"WRONG max err {(y - x - 1).abs().max().item()}")
    except Exception as e:  # the probe reports what a user sees
        print(how, type(e).__name__, str(e)[:400])
