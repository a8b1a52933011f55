"""A hand edit of a generated CUDA source (the `source` of ``kernel.inspect(...)``, or TEGULA_DUMP_DIR's
<kernel>-<key8>.source.cu) that tries what a scheduler of wgmma waits would do: one dot whose operands are
ready is issued right after the loop's first dot, and its group is waited for where its result is first
read, not where it is issued.

    python tools/hopper/overrides/early_dots.py SOURCE.cu OUT.cu EARLY [LATE]
    python tools/hopper/overrides/early_dots.py SOURCE.cu OUT.cu --merge FIRST SECOND

EARLY and LATE name dots by their result (``v74``) or by their line in the kernel's Python source
(``:146``). EARLY is the dot to issue early; LATE, if given, a dot between the first dot and EARLY that
accumulates (``dv = tl.dot(p, do, dv)``): its wait moves to the end of the iteration, so it runs under the
math before the loop's last dot. For TEGULA_OVERRIDE_DIR experiments (docs/runtime.md): the compiler does
not schedule this way yet.
"""

import re
import sys

# A dot's wait and the pins of its accumulator that follow it in the generated code.
_WAIT_AND_PINS = r"\n\s*tg_wgmma_wait<0>\(\);\n\s*#pragma unroll\n[^\n]*\n[^\n]*tg_pin\([^\n]*\n\s*\}"


def block_of(text: str, start: int) -> int:
    """The index just past the brace block that opens at or after `start`."""
    i = text.index("{", start)
    depth = 0
    while True:
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1


def value_of(text: str, dot: str) -> str:
    """The result name of the dot `dot` names (``v74``, or ``:LINE`` of the kernel's Python source)."""
    if not dot.startswith(":"):
        return dot
    return re.search(rf"// (v\d+) = dot\([^\n]*\.py{dot}:", text).group(1)


def registers_of(text: str, name: str) -> int:
    return int(re.search(rf"float {name}\[(\d+)\]", text).group(1))


def edit(text: str, early: str, late: str | None = None) -> str:
    early = value_of(text, early)
    late = value_of(text, late) if late else None
    # The early dot: its comment lines, the accumulator's declaration and zeroing, then its issue block.
    head = re.search(rf"\n    // v\d+ = trans\(v\d+\)[^\n]*\n[^\n]*\n    // {early} = dot\(", text) \
        or re.search(rf"\n    // {early} = dot\(", text)
    decl_end = text.index("\n    {\n", head.start())
    issue_end = block_of(text, decl_end + 1)
    declaration = text[head.start():decl_end]
    # Zeros of their own: ptxas otherwise gives the accumulator copies of the register the first dot's
    # zeros came from, which that dot's group defines while it runs (C7517: it waits for the group).
    declaration = re.sub(rf"{early}\[(\w+)\] = v\d+\[\w+\];",
                         rf'asm volatile("mov.b32 %0, 0;" : "=f"({early}[\1]));', declaration)
    issue = re.sub(_WAIT_AND_PINS, "", text[decl_end:issue_end])
    # Pending where EARLY's result is first read: EARLY, the previous iteration's last dot, LATE.
    pending = 2 if late else 1
    wait = (f"\n    tg_wgmma_wait<{pending}>();  // {early}'s group, issued early\n"
            f"    #pragma unroll\n    for (int e0 = 0; e0 < {registers_of(text, early)}; ++e0) tg_pin({early}[e0]);")
    text = text[:head.start()] + wait + text[issue_end:]
    late_acc = None
    if late:
        late_at = text.index(f"    // {late} = dot(")
        late_end = block_of(text, text.index("\n    {\n", late_at) + 1)
        late_block = text[late_at:late_end]
        late_acc = re.search(r"tg_pin\((v\d+)\[", late_block).group(1)
        text = text[:late_at] + re.sub(_WAIT_AND_PINS, "", late_block) + text[late_end:]
    # EARLY goes right after the loop's first dot's commit, before the previous iteration's late group.
    first = re.search(r"      tg_wgmma_commit\(\);\n      if \(k\d+ > 0\) \{", text).start()
    first += len("      tg_wgmma_commit();\n")
    text = text[:first] + issue.replace("\n    ", "\n      ") + "\n" + text[first:]
    first_block = text.rindex("\n    {\n", 0, first)
    text = text[:first_block] + declaration + text[first_block:]
    text = text.replace("tg_wgmma_wait<1>();  // this dot's group; the last dot's stays in flight",
                        "tg_wgmma_wait<2>();  // this dot's group; the early one and the last dot's stay in flight")
    if late_acc:
        # LATE's group retires with the previous iteration's last dot: a group left in flight over the
        # loop's back edge makes ptxas wait for it there.
        text = text.replace("tg_wgmma_wait<0>();  // the last dot's group of the previous iteration",
                            f"tg_wgmma_wait<0>();  // the last dot's group of the previous iteration, and {late}'s\n"
                            f"    #pragma unroll\n    for (int e2 = 0; e2 < {registers_of(text, late_acc)}; ++e2) "
                            f"tg_pin({late_acc}[e2]);")
    return text


def merge_wait(text: str, first: str, second: str) -> str:
    """The dot `first` does not wait for its group: the wait of `second`, the next dot, covers both, so the
    two groups run back to back on the tensor cores (no drain between them). `first`'s result must not be
    read between the two (an accumulating dot read only by itself in the next iteration)."""
    first, second = value_of(text, first), value_of(text, second)
    at = text.index(f"    // {first} = dot(")
    end = block_of(text, text.index("\n    {\n", at) + 1)
    block = text[at:end]
    pins = re.search(_WAIT_AND_PINS, block)
    acc = re.search(r"tg_pin\((v\d+)\[", block).group(1)
    text = text[:at] + block[:pins.start()] + block[pins.end():] + text[end:]
    at = text.index(f"    // {second} = dot(")
    end = block_of(text, text.index("\n    {\n", at) + 1)
    wait = text.index("tg_wgmma_wait<0>();", at, end) + len("tg_wgmma_wait<0>();")
    return (text[:wait] + f"  // {second}'s group and {first}'s\n      #pragma unroll\n      for (int m0 = 0; m0 < "
            f"{registers_of(text, acc)}; ++m0) tg_pin({acc}[m0]);" + text[wait:])


def main() -> None:
    src, out, early, *late = sys.argv[1:]
    with open(out, "w") as f:
        if early == "--merge":
            f.write(merge_wait(open(src).read(), *late))
        else:
            f.write(edit(open(src).read(), early, late[0] if late else None))


if __name__ == "__main__":
    main()
