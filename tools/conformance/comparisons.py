"""One case's outcome from its comparisons against references, shared by the harnesses that check a library's
ops one case at a time (unsloth_ops.py, vllm_ops.py, sglang_ops.py, flash_attn_ops.py), and a case's expected
refusal (torch_triton_utils_ops.py)."""

import re


def record(results: list, name: str, comparisons: dict) -> None:
    """Appends (name, "ok" or "FAIL", the largest difference, a text) to results. comparisons: {what: (got, want,
    tol)}; a case passes when every max |got - want| <= tol * max |want| (tol where want is all zeros)."""
    worst, bad, parts = 0.0, [], []
    for what, (got, want, tol) in comparisons.items():
        want = want.detach().double()
        err = (got.detach().double() - want).abs().max().item()
        scale = want.abs().max().item() or 1.0
        worst = max(worst, err)
        parts.append(f"{what} {err:.2g}")
        if not err <= tol * scale:
            bad.append(f"{what} off by {err:.3g} (tolerance {tol * scale:.3g})")
    results.append((name, "FAIL" if bad else "ok", worst, "; ".join(bad) if bad else ", ".join(parts)))


def check(results: list, name: str, case, stages=("forward", "backward")) -> None:
    """case is a generator yielding one comparisons dict per stage, so a failing backward leaves the forward's
    line standing; the stages after a failure are reported as not run."""
    done = 0
    try:
        for comparisons in case():
            record(results, f"{name} {stages[done]}" if len(stages) > 1 else name, comparisons)
            done += 1
    except Exception as e:
        first = str(e).strip().splitlines()[0][:300] if str(e).strip() else ""
        results.append((f"{name} {stages[done]}" if len(stages) > 1 else name, "FAIL", float("nan"),
                        f"{type(e).__name__}: {first}"))
        for later in stages[done + 1:]:
            results.append((f"{name} {later}", "FAIL", float("nan"), f"not run: {stages[done]} failed"))


def _first_line(e: Exception) -> str:
    """The error's type and first line, with the folders of a source path left out (triton_utils.py:466:9)."""
    text = str(e).strip()
    line = re.sub(r"(?:[A-Za-z]:)?[/\\][^\s:]*[/\\]([^/\\\s:]+\.py)", r"\1", text.splitlines()[0] if text else "")
    return f"{type(e).__name__}: {line[:300]}"


def refusal(results: list, name: str, launch, expected: str) -> None:
    """A case Tegula is expected to refuse on this backend (inline assembly of another target, an API that
    Triton itself no longer has): launch() must raise an error whose type name and text match the regex
    `expected`. Appends (name, "refused (expected)", nan, the error's first line); a launch that runs, or
    fails with another error, is a FAIL."""
    try:
        launch()
    except Exception as e:
        full = f"{type(e).__name__}: {e}"
        if re.search(expected, full, re.S):
            results.append((name, "refused (expected)", float("nan"), _first_line(e)))
        else:
            results.append((name, "FAIL", float("nan"), f"refused otherwise than expected ({expected!r}): "
                            + _first_line(e)))
        return
    results.append((name, "FAIL", float("nan"), f"ran; expected a refusal matching {expected!r}"))
