"""The operations of the kernel language, as markers for IDEs and docs.

Calling any of them outside a ``@tegula.jit`` kernel raises RuntimeError;
inside a kernel the compiler gives them their meaning (same names and
semantics as ``triton.language``). Math functions live in ``math.py`` and are
re-exported by ``tegula.language``.
"""

# These stubs shadow builtins (sum, max, min, range) on purpose, as the
# language does; nothing in this module uses the builtins.
from .core import only_in_kernel as _only_in_kernel

__all__ = [
    "program_id", "num_programs", "arange", "zeros", "zeros_like", "full", "full_like", "cat",
    "cast", "to_tensor", "load", "store", "make_block_ptr", "advance", "make_tensor_descriptor",
    "load_tensor_descriptor", "store_tensor_descriptor", "_experimental_make_tensor_descriptor",
    "_experimental_descriptor_load", "_experimental_descriptor_store", "reshape", "view", "broadcast",
    "broadcast_to", "expand_dims", "trans", "permute", "join", "split", "interleave", "ravel",
    "squeeze", "unsqueeze", "inline_asm_elementwise", "map_elementwise", "where", "sum", "max",
    "min", "argmax", "argmin", "reduce", "xor_sum", "reduce_or", "cumsum", "cumprod",
    "associative_scan", "sort", "topk", "bitonic_merge", "flip", "histogram", "gather",
    "swizzle2d", "atomic_add", "atomic_and", "atomic_cas", "atomic_max", "atomic_min",
    "atomic_or", "atomic_xchg", "atomic_xor", "atomic_poll", "rand", "randn", "randint",
    "randint4x", "rand4x", "randn4x", "philox", "philox_impl", "uint_to_uniform_float",
    "pair_uniform_to_normal", "dot", "dot_scaled", "static_print", "static_assert",
    "device_print", "device_assert", "debug_barrier", "multiple_of", "max_contiguous",
    "max_constancy", "assume", "range", "static_range", "tensor_descriptor",
    "add", "sub", "mul", "expect_zero",
]

# --- Program and grid ----------------------------------------------------------


def program_id(axis, bitwidth=None):
    """Index of this program along grid axis ``axis`` (0, 1 or 2): an int32, or an int64 with
    ``bitwidth=64``."""
    _only_in_kernel("program_id")


def num_programs(axis):
    """Number of programs along grid axis ``axis``."""
    _only_in_kernel("num_programs")

# --- Creation ------------------------------------------------------------------


def arange(start, end):
    """The tile ``[start, start + 1, ..., end - 1]``; ``end - start`` must be a power of two."""
    _only_in_kernel("arange")


def zeros(shape, dtype):
    """A tile of zeros."""
    _only_in_kernel("zeros")


def zeros_like(input):
    """Zeros with the shape and dtype of ``input``."""
    _only_in_kernel("zeros_like")


def full(shape, value, dtype):
    """A tile filled with ``value``."""
    _only_in_kernel("full")


def full_like(input, value, dtype=None):
    """A tile with the shape of ``input`` filled with ``value``."""
    _only_in_kernel("full_like")


def cat(input, other, can_reorder=False, dim=0):
    """Concatenation of two tiles of one shape along axis ``dim`` (default 0)."""
    _only_in_kernel("cat")


def cast(input, dtype, fp_downcast_rounding=None, bitcast=False):
    """Converts ``input`` to ``dtype`` (reinterprets bits with ``bitcast``)."""
    _only_in_kernel("cast")


def to_tensor(x):
    """Turns a constant into a tile value."""
    _only_in_kernel("to_tensor")

# --- Memory --------------------------------------------------------------------


def load(pointer, mask=None, other=None, boundary_check=(), padding_option="", cache_modifier="",
         eviction_policy="", volatile=False):
    """Loads from a pointer or tile of pointers; masked-off elements take ``other``."""
    _only_in_kernel("load")


def store(pointer, value, mask=None, boundary_check=(), cache_modifier="", eviction_policy=""):
    """Stores ``value``; masked-off elements are not written."""
    _only_in_kernel("store")


def make_block_ptr(base, shape, strides, offsets, block_shape, order):
    """A pointer to a block of a 2-D (or N-d) tensor."""
    _only_in_kernel("make_block_ptr")


def advance(base, offsets):
    """Moves a block pointer by ``offsets``."""
    _only_in_kernel("advance")


def make_tensor_descriptor(base, shape, strides, block_shape, padding_option="zero"):
    """A tensor descriptor for block loads and stores."""
    _only_in_kernel("make_tensor_descriptor")


def load_tensor_descriptor(desc, offsets):
    """Loads a block through a tensor descriptor."""
    _only_in_kernel("load_tensor_descriptor")


def store_tensor_descriptor(desc, offsets, value):
    """Stores a block through a tensor descriptor."""
    _only_in_kernel("store_tensor_descriptor")


def _experimental_make_tensor_descriptor(base, shape, strides, block_shape, padding_option="zero"):
    """Triton 3.3's name of make_tensor_descriptor."""
    _only_in_kernel("_experimental_make_tensor_descriptor")


def _experimental_descriptor_load(desc_pointer, offsets, shape, dtype):
    """Triton 3.2/3.3's load of a `shape` block of `dtype` through the descriptor at `desc_pointer`
    (tegula.experimental_descriptor)."""
    _only_in_kernel("_experimental_descriptor_load")


def _experimental_descriptor_store(desc_pointer, value, offsets):
    """Triton 3.2/3.3's store of the tile `value` through the descriptor at `desc_pointer`."""
    _only_in_kernel("_experimental_descriptor_store")

# --- Shape ---------------------------------------------------------------------


def reshape(input, *shape, can_reorder=False):
    """The same elements in a new shape."""
    _only_in_kernel("reshape")


def view(input, *shape):
    """Like ``reshape`` with ``can_reorder=True``."""
    _only_in_kernel("view")


def broadcast(input, other):
    """Both operands broadcast to their common shape."""
    _only_in_kernel("broadcast")


def broadcast_to(input, *shape):
    """``input`` broadcast to ``shape``."""
    _only_in_kernel("broadcast_to")


def expand_dims(input, axis):
    """Inserts an axis of length 1 (what ``x[:, None]`` does)."""
    _only_in_kernel("expand_dims")


def trans(input, *dims):
    """Permutes axes (swaps the two axes of a 2-D tile by default)."""
    _only_in_kernel("trans")


def permute(input, *dims):
    """Permutes axes."""
    _only_in_kernel("permute")


def join(a, b):
    """Stacks two tiles along a new last axis of length 2."""
    _only_in_kernel("join")


def split(a):
    """Splits a tile whose last axis has length 2 into two tiles."""
    _only_in_kernel("split")


def interleave(a, b):
    """Interleaves the elements of two tiles along the last axis."""
    _only_in_kernel("interleave")


def ravel(x, can_reorder=False):
    """The tile flattened to one axis."""
    _only_in_kernel("ravel")


def squeeze(x, dim):
    """Removes axis ``dim`` of length 1."""
    _only_in_kernel("squeeze")


def unsqueeze(x, dim):
    """Inserts an axis of length 1 at ``dim``."""
    _only_in_kernel("unsqueeze")

# --- Elementwise ---------------------------------------------------------------


def inline_asm_elementwise(asm, constraints, args, dtype, is_pure, pack):
    """Elementwise inline assembly (GPU backends)."""
    _only_in_kernel("inline_asm_elementwise")


def map_elementwise(scalar_fn, *args, pack=1):
    """Applies a @jit scalar function elementwise."""
    _only_in_kernel("map_elementwise")


def add(x, y, sanitize_overflow=True):
    """``x + y`` as a function."""
    _only_in_kernel("add")


def sub(x, y, sanitize_overflow=True):
    """``x - y`` as a function."""
    _only_in_kernel("sub")


def mul(x, y, sanitize_overflow=True):
    """``x * y`` as a function."""
    _only_in_kernel("mul")


def expect_zero(x, mask):
    """``x``, asserted (in debug mode) to be 0 where ``mask`` holds."""
    _only_in_kernel("expect_zero")


def where(condition, x, y):
    """``x`` where ``condition`` is true, else ``y``, elementwise."""
    _only_in_kernel("where")

# --- Reductions ----------------------------------------------------------------


def sum(input, axis=None, keep_dims=False, dtype=None):
    """Sum along ``axis`` (all axes when None)."""
    _only_in_kernel("sum")


def max(input, axis=None, return_indices=False, return_indices_tie_break_left=True,
        keep_dims=False, propagate_nan=None):
    """Maximum along ``axis``."""
    _only_in_kernel("max")


def min(input, axis=None, return_indices=False, return_indices_tie_break_left=True,
        keep_dims=False, propagate_nan=None):
    """Minimum along ``axis``."""
    _only_in_kernel("min")


def argmax(input, axis, tie_break_left=True, keep_dims=False, propagate_nan=None):
    """Index of the maximum along ``axis``."""
    _only_in_kernel("argmax")


def argmin(input, axis, tie_break_left=True, keep_dims=False, propagate_nan=None):
    """Index of the minimum along ``axis``."""
    _only_in_kernel("argmin")


def reduce(input, axis, combine_fn, keep_dims=False):
    """Reduction with a @jit combine function."""
    _only_in_kernel("reduce")


def xor_sum(input, axis=None, keep_dims=False):
    """Bitwise xor along ``axis``."""
    _only_in_kernel("xor_sum")


def reduce_or(input, axis, keep_dims=False):
    """Bitwise or along ``axis``."""
    _only_in_kernel("reduce_or")

# --- Scans and sorting ---------------------------------------------------------


def cumsum(input, axis=0, reverse=False, dtype=None):
    """Inclusive prefix sum along ``axis`` (int8/int16/bool sum in int32, bfloat16 in float32)."""
    _only_in_kernel("cumsum")


def cumprod(input, axis=0, reverse=False):
    """Inclusive prefix product along ``axis``."""
    _only_in_kernel("cumprod")


def associative_scan(input, axis, combine_fn, reverse=False):
    """Inclusive scan with a @jit combine function."""
    _only_in_kernel("associative_scan")


def sort(x, dim=None, descending=False):
    """Sorts along ``dim``."""
    _only_in_kernel("sort")


def topk(x, k, dim=None, descending=True):
    """The ``k`` largest elements along ``dim``, largest first (``descending=False``: the ``k`` smallest,
    smallest first)."""
    _only_in_kernel("topk")


def bitonic_merge(x, dim=None, descending=False):
    """One bitonic merge stage."""
    _only_in_kernel("bitonic_merge")


def flip(x, dim=None):
    """Reverses the order along ``dim``."""
    _only_in_kernel("flip")


def histogram(input, num_bins, mask=None):
    """Counts of the values ``0 .. num_bins - 1``."""
    _only_in_kernel("histogram")


def gather(src, index, axis):
    """``src`` indexed by ``index`` along ``axis``."""
    _only_in_kernel("gather")


def swizzle2d(i, j, size_i, size_j, size_g):
    """Remaps 2-D program ids for better cache reuse."""
    _only_in_kernel("swizzle2d")

# --- Atomics -------------------------------------------------------------------


def atomic_add(pointer, val, mask=None, sem=None, scope=None):
    """Atomic ``*pointer += val``; returns the old value."""
    _only_in_kernel("atomic_add")


def atomic_and(pointer, val, mask=None, sem=None, scope=None):
    """Atomic bitwise and; returns the old value."""
    _only_in_kernel("atomic_and")


def atomic_cas(pointer, cmp, val, sem=None, scope=None):
    """Atomic compare-and-swap; returns the old value."""
    _only_in_kernel("atomic_cas")


def atomic_max(pointer, val, mask=None, sem=None, scope=None):
    """Atomic maximum; returns the old value."""
    _only_in_kernel("atomic_max")


def atomic_min(pointer, val, mask=None, sem=None, scope=None):
    """Atomic minimum; returns the old value."""
    _only_in_kernel("atomic_min")


def atomic_or(pointer, val, mask=None, sem=None, scope=None):
    """Atomic bitwise or; returns the old value."""
    _only_in_kernel("atomic_or")


def atomic_xchg(pointer, val, mask=None, sem=None, scope=None):
    """Atomic exchange; returns the old value."""
    _only_in_kernel("atomic_xchg")


def atomic_xor(pointer, val, mask=None, sem=None, scope=None):
    """Atomic bitwise xor; returns the old value."""
    _only_in_kernel("atomic_xor")


def atomic_poll(pointer, *args, **kwargs):
    """Waits until a memory location changes."""
    _only_in_kernel("atomic_poll")

# --- Random numbers (Philox) ---------------------------------------------------


def rand(seed, offset, n_rounds=10):
    """Uniform floats in [0, 1)."""
    _only_in_kernel("rand")


def randn(seed, offset, n_rounds=10):
    """Standard normal floats."""
    _only_in_kernel("randn")


def randint(seed, offset, n_rounds=10):
    """Random uint32 values."""
    _only_in_kernel("randint")


def randint4x(seed, offset, n_rounds=10):
    """Four tiles of random uint32 values."""
    _only_in_kernel("randint4x")


def rand4x(seed, offset, n_rounds=10):
    """Four tiles of uniform floats."""
    _only_in_kernel("rand4x")


def randn4x(seed, offset, n_rounds=10):
    """Four tiles of standard normal floats."""
    _only_in_kernel("randn4x")


def philox(seed, c0, c1, c2, c3, n_rounds=10):
    """The Philox 4x32 generator."""
    _only_in_kernel("philox")


def philox_impl(c0, c1, c2, c3, k0, k1, n_rounds=10):
    """Philox rounds on explicit counters and keys."""
    _only_in_kernel("philox_impl")


def uint_to_uniform_float(x):
    """Maps random integers to uniform floats in [0, 1)."""
    _only_in_kernel("uint_to_uniform_float")


def pair_uniform_to_normal(u1, u2):
    """Box-Muller: two uniform tiles to two normal tiles."""
    _only_in_kernel("pair_uniform_to_normal")

# --- Linear algebra ------------------------------------------------------------


def dot(input, other, acc=None, input_precision=None, allow_tf32=None, max_num_imprecise_acc=None,
        out_dtype=None):
    """Matrix product of two 2-D tiles (plus ``acc``)."""
    _only_in_kernel("dot")


def dot_scaled(lhs, lhs_scale, lhs_format, rhs, rhs_scale, rhs_format, acc=None, fast_math=False,
               out_dtype=None):
    """Matrix product of block-scaled low-precision operands."""
    _only_in_kernel("dot_scaled")

# --- Debugging -----------------------------------------------------------------


def static_print(*values, sep=" ", end="\n", file=None, flush=False):
    """Prints constants at compile time."""
    _only_in_kernel("static_print")


def static_assert(cond, msg=""):
    """Fails compilation when ``cond`` is false."""
    _only_in_kernel("static_assert")


def device_print(prefix, *args, hex=False):
    """Prints values at run time, per program."""
    _only_in_kernel("device_print")


def device_assert(cond, msg="", mask=None):
    """Checks ``cond`` at run time when compiled with debug."""
    _only_in_kernel("device_assert")


def debug_barrier():
    """A barrier between all threads of a program."""
    _only_in_kernel("debug_barrier")

# --- Compiler hints ------------------------------------------------------------


def multiple_of(input, values):
    """Promises that ``input`` is a multiple of ``values``."""
    _only_in_kernel("multiple_of")


def max_contiguous(input, values):
    """Promises runs of ``values`` contiguous values."""
    _only_in_kernel("max_contiguous")


def max_constancy(input, values):
    """Promises runs of ``values`` equal values."""
    _only_in_kernel("max_constancy")


def assume(cond):
    """Promises that ``cond`` holds."""
    _only_in_kernel("assume")


# --- Loops ---------------------------------------------------------------------


class range:
    """``for i in tl.range(lo, hi, step, num_stages=...)``: a loop with pipelining hints.

    ``warp_specialize`` (a compile-time True, False or None) asks for a producer warpgroup
    feeding the loop on Hopper, forbids it, or (None) leaves it to the compiler."""

    def __init__(self, arg1, arg2=None, step=None, num_stages=None, loop_unroll_factor=None,
                 disallow_acc_multi_buffer=False, flatten=False, warp_specialize=None,
                 disable_licm=False):
        _only_in_kernel("range")


class static_range:
    """``for i in tl.static_range(n)``: a loop unrolled at compile time."""

    def __init__(self, arg1, arg2=None, step=None):
        _only_in_kernel("static_range")


class tensor_descriptor:
    """The type of ``tl.make_tensor_descriptor`` results; only meaningful inside kernels."""

    def __init__(self, *args, **kwargs):
        _only_in_kernel("tensor_descriptor")
