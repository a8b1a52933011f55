// Hand-built functions shared by the IR text and verifier tests.
#pragma once

#include <set>
#include <string>

#include "ir/builder.h"
#include "ir/ir.h"

namespace tegula::ir::samples {

inline Type i32() { return Type::of(Scalar::I32); }
inline Type f32() { return Type::of(Scalar::F32); }
inline Type i1() { return Type::of(Scalar::I1); }
inline Type tile(Scalar s, std::vector<int64_t> shape) { return Type::tile(s, std::move(shape)); }

// The vector-add kernel of DESIGN.md section 1, with source locations.
inline Function vector_add() {
  Function fn;
  fn.name = "add";
  fn.files = {"add.py"};
  Builder b(fn);
  b.set_insertion_end(fn.body());
  Type ptr = Type::ptr(Scalar::F32);
  for (const char* name : {"x", "y", "out"}) {
    fn.params.push_back(Param{name, ptr, 16});
    fn.add_block_arg(fn.body(), ptr);
  }
  fn.params.push_back(Param{"n", i32(), 1});
  ValueId x = fn.block(fn.body()).args[0], y = fn.block(fn.body()).args[1];
  ValueId out = fn.block(fn.body()).args[2];
  ValueId n = fn.add_block_arg(fn.body(), i32());

  Type offs_t = tile(Scalar::I32, {1024});
  b.set_loc(SourceLoc{0, 3, 11, 25});
  ValueId pid = b.create1(OpKind::ProgramId, {}, i32(), {{"axis", int64_t{0}}});
  ValueId block = b.int_constant(1024, i32());
  ValueId base = b.create1(OpKind::Mul, {pid, block}, i32());
  b.set_loc(SourceLoc{0, 3, 23, 41});
  ValueId range = b.create1(OpKind::Arange, {}, offs_t, {{"start", int64_t{0}}, {"end", int64_t{1024}}});
  ValueId offs = b.create1(OpKind::Add, {b.broadcast_to(base, {1024}), range}, offs_t);
  b.set_loc(SourceLoc{0, 4, 12, 20});
  ValueId mask = b.create1(OpKind::Cmp, {offs, b.broadcast_to(n, {1024})}, tile(Scalar::I1, {1024}),
                           {{"pred", std::string("lt")}});
  Type ptrs_t = tile(Scalar::F32, {1024});
  ptrs_t.pointer = true;
  b.set_loc(SourceLoc{0, 5, 9, 37});
  ValueId px = b.create1(OpKind::AddPtr, {b.broadcast_to(x, {1024}), offs}, ptrs_t);
  ValueId vx = b.create1(OpKind::Load, {px, mask}, tile(Scalar::F32, {1024}));
  b.set_loc(SourceLoc{0, 6, 9, 37});
  ValueId py = b.create1(OpKind::AddPtr, {b.broadcast_to(y, {1024}), offs}, ptrs_t);
  ValueId vy = b.create1(OpKind::Load, {py, mask}, tile(Scalar::F32, {1024}));
  b.set_loc(SourceLoc{0, 7, 5, 41});
  ValueId sum = b.create1(OpKind::Add, {vx, vy}, tile(Scalar::F32, {1024}));
  ValueId po = b.create1(OpKind::AddPtr, {b.broadcast_to(out, {1024}), offs}, ptrs_t);
  b.create(OpKind::Store, {po, sum, mask}, {});
  b.set_loc(SourceLoc{});
  b.create(OpKind::Return, {}, {});
  return fn;
}

// A function that uses every op kind of ops.def at least once, with nested
// regions and attributes of every kind. It verifies.
inline Function every_op() {
  Function fn;
  fn.name = "every_op";
  fn.files = {"k.py", "lib/helpers.py"};
  Builder b(fn);
  b.set_insertion_end(fn.body());
  fn.params = {Param{"x", Type::ptr(Scalar::F32), 16}, Param{"n", i32(), 16}, Param{"flag", i1(), 1}};
  ValueId x = fn.add_block_arg(fn.body(), fn.params[0].type);
  ValueId n = fn.add_block_arg(fn.body(), i32());
  ValueId flag = fn.add_block_arg(fn.body(), i1());

  Type ti = tile(Scalar::I32, {16});
  Type tf = tile(Scalar::F32, {16});
  Type tb = tile(Scalar::I1, {16});
  b.set_loc(SourceLoc{0, 2, 5, 9});
  ValueId pid = b.create1(OpKind::ProgramId, {}, i32(), {{"axis", int64_t{0}}});
  b.create1(OpKind::NumPrograms, {}, i32(), {{"axis", int64_t{2}}});
  ValueId range = b.create1(OpKind::Arange, {}, ti, {{"start", int64_t{0}}, {"end", int64_t{16}}});
  ValueId two = b.int_constant(2, i32());
  ValueId twos = b.create1(OpKind::Splat, {two}, ti);
  b.set_loc(SourceLoc{1, 40, 1, 2});
  ValueId acc_i = b.create1(OpKind::Add, {range, twos}, ti);
  for (OpKind k : {OpKind::Sub, OpKind::Mul, OpKind::Div, OpKind::Rem, OpKind::And, OpKind::Or, OpKind::Xor,
                   OpKind::Shl, OpKind::Shr, OpKind::Min, OpKind::Max, OpKind::UMulHi})
    acc_i = b.create1(k, {acc_i, twos}, ti);
  for (OpKind k : {OpKind::Neg, OpKind::Not, OpKind::Abs}) acc_i = b.create1(k, {acc_i}, ti);
  b.set_loc(SourceLoc{0, 3, 7, 20});
  ValueId lt = b.create1(OpKind::Cmp, {acc_i, twos}, tb, {{"pred", std::string("lt")}});
  ValueId half = b.float_constant(1.5, f32());
  ValueId halves = b.create1(OpKind::Splat, {half}, tf);
  ValueId fa = b.create1(OpKind::Cast, {range}, tf);
  fa = b.create1(OpKind::Pow, {fa, halves}, tf);
  fa = b.create1(OpKind::Fma, {fa, halves, halves}, tf);
  for (OpKind k : {OpKind::Exp, OpKind::Exp2, OpKind::Log, OpKind::Log2, OpKind::Sqrt, OpKind::Rsqrt, OpKind::Sin,
                   OpKind::Cos, OpKind::Tanh, OpKind::Erf, OpKind::Floor, OpKind::Ceil})
    fa = b.create1(k, {fa}, tf);
  ValueId fb = b.create1(OpKind::Select, {lt, fa, halves}, tf);
  b.create1(OpKind::Bitcast, {fb}, ti);
  Type ptrs = tf;
  ptrs.pointer = true;
  ValueId p = b.create1(OpKind::AddPtr, {b.create1(OpKind::Splat, {x}, ptrs), range}, ptrs);
  ValueId loaded = b.create1(OpKind::Load, {p, lt, halves}, tf,
                             {{"cache_modifier", std::string(".cg")}, {"volatile", int64_t{1}}});
  b.create(OpKind::Store, {p, loaded, lt}, {}, {{"eviction_policy", std::string("evict_last")}});

  ValueId col = b.create1(OpKind::ExpandDims, {fb}, tile(Scalar::F32, {16, 1}), {{"axis", int64_t{1}}});
  ValueId wide = b.create1(OpKind::Broadcast, {col}, tile(Scalar::F32, {16, 8}));
  b.create1(OpKind::Reshape, {wide}, tile(Scalar::F32, {128}));
  ValueId tall = b.create1(OpKind::Trans, {wide}, tile(Scalar::F32, {8, 16}), {{"perm", std::vector<int64_t>{1, 0}}});
  ValueId pair = b.create1(OpKind::Join, {fa, fb}, tile(Scalar::F32, {16, 2}));
  b.create(OpKind::Split, {pair}, {tf, tf});
  ValueId zero = b.float_constant(0.0, f32());
  ValueId square = b.create1(OpKind::Splat, {zero}, tile(Scalar::F32, {16, 16}));
  b.create1(OpKind::Dot, {wide, tall, square}, tile(Scalar::F32, {16, 16}), {{"precision", std::string("ieee")}});

  // reduce over axis 1 with an add combiner
  OpId reduce = b.create(OpKind::Reduce, {wide}, {tf}, {{"axis", int64_t{1}}});
  {
    BlockId combiner = fn.add_block(reduce);
    fn.op(reduce).regions.push_back(combiner);
    ValueId a = fn.add_block_arg(combiner, f32());
    ValueId c = fn.add_block_arg(combiner, f32());
    Builder inner(fn);
    inner.set_insertion_end(combiner);
    ValueId s = inner.create1(OpKind::Add, {a, c}, f32());
    inner.create(OpKind::Yield, {s}, {});
  }
  ValueId reduced = fn.op(reduce).results[0];

  // for i in range(0, n, 1): acc = acc + reduced; if flag: ... else: ...
  ValueId c0 = b.int_constant(0, i32());
  ValueId c1 = b.int_constant(1, i32());
  b.set_loc(SourceLoc{0, 10, 5, 30});
  OpId loop = b.create(OpKind::For, {c0, n, c1, reduced}, {tf});
  {
    BlockId body = fn.add_block(loop);
    fn.op(loop).regions.push_back(body);
    ValueId iv = fn.add_block_arg(body, i32());
    ValueId acc = fn.add_block_arg(body, tf);
    Builder inner(fn);
    inner.set_insertion_end(body);
    inner.set_loc(SourceLoc{0, 11, 9, 20});
    ValueId ivs = inner.create1(OpKind::Splat, {iv}, ti);
    ValueId ivf = inner.create1(OpKind::Cast, {ivs}, tf);
    OpId branch = inner.create(OpKind::If, {flag}, {tf});
    BlockId then_block = fn.add_block(branch);
    BlockId else_block = fn.add_block(branch);
    fn.op(branch).regions = {then_block, else_block};
    Builder then_b(fn);
    then_b.set_insertion_end(then_block);
    then_b.create(OpKind::Yield, {then_b.create1(OpKind::Add, {acc, ivf}, tf)}, {});
    Builder else_b(fn);
    else_b.set_insertion_end(else_block);
    else_b.create(OpKind::Yield, {acc}, {});
    inner.create(OpKind::Yield, {fn.op(branch).results[0]}, {});
  }

  // while (i < n) i = i + pid
  b.set_loc(SourceLoc{0, 20, 5, 10});
  OpId loop2 = b.create(OpKind::While, {c0}, {i32()});
  {
    BlockId before = fn.add_block(loop2);
    BlockId after = fn.add_block(loop2);
    fn.op(loop2).regions = {before, after};
    ValueId i = fn.add_block_arg(before, i32());
    Builder bb(fn);
    bb.set_insertion_end(before);
    ValueId go = bb.create1(OpKind::Cmp, {i, n}, i1(), {{"pred", std::string("lt")}});
    bb.create(OpKind::Condition, {go, i}, {});
    ValueId j = fn.add_block_arg(after, i32());
    Builder ab(fn);
    ab.set_insertion_end(after);
    ab.create(OpKind::Yield, {ab.create1(OpKind::Add, {j, pid}, i32())}, {});
  }
  ValueId old = b.create1(OpKind::AtomicRmw, {p, loaded, lt}, tf,
                          {{"op", std::string("max")}, {"sem", std::string("relaxed")}, {"scope", std::string("cta")}});
  b.create1(OpKind::AtomicCas, {p, old, loaded}, tf, {{"sem", std::string("acq_rel")}, {"scope", std::string("gpu")}});
  // a descriptor block of x (shape n, stride 1, offset pid), loaded, stored back and added
  ValueId one = b.int_constant(1, i32());
  ValueId block = b.create1(OpKind::DescLoad, {x, n, one, pid}, tf, {{"padding", std::string("nan")}});
  b.create(OpKind::DescStore, {x, n, one, pid, block}, {});
  b.create(OpKind::DescAtomic, {x, n, one, pid, block}, {}, {{"op", std::string("add")}});
  b.create1(OpKind::Hint, {range}, ti,
            {{"divisibility", std::vector<int64_t>{16}}, {"contiguity", std::vector<int64_t>{16}}});
  ValueId log1p = b.create1(OpKind::Log1p, {fb}, tf);
  b.create1(OpKind::Atan2, {log1p, halves}, tf);
  // scan (reversed running sum), sort, gather, histogram
  OpId scan = b.create(OpKind::Scan, {fb}, {tf}, {{"axis", int64_t{0}}, {"reverse", int64_t{1}}});
  {
    BlockId combiner = fn.add_block(scan);
    fn.op(scan).regions.push_back(combiner);
    ValueId a = fn.add_block_arg(combiner, f32());
    ValueId c = fn.add_block_arg(combiner, f32());
    Builder inner(fn);
    inner.set_insertion_end(combiner);
    inner.create(OpKind::Yield, {inner.create1(OpKind::Add, {a, c}, f32())}, {});
  }
  ValueId sorted = b.create1(OpKind::Sort, {fn.op(scan).results[0]}, tf, {{"axis", int64_t{0}}, {"descending", int64_t{1}}});
  b.create1(OpKind::Gather, {sorted, range}, tf, {{"axis", int64_t{0}}});
  b.create1(OpKind::Histogram, {range, lt}, tile(Scalar::I32, {8}));
  // The other math library ops, chained.
  ValueId fm = log1p;
  for (OpKind k : {OpKind::Tan, OpKind::Atan, OpKind::Asin, OpKind::Acos, OpKind::Sinh, OpKind::Cosh, OpKind::Asinh,
                   OpKind::Acosh, OpKind::Atanh, OpKind::Erfc, OpKind::Exp10, OpKind::Expm1, OpKind::Log10,
                   OpKind::Cbrt, OpKind::Rint, OpKind::Round, OpKind::Trunc, OpKind::Lgamma})
    fm = b.create1(k, {fm}, tf);
  for (OpKind k : {OpKind::Hypot, OpKind::Copysign, OpKind::Nextafter}) fm = b.create1(k, {fm, halves}, tf);
  // The libdevice ops (ops.def's LIB rows) and tl.extra.cuda's.
  for (OpKind k : {OpKind::AddRound, OpKind::SubRound, OpKind::MulRound, OpKind::DivRound})
    fm = b.create1(k, {fm, halves}, tf, {{"rounding", std::string("rd")}});
  fm = b.create1(OpKind::FmaRound, {fm, halves, halves}, tf, {{"rounding", std::string("ru")}});
  fm = b.create1(OpKind::SqrtRound, {fm}, tf, {{"rounding", std::string("rz")}});
  for (OpKind k : {OpKind::RsqrtRn, OpKind::Sinpi, OpKind::Cospi, OpKind::Erfinv, OpKind::Erfcinv, OpKind::Erfcx,
                   OpKind::Normcdf, OpKind::Normcdfinv, OpKind::Tgamma, OpKind::J0, OpKind::J1, OpKind::Y0,
                   OpKind::Y1, OpKind::BesselI0, OpKind::BesselI1, OpKind::Rcbrt, OpKind::Logb, OpKind::Saturatef,
                   OpKind::Rcp64h, OpKind::FastExpf, OpKind::FastExp10f, OpKind::FastLogf, OpKind::FastLog2f,
                   OpKind::FastLog10f, OpKind::FastSinf, OpKind::FastCosf, OpKind::FastTanf})
    fm = b.create1(k, {fm}, tf);
  for (OpKind k : {OpKind::Fdim, OpKind::Remainder, OpKind::Rhypot, OpKind::FastPowf}) fm = b.create1(k, {fm, halves}, tf);
  for (OpKind k : {OpKind::Norm3d, OpKind::Rnorm3d}) fm = b.create1(k, {fm, halves, halves}, tf);
  for (OpKind k : {OpKind::Norm4d, OpKind::Rnorm4d}) fm = b.create1(k, {fm, halves, halves, halves}, tf);
  for (OpKind k : {OpKind::Ldexp, OpKind::Jn, OpKind::Yn}) fm = b.create1(k, {fm, range}, tf);
  for (OpKind k : {OpKind::Popc, OpKind::Clz, OpKind::Brev}) b.create1(k, {range}, ti);
  b.create1(OpKind::GlobalTimer, {}, Type::of(Scalar::I64));
  b.create1(OpKind::Smid, {}, Type::of(Scalar::I32));
  b.create(OpKind::GdcWait, {}, {});
  b.create(OpKind::GdcLaunchDependents, {}, {});
  b.set_loc(SourceLoc{0, 30, 5, 10});
  b.create(OpKind::Print, {fn.op(loop).results[0], fn.op(loop2).results[0]}, {},
           {{"prefix", std::string("acc \"and\" i:\n\t\\")}});
  b.create(OpKind::Assert, {lt}, {}, {{"message", std::string("offsets must be small")}});
  b.create(OpKind::InlineAsm, {fm, halves}, {tf, tile(Scalar::I32, {16})},
           {{"asm", std::string("add.f32 $0, $2, $3; mov.b32 $1, $2;")}, {"constraints", std::string("=f,=r,f,f")},
            {"pack", int64_t{1}}, {"pure", int64_t{1}}});
  b.set_loc(SourceLoc{});
  b.create(OpKind::Return, {}, {});
  return fn;
}

// The op kinds a function uses (live ops only).
inline std::set<OpKind> kinds_used(const Function& fn) {
  std::set<OpKind> kinds;
  fn.walk([&](OpId o) { kinds.insert(fn.op(o).kind); });
  return kinds;
}

}  // namespace tegula::ir::samples
