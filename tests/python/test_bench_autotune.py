"""The autotuned-matmul rows of the GPU benchmark (issue 7), without a GPU:
the autotuned and the by-hand variants on the CPU backend, their rows,
target and table from made-up timings, the measuring loop with a stand-in
timer, and the H200 config list compiled for sm_90 and sm_80 (NVRTC only)."""

import types

import ml_dtypes
import numpy as np
import pytest

import tegula
from matmul import make_inputs, matmul_kernel
from tegula_bench import autotuned_matmul, gpu_measure, gpu_report, gpu_run, gpu_workloads, render
from tegula_bench.outcome import Outcome
from tegula_bench.targets import criteria

Config = tegula.Config
# Small tiles: a CPU compile of each is quick.
SMALL = [Config({"BLOCK_M": 16, "BLOCK_N": 32, "BLOCK_K": 16, "GROUP_M": 1}, num_warps=1),
         Config({"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 32, "GROUP_M": 2}, num_warps=2, num_stages=2),
         Config({"BLOCK_M": 32, "BLOCK_N": 16, "BLOCK_K": 16, "GROUP_M": 4}, num_warps=1, num_stages=1)]


def _inputs(M=50, N=37, K=29):
    a, b = make_inputs(M, N, K)
    return a, b, np.full((M, N), np.nan, np.float32)


def _ranked_bench(order):
    """A bench ranking configs by their place in `order` (ms = place + 1),
    recognised by the keywords each launcher passes."""
    seen = []

    def bench(fn):
        fn()
        config = next(c for c in order if c.all_kwargs() == fn.kwargs)
        seen.append(config)
        return float(order.index(config) + 1)

    bench.seen = seen
    return bench


def test_the_configs_suit_a_4096_bf16_matmul_on_an_h200():
    configs = autotuned_matmul.CONFIGS
    assert len(configs) >= 8
    assert len({repr(c) for c in configs}) == len(configs)
    for c in configs:
        assert c.num_warps in (4, 8) and c.num_stages in (3, 4)
        assert all(4096 % c.kwargs[k] == 0 for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K"))
        stage_bytes = 2 * (c.kwargs["BLOCK_M"] + c.kwargs["BLOCK_N"]) * c.kwargs["BLOCK_K"]
        assert stage_bytes * c.num_stages <= 227 * 1024  # the H200's shared memory per block
    assert autotuned_matmul.short(configs[0]) == "128x128x64 G8 w8 s3"
    assert autotuned_matmul.short(SMALL[0]) == "16x32x16 G1 w1 s3"


def test_autotuned_variant_tunes_every_config_and_computes_a_times_b():
    a, b, out = _inputs()
    run = autotuned_matmul.tuned_variant(a, b, out, SMALL, warmup=1, rep=3)
    timings = run.tuner.configs_timings
    assert set(timings) == set(SMALL) and all(t is not None for t in timings.values())
    best = min(SMALL, key=lambda c: timings[c][0])
    assert run.config is best and run.num_warps == best.num_warps
    assert run.note.startswith(f"chose {autotuned_matmul.short(best)} (3 configs timed, tuned in ")
    out[...] = np.nan
    assert run() is out
    np.testing.assert_allclose(out, a @ b, rtol=1e-4, atol=1e-4)
    assert run.tuner.cache_results is False  # the benchmark tunes in its own run, never from disk


def test_by_hand_launches_every_config_and_keeps_the_fastest():
    a, b, out = _inputs(33, 70, 41)
    order = [SMALL[2], SMALL[0], SMALL[1]]
    bench = _ranked_bench(order)
    run = autotuned_matmul.best_by_hand(a, b, out, bench, SMALL)
    assert bench.seen == SMALL  # each config once, in the list's order
    assert run.config is SMALL[2] and run.num_warps == 1
    assert run.timings == {SMALL[2]: 1.0, SMALL[0]: 2.0, SMALL[1]: 3.0}
    assert run.note == "32x16x16 G4 w1 s1 (fastest of 3 by hand, 1.000 ms)"
    out[...] = np.nan
    np.testing.assert_allclose(run(), a @ b, rtol=1e-4, atol=1e-4)


def test_by_hand_skips_failing_configs_and_reports_when_all_fail():
    a, b, out = _inputs(20, 20, 20)
    bad = Config({"BLOCK_M": 24, "BLOCK_N": 32, "BLOCK_K": 16, "GROUP_M": 1})  # not a power of two

    def bench(fn):
        fn()
        return 0.5

    run = autotuned_matmul.best_by_hand(a, b, out, bench, [bad, SMALL[0]])
    assert run.config is SMALL[0]
    assert run.note == "16x32x16 G1 w1 s3 (fastest of 1 by hand, 0.500 ms; 1 failed)"
    assert run.timings[bad].startswith("CompilationError: ")
    with pytest.raises(RuntimeError, match=r"every matmul config failed when launched by hand: "
                                           r"BLOCK_M: 24, BLOCK_N: 32, BLOCK_K: 16, GROUP_M: 1: CompilationError"):
        autotuned_matmul.best_by_hand(a, b, out, bench, [bad])


def _rows(tuned_ms, best_ms, mismatch=False):
    case = gpu_workloads.Case("matmul_autotune", "4096x4096x4096", "bfloat16", bytes=1, flops=2 * 4096 ** 3,
                              num_warps=None, variants={}, reference="cublas", compute_bound=True,
                              rows={"tegula.best": ("matmul_autotune_best", "tegula")})
    return gpu_report.case_rows(case, [
        Outcome("cublas", [0.2], "reference"),
        Outcome("tegula", [tuned_ms], "mismatch" if mismatch else "ok", note="chose 128x128x64 G8 w8 s3 (8 configs"
                ", tuned in 3.1 s)", num_warps=8),
        Outcome("tegula.best", [best_ms], "ok", note="128x256x64 G8 w8 s3 (fastest of 8 by hand, 0.260 ms)",
                num_warps=8)], 5e12)


def test_rows_target_and_table_of_the_autotuned_matmul():
    rows = _rows(0.26, 0.25)
    assert [(r["workload"], r["variant"]) for r in rows] == [
        ("matmul_autotune", "cublas"), ("matmul_autotune", "tegula"), ("matmul_autotune_best", "tegula")]
    assert all(r["variant"] in gpu_workloads.VARIANTS for r in rows)
    tuned, best = rows[1], rows[2]
    assert tuned["num_warps"] == best["num_warps"] == 8 and rows[0]["num_warps"] is None
    assert tuned["floor_frac"] == pytest.approx(0.2 / 0.26) and best["floor_frac"] == pytest.approx(0.8)
    assert best["note"].startswith("128x256x64 G8 w8 s3")
    target = {c["what"]: c for c in criteria(rows)}[
        "matmul_autotune: autotuned time / best config's time by hand"]
    assert target["value"] == pytest.approx(1.04) and target["pass"] is True and target["target"] == "<= 1.05"
    slow = {c["what"]: c for c in criteria(_rows(0.27, 0.25))}
    assert slow["matmul_autotune: autotuned time / best config's time by hand"]["pass"] is False
    wrong = {c["what"]: c for c in criteria(_rows(0.25, 0.25, mismatch=True))}
    assert wrong["matmul_autotune: autotuned time / best config's time by hand"]["pass"] is False
    assert gpu_run.exit_status(_rows(0.25, 0.25, mismatch=True)) == 1
    report = {"schema": gpu_report.SCHEMA, "gpu": "NVIDIA H200", "driver": None, "versions": {}, "commit": "x",
              "quick": False, "date": "today", "floors": {"copy": {"bytes_per_s": 4e12, "bytes_per_copy": 2}},
              "rows": rows, "criteria": criteria(rows)}
    lines = render.format_markdown(report).splitlines()
    cells = [[c.strip() for c in line.strip("|").split("|")] for line in lines if line.startswith("| ")]
    assert cells[3][0] == "matmul_autotune" and cells[3][3] == "tegula"
    assert cells[3][-1] == "ok (chose 128x128x64 G8 w8 s3 (8 configs, tuned in 3.1 s))"
    assert cells[4][0] == "matmul_autotune_best" and cells[4][7] == "1.00"
    assert ("- PASS matmul_autotune: autotuned time / best config's time by hand: 1.040 (target <= 1.05)"
            in lines)


class _StandInTimer:
    """What measure_case needs of CudaTimer: made-up samples, each callable run once per round."""

    def interleaved(self, fns, reps):
        for fn in fns:
            fn()
        return [[float(i + 1)] * reps for i in range(len(fns))]


def test_measuring_loop_keeps_both_tegula_variants_and_their_notes():
    a, b, out = _inputs(24, 40, 16)
    case = gpu_workloads.Case(
        "matmul_autotune", "24x40x16", "float32", bytes=1, flops=1, num_warps=None, reference="cublas",
        compute_bound=True, rows={"tegula.best": ("matmul_autotune_best", "tegula")},
        variants={"tegula": lambda: autotuned_matmul.tuned_variant(a, b, out.copy(), SMALL[:2], warmup=1, rep=2),
                  "tegula.best": lambda: autotuned_matmul.best_by_hand(a, b, out.copy(), lambda fn: 1.0,
                                                                       SMALL[:2])})
    no_torch = types.SimpleNamespace(cuda=types.SimpleNamespace(synchronize=lambda: None))
    outcomes = gpu_measure.measure_case(no_torch, _StandInTimer(), case, ("tegula",), 0.01, 2, 3)
    assert [o.variant for o in outcomes] == ["tegula", "tegula.best"]
    assert all(o.error is None and o.samples for o in outcomes), outcomes
    assert outcomes[0].note.startswith("chose ") and outcomes[1].note.startswith("16x32x16 G1 w1 s3 (fastest of 2")
    assert outcomes[1].num_warps == 1
    # Selecting variant "cublas" only leaves both out: they are rows of variant "tegula".
    assert gpu_measure.measure_case(no_torch, _StandInTimer(), case, ("cublas",), 0.01, 2, 3) == []


@pytest.mark.parametrize("arch", [90, 80])
def test_every_config_compiles_for_the_gpu(arch):
    from tegula import _C

    try:
        _C.cuda_target(arch=arch)
    except RuntimeError as e:
        pytest.skip(f"NVRTC cannot be loaded here: {e}")
    bf16 = np.zeros(16, ml_dtypes.bfloat16)
    configs = autotuned_matmul.CONFIGS if arch == 90 else autotuned_matmul.CONFIGS[:2]
    for config in configs:
        args = (bf16, bf16, bf16, 4096, 4096, 4096, 4096, 1, 4096, 1, 4096, 1)
        request, _ = matmul_kernel._request_for(*args, **config.kwargs)
        options = _C.CompileOptions(backend="cuda", cuda_arch=arch, num_warps=config.num_warps,
                                    num_stages=config.num_stages)
        kernel = _C.compile(request, options)
        assert kernel is not None, config
