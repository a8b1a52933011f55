"""A hand edit of a generated CUDA source that tries what the compiler does not do yet: a loop-invariant
operand a of a wgmma (K in the dK/dV kernel's ``k @ q.T``, V in ``v @ do.T``; Q and dO in the dQ kernel's),
staged once before the loop, is read into A fragments once (ldmatrix from its swizzled tile) and every
iteration's wgmma takes it from registers. Each such product then reads only operand b from shared memory:
at n 64 a shared-memory wgmma reads as many bytes as its tensor cores take cycles, so the ring's copies and
the other products compete for that bandwidth.

    python tools/hopper/overrides/a_in_registers.py SOURCE.cu OUT.cu

For TEGULA_OVERRIDE_DIR experiments (docs/runtime.md), like early_dots.py.
"""

import re
import sys

_CALL = re.compile(r"tg_wgmma_m64n(\d+)k16_(bf16|f16)_kk\((v\d+ \+ [^,]+), da_w \+ \(\([^\n]*?\) >> 4\), (db_w \+ [^\n]*)\);")


def _register_form(text: str, n: str, dtype: str) -> str:
    """The source with `tg_wgmma_m64n{n}k16_{dtype}_rk` (a from registers, b K-major) defined, from the
    `_kk` form's text."""
    name = f"tg_wgmma_m64n{n}k16_{dtype}_rk"
    if name in text:
        return text
    start = text.index(f"TG_DEVICE void tg_wgmma_m64n{n}k16_{dtype}_kk(")
    start = text.rindex("\n//", 0, start) + 1
    end = text.index("\n}\n", start) + 3
    kk = text[start:end]
    regs = int(n) // 2
    rk = kk.replace(f"_{dtype}_kk(float* d, unsigned long long a,", f"_{dtype}_rk(float* d, const unsigned* a,")
    rk = re.sub(r"TG_WGMMA_HOOK\(d, a, b, (\d+), (\d), 0, 0\);", r"TG_WGMMA_REG_HOOK(d, a, b, \1, \2, 0);", rk)
    rk = rk.replace(f"setp.ne.b32 p, %{regs + 2}, 0;", f"setp.ne.b32 p, %{regs + 5}, 0;")
    rk = rk.replace(f"}}, %{regs}, %{regs + 1}, p, 1, 1, 0, 0;",
                    f"}}, {{%{regs}, %{regs + 1}, %{regs + 2}, %{regs + 3}}}, %{regs + 4}, p, 1, 1, 0;")
    rk = rk.replace(': "l"(a), "l"(b), "r"(1));', ': "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(1));')
    rk = rk.replace("tile, asynchronous", "tile, a from registers, asynchronous")
    assert rk.count("_rk(") == 1 and "REG_HOOK" in rk and "a[3]" in rk, rk
    return text[:end] + rk + text[end:]


def edit(text: str) -> str:
    loop = re.search(r"\n  tg_named_barrier<256>\(1\);\n  for \(unsigned long long (k\d+) = 0;", text)
    fragments, loads, count = [], [], 0
    pos = loop.end()
    while True:
        call = _CALL.search(text, pos)
        if call is None:
            break
        block = text.rindex("\n    {\n", 0, call.start())
        desc = re.search(r"const unsigned long long da = tg_wgmma_desc\(sm \+ (\d+), (\d+), 1024, 1\);",
                         text[block:call.start()])
        steps = re.findall(r"for \(int (j\d+) = 0; \1 < (\d+); \+\+\1\)", text[block:call.start()])[-1]
        if desc is None:  # a ring-fed a: its tile changes every iteration
            pos = call.end()
            continue
        offset, k_steps = int(desc.group(1)), int(steps[1])
        swizzle = re.search(rf"tg_smem \+ {offset} \+ (tg_swizzle<[^>]*>)", text).group(1)
        name = f"a_regs{count}"
        count += 1
        fragments.append(f"  unsigned {name}[{k_steps}][4];  // loop-invariant A fragments (a_in_registers.py)")
        loads.append(f"    #pragma unroll\n    for (int ks = 0; ks < {k_steps}; ++ks)\n"
                     f"      tg_ldmatrix_x4({name}[ks][0], {name}[ks][1], {name}[ks][2], {name}[ks][3], "
                     f"sm + {offset} + {swizzle}(row, ks * 2 + (lane >> 4)));")
        n, dtype = call.group(1), call.group(2)
        text = _register_form(text, n, dtype)
        call = _CALL.search(text, text.index(call.group(0)))  # past the definitions _register_form added
        new = f"tg_wgmma_m64n{n}k16_{dtype}_rk({call.group(3)}, {name}[{steps[0]}], {call.group(4)});"
        text = text[:call.start()] + new + text[call.end():]
        pos = call.start() + len(new)
    assert count, "no loop-invariant operand a in shared memory"
    loop = re.search(r"\n  tg_named_barrier<256>\(1\);\n  for \(unsigned long long (k\d+) = 0;", text)
    setup = ("\n".join(fragments) + "\n  {\n    const unsigned sm = tg_shared_address(tg_smem);\n"
             "    // ldmatrix.x4: lane l gives row l % 8 of matrix l / 8, matrices (rows 0-7 | 8-15) x (k 0-7 | 8-15)\n"
             "    const unsigned row = ((warp >> 2) & 1) * 64 + 16 * (warp & 3) + (lane & 7) + ((lane >> 3) & 1) * 8;\n"
             + "\n".join(loads) + "\n  }")
    at = loop.start() + len("\n  tg_named_barrier<256>(1);")
    return text[:at] + "\n" + setup + text[at:]


def main() -> None:
    src, out = sys.argv[1:]
    with open(out, "w") as f:
        f.write(edit(open(src).read()))


if __name__ == "__main__":
    main()
