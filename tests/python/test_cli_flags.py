"""A bad flag value stops every command-line script at once: an argparse usage error
(exit status 2) naming the flag, no traceback, before any kernel compiles. The
checks themselves live in examples/_cli.py; the scripts' good runs are tested
beside their kernels (test_examples.py, test_demo.py, test_bench.py, ...)."""

import argparse
import importlib.util
import os
import pathlib
import subprocess
import sys

import pytest

import _cli

REPO = pathlib.Path(__file__).resolve().parents[2]
NEEDS_TORCH = pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="the script imports torch")

# (script, arguments, the flag the error must name); {file} is a regular file, so no path
# under it can be written, even by root.
CASES = [
    ("examples/vector_add.py", ["--block", "100"], "--block"),
    ("examples/vector_add.py", ["--block", "0"], "--block"),
    ("examples/vector_add.py", ["--sizes", "-5"], "--sizes"),
    ("examples/vector_add.py", ["--dtypes", "bool"], "--dtypes"),
    ("examples/axpy.py", ["--sizes", "-1"], "--sizes"),
    ("examples/broadcast_2d.py", ["--block", "3"], "--block"),
    ("examples/demo.py", ["--reps", "-3"], "--reps"),
    ("examples/demo.py", ["--size", "0x5"], "--size"),
    ("examples/flash_attention.py", ["--shapes", "1x1x1x15"], "--shapes"),
    ("examples/flash_attention_tma.py", ["--shapes", "1x1x1x512"], "--shapes"),
    ("examples/fused_chain.py", ["--shapes", "3x-1"], "--shapes"),
    ("examples/layer_norm.py", ["--shapes", "0x4"], "--shapes"),
    ("examples/matmul.py", ["--shapes", "1x2"], "--shapes"),
    ("examples/matmul_autotune.py", ["--shapes", "1x1"], "--shapes"),
    ("examples/matmul_epilogue.py", ["--shapes", "1xx1"], "--shapes"),
    ("examples/matmul_fp8.py", ["--shapes", "16x16x0"], "--shapes"),
    ("examples/matmul_persistent.py", ["--programs", "0"], "--programs"),
    ("examples/matmul_tma.py", ["--shapes", "0x8x8"], "--shapes"),
    ("examples/softmax.py", ["--shapes", "4x-2"], "--shapes"),
    pytest.param("examples/train_gpt.py", ["--steps", "-1"], "--steps", marks=NEEDS_TORCH),
    pytest.param("examples/train_gpt.py", ["--heads", "3"], "--heads", marks=NEEDS_TORCH),
    pytest.param("examples/train_gpt.py", ["--json", "{file}/out.json"], "--json", marks=NEEDS_TORCH),
    pytest.param("examples/train_ddp.py", ["--compare", "{file}"], "--compare", marks=NEEDS_TORCH),
    ("benchmarks/run.py", ["--cpu", "--budget", "-1"], "--budget"),
    ("benchmarks/run.py", ["--cpu", "--json", "{file}/out.json"], "--json"),
    ("benchmarks/run.py", ["--cpu", "--plot", "{file}"], "--plot"),
    ("benchmarks/run.py", ["--num-warps", "softmax=3"], "--num-warps"),
    ("benchmarks/run.py", ["--render", "{file}"], "--render"),
    ("benchmarks/roofline.py", ["--out", "{file}/roofline"], "--out"),
]


@pytest.mark.parametrize("script,args,flag", CASES)
def test_a_bad_flag_is_a_usage_error(script, args, flag, tmp_path):
    file = tmp_path / "a-file"
    file.write_text("not JSON\n")
    args = [a.format(file=file) for a in args]
    done = subprocess.run([sys.executable, script, *args], cwd=REPO, env=dict(os.environ),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert "error:" in last and flag in last, done.stderr


def test_the_checks_keep_good_values():
    assert _cli.integer(1, power_of_two=True, maximum=1024)("1024") == 1024
    assert _cli.integer(0)("0") == 0
    assert _cli.number(0)("0.5") == 0.5
    assert _cli.shape("MxNxK", minimum=0)("4X4x0") == "4X4x0"  # the text, as the scripts parse it
    assert _cli.shape("BxHxSxD", check=_cli.power_of_two_dim("D", 3, 16, 256))("1x2x3x256") == "1x2x3x256"


@pytest.mark.parametrize("check,text", [
    (_cli.integer(1, power_of_two=True), "6"),
    (_cli.integer(1), "1.5"),
    (_cli.number(0), "inf"),
    (_cli.shape("MxN"), "3x"),
    (_cli.shape("BxHxSxD", check=_cli.power_of_two_dim("D", 3, 16, 256)), "1x1x1x8"),
])
def test_the_checks_name_the_value(check, text):
    with pytest.raises(argparse.ArgumentTypeError, match=f"got {text!r}"):
        check(text)


def test_output_paths(tmp_path):
    assert _cli.output_file()(str(tmp_path / "out.json")) == str(tmp_path / "out.json")
    assert _cli.output_file(makes_parents=True)(str(tmp_path / "new" / "out.json"))
    assert _cli.output_dir(str(tmp_path / "new" / "plots")) == str(tmp_path / "new" / "plots")
    with pytest.raises(argparse.ArgumentTypeError, match="does not exist"):
        _cli.output_file()(str(tmp_path / "new" / "out.json"))  # this script makes no folders
    with pytest.raises(argparse.ArgumentTypeError, match="directory"):
        _cli.output_file()(str(tmp_path))
    assert not (tmp_path / "new").exists()  # checking writes nothing that stays
