"""One case's outcome from its comparisons against references, shared by the harnesses that check a library's
ops one case at a time (unsloth_ops.py, vllm_ops.py, sglang_ops.py, flash_attn_ops.py)."""


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
