"""One case's outcome from its comparisons against references, shared by the harnesses that check a library's
ops one case at a time (unsloth_ops.py, vllm_ops.py, sglang_ops.py, flash_attn_ops.py, verl_ops.py,
deepseek_v3_ops.py, autoawq_ops.py, trident_ops.py, scattermoe_ops.py, mlstm_kernels_ops.py, fbgemm_ops.py,
megablocks_ops.py, axolotl_ops.py, axolotl_integrations_ops.py, torchtitan_ops.py), a case's expected refusal
(torch_triton_utils_ops.py, torchtitan_ops.py), two comparisons of quantizers' outputs (float8 codes within half a
step of the quotients they round, and exact equality), and the report of a run."""

import json
import math
import re


def record(results: list, name: str, comparisons: dict) -> None:
    """Appends (name, "ok" or "FAIL", the largest difference, a text) to results. comparisons: {what: (got, want,
    tol)}; a case passes when every max |got - want| <= tol * max |want| (tol where want is all zeros); an empty
    want passes against an empty got of its shape."""
    worst, bad, parts = 0.0, [], []
    for what, (got, want, tol) in comparisons.items():
        want = want.detach().double()
        if want.numel() == 0:
            err, scale = (0.0 if got.shape == want.shape else math.inf), 1.0
        else:
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


# Half a step of a float8 format relative to a value's binade (3 mantissa bits for e4m3, 2 for e5m2), and the
# magnitude below which the format's steps stop shrinking (its smallest normal).
FP8_HALF_STEP = {"float8_e4m3fn": 2.0 ** -4, "float8_e5m2": 2.0 ** -3}
FP8_SMALLEST_NORMAL = {"float8_e4m3fn": 2.0 ** -6, "float8_e5m2": 2.0 ** -14}


def fp8_codes(y, v) -> tuple:
    """A comparison of float8 codes y against the exact quotients v they round: (y - v) / |v| (|v| floored at
    the format's smallest normal) against zeros, within half a step of the format (and a thousandth of that
    for a float32 quotient's own rounding)."""
    name = str(y.dtype).removeprefix("torch.")
    err = (y.double() - v.double()) / v.double().abs().clamp_min(FP8_SMALLEST_NORMAL[name])
    return err, err.new_zeros(()).expand(err.shape), FP8_HALF_STEP[name] * 1.001


def exact(got, want) -> tuple:
    """A comparison that passes only when got and want are equal (integers, bits, copies)."""
    as_number = (lambda t: t.long() if not t.is_floating_point() else t)
    return as_number(got), as_number(want), 0.0


def report(results: list, json_path=None, library: dict | None = None, library_name: str = "") -> int:
    """Prints one line per result and the totals, writes them to json_path when given, and returns the exit
    status: 0 when every line matches, is refused as expected (refusal()) or fails by the library's own bug.
    library: {case name: that bug}, which turns the case's FAIL into "FAIL (library)". Expected refusals are
    counted apart from the lines that match ("N of M lines match; R refused as expected")."""
    library = library or {}
    for i, (name, status, worst, why) in enumerate(results):
        if status == "FAIL" and name in library:
            results[i] = (name, "FAIL (library)", worst, f"{library[name]}: {why}")
    width = max((len(r[0]) for r in results), default=10)
    status_width = max((len(r[1]) for r in results), default=6)
    for name, status, worst, why in results:
        err = "max err n/a" if worst != worst else f"max err {worst:.2g}"
        print(f"{name:{width}s}  {status:{status_width}s}  {err:16s}  {why}")
    passed = sum(r[1] == "ok" for r in results)
    by_library = sum(r[1] == "FAIL (library)" for r in results)
    refused = sum(r[1] == "refused (expected)" for r in results)
    total = f"{passed} of {len(results) - refused} lines match"
    if refused:
        total += f"; {refused} refused as expected"
    if library:
        print(f"{total}; {by_library} fail by {library_name}'s own bugs; "
              f"{len(results) - refused - passed - by_library} fail otherwise")
    else:
        print(total)
    if json_path:
        json_path.write_text(json.dumps([{"case": n, "status": s, "worst": None if w != w else w, "text": t}
                                         for n, s, w, t in results], indent=1))
    return 0 if passed + by_library + refused == len(results) else 1
