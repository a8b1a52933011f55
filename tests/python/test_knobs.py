"""tegula.knobs: Triton's settings objects, acting in Tegula where Tegula has the setting (launch and
compile hooks, the debug switch, the caches, autotuning), and saying so where it has not."""

import os
import pathlib
import re
import warnings

import numpy as np
import pytest

import tegula
import tegula.language as tl
from tegula import _C, knobs


@pytest.fixture(autouse=True)
def fresh_knobs(monkeypatch):
    """Every group as the environment says, the variables the settings write put back afterwards."""
    keys = {s.key for group in (knobs.cache, knobs.compilation, knobs.autotuning, knobs.runtime)
            for s in group.knob_descriptors.values()}
    saved = {key: os.environ.get(key) for key in keys}
    for group in (knobs.compilation, knobs.autotuning, knobs.runtime, knobs.language):
        group.reset()
    yield
    for group in (knobs.compilation, knobs.autotuning, knobs.runtime, knobs.language):
        group.reset()
    knobs.cache.reset()
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value
    knobs.refresh_knobs()


def _metadata(grid, metadata, args):
    return {"grid": grid, "n": args["n"], "BLOCK": args["BLOCK"], "scale": args["scale"],
            "num_warps": metadata.num_warps}


@tegula.jit(launch_metadata=_metadata)
def scaled(x_ptr, out_ptr, n, scale=2.0, BLOCK: tl.constexpr = 64):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * scale, mask=mask)


def _data(backend, n=100, seed=0):
    x = np.random.default_rng(seed).standard_normal(n).astype(np.float32)
    return x, backend.array(x), backend.zeros(n, np.float32)


# --- launch hooks ---------------------------------------------------------------------------------

def test_launch_hooks_see_each_launch_with_its_metadata(backend):
    x, xs, out = _data(backend)
    events = []
    enter = lambda m: events.append(("enter", m.get()))  # noqa: E731
    leave = lambda m: events.append(("exit", m.get()["name"]))  # noqa: E731
    knobs.runtime.launch_enter_hook.add(enter)
    knobs.runtime.launch_exit_hook.add(leave)
    assert _C.launch_observer() is not None
    scaled[lambda meta: (tegula.cdiv(meta["n"], meta["BLOCK"]), 1, 1)](xs, out, 100, BLOCK=32)
    np.testing.assert_allclose(backend.numpy(out), 2 * x, rtol=1e-6)
    assert [e[0] for e in events] == ["enter", "exit"]
    data = events[0][1]
    assert data["name"] == "scaled" and data["grid"] == (4, 1, 1)
    assert (data["n"], data["BLOCK"], data["scale"]) == (100, 32, 2.0)  # the default and the constexpr too
    assert data["num_warps"] == 4 and isinstance(data["function"], _C.CompiledKernel)
    if data["function"].backend_kind == "device":
        assert isinstance(data["stream"], int)
    else:
        assert data["stream"] is None
    knobs.runtime.launch_enter_hook.remove(enter)
    knobs.runtime.launch_exit_hook.remove(leave)
    assert _C.launch_observer() is None  # no hook, no observer: launches take the plain path again
    scaled[(2,)](xs, out, 100)
    assert len(events) == 2


def test_launch_hooks_run_in_order_and_take_plain_functions_and_none():
    order = []
    first, second = (lambda m: order.append("first")), (lambda m: order.append("second"))  # noqa: E731
    knobs.runtime.launch_enter_hook.add(first)
    knobs.runtime.launch_enter_hook.add(second)
    knobs.runtime.launch_enter_hook.add(first)  # once only
    knobs.runtime.launch_exit_hook.add(first)
    knobs.runtime.launch_exit_hook.add(second)  # exit hooks unwind: second, then first
    x = np.arange(10, dtype=np.float32)
    out = np.zeros(10, np.float32)
    scaled[(1,)](x, out, 10)
    assert order == ["first", "second", "second", "first"]
    with pytest.raises(ValueError):
        knobs.runtime.launch_enter_hook.remove(lambda m: None)
    # Triton's older form: the slot holds one function; None empties it.
    knobs.runtime.launch_exit_hook = None
    seen = []
    knobs.runtime.launch_enter_hook = lambda m: seen.append(m.get()["name"])
    scaled[(1,)](x, out, 10)
    assert seen == ["scaled"]
    knobs.runtime.launch_enter_hook = None
    assert _C.launch_observer() is None
    with pytest.raises(TypeError, match="takes a function, a HookChain or None, got int"):
        knobs.runtime.launch_enter_hook = 3


def test_a_scope_puts_hooks_and_settings_back():
    hook = lambda m: None  # noqa: E731
    with knobs.runtime.scope():
        knobs.runtime.launch_enter_hook.add(hook)
        knobs.runtime.jit_cache_hook = lambda **kw: None
        assert _C.launch_observer() is not None
    assert not knobs.runtime.launch_enter_hook and knobs.runtime.jit_cache_hook is None
    assert _C.launch_observer() is None
    before = os.environ.get("TEGULA_PRINT_AUTOTUNING")
    with knobs.autotuning.scope():
        knobs.autotuning.print = True
        assert os.environ["TEGULA_PRINT_AUTOTUNING"] == "1"
    assert os.environ.get("TEGULA_PRINT_AUTOTUNING") == before


# --- compile hooks ----------------------------------------------------------------------------------

def _fresh_kernel(tmp_path, name="fresh", body="x * 3.0"):
    """A kernel of its own (a new JITFunction: its launcher has compiled nothing yet)."""
    path = tmp_path / f"{name}.py"
    path.write_text("import tegula\nimport tegula.language as tl\n\n\n@tegula.jit\n"
                    f"def {name}(x_ptr, out_ptr, n, BLOCK: tl.constexpr):\n"
                    "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n"
                    "    mask = offs < n\n"
                    "    x = tl.load(x_ptr + offs, mask=mask)\n"
                    f"    tl.store(out_ptr + offs, {body}, mask=mask)\n")
    namespace = {}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    return namespace[name]


def test_jit_hooks_are_told_of_each_compile_not_each_launch(tmp_path):
    kernel = _fresh_kernel(tmp_path)
    calls = []
    knobs.runtime.jit_cache_hook = lambda **kw: calls.append(("cache", kw))
    knobs.runtime.jit_post_compile_hook = lambda **kw: calls.append(("post", kw))
    x = np.random.default_rng(1).standard_normal(70).astype(np.float32)
    out = np.zeros(70, np.float32)
    for _ in range(3):
        kernel[(2,)](x, out, 70, BLOCK=64, num_warps=2)
    np.testing.assert_allclose(out, 3 * x, rtol=1e-6)
    assert [c[0] for c in calls] == ["cache", "post"]
    given = calls[0][1]
    assert set(given) == {"key", "repr", "fn", "compile", "is_manual_warmup", "already_compiled"}
    assert given["fn"].jit_function is kernel and given["fn"].name == "fresh"
    assert given["compile"]["num_warps"] == 2 and given["compile"]["constants"] == {"BLOCK": 64}
    assert given["compile"]["signature"] == {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"}
    assert given["repr"].startswith("fresh[num_warps=2, ") and given["repr"].endswith("(x_ptr: *fp32, out_ptr: *fp32, n: i32, BLOCK: constexpr)")
    assert given["is_manual_warmup"] is False
    kernel.warmup(x, out, 70, BLOCK=32, grid=(3,))
    assert calls[-1][0] == "post" and calls[-1][1]["is_manual_warmup"] is True


def test_a_jit_cache_hook_that_declines_skips_the_launch(tmp_path):
    kernel = _fresh_kernel(tmp_path, "declined")
    knobs.runtime.jit_cache_hook = lambda **kw: True
    x = np.ones(8, np.float32)
    out = np.full(8, -1.0, np.float32)
    assert kernel[(1,)](x, out, 8, BLOCK=8) is None
    assert kernel.warmup(x, out, 8, BLOCK=8, grid=(1,)) is None
    np.testing.assert_array_equal(out, -1.0)  # nothing ran
    with pytest.raises(RuntimeError, match="jit_cache_hook declined it"):
        kernel.inspect(x, out, 8, BLOCK=8)
    knobs.runtime.jit_cache_hook = None  # asked again at the next launch, which now compiles
    kernel[(1,)](x, out, 8, BLOCK=8)
    np.testing.assert_array_equal(out, 3.0)


def test_kernel_load_hooks_name_the_loaded_kernel(tmp_path):
    kernel = _fresh_kernel(tmp_path, "loaded")
    seen = []
    knobs.runtime.kernel_load_start_hook.add(lambda *a: seen.append(("start", a)))
    knobs.runtime.kernel_load_end_hook.add(lambda *a: seen.append(("end", a)))
    compiled = kernel.warmup(np.ones(4, np.float32), np.ones(4, np.float32), 4, BLOCK=4, grid=(1,))
    assert [s[0] for s in seen] == ["start", "end"]
    for _, (module, function, name, group, key) in seen:
        assert (module, function, name, group, key) == (None, None, "loaded", {}, compiled.key)


def test_always_compile_builds_past_both_caches(tmp_path):
    source_kernel = _fresh_kernel(tmp_path, "rebuilt", "x + 1.5")
    x = np.random.default_rng(2).standard_normal(16).astype(np.float32)
    out = np.zeros(16, np.float32)
    source_kernel[(1,)](x, out, 16, BLOCK=16)  # in the disk cache now
    again = _fresh_kernel(tmp_path, "rebuilt", "x + 1.5")
    before = tegula.runtime_stats()
    again[(1,)](x, out, 16, BLOCK=16)
    after = tegula.runtime_stats()
    assert after["builds"] + after["reused"] == before["builds"] + before["reused"]  # found, not built
    knobs.compilation.always_compile = True
    assert os.environ["TEGULA_ALWAYS_COMPILE"] == "1"
    third = _fresh_kernel(tmp_path, "rebuilt", "x + 1.5")
    third[(1,)](x, out, 16, BLOCK=16)
    rebuilt = tegula.runtime_stats()
    assert rebuilt["builds"] == after["builds"] + 1
    np.testing.assert_allclose(out, x + 1.5, rtol=1e-6)


# --- settings that act --------------------------------------------------------------------------

@tegula.jit
def copy_block(src, dst, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(dst + offs, tl.load(src + offs))


def test_the_debug_switch_reaches_kernels_decorated_before_it():
    whole = np.arange(64, dtype=np.float32)
    view = whole[:8]  # the kernel reads 16: past the view, inside the array behind it
    dst = np.zeros(16, np.float32)
    copy_block[(1,)](view, dst, BLOCK=16)
    assert not copy_block.debug
    knobs.runtime.debug = True
    assert copy_block.debug and os.environ["TEGULA_DEBUG"] == "1"
    with pytest.raises(tegula.DeviceError, match="out of bounds"):
        copy_block[(1,)](view, dst, BLOCK=16)
    knobs.runtime.debug = False
    assert not copy_block.debug
    copy_block[(1,)](view, dst, BLOCK=16)
    np.testing.assert_array_equal(dst, whole[:16])


def test_cache_directories_are_set_through_their_variables(tmp_path):
    knobs.cache.dump_dir = str(tmp_path / "dumps")
    assert os.environ["TEGULA_DUMP_DIR"] == str(tmp_path / "dumps") == knobs.cache.dump_dir
    knobs.cache.dump_dir = knobs.env
    assert knobs.cache.dump_dir == os.environ["TEGULA_DUMP_DIR"]  # the variable's value again
    cache = tmp_path / "cache"
    knobs.cache.dir = str(cache)
    kernel = _fresh_kernel(tmp_path, "cached_here")
    kernel[(1,)](np.ones(4, np.float32), np.ones(4, np.float32), 4, BLOCK=4)
    assert any(cache.iterdir())
    with pytest.raises(TypeError, match="is a directory: set it to a str path"):
        knobs.cache.dir = 3


def test_propagate_env_false_keeps_the_environment(monkeypatch):
    monkeypatch.delenv("TEGULA_PRINT_AUTOTUNING", raising=False)
    monkeypatch.setattr(knobs, "propagate_env", False)
    knobs.autotuning.print = True
    assert knobs.autotuning.print is True and "TEGULA_PRINT_AUTOTUNING" not in os.environ
    knobs.autotuning.print = knobs.env
    assert knobs.autotuning.print is False


@tegula.autotune(configs=[tegula.Config({"BLOCK": 16}), tegula.Config({"BLOCK": 64})], key=["n"],
                 do_bench=lambda fn, quantiles=None: (fn(), [0.5, 0.4, 0.6])[1])
@tegula.jit
def tuned_double(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, 2 * tl.load(x_ptr + offs, mask=mask), mask=mask)


def test_the_autotuning_listener_hears_each_tuning(tmp_path, monkeypatch):
    monkeypatch.setenv("TEGULA_CACHE_DIR", str(tmp_path))
    heard = []
    knobs.autotuning.listener = lambda **kw: heard.append(kw)
    x = np.random.default_rng(3).standard_normal(77).astype(np.float32)
    out = np.zeros(77, np.float32)
    grid = lambda meta: (tegula.cdiv(77, meta["BLOCK"]),)  # noqa: E731
    tuned_double[grid](x, out, 77)
    tuned_double[grid](x, out, 77)  # chosen before: not heard again
    np.testing.assert_allclose(out, 2 * x, rtol=1e-6)
    assert len(heard) == 1
    first = heard[0]
    assert first["fn"] is tuned_double.base and not first["cache_hit"] and first["duration"] > 0
    assert first["best_config"] in first["configs_timings"] and len(first["configs_timings"]) == 2
    tuned_double.cache.clear()
    tuned_double[grid](x, out, 77)  # from the tuning cache on disk
    assert heard[1]["cache_hit"] and heard[1]["duration"] is None
    # autotuning.cache = False: nothing read or written there.
    knobs.autotuning.cache = False
    tuned_double.cache.clear()
    tuned_double[grid](x, out, 77)
    assert not heard[2]["cache_hit"]


def test_autotuning_print_is_the_environment_switch(capsys):
    knobs.autotuning.print = True
    tuned_double.cache.clear()
    knobs.autotuning.cache = False
    x = np.ones(20, np.float32)
    tuned_double[lambda meta: (tegula.cdiv(20, meta["BLOCK"]),)](x, np.zeros(20, np.float32), 20)
    assert "tuned_double" in capsys.readouterr().out


# --- what is refused, and what is only accepted -----------------------------------------------

def test_a_misspelled_setting_is_refused_with_the_nearest_name():
    with pytest.raises(AttributeError, match=re.escape("tegula.knobs.runtime has no setting 'debgu': did you "
                                                       "mean 'debug'?")):
        knobs.runtime.debgu = True
    with pytest.raises(AttributeError, match="tegula.knobs.autotuning has no setting 'cahce'"):
        knobs.autotuning.cahce
    with pytest.raises(TypeError, match=re.escape("tegula.knobs.runtime.debug is a switch: set it to True or "
                                                  "False, got 'yes'")):
        knobs.runtime.debug = "yes"
    with pytest.raises(TypeError, match="takes a function"):
        knobs.autotuning.listener = "print"


def test_settings_tegula_has_no_use_for_are_kept_and_said_once():
    with pytest.warns(RuntimeWarning, match=r"tegula.knobs.runtime.interpret is accepted .* changes nothing"):
        knobs.runtime.interpret = True
    assert knobs.runtime.interpret is True
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        knobs.runtime.interpret = False  # back to the default, and said before
        knobs.nvidia.ptxas = None  # clearing one is no change
    with pytest.warns(RuntimeWarning, match="tegula.knobs.nvidia.libdevice_path is accepted"):
        knobs.nvidia.libdevice_path = "/opt/libdevice.bc"
    assert knobs.nvidia.libdevice_path == "/opt/libdevice.bc"


def test_groups_list_copy_and_reset():
    assert {"dir", "dump_dir", "override_dir"} <= set(knobs.cache.knobs)
    assert {"TEGULA_CACHE_DIR", "TEGULA_DUMP_DIR"} <= {s.key for s in knobs.cache.knob_descriptors.values()}
    assert isinstance(knobs.runtime, knobs.base_knobs)
    knobs.compilation.always_compile = True
    copy = knobs.compilation.copy()
    assert copy.always_compile is True
    copy.reset()
    os.environ.pop("TEGULA_ALWAYS_COMPILE", None)
    assert copy.always_compile is False and knobs.compilation.always_compile is True


# --- TritonError ---------------------------------------------------------------------------------

def test_triton_error_is_the_base_of_kernel_errors():
    for error in (tegula.CompilationError, tegula.CompileTimeAssertionFailure, tegula.OutOfResources,
                  tegula.AutotuneError, tegula.DeviceError):
        assert issubclass(error, tegula.TritonError), error
    tuned = tegula.autotune(configs=[tegula.Config({"BLOCK": 16}), tegula.Config({"BLOCK": 32})], key=[],
                            prune_configs_by={"early_config_prune": lambda configs, named, **kw: []})(
        tuned_double.base)
    with pytest.raises(tegula.TritonError, match="no valid autotuner configs after pruning: early_config_prune "
                                                 "of kernel 'tuned_double' returned none of the 2"):
        tuned[(1,)](np.ones(4, np.float32), np.zeros(4, np.float32), 4)


def test_extern_libs_accepts_what_tegula_builds_in():
    # Triton's tutorial passes NVIDIA's libdevice bitcode; Tegula's libdevice functions are built in, so the
    # path is not read. Any other library is refused by name.
    x = np.arange(5, dtype=np.float32)
    out = np.zeros(5, np.float32)
    for libraries in ({}, None, {"libdevice": "/nowhere/libdevice.10.bc"}, {"libdevice": pathlib.Path("x.bc")}):
        out[:] = 0
        scaled[(1,)](x, out, 5, extern_libs=libraries)
        np.testing.assert_array_equal(out, 2 * x)
    for libraries in ({"ocml": "ocml.bc"}, {"libdevice": "a.bc", "mylib": "b.bc"}, {"libdevice": 3}, "libdevice"):
        with pytest.raises(ValueError, match=r"extern_libs=.* of kernel 'scaled' is not supported by Tegula \(it "
                                             r"accepts None, \{\} or \{'libdevice': path\}"):
            scaled[(1,)](x, out, 5, extern_libs=libraries)


def test_triton_error_modules_hold_the_names_host_code_imports():
    from tegula.compiler.errors import CompilationError, CompileTimeAssertionFailure
    from tegula.errors import TritonError
    from tegula.runtime.errors import AutotunerError, InterpreterError, OutOfResources, PTXASError

    assert TritonError is tegula.TritonError and CompilationError is tegula.CompilationError
    assert CompileTimeAssertionFailure is tegula.CompileTimeAssertionFailure
    assert AutotunerError is tegula.AutotuneError and OutOfResources is tegula.runtime.OutOfResources
    assert issubclass(PTXASError, TritonError) and issubclass(InterpreterError, TritonError)
    import pickle
    error = pickle.loads(pickle.dumps(OutOfResources(232448, 101376, "shared memory")))
    assert (error.required, error.limit, str(error)) == (
        232448, 101376, "out of resource: shared memory, required: 232448, hardware limit: 101376")

    @tegula.jit
    def refused(x_ptr):
        tl.static_assert(False, "never")

    try:
        refused[(1,)](np.zeros(1, np.float32))
    except TritonError as e:  # what an autotuner written for Triton catches
        assert isinstance(e, CompileTimeAssertionFailure)
    else:
        raise AssertionError("the static_assert did not fail the compile")
