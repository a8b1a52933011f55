"""The host-side fuzzer: random launch arguments against a few kernels.

    python tests/fuzz/fuzz_launch.py [--seed N] [--launches N | --seconds S]

Each launch draws its arguments from what users pass: arrays of every dtype
(and unsupported ones), shapes from 0-d to 3-d, strided, transposed,
reversed, zero-stride and read-only views, NumPy scalars, bools, floats
(NaN, inf), ints up to and past 64 bits, None, strings, objects that are no
array, CUDA look-alikes without a GPU, constexpr values of every kind, and
grids of every form. What must hold for every launch:

- it returns, or raises a coded Tegula error (an exception with a `code`
  "Exxxx"); anything else, or a crash or hang of the process, is a bug;
- memory the launch may not write is unchanged: read-only arrays (their
  `bytes`), and every byte of the arrays' buffers outside what the kernel
  was told to write (guard bytes around each buffer);
- a launch of well-formed arguments gives NumPy's result.

Arrays are views into padded buffers, and `n` never exceeds the elements
that follow a pointer in its buffer, so a kernel that honours its mask stays
inside the buffer whatever view it is given: a guard byte that changes is
Tegula's fault. The short run is tests/python/test_fuzz_launch.py (part of
`make test`); TEGULA_FUZZ_LAUNCH_SECONDS=600 there runs it for ten minutes.
On a failure the seed and the launch number reproduce it.
"""

from __future__ import annotations

import argparse
import math
import random
import re
import sys
import time

import numpy as np
from numpy.lib.stride_tricks import as_strided

import tegula
import tegula.language as tl

CODE = re.compile(r"E\d{4}")
GUARD = 64  # bytes of guard before and after each buffer
FILL = 0xA5


@tegula.jit
def add_one(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + 1, mask=mask)


@tegula.jit
def axpy(x_ptr, y_ptr, out_ptr, alpha, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, alpha * x + y, mask=mask)


@tegula.jit
def fill(out_ptr, value, n, BLOCK: tl.constexpr, TWICE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    v = tl.full((BLOCK,), value, tl.float32)
    if TWICE:
        v = v * 2
    tl.store(out_ptr + offs, v, mask=offs < n)


@tegula.jit
def count(counter_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.atomic_add(counter_ptr + offs * 0, 1, mask=offs < n)


GOOD_DTYPES = (np.float32, np.float64, np.int32, np.int64)
OTHER_DTYPES = (np.float16, np.int8, np.int16, np.uint8, np.uint16, np.uint32, np.uint64, np.bool_)
BAD_DTYPES = (np.complex64, np.complex128, object, "U4", "V8")


class Buffer:
    """A padded, guarded allocation and the views made of it."""

    def __init__(self, rng: random.Random, dtype, elements: int, read_only: bool):
        self.dtype = np.dtype(dtype)
        self.read_only = read_only
        item = self.dtype.itemsize
        if self.dtype.kind in "OUV":  # no view of raw bytes: a plain array, nothing to guard
            self.read_only = False
            self.raw = np.zeros(0, np.uint8)
            self.array = self.body = np.zeros(elements, self.dtype)
            self.before = b""
            return
        self.raw = np.full(GUARD * 2 + elements * item, FILL, np.uint8)
        self.body = self.raw[GUARD:GUARD + elements * item].view(self.dtype)
        if self.dtype.kind in "fiub":
            values = np.array([rng.uniform(-100, 100) for _ in range(elements)])
            self.body[:] = values.astype(self.dtype) if self.dtype.kind != "b" else values > 0
        if read_only:
            self.frozen = self.raw.tobytes()
            self.array = np.frombuffer(self.frozen, np.uint8)[GUARD:GUARD + elements * item].view(self.dtype)
        else:
            self.array = self.body
        self.before = (self.frozen if read_only else self.raw.tobytes())

    def room(self, view: np.ndarray) -> int:
        """Elements of the buffer from `view`'s first element to the end."""
        start = view.__array_interface__["data"][0] - self.array.__array_interface__["data"][0]
        return (self.array.nbytes - start) // self.dtype.itemsize

    def guards_intact(self) -> bool:
        now = self.frozen if self.read_only else self.raw.tobytes()
        if self.read_only:
            return now == self.before
        return now[:GUARD] == self.before[:GUARD] and now[-GUARD:] == self.before[-GUARD:]


class Fuzzer:
    def __init__(self, seed: int):
        self.rng = random.Random(seed)
        self.buffers: list[Buffer] = []

    # --- values -----------------------------------------------------------------------

    def array(self, dtype=None, minimum: int = 0):
        r = self.rng
        if dtype is None:
            pool = r.choice((GOOD_DTYPES, GOOD_DTYPES, OTHER_DTYPES, BAD_DTYPES))
            dtype = r.choice(pool)
        elements = max(minimum, r.choice((0, 1, 7, 64, 300, 1000)))
        buffer = Buffer(r, dtype, elements, read_only=r.random() < 0.15)
        self.buffers.append(buffer)
        base = buffer.array
        kind = r.choice(("whole", "whole", "slice", "step", "reverse", "2d", "transpose", "zero", "broadcast",
                         "zero_d", "overlap"))
        if elements < 2 or kind == "whole":
            return base
        if kind == "slice":
            return base[r.randrange(elements):]
        if kind == "step":
            return base[::r.choice((2, 3))]
        if kind == "reverse":
            return base[::-1]
        if kind in ("2d", "transpose") and elements % 4 == 0:
            shaped = base.reshape(4, -1)
            return shaped.T if kind == "transpose" else shaped
        if kind == "zero":
            return as_strided(base[:1], shape=(r.choice((2, 8)),), strides=(0,), writeable=not buffer.read_only)
        if kind == "broadcast":
            return np.broadcast_to(base[:1], (8,))
        if kind == "zero_d":
            return base[0:1].reshape(())
        if kind == "overlap" and elements >= 8:
            item = buffer.dtype.itemsize
            return as_strided(base, shape=(elements // 2, 2), strides=(item, item), writeable=not buffer.read_only)
        return base

    def scalar(self):
        r = self.rng
        return r.choice((
            lambda: r.randint(-1000, 1000), lambda: r.choice((0, 1, 16, 2**31 - 1, 2**31, -2**31 - 1)),
            lambda: r.choice((2**63 - 1, 2**63, 2**64 - 1, 2**64, -2**63, -2**63 - 1, 10**30)),
            lambda: r.uniform(-10, 10), lambda: r.choice((math.nan, math.inf, -math.inf, -0.0)),
            lambda: r.choice((True, False)), lambda: None, lambda: "text", lambda: b"bytes", lambda: [1, 2],
            lambda: object(), lambda: np.float32(r.uniform(-5, 5)), lambda: np.int64(r.randint(-9, 9)),
            lambda: np.complex64(1 + 2j), lambda: CudaLookAlike(),
        ))()

    def constexpr(self):
        r = self.rng
        return r.choice((
            lambda: r.choice((1, 2, 16, 32, 64, 128, 256)), lambda: r.choice((0, 3, -4, 2**40, 10**30)),
            lambda: r.choice((None, "x", 1.5, True, tl.float32, np.float32(2))),
        ))()

    def grid(self):
        r = self.rng
        return r.choice((
            lambda: (r.randint(1, 8),), lambda: (r.randint(1, 4), r.randint(1, 2)), lambda: r.randint(1, 4),
            lambda: (0,), lambda: (-1,), lambda: (2**31,), lambda: (2**70,), lambda: (1, 1, 1, 1), lambda: (),
            lambda: ("2",), lambda: (1.5,), lambda: [2], lambda: (lambda meta: (1,)), lambda: None,
        ))()

    # --- one launch ---------------------------------------------------------------------

    def well_formed(self):
        """A launch with arguments that must work, and its NumPy reference:
        (kernel, grid, args, kwargs, check)."""
        r = self.rng
        dtype = r.choice(GOOD_DTYPES)
        block = r.choice((16, 64, 128))
        x = self.array(dtype, minimum=1)
        while x.ndim == 0 or not x.flags.writeable or x.strides[0] <= 0 or 0 in x.strides:
            x = self.array(dtype, minimum=1)
        buffer = self.buffers[-1]
        out_buffer = Buffer(r, dtype, 1000, read_only=False)
        self.buffers.append(out_buffer)
        out = out_buffer.array[r.randrange(200):]
        n = r.randint(0, min(buffer.room(x), out_buffer.room(out)))
        # The kernel reads n elements of memory from x's first one on.
        start = (x.__array_interface__["data"][0] - buffer.array.__array_interface__["data"][0]) // x.itemsize
        source = buffer.array[start:start + n].copy()
        expected_out = out.copy()
        expected_out[:n] = source + dtype(1)
        grid = ((n + block - 1) // block,)

        def check():
            np.testing.assert_array_equal(out, expected_out)

        return add_one, grid, (x, out, n), {"BLOCK": block}, check

    def random_launch(self):
        r = self.rng
        kernel = r.choice((add_one, axpy, fill, count))
        params = {add_one: ("x_ptr", "out_ptr", "n", "BLOCK"), axpy: ("x_ptr", "y_ptr", "out_ptr", "alpha", "n",
                  "BLOCK"), fill: ("out_ptr", "value", "n", "BLOCK", "TWICE"), count: ("counter_ptr", "n", "BLOCK")}
        arrays, values = [], {}
        for name in params[kernel]:
            if name.endswith("_ptr"):
                value = self.array() if r.random() < 0.9 else self.scalar()
                if isinstance(value, np.ndarray):
                    arrays.append((value, self.buffers[-1]))
            elif name == "n":
                value = None  # set below, from the arrays' room
            elif name.isupper():
                value = self.constexpr() if r.random() < 0.3 else r.choice((16, 64) if name == "BLOCK" else (0, 1))
            else:
                value = self.scalar()
            values[name] = value
        rooms = [buffer.room(a) if a.size else 0 for a, buffer in arrays]
        room = min(rooms) if rooms else 0
        values["n"] = r.choice((r.randint(0, room), room)) if r.random() < 0.9 else self.scalar()
        n = values["n"]
        if isinstance(n, (int, float, np.integer, np.floating)) and n > room:
            # Past the buffer would be the fuzzer's own overflow, whatever the
            # number's type: `offs < 7.5` writes 8 elements, `offs < True` one.
            values["n"] = False if isinstance(n, bool) else type(n)(room)
        if isinstance(values["n"], (int, np.integer)) and not isinstance(values["n"], bool) and values["n"] < 0:
            values["n"] = 0
        grid = self.grid()
        # Programs past the first cover elements n masks off anyway.
        args = tuple(values[p] for p in params[kernel] if not p.isupper())
        kwargs = {p: values[p] for p in params[kernel] if p.isupper()}
        if r.random() < 0.05:
            kwargs["bogus"] = 1
        if r.random() < 0.05:
            args = args[:-1]
        return kernel, grid, args, kwargs, None


class CudaLookAlike:
    """An object that says its memory is on a CUDA device (there is none here)."""

    @property
    def __cuda_array_interface__(self):
        return {"shape": (8,), "typestr": "<f4", "data": (4096, False), "version": 3}


def run(seed: int, launches: int | None, seconds: float | None, verbose: bool = False) -> dict:
    fuzzer = Fuzzer(seed)
    outcomes = {"ok": 0, "checked": 0, "errors": {}}
    deadline = time.monotonic() + seconds if seconds else None
    i = 0
    while (launches is None or i < launches) and (deadline is None or time.monotonic() < deadline):
        fuzzer.buffers.clear()
        kernel, grid, args, kwargs, check = (fuzzer.well_formed() if fuzzer.rng.random() < 0.3
                                             else fuzzer.random_launch())
        where = f"seed {seed}, launch {i}: {kernel.__name__}[{grid!r}]{args!r} {kwargs!r}"
        try:
            kernel[grid](*args, **kwargs)
        except Exception as error:  # noqa: BLE001 -- the point is to classify everything
            code = getattr(error, "code", None)
            if not (isinstance(code, str) and CODE.fullmatch(code)):
                raise AssertionError(f"{where}: uncoded {type(error).__name__}: {error}") from error
            if code == "E0999":
                raise AssertionError(f"{where}: internal compiler error: {error}") from error
            outcomes["errors"][code] = outcomes["errors"].get(code, 0) + 1
        else:
            outcomes["ok"] += 1
            if check:
                check()
                outcomes["checked"] += 1
        for buffer in fuzzer.buffers:
            if not buffer.guards_intact():
                what = "a read-only buffer" if buffer.read_only else "memory outside the buffer"
                raise AssertionError(f"{where}: the launch wrote {what}")
        if verbose and i % 100 == 0:
            print(i, outcomes, flush=True)
        i += 1
    outcomes["launches"] = i
    return outcomes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--launches", type=int)
    parser.add_argument("--seconds", type=float)
    options = parser.parse_args()
    if options.launches is None and options.seconds is None:
        options.launches = 300
    print(run(options.seed, options.launches, options.seconds, verbose=True))


if __name__ == "__main__":
    main()
