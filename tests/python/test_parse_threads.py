"""Tegula parses kernel sources with `ast` from several threads at once (the
autotuner compiles its configs in threads). CPython 3.11 up to 3.11.8 counts
the depth of the tree it builds in state all threads share, and a parse
interrupted by another thread's (a finalizer run by the garbage collector
switches threads) fails with "SystemError: AST constructor recursion depth
mismatch": on 3.11.7 the workload below fails that way in every run without
Tegula's lock."""

import gc
import threading
import time

from tegula._globals import parse_dedented

SOURCE = "def f(x):\n" + "".join(f"    y{i} = ((x + {i}) * (x - {i})) / (x + 1)\n" for i in range(200))


class _Finalized:
    def __del__(self):
        time.sleep(0)  # Python code inside a collection: another thread may run here


def test_parses_in_threads_under_garbage_collection_never_fail():
    errors = []

    def work():
        for _ in range(15):
            garbage = _Finalized()
            garbage.cycle = garbage
            del garbage
            try:
                tree = parse_dedented(SOURCE)
            except SystemError as e:
                errors.append(str(e))
                return
            assert len(tree.body[0].body) == 200

    threshold = gc.get_threshold()
    gc.set_threshold(50)
    try:
        threads = [threading.Thread(target=work) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        gc.set_threshold(*threshold)
    assert errors == []
