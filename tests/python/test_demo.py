"""`python examples/demo.py`: the case-study chain, eager against fused. On the CPU
(`--cpu`) here; with `--backend cuda`, also the GPU run (torch eager on CUDA
tensors against the fused kernel, bf16 I/O)."""

import json
import pathlib
import subprocess
import sys

import pytest

DEMO = pathlib.Path(__file__).resolve().parents[2] / "examples" / "demo.py"
JSON_KEYS = ["backend", "shape", "dtype", "eager_s", "fused_s", "speedup", "max_rel_err"]


def demo(*args, timeout=300):
    return subprocess.run([sys.executable, str(DEMO), *args], capture_output=True, text=True, timeout=timeout)


def test_cpu_json_has_the_documented_keys():
    done = demo("--cpu", "--size", "64x300", "--reps", "2", "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert list(result) == JSON_KEYS
    assert (result["backend"], result["shape"], result["dtype"]) == ("cpu", [64, 300], "float32")
    assert result["eager_s"] > 0 and result["fused_s"] > 0
    assert result["speedup"] == pytest.approx(result["eager_s"] / result["fused_s"])
    assert result["max_rel_err"] <= 1e-3


def test_cpu_report_names_both_sides_and_agrees():
    done = demo("--cpu", "--size", "32x1000", "--dtype", "float16", "--reps", "2")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "Tegula demo: the case-study chain on [32 x 1000], float16 I/O, backend cpu"
    assert any(line.strip().startswith("NumPy eager (op by op)") for line in lines)
    assert any(line.strip().startswith("Tegula fused kernel") for line in lines)
    assert any(line.startswith("  outputs agree: max relative error") for line in lines)
    assert "  .. compiling the fused kernel" in done.stderr  # progress goes to stderr


@pytest.mark.parametrize("args,message", [
    (["--size", "4by4"], "--size must look like 4096x4096, got '4by4'"),
    (["--size", "0x4"], "--size must look like 4096x4096, got '0x4'"),
    (["--cpu", "--dtype", "bfloat16"],
     "--dtype bfloat16 needs a CUDA GPU (NumPy, the CPU's eager side, has no bfloat16)"),
    (["--cpu", "--reps", "0"], "--reps must be at least 1, got 0"),
])
def test_bad_arguments_are_usage_errors(args, message):
    done = demo(*args, timeout=120)
    assert done.returncode == 2
    assert done.stderr.strip().endswith(f"error: {message}")


def test_gpu_run_uses_cuda_and_bf16(backend):
    if not backend.is_cuda:
        pytest.skip("needs --backend cuda")
    done = demo("--size", "512x4096", "--reps", "3", "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert list(result) == JSON_KEYS
    assert (result["backend"], result["shape"], result["dtype"]) == ("cuda", [512, 4096], "bfloat16")
    assert result["max_rel_err"] <= 2e-2
    text = demo("--size", "256x1000", "--reps", "2")
    assert text.returncode == 0, text.stderr
    assert "backend cuda" in text.stdout.splitlines()[0]
    assert "PyTorch eager (op by op)" in text.stdout
