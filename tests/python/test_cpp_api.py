"""The C++ API (include/tegula/tegula.hpp, libtegula.so) used as a C++
project uses it: examples/cpp configured with find_package(Tegula) from the
folder tegula.cmake_dir() names, built, and run (it checks its results
against a reference it computes, and that a wrong launch is a KernelError
with its code)."""

import os
import pathlib
import shutil
import subprocess

import pytest

import tegula

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
    env = dict(os.environ, TEGULA_CACHE_DIR=str(tmp_path / "cache"))  # the C++ side compiles for itself
    for n in ("98765", "1", "4096"):
        run = subprocess.run([str(tmp_path / "build" / "vector_add"), n], capture_output=True, text=True,
                             timeout=300, env=env)
        assert run.returncode == 0, run.stdout + run.stderr
        assert f"n={n}: OK" in run.stdout and "wrong launch refused: E0701" in run.stdout
