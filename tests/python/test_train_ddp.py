"""examples/train_ddp.py at a tiny size: two processes under torchrun (gloo on
the CPU; NCCL where there are two GPUs) train to the losses one process
trains to on the same global batch, step for step; the JSON holds what the
GPU check reads; --compare passes and fails as it should; a batch that does
not divide among the processes and too few GPUs stop with one clear line."""

import json
import os
import pathlib
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is installed by `make venv` (its own stamp, `make torch`)")

import train_ddp  # noqa: E402

SCRIPT = pathlib.Path(train_ddp.__file__).resolve()
# Every field given, so the CPU and the GPU train the same configuration (the GPU's defaults differ).
TINY = ["--vocab", "32", "--corpus", "2000", "--context", "16", "--dim", "32", "--heads", "2", "--layers", "1",
        "--hidden", "88", "--batch", "4", "--lr", "1e-2", "--precision", "float32", "--steps", "5",
        "--log-every", "1"]
TORCHRUN_ENV = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")
# float32. The runs differ only in rounding: two processes sum each weight's gradient over half the
# rows each and average the two sums, one process sums all rows at once, and the matrix products
# run on half as many rows. Measured: 1e-7 relative after 20 steps on the CPU. On a GPU the
# libraries may pick other kernels (and reduction orders) for the half-size products.
TOLERANCE = {"cpu": 1e-5, "cuda": 1e-4}


def _child_env() -> dict:
    """Two processes on a machine of perhaps two cores: one thread each, sleeping when idle; the
    kernel cache of this test run."""
    env = {k: v for k, v in os.environ.items() if k not in TORCHRUN_ENV}
    env.update(OMP_WAIT_POLICY="PASSIVE", OMP_NUM_THREADS="1", TEGULA_NUM_THREADS="1",
               TEGULA_CACHE_DIR=os.environ["TEGULA_CACHE_DIR"])
    return env


def _torchrun(processes: int, *args: str) -> subprocess.CompletedProcess:
    # --standalone: a rendezvous on a free local port, so parallel test runs do not collide.
    return subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone",
                           "--nproc-per-node", str(processes), str(SCRIPT), *args],
                          capture_output=True, text=True, timeout=300, env=_child_env())


def _one_process(monkeypatch, *args: str) -> int:
    for name in TORCHRUN_ENV:
        monkeypatch.delenv(name, raising=False)
    return train_ddp.main(list(args))


@pytest.fixture(scope="module", params=["cpu", pytest.param("cuda", marks=pytest.mark.skipif(
    torch.cuda.device_count() < 2, reason="needs two GPUs"))])
def runs(request, tmp_path_factory):
    """(device, the one-process JSON, the two-process JSON, the two-process run's output). The one
    process runs here, first, so the kernels it compiles are in the cache when the two start."""
    device, folder = request.param, tmp_path_factory.mktemp(f"ddp-{request.param}")
    one, two = folder / "one.json", folder / "two.json"
    with pytest.MonkeyPatch.context() as monkeypatch:
        assert _one_process(monkeypatch, *TINY, "--device", device, "--json", str(one)) == 0
    done = _torchrun(2, *TINY, "--device", device, "--json", str(two), "--compare", str(one))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return device, json.loads(one.read_text()), json.loads(two.read_text()), done.stdout


def test_two_processes_train_to_the_one_process_losses_step_for_step(runs):
    device, one, two, _ = runs
    assert (one["world_size"], two["world_size"]) == (1, 2)
    assert len(two["losses"]) == 5
    assert two["losses"] == pytest.approx(one["losses"], rel=TOLERANCE[device])
    assert two["losses"][-1] < two["losses"][0] + 0.5  # it trains, and the loss stays near log(32)


def test_json_holds_the_configuration_losses_and_tokens_per_second(runs):
    device, one, two, _ = runs
    assert {"config", "device", "backend", "world_size", "ops", "steps", "losses", "tokens_per_s",
            "final_mean_loss"} <= set(two)
    assert two["config"] == one["config"] and two["config"]["batch"] == 4 and two["config"]["dim"] == 32
    assert (two["backend"], two["device"], two["ops"]) == ({"cpu": "gloo", "cuda": "nccl"}[device], device, "tegula")
    assert one["backend"] is None  # one process without torchrun: no process group, no DDP
    assert two["tokens_per_s"] > 0 and one["tokens_per_s"] > 0
    assert two["final_mean_loss"] == pytest.approx(sum(two["losses"]) / 5)


def test_only_rank_zero_prints_and_compare_reports_the_gap(runs):
    _, _, _, stdout = runs
    assert stdout.count("step    0") == 1 and stdout.count("wrote ") == 1
    assert "final loss (mean of the last 10 steps): 2 process(es)" in stdout and "(at most 1%)" in stdout


def test_compare_fails_beyond_one_percent_and_on_another_configuration(tmp_path):
    config = {"dim": 32}
    run = {"config": config, "steps": 5, "world_size": 2, "final_mean_loss": 2.0, "tokens_per_s": 300.0}
    near, far, other = tmp_path / "near.json", tmp_path / "far.json", tmp_path / "other.json"
    near.write_text(json.dumps({**run, "world_size": 1, "final_mean_loss": 2.019, "tokens_per_s": 200.0}))
    far.write_text(json.dumps({**run, "world_size": 1, "final_mean_loss": 2.03}))
    other.write_text(json.dumps({**run, "config": {"dim": 64}}))
    agree, line = train_ddp.compare(run, str(near))
    assert agree and "differ by 0.941%" in line and "(1.50x)" in line
    assert not train_ddp.compare(run, str(far))[0]
    agree, line = train_ddp.compare(run, str(other))
    assert not agree and "another config" in line


def test_a_batch_that_does_not_divide_among_the_processes_stops_with_one_line():
    done = _torchrun(2, *TINY, "--device", "cpu", "--batch", "5")
    assert done.returncode != 0
    output = done.stdout + done.stderr
    assert "train_ddp.py: error: --batch 5 does not divide among 2 processes" in output
    assert output.count("train_ddp.py: error:") == 1  # rank 0 says it
    assert f'File "{SCRIPT}"' not in output  # no traceback from inside the script


def test_cuda_with_fewer_gpus_than_processes_stops_with_one_line(monkeypatch, capsys):
    # As torchrun would start one of count + 1 processes: the check comes before any process group.
    processes = str(torch.cuda.device_count() + 1)
    monkeypatch.setenv("RANK", "0")
    monkeypatch.setenv("LOCAL_RANK", "0")
    monkeypatch.setenv("WORLD_SIZE", processes)
    monkeypatch.setenv("LOCAL_WORLD_SIZE", processes)
    assert train_ddp.main([*TINY, "--device", "cuda", "--batch", str(4 * int(processes))]) == 2
    err = capsys.readouterr().err
    assert f"train_ddp.py: error: --device cuda with {processes} process(es) on this machine needs" in err
    assert not torch.distributed.is_initialized()


def test_help_lists_the_options(capsys):
    with pytest.raises(SystemExit) as done:
        train_ddp.parse_args(["--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert "--compare" in out and "more than 1%" in out and "--layers" in out

