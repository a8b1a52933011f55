"""Long kernels compile in time that grows about linearly, and say what they
are doing when it is long:

- a flat sum of 1,000 terms (a tree 1,000 deep) compiles and computes;
- a chain of 2,000 @jit helpers reports its depth error (E0608) fast, and
  a helper that calls itself twice per level, 40 levels deep, its count
  of inlined calls (E0608) in seconds;
- Tegula's own stages (front end, passes, code generation) take at most
  about twice as long per statement for 4x the statements (loosely: < 8x
  time), so nothing in them is quadratic at these sizes, also when the
  passes erase most of what the front end made;
- a compile past $TEGULA_COMPILE_NOTICE_SECONDS prints one line on stderr
  naming the kernel and its phase, once.
"""

import importlib.util
import os
import subprocess
import sys
import time

import numpy as np
import pytest

import tegula
from tegula import _C


def load_kernel(tmp_path, name, text):
    path = tmp_path / f"{name}.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


HEADER = "import tegula\nimport tegula.language as tl\n\n"


def test_flat_sum_of_1000_terms(tmp_path):
    terms = " + ".join(f"a[{i % 7}]" for i in range(1000))
    m = load_kernel(tmp_path, "flat_sum", HEADER + "@tegula.jit\ndef k(x_ptr, out_ptr):\n"
                    "    a = (" + ", ".join(f"tl.load(x_ptr + {i})" for i in range(7)) + ")\n"
                    f"    tl.store(out_ptr, {terms})\n")
    x = np.random.default_rng(1000).standard_normal(7).astype(np.float32)
    out = np.zeros(1, np.float32)
    m.k[(1,)](x, out)
    counts = np.bincount(np.arange(1000) % 7)
    np.testing.assert_allclose(out[0], (counts * x.astype(np.float64)).sum(), rtol=1e-4, atol=1e-3)


def test_deep_helper_chain_fails_fast(tmp_path):
    lines = [HEADER, "@tegula.jit\ndef h0(x):\n    return x + 1\n"]
    lines += [f"@tegula.jit\ndef h{i}(x):\n    return h{i - 1}(x) + 1\n" for i in range(1, 2000)]
    lines.append("@tegula.jit\ndef k(p):\n    tl.store(p, h1999(tl.load(p)))\n")
    m = load_kernel(tmp_path, "helper_chain", "\n".join(lines))
    started = time.perf_counter()
    with pytest.raises(tegula.CompilationError, match=r"E0608"):
        m.k[(1,)](np.zeros(1, np.float32))
    # Under one second on an idle machine; loosely here, as tests share cores.
    assert time.perf_counter() - started < 5.0


def statements(n):
    """A kernel of n statements, each reading the one before and an earlier one."""
    body = ["    a0 = tl.load(x_ptr + offs)"]
    for i in range(1, n):
        j = max(0, i - 1 - i % 3)
        body.append(f"    a{i} = a{i - 1} * {1 + (i % 7) / 1000} + a{j} * 0.5" if i % 2 else
                    f"    a{i} = tl.maximum(a{i - 1}, a{j}) - {i % 5}")
    return (HEADER + "@tegula.jit\ndef k(x_ptr, o_ptr, BLOCK: tl.constexpr):\n    offs = tl.arange(0, BLOCK)\n" +
            "\n".join(body) + f"\n    tl.store(o_ptr + offs, a{n - 1})\n")


def own_stage_timer(tmp_path, n, text=statements, **constexprs):
    """Times front end + passes + code generation of kernel `k` of `text(n)`:
    the stages Tegula owns (the C++ compiler's time is not ours to bound)."""
    m = load_kernel(tmp_path, f"long_{text.__name__}_{n}", text(n))
    request, _ = m.k._request_for(np.zeros(16, np.float32), np.zeros(16, np.float32), **(constexprs or {"BLOCK": 16}))
    request.functions = tegula._globals.collect_sources(m.k)

    def seconds():
        started = time.perf_counter()
        _C.generate_source(request, _C.CompileOptions(backend="cpu"))
        return time.perf_counter() - started
    return seconds


def doubling_helpers(depth):
    """A kernel whose @jit helper calls itself twice per level, `depth` levels
    deep: 2^depth inlined calls per element, most of whose values are equal,
    so the passes erase about half of what the front end makes (CSE, then
    DCE), all from one block."""
    return HEADER + f"""@tegula.jit
def twice(a, D: tl.constexpr):
    if D == 0:
        return a
    else:
        return twice(a, D - 1) + twice(a * 1.5, D - 1)

@tegula.jit
def k(x_ptr, o_ptr, N: tl.constexpr):
    for i in tl.static_range(N):
        tl.store(o_ptr + i, twice(tl.load(x_ptr + i), {depth}))
"""


def unrolled_tile_steps(n):
    """A kernel whose tl.static_range unrolls into n steps of tile ops in one
    block, each with its own constant: the canonicalizer rewrites each step
    (inserting folded constants before the op it visits, erasing that op),
    CSE sees n constants that differ only in value, and code generation
    fuses all of it into one loop."""
    return HEADER + f"""@tegula.jit
def k(x_ptr, o_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), tl.float32)
    for i in tl.static_range({n}):
        acc = acc * 0.5 + tl.exp(tl.load(x_ptr + i * BLOCK + offs)) * (i + 1)
    tl.store(o_ptr + offs, acc)
"""


def scale(time_small, time_large):
    # The best of rounds that alternate the sizes, so that a burst of load on
    # a shared machine does not land on one size only.
    small = large = float("inf")
    for _ in range(4):
        small, large = min(small, time_small()), min(large, time_large())
    return small, large


def test_own_stages_scale_about_linearly(tmp_path):
    small, large = scale(own_stage_timer(tmp_path, 500), own_stage_timer(tmp_path, 2000))
    assert large < 8 * max(small, 0.05), f"500 statements: {small:.2f} s, 2,000: {large:.2f} s"


def test_erasing_many_ops_of_one_block_scales_about_linearly(tmp_path):
    # Erasing one op at a time from a block of n took time in n each: a kernel
    # of 2^16 inlined calls spent 7 s in the passes, 2^18 over 2 minutes.
    small, large = scale(own_stage_timer(tmp_path, 13, doubling_helpers, N=1),
                         own_stage_timer(tmp_path, 15, doubling_helpers, N=1))
    assert large < 8 * max(small, 0.05), f"2^13 calls: {small:.2f} s, 2^15: {large:.2f} s"


def test_doubling_helpers_compute(tmp_path):
    m = load_kernel(tmp_path, "doubling", doubling_helpers(6))
    x = np.random.default_rng(6).standard_normal(7).astype(np.float32)
    out = np.zeros(7, np.float32)
    m.k[(1,)](x, out, N=7)
    # Each level adds the value and 1.5 times it: (1 + 1.5)^6 in all.
    np.testing.assert_allclose(out, x * 2.5 ** 6, rtol=1e-5)


NOTICE_KERNEL = HEADER + """@tegula.jit
def noticed(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs) + 1)

import numpy as np
x = np.zeros(16, np.float32)
noticed[(1,)](x, BLOCK=16)
assert (x == 1).all()
"""


@pytest.mark.parametrize("threshold,lines", [("0.3", 1), ("0", 0), ("inf", 0), ("1e300", 0)])
def test_slow_compile_says_what_it_does(tmp_path, threshold, lines):
    # A fresh cache: the C++ compiler alone takes longer than 0.3 s.
    script = tmp_path / "noticed.py"
    script.write_text(NOTICE_KERNEL)
    env = dict(os.environ, TEGULA_CACHE_DIR=str(tmp_path / "cache"), TEGULA_COMPILE_NOTICE_SECONDS=threshold)
    env.pop("TEGULA_PROFILE_COMPILE", None)
    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    notices = [line for line in done.stderr.splitlines() if "is taking a while" in line]
    assert len(notices) == lines, done.stderr
    for line in notices:
        assert line.startswith("tegula: compiling 'noticed' (cpu) is taking a while: now in "), line
    # After the notice, the phases that follow it and the end, in order.
    told = [line for line in done.stderr.splitlines() if line.startswith("tegula: compil")]
    if lines:
        assert told[-1].startswith("tegula: compiled 'noticed' (cpu) in "), done.stderr
        assert all(line.startswith("tegula: compiling 'noticed': ") for line in told[1:-1]), done.stderr
    else:
        assert told == [], done.stderr


FAILING_NOTICE_KERNEL = HEADER + """@tegula.jit
def failing(x_ptr):
    acc = 0.0
    for i in tl.static_range(4096):
        acc += tl.load(x_ptr + i)
    tl.store(x_ptr, acc + undefined_name)

import numpy as np
try:
    failing[(1,)](np.zeros(4096, np.float32))
except tegula.CompilationError as e:
    assert e.code == "E0201", e
else:
    raise AssertionError("compiled")
"""


def test_a_slow_compile_that_fails_does_not_say_compiled(tmp_path):
    # Its last line said "compiled 'failing' (cpu) in ..." over the error.
    script = tmp_path / "failing.py"
    script.write_text(FAILING_NOTICE_KERNEL)
    env = dict(os.environ, TEGULA_CACHE_DIR=str(tmp_path / "cache"), TEGULA_COMPILE_NOTICE_SECONDS="0.001")
    env.pop("TEGULA_PROFILE_COMPILE", None)
    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    told = [line for line in done.stderr.splitlines() if line.startswith("tegula: compil")]
    assert told and told[0].startswith("tegula: compiling 'failing' (cpu) is taking a while"), done.stderr
    assert told[-1].startswith("tegula: compiling 'failing' (cpu) stopped without a kernel after "), done.stderr
    assert not any(line.startswith("tegula: compiled") for line in told), done.stderr


def test_exponential_inlining_is_an_error_not_an_endless_compile(tmp_path):
    # 2^40 inlined calls: refused once the kernel passes 2^20, in seconds.
    m = load_kernel(tmp_path, "doubling_deep", doubling_helpers(40))
    started = time.perf_counter()
    with pytest.raises(tegula.CompilationError, match=r"E0608.*inlines more than 1048576 calls to @jit functions "
                                                      r"\(at `twice`\)") as e:
        m.k[(1,)](np.zeros(1, np.float32), np.zeros(1, np.float32), N=1)
    assert "compute the repeated value once" in str(e.value)
    assert time.perf_counter() - started < 60.0  # about 2 s on an idle 2-core machine


def test_rewriting_a_long_unrolled_block_scales_about_linearly(tmp_path):
    # Each rewrite looked its op up from the block's start (and erased it
    # with a scan), CSE hashed all constants into one bucket, and code
    # generation scanned the open fused segment per scalar op: a 4096-step
    # unroll spent 2.0 s in the passes and 0.7 s generating code, 14x and
    # 10x the 1024-step kernel's.
    small, large = scale(own_stage_timer(tmp_path, 1024, unrolled_tile_steps),
                         own_stage_timer(tmp_path, 4096, unrolled_tile_steps))
    assert large < 8 * max(small, 0.05), f"1,024 steps: {small:.2f} s, 4,096: {large:.2f} s"


def test_unrolled_tile_steps_compute(tmp_path):
    m = load_kernel(tmp_path, "unrolled_steps", unrolled_tile_steps(37))
    x = np.random.default_rng(37).standard_normal(37 * 16).astype(np.float32)
    out = np.zeros(16, np.float32)
    m.k[(1,)](x, out, BLOCK=16)
    expected = np.zeros(16, np.float64)
    for i in range(37):
        expected = expected * 0.5 + np.exp(x[i * 16:(i + 1) * 16].astype(np.float64)) * (i + 1)
    np.testing.assert_allclose(out, expected, rtol=1e-5)


def test_a_long_line_lexes_in_linear_time():
    # Each token's location looked for the end of its line from the token on:
    # a line of n tokens cost n times its length (a 100,000-term line took 10 s).
    def timer(n):
        source = _C.FunctionSource(name="k", filename="long_line.py",
                                   source="def k(x):\n    t = (" + "1, " * n + ")\n")

        def seconds():
            started = time.perf_counter()
            assert _C.parse_signature(source) == [("x", False, False)]
            return time.perf_counter() - started
        return seconds
    # 16x the tokens: 16x the time if linear, 256x if not.
    small, large = scale(timer(10_000), timer(160_000))
    assert large < 40 * max(small, 0.01), f"10,000 tokens: {small:.3f} s, 160,000: {large:.3f} s"
