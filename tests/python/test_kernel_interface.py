"""Triton's host-side kernel API that libraries build their own launch
wrappers on (a kernel cache keyed by the arguments, a tuner with its own
run): tegula.KernelInterface, JITFunction.params / .signature.parameters /
.cache_key / .__globals__, run() returning the CompiledKernel that
``compiled[grid](*runtime_args)`` launches again, and Autotuner's
prune_configs and _bench for subclasses."""

import inspect
import math

import numpy as np
import pytest

import tegula
import tegula.language as tl


@tegula.jit
def _plus(x):
    return x + 1


@tegula.jit
def add_one(x_ptr, y_ptr, n, SCALE: tl.constexpr, BLOCK: tl.constexpr = 128):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(y_ptr + offs, _plus(tl.load(x_ptr + offs, mask=m)) * SCALE, mask=m)


def test_params_and_signature_describe_the_parameters():
    params = add_one.params
    assert [(p.num, p.name, p.is_constexpr) for p in params] == [
        (0, "x_ptr", False), (1, "y_ptr", False), (2, "n", False), (3, "SCALE", True), (4, "BLOCK", True)]
    assert params[3].default is inspect.Parameter.empty and params[4].default == 128
    assert not any(p.do_not_specialize for p in params)
    assert list(add_one.signature.parameters) == ["x_ptr", "y_ptr", "n", "SCALE", "BLOCK"]


def test_do_not_specialize_shows_in_params():
    @tegula.jit(do_not_specialize=["n"])
    def k(x_ptr, n):
        tl.store(x_ptr, n)

    assert [p.do_not_specialize for p in k.params] == [False, True]


def test_cache_key_follows_the_sources_and_globals_are_the_modules():
    key = add_one.cache_key
    assert isinstance(key, str) and len(key) == 64 and int(key, 16) >= 0
    assert add_one.cache_key == key
    assert add_one.__globals__ is globals()

    @tegula.jit
    def k(x_ptr):
        tl.store(x_ptr, 1)

    before = k.cache_key
    k._unsafe_update_src(k.src.replace("1)", "2)"))
    assert k.cache_key != before


class Entry(tegula.KernelInterface):
    """A library's launch wrapper: compiles through run() once per key, then launches the
    CompiledKernel it got with the runtime arguments only."""

    def __init__(self, fn):
        self.fn = fn
        self.cache = {}
        self.runtime = [p.num for p in fn.params if not p.is_constexpr]

    def run(self, *args, grid, warmup=False, **kwargs):
        key = tuple(str(a.dtype) for a in args if hasattr(a, "dtype")) + tuple(sorted(kwargs.items()))
        if key not in self.cache:
            self.cache[key] = self.fn.run(*args, grid=grid, warmup=warmup, **kwargs)
            return self.cache[key]
        kernel = self.cache[key]
        kernel[grid](*[args[i] for i in self.runtime])
        return kernel


def test_a_wrapper_launches_the_compiled_kernel_with_runtime_arguments(backend):
    entry = Entry(add_one)
    rng = np.random.default_rng(2)
    for n in (100, 300):  # the first compiles through run(), the second launches the cached kernel
        x = rng.standard_normal(n).astype(np.float32)
        y = backend.zeros(n, np.float32)
        entry[(tegula.cdiv(n, 128),)](backend.array(x), y, n, SCALE=3)
        np.testing.assert_allclose(backend.numpy(y), (x + 1) * 3, rtol=1e-6)
    assert len(entry.cache) == 1


def test_a_compiled_kernel_also_takes_every_argument(backend):
    n = 50
    x = np.arange(n, dtype=np.float32)
    y = backend.zeros(n, np.float32)
    kernel = add_one.warmup(backend.array(x), y, n, SCALE=2, grid=(1,))
    kernel[(1,)](backend.array(x), y, n, 2, 128)
    np.testing.assert_array_equal(backend.numpy(y), (x + 1) * 2)
    y2 = backend.zeros(n, np.float32)
    kernel[(1,)](backend.array(x), y2, n)  # the constexprs it was compiled for
    np.testing.assert_array_equal(backend.numpy(y2), (x + 1) * 2)


@tegula.jit
def tuned_add_one(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1, mask=offs < n)


class OwnTuner(tegula.Autotuner):
    """A tuner with its own run(), as libraries write them on Triton's Autotuner."""

    def run(self, *args, **kwargs):
        self.nargs = dict(zip(self.arg_names, args))
        configs = self.prune_configs(kwargs)
        self.timings = {c: self._bench(*args, config=c, **kwargs) for c in configs}
        best = min(self.timings, key=lambda c: self.timings[c][0])
        self.best_config = best
        return self.fn.run(*args, **kwargs, **best.all_kwargs())


def test_a_tuner_subclass_prunes_and_times_configs(backend):
    configs = [tegula.Config({"BLOCK": b}) for b in (16, 32, 64)]
    dropped = lambda configs, named, **kw: [c for c in configs if c.kwargs["BLOCK"] <= named["n"]]  # noqa: E731
    tuner = OwnTuner(tuned_add_one, tuned_add_one.arg_names, configs, ["n"], None, None, None, None,
                     {"early_config_prune": dropped})
    n = 40
    x = np.random.default_rng(4).standard_normal(n).astype(np.float32)
    y = backend.zeros(n, np.float32)
    tuner.run(backend.array(x), y, n, grid=lambda meta: (tegula.cdiv(n, meta["BLOCK"]),))
    assert sorted(c.kwargs["BLOCK"] for c in tuner.timings) == [16, 32]
    assert all(len(t) == 3 and all(math.isfinite(v) and v > 0 for v in t) for t in tuner.timings.values())
    np.testing.assert_array_equal(backend.numpy(y), x + 1)


def test_bench_of_a_config_that_does_not_compile_is_infinite(backend):
    tuner = OwnTuner(tuned_add_one, tuned_add_one.arg_names, [tegula.Config({"BLOCK": 3})], ["n"])
    x = np.zeros(8, np.float32)
    tuner.nargs = {}
    timing = tuner._bench(backend.array(x), backend.zeros(8, np.float32), 8, config=tuner.configs[0], grid=(1,))
    assert timing == [float("inf")] * 3


@pytest.mark.parametrize("wrapper", ["jit", "autotune", "heuristics"])
def test_kernels_and_their_wrappers_are_kernel_interfaces(wrapper):
    fn = {"jit": add_one,
          "autotune": tegula.autotune([tegula.Config({"BLOCK": 16})], key=["n"])(tuned_add_one),
          "heuristics": tegula.heuristics({"BLOCK": lambda a: 16})(tuned_add_one)}[wrapper]
    assert isinstance(fn, tegula.KernelInterface)


@pytest.mark.parametrize("wrapper", ["autotune", "heuristics"])
def test_the_kernel_a_wrapper_returns_launches_again(backend, wrapper):
    fn = {"autotune": tegula.autotune([tegula.Config({"BLOCK": 16}), tegula.Config({"BLOCK": 32})], key=["n"]),
          "heuristics": tegula.heuristics({"BLOCK": lambda a: 32})}[wrapper](tuned_add_one)
    n = 70
    x = np.random.default_rng(6).standard_normal(n).astype(np.float32)
    y = backend.zeros(n, np.float32)
    grid = lambda meta: (tegula.cdiv(n, meta["BLOCK"]),)  # noqa: E731
    kernel = fn.run(backend.array(x), y, n, grid=grid)
    block = fn.best_config.kwargs["BLOCK"] if wrapper == "autotune" else 32
    y2 = backend.zeros(n, np.float32)
    kernel[(tegula.cdiv(n, block),)](backend.array(x), y2, n)  # the runtime arguments only
    np.testing.assert_array_equal(backend.numpy(y2), x + 1)


@tegula.jit
def split_k_rows_kernel(x_ptr, out_ptr, K, SPLIT_K: tl.constexpr, BLOCK: tl.constexpr):
    """out[row] += the sum of one of SPLIT_K slices of x[row, :K]: out must start at zero."""
    row, part = tl.program_id(0), tl.program_id(1)
    cols = part * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * K + cols, mask=cols < K, other=0.0)
    tl.atomic_add(out_ptr + row, tl.sum(x, axis=0))


def _zero_split_k_output(*args, **kwargs):
    if kwargs["SPLIT_K"] != 1:
        args[1][...] = 0


split_k_rows_kernel.add_pre_run_hook(_zero_split_k_output)


def test_pre_run_hooks_run_before_every_launch(backend):
    """Triton's add_pre_run_hook: a split-K kernel zeroes its output before each launch, whichever way
    it is launched; the hook sees the arguments as given and the keywords with `debug` added."""
    x = np.random.default_rng(9).standard_normal((5, 300)).astype(np.float32)
    out = backend.array(np.full(5, 7.0, np.float32))
    for launch in (lambda: split_k_rows_kernel[(5, 3)](backend.array(x), out, 300, SPLIT_K=3, BLOCK=128),
                   lambda: split_k_rows_kernel.run(backend.array(x), out, 300, SPLIT_K=3, BLOCK=128, grid=(5, 3),
                                                   warmup=False)):
        launch()
        launch()  # again: the hook zeroed what the first launch left
        np.testing.assert_allclose(backend.numpy(out), x.sum(axis=1), rtol=1e-5, atol=1e-5)
    seen = []
    hooked = tegula.jit(split_k_rows_kernel.fn)
    hooked.add_pre_run_hook(lambda *args, **kwargs: seen.append((len(args), sorted(kwargs))))
    hooked.warmup(backend.array(x), out, 300, SPLIT_K=1, BLOCK=512, grid=(5, 1))
    assert seen == [(3, ["BLOCK", "SPLIT_K", "debug"])]
    with pytest.raises(TypeError, match="add_pre_run_hook of kernel 'split_k_rows_kernel' takes a callable, got int"):
        hooked.add_pre_run_hook(3)


@tegula.jit
def annotated(x_ptr: tl.pointer_type(tl.float16), y_ptr: "*fp32", c_ptr: "const *fp16", n: tl.int64,
              u: "tl.uint8", f: float, b: bool, plain, i: "int32_t", odd: "whatever",
              BLOCK: tl.constexpr = 16):
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs).to(tl.float32) + n + u + f + b + plain + i)


def test_params_spell_annotations_as_triton_does():
    params = annotated.params
    assert [p.annotation for p in params] == [
        "*fp16", "*fp32", "*kfp16", "i64", "u8", "fp32", "u1", "", "i32", "whatever", "constexpr"]
    assert [p.annotation_type for p in params] == [
        "*fp16", "*fp32", "*kfp16", "i64", "u8", "fp32", "u1", "", "i32", "", ""]
    assert [p.is_const for p in params] == [False, False, True] + [False] * 8
    assert [p.is_constexpr for p in params] == [False] * 10 + [True]
    assert [p.has_default for p in params] == [False] * 10 + [True]
    # the annotation declares the parameter's type at launch: n is an int64, u wraps
    x = np.arange(16, dtype=np.float16)
    y = np.zeros(16, np.float32)
    annotated[(1,)](x, y, x, 2**40, 300, 0.5, True, 3, 4, 0)
    np.testing.assert_allclose(y, x.astype(np.float32) + np.float32(2**40) + 44 + 0.5 + 1 + 3 + 4 + 0)
