"""The attention kernels' launch configuration (tegula.torch.ops.attention_config):
defaults per backend and head dim, the TEGULA_ATTENTION_CONFIG override and
``use``; attention with tiles other than the default still matches SDPA
(masked tails, causal and not); and tools/attention_sweep.py on the CPU, a
bad candidate being a row that says why."""

import json
import pathlib
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is installed by `make venv` (its own stamp, `make torch`)")
F = torch.nn.functional

from tegula.torch import ops  # noqa: E402
from tegula.torch.ops import attention_config as ac  # noqa: E402

SWEEP = pathlib.Path(__file__).resolve().parents[2] / "tools" / "attention_sweep.py"


def test_specs_parse_and_bad_ones_say_why():
    assert ac.parse_tiles("128x64w8s3") == ac.Tiles(128, 64, 8, 3)
    assert ac.parse_tiles("32x16") == ac.Tiles(32, 16)
    assert str(ac.Tiles(64, 32, 4, 2)) == "64x32w4s2"
    base = ac.default("cuda", 128)
    changed = ac.parse("dq=64x32w4", base)
    assert changed.dq == ac.Tiles(64, 32, 4) and changed.fwd == base.fwd and changed.dkdv == base.dkdv
    with pytest.raises(ValueError, match="power of two"):
        ac.parse_tiles("48x32")
    with pytest.raises(ValueError, match="BMxBN"):
        ac.parse_tiles("64-32")
    with pytest.raises(ValueError, match="fwd, dkdv, dq"):
        ac.parse("bwd=64x64", base)


def test_defaults_per_backend_and_head_dim():
    cpu = ac.default("cpu", 128)
    assert cpu.fwd == cpu.dkdv == cpu.dq == ac.Tiles(32, 32)
    for dim in (16, 64, 128, 256):
        config = ac.default("cuda", dim)
        for tiles in (config.fwd, config.dkdv, config.dq):
            assert tiles.num_warps in (4, 8) and tiles.num_stages in (2, 3, 4)
    assert ac.default("cuda", 32) == ac.default("cuda", 64)


def test_environment_and_use_override_the_default(monkeypatch):
    monkeypatch.setenv(ac.ENV, "fwd=16x64,dq=64x16")
    chosen = ac.choose("cpu", 64)
    assert chosen.fwd == ac.Tiles(16, 64) and chosen.dq == ac.Tiles(64, 16) and chosen.dkdv == ac.Tiles(32, 32)
    mine = ac.AttentionConfig(ac.Tiles(64, 32), ac.Tiles(16, 16), ac.Tiles(32, 64))
    with ac.use(mine):
        assert ac.choose("cpu", 64) == mine
    assert ac.choose("cpu", 64) == chosen
    monkeypatch.setenv(ac.ENV, "fwd=oops")
    with pytest.raises(ValueError, match=ac.ENV):
        ac.choose("cpu", 64)


CONFIGS = [ac.AttentionConfig(ac.Tiles(16, 64), ac.Tiles(64, 16), ac.Tiles(16, 32)),
           ac.AttentionConfig(ac.Tiles(64, 16), ac.Tiles(16, 64), ac.Tiles(64, 64))]


@pytest.mark.parametrize("config", CONFIGS, ids=str)
@pytest.mark.parametrize("causal", [False, True])
def test_attention_with_other_tiles_matches_sdpa(config, causal):
    # S = 45 and 70: no tile divides them, and BLOCK_M and BLOCK_N differ in each kernel.
    gen = torch.Generator().manual_seed(45 + causal)
    for S in (45, 70):
        q, k, v = (torch.randn(1, 2, S, 32, generator=gen, requires_grad=True) for _ in range(3))
        upstream = torch.randn(1, 2, S, 32, generator=gen)
        with ac.use(config):
            got = ops.attention(q, k, v, causal=causal)
            got_grads = torch.autograd.grad(got, (q, k, v), upstream)
        want = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        want_grads = torch.autograd.grad(want, (q, k, v), upstream)
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
        for g, w in zip(got_grads, want_grads):
            torch.testing.assert_close(g, w, rtol=1e-4, atol=1e-5)


def test_sweep_on_the_cpu_prints_a_table_and_a_bad_candidate_is_a_row(tmp_path):
    out = tmp_path / "sweep.json"
    done = subprocess.run([sys.executable, str(SWEEP), "--device", "cpu", "--quick", "--dims", "32",
                           "--fwd", "32x32", "--fwd", "48x32", "--bwd", "dkdv=32x32,dq=32x32",
                           "--bwd", "dkdv=16x64,dq=64x16", "--json", str(out)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "of SDPA" in done.stdout and "fastest bwd for D=32" in done.stdout
    report = json.loads(out.read_text())
    rows = report["rows"]
    assert len(rows) == 2 * 4  # causal and not, four candidates
    bad = [r for r in rows if r["config"] == "48x32"]
    assert len(bad) == 2 and all(r["check"] == "error" and "power of two" in r["error"] for r in bad)
    good = [r for r in rows if r["config"] != "48x32"]
    assert all(r["check"] == "ok" and r["ms"] > 0 and r["sdpa_ms"] > 0 and r["of_sdpa"] > 0 for r in good)
    assert all(r["max_rel_error"] <= (0.02 if r["kind"] == "fwd" else 0.03) for r in good)
    assert report["best"]["fwd/32"]["config"] == "32x32"
