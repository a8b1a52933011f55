"""Differential fuzzer: random Tegula kernels against a NumPy reference.

    python tools/fuzz/differential.py --seeds 0:200 [--cxx g++,clang++] [--debug] [--keep DIR]
                                      [--minimize] [--jobs N]

Each seed gives one kernel (`generate(seed)`), written as Python source and
imported, since `@tegula.jit` compiles a function's source:

- a shape: 1-D tiles over several programs, a row per program (softmax's
  shape), 2-D tiles over a 2-D grid, a row or column reduction of 2-D tiles
  (in one chunk, or accumulated over a `for k in range(0, K, BK)` loop with
  a runtime K), or one sum/max/min per program of a 1-D tile; blocks are
  powers of two from 1 to 1024 and the
  sizes are mostly no multiple of them (masked tails, sizes below one block);
  2-D arrays have a row pitch wider than their width;
- 1-4 input arrays of float16, bfloat16, float32, float64, int8-64, uint8,
  uint32, a scalar loaded per program (`tl.load(s_ptr + pid)`), runtime
  scalar arguments (Python floats and ints), the tile's own indices; the
  per-program scalar is loaded before or after the tiles;
- an expression DAG of depth up to 6 over them: + - * / // % & | ^ << >>,
  unary -, tl.abs, tl.minimum/maximum, tl.where on comparisons, casts
  between every pair of those types, tl.exp/log/sqrt on safe inputs, a
  program's tl.sum/max/min as a scalar for what follows. 40% of the kernels
  are short and nearly all in one type, as most kernels are;
- from a second random stream (so that a seed where none of them lands keeps
  its kernel): tl.dot of masked 2-D tiles (fp16, bf16, fp32, fp64, int8;
  acc=, out_dtype=, fp32 precision arguments, a transposed operand, operands
  converted after the load; over a runtime-K loop or in one chunk) feeding
  the DAG; tl.cumsum (dtype=, of comparisons), tl.cumprod, tl.associative_scan
  with @jit combine functions (also over a pair of tiles), reverse=True,
  tl.sort and tl.flip along either axis of a tile, masked lanes holding the
  identity or a value past the sort's end; fp8 round trips and fp8
  arithmetic (float8e4nv, float8e5); uint16 and uint64.

Every node carries `tl.static_assert(t.dtype == ...)` with the type the
reference expects, so a disagreement about Triton's promotion rules is a
compile error naming the node, not a wrong number.

The reference (`reference()`) evaluates the same DAG with NumPy following
Triton's numerics (docs/language.md): Triton's type promotion; float16 and
bfloat16 operations computed in float32 and rounded once; integers wrap;
`//` truncates and `%` takes the dividend's sign; casts round to nearest
even once (float to int truncates). Where Triton leaves a result undefined
the generator avoids it: divisors are never 0 or -1, shift amounts are below
the width, floats are clamped before they become integers. fp8 conversions
round on the format's grid (`fp8_round`, written here rather than taken from
a library, saturating as Tegula's docs state); a float cumprod multiplies
only 2, -0.5 and 1, so that every order gives its one answer.

Most DAGs have one correct answer, bit for bit. Where the math library
(exp, log, sqrt) or a float sum's order makes the answer inexact, the
reference runs again with those results nudged up and down (by two ulps,
or the sum's error bound: a float dot's or scan's in its accumulation
type, infinite where some order's partial sum could overflow), every float
`+ - * /` computed from such a result nudged by an ulp as well (its rounding
depends on where in its ulp the inexact value fell, which matters after a
cancellation), in eight runs (all up, all down, six of random signs); each
element's tolerance is twice the largest change that makes: cancellation
and comparisons that flip are accounted for element by element. Where an
inexact float becomes an integer, an element any run moved may move by
anything (a flipped integer, then wrapping arithmetic): its tolerance is
infinite, and only the configurations' agreement checks it.

Each compiler (`CXX`, part of the compile cache key) and debug mode run in a
worker process of their own. Outputs are checked against the reference,
the bytes around and between them (masked-off elements, the row pitch) must
keep their fill, and the configurations are compared with each other
(exactly, when no math-library call is involved). A mismatch prints the
seed, the kernel source, the types and sizes, the largest error and the
first bad indices; `--minimize` shrinks a failing kernel (sizes, blocks,
the DAG) while it still fails. tests/python/test_differential_fuzz.py runs
a fixed set of seeds; docs/testing.md says what the fuzzer found.
"""

from __future__ import annotations

import argparse
import dataclasses
import linecache
import math
import os
import pickle
import random
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import ml_dtypes
import numpy as np

# ---------------------------------------------------------------------------------------------------------------
# Types


@dataclass(frozen=True)
class DType:
    name: str  # the tl name
    kind: str  # 'f' float, 'i' signed, 'u' unsigned, 'b' bool
    bits: int
    mantissa: int = 0  # significand bits with the implicit one (floats)
    min_exp: int = 0  # frexp exponent of the smallest normal (floats)

    @property
    def np(self):
        return NUMPY[self.name]

    @property
    def is_float(self):
        return self.kind == "f"

    @property
    def is_int(self):
        return self.kind in "iu"

    @property
    def narrow(self):
        return self.is_float and self.bits < 32


NUMPY = {
    "float16": np.dtype(np.float16), "bfloat16": np.dtype(ml_dtypes.bfloat16), "float32": np.dtype(np.float32),
    "float64": np.dtype(np.float64), "int8": np.dtype(np.int8), "int16": np.dtype(np.int16),
    "int32": np.dtype(np.int32), "int64": np.dtype(np.int64), "uint8": np.dtype(np.uint8),
    "uint16": np.dtype(np.uint16), "uint32": np.dtype(np.uint32), "uint64": np.dtype(np.uint64),
    "int1": np.dtype(np.bool_),
}
T = {
    "float16": DType("float16", "f", 16, 11, -13), "bfloat16": DType("bfloat16", "f", 16, 8, -125),
    "float32": DType("float32", "f", 32, 24, -125), "float64": DType("float64", "f", 64, 53, -1021),
    "int8": DType("int8", "i", 8), "int16": DType("int16", "i", 16), "int32": DType("int32", "i", 32),
    "int64": DType("int64", "i", 64), "uint8": DType("uint8", "u", 8), "uint16": DType("uint16", "u", 16),
    "uint32": DType("uint32", "u", 32), "uint64": DType("uint64", "u", 64), "int1": DType("int1", "b", 1),
}
F16, BF16, F32, F64, I32, BOOL = T["float16"], T["bfloat16"], T["float32"], T["float64"], T["int32"], T["int1"]
FLOATS = [F16, BF16, F32, F64]
# The types the first generator drew from; uint16 and uint64 come in through `Generator.widen`, from a random
# stream of their own, so that a seed's kernel changes only where one of the newer features lands.
INTS = [T[n] for n in ("int8", "int16", "int32", "int64", "uint8", "uint32")]
VALUE_TYPES = FLOATS + INTS
WIDER_INTS = [T["uint16"], T["uint64"], T["int16"]]


@dataclass(frozen=True)
class Fp8:
    """An fp8 format as Tegula's docs state it (docs/language.md, "fp8"): conversions round to nearest even and
    saturate finite values and infinities at `largest`; NaN stays NaN."""
    name: str
    mantissa: int  # stored mantissa bits
    bias: int
    largest: float


FP8 = {"float8e4nv": Fp8("float8e4nv", 3, 7, 448.0), "float8e5": Fp8("float8e5", 2, 15, 57344.0)}


def integer_promote(a: DType, b: DType) -> DType:
    """Triton's integer_promote_impl (C's usual arithmetic conversions without the promotion to int)."""
    if a.kind == b.kind:
        return a if a.bits > b.bits else b
    unsigned, signed = (a, b) if a.kind == "u" else (b, a)
    return unsigned if unsigned.bits >= signed.bits else signed


def constant_type(value) -> DType:
    """Triton's to_tensor_type for the constants the generator writes."""
    if isinstance(value, bool):
        return BOOL
    if isinstance(value, int):
        return I32 if -2**31 <= value < 2**31 else T["int64"]
    return F32


def computation_type(a: DType, a_const: bool, b: DType, b_const: bool, div_or_mod=False) -> DType:
    """Triton's computation_type_impl: the type both operands of a binary operation convert to."""
    if a_const != b_const:
        const, tensor = (a, b) if a_const else (b, a)
        rank = {"b": 0, "i": 1, "u": 1, "f": 2}
        if rank[const.kind] <= rank[tensor.kind]:  # a constant of a lower or equal kind adopts the tensor's type
            return F32 if div_or_mod and tensor.narrow else tensor
    if F64 in (a, b):
        return F64
    if F32 in (a, b):
        return F32
    if F16 in (a, b):
        return F32 if div_or_mod else F16
    if a == BF16 and b == BF16:
        return F32 if div_or_mod else BF16
    if BF16 in (a, b):
        return F32
    assert a.is_int and b.is_int, (a, b)
    return integer_promote(a, b)


# ---------------------------------------------------------------------------------------------------------------
# Programs: a kernel's shape and its expression DAG

KINDS = ("1d", "rowvec", "2d", "rows", "cols", "partial")


@dataclass
class Node:
    """One value of the kernel. `op` is one of
    load (input array `attr`), pscalar (the scalar loaded per program from array `attr`), arg (runtime scalar
    `attr`), index (the global index along axis `attr`), const (a Python number `attr`, written inline), bin
    (`attr` is the operator or 'minimum'/'maximum'), cmp (`attr` is the comparison), where, neg, abs, exp, log,
    sqrt, cast (to `dtype`), clamp_cast (clamp a float to `attr` = (lo, hi), then cast to `dtype`), divisor
    (an integer made nonzero and not -1, as `dtype`), shift (an amount below `dtype`'s width, as `dtype`),
    reduce (`attr`: sum/max/min of the program's tile), dot (`attr` a DotSpec; `args` the initial accumulator,
    if any), scan (`attr` = (combine, tile axis, reverse, spelling, cumsum's `dtype=` or None)), sort (`attr` =
    (tile axis, descending)), flip (`attr` the tile axis), factor (a float made 2, -0.5 or 1: a cumprod's
    factors, exact in any order), fp8 (a conversion to the fp8 format `attr` and on to `dtype`), fp8bin (`attr`
    = (format, operator): both operands converted to the format, combined there, converted to `dtype`)."""
    op: str
    args: tuple
    dtype: str
    scalar: bool = False  # a 0-d value: a runtime scalar or a per-program one
    attr: object = None
    depth: int = 0

    @property
    def type(self) -> DType:
        return T[self.dtype]


@dataclass(frozen=True)
class DotSpec:
    operand: str  # the dtype of both operands
    out_dtype: str | None  # `out_dtype=` as written (None: left out)
    precision: str  # "" or the fp32 precision argument as written
    loop: bool  # accumulated over a K loop
    style: str  # "acc" (tl.dot(a, b, acc)), "acc=" (the keyword), "+=" (acc += tl.dot(a, b)), "" (no acc)
    b_trans: bool = False  # `db` is [N, K], loaded as [BN, BK] and transposed (tl.trans), as for x @ W^T
    stored: str | None = None  # the arrays' dtype when the loaded tiles convert to `operand` (None: the same)


def dot_type(operand: DType, out_dtype: str | None) -> DType:
    """tl.dot's result type (Triton's): int8 in int32, fp32 and bf16 in fp32, fp64 in fp64, fp16 in
    out_dtype (float32 by default)."""
    if operand.is_int:
        return I32
    if operand == F64:
        return F64
    if operand == F16 and out_dtype == "float16":
        return F16
    return F32


def cumsum_type(t: DType) -> DType:
    """tl.cumsum's result type (Triton's _pick_sum_dtype after promoting bfloat16)."""
    if t.is_int and t.bits < 32:
        return I32 if t.kind == "i" else T["uint32"]
    return F32 if t == BF16 else t


# Longest float cumprod per type: its factors (2, -0.5, 1) stay within the normal range.
CUMPROD_MAX = {"float16": 8, "bfloat16": 64, "float32": 64, "float64": 512}


@dataclass
class Program:
    seed: int
    kind: str
    blocks: tuple  # (BLOCK,) or (BM, BN)
    sizes: tuple  # (n,) or (M, N)
    pitch: int  # the row pitch of 2-D arrays (>= N)
    inputs: list  # dtype names of the input arrays
    pscalars: list  # dtype names of the per-program scalar arrays
    args: list  # (dtype name, value) of the runtime scalars
    nodes: list
    outputs: list  # node indices stored (one for reductions)
    out_types: list  # dtype name of each output array
    reduce: str = ""  # sum / max / min for the reduction kinds
    loop: bool = False  # reduction accumulated over a K loop
    other: object = 0  # `other=` of the input loads (None: left out)
    data_seed: int = 0
    # The per-program scalars are loaded after the tiles (inside the loop of a looped reduction), not before:
    # the tiles then live in arrays of their own before the arithmetic's loop (the ivdep miscompile's shape).
    late_scalars: bool = False
    # A dot's reduced size K and block BK (2-D tiles only; 0 without a dot): its operands are the arrays
    # `da` [M, K] and `db` [K, N], loaded masked with `other=0`.
    dot_k: int = 0
    dot_bk: int = 0

    @property
    def name(self):
        return f"diff_{self.seed}" if self.seed >= 0 else f"diff_m{-self.seed}"

    def grid(self):
        if self.kind in ("1d", "partial"):
            return (cdiv(self.sizes[0], self.blocks[0]),)
        if self.kind == "rowvec":
            return (self.sizes[0],)
        if self.kind == "2d":
            return (cdiv(self.sizes[0], self.blocks[0]), cdiv(self.sizes[1], self.blocks[1]))
        if self.kind == "rows":
            return (cdiv(self.sizes[0], self.blocks[0]),)
        return (cdiv(self.sizes[1], self.blocks[1]),)

    def element_shape(self):
        return self.sizes if len(self.sizes) == 2 else (self.sizes[0],)

    def out_shape(self):
        if self.kind in ("1d", "2d", "rowvec"):
            return self.element_shape()
        if self.kind == "rows":
            return (self.sizes[0],)
        if self.kind == "cols":
            return (self.sizes[1],)
        return (self.grid()[0],)

    @property
    def pitched(self):
        """Whether the outputs are 2-D arrays with the row pitch."""
        return self.kind in ("2d", "rowvec")

    @property
    def elementwise(self):
        return self.kind in ("1d", "2d", "rowvec")

    def along(self, tile_axis):
        """The array axis that a tile axis runs along, and the tile's block on it: what a scan, sort or flip
        of the tile covers at once."""
        if self.kind == "rowvec":
            return 1, self.blocks[0]
        if len(self.blocks) == 1:
            return 0, self.blocks[0]
        return tile_axis, self.blocks[tile_axis]

    def inexact_ops(self):
        """Operations whose results the math library or a sum's order make inexact (used nodes only)."""
        ops = {self.nodes[i].op for i in used_nodes(self)}
        return ops & {"exp", "log", "sqrt"}

    def float_sums(self):
        """Whether a float sum (whose order is the backend's) is among the used nodes or the final reduction."""
        nodes = [self.nodes[i] for i in used_nodes(self)]
        mid = any(n.op == "reduce" and n.attr == "sum" and n.type.is_float for n in nodes)
        mid = mid or any(n.op in ("dot", "scan") and n.type.is_float and (n.op == "dot" or n.attr[0] == "add")
                         for n in nodes)
        return mid or (self.reduce == "sum" and self.nodes[self.outputs[0]].type.is_float)

    def inexact_nodes(self) -> set:
        """The used nodes whose values the math library or a sum's order make inexact, and those computed
        from them."""
        memo = {}

        def inexact(i):
            if i not in memo:
                n = self.nodes[i]
                here = n.op in ("exp", "log", "sqrt") or (n.type.is_float and (
                    n.op == "dot" or (n.op == "reduce" and n.attr == "sum")
                    or (n.op == "scan" and n.attr[0] == "add")))
                memo[i] = here or any(inexact(j) for j in n.args)
            return memo[i]

        return {i for i in used_nodes(self) if inexact(i)}

    def truncates_inexact(self) -> bool:
        """Whether an inexact float becomes an integer (a cast or a clamped cast). One ulp there can move the
        integer by one, and wrapping integer arithmetic after it by anything: the nudged runs show which
        elements can move, not how far."""
        inexact = self.inexact_nodes()
        return any(n.op in ("cast", "clamp_cast") and n.type.is_int
                   and any(self.nodes[j].type.is_float and j in inexact for j in n.args)
                   for n in (self.nodes[i] for i in used_nodes(self)))

    def describe(self):
        return (f"kind={self.kind} blocks={self.blocks} sizes={self.sizes} pitch={self.pitch} grid={self.grid()} "
                f"inputs={self.inputs} pscalars={self.pscalars} args={[a[0] for a in self.args]} "
                f"outputs={self.out_types} reduce={self.reduce or '-'} loop={self.loop} "
                f"nodes={len(used_nodes(self))}")


def cdiv(a, b):
    return (a + b - 1) // b


def used_nodes(prog: Program) -> list:
    seen, stack = set(), list(prog.outputs)
    while stack:
        i = stack.pop()
        if i not in seen:
            seen.add(i)
            stack.extend(prog.nodes[i].args)
    return sorted(seen)


# ---------------------------------------------------------------------------------------------------------------
# The generator

FLOAT_CONSTANTS = [0.5, 1.5, 2.0, -3.0, 0.1, 0.75, 10.0, -0.25, 1.0]
INT_CONSTANTS = [0, 1, 2, 3, 5, 7, 13, 31, 100]
MAX_DEPTH = 6


def pow2(rng, lo, hi, weights=None):
    exps = list(range(lo, hi + 1))
    return 1 << (rng.choices(exps, weights=weights[lo:hi + 1] if weights else None)[0])


# Favour wide tiles (128 lanes and more), where the g++ ivdep miscompile showed.
BLOCK_WEIGHTS = [2, 1, 1, 1, 1, 2, 2, 5, 5, 4, 3]  # 2^0 .. 2^10


def size_along(rng, block, programs):
    """A size for `programs` programs of `block`: mostly a partial last block."""
    r = rng.random()
    if r < 0.15:
        return programs * block  # a multiple
    if r < 0.25 and block > 1:
        return rng.randint(1, block - 1)  # below one block
    return (programs - 1) * block + rng.randint(1, block)


class Generator:
    def __init__(self, seed: int):
        self.rng = random.Random(seed)
        # The features added later (dots, scans, sorts, flips, fp8, uint16/uint64) draw from a stream of their
        # own, so that where none lands a seed still gives the kernel it always gave.
        self.ext = random.Random(f"differential-ext-{seed}")
        self.seed = seed
        self.nodes: list[Node] = []

    def add(self, op, args, dtype: DType, scalar=False, attr=None) -> int:
        depth = 1 + max((self.nodes[a].depth for a in args), default=-1)
        self.nodes.append(Node(op, tuple(args), dtype.name, scalar, attr, depth))
        return len(self.nodes) - 1

    def node(self, i) -> Node:
        return self.nodes[i]

    def used_by(self, i) -> set:
        seen, stack = set(), [i]
        while stack:
            j = stack.pop()
            if j not in seen:
                seen.add(j)
                stack.extend(self.nodes[j].args)
        return seen

    # -- the shape

    def shape(self):
        rng = self.rng
        kind = rng.choices(KINDS, weights=[30, 15, 15, 15, 10, 15])[0]
        loop = False
        if kind in ("1d", "partial"):
            block = pow2(rng, 0, 10, BLOCK_WEIGHTS)
            blocks = (block,)
            sizes = (size_along(rng, block, rng.randint(1, 5)),)
        elif kind == "rowvec":  # a row per program, the row no longer than the block (softmax's shape)
            block = pow2(rng, 0, 10, BLOCK_WEIGHTS)
            blocks = (block,)
            sizes = (rng.randint(1, 5), size_along(rng, block, 1))
        elif kind == "2d":
            bm = pow2(rng, 0, 6)
            bn = pow2(rng, 0, min(10, 12 - bm.bit_length() + 1), BLOCK_WEIGHTS)
            blocks = (bm, bn)
            sizes = (size_along(rng, bm, rng.randint(1, 3)), size_along(rng, bn, rng.randint(1, 3)))
        else:
            reduced = pow2(rng, 0, 10, BLOCK_WEIGHTS)  # the block along the reduced axis
            kept = pow2(rng, 0, min(6, 12 - reduced.bit_length() + 1))
            loop = rng.random() < 0.5
            chunks = rng.randint(1, 4) if loop else 1
            reduced_size = size_along(rng, reduced, chunks)
            kept_size = size_along(rng, kept, rng.randint(1, 4))
            if kind == "rows":
                blocks, sizes = (kept, reduced), (kept_size, reduced_size)
            else:
                blocks, sizes = (reduced, kept), (reduced_size, kept_size)
        pitch = sizes[-1] + (rng.randint(0, 5) if len(sizes) == 2 else 0)
        return kind, blocks, sizes, pitch, loop

    # -- the DAG

    def pick(self, pool, want=None, rng=None):
        """An operand: recent nodes more often, below the depth limit, of the wanted kind ('f', 'i', None)."""
        rng = rng or self.rng
        choices = [i for i in pool if self.node(i).depth < MAX_DEPTH and self.node(i).dtype != "int1"
                   and (want is None or (self.node(i).type.is_float if want == "f" else self.node(i).type.is_int))]
        if not choices:
            return None
        if rng.random() < 0.5:  # mostly the newest value: chains, with side branches
            return choices[-1]
        weights = [1 + k for k in range(len(choices))]
        return rng.choices(choices, weights=weights)[0]

    def widen(self, t: DType) -> DType:
        """Some integer types become uint16, uint64 or int16, which the first generator never drew."""
        if t.is_int and self.ext.random() < 0.35:
            return self.ext.choice(WIDER_INTS)
        return t

    def some_type(self, kinds=VALUE_TYPES) -> DType:
        """The program's own type most of the time (kernels compute in one type), else any."""
        if self.home in kinds and self.rng.random() < (0.9 if self.short else 0.7):
            return self.home
        return self.widen(self.rng.choice(kinds))

    def operand(self, pool, want):
        i = self.pick(pool, want)
        if i is not None:
            return i
        i = self.pick(pool)
        if want == "f":
            return self.add("cast", [i], self.some_type(FLOATS), self.node(i).scalar)
        return self.to_int(i, self.some_type(INTS))

    def to_int(self, i, target: DType) -> int:
        n = self.node(i)
        if n.type.is_int:
            return self.add("cast", [i], target, n.scalar)
        bounds = (-100, 100) if target.kind == "i" else (0, 200)  # in every integer type's range
        return self.add("clamp_cast", [i], target, n.scalar, bounds)

    def constant(self, for_type: DType, int_only=False):
        if self.rng.random() < 0.1 and not int_only:  # a float constant against an integer makes float32
            return self.rng.choice(FLOAT_CONSTANTS)
        return self.rng.choice(FLOAT_CONSTANTS if for_type.is_float else INT_CONSTANTS)

    def binary(self, pool):
        rng = self.rng
        # integer-only operators are rarer in float kernels, whose values they would take out of their type;
        # short kernels mostly add, subtract and multiply what they loaded
        if self.short:
            weights = [6, 5, 6, 1, .3, .3, .3, .3, .3, .3, .3, 1, 1]
        elif self.home.is_int:
            weights = [6, 5, 6, 3, 2, 2, 2, 2, 2, 2, 2, 3, 3]
        else:
            weights = [6, 5, 6, 2, .5, 1, .5, .5, .5, .5, .5, 3, 3]
        op = rng.choices(["+", "-", "*", "/", "//", "%", "&", "|", "^", "<<", ">>", "minimum", "maximum"],
                         weights=weights)[0]
        want = "i" if op in ("//", "&", "|", "^", "<<", ">>") else None
        a = self.operand(pool, want)
        A = self.node(a)
        if op in ("//", "%") and A.type.is_int or op in ("<<", ">>"):
            b = self.operand(pool, "i")
            if op in ("<<", ">>"):
                b = self.add("shift", [b], A.type, self.node(b).scalar)
            else:
                b = self.add("divisor", [b], A.type, self.node(b).scalar)
            return self.add("bin", [a, b], A.type, A.scalar and self.node(b).scalar, op)
        if op == "%":  # a float dividend: fmod, any divisor
            want = None
        if rng.random() < 0.25 and op != "//":
            value = self.constant(A.type, int_only=want == "i")
            c = self.add("const", [], constant_type(value), True, value)
            args = [a, c] if rng.random() < 0.7 else [c, a]
        else:
            leaves = [i for i in pool if self.node(i).op in ("load", "pscalar", "arg", "index")
                      and (want is None or self.node(i).type.kind in "iu")]
            # kernels combine what they loaded: a leaf as often as a computed value
            b = rng.choice(leaves) if leaves and rng.random() < (0.8 if self.short else 0.4) else \
                self.operand(pool, want)
            B = self.node(b)
            if op == "/" and A.type.is_int and B.type.is_int and A.type.kind != B.type.kind:
                b = self.add("cast", [b], A.type, B.scalar)  # Triton refuses mixed signedness
            args = [a, b]
        return self.add_binary(op, args)

    def add_binary(self, op, args):
        X, Y = self.node(args[0]), self.node(args[1])
        xt, yt = X.type, Y.type
        if op in ("minimum", "maximum"):  # Triton compares bfloat16 as float32
            xt, yt = (F32 if xt == BF16 else xt), (F32 if yt == BF16 else yt)
        div = op in ("/", "%", "//")
        t = computation_type(xt, X.op == "const", yt, Y.op == "const", div)
        if op == "/" and t.is_int:
            t = F32
        return self.add("bin", args, t, X.scalar and Y.scalar, op)

    def where(self, pool):
        rng = self.rng
        a = self.pick(pool)
        if rng.random() < 0.3:
            value = self.constant(self.node(a).type)
            b = self.add("const", [], constant_type(value), True, value)
        else:
            b = self.pick(pool)
        A, B = self.node(a), self.node(b)
        cond = self.add("cmp", [a, b], BOOL, A.scalar and B.scalar, rng.choice(["<", "<=", ">", ">=", "==", "!="]))
        x, y = self.pick(pool), self.pick(pool)
        X, Y = self.node(x), self.node(y)
        t = computation_type(X.type, False, Y.type, False)
        return self.add("where", [cond, x, y], t, X.scalar and Y.scalar and self.node(cond).scalar)

    def unary(self, pool):
        rng = self.rng
        op = rng.choices(["neg", "abs", "exp", "log", "sqrt", "cast"], weights=[2, 2, 2, 2, 2, 4])[0]
        if op in ("neg", "abs"):
            a = self.pick(pool)
            return self.add(op, [a], self.node(a).type, self.node(a).scalar)
        if op == "cast":
            a = self.pick(pool)
            target = self.some_type() if rng.random() < 0.5 else self.widen(rng.choice(VALUE_TYPES))
            if target.is_int:
                return self.to_int(a, target)
            return self.add("cast", [a], target, self.node(a).scalar)
        a = self.operand(pool, "f")
        A = self.node(a)
        if op == "exp":
            return self.add("exp", [a], A.type, A.scalar)
        # log(|x| + 1) and sqrt(|x|): defined everywhere
        a = self.add("abs", [a], A.type, A.scalar)
        if op == "log":
            one = self.add("const", [], F32, True, 1.0)
            a = self.add_binary("+", [a, one])
        return self.add(op, [a], self.node(a).type, self.node(a).scalar)

    def reduction(self, pool):
        """A program's sum, max or min of a 1-D tile (its masked-off lanes neutral): a scalar for what follows,
        as softmax and normalizations use theirs."""
        a = self.pick([i for i in pool if not self.node(i).scalar]) if self.rng.random() < 0.8 else None
        if a is None:
            a = self.pick(pool)
        op = self.rng.choice(["sum", "max", "min"])
        return self.add("reduce", [a], reduction_type(self.node(a).type, op, False), True, op)

    # -- the features of the extension stream

    def tile_axes(self):
        return [0, 1] if self.kind in ("2d", "rows", "cols") else [0]

    def tile_length(self, axis):
        return self.blocks[axis] if len(self.tile_axes()) == 2 else self.blocks[0]

    def ordering(self, pool):
        """A scan, sort or flip of a tile along one of its axes; its masked-off lanes take a value that
        changes no result of a scan (the identity) or of a sort (past the end), as kernels load them."""
        ext = self.ext
        a = self.pick([i for i in pool if not self.node(i).scalar], rng=ext)
        if a is None:
            return None
        t = self.node(a).type
        axis = ext.choice(self.tile_axes())
        what = ext.choices(["cumsum", "cumprod", "scan", "sort", "flip"], weights=[3, 2, 3, 2, 1])[0]
        if what == "sort":
            return self.add("sort", [a], t, False, (axis, ext.random() < 0.5))
        if what == "flip":
            return self.add("flip", [a], t, False, axis)
        reverse = ext.random() < 0.4
        if what == "cumprod" and t.is_float:
            if self.tile_length(axis) > CUMPROD_MAX[t.name]:
                what = "cumsum"
            else:
                a = self.add("factor", [a], t, False)
        if what == "cumsum" and ext.random() < 0.15:  # a running count of the lanes where a comparison holds
            b = self.pick(pool, rng=ext)
            cond = self.add("cmp", [a, b], BOOL, False, ext.choice(["<", ">", "==", "!="]))
            return self.add("scan", [cond], I32, False, ("add", axis, reverse, "cumsum", None))
        if what == "scan" and t.is_int and ext.random() < 0.3:  # h = a * h + b over a tuple (wraps: exact)
            b = self.pick(pool, rng=ext)
            b = self.add("cast", [b], t, False) if self.node(b).type.is_int else self.to_int(b, t)
            return self.add("scan", [a, b], t, False, ("affine", axis, reverse, "associative_scan", None))
        if what == "cumsum":
            if ext.random() < 0.25:  # `dtype=`: the input converted to it first, within its kind
                res = ext.choice([F32, F64] if t.is_float else [I32, T["int64"], T["uint32"]])
                return self.add("scan", [a], res, False, ("add", axis, reverse, "cumsum", res.name))
            return self.add("scan", [a], cumsum_type(t), False, ("add", axis, reverse, "cumsum", None))
        if what == "cumprod":
            res = F32 if t == BF16 else t
            return self.add("scan", [a], res, False, ("mul", axis, reverse, "cumprod", None))
        # bfloat16's tl.maximum is float32 (Triton), which a combine function may not change its type to
        combines = ["add", "first"] + (["max", "min"] if t != BF16 else []) + (["xor"] if t.is_int else [])
        return self.add("scan", [a], t, False, (ext.choice(combines), axis, reverse, "associative_scan", None))

    def fp8(self, pool):
        """A value converted to an fp8 format and back to a float type, or two of them combined in fp8 (in
        float32, rounded back to the format)."""
        ext = self.ext
        a, fmt, target = self.pick(pool, rng=ext), ext.choice(list(FP8)), ext.choice(FLOATS)
        if ext.random() < 0.5:
            return self.add("fp8", [a], target, self.node(a).scalar, fmt)
        b = self.pick(pool, rng=ext)
        scalar = self.node(a).scalar and self.node(b).scalar
        return self.add("fp8bin", [a, b], target, scalar, (fmt, ext.choice(["+", "-", "*"])))

    def dot_shape(self, sizes, pitch):
        """Blocks and sizes for a dot: blocks of 16 to 64, masked tails on every axis most of the time."""
        ext = self.ext
        bm, bn, bk = (ext.choice([16, 32, 64]) for _ in range(3))
        if bm * bn > 2048:
            bn = 2048 // bm
        blocks = (bm, bn)
        sizes = (size_along(ext, bm, ext.randint(1, 2)), size_along(ext, bn, ext.randint(1, 2)))
        loop = ext.random() < 0.5
        k = size_along(ext, bk, ext.randint(1, 3) if loop else 1)
        return blocks, sizes, sizes[1] + ext.randint(0, 5), bk, k, loop

    def dot(self, loads, loop):
        """The dot node: operands of one type, its options, and an initial accumulator from a loaded tile."""
        ext = self.ext
        operand = ext.choices([F16, BF16, F32, T["int8"], F64], weights=[4, 3, 4, 3, 1])[0]
        outs = {"int8": [None, "int32"], "float16": [None, "float32", "float16"], "float64": [None]}
        out_dtype = ext.choice(outs.get(operand.name, [None, "float32"]))
        precision = ext.choice(["", "allow_tf32=False", 'input_precision="ieee"']) if operand == F32 else ""
        ret = dot_type(operand, out_dtype)
        style = ext.choice(["acc", "+="] if loop else ["", "acc", "acc="])
        args = []
        if style in ("acc", "acc=") and ext.random() < 0.6:
            init = ext.choice(loads)
            args = [self.to_int(init, ret) if ret.is_int else self.add("cast", [init], ret)]
        stored = {"float16": "float32", "bfloat16": "float32", "int8": "int32"}.get(operand.name)
        stored = stored if ext.random() < 0.3 else None
        spec = DotSpec(operand.name, out_dtype, precision, loop, style, ext.random() < 0.3, stored)
        return self.add("dot", args, ret, False, spec)

    def generate(self) -> Program:
        rng = self.rng
        kind, blocks, sizes, pitch, loop = self.shape()
        dot_k = dot_bk = 0
        with_dot = kind == "2d" and self.ext.random() < 0.6
        if with_dot:
            blocks, sizes, pitch, dot_bk, dot_k, dot_loop = self.dot_shape(sizes, pitch)
        self.kind, self.blocks = kind, blocks
        self.home = self.widen(rng.choices(VALUE_TYPES, weights=[6, 5, 3, 1, 1, 1, 2, 1, 1, 1])[0])
        # Short kernels: a few operations on what was loaded, nearly all in one type, as most kernels are.
        self.short = rng.random() < 0.4
        inputs = [self.some_type().name for _ in range(rng.randint(1, 4))]
        pool = [self.add("load", [], T[d], False, k) for k, d in enumerate(inputs)]
        pscalars, args = [], []
        if rng.random() < 0.6:
            pscalars.append(self.some_type().name)
            pool.append(self.add("pscalar", [], T[pscalars[0]], True, 0))
        for k in range(rng.choice([0, 0, 1, 2])):
            if rng.random() < 0.5:
                args.append(("float32", round(rng.uniform(-4, 4), rng.choice([0, 1, 3, 7]))))
            else:
                args.append(("int32", rng.randint(-50, 50)))
            pool.append(self.add("arg", [], T[args[-1][0]], True, k))
        if rng.random() < 0.3:
            axis = rng.randrange(len(sizes)) if kind != "rowvec" else 1
            pool.append(self.add("index", [], I32, False, axis))
        one_d = kind in ("1d", "rowvec", "partial")
        dot = self.dot(pool[:len(inputs)], dot_loop) if with_dot else None
        if dot is not None:
            pool.append(dot)
        if pscalars and rng.random() < 0.5:  # a tile against the program's scalar, as in `x - mean`
            loads = pool[:len(inputs)]
            s = next(i for i in pool if self.node(i).op == "pscalar")
            pair = [rng.choice(loads), s]
            pool.append(self.add_binary(rng.choice(["+", "-", "*"]), pair if rng.random() < 0.5 else pair[::-1]))
        for _ in range(rng.randint(1, 4) if self.short else rng.randint(1, 12)):
            r = rng.random() * (0.7 if self.short else 1.0)
            if one_d and r < 0.08:
                pool.append(self.reduction(pool))
            elif r < 0.55:
                pool.append(self.binary(pool))
            elif r < 0.75:
                pool.append(self.unary(pool))
            else:
                pool.append(self.where(pool))
            if self.ext.random() < 0.2:
                extra = self.ordering(pool)
                if extra is not None:
                    pool.append(extra)
            if self.ext.random() < 0.05:
                pool.append(self.fp8(pool))
        final = pool[-1]
        if dot is not None and dot not in self.used_by(final):  # a dot feeds the elementwise DAG
            final = self.add_binary(self.ext.choice(["+", "-", "*", "maximum"]), [final, dot])
        for leaf in pool[:len(inputs) + len(pscalars)]:  # most of what the kernel loads, it uses
            if leaf not in self.used_by(final) and rng.random() < 0.7:
                op = rng.choice(["+", "-", "*", "minimum", "maximum"])
                final = self.add_binary(op, [final, leaf] if rng.random() < 0.5 else [leaf, final])
        if self.node(final).scalar:  # a tile, so that every element is its own
            tile = self.pick([i for i in pool if not self.node(i).scalar])
            final = self.add_binary("+", [final, tile])
        outputs = [final]
        reduce = ""
        if kind in ("rows", "cols", "partial"):
            reduce = rng.choice(["sum", "sum", "max", "min"])
            out_types = [reduction_type(self.node(final).type, reduce, loop).name]
        else:
            out_types = [store_type(rng, self.node(final).type).name]
            if rng.random() < 0.3:  # a second output: an intermediate tile
                tiles = [i for i in pool[:-1] if not self.node(i).scalar and self.node(i).dtype != "int1"]
                if tiles:
                    outputs.append(rng.choice(tiles))
                    out_types.append(store_type(rng, self.node(outputs[-1]).type).name)
        other = rng.choice([0, 0, 1, None])
        return Program(self.seed, kind, blocks, sizes, pitch, inputs, pscalars, args, self.nodes, outputs,
                       out_types, reduce, loop, other, data_seed=rng.randrange(2**31),
                       late_scalars=rng.random() < 0.5, dot_k=dot_k, dot_bk=dot_bk)


def reduction_type(t: DType, reduce: str, loop: bool) -> DType:
    """tl.sum's / tl.max's result type (Triton), or the loop accumulator's."""
    if reduce == "sum":
        r = (I32 if t.kind == "i" else T["uint32"]) if t.is_int and t.bits < 32 else t
        return F32 if loop and r.narrow else r
    if t.bits < 32:
        return F32 if t.is_float else I32
    return t


def store_type(rng, t: DType) -> DType:
    """The output array's type: mostly the value's, sometimes one tl.store converts to (never float to int)."""
    if rng.random() < 0.75:
        return t
    return rng.choice(FLOATS if t.is_float else VALUE_TYPES)


def generate(seed: int) -> Program:
    return Generator(seed).generate()


# ---------------------------------------------------------------------------------------------------------------
# Source text


def literal(value):
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else ('float("-inf")' if value < 0 else 'float("inf")')
    return str(value)


def expression(prog: Program, i: int, names) -> str:
    n = prog.nodes[i]
    a = [names[j] for j in n.args]
    if n.op == "bin":
        if n.attr in ("minimum", "maximum"):
            return f"tl.{n.attr}({a[0]}, {a[1]})"
        return f"{a[0]} {n.attr} {a[1]}"
    if n.op == "cmp":
        return f"{a[0]} {n.attr} {a[1]}"
    if n.op == "where":
        return f"tl.where({a[0]}, {a[1]}, {a[2]})"
    if n.op == "neg":
        return f"-{a[0]}"
    if n.op in ("abs", "exp", "log", "sqrt"):
        return f"tl.{n.op}({a[0]})"
    if n.op == "cast":
        return f"{a[0]}.to(tl.{n.dtype})"
    if n.op == "clamp_cast":
        lo, hi = n.attr
        return f"tl.minimum(tl.maximum({a[0]}, {lo}.0), {hi}.0).to(tl.{n.dtype})"
    if n.op == "divisor":
        src = f"{a[0]}.to(tl.{n.dtype})"
        if n.type.kind == "u":
            return f"tl.where({src} == 0, 3, {src})"
        return f"tl.where(({src} == 0) | ({src} == -1), 3, {src})"
    if n.op == "shift":
        return f"({a[0]}.to(tl.{n.dtype}) & {n.type.bits - 1})"
    if n.op == "reduce":
        return f"tl.{n.attr}(tl.where(mask, {a[0]}, {neutral(prog.nodes[n.args[0]].type, n.attr)}), axis=0)"
    if n.op == "fp8":
        return f"{a[0]}.to(tl.{n.attr}).to(tl.{n.dtype})"
    if n.op == "fp8bin":
        fmt, op = n.attr
        return f"({a[0]}.to(tl.{fmt}) {op} {a[1]}.to(tl.{fmt})).to(tl.{n.dtype})"
    if n.op == "factor":
        return f"tl.where({a[0]} > 0.5, 2.0, tl.where({a[0]} < -0.5, -0.5, 1.0)).to(tl.{n.dtype})"
    if n.op in ("scan", "sort", "flip"):
        return ordering_expression(prog, i, names)
    raise AssertionError(n.op)


def ordering_fill(prog: Program, i: int):
    """The value a scan's, sort's or flip's masked-off lanes hold: the combine's identity, or for a sort one
    that goes past the end; a flip's and a `first` scan's are seen in the result (0)."""
    n = prog.nodes[i]
    t = prog.nodes[n.args[0]].type
    if t == BOOL:
        return 0
    low = float("-inf") if t.is_float else int(np.iinfo(t.np).min)
    high = float("inf") if t.is_float else int(np.iinfo(t.np).max)
    if n.op == "sort":
        return low if n.attr[1] else high
    if n.op == "scan":
        return {"mul": 1, "affine": 1, "max": low, "min": high}.get(n.attr[0], 0)
    return 0


def ordering_expression(prog: Program, i: int, names) -> str:
    n = prog.nodes[i]
    src = prog.nodes[n.args[0]]
    fill = literal(ordering_fill(prog, i))
    if src.op == "load":  # loaded with the fill as `other=`, as kernels do
        x = f"tl.load(x{src.attr}_ptr + offs, mask=mask, other={fill})"
    elif src.type == BOOL:
        x = f"mask & {names[n.args[0]]}"
    else:
        x = f"tl.where(mask, {names[n.args[0]]}, {fill})"
    if n.op == "scan" and n.attr[0] == "affine":  # the identity (1, 0) in masked lanes
        x = f"({x}, tl.where(mask, {names[n.args[1]]}, 0))"
    if n.op == "flip":
        return f"tl.flip({x}, dim={n.attr})"
    if n.op == "sort":
        zero = " + 0.0" if src.type.is_float else ""  # -0.0 and 0.0 sort as equals: one of them only
        return f"tl.sort({x}{zero}, dim={n.attr[0]}, descending={n.attr[1]})"
    combine, axis, reverse, spelling, dtype = n.attr
    rev = (", reverse=True" if reverse else "") + (f", dtype=tl.{dtype}" if dtype else "")
    if combine == "affine":
        return f"tl.associative_scan({x}, {axis}, combine_{combine}{rev})[1]"
    if spelling == "associative_scan":
        return f"tl.associative_scan({x}, {axis}, combine_{combine}{rev})"
    return f"tl.{spelling}({x}, axis={axis}{rev})"


COMBINE_SOURCE = {"add": "a + b", "max": "tl.maximum(a, b)", "min": "tl.minimum(a, b)", "xor": "a ^ b",
                  "first": "a", "affine": "a1 * a2, a2 * b1 + b2"}


def dot_lines(prog: Program, i: int, names) -> list:
    """A dot of the masked `da` and `db` tiles (over a K loop or in one chunk) into node i's name."""
    n = prog.nodes[i]
    spec: DotSpec = n.attr
    name = f"t{i}"
    opts = (f", out_dtype=tl.{spec.out_dtype}" if spec.out_dtype else "") + \
        (f", {spec.precision}" if spec.precision else "")
    init = names[n.args[0]] if n.args else None
    kk = "(k + ks)" if spec.loop else "ks"
    loads = [f"da = tl.load(da_ptr + rows * K + {kk}[None, :], mask=(rows < M) & ({kk}[None, :] < K), other=0)"]
    if spec.b_trans:
        loads.append(f"db = tl.trans(tl.load(db_ptr + tl.trans(cols) * K + {kk}[None, :], "
                     f"mask=(tl.trans(cols) < N) & ({kk}[None, :] < K), other=0))")
    else:
        loads.append(f"db = tl.load(db_ptr + {kk}[:, None] * N + cols, mask=({kk}[:, None] < K) & (cols < N), other=0)")
    if spec.stored:
        loads = [line.replace(" = tl.", " = (tl.", 1) + f").to(tl.{spec.operand})" for line in loads]
    lines = ["ks = tl.arange(0, BK)"]
    if not spec.loop:
        acc = "" if init is None else (f", acc={init}" if spec.style == "acc=" else f", {init}")
        return lines + loads + [f"{name} = tl.dot(da, db{acc}{opts})"]
    lines.append(f"{name} = {init}" if init else f"{name} = tl.zeros((BM, BN), dtype=tl.{n.dtype})")
    lines.append("for k in range(0, K, BK):")
    step = f"{name} += tl.dot(da, db{opts})" if spec.style == "+=" else f"{name} = tl.dot(da, db, {name}{opts})"
    return lines + ["    " + line for line in loads + [step]]


def render(prog: Program) -> str:
    """The kernel's source text: one @tegula.jit function `kernel`."""
    used = used_nodes(prog)
    names = {}
    params = [f"out{k}_ptr" for k in range(len(prog.outputs))]
    params += [f"x{k}_ptr" for k in range(len(prog.inputs))]
    params += [f"s{k}_ptr" for k in range(len(prog.pscalars))]
    params += [f"a{k}" for k in range(len(prog.args))]
    if prog.dot_bk:
        params += ["da_ptr", "db_ptr", "K"]
    two_d = len(prog.sizes) == 2
    if prog.kind == "rowvec":
        params += ["M", "N", "pitch", "BLOCK: tl.constexpr"]
    else:
        params += ["M", "N", "pitch", "BM: tl.constexpr", "BN: tl.constexpr"] if two_d else ["n", "BLOCK: tl.constexpr"]
    if prog.dot_bk:
        params.append("BK: tl.constexpr")
    body, pre = [], []  # `pre`: before the loop of a looped reduction
    other = "" if prog.other is None else f", other={prog.other}"
    for i in used:
        n = prog.nodes[i]
        if n.op == "load":
            names[i] = f"x{n.attr}"
            body.append(f"x{n.attr} = tl.load(x{n.attr}_ptr + offs, mask=mask{other})")
        elif n.op == "pscalar":
            names[i] = f"s{n.attr}"
            (body if prog.late_scalars else pre).append(f"s{n.attr} = tl.load(s{n.attr}_ptr + pid)")
        elif n.op == "arg":
            names[i] = f"a{n.attr}"
        elif n.op == "index":
            names[i] = "offs" if not two_d else ("rows" if n.attr == 0 else "cols")
        elif n.op == "const":
            names[i] = literal(n.attr)
        elif n.op == "dot":
            names[i] = f"t{i}"
            body.extend(dot_lines(prog, i, names))
        else:
            names[i] = f"t{i}"
            body.append(f"t{i} = {expression(prog, i, names)}")
        if n.op not in ("const", "arg"):
            body.append(f'tl.static_assert({names[i]}.dtype == tl.{n.dtype}, "{names[i]}: {n.dtype}")')
        elif n.op == "arg":
            pre.append(f'tl.static_assert({names[i]}.dtype == tl.{n.dtype}, "{names[i]}: {n.dtype}")')
    lines = ["import tegula", "import tegula.language as tl", "", ""]
    for combine in sorted({prog.nodes[i].attr[0] for i in used if prog.nodes[i].op == "scan"
                           and prog.nodes[i].attr[3] == "associative_scan"}):
        inputs = "a1, b1, a2, b2" if combine == "affine" else "a, b"
        lines += ["@tegula.jit", f"def combine_{combine}({inputs}):", f"    return {COMBINE_SOURCE[combine]}", "", ""]
    lines += ["@tegula.jit", f"def kernel({', '.join(params)}):"]
    head = len(lines)
    out = [names[i] for i in prog.outputs]
    k = prog.kind
    if k == "1d":
        lines += ["pid = tl.program_id(0)", "offs = pid * BLOCK + tl.arange(0, BLOCK)", "mask = offs < n"]
        lines += pre + body
        lines += [f"tl.store(out{j}_ptr + offs, {o}, mask=mask)" for j, o in enumerate(out)]
    elif k == "rowvec":
        lines += ["pid = tl.program_id(0)", "cols = tl.arange(0, BLOCK)", "mask = cols < N", "offs = pid * pitch + cols"]
        lines += pre + body
        lines += [f"tl.store(out{j}_ptr + offs, {o}, mask=mask)" for j, o in enumerate(out)]
    elif k == "2d":
        lines += ["pid = tl.program_id(0)", "rows = pid * BM + tl.arange(0, BM)[:, None]",
                  "cols = tl.program_id(1) * BN + tl.arange(0, BN)[None, :]", "mask = (rows < M) & (cols < N)",
                  "offs = rows * pitch + cols"]
        lines += pre + body
        lines += [f"tl.store(out{j}_ptr + offs, {o}, mask=mask)" for j, o in enumerate(out)]
    elif k == "partial":
        lines += ["pid = tl.program_id(0)", "offs = pid * BLOCK + tl.arange(0, BLOCK)", "mask = offs < n"]
        lines += pre + body
        lines += [f"r = tl.{prog.reduce}(tl.where(mask, {out[0]}, {neutral(prog.nodes[prog.outputs[0]].type, prog.reduce)}), axis=0)",
                  f'tl.static_assert(r.dtype == tl.{prog.out_types[0]}, "r: {prog.out_types[0]}")',
                  "tl.store(out0_ptr + pid, r)"]
    else:
        rows_kind = k == "rows"
        axis = 1 if rows_kind else 0
        kept = "rows = pid * BM + tl.arange(0, BM)[:, None]" if rows_kind else \
            "cols = pid * BN + tl.arange(0, BN)[None, :]"
        step, limit = ("BN", "N") if rows_kind else ("BM", "M")
        moving = (f"cols = k + tl.arange(0, BN)[None, :]" if rows_kind else f"rows = k + tl.arange(0, BM)[:, None]")
        chunk = ["mask = (rows < M) & (cols < N)", "offs = rows * pitch + cols"] + body
        part = f"tl.{prog.reduce}(tl.where(mask, {out[0]}, {neutral(prog.nodes[prog.outputs[0]].type, prog.reduce)}), axis={axis})"
        kept_1d = ("out_offs = pid * BM + tl.arange(0, BM)" if rows_kind else "out_offs = pid * BN + tl.arange(0, BN)")
        kept_n = "M" if rows_kind else "N"
        acc_t = prog.out_types[0]
        lines += ["pid = tl.program_id(0)", kept] + pre
        if prog.loop:
            width = "BM" if rows_kind else "BN"
            lines.append(f"acc = tl.full([{width}], {neutral(prog.nodes[prog.outputs[0]].type, prog.reduce)}, tl.{acc_t})")
            lines.append(f"for k in range(0, {limit}, {step}):")
            combine = {"sum": f"acc + {part}", "max": f"tl.maximum(acc, {part})",
                       "min": f"tl.minimum(acc, {part})"}[prog.reduce]
            lines += ["    " + line for line in [moving] + chunk + [f"acc = {combine}"]]
        else:
            lines += [moving.replace("k + ", "")] + chunk + [f"acc = {part}"]
        lines += [f'tl.static_assert(acc.dtype == tl.{acc_t}, "acc: {acc_t}")', kept_1d,
                  f"tl.store(out0_ptr + out_offs, acc, mask=out_offs < {kept_n})"]
    return "\n".join(lines[:head] + ["    " + line for line in lines[head:]]) + "\n"


def neutral(t: DType, reduce: str):
    """The value masked-off lanes take in a reduction: one that changes no result."""
    if reduce == "sum":
        return "0"
    low = reduce == "max"
    if t.is_float:
        return 'float("-inf")' if low else 'float("inf")'
    info = np.iinfo(t.np)
    return str(info.min if low else info.max)


# ---------------------------------------------------------------------------------------------------------------
# Inputs


def random_values(rng: np.random.Generator, t: DType, count: int) -> np.ndarray:
    if t.is_float:
        mode = rng.integers(4)
        if mode == 0:
            v = rng.standard_normal(count)
        elif mode == 1:
            v = rng.integers(-8, 9, count).astype(np.float64)  # exact values: ties, equal operands
        elif mode == 2:
            v = rng.standard_normal(count) * 10.0 ** rng.integers(-3, 3, count)
        else:
            v = rng.uniform(-3, 3, count)
        if rng.random() < 0.15:  # a few special values
            special = np.array([np.inf, -np.inf, np.nan, -0.0, 0.0, 1e-30 if t != F16 else 1e-7])
            pick = rng.random(count) < 0.05
            v[pick] = rng.choice(special, pick.sum())
        return round_float(v, t)
    info = np.iinfo(t.np)
    mode = rng.integers(3)
    if mode == 0:
        lo, hi = (0, 20) if t.kind == "u" else (-10, 11)
        return rng.integers(lo, hi, count).astype(t.np)
    if mode == 1:
        return rng.integers(info.min, info.max, count, dtype=t.np, endpoint=True)
    v = rng.integers(info.min, info.max, count, dtype=t.np, endpoint=True)
    small = rng.random(count) < 0.5
    v[small] = rng.integers(0, 10, small.sum()).astype(t.np)
    return v


def make_inputs(prog: Program) -> dict:
    """The input arrays (2-D ones with their row pitch) and per-program scalars: a function of the program."""
    rng = np.random.default_rng(prog.data_seed)
    shape = prog.element_shape()
    rows = shape[0] if len(shape) == 2 else 1
    count = rows * prog.pitch if len(shape) == 2 else shape[0]
    arrays = [random_values(rng, T[d], count) for d in prog.inputs]
    if len(shape) == 2:
        arrays = [a.reshape(rows, prog.pitch) for a in arrays]
    scalars = [random_values(rng, T[d], prog.grid()[0]) for d in prog.pscalars]
    dot = [n.attr for n in prog.nodes if n.op == "dot"]
    if dot:  # a stream of their own: the other arrays stay those of the kernel without a dot
        rng = np.random.default_rng([prog.data_seed, 1])
        t = T[dot[0].stored or dot[0].operand]
        M, N = prog.sizes
        dot = [random_values(rng, t, M * prog.dot_k).reshape(M, prog.dot_k),
               random_values(rng, t, prog.dot_k * N).reshape(prog.dot_k, N)]
        if prog.nodes[next(i for i, n in enumerate(prog.nodes) if n.op == "dot")].attr.b_trans:
            dot[1] = np.ascontiguousarray(dot[1].T)
    return {"arrays": arrays, "pscalars": scalars, "dot": dot}


# ---------------------------------------------------------------------------------------------------------------
# The reference

def ulp(v64: np.ndarray, t: DType) -> np.ndarray:
    """One unit in the last place of float type `t` at each value (finite values)."""
    _, e = np.frexp(np.abs(v64))
    return np.ldexp(1.0, np.maximum(e, t.min_exp) - t.mantissa)


def round_to_odd_f32(v: np.ndarray) -> np.ndarray:
    """float64 -> float32 rounding to odd: rounding the result to any narrower type rounds `v` once."""
    with np.errstate(over="ignore", invalid="ignore"):
        r = v.astype(np.float32)
        back = r.astype(np.float64)
        inexact = np.isfinite(v) & (back != v)
        big = inexact & ~np.isfinite(r)
        r = np.where(big, np.copysign(np.float32(np.finfo(np.float32).max), v).astype(np.float32), r)
        back = r.astype(np.float64)
        toward_zero = np.where(inexact & (np.abs(back) > np.abs(v)), np.nextafter(r, np.float32(0)), r)
        bits = toward_zero.view(np.uint32) | np.where(inexact, np.uint32(1), np.uint32(0))
        return bits.view(np.float32)


def round_float(v64, t: DType) -> np.ndarray:
    """float64 values rounded once (to nearest even) to float type `t`."""
    v64 = np.asarray(v64, np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        if t == F64:
            return v64.copy()
        if t == F32 or t == F16:
            return v64.astype(t.np)  # NumPy rounds float64 to float16 directly
        return round_to_odd_f32(v64).astype(t.np)


def fp8_round(v: np.ndarray, src: DType, fmt: Fp8) -> np.ndarray:
    """Values of type `src` converted to fp8 format `fmt` (and back, exactly, as float64): float64 through
    float32 rounded to odd, then to nearest even on the format's grid (subnormals included), magnitudes
    beyond the largest finite value (infinities too) saturating at it with their sign, NaN staying NaN."""
    with np.errstate(all="ignore"):
        v64 = round_to_odd_f32(v.astype(np.float64)).astype(np.float64) if src == F64 else v.astype(np.float64)
        a = np.abs(v64)
        _, e = np.frexp(np.where(np.isfinite(a), a, 1.0))
        exponent = np.maximum(e - 1, 1 - fmt.bias)  # of the binade; the subnormals share the lowest one's step
        step = np.ldexp(1.0, exponent - fmt.mantissa)
        r = np.where(np.isfinite(a), np.rint(a / step) * step, np.inf)
        r = np.copysign(np.minimum(r, fmt.largest), v64)
        return np.where(np.isnan(v64), np.nan, r)


def convert(v: np.ndarray, src: DType, dst: DType) -> np.ndarray:
    """Tegula's (Triton's) conversion of values of type `src` to `dst`."""
    if src == dst:
        return v
    with np.errstate(all="ignore"):
        if src == BOOL:
            return v.astype(np.uint8).astype(dst.np) if dst != BF16 else round_float(v.astype(np.float64), dst)
        if dst.is_float:
            if src.is_int and dst == F32:
                return v.astype(np.float32)
            return round_float(v.astype(np.float64), dst)
        if src.is_float:  # in range: the generator clamps first
            return np.trunc(v.astype(np.float64)).astype(dst.np)
        return v.astype(dst.np)  # integers wrap


def constant_value(value, t: DType) -> np.ndarray:
    if t.is_float:
        return round_float(np.float64(value), t)
    return np.array(value, dtype=t.np)


def float_op(op, x, y, t: DType):
    """A float operation in type `t`: 16-bit floats compute in float32 and round once."""
    wide = F32 if t.narrow else t
    a, b = x.astype(wide.np), y.astype(wide.np)
    r = {"+": np.add, "-": np.subtract, "*": np.multiply, "/": np.divide, "%": np.fmod,
         "minimum": np.fmin, "maximum": np.fmax}[op](a, b)
    return r.astype(t.np) if t.narrow else r


def int_op(op, a, b, t: DType):
    if op == "//":
        r = np.fmod(a, b)
        return ((a - r) // b).astype(t.np)  # exact: a - r is a multiple of b
    fn = {"+": np.add, "-": np.subtract, "*": np.multiply, "%": np.fmod, "&": np.bitwise_and, "|": np.bitwise_or,
          "^": np.bitwise_xor, "<<": np.left_shift, ">>": np.right_shift, "minimum": np.minimum,
          "maximum": np.maximum}[op]
    return fn(a, b).astype(t.np)


MATH = {"exp": np.exp, "log": np.log, "sqrt": np.sqrt}
COMPARE = {"<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal, "==": np.equal,
           "!=": np.not_equal}


class Reference:
    """Evaluates a program's DAG over every element at once. `nudge(i, values, t)` may change the result of
    an inexact operation (node i), for the tolerance runs."""

    def __init__(self, prog: Program, inputs: dict, nudge=None):
        self.prog, self.nudge = prog, nudge
        self.shape = prog.element_shape()
        if len(self.shape) == 2:
            M, N = self.shape
            self.arrays = [a[:, :N] for a in inputs["arrays"]]
            if prog.kind == "rowvec":
                pid = np.arange(M)[:, None]
            else:
                bm, bn = prog.blocks
                pid = (np.arange(M) // bm)[:, None] if prog.kind in ("2d", "rows") else (np.arange(N) // bn)[None, :]
        else:
            self.arrays = inputs["arrays"]
            pid = np.arange(self.shape[0]) // prog.blocks[0]
        self.pid = np.broadcast_to(pid, self.shape)
        self.pscalars = inputs["pscalars"]
        self.dot_arrays = inputs.get("dot")
        self.values = {}
        self.downstream = prog.inexact_nodes() if nudge else set()

    def value(self, i):
        if i not in self.values:
            v = self.evaluate(i)
            n = self.prog.nodes[i]
            # The rounding of an operation on an inexact value depends on where in its ulp that value fell,
            # which the nudges at the inexact node alone sample too sparsely (a cancellation after it, as
            # t - ((r + t) + a), shows only the later roundings): each such operation is nudged by an ulp too.
            if i in self.downstream and n.op == "bin" and n.attr in ("+", "-", "*", "/") and n.type.is_float:
                v = self.nudge(i, v, n.type, ulp(v.astype(np.float64), n.type))
            self.values[i] = v
        return self.values[i]

    def operands(self, n: Node, t: DType):
        """The operands of a binary node converted to its computation type, broadcast to the element shape."""
        out = []
        for j in n.args:
            a = self.prog.nodes[j]
            if a.op == "const":
                out.append(np.broadcast_to(constant_value(a.attr, t), self.shape))
            else:
                out.append(convert(self.value(j), a.type, t))
        return out

    def evaluate(self, i):
        prog, n = self.prog, self.prog.nodes[i]
        t = n.type
        with np.errstate(all="ignore"):
            if n.op == "load":
                return self.arrays[n.attr]
            if n.op == "pscalar":
                return self.pscalars[n.attr][self.pid]
            if n.op == "arg":
                name, value = prog.args[n.attr]
                return np.broadcast_to(constant_value(value, T[name]), self.shape)
            if n.op == "index":
                idx = np.arange(self.shape[n.attr]).astype(np.int32)
                return np.broadcast_to(idx[:, None] if n.attr == 0 and len(self.shape) == 2 else idx, self.shape)
            if n.op == "bin":
                op = n.attr
                xt = self.operand_type(n)
                x, y = self.operands(n, xt)
                if xt.is_float:
                    r = float_op(op, x, y, xt)
                    return convert(r, F32, t) if op in ("minimum", "maximum") and r.dtype == np.float32 else r
                return int_op(op, x, y, t)
            if n.op == "cmp":
                X, Y = (prog.nodes[j] for j in n.args)
                ct = computation_type(X.type, X.op == "const", Y.type, Y.op == "const")
                x, y = self.operands(n, ct)
                return COMPARE[n.attr](x, y)
            if n.op == "dot":
                return self.dot(i, n)
            if n.op == "where":
                c = self.value(n.args[0])
                x, y = (convert(self.value(j), prog.nodes[j].type, t) for j in n.args[1:])
                return np.where(c, x, y)
            a = self.value(n.args[0])
            src = prog.nodes[n.args[0]].type
            if n.op == "neg":
                return (-a.astype(np.float32)).astype(t.np) if t.narrow else np.negative(a)
            if n.op == "abs":
                return np.abs(a) if t.kind != "u" else a
            if n.op in MATH:
                r = round_float(MATH[n.op](a.astype(np.float64)), t)
                return self.nudge(i, r, t) if self.nudge else r
            if n.op == "cast":
                return convert(a, src, t)
            if n.op == "clamp_cast":
                lo, hi = n.attr
                v = np.fmin(np.fmax(a.astype(np.float64), lo), hi)
                return np.trunc(v).astype(t.np)
            if n.op == "divisor":
                d = convert(a, src, t)
                bad = (d == 0) | ((d == -1) if t.kind == "i" else False)
                return np.where(bad, t.np.type(3), d)
            if n.op == "shift":
                return convert(a, src, t) & t.np.type(t.bits - 1)
            if n.op == "reduce":
                return self.program_reduction(i, np.broadcast_to(a, self.shape), src, t, n.attr)
            if n.op == "fp8":
                return round_float(fp8_round(a, src, FP8[n.attr]), t)
            if n.op == "fp8bin":
                fmt = FP8[n.attr[0]]
                x, y = (fp8_round(self.value(j), prog.nodes[j].type, fmt).astype(np.float32) for j in n.args)
                r = float_op(n.attr[1], np.broadcast_to(x, self.shape), np.broadcast_to(y, self.shape), F32)
                return round_float(fp8_round(r, F32, fmt), t)
            if n.op == "factor":
                f = np.where(a > 0.5, 2.0, np.where(a < -0.5, -0.5, 1.0))
                return round_float(f, t)
            if n.op in ("scan", "sort", "flip"):
                return self.ordering(i, np.broadcast_to(a, self.shape), src, t)
        raise AssertionError(n.op)

    def dot(self, i, n: Node):
        """a @ b (plus the initial accumulator) over the valid K; float results carry the error bound of a
        sum in the accumulation type in any order."""
        a, b = self.dot_arrays
        b = b.T if n.attr.b_trans else b
        if n.attr.stored:
            a, b = (convert(x, T[n.attr.stored], T[n.attr.operand]) for x in (a, b))
        t = n.type
        acc = convert(self.value(n.args[0]), self.prog.nodes[n.args[0]].type, t) if n.args else None
        if t.is_int:
            r = np.einsum("ik,kj->ij", a.astype(np.int64), b.astype(np.int64))
            return (r if acc is None else r + acc.astype(np.int64)).astype(t.np)
        a64, b64 = a.astype(np.float64), b.astype(np.float64)
        with np.errstate(all="ignore"):
            exact = np.einsum("ik,kj->ij", a64, b64)
            size = np.einsum("ik,kj->ij", np.abs(a64), np.abs(b64))
            if acc is not None:
                exact, size = exact + acc.astype(np.float64), size + np.abs(acc.astype(np.float64))
        if not self.nudge:
            return round_float(exact, t)
        k, chunks = self.prog.dot_k, cdiv(self.prog.dot_k, self.prog.dot_bk)
        bound = sum_bound(size, k + 2 * chunks + 2, t) + (k + 2) * ulp(np.zeros(1), t)[0]
        return self.nudge(i, exact, t, bound)

    def ordering(self, i, x, src: DType, t: DType):
        """A scan, sort or flip, applied to each tile's stretch along the axis, the masked-off lanes holding
        the kernel's fill value."""
        n = self.prog.nodes[i]
        tile_axis = n.attr if n.op == "flip" else n.attr[1] if n.op == "scan" else n.attr[0]
        axis, block = self.prog.along(tile_axis)
        size = x.shape[axis]
        padded = list(x.shape)
        padded[axis] = cdiv(size, block) * block

        def as_tiles(values, fill):
            p = np.full(padded, np.array(fill, dtype=np.float64 if src.is_float else None)).astype(src.np)
            p[tuple(slice(0, d) for d in x.shape)] = values
            return p.reshape(x.shape[:axis] + (padded[axis] // block, block) + x.shape[axis + 1:])

        tiles = as_tiles(x, ordering_fill(self.prog, i))
        ax = axis + 1
        bound = None
        with np.errstate(all="ignore"):
            if n.op == "flip":
                r = np.flip(tiles, ax)
            elif n.op == "sort":
                v = np.sort(tiles.astype(np.float64) + 0.0 if src.is_float else tiles, axis=ax)
                r = (np.flip(v, ax) if n.attr[1] else v).astype(src.np)
            elif n.attr[0] == "affine":
                y = convert(np.broadcast_to(self.value(n.args[1]), x.shape), self.prog.nodes[n.args[1]].type, src)
                r = affine_scan(tiles, as_tiles(y, 0), ax, n.attr[2])
            else:
                r, bound = scan_tiles(tiles, ax, n.attr[0], n.attr[2], src, t)
        keep = tuple(slice(0, d) for d in x.shape)
        r = r.reshape(padded)[keep]
        if bound is None:
            return r
        return self.nudge(i, r, t, bound.reshape(padded)[keep]) if self.nudge else round_float(r, t)

    def program_reduction(self, i, v, src: DType, res: DType, op):
        """Each program's reduction of its elements, given back to each of them."""
        if self.prog.kind == "rowvec":
            r = self._reduce(v, src, res, 1, v.shape[1], op, i)[:, None]
        else:
            block = self.prog.blocks[0]
            r = np.concatenate([self._reduce(v[s:s + block], src, res, 0, block, op, i).reshape(1)
                                for s in range(0, v.shape[0], block)])[self.pid]
        return np.broadcast_to(r, self.shape)

    def operand_type(self, n: Node) -> DType:
        X, Y = (self.prog.nodes[j] for j in n.args)
        xt, yt = X.type, Y.type
        if n.attr in ("minimum", "maximum"):
            xt, yt = (F32 if xt == BF16 else xt), (F32 if yt == BF16 else yt)
        ct = computation_type(xt, X.op == "const", yt, Y.op == "const", n.attr in ("/", "%", "//"))
        return F32 if n.attr == "/" and ct.is_int else ct

    def outputs(self) -> list:
        prog = self.prog
        vals = [self.value(i) for i in prog.outputs]
        if prog.elementwise:
            return [convert(np.broadcast_to(v, self.shape), prog.nodes[i].type, T[t])
                    for v, i, t in zip(vals, prog.outputs, prog.out_types)]
        v, src = np.broadcast_to(vals[0], self.shape), prog.nodes[prog.outputs[0]].type
        res = T[prog.out_types[0]]
        if prog.kind == "partial":
            block = prog.blocks[0]
            groups = [v[s:s + block] for s in range(0, v.shape[0], block)]
            axis = 0
        else:
            axis = 1 if prog.kind == "rows" else 0
            groups = None
        return [self.reduce(v, src, res, axis, groups)]

    def reduce(self, v, src: DType, res: DType, axis, groups):
        prog = self.prog
        if groups is None:
            return self._reduce(v, src, res, axis, prog.blocks[axis], prog.reduce, -1)
        return np.concatenate([self._reduce(g, src, res, 0, prog.blocks[0], prog.reduce, -1).reshape(1)
                               for g in groups])

    def _reduce(self, v, src: DType, res: DType, axis, block, op, node):
        with np.errstate(all="ignore"):
            if op == "sum":
                if res.is_int:
                    return np.sum(convert(v, src, res), axis=axis, dtype=res.np)
                x = v.astype(np.float64)
                r = round_float(np.sum(x, axis=axis), res)
                if self.nudge:
                    count, chunks = v.shape[axis], cdiv(v.shape[axis], block)
                    wide = F64 if res == F64 else F32
                    eps = 2.0 ** -wide.mantissa
                    bound = (count * eps + (chunks + 1) * 2.0 ** -src.mantissa) * np.sum(np.abs(x), axis=axis)
                    if src.narrow and res != src:
                        # a looped sum's chunks are tl.sum results of the 16-bit type, which can overflow
                        chunk_sums = np.add.reduceat(np.abs(x), np.arange(0, count, block), axis=axis)
                        bound = sum_bound(chunk_sums, 1, src).max(axis=axis) + bound
                    r = self.nudge(node, r, res, bound)
                return r
            fn = (np.fmax if op == "max" else np.fmin) if src.is_float else (np.maximum if op == "max" else np.minimum)
            return fn.reduce(convert(v, src, res), axis=axis)


def sum_bound(magnitude, terms, t: DType):
    """The error bound of a sum of `terms` terms in float type `t` (any order) whose absolute values add to
    `magnitude`; infinite where a partial sum could overflow."""
    bound = terms * 2.0 ** -t.mantissa * magnitude
    return np.where(magnitude * (1 + 2.0 ** -t.mantissa) >= float(ml_dtypes.finfo(t.np).max), np.inf, bound)


def scan_tiles(tiles, ax, combine, reverse, src: DType, t: DType):
    """An inclusive scan along axis `ax` of each tile (the input of type `src` converted to the scan's type
    `t`), and for a float sum its error bound in any order."""
    x = convert(tiles, src, t)
    if reverse:
        x = np.flip(x, ax)
    bound = None
    if combine == "first":
        r = np.broadcast_to(np.take(x, [0], axis=ax), x.shape)
    elif combine == "xor":
        r = np.bitwise_xor.accumulate(x, axis=ax)
    elif combine in ("max", "min"):
        if t.is_float:
            r = round_float((np.fmax if combine == "max" else np.fmin).accumulate(x.astype(np.float64), axis=ax), t)
        else:
            r = (np.maximum if combine == "max" else np.minimum).accumulate(x, axis=ax)
    elif t.is_int:
        r = (np.cumsum if combine == "add" else np.cumprod)(x, axis=ax, dtype=t.np)
    elif combine == "mul":  # exact: the factors are powers of two within range
        r = round_float(np.cumprod(x.astype(np.float64), axis=ax), t)
    else:
        x64 = x.astype(np.float64)
        exact = np.cumsum(x64, axis=ax)
        steps = np.arange(1, x.shape[ax] + 1).reshape([-1 if d == ax else 1 for d in range(x.ndim)])
        r, bound = exact, sum_bound(np.cumsum(np.abs(x64), axis=ax), steps + 1, t)
    if reverse:
        r = np.flip(r, ax)
        bound = None if bound is None else np.flip(bound, ax)
    return (r if bound is not None else np.asarray(r).astype(t.np)), bound


def affine_scan(a, b, ax, reverse):
    """The second element of the scan of pairs (a, b) under (a1, b1), (a2, b2) -> (a1 a2, a2 b1 + b2): the
    recurrence h = a h + b from h = 0 (integers, wrapping)."""
    a, b = np.moveaxis(a, ax, -1), np.moveaxis(b, ax, -1)
    order = range(a.shape[-1] - 1, -1, -1) if reverse else range(a.shape[-1])
    h, out = np.zeros(a.shape[:-1], a.dtype), np.empty_like(a)
    with np.errstate(all="ignore"):
        for k in order:
            h = (a[..., k] * h + b[..., k]).astype(a.dtype)
            out[..., k] = h
    return np.moveaxis(out, -1, ax)


def reference(prog: Program, inputs: dict, nudge=None) -> list:
    return Reference(prog, inputs, nudge).outputs()


def nudger(direction):
    """A nudge for the tolerance runs: +1, -1, or a random sign per element (a seed)."""
    def nudge(i, values, t, bound=None):
        v = values.astype(np.float64)
        step = 2 * ulp(v, t) if bound is None else np.asarray(bound)
        if isinstance(direction, int) and direction in (1, -1):
            sign = direction
        else:
            sign = np.random.default_rng([direction, i + 1]).choice([-1.0, 1.0], size=v.shape)
        with np.errstate(all="ignore"):
            moved = np.where(np.isfinite(v), v + sign * step, v)
        return round_float(moved, t)
    return nudge


def expected(prog: Program, inputs: dict):
    """The reference outputs and each element's tolerance (0: exact; inf: anything goes)."""
    exact = reference(prog, inputs)
    inexact = prog.inexact_ops() or prog.float_sums()
    if not inexact:
        return exact, [np.zeros(e.shape) for e in exact]
    runs = [reference(prog, inputs, nudger(d)) for d in (1, -1, *range(1001, 1007))]
    tolerances = []
    for k, e in enumerate(exact):
        e64 = e.astype(np.float64)
        worst = np.zeros(e.shape)
        for run in runs:
            r64 = run[k].astype(np.float64)
            with np.errstate(all="ignore"):
                same_class = (np.isnan(e64) == np.isnan(r64)) & (np.isinf(e64) == np.isinf(r64))
                diff = np.where(np.isfinite(e64) & np.isfinite(r64), np.abs(r64 - e64),
                                np.where(same_class & ((e64 == r64) | np.isnan(e64)), 0.0, np.inf))
            worst = np.maximum(worst, diff)
        t = T[prog.out_types[k]]
        slack = ulp(np.nan_to_num(e64), t) if t.is_float else 0.0
        moved = 2 * worst + slack
        if prog.truncates_inexact():
            moved = np.inf  # an element some run moved may move anywhere
        tolerances.append(np.where(worst > 0, moved, 0.0))
    return exact, tolerances


# ---------------------------------------------------------------------------------------------------------------
# Running kernels (in a worker process per configuration)

FILL = 0xA5
GUARD = 64  # elements after each output


def out_buffers(prog: Program) -> list:
    """Output arrays filled with FILL bytes, each followed by GUARD elements; 2-D ones with the row pitch."""
    shape = prog.out_shape()
    count = shape[0] * prog.pitch if prog.pitched else shape[0]
    bufs = []
    for t in prog.out_types:
        buf = np.empty(count + GUARD, T[t].np)
        buf.view(np.uint8)[:] = FILL
        bufs.append(buf)
    return bufs


def load_kernel(prog: Program, folder: str | None):
    """Imports the program's kernel: from `folder` when given (the file stays), else from text that only
    linecache holds, under a fixed name, so that the compile cache serves a rerun."""
    source = render(prog)
    if folder:
        path = os.path.join(folder, prog.name + ".py")
        with open(path, "w") as f:
            f.write(source)
    else:
        path = f"/tegula-differential/{prog.name}.py"
        linecache.cache[path] = (len(source), None, source.splitlines(True), path)
    module = type(sys)(f"tegula_differential_{prog.name}")
    module.__file__ = path
    exec(compile(source, path, "exec"), module.__dict__)
    return module.kernel, path


def launch(prog: Program, kernel, inputs: dict):
    outs = out_buffers(prog)
    args = list(outs) + list(inputs["arrays"]) + list(inputs["pscalars"]) + [value for _, value in prog.args]
    if prog.dot_bk:
        args += list(inputs["dot"]) + [prog.dot_k]
    if prog.kind == "rowvec":
        args += [prog.sizes[0], prog.sizes[1], prog.pitch]
        kernel[prog.grid()](*args, BLOCK=prog.blocks[0])
    elif len(prog.sizes) == 2:
        args += [prog.sizes[0], prog.sizes[1], prog.pitch]
        extra = {"BK": prog.dot_bk} if prog.dot_bk else {}
        kernel[prog.grid()](*args, BM=prog.blocks[0], BN=prog.blocks[1], **extra)
    else:
        args += [prog.sizes[0]]
        kernel[prog.grid()](*args, BLOCK=prog.blocks[0])
    return outs


def run_one(prog: Program, folder: str | None) -> dict:
    try:
        kernel, path = load_kernel(prog, folder)
        inputs = make_inputs(prog)
        return {"outs": launch(prog, kernel, inputs), "path": path}
    except Exception as e:  # a compile error or a DeviceError: the result of this configuration
        return {"error": f"{type(e).__name__}: {e}"[:4000]}


def worker(jobs_path: str, results: str, folder: str | None) -> int:
    with open(jobs_path, "rb") as f:
        jobs = pickle.load(f)
    for prog in jobs:
        print(f"start {prog.name}", flush=True)
        result = run_one(prog, folder)
        with open(os.path.join(results, prog.name + ".pkl.tmp"), "wb") as f:
            pickle.dump(result, f)
        os.replace(os.path.join(results, prog.name + ".pkl.tmp"), os.path.join(results, prog.name + ".pkl"))
    return 0


@dataclass
class Config:
    name: str  # g++, clang++, g++-debug
    cxx: str
    debug: bool = False

    def env(self):
        env = dict(os.environ, CXX=self.cxx)
        env.pop("TEGULA_DEBUG", None)
        if self.debug:
            env["TEGULA_DEBUG"] = "1"
        return env


def run_config(config: Config, progs: list, workdir: str, folder: str | None, timeout=None) -> dict:
    """Runs `progs` under `config` in worker processes; a crashed worker loses one program (its result
    says so) and a new worker goes on with the rest."""
    results = os.path.join(workdir, config.name)
    os.makedirs(results, exist_ok=True)
    done = {}
    pending = list(progs)
    while pending:
        jobs = os.path.join(workdir, f"jobs-{config.name}.pkl")
        with open(jobs, "wb") as f:
            pickle.dump(pending, f)
        cmd = [sys.executable, os.path.abspath(__file__), "--worker", jobs, "--results", results]
        if folder:
            cmd += ["--keep", folder]
        proc = subprocess.run(cmd, env=config.env(), capture_output=True, text=True, timeout=timeout)
        rest = []
        for k, prog in enumerate(pending):
            path = os.path.join(results, prog.name + ".pkl")
            if os.path.exists(path):
                with open(path, "rb") as f:
                    done[prog.name] = pickle.load(f)
                os.remove(path)
            elif not rest and not any(p.name in done for p in pending[k:]):
                # the first program without a result is the one the worker died on
                done[prog.name] = {"error": f"worker died (exit {proc.returncode}): {proc.stderr[-2000:]}"}
                rest = pending[k + 1:]
                break
        pending = rest
    return done


# ---------------------------------------------------------------------------------------------------------------
# Checking


@dataclass
class Finding:
    seed: int
    config: str
    what: str
    details: str


def compare(prog: Program, got: list, want: list, tolerance: list, against: str) -> list:
    """Problems of `got` (output buffers) against `want` with the tolerances: wrong elements, changed fill."""
    problems = []
    shape = prog.out_shape()
    for k, (buf, w, tol) in enumerate(zip(got, want, tolerance)):
        t = T[prog.out_types[k]]
        count = shape[0] * prog.pitch if prog.pitched else shape[0]
        if prog.pitched:
            grid = buf[:count].reshape(shape[0], prog.pitch)
            g, padding = grid[:, :shape[1]], grid[:, shape[1]:]
        else:
            g, padding = buf[:count], buf[:0]
        fill_changed = [np.flatnonzero(part.copy().view(np.uint8) != FILL) for part in (padding, buf[count:])]
        if any(len(f) for f in fill_changed):
            problems.append(f"out{k}: bytes outside the output changed (row padding at byte {fill_changed[0][:5]}, "
                            f"after the end at byte {fill_changed[1][:5]})")
        bad, err = mismatches(g, w, tol, t)
        if bad.size:
            first = [tuple(int(c) for c in np.unravel_index(b, g.shape)) for b in bad[:5]]
            shown = ", ".join(f"{idx}: got {g[idx]!r} want {w[idx]!r} (tol {tol[idx]:.3g})" for idx in first[:3])
            problems.append(f"out{k} ({t.name}) against {against}: {bad.size} of {g.size} elements wrong, "
                            f"max error {err:.6g}; first {shown}")
    return problems


def mismatches(g: np.ndarray, w: np.ndarray, tol: np.ndarray, t: DType):
    g, w = np.asarray(g), np.broadcast_to(w, g.shape)
    if t.is_int:
        exact = tol == 0
        with np.errstate(all="ignore"):
            diff = np.abs(g.astype(np.float64) - w.astype(np.float64))
        bad = (exact & (g != w)) | (~exact & (diff > tol))
        return np.flatnonzero(bad), float(diff[bad].max()) if bad.any() else 0.0
    g64, w64 = g.astype(np.float64), w.astype(np.float64)
    with np.errstate(all="ignore"):
        both_nan = np.isnan(g64) & np.isnan(w64)
        diff = np.where(both_nan, 0.0, np.abs(g64 - w64))
        diff = np.where(np.isnan(diff), np.inf, diff)
        diff = np.where((g64 == w64), 0.0, diff)  # equal infinities
    bad = diff > tol
    return np.flatnonzero(bad), float(diff[bad].max()) if bad.any() else 0.0


def check(prog: Program, results: dict) -> list:
    """Findings for one program: `results` maps a configuration's name to its run's result."""
    findings = []
    errors = {c: r["error"] for c, r in results.items() if "error" in r}
    for c, e in errors.items():
        findings.append(Finding(prog.seed, c, "error", e))
    ok = {c: r["outs"] for c, r in results.items() if "outs" in r}
    if not ok:
        return findings
    inputs = make_inputs(prog)
    want, tol = expected(prog, inputs)
    for c, outs in ok.items():
        for p in compare(prog, outs, want, tol, "the reference"):
            findings.append(Finding(prog.seed, c, "reference", p))
    names = list(ok)
    cross_tol = tol if prog.inexact_ops() else [np.zeros(t.shape) for t in tol]
    shape = prog.out_shape()
    for c in names[1:]:
        first = ok[names[0]]
        views = []
        for buf, t in zip(first, prog.out_types):
            count = shape[0] * prog.pitch if prog.pitched else shape[0]
            v = buf[:count]
            views.append(v.reshape(shape[0], prog.pitch)[:, :shape[1]] if prog.pitched else v)
        for p in compare(prog, ok[c], views, cross_tol, names[0]):
            findings.append(Finding(prog.seed, c, "cross", p))
    return findings


# ---------------------------------------------------------------------------------------------------------------
# Minimizing


def valid(prog: Program) -> bool:
    """Whether a program's sizes fit its kernel: one tile per row (rowvec) or per reduction without a loop."""
    if prog.kind == "rowvec":
        return prog.sizes[1] <= prog.blocks[0]
    if prog.kind in ("rows", "cols") and not prog.loop:
        axis = 1 if prog.kind == "rows" else 0
        return prog.sizes[axis] <= prog.blocks[axis]
    if prog.dot_bk:
        loop = any(n.op == "dot" and n.attr.loop for n in prog.nodes)
        return min(prog.blocks) >= 16 and (loop or prog.dot_k <= prog.dot_bk)
    return True


def smaller(prog: Program) -> list:
    """Candidate programs one step smaller than `prog`: smaller sizes, smaller blocks, one output, a sub-DAG
    (a node's value stored or reduced instead of the last one)."""
    out = []

    def variant(**changes):
        p = dataclasses.replace(prog, **changes)
        p.seed = -(abs(prog.seed) * 1000 + len(out) + 1)
        if valid(p):
            out.append(p)

    blocks_of = (None, prog.blocks[0]) if prog.kind == "rowvec" else prog.blocks
    for axis, size in enumerate(prog.sizes):
        block = blocks_of[axis] or 1
        for new in sorted({size - block, (size + 1) // 2, size - 1}):
            if 1 <= new < size:
                sizes = list(prog.sizes)
                sizes[axis] = new
                pitch = prog.pitch - size + new if len(prog.sizes) == 2 and axis == 1 else prog.pitch
                variant(sizes=tuple(sizes), pitch=pitch)
        if blocks_of[axis] and blocks_of[axis] > 1:
            blocks = list(prog.blocks)
            blocks[0 if prog.kind == "rowvec" else axis] //= 2
            variant(blocks=tuple(blocks))
    if prog.dot_bk:
        for new in sorted({prog.dot_k - prog.dot_bk, (prog.dot_k + 1) // 2, prog.dot_k - 1}):
            if 1 <= new < prog.dot_k:
                variant(dot_k=new)
    if len(prog.outputs) > 1:
        for k in range(len(prog.outputs)):
            variant(outputs=[prog.outputs[k]], out_types=[prog.out_types[k]])
    for i in used_nodes(prog):
        n = prog.nodes[i]
        if i in prog.outputs or n.scalar or n.op in ("const", "cmp") or n.dtype == "int1":
            continue
        if prog.elementwise:
            variant(outputs=[i], out_types=[n.dtype])
        else:
            variant(outputs=[i], out_types=[reduction_type(n.type, prog.reduce, prog.loop).name])
    return out


def minimize(prog: Program, configs: list, workdir: str, log=print) -> Program:
    """Shrinks `prog` while it still fails under `configs` (greedy: the first smaller candidate that fails)."""
    current = prog
    for _ in range(60):
        candidates = smaller(current)
        if not candidates:
            break
        results = {c.name: run_config(c, candidates, workdir, None) for c in configs}
        failing = [p for p in candidates if check(p, {c: results[c][p.name] for c in results})]
        if not failing:
            break
        current = min(failing, key=lambda p: (len(used_nodes(p)), np.prod(p.sizes), np.prod(p.blocks)))
        log(f"  minimized: {current.describe()}")
    return current


# ---------------------------------------------------------------------------------------------------------------
# Driver


def parse_seeds(text: str) -> list:
    seeds = []
    for part in text.split(","):
        if ":" in part:
            a, b = part.split(":")
            seeds.extend(range(int(a), int(b)))
        else:
            seeds.append(int(part))
    return seeds


def configurations(cxx: str, debug: bool) -> list:
    configs = []
    for c in cxx.split(","):
        if shutil.which(c.split()[0]) is None:
            print(f"differential: {c} not found, skipped", file=sys.stderr)
            continue
        configs.append(Config(os.path.basename(c.split()[0]), c))
        if debug:
            configs.append(Config(os.path.basename(c.split()[0]) + "-debug", c, True))
    return configs


def run(seeds: list, configs: list, keep: str | None = None, log=print, jobs: int = 1) -> list:
    """Generates, runs and checks the programs of `seeds` under `configs`; returns the findings."""
    progs = [generate(s) for s in seeds]
    with tempfile.TemporaryDirectory(prefix="tegula-differential-") as workdir:
        if keep:
            os.makedirs(keep, exist_ok=True)
        results = {}
        tasks = [(c, progs[k::jobs]) for c in configs for k in range(jobs)]
        with ThreadPoolExecutor(min(len(tasks), os.cpu_count() or 1)) as pool:
            sub = [(c, pool.submit(run_config, c, part, os.path.join(workdir, f"w{k}"), keep))
                   for k, (c, part) in enumerate(tasks)]
            for c, fut in sub:
                for name, r in fut.result().items():
                    results.setdefault(name, {})[c.name] = r
        findings = []
        for prog in progs:
            for f in check(prog, results[prog.name]):
                path = next((r.get("path") for r in results[prog.name].values() if "path" in r), "-")
                f.details += f"\n    kernel: {path}\n    {prog.describe()}"
                findings.append(f)
                log(f"MISMATCH seed {prog.seed} [{f.config}] {f.what}: {f.details}")
    return findings


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", default="0:100", help="A:B (half-open) or a comma list")
    parser.add_argument("--cxx", default="g++,clang++", help="compilers, comma-separated ($CXX of each run)")
    parser.add_argument("--debug", action="store_true", help="also run each compiler in debug mode")
    parser.add_argument("--keep", help="write the kernels' sources to this folder (and import them from it)")
    parser.add_argument("--minimize", action="store_true", help="shrink each failing kernel")
    parser.add_argument("--jobs", type=int, default=1, help="worker processes per compiler")
    parser.add_argument("--show", type=int, help="print the source of one seed's kernel and exit")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--results", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        return worker(args.worker, args.results, args.keep)
    if args.show is not None:
        prog = generate(args.show)
        print(f"# {prog.describe()}")
        print(render(prog))
        return 0
    seeds = parse_seeds(args.seeds)
    configs = configurations(args.cxx, args.debug)
    start = time.time()
    findings = run(seeds, configs, keep=args.keep, jobs=args.jobs)
    failed = sorted({f.seed for f in findings})
    print(f"differential: {len(seeds)} seeds x {[c.name for c in configs]} in {time.time() - start:.0f} s: "
          f"{len(failed)} failing seeds {failed[:50]}")
    if args.minimize and failed:
        with tempfile.TemporaryDirectory(prefix="tegula-differential-min-") as workdir:
            for seed in failed:
                bad = [c for c in configs if any(f.seed == seed and f.config == c.name for f in findings)] or configs
                small = minimize(generate(seed), bad, workdir)
                print(f"seed {seed} minimized ({small.describe()}):\n{render(small)}")
    return 1 if findings else 0


if __name__ == "__main__":
    # Run through the module's own name, so that pickled programs name `differential.Program` in both the
    # driver and its workers.
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import differential

    sys.exit(differential.main())
