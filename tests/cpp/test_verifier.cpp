// One test per verifier rule: build a function that breaks the rule, assert
// the exact message. The well-formed samples verify cleanly.
#include <gtest/gtest.h>

#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "ir_samples.h"
#include "support/diagnostic.h"

namespace tegula::ir {
namespace {

using namespace samples;

Type ti(std::vector<int64_t> shape) { return Type::tile(Scalar::I32, std::move(shape)); }
Type tf(std::vector<int64_t> shape) { return Type::tile(Scalar::F32, std::move(shape)); }
Type tb(std::vector<int64_t> shape) { return Type::tile(Scalar::I1, std::move(shape)); }
Type tp(std::vector<int64_t> shape) { return Type{Scalar::F32, true, std::move(shape)}; }

// A kernel under construction; `result()` appends `return` and verifies.
class Kernel {
 public:
  Kernel() {
    fn.name = "k";
    b.set_insertion_end(fn.body());
  }
  ValueId param(const std::string& name, Type type) {
    fn.params.push_back(Param{name, type, 1});
    return fn.add_block_arg(fn.body(), type);
  }
  ValueId i(int64_t v, Type t = i32()) { return b.int_constant(v, t); }
  ValueId f(double v, Type t = f32()) { return b.float_constant(v, t); }
  ValueId op(OpKind kind, std::vector<ValueId> operands, Type type, std::vector<NamedAttr> attrs = {}) {
    return b.create1(kind, std::move(operands), std::move(type), std::move(attrs));
  }
  // An op with one region per entry of `region_args`; `fill(i, builder, args)` fills region i.
  template <class Fill>
  OpId region_op(OpKind kind, std::vector<ValueId> operands, std::vector<Type> results,
                 std::vector<std::vector<Type>> region_args, Fill fill, std::vector<NamedAttr> attrs = {}) {
    OpId id = b.create(kind, std::move(operands), results, std::move(attrs));
    for (size_t r = 0; r < region_args.size(); ++r) {
      BlockId block = fn.add_block(id);
      fn.op(id).regions.push_back(block);
      std::vector<ValueId> args;
      for (const Type& t : region_args[r]) args.push_back(fn.add_block_arg(block, t));
      Builder inner(fn);
      inner.set_insertion_end(block);
      fill(r, inner, args);
    }
    return id;
  }
  std::string result() {
    b.create(OpKind::Return, {}, {});
    return verify(fn);
  }

  Function fn;
  Builder b{fn};
};

void yield(Builder& b, std::vector<ValueId> values) { b.create(OpKind::Yield, std::move(values), {}); }

TEST(Verifier, WellFormedSamples) {
  EXPECT_EQ(verify(vector_add()), "");
  EXPECT_EQ(verify(every_op()), "");
  EXPECT_NO_THROW(verify_or_throw(every_op(), "test"));
}

// --- structure --------------------------------------------------------------------------

TEST(Verifier, ErasedOpStillLinked) {
  Kernel k;
  ValueId c = k.i(1);
  k.op(OpKind::Neg, {c}, i32());
  k.fn.op(k.fn.block(k.fn.body()).ops[1]).erased = true;  // erased without unlinking
  EXPECT_EQ(k.result(), "`neg`: erased op is still linked into a block");
}

TEST(Verifier, ErasingProperlyIsFine) {
  Kernel k;
  ValueId c = k.i(1);
  ValueId n = k.op(OpKind::Neg, {c}, i32());
  k.fn.erase_op(k.fn.value(n).def);
  EXPECT_EQ(k.result(), "");
}

TEST(Verifier, ErasingManyOpsTogetherUnlinksEachOnceAndKeepsTheOrder) {
  Function fn = parse(R"(kernel @k(%p: ptr<f32>, %n: i32) {
  %0 = constant {value = 0} : i32
  %1 = constant {value = 1} : i32
  %2 = constant {value = 0.0} : f32
  %3 = add %n, %1 : i32
  %4 = for %0, %n, %1, %2 : f32 {
  ^bb(%5: i32, %6: f32):
    %7 = mul %5, %5 : i32
    %8 = add %6, %6 : f32
    yield %8
  }
  %9 = mul %n, %n : i32
  %10 = sub %n, %1 : i32
  store %p, %2
  return
}
)");
  const Block& body = fn.block(fn.body());
  const OpId add = body.ops[3], loop = body.ops[4], mul = body.ops[5], sub = body.ops[6];
  const OpId inner_mul = fn.block(fn.op(loop).regions[0]).ops[0];
  fn.erase_op(sub);  // already erased: skipped
  // Two blocks at once, one op listed twice, and an op whose region goes with it.
  fn.erase_ops({inner_mul, mul, add, loop, mul, sub});
  for (OpId o : {add, loop, mul, sub, inner_mul}) EXPECT_TRUE(fn.op(o).erased);
  EXPECT_EQ(verify(fn), "");
  EXPECT_EQ(print(fn), R"(kernel @k(%p: ptr<f32>, %n: i32) {
  %0 = constant {value = 0} : i32
  %1 = constant {value = 1} : i32
  %2 = constant {value = 0.0} : f32
  store %p, %2
  return
}
)");
}

TEST(Verifier, OpLinkedTwice) {
  Kernel k;
  k.i(1);
  OpId c = k.fn.block(k.fn.body()).ops[0];
  k.fn.block(k.fn.body()).ops.push_back(c);
  EXPECT_EQ(k.result(), "`constant`: op is linked into the IR more than once");
}

TEST(Verifier, WrongParentLink) {
  Kernel k;
  OpId id = k.fn.create_op(OpKind::Constant, {}, {i32()});
  k.fn.op(id).attrs = {{"value", int64_t{0}}};
  k.fn.block(k.fn.body()).ops.push_back(id);  // linked by hand, parent not set
  EXPECT_EQ(k.result(), "`constant`: op's parent is not the block that holds it");
}

TEST(Verifier, SharedRegionBlock) {
  Kernel k;
  ValueId c = k.param("c", i1());
  OpId branch = k.region_op(OpKind::If, {c}, {}, {{}, {}}, [](size_t, Builder& b, auto&) { yield(b, {}); });
  k.fn.op(branch).regions[1] = k.fn.op(branch).regions[0];
  EXPECT_EQ(k.result(), "`if`: region block is shared with another region");
}

TEST(Verifier, DanglingOperand) {
  Kernel k;
  ValueId c = k.i(1);
  ValueId n = k.op(OpKind::Neg, {c}, i32());
  k.fn.op(k.fn.value(n).def).operands[0] = ValueId{12345};
  EXPECT_EQ(k.result(), "`neg`: operand 0 is not a value");
}

// --- parameters -------------------------------------------------------------------------

TEST(Verifier, ParamsMustMatchBodyArguments) {
  Kernel k;
  k.param("x", i32());
  k.fn.params.push_back(Param{"y", i32(), 1});
  EXPECT_EQ(k.result(), "kernel has 2 params but its body has 1 arguments");

  Kernel t;
  t.param("x", i32());
  t.fn.params[0].type = Type::of(Scalar::I64);
  EXPECT_EQ(t.result(), "param 0 (x) has type i64 but its body argument is i32");

  Kernel d;
  d.param("x", i32());
  d.param("x", i32());
  EXPECT_EQ(d.result(), "param 1 (x) repeats the name of param 0");

  Kernel z;
  z.param("x", i32());
  z.fn.params[0].divisibility = 0;
  EXPECT_EQ(z.result(), "param 0 (x) has divisibility 0");
}

// --- dominance --------------------------------------------------------------------------

TEST(Verifier, OperandMustBeDefinedBeforeUse) {
  Kernel k;
  ValueId c = k.i(1);
  ValueId n = k.op(OpKind::Neg, {c}, i32());
  k.op(OpKind::Abs, {n}, i32());
  // Move the neg after its user.
  std::vector<OpId>& ops = k.fn.block(k.fn.body()).ops;
  std::swap(ops[1], ops[2]);
  EXPECT_EQ(k.result(), "`abs`: operand 0 is not defined before this use (or not in scope)");
}

TEST(Verifier, RegionValuesAreNotVisibleAfterTheRegion) {
  Kernel k;
  ValueId c = k.param("c", i1());
  ValueId inner;
  k.region_op(OpKind::If, {c}, {}, {{}, {}}, [&](size_t r, Builder& b, auto&) {
    if (r == 0) inner = b.int_constant(3, i32());
    yield(b, {});
  });
  k.op(OpKind::Neg, {inner}, i32());
  EXPECT_EQ(k.result(), "`neg`: operand 0 is not defined before this use (or not in scope)");
}

TEST(Verifier, AnOpCannotUseItsOwnResultInItsRegion) {
  Kernel k;
  ValueId c = k.param("c", i1());
  OpId branch = k.region_op(OpKind::If, {c}, {i32()}, {{}, {}}, [&](size_t, Builder& b, auto&) {
    yield(b, {b.int_constant(1, i32())});
  });
  k.fn.op(k.fn.block(k.fn.op(branch).regions[0]).ops.back()).operands[0] = k.fn.op(branch).results[0];
  EXPECT_EQ(k.result(), "`yield`: operand 0 is not defined before this use (or not in scope)");
}

TEST(Verifier, EnclosingValuesAreVisibleInRegions) {
  Kernel k;
  ValueId c = k.param("c", i1());
  ValueId outer = k.i(5);
  k.region_op(OpKind::If, {c}, {i32()}, {{}, {}}, [&](size_t, Builder& b, auto&) {
    yield(b, {b.create1(OpKind::Neg, {outer}, i32())});
  });
  EXPECT_EQ(k.result(), "");
}

// --- counts -----------------------------------------------------------------------------

TEST(Verifier, OperandCounts) {
  Kernel a;
  a.op(OpKind::Add, {a.i(1)}, i32());
  EXPECT_EQ(a.result(), "`add`: expects 2 operands, got 1");

  Kernel l;
  ValueId p = l.param("p", Type::ptr(Scalar::F32));
  ValueId m = l.param("m", i1());
  ValueId o = l.f(0);
  l.op(OpKind::Load, {p, m, o, o}, f32());
  EXPECT_EQ(l.result(), "`load`: expects 1 to 3 operands, got 4");

  Kernel f;
  ValueId z = f.i(0);
  f.region_op(OpKind::For, {z, z}, {}, {{i32()}}, [](size_t, Builder& b, auto&) { yield(b, {}); });
  EXPECT_EQ(f.result(), "`for`: expects at least 3 operands, got 2");

  Kernel r;
  r.b.create(OpKind::Return, {r.i(0)}, {});
  EXPECT_EQ(verify(r.fn), "`return`: expects 0 operands, got 1");
}

TEST(Verifier, ResultCounts) {
  Kernel s;
  ValueId t = s.op(OpKind::Splat, {s.f(1)}, tf({4, 2}));
  s.b.create(OpKind::Split, {t}, {tf({4})});
  EXPECT_EQ(s.result(), "`split`: expects 2 results, got 1");

  Kernel st;
  ValueId p = st.param("p", Type::ptr(Scalar::F32));
  st.b.create(OpKind::Store, {p, st.f(1)}, {f32()});
  EXPECT_EQ(st.result(), "`store`: expects 0 results, got 1");
}

TEST(Verifier, RegionCounts) {
  Kernel k;
  ValueId c = k.param("c", i1());
  k.region_op(OpKind::If, {c}, {}, {{}}, [](size_t, Builder& b, auto&) { yield(b, {}); });
  EXPECT_EQ(k.result(), "`if`: expects 2 regions, got 1");

  Kernel n;
  OpId id = n.b.create(OpKind::Neg, {n.i(1)}, {i32()});
  BlockId stray = n.fn.add_block(id);
  n.fn.op(id).regions.push_back(stray);
  n.b.set_insertion_end(stray);
  yield(n.b, {});
  n.b.set_insertion_end(n.fn.body());
  EXPECT_EQ(n.result(), "`neg`: expects 0 regions, got 1");
}

// --- terminators ------------------------------------------------------------------------

TEST(Verifier, Terminators) {
  Kernel body;
  body.i(1);
  EXPECT_EQ(verify(body.fn), "`constant`: the kernel body must end in `return`, not `constant`");

  Kernel empty;
  EXPECT_EQ(verify(empty.fn), "the kernel body is empty; it must end in `return`");

  Kernel mid;
  mid.b.create(OpKind::Return, {}, {});
  mid.i(1);
  EXPECT_EQ(mid.result(), "`return`: terminator must be the last op of its block");

  Kernel y;
  y.b.create(OpKind::Yield, {}, {});
  EXPECT_EQ(verify(y.fn), "`yield`: the kernel body must end in `return`, not `yield`");

  Kernel r;
  ValueId c = r.param("c", i1());
  r.region_op(OpKind::If, {c}, {}, {{}, {}}, [](size_t i, Builder& b, auto&) {
    if (i == 0)
      b.create(OpKind::Return, {}, {});
    else
      yield(b, {});
  });
  EXPECT_EQ(r.result(), "`return`: a region of `if` must end in `yield`, not `return`");

  Kernel e;
  ValueId c2 = e.param("c", i1());
  e.region_op(OpKind::If, {c2}, {}, {{}, {}}, [](size_t i, Builder& b, auto&) {
    if (i == 0) yield(b, {});
  });
  EXPECT_EQ(e.result(), "`if`: a region of `if` is empty; it must end in `yield`");
}

// --- types of values ---------------------------------------------------------------------

TEST(Verifier, TileDimensionsArePowersOfTwo) {
  Kernel k;
  k.op(OpKind::Splat, {k.i(1)}, ti({16, 3}));
  EXPECT_EQ(k.result(), "`splat`: result 0 has type tile<16x3xi32>: tile dimensions must be powers of two");

  Kernel big;
  big.op(OpKind::Splat, {big.i(1)}, ti({1024, 2048}));
  EXPECT_EQ(big.result(), "`splat`: result 0 has type tile<1024x2048xi32>: more than 1048576 elements");

  Kernel huge;  // the element count would overflow int64
  huge.op(OpKind::Splat, {huge.i(1)}, ti({int64_t{1} << 20, int64_t{1} << 62}));
  EXPECT_EQ(huge.result(),
            "`splat`: result 0 has type tile<1048576x4611686018427387904xi32>: more than 1048576 elements");

  Kernel arg;
  ValueId z = arg.i(0);
  arg.region_op(OpKind::For, {z, z, z}, {}, {{ti({0})}}, [](size_t, Builder& b, auto&) { yield(b, {}); });
  EXPECT_EQ(arg.result(), "`for`: block argument 0 has type tile<0xi32>: tile dimensions must be powers of two");
}

// --- constants and indices ----------------------------------------------------------------

TEST(Verifier, Constants) {
  Kernel fi;
  fi.b.create1(OpKind::Constant, {}, i32(), {{"value", 1.0}});
  EXPECT_EQ(fi.result(), "`constant`: the value of a i32 constant must be an integer attribute");

  Kernel ff;
  ff.b.create1(OpKind::Constant, {}, tf({8}), {{"value", int64_t{1}}});
  EXPECT_EQ(ff.result(), "`constant`: the value of a tile<8xf32> constant must be a float attribute");

  Kernel none;
  none.b.create1(OpKind::Constant, {}, i32());
  EXPECT_EQ(none.result(), "`constant`: needs a `value` attribute");

  Kernel range;
  range.i(300, Type::of(Scalar::I8));
  EXPECT_EQ(range.result(), "`constant`: value 300 does not fit in i8");

  Kernel boolean;
  boolean.i(2, i1());
  EXPECT_EQ(boolean.result(), "`constant`: value 2 does not fit in i1");

  Kernel unsigned_ok;
  unsigned_ok.i(255, Type::of(Scalar::U8));
  unsigned_ok.i(-1, Type::of(Scalar::U8));  // same bits as 255
  unsigned_ok.i(-1, Type::of(Scalar::U64));
  EXPECT_EQ(unsigned_ok.result(), "");

  Kernel ptr;
  ptr.i(0, Type::ptr(Scalar::F32));
  EXPECT_EQ(ptr.result(), "`constant`: cannot have pointer type ptr<f32>");
}

TEST(Verifier, ProgramIdAndNumPrograms) {
  Kernel axis;
  axis.op(OpKind::ProgramId, {}, i32(), {{"axis", int64_t{3}}});
  EXPECT_EQ(axis.result(), "`program_id`: axis must be 0, 1 or 2, got 3");

  Kernel type;
  type.op(OpKind::NumPrograms, {}, Type::of(Scalar::I64), {{"axis", int64_t{0}}});
  EXPECT_EQ(type.result(), "`num_programs`: result 0 must be i32, got i64");

  Kernel missing;
  missing.op(OpKind::ProgramId, {}, i32(), {{"axis", std::string("x")}});
  EXPECT_EQ(missing.result(), "`program_id`: needs an integer attribute `axis`");
}

TEST(Verifier, Arange) {
  auto arange = [](int64_t start, int64_t end, Type t) {
    Kernel k;
    k.op(OpKind::Arange, {}, std::move(t), {{"start", start}, {"end", end}});
    return k.result();
  };
  EXPECT_EQ(arange(0, 16, ti({16})), "");
  EXPECT_EQ(arange(8, 24, ti({16})), "");
  EXPECT_EQ(arange(0, 12, ti({16})), "`arange`: length end - start = 12 is not a power of two");
  EXPECT_EQ(arange(4, 4, ti({16})), "`arange`: end (4) must be greater than start (4)");
  EXPECT_EQ(arange(0, 16, ti({32})), "`arange`: result 0 must be tile<16xi32>, got tile<32xi32>");
  EXPECT_EQ(arange(0, 16, Type::tile(Scalar::I64, {16})), "`arange`: result 0 must be tile<16xi32>, got tile<16xi64>");
}

// --- shape ops ------------------------------------------------------------------------------

TEST(Verifier, Splat) {
  Kernel k;
  ValueId t = k.op(OpKind::Splat, {k.i(1)}, ti({4}));
  k.op(OpKind::Splat, {t}, ti({4}));
  EXPECT_EQ(k.result(), "`splat`: operand must be a scalar, got tile<4xi32>");

  Kernel e;
  e.op(OpKind::Splat, {e.i(1)}, tf({4}));
  EXPECT_EQ(e.result(), "`splat`: result 0 must be tile<4xi32>, got tile<4xf32>");
}

TEST(Verifier, BroadcastOnlyExpandsSizeOneDims) {
  Kernel k;
  ValueId t = k.op(OpKind::Splat, {k.i(1)}, ti({4, 1}));
  k.op(OpKind::Broadcast, {t}, ti({4, 8}));
  EXPECT_EQ(k.result(), "");

  Kernel bad;
  ValueId u = bad.op(OpKind::Splat, {bad.i(1)}, ti({4, 2}));
  bad.op(OpKind::Broadcast, {u}, ti({4, 8}));
  EXPECT_EQ(bad.result(), "`broadcast`: dimension 1 has size 2; only size-1 dimensions can be broadcast (to 8)");

  Kernel rank;
  ValueId v = rank.op(OpKind::Splat, {rank.i(1)}, ti({4}));
  rank.op(OpKind::Broadcast, {v}, ti({4, 8}));
  EXPECT_EQ(rank.result(),
            "`broadcast`: operand (tile<4xi32>) and result (tile<4x8xi32>) must be tiles of the same rank and "
            "element type");
}

TEST(Verifier, ExpandDims) {
  Kernel k;
  ValueId t = k.op(OpKind::Splat, {k.i(1)}, ti({4}));
  k.op(OpKind::ExpandDims, {t}, ti({1, 4}), {{"axis", int64_t{2}}});
  EXPECT_EQ(k.result(), "`expand_dims`: axis 2 is out of range for rank 1");

  Kernel shape;
  ValueId u = shape.op(OpKind::Splat, {shape.i(1)}, ti({4}));
  shape.op(OpKind::ExpandDims, {u}, ti({1, 4}), {{"axis", int64_t{1}}});
  EXPECT_EQ(shape.result(), "`expand_dims`: result 0 must be tile<4x1xi32>, got tile<1x4xi32>");
}

TEST(Verifier, Reshape) {
  Kernel k;
  ValueId t = k.op(OpKind::Splat, {k.i(1)}, ti({4, 8}));
  k.op(OpKind::Reshape, {t}, ti({64}));
  EXPECT_EQ(k.result(), "`reshape`: cannot reshape 32 elements into 64");
}

TEST(Verifier, Trans) {
  Kernel k;
  ValueId t = k.op(OpKind::Splat, {k.i(1)}, ti({4, 8}));
  k.op(OpKind::Trans, {t}, ti({8, 4}), {{"perm", std::vector<int64_t>{0, 0}}});
  EXPECT_EQ(k.result(), "`trans`: perm is not a permutation of the 2 dimensions");

  Kernel shape;
  ValueId u = shape.op(OpKind::Splat, {shape.i(1)}, ti({4, 8}));
  shape.op(OpKind::Trans, {u}, ti({4, 8}), {{"perm", std::vector<int64_t>{1, 0}}});
  EXPECT_EQ(shape.result(), "`trans`: result 0 must be tile<8x4xi32>, got tile<4x8xi32>");

  Kernel missing;
  ValueId w = missing.op(OpKind::Splat, {missing.i(1)}, ti({4, 8}));
  missing.op(OpKind::Trans, {w}, ti({8, 4}), {{"perm", int64_t{1}}});
  EXPECT_EQ(missing.result(), "`trans`: needs an int-list attribute `perm`");
}

TEST(Verifier, JoinAndSplit) {
  Kernel j;
  ValueId a = j.op(OpKind::Splat, {j.f(1)}, tf({4}));
  ValueId c = j.op(OpKind::Splat, {j.f(1)}, tf({8}));
  j.op(OpKind::Join, {a, c}, tf({4, 2}));
  EXPECT_EQ(j.result(), "`join`: operands must have the same type, got tile<4xf32> and tile<8xf32>");

  Kernel s;
  ValueId t = s.op(OpKind::Splat, {s.f(1)}, tf({2, 4}));
  s.b.create(OpKind::Split, {t}, {tf({2}), tf({2})});
  EXPECT_EQ(s.result(), "`split`: operand must be a tile whose last dimension is 2, got tile<2x4xf32>");

  Kernel scalar;  // join of scalars gives a 2-element tile; split of it gives scalars back
  ValueId pair = scalar.op(OpKind::Join, {scalar.f(1), scalar.f(2)}, tf({2}));
  scalar.b.create(OpKind::Split, {pair}, {f32(), f32()});
  EXPECT_EQ(scalar.result(), "");
}

// --- elementwise ----------------------------------------------------------------------------

TEST(Verifier, ElementwiseShapesMatch) {
  Kernel k;
  ValueId a = k.op(OpKind::Splat, {k.i(1)}, ti({16}));
  ValueId c = k.op(OpKind::Splat, {k.i(1)}, ti({32}));
  k.op(OpKind::Add, {a, c}, ti({16}));
  EXPECT_EQ(k.result(), "`add`: operand 1 (tile<32xi32>) must have the shape of the result (tile<16xi32>)");
}

TEST(Verifier, ArithmeticTypes) {
  Kernel mix;
  mix.op(OpKind::Add, {mix.i(1), mix.i(2, Type::of(Scalar::I64))}, i32());
  EXPECT_EQ(mix.result(), "`add`: operand 1 (i64) must have the result type (i32)");

  Kernel ptr;
  ValueId p = ptr.param("p", Type::ptr(Scalar::F32));
  ptr.op(OpKind::Sub, {p, p}, Type::ptr(Scalar::F32));
  EXPECT_EQ(ptr.result(), "`sub`: does not apply to pointers (ptr<f32>)");

  Kernel bits;
  bits.op(OpKind::And, {bits.f(1), bits.f(2)}, f32());
  EXPECT_EQ(bits.result(), "`and`: needs integer operands, got f32");

  Kernel math;
  math.op(OpKind::Exp, {math.i(1)}, i32());
  EXPECT_EQ(math.result(), "`exp`: needs float operands, got i32");

  Kernel fma;
  fma.op(OpKind::Fma, {fma.f(1), fma.f(2), fma.f(3, Type::of(Scalar::F64))}, f32());
  EXPECT_EQ(fma.result(), "`fma`: operand 2 (f64) must have the result type (f32)");
}

TEST(Verifier, CmpGivesI1) {
  Kernel k;
  k.op(OpKind::Cmp, {k.i(1), k.i(2)}, i32(), {{"pred", std::string("lt")}});
  EXPECT_EQ(k.result(), "`cmp`: result 0 must be i1, got i32");

  Kernel pred;
  pred.op(OpKind::Cmp, {pred.i(1), pred.i(2)}, i1(), {{"pred", std::string("lg")}});
  EXPECT_EQ(pred.result(), "`cmp`: needs a string attribute `pred`: one of eq ne lt le gt ge");

  Kernel types;
  types.op(OpKind::Cmp, {types.i(1), types.f(2)}, i1(), {{"pred", std::string("eq")}});
  EXPECT_EQ(types.result(), "`cmp`: operands must have the same type, got i32 and f32");
}

TEST(Verifier, SelectConditionIsI1) {
  Kernel k;
  k.op(OpKind::Select, {k.i(1), k.f(1), k.f(2)}, f32());
  EXPECT_EQ(k.result(), "`select`: condition must be i1, got i32");

  Kernel v;
  v.op(OpKind::Select, {v.i(1, i1()), v.f(1), v.i(2)}, f32());
  EXPECT_EQ(v.result(), "`select`: operand 2 (i32) must have the result type (f32)");
}

TEST(Verifier, CastAndBitcast) {
  Kernel ok;
  ValueId p = ok.param("p", Type::ptr(Scalar::F16));
  ok.op(OpKind::Cast, {ok.f(1)}, Type::of(Scalar::BF16));
  ValueId addr = ok.op(OpKind::Cast, {p}, Type::of(Scalar::I64));
  ok.op(OpKind::Cast, {addr}, Type::ptr(Scalar::F32));
  ok.op(OpKind::Cast, {p}, i1());  // non-null
  ok.op(OpKind::Bitcast, {p}, Type::ptr(Scalar::I16));
  ok.op(OpKind::Bitcast, {ok.f(1)}, Type::of(Scalar::U32));
  EXPECT_EQ(ok.result(), "");

  Kernel pp;
  ValueId pq = pp.param("q", Type::ptr(Scalar::F16));
  pp.op(OpKind::Cast, {pq}, Type::ptr(Scalar::F32));
  EXPECT_EQ(pp.result(),
            "`cast`: cannot cast ptr<f16> to ptr<f32> (pointers convert only to and from integers; use bitcast to "
            "change the pointee)");

  Kernel c;
  ValueId q = c.param("q", Type::ptr(Scalar::F16));
  c.op(OpKind::Cast, {q}, f32());
  EXPECT_EQ(c.result(),
            "`cast`: cannot cast ptr<f16> to f32 (pointers convert only to and from integers; use bitcast to change "
            "the pointee)");

  Kernel f64;
  ValueId r = f64.param("r", Type::ptr(Scalar::F16));
  f64.op(OpKind::Cast, {r}, Type::of(Scalar::F64));
  EXPECT_EQ(f64.result(),
            "`cast`: cannot cast ptr<f16> to f64 (pointers convert only to and from integers; use bitcast to change "
            "the pointee)");

  Kernel rounding;
  rounding.op(OpKind::Cast, {rounding.f(1)}, Type::of(Scalar::F16), {{"rounding", int64_t{0}}});
  EXPECT_EQ(rounding.result(), "`cast`: attribute `rounding` must be a string");

  Kernel bc;
  bc.op(OpKind::Bitcast, {bc.f(1)}, Type::of(Scalar::I64));
  EXPECT_EQ(bc.result(), "`bitcast`: cannot bitcast f32 to i64 (both pointers, or both values of the same bit width)");
}

TEST(Verifier, AddPtr) {
  Kernel k;
  k.op(OpKind::AddPtr, {k.i(1), k.i(2)}, i32());
  EXPECT_EQ(k.result(), "`addptr`: operand 0 must be a pointer, got i32");

  Kernel off;
  ValueId p = off.param("p", Type::ptr(Scalar::F32));
  off.op(OpKind::AddPtr, {p, off.f(2)}, Type::ptr(Scalar::F32));
  EXPECT_EQ(off.result(), "`addptr`: offset must be an integer, got f32");

  Kernel res;
  ValueId q = res.param("p", Type::ptr(Scalar::F32));
  res.op(OpKind::AddPtr, {q, res.i(2)}, Type::ptr(Scalar::F16));
  EXPECT_EQ(res.result(), "`addptr`: result 0 must be ptr<f32>, got ptr<f16>");
}

// --- memory -----------------------------------------------------------------------------------

TEST(Verifier, Load) {
  auto load = [](std::vector<int> extra, Type result, Type mask_t, Type other_t) {
    Kernel k;
    ValueId p = k.param("p", Type::ptr(Scalar::F32));
    ValueId ps = k.op(OpKind::Splat, {p}, tp({8}));
    std::vector<ValueId> operands = {ps};
    if (!extra.empty()) operands.push_back(k.op(OpKind::Splat, {k.i(1, i1())}, std::move(mask_t)));
    if (extra.size() > 1) operands.push_back(k.op(OpKind::Splat, {k.f(0)}, std::move(other_t)));
    k.op(OpKind::Load, operands, std::move(result));
    return k.result();
  };
  EXPECT_EQ(load({}, tf({8}), {}, {}), "");
  EXPECT_EQ(load({1, 1}, tf({8}), tb({8}), tf({8})), "");
  EXPECT_EQ(load({}, Type::tile(Scalar::F16, {8}), {}, {}), "`load`: result 0 must be tile<8xf32>, got tile<8xf16>");
  EXPECT_EQ(load({1}, tf({8}), tb({4}), {}),
            "`load`: mask must be tile<8xi1>, got tile<4xi1>");

  Kernel mask;
  ValueId p = mask.param("p", Type::ptr(Scalar::F32));
  mask.op(OpKind::Load, {p, mask.i(1)}, f32());
  EXPECT_EQ(mask.result(), "`load`: mask must be i1, got i32");

  Kernel other;
  ValueId q = other.param("p", Type::ptr(Scalar::F32));
  other.op(OpKind::Load, {q, other.i(1, i1()), other.i(0)}, f32());
  EXPECT_EQ(other.result(), "`load`: `other` must be f32, got i32");

  Kernel notptr;
  notptr.op(OpKind::Load, {notptr.i(0)}, i32());
  EXPECT_EQ(notptr.result(), "`load`: operand 0 must be a pointer or a tile of pointers, got i32");

  Kernel attr;
  ValueId r = attr.param("p", Type::ptr(Scalar::F32));
  attr.op(OpKind::Load, {r}, f32(), {{"cache_modifier", int64_t{1}}});
  EXPECT_EQ(attr.result(), "`load`: attribute `cache_modifier` must be a string");
}

TEST(Verifier, Store) {
  Kernel v;
  ValueId p = v.param("p", Type::ptr(Scalar::F32));
  v.b.create(OpKind::Store, {p, v.i(1)}, {});
  EXPECT_EQ(v.result(), "`store`: stored value must be f32, got i32");

  Kernel m;
  ValueId q = m.param("p", Type::ptr(Scalar::F32));
  ValueId qs = m.op(OpKind::Splat, {q}, tp({8}));
  ValueId vs = m.op(OpKind::Splat, {m.f(1)}, tf({8}));
  ValueId ms = m.op(OpKind::Splat, {m.i(1, i1())}, tb({4}));
  m.b.create(OpKind::Store, {qs, vs, ms}, {});
  EXPECT_EQ(m.result(), "`store`: mask must be tile<8xi1>, got tile<4xi1>");
}

// --- reductions and dot ----------------------------------------------------------------------

TEST(Verifier, Reduce) {
  auto reduce = [](int64_t axis, Type result, std::vector<Type> args, bool yield_int) {
    Kernel k;
    ValueId t = k.op(OpKind::Splat, {k.f(1)}, tf({4, 8}));
    k.region_op(OpKind::Reduce, {t}, {std::move(result)}, {std::move(args)},
                [&](size_t, Builder& b, std::vector<ValueId>& a) {
                  if (yield_int)
                    yield(b, {b.int_constant(0, i32())});
                  else if (a.size() < 2)
                    yield(b, {a[0]});
                  else
                    yield(b, {b.create1(OpKind::Max, {a[0], a[1]}, f32())});
                },
                {{"axis", axis}});
    return k.result();
  };
  EXPECT_EQ(reduce(0, tf({8}), {f32(), f32()}, false), "");
  EXPECT_EQ(reduce(1, tf({4}), {f32(), f32()}, false), "");
  EXPECT_EQ(reduce(2, tf({4}), {f32(), f32()}, false), "`reduce`: axis 2 is out of range for rank 2");
  EXPECT_EQ(reduce(1, tf({8}), {f32(), f32()}, false), "`reduce`: result 0 must be tile<4xf32>, got tile<8xf32>");
  EXPECT_EQ(reduce(1, tf({4}), {f32()}, false),
            "`reduce`: region has 1 arguments, expected 2 (accumulators, then new values)");
  EXPECT_EQ(reduce(1, tf({4}), {f32(), i32()}, true),
            "`reduce`: region argument 1 has type i32, expected f32 (accumulators, then new values)");
  EXPECT_EQ(reduce(1, tf({4}), {f32(), f32()}, true),
            "`yield`: value 0 has type i32 but the enclosing `reduce` expects f32 (one combined value per operand)");

  Kernel rank1;  // a 1-d reduction gives a scalar
  ValueId t = rank1.op(OpKind::Splat, {rank1.f(1)}, tf({8}));
  rank1.region_op(OpKind::Reduce, {t}, {f32()}, {{f32(), f32()}},
                  [](size_t, Builder& b, auto& a) { yield(b, {b.create1(OpKind::Add, {a[0], a[1]}, f32())}); },
                  {{"axis", int64_t{0}}});
  EXPECT_EQ(rank1.result(), "");
}

TEST(Verifier, DotShapes) {
  auto dot = [](std::vector<int64_t> a, std::vector<int64_t> b, std::vector<int64_t> c) {
    Kernel k;
    ValueId x = k.op(OpKind::Splat, {k.f(1)}, tf(a));
    ValueId y = k.op(OpKind::Splat, {k.f(1)}, tf(b));
    ValueId z = k.op(OpKind::Splat, {k.f(1)}, tf(c));
    k.op(OpKind::Dot, {x, y, z}, tf(c));
    return k.result();
  };
  EXPECT_EQ(dot({16, 32}, {32, 8}, {16, 8}), "");
  EXPECT_EQ(dot({16, 32}, {16, 8}, {16, 8}),
            "`dot`: a is MxK and b must be KxN (got tile<16x32xf32>, tile<16x8xf32>, tile<16x8xf32>)");
  EXPECT_EQ(dot({16, 32}, {32, 8}, {8, 16}),
            "`dot`: the accumulator must be MxN (got tile<16x32xf32>, tile<32x8xf32>, tile<8x16xf32>)");
  EXPECT_EQ(dot({16}, {16, 8}, {16, 8}),
            "`dot`: operands must be 2-d tiles of numbers (got tile<16xf32>, tile<16x8xf32>, tile<16x8xf32>)");

  Kernel mixed;
  ValueId x = mixed.op(OpKind::Splat, {mixed.f(1, Type::of(Scalar::F16))}, Type::tile(Scalar::F16, {16, 16}));
  ValueId y = mixed.op(OpKind::Splat, {mixed.f(1)}, tf({16, 16}));
  mixed.op(OpKind::Dot, {x, y, y}, tf({16, 16}));
  EXPECT_EQ(mixed.result(),
            "`dot`: a and b must have the same element type (got tile<16x16xf16>, tile<16x16xf32>, tile<16x16xf32>)");
}

// --- control flow -------------------------------------------------------------------------------

TEST(Verifier, For) {
  auto loop = [](Type step_t, std::vector<Type> args, Type result, bool yield_int) {
    Kernel k;
    ValueId lb = k.i(0);
    ValueId step = k.i(1, std::move(step_t));
    ValueId init = k.f(0);
    k.region_op(OpKind::For, {lb, lb, step, init}, {std::move(result)}, {std::move(args)},
                [&](size_t, Builder& b, std::vector<ValueId>& a) {
                  yield(b, {yield_int ? a[0] : a.back()});
                });
    return k.result();
  };
  EXPECT_EQ(loop(i32(), {i32(), f32()}, f32(), false), "");
  EXPECT_EQ(loop(Type::of(Scalar::I64), {i32(), f32()}, f32(), false),
            "`for`: lower bound, upper bound and step must have the same type (i32, i32, i64)");
  EXPECT_EQ(loop(i32(), {f32()}, f32(), false),
            "`for`: region has 1 arguments, expected 2 (induction variable, then loop-carried values)");
  EXPECT_EQ(loop(i32(), {i32(), i32()}, f32(), false),
            "`for`: region argument 1 has type i32, expected f32 (induction variable, then loop-carried values)");
  EXPECT_EQ(loop(i32(), {i32(), f32()}, i32(), false), "`for`: result 0 must be f32, got i32");
  EXPECT_EQ(loop(i32(), {i32(), f32()}, f32(), true),
            "`yield`: value 0 has type i32 but the enclosing `for` expects f32 (loop-carried values)");

  Kernel fl;
  ValueId x = fl.f(0);
  fl.region_op(OpKind::For, {x, x, x}, {}, {{f32()}}, [](size_t, Builder& b, auto&) { yield(b, {}); });
  EXPECT_EQ(fl.result(), "`for`: bounds and step must be integer scalars, got f32");

  Kernel count;
  ValueId z = count.i(0);
  count.region_op(OpKind::For, {z, z, z}, {f32()}, {{i32()}}, [](size_t, Builder& b, auto&) { yield(b, {}); });
  EXPECT_EQ(count.result(), "`for`: has 0 loop-carried values but 1 results");
}

TEST(Verifier, If) {
  Kernel cond;
  cond.region_op(OpKind::If, {cond.i(1)}, {}, {{}, {}}, [](size_t, Builder& b, auto&) { yield(b, {}); });
  EXPECT_EQ(cond.result(), "`if`: condition must be an i1 scalar, got i32");

  Kernel branch;
  ValueId c = branch.param("c", i1());
  branch.region_op(OpKind::If, {c}, {f32()}, {{}, {}}, [](size_t r, Builder& b, auto&) {
    yield(b, {r == 0 ? b.float_constant(1, f32()) : b.int_constant(1, i32())});
  });
  EXPECT_EQ(branch.result(), "`yield`: value 0 has type i32 but the enclosing `if` expects f32 (results of the if)");

  Kernel few;
  ValueId c2 = few.param("c", i1());
  few.region_op(OpKind::If, {c2}, {f32()}, {{}, {}}, [](size_t, Builder& b, auto&) { yield(b, {}); });
  EXPECT_EQ(few.result(), "`yield`: yields 0 values but the enclosing `if` expects 1");

  Kernel args;
  ValueId c3 = args.param("c", i1());
  args.region_op(OpKind::If, {c3}, {}, {{i32()}, {}}, [](size_t, Builder& b, auto&) { yield(b, {}); });
  EXPECT_EQ(args.result(), "`if`: region has 1 arguments, expected 0 (if regions take no arguments)");
}

TEST(Verifier, While) {
  // while (i < 10): i += 1, optionally breaking one rule.
  enum Break { None, CondType, ResultType, AfterArgs, YieldType };
  auto loop = [](Break broken) {
    Kernel k;
    ValueId init = k.i(0);
    ValueId ten = k.i(10);
    Type result = broken == ResultType ? f32() : i32();
    Type after = broken == AfterArgs ? f32() : i32();
    k.region_op(OpKind::While, {init}, {result}, {{i32()}, {after}},
                [&](size_t r, Builder& b, std::vector<ValueId>& a) {
                  if (r == 0) {
                    ValueId go = broken == CondType ? b.int_constant(1, i32())
                                                    : b.create1(OpKind::Cmp, {a[0], ten}, i1(), {{"pred", std::string("lt")}});
                    b.create(OpKind::Condition, {go, a[0]}, {});
                  } else {
                    yield(b, {broken == YieldType ? b.float_constant(1, f32()) : a[0]});
                  }
                });
    return k.result();
  };
  EXPECT_EQ(loop(None), "");
  EXPECT_EQ(loop(CondType), "`condition`: operand 0 must be an i1 scalar, got i32");
  EXPECT_EQ(loop(ResultType), "`while`: results must have the types of the values `condition` forwards");
  EXPECT_EQ(loop(AfterArgs),
            "`while`: region argument 0 has type f32, expected i32 (the values `condition` forwards)");
  EXPECT_EQ(loop(YieldType),
            "`yield`: value 0 has type f32 but the enclosing `while` expects i32 (loop-carried values)");

  Kernel wrong_end;
  ValueId init = wrong_end.i(0);
  wrong_end.region_op(OpKind::While, {init}, {i32()}, {{i32()}, {i32()}},
                      [](size_t, Builder& b, std::vector<ValueId>& a) { yield(b, {a[0]}); });
  EXPECT_EQ(wrong_end.result(), "`yield`: a region of `while` must end in `condition`, not `yield`");
}

// --- debugging ops ------------------------------------------------------------------------------

TEST(Verifier, PrintAndAssert) {
  Kernel p;
  p.b.create(OpKind::Print, {p.i(1)}, {}, {{"prefix", int64_t{3}}});
  EXPECT_EQ(p.result(), "`print`: attribute `prefix` must be a string");

  Kernel a;
  a.b.create(OpKind::Assert, {a.i(1)}, {}, {{"message", std::string("m")}});
  EXPECT_EQ(a.result(), "`assert`: condition must be i1 (scalar or tile), got i32");
}

// --- verify_or_throw ------------------------------------------------------------------------------

TEST(Verifier, VerifyOrThrowNamesStageMessageAndOp) {
  Function fn = parse(
      "kernel @k(%x: i32) {\n"
      "  %0 = constant {value = 1.5} : f32\n"
      "  %1 = add %x, %0 : i32   // k.py:4:2\n"
      "  return\n"
      "}\n");
  try {
    verify_or_throw(fn, "canonicalize");
    FAIL() << "expected InternalError";
  } catch (const InternalError& e) {
    EXPECT_EQ(std::string(e.what()),
              "IR verification failed after `canonicalize`: `add`: operand 1 (f32) must have the result type (i32)\n"
              "  at: %1 = add %x, %0 : i32");
  }
}

}  // namespace
}  // namespace tegula::ir
