"""tegula.testing.do_bench (return modes, quantiles, budgets, untimed setup)
and perf_report / Benchmark sweeps (table, CSV, PNG)."""

import csv
import time

import numpy as np
import pytest

import tegula
import tegula.testing as tt
from vector_add import add_kernel


def _sleeper(ms):
    def fn():
        end = time.perf_counter() + ms / 1e3
        while time.perf_counter() < end:
            pass

    return fn


def test_do_bench_return_modes_and_quantiles():
    fn = _sleeper(0.2)
    mean = tt.do_bench(fn, warmup=1, rep=5, device="cpu")
    assert isinstance(mean, float) and 0.15 < mean < 50
    # rep is a time budget: 50 ms holds 5 calls even when a loaded machine
    # stretches the 0.2 ms sleep tenfold (5 ms made this flaky under load).
    samples = tt.do_bench(fn, warmup=1, rep=50, return_mode="all", device="cpu")
    assert isinstance(samples, list) and len(samples) >= 5 and all(s >= 0.19 for s in samples)
    low, median, high = tt.do_bench(fn, warmup=1, rep=5, quantiles=[0.2, 0.5, 0.8], device="cpu")
    assert low <= median <= high
    single = tt.do_bench(fn, warmup=1, rep=5, quantiles=[0.5], device="cpu")
    assert isinstance(single, float)
    lo, hi = tt.do_bench(fn, warmup=1, rep=5, return_mode="min", device="cpu"), \
        tt.do_bench(fn, warmup=1, rep=5, return_mode="max", device="cpu")
    assert 0.19 <= lo <= hi


def test_summary_statistics_are_numpy_s():
    times = [3.0, 1.0, 2.0, 10.0]
    assert tt.summarize(times) == 4.0  # Triton's default is the mean
    assert tt.summarize(times, return_mode="median") == 2.5
    assert tt.summarize(times, return_mode="min") == 1.0
    assert tt.summarize(times, return_mode="all") == times
    assert tt.summarize(times, quantiles=[0.0, 1.0]) == [1.0, 10.0]


def test_do_bench_rejects_bad_arguments():
    with pytest.raises(ValueError, match="return_mode must be one of min, max, mean, median, all, got 'avg'"):
        tt.do_bench(lambda: None, return_mode="avg")
    with pytest.raises(ValueError, match=r"quantiles must lie in \[0, 1\], got \[1.5\]"):
        tt.do_bench(lambda: None, quantiles=[1.5])
    with pytest.raises(ValueError, match="rep must be a time budget in ms >= 0, got -1"):
        tt.do_bench(lambda: None, rep=-1, device="cpu")
    with pytest.raises(ValueError, match="device must be 'cpu', 'cuda' or None, got 'tpu'"):
        tt.do_bench(lambda: None, device="tpu")
    # Triton-CPU's host-timing switch is accepted (the CPU is always timed on the host).
    assert tt.do_bench(lambda: None, warmup=1, rep=2, device="cpu", measure_time_with_hooks=True) >= 0.0


@pytest.mark.timing  # the estimate times a 1 ms sleep: on two busy cores it can read 20 ms
def test_the_budget_sets_the_number_of_calls():
    calls = []
    tt.do_bench(lambda: calls.append(1), warmup=0, rep=0, device="cpu")
    assert len(calls) == 1 + 5 + 1 + 1  # first call, estimate, one warm-up, one timed
    calls.clear()
    samples = tt.do_bench(_sleeper(1.0), warmup=0, rep=20, return_mode="all", device="cpu")
    assert 5 <= len(samples) <= 21


def test_a_call_longer_than_the_budget_runs_three_times():
    # First call, one estimate (it spends the 125 ms budget) and one timed call: no more estimates and no
    # warm-up, so autotuning slow kernels on the CPU does not take eight runs of each configuration.
    calls = []

    def slow():
        calls.append(1)
        _sleeper(150.0)()
    samples = tt.bench_samples(slow, warmup=25, rep=100, device="cpu")
    assert len(calls) == 3 and len(samples) == 1 and samples[0] >= 149.0


def test_setup_runs_before_every_call_untimed():
    order = []
    samples = tt.bench_samples(lambda: order.append("call"), warmup=0, rep=0, device="cpu",
                               setup=lambda: (order.append("setup"), _sleeper(2.0)()))
    assert order == ["setup", "call"] * (len(order) // 2)
    assert max(samples) < 1.0  # the 2 ms setup is not in the samples

    class Param:
        grad = "stale"

    param = Param()
    seen = []
    tt.do_bench(lambda: seen.append(param.grad), warmup=0, rep=0, grad_to_none=[param], device="cpu")
    assert set(seen) == {None}


def test_the_budget_counts_the_setup():
    # A cheap call behind a 10 ms setup (an autotuner restoring a large argument): the 50 ms budget
    # holds about five calls, not 10^4; the setup stays out of the samples.
    calls = []
    samples = tt.bench_samples(lambda: calls.append(1), warmup=0, rep=50, device="cpu", setup=_sleeper(10.0))
    assert 1 <= len(samples) <= 10 and len(calls) <= 1 + 5 + 1 + 10
    assert max(samples) < 5.0


def test_do_bench_times_a_kernel(backend):
    n = 1 << 16
    x = backend.array(np.ones(n, np.float32))
    out = backend.zeros(n, np.float32)
    ms = tt.do_bench(lambda: add_kernel[(tegula.cdiv(n, 1024),)](x, x, out, n, BLOCK=1024),
                     warmup=2, rep=10, device=backend.name)
    assert 0 < ms < 100
    np.testing.assert_array_equal(backend.numpy(out), 2.0)


def _bench_mark(**extra):
    return tt.perf_report(tt.Benchmark(
        x_names=["size"], x_vals=[16, 64, 256], line_arg="provider", line_vals=["double", "square"],
        line_names=["Double", "Square"], plot_name="toy-sweep", args={"offset": 1}, ylabel="value",
        styles=[("blue", "-"), ("green", "--")], x_log=True, **extra))


def test_perf_report_prints_a_table_and_writes_csv(tmp_path, capsys):
    calls = []

    @_bench_mark()
    def sweep(size, provider, offset):
        calls.append((size, provider, offset))
        return float(2 * size + offset) if provider == "double" else float(size * size + offset)

    assert sweep(size=3, provider="double", offset=0) == 6.0  # still callable as itself
    calls.clear()
    assert sweep.run(print_data=True, save_path=str(tmp_path / "out")) is None
    assert calls == [(s, p, 1) for s in (16, 64, 256) for p in ("double", "square")]
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == "toy-sweep:"
    assert printed[1].split() == ["size", "Double", "Square"]
    assert printed[2].split() == ["16", "33", "257"]
    assert printed[4].split() == ["256", "513", "65537"]
    with open(tmp_path / "out" / "toy-sweep.csv", newline="") as f:
        rows = list(csv.reader(f))
    assert rows == [["size", "Double", "Square"], ["16", "33.000000", "257.000000"],
                    ["64", "129.000000", "4097.000000"], ["256", "513.000000", "65537.000000"]]


def test_perf_report_accepts_triples_and_tuples_of_x(tmp_path):
    bench = tt.Benchmark(x_names=["M", "N"], x_vals=[(2, 3), 4], line_arg="p", line_vals=[1],
                         line_names=["one"], plot_name="grid", args={})

    @tt.perf_report([bench])
    def sweep(M, N, p):
        return M * N, M * N - 1, M * N + 1

    sweep.run(save_path=str(tmp_path))
    assert (tmp_path / "grid.csv").read_text().splitlines() == ["M,N,one", "2,3,6.000000", "4,4,16.000000"]


def test_perf_report_png_with_matplotlib(tmp_path):
    pytest.importorskip("matplotlib")

    @_bench_mark()
    def sweep(size, provider, offset):
        return size, size * 0.9, size * 1.1

    sweep.run(save_path=str(tmp_path))
    assert (tmp_path / "toy-sweep.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_perf_report_says_when_matplotlib_is_missing(tmp_path, no_matplotlib):
    @_bench_mark()
    def sweep(size, provider, offset):
        return float(size)

    with pytest.warns(RuntimeWarning, match="toy-sweep.png was not drawn, only its CSV written"):
        sweep.run(save_path=str(tmp_path))
    assert (tmp_path / "toy-sweep.csv").exists() and not (tmp_path / "toy-sweep.png").exists()
    with pytest.raises(ImportError, match="show_plots needs matplotlib"):
        sweep.run(show_plots=True)


def test_benchmark_errors():
    with pytest.raises(ValueError, match="Benchmark 'b' has 2 line_vals but 1 line_names"):
        tt.Benchmark(x_names=["n"], x_vals=[1], line_arg="p", line_vals=[1, 2], line_names=["a"],
                     plot_name="b", args={})
    with pytest.raises(ValueError, match="plot_name names the output files"):
        tt.Benchmark(x_names=["n"], x_vals=[1], line_arg="p", line_vals=[1], line_names=["a"],
                     plot_name="a/b", args={})
    with pytest.raises(ValueError, match="Benchmark 'b' has 1 styles for 2 lines; give one style per line"):
        tt.Benchmark(x_names=["n"], x_vals=[1], line_arg="p", line_vals=[1, 2], line_names=["a", "c"],
                     styles=[("blue", "-")], plot_name="b", args={})
    # More styles than lines (Triton's layer norm tutorial has three for two): the extra ones go unused.
    tt.Benchmark(x_names=["n"], x_vals=[1], line_arg="p", line_vals=[1, 2], line_names=["a", "c"],
                 styles=[("blue", "-"), ("green", "-"), ("red", "-")], plot_name="b", args={})

    @tt.perf_report(tt.Benchmark(x_names=["n"], x_vals=[1], line_arg="p", line_vals=[1],
                                 line_names=["a"], plot_name="b", args={}))
    def bad(n, p):
        return "fast"

    with pytest.raises(TypeError, match=r"benchmark 'b' at \{'n': 1, 'p': 1\} returned str; return a "
                                        r"number or \(value, low, high\)"):
        bad.run()
