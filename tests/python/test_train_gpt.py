"""examples/train_gpt.py at a tiny size: the --ops torch and --ops tegula
variants train to the same losses step for step, and with --ops tegula the
model has no graph break and trains under torch.compile(fullgraph=True)."""

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is installed by `make venv` (its own stamp, `make torch`)")

import train_gpt  # noqa: E402

TINY = dict(vocab=32, context=16, dim=32, heads=2, layers=1, hidden=88, batch=4)


def _corpus():
    return train_gpt.markov_corpus(32, 2000)


def test_torch_and_tegula_variants_agree_step_for_step():
    config = train_gpt.Config(**TINY)
    want = train_gpt.train(config, "torch", steps=4, corpus=_corpus())
    got = train_gpt.train(config, "tegula", steps=4, corpus=_corpus())
    # float32: the kernels reduce in another order than torch; four Adam steps keep the difference tiny.
    assert got == pytest.approx(want, rel=1e-4)


def test_compiled_tegula_variant_has_no_graph_break_and_trains():
    config = train_gpt.Config(**TINY, norm="layer")  # the final LayerNorm too
    torch._dynamo.reset()
    assert train_gpt.graph_breaks(config, "tegula") == 0
    eager = train_gpt.train(config, "tegula", steps=3, corpus=_corpus())
    compiled = train_gpt.train(config, "tegula", steps=3, compile=True, corpus=_corpus())
    assert compiled == pytest.approx(eager, rel=1e-4)
