"""Host-side cost of one launch of a small kernel with 6 arguments.

    python tools/launch_overhead.py [--device cuda|cpu] [--arrays numpy|torch] [--launches 20000] [--rounds 7]

The kernel (``axpy``: three arrays, a float, an int and a constexpr block) is
one source for Tegula and Triton, launched on one program. Each variant runs `launches` times per round after a
warm-up, the variants interleaved round by round (as the benchmark's launch
rows are), timed in bursts of 200 that start with the device idle (so the host
never waits for the GPU); the median and the best burst are reported in
microseconds per launch.

Variants: ``tegula`` (``kernel[grid](...)``: the launcher binds,
specializes, finds the kernel and launches it), ``tegula raw``
(CompiledKernel.launch with the arguments already converted: the floor
under it), and on CUDA ``triton`` and ``torch.add``. On the CPU the arrays
are NumPy's, or with ``--arrays torch`` CPU torch tensors (the launcher then
reads them through torch's DLPack exchange table, as it reads CUDA tensors,
without the stream query); the difference of the two rows is the launcher's
own cost, the kernel's run being in both.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np

import tegula

try:  # one source for both compilers: tegula.jit accepts kernels written against triton.language
    import triton
    import triton.language as tl
except ImportError:
    triton = None
    import tegula.language as tl


def axpy_body(x_ptr, y_ptr, out_ptr, alpha, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, alpha * x + y, mask=mask)


def per_launch_us(launchers: dict, launches: int, rounds: int, synchronize, burst: int = 200) -> dict:
    """name -> (median, best) microseconds per launch over bursts of `burst` launches,
    the variants interleaved: each round times `launches` launches of every variant in
    turn, so drift of the machine's speed during the run reaches all of them alike.

    Each burst starts with the device idle and its clock stops before the
    synchronize: a burst is shorter than the driver's queue of pending
    launches, so this is the host's time even where the GPU retires tiny
    kernels more slowly than the host queues them."""
    for launch in launchers.values():
        for _ in range(min(launches, 2000)):
            launch()
    synchronize()
    samples = {name: [] for name in launchers}
    for _ in range(rounds):
        for name, launch in launchers.items():
            for _ in range(max(1, launches // burst)):
                synchronize()
                start = time.perf_counter()
                for _ in range(burst):
                    launch()
                samples[name].append((time.perf_counter() - start) / burst * 1e6)
    synchronize()
    return {name: (statistics.median(times), min(times)) for name, times in samples.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    parser.add_argument("--arrays", choices=("numpy", "torch"), default="numpy",
                        help="on the CPU: NumPy arrays or CPU torch tensors")
    parser.add_argument("--launches", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()

    n, block = 16, 16
    if args.device == "cuda":
        import torch

        x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
        out = torch.empty(n, device="cuda")
        synchronize = torch.cuda.synchronize
    else:
        rng = np.random.default_rng(0)
        x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
        out = np.empty_like(x)
        if args.arrays == "torch":
            import torch

            x, y, out = torch.from_numpy(x), torch.from_numpy(y), torch.from_numpy(out)
        synchronize = lambda: None  # noqa: E731 - CPU launches return when the grid is done
    expected = 2.0 * np.asarray(x.tolist(), dtype=np.float32) + np.asarray(y.tolist(), dtype=np.float32)
    launchers = {}

    kernel = tegula.jit(axpy_body)
    grid = (1,)
    compiled = kernel[grid](x, y, out, 2.0, n, BLOCK=block)
    synchronize()
    np.testing.assert_allclose(np.asarray(out.tolist()), expected, rtol=1e-6)

    def measure(name, launch):
        launchers[name] = launch

    measure("tegula", lambda: kernel[grid](x, y, out, 2.0, n, BLOCK=block))
    if args.device == "cpu":
        address = (lambda t: t.data_ptr()) if args.arrays == "torch" else tegula._C.data_address
        raw_args = [address(x), address(y), address(out), 2.0, n]
        measure("tegula raw", lambda: compiled.launch((1, 1, 1), raw_args))
    else:
        stream = torch.cuda.current_stream().cuda_stream
        raw_args = [x.data_ptr(), y.data_ptr(), out.data_ptr(), 2.0, n]
        device = x.get_device()
        measure("tegula raw", lambda: compiled.launch((1, 1, 1), raw_args, stream, device))
        try:
            triton_kernel = triton.jit(axpy_body)
            triton_kernel[grid](x, y, out, 2.0, n, BLOCK=block)
            measure("triton", lambda: triton_kernel[grid](x, y, out, 2.0, n, BLOCK=block))
        except Exception as e:  # noqa: BLE001 - the comparison is optional: say why it is missing
            print(f"triton: not measured ({type(e).__name__}: {e})", file=sys.stderr)
        measure("torch.add", lambda: torch.add(x, y, out=out))
    results = per_launch_us(launchers, args.launches, args.rounds, synchronize)
    arrays = f", {args.arrays} arrays" if args.device == "cpu" else ""
    print(f"host time per launch of a 6-argument kernel ({args.device}{arrays}), us per launch:")
    for name, (median, best) in results.items():
        print(f"  {name:20s} median {median:6.2f}   best {best:6.2f}")


if __name__ == "__main__":
    main()
