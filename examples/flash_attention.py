"""Flash attention forward with a Tegula kernel, checked against a float64 reference.

Run it: `python examples/flash_attention.py [--shapes 1x2x100x64 ...] [--dtypes float32 float16 bfloat16]
[--device cpu|cuda]`. Shapes are BxHxSxD (batch, heads, sequence, head dim: a
power of two >= 16); sequences that are not multiples of the 64-row blocks
exercise the masked tails. Each shape runs causal and not; the output and
the per-row log-sum-exp are compared with NumPy in float64. `--device cuda`
runs the kernel on torch CUDA tensors. Prints each case it checked and OK.
"""

import argparse

import numpy as np

from tegula.kernels.attention import attention, attention_reference, make_inputs

DEFAULT_SHAPES = ["1x1x1x16", "1x2x100x64", "2x2x77x32", "1x1x130x128"]
# (atol, rtol) of the output, atol of the log-sum-exp. 16-bit inputs: q.k is
# exact in fp32, the probabilities are rounded to the input type before p @ v.
# float32 on a GPU runs both products at tf32.
TOLERANCES = {"float32": ((2e-5, 1e-5), 2e-5), "float16": ((4e-3, 1e-3), 1e-4),
              "bfloat16": ((2.5e-2, 8e-3), 1e-4)}
TF32_TOLERANCE = ((1e-2, 1e-2), 1e-2)


def parse_shape(text: str):
    B, H, S, D = (int(v) for v in text.lower().split("x"))
    return B, H, S, D


def numpy_dtype(name: str):
    if name == "bfloat16":
        import ml_dtypes

        return ml_dtypes.bfloat16
    return np.dtype(name)


def to_device(x, device: str):
    if device == "cpu":
        return x
    import torch

    wide = torch.from_numpy(x.astype(np.float32))
    return wide.to(getattr(torch, np.dtype(x.dtype).name)).to(device)


def to_numpy(x):
    if isinstance(x, np.ndarray):
        return x
    return x.float().cpu().numpy()


def check(B: int, H: int, S: int, D: int, dtype: str = "float32", causal: bool = False, device: str = "cpu",
          seed: int = 0) -> None:
    """Raises AssertionError unless the kernel's output and log-sum-exp match the float64 reference."""
    q, k, v = make_inputs(B, H, S, D, numpy_dtype(dtype), seed)
    out, lse = attention(*(to_device(x, device) for x in (q, k, v)), causal=causal)
    want_out, want_lse = attention_reference(*(x.astype(np.float64) for x in (q, k, v)), causal=causal)
    (atol, rtol), lse_atol = TF32_TOLERANCE if (dtype == "float32" and device != "cpu") else TOLERANCES[dtype]
    out, lse = to_numpy(out).astype(np.float64), to_numpy(lse).astype(np.float64)
    np.testing.assert_allclose(out, want_out, atol=atol, rtol=rtol, err_msg="attention output")
    np.testing.assert_allclose(lse, want_lse, atol=lse_atol, rtol=0, err_msg="log-sum-exp")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", nargs="+", default=DEFAULT_SHAPES, help="BxHxSxD, e.g. 2x4x100x64")
    parser.add_argument("--dtypes", nargs="+", default=["float32", "float16"], choices=list(TOLERANCES))
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"],
                        help="cuda: run on torch CUDA tensors")
    args = parser.parse_args()
    for dtype in args.dtypes:
        for shape in args.shapes:
            B, H, S, D = parse_shape(shape)
            for causal in (False, True):
                check(B, H, S, D, dtype, causal, args.device)
                kind = "causal" if causal else "full"
                print(f"attention {B}x{H}x{S}x{D} {dtype:<8} {kind:<6} matches the float64 reference")
    print("OK")


if __name__ == "__main__":
    main()
