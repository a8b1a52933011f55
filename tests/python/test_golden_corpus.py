"""The golden corpus (tests/golden/corpus, tools/golden_corpus.py): every
kernel specialization the compat suite and the examples compile, with the C++
and CUDA (sm_90, sm_80) source generated for it, pinned as text. A change to
generated code shows here; after an intended one, `python
tools/golden_corpus.py update` rewrites the files for review in git diff, and
`capture` records the requests again when the suites' kernels change."""

import importlib.util
import json
import pathlib

import pytest

TOOL = pathlib.Path(__file__).resolve().parents[2] / "tools" / "golden_corpus.py"
_spec = importlib.util.spec_from_file_location("golden_corpus", TOOL)
golden_corpus = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(golden_corpus)

ENTRIES = golden_corpus.entries()


def test_the_corpus_covers_the_suites():
    kernels = {json.loads(p.read_text())["functions"][0]["name"] for p in ENTRIES}
    assert len(ENTRIES) >= 100
    for name in ("add", "attention_fwd_kernel", "softmax_kernel", "layer_norm_kernel", "fused_chain_kernel"):
        assert any(k == name or k.startswith(name) for k in kernels), name


@pytest.mark.parametrize("path", ENTRIES, ids=[p.name[:-len(".json")] for p in ENTRIES])
def test_generated_source_matches_the_corpus(path):
    differing = golden_corpus.compare_entry(path, update=False)
    assert not differing, (f"{path.name}: generated source differs from {differing}; if intended, run "
                           f"`python tools/golden_corpus.py update` and review the diff")


def test_every_prelude_file_is_referenced():
    preludes = {p.name for p in golden_corpus.CORPUS.glob("prelude-*")}
    assert preludes == golden_corpus.referenced_preludes()
