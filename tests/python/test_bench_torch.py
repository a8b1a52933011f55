"""The benchmark's tegula.torch groups (torch_ops, torch_attention, train_gpt):
``benchmarks/run.py --cpu --quick --only ...`` end to end, every Tegula row
checked against its reference; and the GPU report's rows of a training step
(tokens/s) and of the op cases from made-up measurements."""

import json
import pathlib
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is installed by `make venv` (its own stamp, `make torch`)")

from tegula_bench import gpu_report, gpu_workloads, torch_workloads  # noqa: E402
from tegula_bench.outcome import Outcome  # noqa: E402

BENCH = pathlib.Path(__file__).resolve().parents[2] / "benchmarks" / "run.py"


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    path = tmp_path_factory.mktemp("bench") / "torch.json"
    args = [sys.executable, str(BENCH), "--cpu", "--quick", "--json", str(path)]
    for name in torch_workloads.TORCH_WORKLOADS:
        args += ["--only", name]
    done = subprocess.run(args, capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    assert "ops.rms_norm.fwd" in done.stdout and "train_gpt.step" in done.stdout
    return json.loads(path.read_text())


def test_every_op_is_measured_forward_and_backward_against_torch(report):
    rows = report["rows"]
    workloads = {r["workload"] for r in rows}
    for op in torch_workloads.OPS:
        assert {f"ops.{op}.fwd", f"ops.{op}.fwd+bwd"} <= workloads, op
    for row in rows:
        if row["workload"].startswith("ops.") and not row["workload"].startswith("ops.attention"):
            assert row["baseline"] == (row["variant"] == "torch"), row
            compute = any(f"ops.{op}." in row["workload"] for op in torch_workloads.COMPUTE_BOUND_OPS)
            assert row["rate_unit"] == ("GFLOP/s" if compute else "GB/s")
    # the default run's groups are not in it
    assert not workloads & {"vector_add", "matmul", "launch"}


def test_attention_rows_time_forward_and_backward_against_sdpa(report):
    rows = [r for r in report["rows"] if r["workload"].startswith("ops.attention")]
    names = {r["workload"] for r in rows}
    assert names == {f"ops.attention_d{d}{c}.{k}" for d in (32, 64) for c in ("", "_causal") for k in ("fwd", "bwd")}
    assert {r["variant"] for r in rows} == {"tegula", "sdpa"}
    for r in rows:
        assert r["rate_unit"] == "GFLOP/s" and r["baseline"] == (r["variant"] == "sdpa")
    fwd = next(r for r in rows if r["workload"] == "ops.attention_d64.fwd")
    bwd = next(r for r in rows if r["workload"] == "ops.attention_d64.bwd")
    assert bwd["flops"] == 2.5 * fwd["flops"] == 2.5 * 4 * 1 * 2 * 80 * 80 * 64
    causal = next(r for r in rows if r["workload"] == "ops.attention_d64_causal.fwd")
    assert causal["flops"] * 2 == fwd["flops"]


def test_every_tegula_row_matches_its_reference_and_is_timed(report):
    tegula = [r for r in report["rows"] if r["variant"] == "tegula"]
    assert len(tegula) == 2 * len(torch_workloads.OPS) + 8 + 1
    for r in tegula:
        assert r["check"] == "ok" and r["error"] is None, r
        assert r["samples"] >= 3 and r["median_ms"] > 0 and r["rate"] > 0 and r["speedup"] > 0


def test_training_step_rows_are_tokens_per_second_against_eager_and_compiled_torch(report):
    rows = {r["variant"]: r for r in report["rows"] if r["workload"] == "train_gpt.step"}
    assert set(rows) == {"tegula", "torch", "torch.compile"}
    assert rows["torch"]["check"] == "baseline"
    for r in rows.values():
        assert r["rate_unit"] == "tokens/s"
        if r["median_ms"]:
            assert r["rate"] == pytest.approx(16 * 64 / (r["median_ms"] / 1e3))


def test_gpu_rows_of_a_training_step_are_tokens_per_second():
    case = gpu_workloads.Case("train_gpt.step", "6L", "float32", 0, 0, None, {}, tolerance=(0.0, 1e-3),
                              tokens=16384)
    rows = gpu_report.case_rows(case, [Outcome("torch", [100.0], "reference"), Outcome("tegula", [125.0], "ok"),
                                       Outcome("torch.compile", [80.0], "ok")], 3e12)
    by = {r["variant"]: r for r in rows}
    assert all(r["unit"] == "tokens/s" for r in rows)
    assert by["tegula"]["rate"] == pytest.approx(16384 / 0.125)
    assert by["tegula"]["floor_frac"] == pytest.approx(0.8)  # share of eager torch's rate
    assert by["torch.compile"]["floor_frac"] == pytest.approx(1.25)


def test_gpu_op_cases_compare_every_gradient():
    from tegula_bench.gpu_measure import compare_each
    a, b = torch.ones(4), torch.ones(3)
    assert compare_each(torch, (a, b), (a.clone(), b.clone()), 0.0, 0.0) is None
    assert "output 1" in compare_each(torch, (a, b), (a, b + 1), 0.0, 1e-3)
    assert "2 outputs, expected 1" in compare_each(torch, (a, b), (a,), 0.0, 0.0)


def test_gpu_check_of_a_summed_gradient_scales_atol_with_its_rms():
    # A weight gradient sums 16384 rows: entries of rms ~128, some near 0, each off by bf16 rounding of its
    # terms. An entry that came out near 0 is judged against the rms, not against itself.
    from tegula_bench.gpu_measure import compare
    g = torch.Generator().manual_seed(5)
    want = torch.randn(4096, generator=g) * 128
    want[7] = -10.625
    noisy = want + torch.randn(4096, generator=g) * 0.004 * 128  # eps(bf16) times the rms
    noisy[7] = -10.0
    assert compare(torch, noisy, want, 5e-2, 5e-2) is not None  # entries near 0 fail on their own scale
    assert compare(torch, noisy, want, 5e-2, 5e-2, atol_per_rms=True) is None
    wrong = want.clone()
    wrong[11] += 0.2 * 128  # a real error, a fifth of the rms
    assert "flat index 11" in compare(torch, wrong, want, 5e-2, 5e-2, atol_per_rms=True)
    small = torch.randn(100, generator=g) * 0.01  # rms below 1: atol as given
    assert compare(torch, small + 0.04, small, 5e-2, 0.0, atol_per_rms=True) is None
    assert compare(torch, small + 0.06, small, 5e-2, 0.0, atol_per_rms=True) is not None


def test_attention_backward_target_is_decided_only_where_measured():
    from tegula_bench.targets import criteria
    case = gpu_workloads.Case("ops.attention_d128_causal.bwd", "4x16x4096x128", "bfloat16", 1, 10 ** 12, None, {},
                              reference="sdpa", compute_bound=True)
    rows = gpu_report.case_rows(case, [Outcome("sdpa", [1.0], "reference"), Outcome("tegula", [1.25], "ok")], 3e12)
    decided = {c["what"]: c for c in criteria(rows)}
    share = decided["ops.attention_d128_causal.bwd: tegula's share of SDPA's TFLOP/s"]
    assert share["value"] == pytest.approx(0.8) and share["pass"] is False
    assert not [c for c in criteria([]) if c["what"].startswith("ops.")]


def test_gpu_run_of_the_torch_groups_dry_on_the_cpu(monkeypatch, tmp_path):
    # gpu_run's loop, rows, criteria, progress and markdown for the tegula.torch groups, with the
    # inputs on the CPU, the host clock for CUDA events and torch's CUDA calls stubbed.
    from tegula.testing import HostTimer
    from tegula_bench import gpu_run, render

    monkeypatch.setattr(gpu_workloads, "DEVICE", "cpu")
    monkeypatch.setattr(gpu_run, "CudaTimer", lambda device: HostTimer())
    monkeypatch.setattr(gpu_run, "describe_device", lambda torch: {"name": "stand-in", "arch": "sm_90",
                                                                    "multiprocessors": 1})
    monkeypatch.setattr(gpu_run, "driver_version", lambda: None)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *args: None)
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: None)
    snapshots = []
    report = gpu_run.run(("torch_attention", "train_gpt"), ("tegula", "torch", "sdpa"), True, 0.01,
                         dict(gpu_workloads.NUM_WARPS), on_progress=lambda r: snapshots.append(len(r["rows"])))
    rows = report["rows"]
    assert snapshots == sorted(snapshots) and len(snapshots) == 8 + 1  # after every case, then every group
    assert all(r["check"] in ("reference", "ok") for r in rows), [r for r in rows if r["check"] not in
                                                                   ("reference", "ok")]
    bwd = [r for r in rows if r["workload"] == "ops.attention_d64_causal.bwd" and r["variant"] == "tegula"]
    assert len(bwd) == 1 and bwd[0]["unit"] == "TFLOP/s" and bwd[0]["floor_frac"] > 0
    step = {r["variant"]: r for r in rows if r["workload"] == "train_gpt.step"}
    assert set(step) == {"tegula", "torch"} and step["torch"]["floor_frac"] == pytest.approx(1.0)
    targets = [c for c in report["criteria"] if c["what"].startswith("ops.attention")]
    assert len(targets) == 4 and all(c["value"] is not None for c in targets)
    text = render.format_markdown(report)
    assert "ops.attention_d32.fwd" in text and "tokens/s" in text
