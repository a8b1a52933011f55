"""The C++ API (include/tegula/tegula.hpp, libtegula.so) used as a C++
project uses it: examples/cpp configured with find_package(Tegula) from the
folder tegula.cmake_dir() names, built, and run (it checks its results
against a reference it computes, and that a wrong launch is a KernelError
with its code)."""

import os
import pathlib
import shutil
import subprocess
import textwrap

import pytest

import tegula

from cache_util import seed_precompiled_prelude

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.mark.skipif(shutil.which("cmake") is None, reason="cmake is not installed")
def test_cpp_example_builds_against_the_package_and_runs(tmp_path):
    cmake_dir = pathlib.Path(tegula.cmake_dir())
    assert (cmake_dir / "TegulaConfig.cmake").is_file()
    assert (cmake_dir.parents[2] / "include" / "tegula" / "tegula.hpp").is_file()
    generator = ["-G", "Ninja"] if shutil.which("ninja") else []
    configure = subprocess.run(["cmake", "-S", str(ROOT / "examples" / "cpp"), "-B", str(tmp_path / "build"),
                                *generator, f"-DTegula_DIR={cmake_dir}"], capture_output=True, text=True, timeout=300)
    assert configure.returncode == 0, configure.stdout + configure.stderr
    build = subprocess.run(["cmake", "--build", str(tmp_path / "build")], capture_output=True, text=True, timeout=300)
    assert build.returncode == 0, build.stdout + build.stderr
    # The C++ side compiles for itself.
    env = dict(os.environ, TEGULA_CACHE_DIR=str(seed_precompiled_prelude(tmp_path / "cache")))
    for n in ("98765", "1", "4096"):
        run = subprocess.run([str(tmp_path / "build" / "vector_add"), n], capture_output=True, text=True,
                             timeout=300, env=env)
        assert run.returncode == 0, run.stdout + run.stderr
        assert f"n={n}: OK" in run.stdout and "wrong launch refused: E0701" in run.stdout
        # The ahead-of-time build of the same kernel, launched from C in two ranges of its grid.
        aot = subprocess.run([str(tmp_path / "build" / "vector_add_aot"), n], capture_output=True, text=True,
                             timeout=300, env=env)
        assert aot.returncode == 0, aot.stdout + aot.stderr
        assert f"vector_add_aot, n={n}: OK" in aot.stdout
    assert sorted(p.name for p in (tmp_path / "build" / "aot").iterdir()) == ["add_kernel.h", "add_kernel.so"]


def _cli(*args, cwd=None):
    from tegula.cli import executable

    return subprocess.run([str(executable()), *args], capture_output=True, text=True, timeout=300, cwd=cwd)


@pytest.mark.parametrize("args, message", [
    ([], "aot needs the output folder: -o DIR"),
    (["-o", "OUT", "--name", "not-an-identifier"], "--name must be a C identifier"),
    (["-o", "OUT", "--backend", "cuda"], "--arch is required for a device backend"),
    (["-o", "OUT", "--debug"], "--debug kernels need the runtime's checks"),
])
def test_aot_refuses_what_it_cannot_build(tmp_path, args, message):
    args = [a.replace("OUT", str(tmp_path / "out")) for a in args]
    done = _cli("aot", str(ROOT / "examples" / "vector_add.py") + "::add_kernel",
                "--signature", "*fp32, *fp32, *fp32, i32, 1024", *args)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "error[E1001]" in done.stderr and message in done.stderr
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_aot_header_compiles_as_c_and_cpp_for_every_scalar_kind(tmp_path):
    # Parameters of every slot kind: pointers of several element types, a
    # bool, an int64, floats; names that are C keywords or not C identifiers.
    kernel = tmp_path / "kinds.py"
    kernel.write_text(
        "import tegula\nimport tegula.language as tl\n\n@tegula.jit\n"
        "def kinds(int, h_ptr, flag, big, scale, n\u00e9, BLOCK: tl.constexpr):\n"
        "    offs = tl.arange(0, BLOCK)\n"
        "    mask = offs < big\n"
        "    v = tl.load(h_ptr + offs, mask=mask).to(tl.float32) * scale + n\u00e9\n"
        "    if flag:\n"
        "        v = -v\n"
        "    tl.store(int + offs, v, mask=mask)\n", encoding="utf-8")
    done = _cli("aot", f"{kernel}::kinds", "--signature", "*fp32, *fp16, i1, i64, fp32, fp32, 64",
                "-o", str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    header = (tmp_path / "out" / "kinds.h").read_text()
    assert "float* int_" in header and "uint16_t* h_ptr" in header and "uint8_t flag" in header
    assert "int64_t big" in header and "float scale" in header and "float arg5" in header
    text = textwrap.dedent("""
        #include <math.h>
        #include <stdio.h>
        #include "kinds.h"
        int main(int argc, char** argv) {
          float out[64]; uint16_t h[64];
          for (int i = 0; i < 64; ++i) { out[i] = -7.0f; h[i] = 0x3c00; }   /* fp16 1.0 */
          kinds_kernel k;
          if (kinds_load(&k, argv[1]) != 0) return 1;
          kinds_launch(&k, 1, 1, 1, out, h, 1, 50, 2.5f, 0.25f);
          kinds_unload(&k);
          for (int i = 0; i < 64; ++i) {
            float want = i < 50 ? -(1.0f * 2.5f + 0.25f) : -7.0f;
            if (fabsf(out[i] - want) > 1e-6f) { printf("out[%d] = %g, want %g\\n", i, out[i], want); return 1; }
          }
          printf("ok\\n");
          return 0;
        }
    """)
    for compiler, suffix in (("cc", ".c"), ("c++", ".cpp")):
        if shutil.which(compiler) is None:
            continue
        source = tmp_path / f"use{suffix}"
        source.write_text(text)
        exe = tmp_path / f"use{suffix}.out"
        build = subprocess.run([compiler, "-Wall", "-Werror", "-I", str(tmp_path / "out"), str(source), "-o",
                                str(exe), "-ldl", "-lm"], capture_output=True, text=True, timeout=120)
        assert build.returncode == 0, build.stderr
        run = subprocess.run([str(exe), str(tmp_path / "out" / "kinds.so")], capture_output=True, text=True,
                             timeout=60)
        assert run.returncode == 0 and "ok" in run.stdout, run.stdout + run.stderr


def test_aot_kernel_that_never_ends_stops_on_its_poll(tmp_path):
    # k.stop: the poll a loop that may run without limit asks every 256
    # iterations. Programs stop where they are; none starts after.
    kernel = tmp_path / "spin.py"
    kernel.write_text(
        "import tegula\nimport tegula.language as tl\n\n@tegula.jit\n"
        "def spin(flag_ptr, out_ptr):\n"
        "    pid = tl.program_id(0)\n"
        "    tl.store(out_ptr + pid, 1)\n"
        "    i = 0\n"
        "    while tl.load(flag_ptr) == 0:\n"
        "        i += 1\n"
        "    tl.store(out_ptr + pid, i + 2)\n")
    done = _cli("aot", f"{kernel}::spin", "--signature", "*i32, *i32", "-o", str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    source = tmp_path / "use.c"
    source.write_text(textwrap.dedent("""
        #include <stdio.h>
        #include "spin.h"
        typedef struct { tegula_stop_poll base; int calls; } counting_stop;
        static int32_t stop_on_third_call(tegula_stop_poll* self) { return ++((counting_stop*)self)->calls >= 3; }
        int main(int argc, char** argv) {
          int32_t flag = 0, out[4] = {0, 0, 0, 0};
          counting_stop stop = {{stop_on_third_call}, 0};
          spin_kernel k;
          if (spin_load(&k, argv[1]) != 0) return 1;
          k.stop = &stop.base;
          spin_launch(&k, 4, 1, 1, &flag, out);   /* never ends without the poll */
          k.stop = 0;
          flag = 1;
          int32_t done[4] = {0, 0, 0, 0};
          spin_launch(&k, 4, 1, 1, &flag, done);
          spin_unload(&k);
          printf("%d %d %d %d %d / %d %d %d %d\\n", stop.calls, out[0], out[1], out[2], out[3],
                 done[0], done[1], done[2], done[3]);
          return 0;
        }
    """))
    exe = tmp_path / "use.out"
    build = subprocess.run(["cc", "-Wall", "-Werror", "-I", str(tmp_path / "out"), str(source), "-o", str(exe),
                            "-ldl"], capture_output=True, text=True, timeout=120)
    assert build.returncode == 0, build.stderr
    run = subprocess.run([str(exe), str(tmp_path / "out" / "spin.so")], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.split() == ["3", "1", "0", "0", "0", "/", "2", "2", "2", "2"], run.stdout


def test_aot_cuda_header_compiles_without_a_toolkit(tmp_path):
    # The device header reaches the driver through dlopen: it compiles with
    # no CUDA headers, as C and as C++, warnings as errors.
    from cuda_compile_util import require_nvrtc

    require_nvrtc(90)
    done = _cli("aot", str(ROOT / "examples" / "vector_add.py") + "::add_kernel", "--signature",
                "*fp32:16, *fp32:16, *fp32:16, i32, 1024", "--backend", "cuda", "--arch", "90", "--name", "vadd",
                "-o", str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    header = (tmp_path / "out" / "vadd.h").read_text()
    assert "dlopen(\"libcuda.so.1\"" in header and "cuLaunchKernel" in header and "sm_90" in header
    assert (tmp_path / "out" / "vadd.cubin").stat().st_size > 0
    text = '#include "vadd.h"\nint main(void) { vadd_kernel k; return vadd_load(&k, "vadd.cubin") == 0 ? 0 : 3; }\n'
    for compiler, suffix in (("cc", ".c"), ("c++", ".cpp")):
        if shutil.which(compiler) is None:
            continue
        source = tmp_path / f"use{suffix}"
        source.write_text(text)
        build = subprocess.run([compiler, "-Wall", "-Wextra", "-Werror", "-I", str(tmp_path / "out"), str(source),
                                "-o", str(tmp_path / f"use{suffix}.out"), "-ldl"], capture_output=True, text=True,
                               timeout=120)
        assert build.returncode == 0, build.stderr


def test_cpp_examples_run_on_the_gpu(tmp_path):
    # The JIT example on device memory, and the ahead-of-time CUDA build.
    import tegula._device

    available, why = tegula._device.cuda_status()
    if not available:
        pytest.skip(f"no CUDA GPU: {why}")
    if shutil.which("cmake") is None or shutil.which("cc") is None:
        pytest.skip("cmake or a C compiler is missing")
    arch = int(tegula._C.cuda_device_arch(0))
    cmake_dir = tegula.cmake_dir()
    configure = subprocess.run(["cmake", "-S", str(ROOT / "examples" / "cpp"), "-B", str(tmp_path / "build"),
                                f"-DTegula_DIR={cmake_dir}", f"-DTEGULA_EXAMPLE_CUDA_ARCH={arch}"],
                               capture_output=True, text=True, timeout=300)
    assert configure.returncode == 0, configure.stdout + configure.stderr
    build = subprocess.run(["cmake", "--build", str(tmp_path / "build")], capture_output=True, text=True, timeout=300)
    assert build.returncode == 0, build.stdout + build.stderr
    env = dict(os.environ, TEGULA_CACHE_DIR=str(tmp_path / "cache"))
    for n in ("98765", "1", "4096"):
        jit = subprocess.run([str(tmp_path / "build" / "vector_add"), n, "cuda"], capture_output=True, text=True,
                             timeout=300, env=env)
        assert jit.returncode == 0, jit.stdout + jit.stderr
        assert f"vector_add on cuda, n={n}: OK" in jit.stdout and "wrong launch refused: E0701" in jit.stdout
        run = subprocess.run([str(tmp_path / "build" / "vector_add_aot_cuda"), n], capture_output=True, text=True,
                             timeout=120)
        assert run.returncode == 0, run.stdout + run.stderr
        assert f"vector_add_aot_cuda, n={n}: OK" in run.stdout
