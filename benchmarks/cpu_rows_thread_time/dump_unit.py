"""Writes the generated C++ of one row kernel of the CPU benchmark, rows of
4096 floats (the unit does not depend on the number of rows):
``python dump_unit.py softmax|layer_norm|vector_add OUT.cpp``."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
import numpy as np  # noqa: E402

import layer_norm  # noqa: E402
import softmax  # noqa: E402
import vector_add  # noqa: E402

which, out = sys.argv[1], sys.argv[2]
N = 4096
x = np.zeros((2, N), np.float32)
if which == "softmax":
    unit = softmax.softmax_kernel.inspect(x, x, N, N, N, BLOCK_N=N)
elif which == "layer_norm":
    w, stats = np.zeros(N, np.float32), np.zeros(2, np.float32)
    unit = layer_norm.layer_norm_kernel.inspect(x, x, w, w, stats, stats, N, N, N, 1e-5, BLOCK_N=N)
elif which == "vector_add":
    unit = vector_add.add_kernel.inspect(x, x, x, 2 * N, BLOCK=vector_add.BLOCK)
else:
    raise SystemExit(f"unknown kernel {which!r}: softmax, layer_norm or vector_add")
Path(out).write_text(unit.source)
