"""Writes the generated C++ of examples/matmul.py's kernel for square inputs
(any size: the unit does not depend on it) and the given tiles:
``python dump_unit.py BLOCK_M BLOCK_N BLOCK_K DTYPE OUT.cpp``."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
import numpy as np  # noqa: E402

import matmul  # noqa: E402

bm, bn, bk = (int(v) for v in sys.argv[1:4])
dtype, out = sys.argv[4], sys.argv[5]
n = 256
a, b = matmul.make_inputs(n, n, n, dtype)
c = np.empty((n, n), a.dtype)
unit = matmul.matmul_kernel.inspect(a, b, c, n, n, n, n, 1, n, 1, n, 1,
                                    BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8)
Path(out).write_text(unit.source)
