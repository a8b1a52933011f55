#!/usr/bin/env python3
"""One GPU run that checks tl.dot on the CUDA backend and measures the matmul.

    .venv/bin/python tools/dot_selftest.py [--quick] [--timeout S] [--no-bench] [--only TEXT]

Runs a grid of dot kernels (every operand type: fp16, bf16, fp32 at tf32 and
ieee, int8; tiles from 16 to 256, non-square; 1 to 8 warps; transposed
operands; bias + relu + cast epilogues; K loops with masked tails at every
num_stages) and prints, per case, the worst error against a float64 NumPy
reference next to its bound, and PASS or FAIL. Then the TFLOP/s of
examples/matmul.py at 4096^3 bf16 for a few block
configurations, next to torch.matmul (cuBLAS).

It never hangs and always reports every case: the cases run in a worker
process that prints one line per case; a case that takes longer than
--timeout seconds, or kills the worker, is reported as TIMEOUT or CRASH and
a fresh worker continues with the next case. Exit status: 0 when every case
passed, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import queue
import subprocess
import sys
import threading
import time
import traceback
import zlib

REPO = pathlib.Path(__file__).resolve().parents[1]
if str(REPO / "python") not in sys.path:
    sys.path.insert(0, str(REPO / "python"))

import numpy as np  # noqa: E402

import tegula  # noqa: E402
import tegula.language as tl  # noqa: E402

# --- kernels: the ones tests/python/test_tensor_cores.py pins -----------------------------------

sys.path.insert(0, str(REPO / "tests" / "python"))
from dot_kernels import dot_epilogue_kernel, dot_tile_kernel, matmul_loop_kernel  # noqa: E402


# --- cases --------------------------------------------------------------------------------------

KINDS = {"float16": ("float16", "ieee"), "bfloat16": ("bfloat16", "ieee"), "tf32": ("float32", "tf32"),
         "ieee": ("float32", "ieee"), "int8": ("int8", "ieee")}
SHAPES = [(16, 16, 32, 1), (16, 32, 64, 2), (32, 16, 32, 4), (64, 64, 32, 4), (32, 64, 128, 2),
          (128, 64, 32, 8), (64, 128, 64, 4), (16, 128, 32, 8), (128, 16, 64, 1), (256, 64, 32, 8),
          (64, 256, 32, 8), (128, 128, 32, 4), (256, 128, 32, 8), (16, 16, 256, 4), (128, 256, 64, 8)]
MATMULS = [  # name, out, M, N, K, (BM, BN, BK), warps, stages
    ("bfloat16", "float32", 37, 50, 83, (32, 64, 32), 4, 3),
    ("float16", "float16", 100, 72, 208, (64, 64, 32), 4, 3),
    ("bfloat16", "bfloat16", 130, 260, 144, (128, 128, 64), 8, 3),
    ("float32", "float32", 48, 40, 80, (32, 32, 16), 2, 3),
    ("float16", "float32", 33, 17, 40, (16, 16, 16), 1, 3),
    ("int8", "int32", 64, 64, 96, (64, 64, 32), 4, 3),
    ("float16", "float32", 256, 256, 512, (128, 256, 64), 8, 4),
    ("bfloat16", "bfloat16", 512, 384, 1000, (128, 128, 64), 4, 3),
] + [("bfloat16", "float32", 192, 160, 1040, (64, 64, 32), 4, s) for s in (1, 2, 3, 4)] + [
    ("float16", "float16", 300, 200, 400, (128, 64, 64), 4, s) for s in (1, 2, 3, 4)] + [
    # Hopper wgmma descriptor forms: a / b stored transposed (read through strides), swizzles of
    # 128, 64 and 32 bytes (BLOCK_K 64, 32, 16; 128 spans two atoms), warpgroups along M and N.
    ("bfloat16", "float32", 80, 72, 144, (64, 64, 64), 4, 3, False, False),
    ("float16", "float32", 64, 96, 80, (64, 32, 32), 4, 2, False, True),
    ("bfloat16", "bfloat16", 128, 64, 48, (128, 64, 16), 8, 3, True, False),
    ("float16", "float16", 64, 128, 256, (64, 128, 128), 8, 2, True, True),
    ("bfloat16", "float32", 256, 512, 320, (128, 256, 64), 8, 4, False, True),
]


def all_cases(quick: bool) -> list:
    cases = []
    shapes = SHAPES[:6] if quick else SHAPES
    for kind in KINDS:
        for shape in shapes:
            cases.append({"what": "dot", "kind": kind, "shape": shape, "transposed": False})
    for kind in ("float16", "bfloat16", "tf32", "int8"):
        for shape in [(32, 64, 64, 4), (64, 32, 128, 8), (16, 16, 32, 1), (128, 128, 64, 4)]:
            cases.append({"what": "dot", "kind": kind, "shape": shape, "transposed": True})
    for name, out, shape in [("bfloat16", "bfloat16", (64, 64, 32, 4)), ("float16", "float16", (128, 64, 64, 8)),
                             ("float32", "float32", (32, 64, 32, 2)), ("bfloat16", "float32", (16, 32, 16, 1))]:
        cases.append({"what": "epilogue", "name": name, "out": out, "shape": shape})
    for m in MATMULS[:6] if quick else MATMULS:
        cases.append({"what": "matmul", "args": m})
    return cases


def label(case) -> str:
    if case["what"] == "dot":
        M, N, K, w = case["shape"]
        return f"dot {case['kind']:8s} {M}x{N}x{K} w{w}{' b^T' if case['transposed'] else ''}"
    if case["what"] == "epilogue":
        M, N, K, w = case["shape"]
        return f"relu(a@b+bias) {case['name']}->{case['out']} {M}x{N}x{K} w{w}"
    name, out, M, N, K, blocks, w, s, *transposed = case["args"]
    flags = "".join(f" {x}^T" for x, t in zip("ab", transposed) if t)
    return f"matmul {name}->{out} {M}x{N}x{K} blocks {blocks} w{w} stages {s}{flags}"


# --- running a case (in the worker) -------------------------------------------------------------


def np_dtype(name):
    import ml_dtypes

    return {"bfloat16": np.dtype(ml_dtypes.bfloat16)}.get(name) or np.dtype(name)


def to_gpu(torch, a: np.ndarray):
    ints = {1: np.int8, 2: np.int16, 4: np.int32, 8: np.int64}[a.dtype.itemsize]
    t = torch.from_numpy(np.ascontiguousarray(a).view(ints)).cuda()
    return t.view(getattr(torch, a.dtype.name))


def to_numpy(torch, t, dtype: np.dtype) -> np.ndarray:
    torch.cuda.synchronize()
    ints = {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[dtype.itemsize]
    return t.view(ints).cpu().numpy().view(dtype)


def inputs(rng, shape, name):
    if name == "int8":
        return rng.integers(-128, 128, shape).astype(np.int8)
    return rng.uniform(-2, 2, shape).astype(np_dtype(name))


def eps(name):
    return {"float16": 2.0 ** -10, "bfloat16": 2.0 ** -7, "float32": 2.0 ** -23}.get(name, 0.0)


def bound(a64, b64, k, tf32):
    mag = np.abs(a64) @ np.abs(b64)
    return 2 * k * eps("float32") * mag + (2.0 ** -9 * mag if tf32 else 0.0)


def run_case(torch, case) -> dict:
    rng = np.random.default_rng(zlib.crc32(label(case).encode()))
    if case["what"] == "dot":
        M, N, K, warps = case["shape"]
        name, precision = KINDS[case["kind"]]
        a, b = inputs(rng, (M, K), name), inputs(rng, (K, N), name)
        c = (rng.integers(-1000, 1000, (M, N)).astype(np.int32) if name == "int8"
             else rng.uniform(-2, 2, (M, N)).astype(np.float32))
        b_arg = np.ascontiguousarray(b.T) if case["transposed"] else b
        out = torch.zeros((M, N), dtype=torch.int32 if name == "int8" else torch.float32, device="cuda")
        dot_tile_kernel[(1,)](to_gpu(torch, a), to_gpu(torch, b_arg), to_gpu(torch, c), out, M=M, N=N, K=K,
                              PRECISION=precision, B_TRANSPOSED=case["transposed"], num_warps=warps)
        got = to_numpy(torch, out, c.dtype).astype(np.float64)
        a64, b64 = a.astype(np.float64), b.astype(np.float64)
        want = a64 @ b64 + c.astype(np.float64)
        tol = 0.0 if name == "int8" else bound(a64, b64, K, precision == "tf32") + eps("float32") * np.abs(want)
    elif case["what"] == "epilogue":
        M, N, K, warps = case["shape"]
        name, out_name = case["name"], case["out"]
        a, b = inputs(rng, (M, K), name), inputs(rng, (K, N), name)
        bias = rng.uniform(-4, 4, N).astype(np.float32)
        out = to_gpu(torch, np.zeros((M, N), np_dtype(out_name)))
        dot_epilogue_kernel[(1,)](to_gpu(torch, a), to_gpu(torch, b), to_gpu(torch, bias), out, M=M, N=N, K=K,
                              num_warps=warps)
        got = to_numpy(torch, out, np_dtype(out_name)).astype(np.float64)
        a64, b64 = a.astype(np.float64), b.astype(np.float64)
        want = np.maximum(a64 @ b64 + bias, 0.0)
        tol = bound(a64, b64, K, name == "float32") + 2 * eps(out_name) * np.abs(want) + 1e-6
    else:
        name, out_name, M, N, K, (BM, BN, BK), warps, stages, *transposed = case["args"]
        a_t, b_t = (transposed + [False, False])[:2]
        a, b = inputs(rng, (M, K), name), inputs(rng, (K, N), name)
        a_arg = np.ascontiguousarray(a.T) if a_t else a
        b_arg = np.ascontiguousarray(b.T) if b_t else b
        strides = ([1, M] if a_t else [K, 1]) + ([1, K] if b_t else [N, 1])
        out = to_gpu(torch, np.zeros((M, N), np_dtype(out_name)))
        grid = (tegula.cdiv(M, BM), tegula.cdiv(N, BN))
        matmul_loop_kernel[grid](to_gpu(torch, a_arg), to_gpu(torch, b_arg), out, M, N, K, *strides, N, 1, BM=BM,
                                 BN=BN, BK=BK, ACC=tl.int32 if name == "int8" else tl.float32, num_warps=warps,
                                 num_stages=stages)
        got = to_numpy(torch, out, np_dtype(out_name)).astype(np.float64)
        a64, b64 = a.astype(np.float64), b.astype(np.float64)
        want = a64 @ b64
        tol = 0.0 if name == "int8" else (bound(a64, b64, K, name == "float32") + 2 * eps(out_name) * np.abs(want)
                                          + 1e-6)
    err = np.abs(got - want)
    excess = err - tol
    worst = np.unravel_index(np.argmax(excess), err.shape)
    return {"max_error": float(err.max()), "bound_at_worst": float(np.broadcast_to(tol, err.shape)[worst]),
            "bad": int((excess > 0).sum()), "elements": int(err.size),
            "status": "PASS" if (excess <= 0).all() and np.isfinite(got).all() else "FAIL"}


def worker(start: int, quick: bool, only: str) -> None:
    cases = all_cases(quick)
    import torch

    for i in range(start, len(cases)):
        if only and only not in label(cases[i]):
            print(json.dumps({"index": i, "event": "done", "status": "SKIP"}), flush=True)
            continue
        print(json.dumps({"index": i, "event": "start"}), flush=True)
        t0 = time.perf_counter()
        try:
            result = run_case(torch, cases[i])
        except Exception as e:  # a compile error, a launch error: report it and go on
            result = {"status": "ERROR", "error": f"{type(e).__name__}: {e}"[:2000],
                      "trace": traceback.format_exc()[-2000:]}
        result.update({"index": i, "event": "done", "seconds": round(time.perf_counter() - t0, 2)})
        print(json.dumps(result), flush=True)


# --- the benchmark ---------------------------------------------------------------------------------

BENCH_CONFIGS = [  # BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, num_warps, num_stages
    (128, 128, 64, 8, 4, 3), (128, 256, 64, 8, 8, 3), (256, 128, 64, 8, 8, 3), (128, 128, 32, 8, 4, 4),
    (128, 256, 32, 8, 8, 4), (64, 128, 64, 8, 4, 4), (128, 64, 64, 8, 4, 4), (128, 128, 64, 8, 8, 3),
]


def bench(size: int) -> None:
    import torch

    from tegula.testing import do_bench

    sys.path.insert(0, str(REPO / "examples"))
    import matmul

    flops = 2.0 * size ** 3
    g = torch.Generator(device="cuda").manual_seed(0)
    a = torch.randn(size, size, device="cuda", generator=g).to(torch.bfloat16)
    b = torch.randn(size, size, device="cuda", generator=g).to(torch.bfloat16)
    ref = torch.matmul(a, b).float()
    ms = do_bench(lambda: torch.matmul(a, b), device="cuda")
    print(json.dumps({"event": "bench", "name": "torch.matmul (cuBLAS)", "ms": ms,
                      "tflops": flops / ms / 1e9}), flush=True)
    for bm, bn, bk, gm, warps, stages in BENCH_CONFIGS:
        name = f"tegula matmul {bm}x{bn}x{bk} w{warps} s{stages}"
        try:
            c = torch.empty(size, size, device="cuda", dtype=torch.bfloat16)
            grid = (tegula.cdiv(size, bm) * tegula.cdiv(size, bn),)

            def launch():
                matmul.matmul_kernel[grid](a, b, c, size, size, size, size, 1, size, 1, size, 1, BLOCK_M=bm,
                                           BLOCK_N=bn, BLOCK_K=bk, GROUP_M=gm, num_warps=warps,
                                           num_stages=stages)

            launch()
            torch.cuda.synchronize()
            err = float((c.float() - ref).abs().max())
            ms = do_bench(launch, device="cuda")
            print(json.dumps({"event": "bench", "name": name, "ms": ms, "tflops": flops / ms / 1e9,
                              "max_error_vs_cublas": err}), flush=True)
        except Exception as e:
            print(json.dumps({"event": "bench", "name": name, "error": f"{type(e).__name__}: {e}"[:1000]}),
                  flush=True)


# --- the parent: workers with timeouts ---------------------------------------------------------------


def spawn(args: list) -> tuple:
    proc = subprocess.Popen([sys.executable, str(pathlib.Path(__file__).resolve()), *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=str(REPO))
    lines: queue.Queue = queue.Queue()
    err_tail: list = []

    def pump_out():
        for line in proc.stdout:
            lines.put(line)
        lines.put(None)

    def pump_err():
        for line in proc.stderr:
            err_tail.append(line)
            del err_tail[:-40]

    threading.Thread(target=pump_out, daemon=True).start()
    threading.Thread(target=pump_err, daemon=True).start()
    return proc, lines, err_tail


def next_event(lines: queue.Queue, timeout: float):
    """The next JSON line of the worker, None when it exited, "timeout" when silent too long."""
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return "timeout"
        try:
            line = lines.get(timeout=left)
        except queue.Empty:
            return "timeout"
        if line is None:
            return None
        line = line.strip()
        if line.startswith("{"):
            try:
                return json.loads(line)
            except json.JSONDecodeError:
                continue


def kill(proc) -> None:
    if proc.poll() is None:
        proc.kill()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        pass


def report(case, result) -> None:
    status = result["status"]
    detail = ""
    if "max_error" in result:
        detail = f"max err {result['max_error']:.3g} (bound there {result['bound_at_worst']:.3g})"
        if result["bad"]:
            detail += f", {result['bad']}/{result['elements']} off"
    elif "error" in result:
        detail = result["error"].splitlines()[0][:300]
    seconds = f"{result.get('seconds', 0):6.1f}s"
    print(f"{status:7s} {seconds} {label(case):55s} {detail}", flush=True)


def run_cases(quick: bool, timeout: float, only: str) -> list:
    cases = all_cases(quick)
    results: dict = {}
    start = 0
    while start < len(cases):
        proc, lines, err_tail = spawn(["--worker", str(start), "--only", only] + (["--quick"] if quick else []))
        current = start
        while current < len(cases):
            # Importing torch and compiling take a while before the first case.
            event = next_event(lines, timeout + (60 if current == start else 0))
            if event == "timeout" or event is None:
                why = "TIMEOUT" if event == "timeout" else "CRASH"
                kill(proc)
                results[current] = {"status": why, "error": f"no result after {timeout:.0f}s" if why == "TIMEOUT"
                                    else "worker died: " + " | ".join(line.strip() for line in err_tail[-4:])}
                report(cases[current], results[current])
                current += 1
                break
            if event["event"] == "start":
                current = event["index"]
            elif event["event"] == "done":
                results[event["index"]] = event
                if event["status"] != "SKIP":
                    report(cases[event["index"]], event)
                current = event["index"] + 1
        kill(proc)
        start = current
    return [results.get(i, {"status": "MISSING"}) for i in range(len(cases))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer cases")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds one case may take")
    parser.add_argument("--no-bench", action="store_true", help="skip the matmul benchmark")
    parser.add_argument("--bench-size", type=int, default=4096)
    parser.add_argument("--only", default="", help="run only cases whose label contains this text")
    parser.add_argument("--worker", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--bench-worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker is not None:
        worker(args.worker, args.quick, args.only)
        return 0
    if args.bench_worker:
        bench(args.bench_size)
        return 0

    try:
        import torch

        if not torch.cuda.is_available():
            raise RuntimeError("torch sees no CUDA device")
    except Exception as e:
        print(f"dot_selftest needs torch with a CUDA GPU: {e}", file=sys.stderr)
        return 2
    print(f"tl.dot self-test on the CUDA backend ({'quick' if args.quick else 'full'} grid, "
          f"{args.timeout:.0f}s per case)", flush=True)
    results = run_cases(args.quick, args.timeout, args.only)
    counts: dict = {}
    for r in results:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    print("summary: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())), flush=True)

    if not args.no_bench:
        print(f"\nmatmul {args.bench_size}^3 bf16 (examples/matmul.py):", flush=True)
        proc, lines, err_tail = spawn(["--bench-worker", "--bench-size", str(args.bench_size)])
        while True:
            event = next_event(lines, max(args.timeout, 300.0))
            if event == "timeout" or event is None:
                kill(proc)
                if event == "timeout":
                    print("  benchmark TIMEOUT", flush=True)
                elif proc.returncode:
                    print("  benchmark worker died: " + "".join(err_tail[-5:]).strip(), flush=True)
                break
            if "error" in event:
                print(f"  {event['name']:40s} ERROR {event['error'].splitlines()[0][:200]}", flush=True)
            else:
                extra = (f"  max |c - cuBLAS| {event['max_error_vs_cublas']:.3g}"
                         if "max_error_vs_cublas" in event else "")
                print(f"  {event['name']:40s} {event['ms']:8.3f} ms {event['tflops']:7.1f} TFLOP/s{extra}",
                      flush=True)
    failed = sum(v for k, v in counts.items() if k not in ("PASS", "SKIP"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
