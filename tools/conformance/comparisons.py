"""One case's outcome from its comparisons against references, shared by the harnesses that check a library's
ops one case at a time (unsloth_ops.py, vllm_ops.py)."""


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
