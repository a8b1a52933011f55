"""The public names of `triton.language` (Triton 3.x) and a probe for each,
for tools/compat_table.py.

A probe is the body of a kernel (see PROBE_HEADER in compat_table.py: `x`
f32[16], `xi` i32[16], `xu` u32[16], `xd` f64[16], `x2` f32[16, 16], `offs`,
scalars `n` and `seed`, pointers `x_ptr` (f32), `y_ptr` (f32), `i_ptr`,
`u_ptr`, `d_ptr`, BLOCK = 16, a @jit `helper_add(a, b)`) that uses the name
the way Triton's documentation does; it must store something so nothing is
optimized away. Features are further probes for keywords and variants.

Sources of the list: Triton 3.x `triton.language.__all__`, the reference
sheet /work/shared/reference/triton-surface.md, the CUDA libdevice wrapper
of `triton.language.extra.libdevice`. `tutorials` lists the official
tutorials (01-09) whose kernels use the name.
"""

from __future__ import annotations

import dataclasses

TUTORIALS = {
    "01": "vector add", "02": "fused softmax", "03": "matmul", "04": "low-memory dropout",
    "05": "layer norm", "06": "fused attention", "07": "libdevice", "08": "grouped GEMM",
    "09": "persistent matmul",
}
ALL = "01-09"


@dataclasses.dataclass
class Name:
    name: str
    group: str
    probe: str
    tutorials: str = ""
    features: list = dataclasses.field(default_factory=list)  # [(description, probe body)]
    note: str = ""
    hardware: str = ""  # for hardware Tegula has no backend for: which, and why the name needs it


def st(expr: str) -> str:
    """Stores a [BLOCK] result."""
    return f"tl.store(y_ptr + offs, ({expr}).to(tl.float32))"


def st2(expr: str) -> str:
    """Stores a [BLOCK, BLOCK] result."""
    return f"tl.store(y_ptr + offs[:, None] * BLOCK + offs[None, :], ({expr}).to(tl.float32))"


NAMES: list[Name] = []
_group = ""


def group(title: str) -> None:
    global _group
    _group = title


def add(name, probe, tutorials="", features=(), note="", hardware=""):
    NAMES.append(Name(name, _group, probe, tutorials, list(features), note, hardware))


BLOCK_PTR = "bp = tl.make_block_ptr(x_ptr, (n,), (1,), (0,), (BLOCK,), (0,))\n"
DESC = "desc = tl.make_tensor_descriptor(x_ptr, shape=[n], strides=[1], block_shape=[BLOCK])\n"

group("Programming model")
add("tensor", "t: tl.tensor = x + 1.0\n" + st("t"))
add("program_id", st("x + tl.program_id(0)"), ALL, [("axis=1, axis=2", st("x + tl.program_id(axis=1) + tl.program_id(2)"))])
add("num_programs", st("x + tl.num_programs(0)"), "02", [("axis=2", st("x + tl.num_programs(2)"))])

group("Creation")
add("arange", st("tl.arange(0, BLOCK) + x"), ALL, [("nonzero start", st("tl.arange(16, 32) + x"))])
add("zeros", st("tl.zeros([BLOCK], dtype=tl.float32) + x"), "03 05 06 08 09",
    [("shape as a tuple, int dtype", st("tl.zeros((BLOCK,), tl.int64) + xi"))])
add("zeros_like", st("tl.zeros_like(x) + 1.0"))
add("full", st("tl.full([BLOCK], 2.0, tl.float32) + x"), "", [("int64", st("tl.full([BLOCK], 3, tl.int64) + xi"))])
add("cat", st("tl.sum(tl.reshape(tl.cat(x, x, can_reorder=True), (2, BLOCK)), axis=0)"))
add("cast", st("tl.cast(xi, tl.float32)"), "",
    [("fp_downcast_rounding='rtz'", st("tl.cast(x, tl.float16, fp_downcast_rounding='rtz')")),
     ("bitcast=True", st("tl.cast(x, tl.int32, bitcast=True)"))])
add("to_tensor", st("x + tl.to_tensor(2.0)"))

group("Shape manipulation")
add("broadcast", "a, b = tl.broadcast(x[:, None], x[None, :])\n" + st2("a + b"))
add("broadcast_to", st2("tl.broadcast_to(x[None, :], (BLOCK, BLOCK))"))
add("expand_dims", st2("tl.broadcast_to(tl.expand_dims(x, 0), (BLOCK, BLOCK))"),
    "", [("a tuple of axes", st2("tl.reshape(tl.expand_dims(x, (0, 2)), (1, BLOCK)) + x2"))])
add("interleave", st("tl.max(tl.reshape(tl.interleave(x, x), (BLOCK, 2)), axis=1)"))
add("join", st("tl.sum(tl.join(x, x), axis=1)"), "06")
add("split", "a, b = tl.split(tl.join(x, x + 1.0))\n" + st("a + b"), "06 09")
add("permute", st2("tl.permute(x2, (1, 0))"), "06 09", [("dims as arguments", st2("tl.permute(x2, 1, 0)"))])
add("ravel", st("tl.max(tl.reshape(tl.ravel(x2), (BLOCK, BLOCK)), axis=1)"))
add("reshape", st2("tl.reshape(tl.reshape(x2, (BLOCK * BLOCK,)), (BLOCK, BLOCK))"), "06 09",
    [("can_reorder=True", st2("tl.reshape(x2, (BLOCK, BLOCK), can_reorder=True)"))])
add("trans", st2("tl.trans(x2)"), "06", [("dims as arguments", st2("tl.trans(x2, 1, 0)"))])
add("view", st2("tl.view(x2, (BLOCK, BLOCK))"))
add("squeeze", st("tl.squeeze(x[None, :], 0)"), "", note="new on Triton main")
add("unsqueeze", st2("tl.broadcast_to(tl.unsqueeze(x, 0), (BLOCK, BLOCK))"), "", note="new on Triton main")

group("Linear algebra")
add("dot", st2("tl.dot(x2, x2)"), "03 06 08 09",
    [("acc=", st2("tl.dot(x2, x2, acc=x2)")),
     ("input_precision='ieee'", st2("tl.dot(x2, x2, input_precision='ieee')")),
     ("input_precision='tf32x3'", st2("tl.dot(x2, x2, input_precision='tf32x3')")),
     ("fp16 operands, out_dtype=tl.float16", st2("tl.dot(x2.to(tl.float16), x2.to(tl.float16), out_dtype=tl.float16)")),
     ("bf16 operands", st2("tl.dot(x2.to(tl.bfloat16), x2.to(tl.bfloat16))")),
     ("int8 operands", st2("tl.dot(x2.to(tl.int8), x2.to(tl.int8))")),
     ("fp8 operands", st2("tl.dot(x2.to(tl.float8e5), x2.to(tl.float8e5))")),
     ("allow_tf32=False (deprecated spelling)", st2("tl.dot(x2, x2, allow_tf32=False)")),
     ("input_precision='bf16x3'", st2("tl.dot(x2, x2, input_precision='bf16x3')")),
     ("int8 into int32 with out_dtype=tl.int8",
      st2("tl.dot(x2.to(tl.int8), x2.to(tl.int8), out_dtype=tl.int8) + tl.zeros((BLOCK, BLOCK), tl.int32)")),
     ("batched 3-D tiles", st2("tl.sum(tl.dot(x2[None, :, :].broadcast_to(2, BLOCK, BLOCK), "
                               "x2[None, :, :].broadcast_to(2, BLOCK, BLOCK)), axis=0)"))])
SCALE = "tl.full((BLOCK, 1), 127, tl.uint8)"
add("dot_scaled", st2("tl.dot_scaled(x2.to(tl.bfloat16), None, 'bf16', x2.to(tl.bfloat16), None, 'bf16')"),
    "", note="tutorial 10 (Blackwell); emulated as Triton does without MX hardware (decode, scale, bf16 dot)",
    features=[("e4m3 operands with e8m0 scales",
               st2(f"tl.dot_scaled(x2.to(tl.uint8), {SCALE}, 'e4m3', x2.to(tl.uint8), {SCALE}, 'e4m3')")),
              ("packed e2m1 operands",
               st("x + tl.sum(tl.sum(tl.dot_scaled(tl.reshape(x2.to(tl.uint8), (32, 8)), None, 'e2m1', "
                  "tl.reshape(x2.to(tl.uint8), (8, 32)), None, 'e2m1'), axis=1), axis=0)"))])

group("Memory and pointers")
add("load", st("tl.load(x_ptr + offs, mask=offs < n, other=0.0)"), "01 02 03 04 05 07 08 09",
    [("cache_modifier='.cg'", st("tl.load(x_ptr + offs, cache_modifier='.cg')")),
     ("eviction_policy='evict_last'", st("tl.load(x_ptr + offs, eviction_policy='evict_last')")),
     ("volatile=True", st("tl.load(x_ptr + offs, volatile=True)")),
     ("scalar pointer", st("x + tl.load(x_ptr)"))])
add("store", "tl.store(y_ptr + offs, x, mask=offs < n)", "01 02 03 04 05 07 08 09",
    [("cache_modifier='.cs'", "tl.store(y_ptr + offs, x, cache_modifier='.cs')"),
     ("eviction_policy='evict_first'", "tl.store(y_ptr + offs, x, eviction_policy='evict_first')")])
add("make_block_ptr", BLOCK_PTR + st("tl.load(bp, boundary_check=(0,), padding_option='zero')"), "",
    [("store through a block pointer", BLOCK_PTR.replace("x_ptr", "y_ptr").replace("bp", "out")
      + "tl.store(out, x, boundary_check=(0,))"),
     ("padding_option='nan'", BLOCK_PTR + st("tl.load(bp, boundary_check=(0,), padding_option='nan')")),
     ("2-D", "bp = tl.make_block_ptr(x_ptr, (n, n), (n, 1), (0, 0), (BLOCK, BLOCK), (1, 0))\n"
      + st2("tl.load(bp, boundary_check=(0, 1))"))])
add("advance", BLOCK_PTR + "bp = tl.advance(bp, (BLOCK,))\n" + st("tl.load(bp, boundary_check=(0,))"))
add("make_tensor_descriptor", DESC + st("desc.load([0])"), "06 08 09",
    [("desc.store", DESC + "desc.store([0], x)"),
     ("2-D", "desc = tl.make_tensor_descriptor(x_ptr, shape=[n, n], strides=[n, 1], block_shape=[BLOCK, BLOCK])\n"
      + st2("desc.load([0, 0])"))])
add("load_tensor_descriptor", DESC + st("tl.load_tensor_descriptor(desc, [0])"))
add("store_tensor_descriptor", DESC + "tl.store_tensor_descriptor(desc, [0], x)")
XDESC = "tl.extra.cuda.experimental_device_tensormap_create1d(y_ptr, x_ptr, BLOCK, n, tl.float32)\n"
XNOTE = ("Triton 3.2/3.3's experimental descriptor API (removed from Triton in 2025): the descriptor is 128 bytes "
         "in Tegula's own layout, read at run time; ordinary masked accesses, no TMA (docs/language.md)")
add("_experimental_make_tensor_descriptor",
    "desc = tl._experimental_make_tensor_descriptor(x_ptr, [n], [1], [BLOCK])\n" + st("desc.load([0])"),
    note="Triton 3.3's name of make_tensor_descriptor")
add("_experimental_descriptor_load", XDESC + st("tl._experimental_descriptor_load(y_ptr, [0], [BLOCK], tl.float32)"),
    note=XNOTE)
add("_experimental_descriptor_store",
    XDESC + "v = tl._experimental_descriptor_load(y_ptr, [0], [BLOCK], tl.float32)\n"
    "tl._experimental_descriptor_store(y_ptr, v, [0])", note=XNOTE)
add("tensor_descriptor", "desc: tl.tensor_descriptor = tl.make_tensor_descriptor(x_ptr, [n], [1], [BLOCK])\n"
    + st("desc.load([0])"),
    note="`desc.atomic_add` / `min` / `max` / `and` / `or` / `xor` return nothing, as in Triton; on sm_90 the TMA "
         "reduces the block where the PTX ISA allows (f32, 32-bit and u64 integer add; integer min/max/and/or/xor), "
         "elsewhere they are pointer atomics (docs/backend-cuda.md)")
add("pointer_type", st("tl.load(tl.load(i_ptr).to(tl.int64).to(tl.pointer_type(tl.float32)) + offs)"), "08",
    note="an int64 loaded from memory converts to a pointer")

group("Indexing")
add("flip", st("tl.flip(x, 0)"), "", [("dim=None", st("tl.flip(x)"))])
add("where", st("tl.where(x > 0, x, 0.0)"), "03 04 05 06 09")
add("swizzle2d", "i, j = tl.swizzle2d(xi, xi, 4, 4, 2)\n" + st("i + j"))
add("gather", st("tl.gather(x, xi & (BLOCK - 1), 0)"))

group("Math")
for f in ("ceil", "cos", "erf", "exp", "exp2", "floor", "log", "log2", "rsqrt", "sigmoid", "sin", "sqrt",
          "sqrt_rn"):
    add(f, st(f"tl.{f}(x)"), {"exp": "02", "sqrt": "05"}.get(f, ""),
        [("float16 operand", st(f"tl.{f}(x.to(tl.float16))"))] if f not in ("sqrt_rn",) else [],
        note="f32 on CUDA: `ex2.approx` of `x * log2(e)`, Triton's bits for normal results (below 2^-126 zero, "
             "where Triton's are subnormal); `libdevice.exp` is `expf`" if f == "exp" else "")
add("abs", st("tl.abs(x) + tl.abs(xi)"))
add("cdiv", st("tl.cdiv(xi, 3)"), "03 08 09")
add("clamp", st("tl.clamp(x, -1.0, 1.0)"), "",
    [("propagate_nan=tl.PropagateNan.ALL", st("tl.clamp(x, -1.0, 1.0, propagate_nan=tl.PropagateNan.ALL)"))])
add("div_rn", st("tl.div_rn(x, x + 1.0)"))
add("fdiv", st("tl.fdiv(x, x + 1.0)"), "", [("ieee_rounding=True", st("tl.fdiv(x, x + 1.0, ieee_rounding=True)"))])
add("fma", st("tl.fma(x, x, x)"))
add("maximum", st("tl.maximum(x, 0.0)"), "06",
    [("propagate_nan=tl.PropagateNan.ALL", st("tl.maximum(x, x, propagate_nan=tl.PropagateNan.ALL)"))])
add("minimum", st("tl.minimum(x, 0.0)"), "", [("integers", st("tl.minimum(xi, 3)"))])
add("softmax", st("tl.softmax(x)"), "",
    [("ieee_rounding=True", st("tl.softmax(x, ieee_rounding=True)")), ("dim=1", st2("tl.softmax(x2, dim=1)"))])
add("umulhi", st("tl.umulhi(xu, xu)"))
add("add", st("tl.add(x, x)"), note="undocumented in Triton")
add("sub", st("tl.sub(x, 1.0)"), note="undocumented in Triton")
add("mul", st("tl.mul(xi, xi, sanitize_overflow=False)"), note="undocumented in Triton")
add("expect_zero", st("tl.expect_zero(x, x > 1e30)"), note="undocumented in Triton")
add("math", st("tl.math.exp2(x) + tl.math.log2(x + 2.0) + tl.math.exp(x)"), "06", note="`tl.math.*` as `tl.*`")
add("extra", st("tl.extra.libdevice.tanh(x)"), "", note="`tl.extra.libdevice`, below")

group("Reductions")
add("sum", st("x + tl.sum(x, axis=0)"), "02 05 06",
    [("keep_dims=True", st("x + tl.sum(x, axis=0, keep_dims=True)")),
     ("dtype=", st("x + tl.sum(x, axis=0, dtype=tl.float64)")),
     ("axis=None on 2-D", st("x + tl.sum(x2)"))])
add("max", st("x + tl.max(x, axis=0)"), "02 06",
    [("return_indices=True", "v, i = tl.max(x, axis=0, return_indices=True)\n" + st("x + v + i")),
     ("keep_dims=True", st("x + tl.max(x, 0, keep_dims=True)"))])
add("min", st("x + tl.min(x, axis=0)"), "",
    [("return_indices=True", "v, i = tl.min(x, axis=0, return_indices=True)\n" + st("x + v + i"))])
add("argmax", st("x + tl.argmax(x, axis=0)"), "",
    [("tie_break_left=False", st("x + tl.argmax(x, axis=0, tie_break_left=False)"))])
add("argmin", st("x + tl.argmin(x, axis=0)"))
add("reduce", st("x + tl.reduce(x, 0, helper_add)"), "",
    [("keep_dims=True", st("x + tl.reduce(x, 0, helper_add, keep_dims=True)")),
     ("combine_fn= keyword", st("x + tl.reduce(x, axis=0, combine_fn=helper_add)"))])
add("xor_sum", st("x + tl.xor_sum(xi, axis=0)"))
add("reduce_or", st("x + tl.reduce_or(xi, axis=0)"))

group("Scans and sorting")
add("cumsum", st("tl.cumsum(x, 0)"), "", [("reverse=True", st("tl.cumsum(x, 0, reverse=True)")),
                                          ("dtype=", st("tl.cumsum(xi.to(tl.int8), 0, dtype=tl.int64)"))])
add("cumprod", st("tl.cumprod(x, 0)"), "", [("reverse=True", st("tl.cumprod(x, 0, reverse=True)"))])
add("associative_scan", st("tl.associative_scan(x, 0, helper_add)"), "",
    [("reverse=True", st("tl.associative_scan(x, 0, helper_add, reverse=True)"))])
add("sort", st("tl.sort(x)"), "", [("descending=True", st("tl.sort(x, descending=True)"))])
add("topk", "tl.store(y_ptr + tl.arange(0, 4), tl.topk(x, 4))", "",
    [("descending=False", "tl.store(y_ptr + tl.arange(0, 4), tl.topk(x, 4, descending=False))")])
add("bitonic_merge", st("tl.bitonic_merge(tl.sort(x))"))
add("histogram", st("tl.histogram(xi & 15, 16)"), "", [("mask=", st("tl.histogram(xi & 15, 16, mask=xi > 0)"))])

group("Atomics")
for f, ptr, val in (("atomic_add", "x_ptr", "x"), ("atomic_max", "x_ptr", "x"), ("atomic_min", "i_ptr", "xi"),
                    ("atomic_and", "i_ptr", "xi"), ("atomic_or", "i_ptr", "xi"), ("atomic_xor", "u_ptr", "xu"),
                    ("atomic_xchg", "x_ptr", "x")):
    add(f, st(f"tl.{f}({ptr} + offs, {val})"), "05" if f == "atomic_xchg" else "",
        [("mask=, sem='relaxed', scope='cta'",
          st(f"tl.{f}({ptr} + offs, {val}, mask=offs < n, sem='relaxed', scope='cta')"))])
add("atomic_cas", st("tl.atomic_cas(i_ptr + offs, xi, xi + 1)"), "05",
    [("sem='acquire', scope='gpu'", st("tl.atomic_cas(i_ptr + offs, xi, xi + 1, sem='acquire', scope='gpu')"))])

group("Random numbers")
add("rand", st("tl.rand(seed, offs)"), "04", [("n_rounds=7", st("tl.rand(seed, offs, n_rounds=7)"))])
add("randn", st("tl.randn(seed, offs)"))
add("randint", st("tl.randint(seed, offs)"))
for f in ("rand4x", "randn4x", "randint4x"):
    add(f, f"a, b, c, d = tl.{f}(seed, offs)\n" + st("a + b + c + d"))
add("philox", "a, b, c, d = tl.philox(seed, xu, xu, xu, xu)\n" + st("a ^ b ^ c ^ d"))
add("philox_impl", "a, b, c, d = tl.philox_impl(xu, xu, xu, xu, xu, xu)\n" + st("a ^ b ^ c ^ d"))
add("uint_to_uniform_float", st("tl.uint_to_uniform_float(xu)"))
add("pair_uniform_to_normal", "a, b = tl.pair_uniform_to_normal(x, x)\n" + st("a + b"))

group("Iterators")
add("range", "acc = x\nfor k in tl.range(0, n, 1):\n    acc += 1.0\n" + st("acc"), "02 06 09",
    [(f"{kw}", f"acc = x\nfor k in tl.range(0, n, 1, {kw}):\n    acc += 1.0\n" + st("acc"))
     for kw in ("num_stages=2", "loop_unroll_factor=2", "flatten=True", "warp_specialize=True",
                "disallow_acc_multi_buffer=True", "disable_licm=True")])
add("static_range", "acc = x\nfor k in tl.static_range(4):\n    acc += k\n" + st("acc"), "",
    [("start, stop, step", "acc = x\nfor k in tl.static_range(1, 8, 2):\n    acc += k\n" + st("acc"))])
add("condition", "k = 0\nwhile tl.condition(k < n):\n    k += 1\n" + st("x + k"),
    features=[("disable_licm=True", "k = 0\nwhile tl.condition(k < n, disable_licm=True):\n    k += 1\n" + st("x + k"))],
    note="disable_licm is accepted; Tegula still hoists loop-invariant code, which changes no result")

group("Inline code")
add("inline_asm_elementwise",
    st("tl.inline_asm_elementwise('mov.b32 $0, $1;', '=r,r', [xi], dtype=tl.int32, is_pure=True, pack=1)"),
    note="needs hardware the CPU backend lacks: PTX runs on the CUDA backend only; the CPU refuses it (E0805)")
add("map_elementwise", st("tl.map_elementwise(helper_add, x, x)"))

group("Compiler hints")
add("assume", "tl.assume(n > 0)\n" + st("x"), "03", [("divisibility", "tl.assume(n % 16 == 0)\n" + st("x"))])
add("multiple_of", st("tl.load(x_ptr + tl.multiple_of(offs, 16))"), "06 08 09")
add("max_contiguous", st("tl.load(x_ptr + tl.max_contiguous(offs, 16))"), "09")
add("max_constancy", st("tl.load(x_ptr + tl.max_constancy(offs * 0, 16))"))
add("debug_barrier", "tl.debug_barrier()\n" + st("x"), "05")

group("Debugging")
add("static_print", "tl.static_print('probe', BLOCK)\n" + st("x"))
add("static_assert", "tl.static_assert(BLOCK == 16, 'block')\n" + st("x"), "06")
add("device_print", "tl.device_print('x', x)\n" + st("x"), "", [("hex=True", "tl.device_print('x', xi, hex=True)\n" + st("x"))])
add("device_assert", "tl.device_assert(x == x, 'finite')\n" + st("x"))

group("Types and constants")
add("constexpr", "k: tl.constexpr = 2\n" + st("x * k"), ALL, [("tl.constexpr(value)", st("x * tl.constexpr(2)"))])
add("dtype", "tl.static_assert(isinstance(x.dtype, tl.dtype))\n" + st("x"))
add("block_type", "tl.static_assert(isinstance(x.type, tl.block_type))\n" + st("x"))
add("pi32_t", "tl.static_assert(i_ptr.dtype == tl.pi32_t)\n" + st("x"))
add("void", "tl.static_assert(tl.void != tl.float32)\n" + st("x"))
add("const", "c: tl.const = x\n" + st("c"), note="a pointer parameter `p: tl.const` refuses stores through it")
add("constexpr_type", "tl.static_assert(isinstance(tl.constexpr(1).type, tl.constexpr_type))\n" + st("x"))
add("PropagateNan", st("tl.maximum(x, x, propagate_nan=tl.PropagateNan.NONE)"))
add("TRITON_MAX_TENSOR_NUMEL", "tl.static_assert(BLOCK <= tl.TRITON_MAX_TENSOR_NUMEL)\n" + st("x"))
add("tuple_type", "t = (x, xi)\ntl.static_assert(t.type == tl.tuple_type([x.type, xi.type]))\n" + st("t[0]"),
    note="a tuple of types: indexing and iterating give them; `str()` and `==` against a plain tuple of "
         "types differ from Triton's")
add("tuple", "t = tl.tuple([x, x + 1.0])\n" + st("t[0] + t[1]"),
    features=[("a @jit function taking and returning tuples", st("helper_add((x, x), (x,))[2]"))])
add("slice", "t = (x, x + 1.0, x + 2.0)[1::2]\n" + st("t[0]"), note="a Python slice inside `[]`",
    features=[("a slice of a tile", st("x[0:BLOCK]"))])
add("async_task", "with tl.async_task([0]):\n    y = x + 1.0\n" + st("y"),
    note="Triton's warp specialization (Hopper/Blackwell warp groups): Tegula has none; every thread runs the block")
add("target_info", "tl.static_assert(tl.target_info.is_cuda() or True)\n" + st("x"),
    features=[("cuda_capability_geq", "if tl.target_info.cuda_capability_geq(8, 0):\n    x = x + 1.0\n" + st("x"))],
    note="is_hip() and its variants are False: Tegula has no HIP backend")
for t, tut in (("int1", ""), ("int8", ""), ("int16", ""), ("int32", ""), ("int64", ""), ("uint8", ""),
               ("uint16", ""), ("uint32", ""), ("uint64", ""), ("float16", "03 08 09"), ("bfloat16", ""),
               ("float32", "03 05 06 08 09"), ("float64", ""), ("float8e4nv", ""), ("float8e5", "06"),
               ("float8e4b8", ""), ("float8e5b16", ""), ("float8e4b15", "")):
    add(t, st(f"x.to(tl.{t}).to(tl.float32)"), tut,
        features=[("dot operands, loads and stores", f"p = y_ptr.to(tl.pointer_type(tl.{t}))\n"
                   f"tl.store(p + tl.arange(0, BLOCK), x.to(tl.{t}))\n"
                   + st2(f"tl.dot(x2.to(tl.{t}), x2.to(tl.{t}))"))]
        if t in ("float8e4b15", "float8e4b8", "float8e5b16") else [],
        note="tutorial 06 names it only for its FP8 variant (`tl.float8e5 if FP8_OUTPUT else tl.float16`: "
             "a constexpr choice, so the fp16 variant compiles)" if t == "float8e5" else
        "AMD's \"fnuz\" format (CDNA3: no negative zero, NaN at 0x80), converted in software on both backends"
        if t in ("float8e4b8", "float8e5b16") else "")

group("Tensor members")
for m, probe, tut in (("x.to", st("x.to(tl.float16)"), "03 05 06 08 09"), ("x.T", st2("x2.T"), "06"),
                      ("x.shape", "tl.static_assert(x2.shape[0] == BLOCK)\n" + st("x"), ""),
                      ("x.dtype", "tl.static_assert(x.dtype == tl.float32)\n" + st("x"), ""),
                      ("ptr.dtype.element_ty", st("x.to(y_ptr.dtype.element_ty)"), ""),
                      ("x.reshape", st2("x2.reshape(BLOCK * BLOCK).reshape(BLOCK, BLOCK)"), "06 09"),
                      ("x.permute", st2("x2.permute(1, 0)"), "06 09"),
                      ("x.trans", st2("x2.trans()"), ""), ("x.split", "a, b = tl.join(x, x).split()\n" + st("a + b"), "06"),
                      ("x.broadcast_to", st2("x[None, :].broadcast_to(BLOCK, BLOCK)"), ""),
                      ("x.expand_dims", st2("x.expand_dims(0).broadcast_to(BLOCK, BLOCK)"), ""),
                      ("x.sum", st("x + x.sum(0)"), ""), ("x.max", st("x + x.max(0)"), ""),
                      ("x.min", st("x + x.min(0)"), ""), ("x.argmax", st("x + x.argmax(0)"), ""),
                      ("x.reduce", st("x + x.reduce(0, helper_add)"), ""),
                      ("x.cumsum", st("x.cumsum(0)"), ""), ("x.sort", st("x.sort()"), ""),
                      ("x.exp", st("x.exp()"), ""), ("x.sqrt", st("x.sqrt()"), ""), ("x.abs", st("x.abs()"), ""),
                      ("x.sigmoid", st("x.sigmoid()"), ""), ("x.cdiv", st("xi.cdiv(3)"), ""),
                      ("x.logical_and", st("(x > 0).logical_and(x < 1)"), ""),
                      ("x.logical_or", st("(x > 0).logical_or(x < 1)"), ""),
                      ("ptr.atomic_add", st("(x_ptr + offs).atomic_add(x)"), ""),
                      ("x.item", st("x + x2.sum().item()"), "")):
    add(m, probe, tut)

group("tl.extra.cuda")
for f in ("globaltimer", "smid", "num_threads", "num_warps"):
    add(f"extra.cuda.{f}", st(f"x + tl.extra.cuda.{f}()"))
add("extra.cuda.experimental_device_tensormap_create1d", XDESC + st("x"), note=XNOTE)
add("extra.cuda.experimental_device_tensormap_create2d",
    "tl.extra.cuda.experimental_device_tensormap_create2d(y_ptr, x_ptr, [1, BLOCK], [1, n], tl.float32)\n" + st("x"),
    note=XNOTE)
add("extra.cuda.experimental_tensormap_fenceproxy_acquire",
    "tl.extra.cuda.experimental_tensormap_fenceproxy_acquire(y_ptr)\n" + st("x"),
    note="a no-op: the descriptor is read by ordinary loads, which see the program's own stores")
add("extra.cuda.gdc_wait", "tl.extra.cuda.gdc_wait()\n" + st("x"), "", note="tutorial 11")
add("extra.cuda.gdc_launch_dependents", "tl.extra.cuda.gdc_launch_dependents()\n" + st("x"), "", note="tutorial 11")

# --- libdevice -----------------------------------------------------------------------------------
# Argument kinds: f float32, d float64, i int32, u uint32, I int64, U uint64.
_ARGS = {"f": "x", "d": "xd", "i": "xi", "u": "xu", "I": "xi.to(tl.int64)", "U": "xu.to(tl.uint64)"}
_LIBDEVICE_SIGS = {
    "i": "clz popc brev ffs int2double_rn int2float_rn int2float_rz int2float_rd int2float_ru int_as_float",
    "ii": "mulhi mul24 hadd rhadd hiloint2double",
    "iii": "byte_perm",
    "iiu": "sad",
    "u": "uint2double_rn uint2float_rn uint2float_rz uint2float_rd uint2float_ru uint_as_float",
    "I": "ll2float_rn ll2float_rz ll2float_rd ll2float_ru ll2double_rn ll2double_rz ll2double_rd ll2double_ru "
         "longlong_as_double",
    "U": "ull2float_rn ull2float_rz ull2float_rd ull2float_ru ull2double_rn ull2double_rz ull2double_rd "
         "ull2double_ru",
    "d": "rcp64h double2float_rn double2float_rz double2float_rd double2float_ru double2int_rn double2int_rz "
         "double2int_rd double2int_ru double2uint_rn double2uint_rz double2uint_rd double2uint_ru double2loint "
         "double2hiint double2ll_rn double2ll_rz double2ll_rd double2ll_ru double2ull_rn double2ull_rz "
         "double2ull_rd double2ull_ru double_as_longlong isfinited",
    "f": "abs floor rsqrt ceil trunc exp2 saturatef rcp_rn rcp_rz rcp_rd rcp_ru sqrt_rn sqrt_rz sqrt_rd sqrt_ru "
         "sqrt float2int_rn float2int_rz float2int_rd float2int_ru float2uint_rn float2uint_rz float2uint_rd "
         "float2uint_ru float2ll_rn float2ll_rz float2ll_rd float2ll_ru float2ull_rn float2ull_rz float2ull_rd "
         "float2ull_ru float_as_int float_as_uint fast_sinf fast_cosf fast_log2f fast_logf fast_expf fast_tanf "
         "fast_exp10f fast_log10f rsqrt_rn rint llrint nearbyint isnan signbit finitef isinf sin cos sinpi cospi "
         "tan log2 exp exp10 cosh sinh tanh atan asin acos log log10 log1p acosh asinh atanh expm1 cbrt rcbrt j0 "
         "j1 y0 y1 cyl_bessel_i0 cyl_bessel_i1 erf erfinv erfc erfcx erfcinv normcdfinv normcdf lgamma tgamma "
         "round llround ilogb logb",
    "ff": "fast_dividef div_rn div_rz div_rd div_ru add_rn add_rz add_rd add_ru mul_rn mul_rz mul_rd mul_ru "
          "fast_powf sub_rn sub_rz sub_rd sub_ru copysign nextafter atan2 hypot rhypot fmod remainder pow fdim",
    "fff": "fma_rn fma_rz fma_rd fma_ru norm3d rnorm3d fma",
    "ffff": "norm4d rnorm4d",
    "if": "yn jn",
    "fi": "ldexp scalbn",
}
LIBDEVICE: list[Name] = []
for sig, names in _LIBDEVICE_SIGS.items():
    for f in names.split():
        args = ", ".join(_ARGS[k] for k in sig)
        LIBDEVICE.append(Name(f"libdevice.{f}", "tl.extra.libdevice (CUDA libdevice functions)",
                              st(f"libdevice.{f}({args})"), "07" if f == "asin" else ""))
LIBDEVICE.sort(key=lambda n: n.name)
