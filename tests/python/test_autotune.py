"""@tegula.autotune, @tegula.heuristics and tegula.Config: choosing the fastest
config, the per-key and on-disk caches, arguments left exactly as one launch
leaves them, skipped configs, pruning and the TEGULA_PRINT_AUTOTUNING report.

Most tests wrap module-level @jit kernels in a fresh Autotuner with
``cache_results=False``, so that each starts with nothing tuned while the
compiled kernels themselves come from the shared kernel cache.
"""

import json
import os
import re
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import tegula
import tegula.language as tl
from tegula._autotune_report import Progress
from tegula.autotune import AutotuneError, AutotuneWarning

from cache_util import seed_precompiled_prelude

FAST = {"warmup": 1, "rep": 3, "cache_results": False}  # short timing budgets (ms), no disk


def _tuner(kernel, configs, key=("n",), **options):
    return tegula.autotune(configs=configs, key=list(key), **{**FAST, **options})(kernel)


@tegula.jit
def add_one_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=mask) + 1, mask=mask)


@tegula.jit
def spin_kernel(x_ptr, out_ptr, n, REPEAT: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    y = tl.load(x_ptr + offs, mask=mask, other=1.0)
    for _ in range(REPEAT):  # REPEAT - 1 of these are redundant work for the tuner to avoid
        y = tl.sqrt(y * y + 1.0) - 0.5
    tl.store(out_ptr + offs, y, mask=mask)


def _grid(n):
    return lambda meta: (tegula.cdiv(n, meta["BLOCK"]),)


def test_picks_the_fastest_config(backend):
    # About 100 us of dependent arithmetic per element on the GPU, 10 ms in all on the CPU.
    n, repeat = (1 << 16, 5000) if backend.is_cuda else (4096, 1000)
    x = np.random.default_rng(0).random(n, dtype=np.float32)
    xs, out = backend.array(x), backend.zeros(n, np.float32)
    slow, fast = tegula.Config({"REPEAT": repeat, "BLOCK": 256}), tegula.Config({"REPEAT": 1, "BLOCK": 256})
    kernel = _tuner(spin_kernel, [slow, fast])
    kernel[_grid(n)](xs, out, n)
    assert kernel.best_config is fast
    assert kernel.cache == {(n, "f32", "f32", "cuda:0" if backend.is_cuda else "cpu"): fast}
    slow_ms, fast_ms = kernel.configs_timings[slow][0], kernel.configs_timings[fast][0]
    assert slow_ms > 3 * fast_ms
    np.testing.assert_allclose(backend.numpy(out), np.sqrt(x * x + 1) - 0.5, rtol=1e-6)


def _counting_bench(counter, configs_seen=None):
    """A do_bench replacement that counts trials and ranks configs by call order."""

    def bench(fn, quantiles):
        counter.append(1)
        fn()
        return [float(len(counter))] * len(quantiles)

    return bench


def test_each_key_is_tuned_once(backend):
    trials = []
    configs = [tegula.Config({"BLOCK": b}) for b in (32, 64, 128)]
    kernel = _tuner(add_one_kernel, configs, do_bench=_counting_bench(trials))
    for n in (1000, 1000, 700, 1000, 700):
        x = backend.zeros(n, np.float32)
        kernel[_grid(n)](x, n)
        np.testing.assert_array_equal(backend.numpy(x), 1.0)
    assert len(trials) == 6  # three configs for n=1000, three for n=700, nothing after
    where = "cuda:0" if backend.is_cuda else "cpu"
    assert set(kernel.cache) == {(1000, "f32", where), (700, "f32", where)}
    assert kernel.best_config is configs[0]  # the counting bench ranks the first config fastest


def test_in_place_kernel_over_eight_configs_changes_data_like_one_launch(backend):
    n = 1000
    x0 = np.random.default_rng(1).standard_normal(n).astype(np.float32)
    x = backend.array(x0.copy())
    configs = [tegula.Config({"BLOCK": b}, num_warps=w) for b in (32, 64, 128, 256) for w in (1, 2)]
    launches = []

    def count(args):
        launches.append(1)

    for config in configs:
        config.pre_hook = count
    kernel = _tuner(add_one_kernel, configs)
    kernel[_grid(n)](x, n)
    assert len(launches) > 8  # every config ran, several times
    np.testing.assert_array_equal(backend.numpy(x), x0 + 1)
    kernel[_grid(n)](x, n)  # tuned: one plain launch
    np.testing.assert_array_equal(backend.numpy(x), (x0 + 1) + 1)  # float32 rounding of each step


@tegula.jit
def accumulate_kernel(x_ptr, total_ptr, n, BLOCK: tl.constexpr):
    acc = tl.load(total_ptr)
    for start in range(0, n, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        acc += tl.sum(tl.load(x_ptr + offs, mask=offs < n, other=0.0))
    tl.store(total_ptr, acc)


def test_reset_to_zero_zeroes_before_each_trial_and_restores_after(backend):
    n = 300
    x = np.arange(n, dtype=np.float32)
    total = backend.full(1, 5.0, np.float32)
    seen = []

    def record(args):
        seen.append(float(backend.numpy(args["total_ptr"])[0]))

    configs = [tegula.Config({"BLOCK": b}, pre_hook=record) for b in (32, 128)]
    kernel = _tuner(accumulate_kernel, configs, reset_to_zero=["total_ptr"])
    kernel[(1,)](backend.array(x), total, n)
    assert seen[:-1] and set(seen[:-1]) == {0.0}  # every trial started from zero
    assert seen[-1] == 5.0  # the real launch sees the caller's value
    assert float(backend.numpy(total)[0]) == 5.0 + x.sum()


@tegula.jit
def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2, mask=mask)


def test_output_aliasing_an_input_is_restored(backend):
    # out_ptr is only written, but it is the same array as x_ptr: tuning must
    # still put x back before every trial, or x would be doubled many times.
    n = 500
    x0 = np.arange(n, dtype=np.float32)
    x = backend.array(x0.copy())
    kernel = _tuner(scale_kernel, [tegula.Config({"BLOCK": b}) for b in (64, 128)])
    kernel[_grid(n)](x, x, n)
    np.testing.assert_array_equal(backend.numpy(x), 2 * x0)


def test_restore_value_is_honoured_for_write_only_outputs(backend):
    n = 200
    x = backend.array(np.ones(n, dtype=np.float32))
    out = backend.full(n, -7.0, np.float32)
    seen = []
    configs = [tegula.Config({"BLOCK": b}, pre_hook=lambda a: seen.append(backend.numpy(a["out_ptr"]).copy()))
               for b in (64, 128)]
    kernel = _tuner(scale_kernel, configs, restore_value=["out_ptr"])
    kernel[_grid(n)](x, out, n)
    assert all((s == -7.0).all() for s in seen)
    np.testing.assert_array_equal(backend.numpy(out), 2.0)


@tegula.autotune(configs=[tegula.Config({"BLOCK": 64}), tegula.Config({"BLOCK": 128}, num_warps=2)],
                 key=["n"], warmup=1, rep=3, cache_results=False)
@tegula.heuristics({"EVEN": lambda args: args["n"] % args["BLOCK"] == 0,
                    "SCALE": lambda args: 3 if args["n"] > 100 else 2})
@tegula.jit
def stacked_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr, EVEN: tl.constexpr, SCALE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    if EVEN:
        tl.store(out_ptr + offs, tl.load(x_ptr + offs) * SCALE)
    else:
        mask = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * SCALE, mask=mask)


def test_base_fn_is_the_jit_function_under_every_decorator():
    assert stacked_kernel.base_fn.__name__ == "stacked_kernel"
    assert isinstance(stacked_kernel.base_fn, tegula.JITFunction)
    assert stacked_kernel.fn.base_fn is stacked_kernel.base_fn  # the @heuristics layer's too


@pytest.mark.parametrize("n", [256, 300, 50])
def test_heuristics_under_autotune_compute_constexprs(backend, n):
    x = np.arange(n, dtype=np.float32)
    out = backend.full(n + 64, -1.0, np.float32)
    grid_meta = []

    def grid(meta):
        grid_meta.append(meta)
        return (tegula.cdiv(n, meta["BLOCK"]),)

    stacked_kernel[grid](backend.array(x), out, n)
    result = backend.numpy(out)
    np.testing.assert_array_equal(result[:n], x * (3 if n > 100 else 2))
    np.testing.assert_array_equal(result[n:], -1.0)  # the masked tail is untouched
    last = grid_meta[-1]
    assert last["BLOCK"] == stacked_kernel.best_config.kwargs["BLOCK"]
    assert last["EVEN"] == (n % last["BLOCK"] == 0) and last["SCALE"] == (3 if n > 100 else 2)


@tegula.heuristics({"BLOCK": lambda args: tegula.next_power_of_2(args["n"])})
@tegula.jit
def whole_row_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=mask) + 1, mask=mask)


def test_heuristics_alone_and_their_errors(backend):
    x = backend.zeros(37, np.float32)
    whole_row_kernel[(1,)](x, 37)
    np.testing.assert_array_equal(backend.numpy(x), 1.0)
    whole_row_kernel[(1,)](x, 37, BLOCK=8)  # a passed value is the heuristic's input; its result replaces it
    np.testing.assert_array_equal(backend.numpy(x), 2.0)


@tegula.heuristics({"FLAG": lambda args: bool(args["FLAG"])})
@tegula.jit
def _normalized_flag_kernel(x_ptr, FLAG: tl.constexpr):
    tl.store(x_ptr, 1.0 if FLAG else 2.0)


def test_a_heuristic_normalizes_a_value_the_caller_passes(backend):
    # Unsloth's kernels pass GEMMA=/BACKWARD_PASS=/DO_SOFTCAPPING= and normalize them so.
    x = backend.zeros(1, np.float32)
    _normalized_flag_kernel[(1,)](x, FLAG=1)
    assert backend.numpy(x)[0] == 1.0
    _normalized_flag_kernel[(1,)](x, FLAG=0)
    assert backend.numpy(x)[0] == 2.0


def test_tuple_grid_and_keyword_arguments(backend):
    n = 256
    x = backend.zeros(n, np.float32)
    kernel = _tuner(add_one_kernel, [tegula.Config({"BLOCK": 256}), tegula.Config({"BLOCK": 512})])
    kernel[(1,)](x_ptr=x, n=n)
    np.testing.assert_array_equal(backend.numpy(x), 1.0)


def test_a_config_that_fails_to_compile_is_skipped(backend):
    n = 100
    x = backend.zeros(n, np.float32)
    bad, good = tegula.Config({"BLOCK": 100}), tegula.Config({"BLOCK": 64})
    kernel = _tuner(add_one_kernel, [bad, good])
    with pytest.warns(AutotuneWarning, match=r"autotune of kernel 'add_one_kernel': skipped config "
                                             r"BLOCK: 100 \(failed to compile: CompilationError: "):
        kernel[_grid(n)](x, n)
    assert kernel.best_config is good
    assert kernel.configs_timings[bad] is None
    np.testing.assert_array_equal(backend.numpy(x), 1.0)


def test_all_configs_failing_is_one_clear_error(backend):
    x = backend.zeros(10, np.float32)
    kernel = _tuner(add_one_kernel, [tegula.Config({"BLOCK": 100}), tegula.Config({"BLOCK": 48})])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AutotuneWarning)
        with pytest.raises(AutotuneError) as info:
            kernel[_grid(10)](x, 10)
    message = str(info.value)
    assert message.startswith("every autotune config of kernel 'add_one_kernel' failed:\n")
    assert "  BLOCK: 100: failed to compile: CompilationError: " in message
    assert "  BLOCK: 48: failed to compile: CompilationError: " in message
    np.testing.assert_array_equal(backend.numpy(x), 0.0)


def test_one_cause_for_every_config_is_raised_as_itself(backend):
    kernel = _tuner(add_one_kernel, [tegula.Config({"BLOCK": 64}), tegula.Config({"BLOCK": 128})])
    with pytest.raises(TypeError, match="argument 'x_ptr' of kernel 'add_one_kernel' must be an array"):
        kernel[(1,)]([1.0, 2.0], 2)


def test_pruning_by_early_prune_and_perf_model(backend):
    trials, early_seen = [], []
    configs = [tegula.Config({"BLOCK": b}) for b in (32, 64, 128, 256, 512)]

    def early(configs, named, **kwargs):
        early_seen.append(sorted(named))
        return [c for c in configs if c.kwargs["BLOCK"] <= named["n"]]

    def model(**args):
        return abs(args["BLOCK"] - 100)  # 128 and 64 estimated best

    kernel = _tuner(add_one_kernel, configs, do_bench=_counting_bench(trials),
                    prune_configs_by={"early_config_prune": early, "perf_model": model, "top_k": 2})
    x = backend.zeros(200, np.float32)
    kernel[_grid(200)](x, 200)
    assert early_seen == [["n", "x_ptr"]]
    assert len(trials) == 2
    assert kernel.best_config.kwargs["BLOCK"] in (64, 128)
    np.testing.assert_array_equal(backend.numpy(x), 1.0)


def test_pruning_sees_positional_arguments_and_keywords_as_triton_passes_them(backend):
    seen = []

    def early(configs, named, **kwargs):
        seen.append((sorted(named), sorted(kwargs)))
        return configs[:1]

    kernel = _tuner(add_one_kernel, [tegula.Config({"BLOCK": 32}), tegula.Config({"BLOCK": 64})],
                    prune_configs_by={"early_config_prune": early})
    x = backend.zeros(70, np.float32)
    kernel[_grid(70)](x, n=70)  # x by position, n by keyword
    assert seen == [(["x_ptr"], ["n"])]
    np.testing.assert_array_equal(backend.numpy(x), 1.0)


@tegula.jit
def _optional_output_kernel(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    if src_ptr is not None:
        tl.store(src_ptr + offs, tl.full([BLOCK], 1.0, tl.float32), mask=mask)
    tl.store(dst_ptr + offs, tl.load(dst_ptr + offs, mask=mask) + 1.0, mask=mask)


@pytest.mark.parametrize("option", ["restore_value", "reset_to_zero"])
def test_a_saved_argument_given_as_none_is_skipped(backend, option):
    # Optional arrays are passed as None where a call does not use them; the tuner saves the others.
    kernel = _tuner(_optional_output_kernel, [tegula.Config({"BLOCK": 32}), tegula.Config({"BLOCK": 64})],
                    **{option: ["src_ptr", "dst_ptr"]})
    dst = backend.array(np.full(100, 2.0, np.float32))
    kernel[_grid(100)](None, dst, 100)
    np.testing.assert_array_equal(backend.numpy(dst), 3.0)  # restored between trials, then written once


def test_tuned_meta_parameters_cannot_be_passed(backend):
    kernel = _tuner(add_one_kernel, [tegula.Config({"BLOCK": 64})])
    with pytest.raises(ValueError, match="kernel 'add_one_kernel' got 'BLOCK', which its autotune configs "
                                         "set; do not pass tuned meta-parameters"):
        kernel[(1,)](backend.zeros(4, np.float32), 4, BLOCK=64)


def test_names_are_checked_against_the_kernel():
    # A key name that is no parameter is left out of the key, as Triton leaves it, with a warning.
    kernel = _tuner(add_one_kernel, [tegula.Config({"BLOCK": 64})], key=["size", "n"])
    x = np.zeros(4, np.float32)
    with pytest.warns(AutotuneWarning, match=r"autotune key of kernel 'add_one_kernel' names 'size', which is "
                                             r"not one of its parameters \(x_ptr, n, BLOCK\); it is left out"):
        kernel[(1,)](x, 4)
    np.testing.assert_array_equal(x, 1.0)
    assert kernel.keys == ["n"] and len(kernel.cache) == 1
    with pytest.raises(ValueError, match=r"autotune reset_to_zero of kernel 'add_one_kernel' names 'y', which is "
                                         r"not one of its parameters \(x_ptr, n, BLOCK\)"):
        _tuner(add_one_kernel, [tegula.Config({"BLOCK": 64})], reset_to_zero=["y"])[(1,)](x, 4)
    with pytest.raises(TypeError, match="@tegula.autotune goes above @tegula.jit"):
        tegula.autotune(configs=[], key=[])(lambda x: x)
    with pytest.raises(ValueError, match="prune_configs_by of kernel 'add_one_kernel' has unknown entries"):
        tegula.autotune(configs=[], key=[], prune_configs_by={"topk": 1})(add_one_kernel)
    with pytest.raises(ValueError, match="Config num_warps must be a positive int or None, got 0"):
        tegula.Config({"BLOCK": 1}, num_warps=0)


def test_misused_configs_and_pruning_are_said_where_they_are_set():
    """A config or heuristic naming no parameter, a single Config for the list, a top_k that is no
    count, a prune that returns no configs, a do_bench that returns no time: each an error that says
    which, not an unexpected keyword at launch or a raw TypeError from inside the tuner."""
    with pytest.raises(TypeError, match=re.escape(
            "autotune config {'BLOKC': 16} of kernel 'add_one_kernel' sets 'BLOKC', which is not one of its "
            "parameters (x_ptr, n, BLOCK)")):
        _tuner(add_one_kernel, [tegula.Config({"BLOKC": 16})])
    with pytest.raises(TypeError, match=re.escape(
            "@tegula.heuristics of kernel 'add_one_kernel' sets 'EVEN', which is not one of its parameters")):
        tegula.heuristics({"EVEN": lambda args: True})(add_one_kernel)
    with pytest.raises(TypeError, match=re.escape(
            "autotune configs of kernel 'add_one_kernel' must be a list of tegula.Config, got Config")):
        tegula.autotune(configs=tegula.Config({"BLOCK": 16}), key=[])(add_one_kernel)
    with pytest.raises(ValueError, match=re.escape(
            "prune_configs_by top_k of kernel 'add_one_kernel' must be an int >= 1 or a fraction in (0, 1], "
            "got 'two'")):
        _tuner(add_one_kernel, [tegula.Config({"BLOCK": 16})], prune_configs_by={"top_k": "two"})
    configs = [tegula.Config({"BLOCK": 16}), tegula.Config({"BLOCK": 32})]
    x = np.zeros(40, np.float32)
    for returned, shown in ((None, "NoneType"), (["junk"], "a list holding str")):
        kernel = _tuner(add_one_kernel, configs,
                        prune_configs_by={"early_config_prune": lambda c, named, **kw: returned})
        with pytest.raises(TypeError, match=re.escape(
                f"early_config_prune of kernel 'add_one_kernel' must return a list of the tegula.Config it was "
                f"given, got {shown}")):
            kernel[_grid(40)](x, 40)
    # What the hook returns is iterated, as in Triton: a generator of configs is one.
    def wider_than_16(candidates, named, **kwargs):
        yield from (config for config in candidates if config.kwargs["BLOCK"] > 16)

    kernel = _tuner(add_one_kernel, configs, prune_configs_by={"early_config_prune": wider_than_16})
    kernel[_grid(40)](x, 40)
    assert kernel.best_config is configs[1]
    kernel = _tuner(add_one_kernel, configs, do_bench=lambda fn, quantiles=None: "fast")
    with pytest.warns(AutotuneWarning), pytest.raises(AutotuneError, match=re.escape(
            "the do_bench of kernel 'add_one_kernel' must return a time in ms (a number, or a list of them for "
            "the quantiles), got 'fast'")):
        kernel[_grid(40)](x, 40)


def test_print_autotuning_reports_every_config_and_the_choice(backend, monkeypatch, capsys):
    monkeypatch.setenv("TEGULA_PRINT_AUTOTUNING", "1")
    configs = [tegula.Config({"BLOCK": 64}), tegula.Config({"BLOCK": 128}, num_warps=2)]
    kernel = _tuner(add_one_kernel, configs)
    x = backend.zeros(300, np.float32)
    kernel[_grid(300)](x, 300)
    where = "cuda:0" if backend.is_cuda else "cpu"
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"tegula autotune: kernel 'add_one_kernel' key (300, 'f32', '{where}'): 2 configs"
    assert lines[1].startswith("  BLOCK: 64: ") and lines[1].endswith(")") and " ms (20%-80%: " in lines[1]
    assert lines[2].startswith("  BLOCK: 128, num_warps: 2: ")
    assert lines[3].startswith(f"tegula autotune: kernel 'add_one_kernel' chose {kernel.best_config} (")
    kernel[_grid(300)](x, 300)
    assert capsys.readouterr().out == ""  # nothing tuned, nothing printed


def test_progress_shows_on_a_terminal_after_a_second(monkeypatch):
    class Terminal:
        def __init__(self, tty):
            self.text, self.tty = "", tty

        def isatty(self):
            return self.tty

        def write(self, text):
            self.text += text

        def flush(self):
            pass

    terminal, pipe = Terminal(True), Terminal(False)
    for stream in (terminal, pipe):
        progress = Progress("k", 3, stream)
        progress.show("timing", 0, tegula.Config({"BLOCK": 8}))  # too early: nothing
        progress.started -= 2.0
        progress.show("timing", 1, tegula.Config({"BLOCK": 16}))
        progress.show("timing", 2, tegula.Config({"BLOCK": 32}), (tegula.Config({"BLOCK": 16}), 0.25))
        progress.done()
    assert terminal.text == ("\r\x1b[Ktegula autotune 'k': timing 2/3: BLOCK: 16"
                             "\r\x1b[Ktegula autotune 'k': timing 3/3: BLOCK: 32 (best so far BLOCK: 16: 0.2500 ms)"
                             "\r\x1b[K")
    assert pipe.text == ""


# --- the on-disk tuning cache, across processes -------------------------------------------

TUNE_AND_REPORT = textwrap.dedent("""
    import json, os, sys
    import numpy as np
    import tegula
    import tegula.language as tl

    trials = []

    def counting_bench(fn, quantiles):
        trials.append(1)
        fn()
        return [float(len(trials))] * len(quantiles)

    @tegula.autotune(configs=[tegula.Config({"BLOCK": 32}), tegula.Config({"BLOCK": 64}),
                              tegula.Config({"BLOCK": 128})],
                     key=["n"], do_bench=counting_bench)
    @tegula.jit
    def double_kernel(x_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2, mask=mask)

    n = 1000
    x0 = np.arange(n, dtype=np.float32)
    if sys.argv[1] == "cuda":
        import torch
        x = torch.from_numpy(x0).cuda()
    else:
        x = x0.copy()
    double_kernel[lambda meta: (tegula.cdiv(n, meta["BLOCK"]),)](x, n)
    result = x.cpu().numpy() if sys.argv[1] == "cuda" else x
    assert (result == 2 * x0).all()
    print(json.dumps({"trials": len(trials), "stats": tegula.runtime_stats(),
                      "best": str(double_kernel.best_config)}))
""")


def test_a_second_process_reuses_the_tuning(tmp_path, backend):
    script = tmp_path / "tune_me.py"
    script.write_text(TUNE_AND_REPORT)
    env = dict(os.environ, TEGULA_CACHE_DIR=str(seed_precompiled_prelude(tmp_path / "cache")))
    env.pop("TEGULA_PRINT_AUTOTUNING", None)

    def run():
        done = subprocess.run([sys.executable, str(script), backend.name], env=env, capture_output=True,
                              text=True, timeout=600)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout.strip().splitlines()[-1])

    first = run()
    assert first["trials"] == 3 and first["stats"]["builds"] == 3 and first["best"] == "BLOCK: 32"
    second = run()
    assert second["trials"] == 0 and second["best"] == "BLOCK: 32"
    assert second["stats"]["builds"] == 0 and second["stats"]["frontend_runs"] == 0
    assert second["stats"]["disk_hits"] == 1  # only the chosen config is loaded
    folder = tmp_path / "cache" / "autotune"
    assert oct(folder.stat().st_mode & 0o777) == "0o700"
    [entry] = list(folder.iterdir())
    record = json.loads(entry.read_text())
    assert record["kernel"] == "double_kernel" and record["config"]["kwargs"] == {"BLOCK": 32}
    assert record["identity"]["key"][0] == 1000
    assert record["identity"]["device"].startswith("cuda " if backend.is_cuda else "cpu ")


def test_a_damaged_tuning_record_is_a_miss(tmp_path, monkeypatch):
    monkeypatch.setenv("TEGULA_CACHE_DIR", str(seed_precompiled_prelude(tmp_path / "cache")))
    trials = []
    configs = [tegula.Config({"BLOCK": b}) for b in (32, 64)]
    x = np.zeros(100, np.float32)
    kernel = tegula.autotune(configs=configs, key=["n"], do_bench=_counting_bench(trials))(add_one_kernel)
    kernel[_grid(100)](x, 100)
    [entry] = list((tmp_path / "cache" / "autotune").iterdir())
    assert len(trials) == 2
    again = tegula.autotune(configs=configs, key=["n"], do_bench=_counting_bench(trials))(add_one_kernel)
    again[_grid(100)](x, 100)
    assert len(trials) == 2  # read back, not re-timed
    entry.write_text(entry.read_text()[:40])
    third = tegula.autotune(configs=configs, key=["n"], do_bench=_counting_bench(trials))(add_one_kernel)
    third[_grid(100)](x, 100)
    assert len(trials) == 4  # unreadable: tuned again, and rewritten whole
    assert json.loads(entry.read_text())["config"]["kwargs"] == {"BLOCK": 32}
    np.testing.assert_array_equal(x, 3.0)
    entry.write_text("[" * 400_000)  # nested deeper than the JSON parser recurses
    fourth = tegula.autotune(configs=configs, key=["n"], do_bench=_counting_bench(trials))(add_one_kernel)
    fourth[_grid(100)](x, 100)
    assert len(trials) == 6
    np.testing.assert_array_equal(x, 4.0)


# --- which arguments a kernel writes, from its IR ----------------------------------------


@tegula.jit
def effects_kernel(x_ptr, y_ptr, idx_ptr, unused_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    where = y_ptr + tl.load(idx_ptr + offs, mask=mask, other=0)
    for _ in range(n):  # a pointer carried through a loop
        where += 1
    tl.store(where, x, mask=mask)
    tl.store(x_ptr + offs, x + 1, mask=mask)


def test_kernel_effects_follow_pointers_through_loads_and_loops():
    a = np.zeros(64, np.float32)
    effects = effects_kernel.warmup(a, a, np.zeros(64, np.int32), a, 64, BLOCK=64).effects
    E = tegula._C.PointerEffects
    assert effects == {"x_ptr": E(read=True, written=True), "y_ptr": E(written=True),
                       "idx_ptr": E(read=True), "unused_ptr": E()}
    assert effects_kernel.inspect(a, a, np.zeros(64, np.int32), a, 64, BLOCK=64).effects == effects


@tegula.jit
def store_through_an_address(p_ptr, q_ptr, table_ptr):
    where = tl.load(table_ptr).to(tl.pointer_type(tl.float32))
    tl.store(where, 1.0)


def test_kernel_effects_assume_the_worst_about_addresses_made_from_integers():
    effects = store_through_an_address.warmup(np.zeros(1, np.float32), np.zeros(1, np.float32),
                                              np.zeros(1, np.int64)).effects
    E = tegula._C.PointerEffects
    # An address read from memory may point anywhere: every pointer parameter counts as written.
    assert effects == {"p_ptr": E(written=True), "q_ptr": E(written=True), "table_ptr": E(read=True, written=True)}


@tegula.jit
def accumulate(acc_ptr, x_ptr):
    tl.atomic_add(acc_ptr, tl.load(x_ptr))


def test_kernel_effects_of_atomics():
    E = tegula._C.PointerEffects
    effects = accumulate.warmup(np.zeros(1, np.float32), np.zeros(1, np.float32)).effects
    assert effects == {"acc_ptr": E(read=True, written=True, atomic=True), "x_ptr": E(read=True)}


# --- the example ---------------------------------------------------------------------------


def test_matmul_autotune_example_prunes_tunes_and_matches(backend):
    import matmul_autotune

    # Small and odd: the example's pruning keeps the two configs whose tiles fit.
    config = matmul_autotune.check(40, 24, 20, device=backend.name)
    assert config.kwargs["BLOCK_N"] == 32 and config.kwargs["BLOCK_M"] <= 32
    assert len(matmul_autotune.CONFIGS) >= 8


# The autotuned matmul (issue 7): tuned once, then launched by a new process
# with no compile and no tuning. On the CPU the example's tuner at a small
# shape; on the GPU the benchmark's configs at its 4096^3 bf16 shape.
MATMUL_TUNE_AND_REPORT = textwrap.dedent("""
    import json, os, sys
    import numpy as np
    import tegula
    from tegula import testing

    trials = []
    measure = testing.bench_samples

    def counting_bench_samples(*args, **kwargs):  # every config the autotuner times
        trials.append(1)
        return measure(*args, **kwargs)

    testing.bench_samples = counting_bench_samples
    repo = sys.argv[2]
    sys.path[:0] = [os.path.join(repo, "examples"), os.path.join(repo, "benchmarks")]
    if sys.argv[1] == "cuda":
        import torch
        from tegula_bench import autotuned_matmul

        size = 4096
        g = torch.Generator(device="cuda").manual_seed(0)
        a, b = (torch.randn(size, size, device="cuda", generator=g).to(torch.bfloat16) for _ in range(2))
        out = torch.empty(size, size, device="cuda", dtype=torch.bfloat16)
        tuner = autotuned_matmul.autotuner(cache_results=True)
        autotuned_matmul.launcher(tuner, a, b, out)()
        torch.testing.assert_close(out.float(), a.float() @ b.float(), atol=size ** 0.5 / 64, rtol=1.6e-2)
    else:
        import matmul_autotune

        tuner = matmul_autotune.matmul_tuned
        matmul_autotune.check(40, 33, 20)  # the example's pruning keeps 4 of its 8 configs
    print(json.dumps({"trials": len(trials), "stats": tegula.runtime_stats(), "best": str(tuner.best_config),
                      "timed": sum(t is not None for t in (tuner.configs_timings or {}).values())}))
""")


def test_a_second_process_launches_the_tuned_matmul_without_compiling_or_tuning(tmp_path, backend):
    script = tmp_path / "tune_matmul.py"
    script.write_text(MATMUL_TUNE_AND_REPORT)
    repo = os.path.join(os.path.dirname(__file__), "..", "..")
    env = dict(os.environ, TEGULA_CACHE_DIR=str(seed_precompiled_prelude(tmp_path / "cache")))
    env.pop("TEGULA_PRINT_AUTOTUNING", None)

    def run():
        done = subprocess.run([sys.executable, str(script), backend.name, os.path.abspath(repo)], env=env,
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout.strip().splitlines()[-1])

    first = run()
    # Every config the pruning keeps is compiled and timed (on the GPU one
    # that fails there would be skipped with a warning, not fail the tuning).
    assert first["timed"] >= 2 if backend.is_cuda else first["timed"] == 4
    assert first["trials"] == first["timed"] and first["stats"]["builds"] >= first["timed"]
    second = run()
    assert second["trials"] == 0 and second["timed"] == 0 and second["best"] == first["best"]
    assert second["stats"]["builds"] == 0 and second["stats"]["frontend_runs"] == 0
    assert second["stats"]["disk_hits"] == 1  # only the chosen config's kernel is loaded


class _LibraryTuner(tegula.Autotuner):
    """As a library subclasses Triton's Autotuner (flash-linear-attention's CachedAutotuner): Triton's
    constructor order, and run(*args, **kwargs) overridden around the base class's."""

    def __init__(self, fn, arg_names, configs, key, reset_to_zero, restore_value, **kwargs):
        super().__init__(fn, arg_names, configs, key, reset_to_zero, restore_value, **kwargs)
        self.runs = 0

    def run(self, *args, **kwargs):
        self.runs += 1
        return super().run(*args, **kwargs)


def test_a_subclass_in_tritons_order_launches_and_tunes(backend):
    n = 300
    x = np.random.default_rng(4).standard_normal(n).astype(np.float32)
    out = backend.zeros(n, np.float32)
    configs = [tegula.Config({"BLOCK": 64}), tegula.Config({"BLOCK": 128})]
    tuner = _LibraryTuner(scale_kernel, scale_kernel.arg_names, configs, ["n"], None, None, warmup=1, rep=2,
                          use_cuda_graph=False, cache_results=False)
    tuner[_grid(n)](backend.array(x), out, n)
    np.testing.assert_array_equal(backend.numpy(out), x * 2)
    assert tuner.runs == 1 and tuner.best_config in configs and set(tuner.cache) and tuner.keys == ["n"]
    assert not tuner.user_defined_pre_hook and not tuner.user_defined_post_hook


def test_autotune_hooks_run_around_every_timed_launch(backend):
    n = 200
    calls = []
    x = np.random.default_rng(6).standard_normal(n).astype(np.float32)
    out = backend.zeros(n, np.float32)
    kernel = _tuner(scale_kernel, [tegula.Config({"BLOCK": 64}), tegula.Config({"BLOCK": 128})],
                    pre_hook=lambda kwargs, reset_only=False: calls.append(("pre", kwargs["BLOCK"], reset_only)),
                    post_hook=lambda kwargs, exception: calls.append(("post", kwargs["BLOCK"], exception)),
                    use_cuda_graph=True)
    kernel[_grid(n)](backend.array(x), out, n)
    np.testing.assert_array_equal(backend.numpy(out), x * 2)
    assert kernel.user_defined_pre_hook and kernel.user_defined_post_hook
    timed = [c for c in calls if not (c[0] == "pre" and c[2])]
    for block in (64, 128):  # every timed launch of each config between its two hooks
        pre = [c for c in timed if c == ("pre", block, False)]
        post = [c for c in timed if c == ("post", block, None)]
        assert pre and len(pre) == len(post)
    assert calls[-1] == ("pre", kernel.best_config.kwargs["BLOCK"], True)  # once more after tuning, reset only
    with pytest.raises(TypeError, match="pre_hook of kernel 'scale_kernel' must be callable"):
        tegula.autotune(configs=[tegula.Config({"BLOCK": 64})], key=["n"], pre_hook=3)(scale_kernel)


def test_heuristics_and_configs_may_set_launch_options():
    """Launch options are names a launch takes besides the parameters: a heuristic may pick num_warps."""
    kernel = tegula.heuristics({"num_warps": lambda args: 2, "BLOCK": lambda args: 64})(add_one_kernel)
    x = np.zeros(40, np.float32)
    kernel[(1,)](x, 40)
    np.testing.assert_array_equal(x, 1.0)
    _tuner(add_one_kernel, [tegula.Config({"BLOCK": 64, "num_cpu_threads": 1})])


def test_a_nan_in_the_key_is_one_key(backend):
    """NaN equals nothing, itself included: a key holding one would miss the tuned cache at every launch."""
    @tegula.jit
    def scaled(x_ptr, n, s, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(x_ptr + offs, s, mask=offs < n)

    trials = []
    kernel = _tuner(scaled, [tegula.Config({"BLOCK": 32}), tegula.Config({"BLOCK": 64})], key=("n", "s"),
                    do_bench=_counting_bench(trials))
    x = backend.zeros(40, np.float32)
    for _ in range(3):
        kernel[_grid(40)](x, 40, float("nan"))
    assert len(kernel.cache) == 1 and len(trials) == 2
    assert np.isnan(backend.numpy(x)).all()


def test_pruning_functions_are_held_to_what_they_must_return():
    configs = [tegula.Config({"BLOCK": 32}), tegula.Config({"BLOCK": 64})]
    with pytest.raises(ValueError, match="has a perf_model but no top_k"):
        _tuner(add_one_kernel, configs, prune_configs_by={"perf_model": lambda **a: 1.0})
    x = np.zeros(40, np.float32)
    junk = _tuner(add_one_kernel, configs, prune_configs_by={"perf_model": lambda **a: None, "top_k": 1})
    with pytest.raises(TypeError, match="perf_model of kernel 'add_one_kernel' must return a number"):
        junk[_grid(40)](x, 40)
    renamed = _tuner(add_one_kernel, configs,
                     prune_configs_by={"early_config_prune": lambda c, a, **k: [tegula.Config({"NOPE": 1})]})
    with pytest.raises(ValueError, match="early_config_prune of kernel 'add_one_kernel' returned the config"):
        renamed[_grid(40)](x, 40)


@tegula.heuristics({"FLAG": lambda args: bool(args["FLAG"])})
@tegula.jit
def _positional_flag_kernel(x_ptr, FLAG: tl.constexpr):
    tl.store(x_ptr, 1.0 if FLAG else 2.0)


def test_a_heuristic_value_passed_by_position_is_replaced_there_and_errors_name_the_heuristic():
    x = np.zeros(1, np.float32)
    _positional_flag_kernel[(1,)](x, 1)
    assert x[0] == 1.0
    broken = tegula.heuristics({"BLOCK": lambda args: args["missing"]})(add_one_kernel)
    with pytest.raises(KeyError) as info:
        broken[(1,)](x, 1)
    assert "in the @heuristics function for 'BLOCK' of kernel 'add_one_kernel'" in info.value.__notes__[0]


def test_numpy_integers_are_config_and_launch_options():
    config = tegula.Config({"BLOCK": 32}, num_warps=np.int64(4), num_stages=np.int32(2))
    assert (config.num_warps, type(config.num_warps)) == (4, int)
    x = np.zeros(40, np.float32)
    add_one_kernel[_grid(40)](x, 40, BLOCK=64, num_warps=np.int64(8))
    np.testing.assert_array_equal(x, 1.0)


def test_a_heuristic_value_passed_by_position_under_autotune():
    @tegula.autotune(configs=[tegula.Config({"BLOCK": 32}), tegula.Config({"BLOCK": 64})], key=["n"],
                     warmup=1, rep=1, cache_results=False)
    @tegula.heuristics({"SCALE": lambda args: 2 if args["SCALE"] else 1})
    @tegula.jit
    def scaled(x_ptr, n, SCALE: tl.constexpr, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + SCALE, mask=offs < n)

    x = np.zeros(20, np.float32)
    scaled[(1,)](x, 20, True)  # SCALE by position: the heuristic's 2 replaces it in every trial too
    np.testing.assert_array_equal(x, 2.0)


def test_a_single_config_is_used_without_pruning():
    # Triton calls no prune hook when there is nothing to choose; a library's perf model may read GPU tables.
    def refuse(*args, **kwargs):
        raise AssertionError("a prune hook ran for a single config")

    kernel = _tuner(add_one_kernel, [tegula.Config({"BLOCK": 64})],
                    prune_configs_by={"early_config_prune": refuse, "perf_model": refuse, "top_k": 1})
    x = np.zeros(40, np.float32)
    kernel[_grid(40)](x, 40)
    np.testing.assert_array_equal(x, 1.0)
    assert tegula.OutOfResources is tegula.runtime.OutOfResources


def test_configs_may_name_amd_backend_hints():
    """Libraries tuned for both vendors keep Triton's AMD options (waves_per_eu, matrix_instr_nonkdim, kpack)
    in their configs. Triton takes such a config without a look until it launches, so the module loads; at
    their defaults the config runs, and the launch of another value says what Tegula lacks."""
    amd = {"waves_per_eu": 0, "matrix_instr_nonkdim": 0, "kpack": 1, "schedule_hint": ""}
    kernel = _tuner(add_one_kernel, [tegula.Config({"BLOCK": 64, **amd}), tegula.Config({"BLOCK": 32, **amd})])
    x = np.random.default_rng(0).standard_normal(100).astype(np.float32)
    want = x + 1
    kernel[lambda meta: (tegula.cdiv(100, meta["BLOCK"]),)](x, 100)
    np.testing.assert_array_equal(x, want)
    tuned_for_amd = _tuner(add_one_kernel, [tegula.Config({"BLOCK": 16, "waves_per_eu": 8, "kpack": 2})])
    with pytest.raises(ValueError, match=re.escape("waves_per_eu=8 of kernel 'add_one_kernel' is not supported by "
                                                   "Tegula (it accepts 0")):
        tuned_for_amd[(7,)](x, 100)
    with pytest.raises(TypeError, match="sets 'waves_per_eux', which is not one of its parameters"):
        _tuner(add_one_kernel, [tegula.Config({"BLOCK": 16, "waves_per_eux": 8})])
