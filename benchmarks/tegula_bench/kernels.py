"""The kernels the benchmark times: the example scripts of examples/, one module
per kernel (the tile kernel, its host wrapper, the eager reference it is
checked against, input makers and byte counts). Importing this puts examples/
on ``sys.path``, as running an example does: the examples import their shared
array helpers (``_host``) as a sibling module, and so do their Triton twins."""

import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
if str(EXAMPLES) not in sys.path:
    sys.path.insert(0, str(EXAMPLES))

import _host  # noqa: E402,F401  (re-exported: the autotuned matmul reads strides through it)
import axpy  # noqa: E402,F401
import flash_attention as attention  # noqa: E402,F401
import flash_attention_tma as attention_tma  # noqa: E402,F401
import fused_chain  # noqa: E402,F401
import layer_norm  # noqa: E402,F401
import matmul  # noqa: E402,F401
import matmul_epilogue  # noqa: E402,F401
import matmul_fp8  # noqa: E402,F401
import matmul_persistent  # noqa: E402,F401
import matmul_tma  # noqa: E402,F401
import softmax  # noqa: E402,F401
import vector_add  # noqa: E402,F401
