"""Which Inductor kernels the compiled training step runs, and why.

    TORCHINDUCTOR_CACHE_DIR=DIR python tools/hopper/inductor_kernels.py DIR [PATTERN ...]

Reads the wrapper modules Inductor wrote under DIR (the cache of a run of
examples/train_gpt.py --compile or host_cost_probe.py --compile) and prints,
for each Triton kernel whose name matches a PATTERN (all when none is
given), the comment lines Inductor put above its launch (the source nodes
and the ATen ops it fused) and the launch itself: how a fused kernel beside
a Tegula op came to be, e.g. a copy Inductor made to give an op's input the
strides its layout constraint asks for.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path


def main() -> None:
    root = Path(sys.argv[1])
    patterns = [re.compile(p) for p in sys.argv[2:]] or [re.compile("triton_")]
    for path in sorted(root.rglob("*.py")):
        text = path.read_text(errors="replace")
        if "def call(" not in text:
            continue
        lines = text.splitlines()
        calls = [i for i, line in enumerate(lines) if re.search(r"\btriton_\w+\.run\(", line)]
        shown = False
        for i in calls:
            name = re.search(r"\b(triton_\w+)\.run\(", lines[i]).group(1)
            if not any(p.search(name) for p in patterns):
                continue
            if not shown:
                print(f"== {path.name}")
                shown = True
            start = i
            while start > 0 and lines[start - 1].strip().startswith("#"):
                start -= 1
            for line in lines[max(0, start - 3):i + 2]:
                print("   " + line.strip()[:400])
            print()


if __name__ == "__main__":
    main()
