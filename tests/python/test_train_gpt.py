"""examples/train_gpt.py at a tiny size: the --ops torch and --ops tegula
variants train to the same losses step for step, and with --ops tegula the
model has no graph break and trains under torch.compile(fullgraph=True). On
the backend under test: with --backend cuda the models train on the GPU."""

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is installed by `make venv` (its own stamp, `make torch`)")

import train_gpt  # noqa: E402

TINY = dict(vocab=32, context=16, dim=32, heads=2, layers=1, hidden=88, batch=4)


def _corpus():
    return train_gpt.markov_corpus(32, 2000)


def _device(backend) -> str:
    return "cuda" if backend.is_cuda else "cpu"


def test_torch_and_tegula_variants_agree_step_for_step(backend):
    config = train_gpt.Config(**TINY)
    want = train_gpt.train(config, "torch", steps=4, corpus=_corpus(), device=_device(backend))
    got = train_gpt.train(config, "tegula", steps=4, corpus=_corpus(), device=_device(backend))
    # float32: the kernels reduce in another order than torch; four Adam steps keep the difference tiny.
    assert got == pytest.approx(want, rel=1e-4)


def test_compiled_tegula_variant_has_no_graph_break_and_trains(backend):
    config = train_gpt.Config(**TINY, norm="layer")  # the final LayerNorm too
    torch._dynamo.reset()
    assert train_gpt.graph_breaks(config, "tegula", device=_device(backend)) == 0
    eager = train_gpt.train(config, "tegula", steps=3, corpus=_corpus(), device=_device(backend))
    compiled = train_gpt.train(config, "tegula", steps=3, compile=True, corpus=_corpus(), device=_device(backend))
    assert compiled == pytest.approx(eager, rel=1e-4)


def test_gpu_configuration_is_gpu_sized_and_the_cpu_default_unchanged():
    gpu, cpu = train_gpt.default_config("cuda"), train_gpt.default_config("cpu")
    assert cpu == train_gpt.Config()
    assert gpu.layers * gpu.dim ** 2 >= 64 * cpu.layers * cpu.dim ** 2
    assert gpu.batch * gpu.context >= 16 * cpu.batch * cpu.context
    assert (gpu.dim // gpu.heads) & (gpu.dim // gpu.heads - 1) == 0  # a head dim Tegula's attention takes


def test_markov_corpus_follows_its_chain():
    corpus = train_gpt.markov_corpus(16, 3000, choices=2).tolist()
    followers = {}
    for a, b, c in zip(corpus, corpus[1:], corpus[2:]):
        followers.setdefault((a, b), set()).add(c)
    assert max(len(f) for f in followers.values()) <= 2 and len(followers) > 50
