// The optimization pipeline: its stage dumps on a real kernel, and random
// kernels whose printed values must not change under optimization (checked by
// a small reference interpreter of the integer subset of the IR).
#include <gtest/gtest.h>

#include <map>
#include <random>

#include "ir/builder.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "passes/pipeline.h"
#include "support/diagnostic.h"

namespace tegula::passes {
namespace {

using ir::OpKind;
using ir::ValueId;

TEST(Pipeline, DumpsTheLoweredIrThenEachStageThatChangedSomething) {
  ir::Function fn = ir::parse(R"(kernel @k(%p: ptr<f32> div(16), %n: i32 div(16)) {
  %0 = program_id {axis = 0} : i32
  %1 = constant {value = 256} : i32
  %2 = mul %0, %1 : i32
  %3 = arange {start = 0, end = 256} : tile<256xi32>
  %4 = splat %2 : tile<256xi32>
  %5 = add %4, %3 : tile<256xi32>
  %6 = constant {value = 0.0} : f32
  %7 = splat %6 : tile<256xf32>
  %8 = constant {value = 0} : i32
  %9 = constant {value = 4} : i32
  %10 = constant {value = 1} : i32
  %11 = for %8, %9, %10, %7 : tile<256xf32> {
  ^bb(%12: i32, %13: tile<256xf32>):
    %14 = mul %12, %n : i32
    %15 = splat %14 : tile<256xi32>
    %16 = add %5, %15 : tile<256xi32>
    %17 = splat %p : tile<256xptr<f32>>
    %18 = addptr %17, %16 : tile<256xptr<f32>>
    %19 = splat %n : tile<256xi32>
    %20 = cmp %16, %19 {pred = "lt"} : tile<256xi1>
    %21 = load %18, %20 : tile<256xf32>
    %22 = constant {value = 2.0} : f32
    %23 = splat %22 : tile<256xf32>
    %24 = mul %23, %21 : tile<256xf32>
    %25 = add %13, %24 : tile<256xf32>
    yield %25
  }
  %26 = splat %p : tile<256xptr<f32>>
  %27 = addptr %26, %5 : tile<256xptr<f32>>
  store %27, %11
  return
}
)");
  std::vector<StageDump> dumps;
  optimize(fn, &dumps);
  std::vector<std::string> stages;
  for (const StageDump& d : dumps) {
    stages.push_back(d.stage);
    EXPECT_EQ(ir::verify(ir::parse(d.ir)), "") << d.stage;
  }
  // cse and dce found nothing in the first round; the second round's cse
  // merged the splat licm hoisted with the one after the loop.
  EXPECT_EQ(stages, (std::vector<std::string>{"lowered", "canonicalize", "licm", "optimized"}));
  ir::PrintOptions options;
  options.locations = false;
  EXPECT_EQ(ir::print(fn, options), R"(kernel @k(%p: ptr<f32> div(16), %n: i32 div(16)) {
  %0 = program_id {axis = 0} : i32
  %1 = constant {value = 256} : i32
  %2 = mul %0, %1 : i32
  %3 = arange {start = 0, end = 256} : tile<256xi32>
  %4 = splat %2 : tile<256xi32>
  %5 = add %4, %3 : tile<256xi32>
  %6 = constant {value = 0.0} : tile<256xf32>
  %7 = constant {value = 0} : i32
  %8 = constant {value = 4} : i32
  %9 = constant {value = 1} : i32
  %10 = splat %p : tile<256xptr<f32>>
  %11 = splat %n : tile<256xi32>
  %12 = constant {value = 2.0} : tile<256xf32>
  %13 = for %7, %8, %9, %6 : tile<256xf32> {
  ^bb(%14: i32, %15: tile<256xf32>):
    %16 = mul %14, %n : i32
    %17 = splat %16 : tile<256xi32>
    %18 = add %5, %17 : tile<256xi32>
    %19 = addptr %10, %18 : tile<256xptr<f32>>
    %20 = cmp %18, %11 {pred = "lt"} : tile<256xi1>
    %21 = load %19, %20 : tile<256xf32>
    %22 = mul %21, %12 : tile<256xf32>
    %23 = add %15, %22 : tile<256xf32>
    yield %23
  }
  %24 = addptr %10, %5 : tile<256xptr<f32>>
  store %24, %13
  return
}
)");
}

TEST(Pipeline, WithoutDumpsOnlyOptimizes) {
  ir::Function fn = ir::parse(R"(kernel @k(%n: i32) {
  %0 = constant {value = 2} : i32
  %1 = add %0, %0 : i32
  print %1 {prefix = ""}
  return
}
)");
  optimize(fn);
  ir::PrintOptions options;
  options.locations = false;
  EXPECT_EQ(ir::print(fn, options), R"(kernel @k(%n: i32) {
  %0 = constant {value = 4} : i32
  print %0 {prefix = ""}
  return
}
)");
}

// --- random kernels vs a reference interpreter ------------------------------------------

constexpr int64_t kTile = 16;

// Evaluates the i32/i1 subset of the IR that RandomKernel writes (and that
// the passes rewrite it into). A value is its elements (one for a scalar).
class Interpreter {
 public:
  explicit Interpreter(const ir::Function& fn, std::vector<int64_t> args) : fn_(fn) {
    const ir::Block& body = fn.block(fn.body());
    for (size_t i = 0; i < body.args.size(); ++i) values_[body.args[i].index] = {args[i]};
  }

  // Every value printed, in order.
  std::vector<std::vector<int64_t>> run() {
    run_block(fn_.body());
    return printed_;
  }

 private:
  using Elements = std::vector<int64_t>;

  static int64_t wrap(int64_t v, const ir::Type& t) {
    return t.scalar == ir::Scalar::I1 ? (v & 1) : static_cast<int64_t>(static_cast<int32_t>(v));
  }

  const Elements& get(ValueId v) { return values_.at(v.index); }

  // Runs the block; returns what its terminator hands back.
  std::vector<Elements> run_block(ir::BlockId block) {
    for (ir::OpId id : fn_.block(block).ops) {
      const ir::Op& op = fn_.op(id);
      if (ir::is_terminator(op.kind)) {
        std::vector<Elements> out;
        for (ValueId v : op.operands) out.push_back(get(v));
        return out;
      }
      run_op(op);
    }
    return {};
  }

  void run_op(const ir::Op& op) {
    switch (op.kind) {
      case OpKind::Print:
        for (ValueId v : op.operands) printed_.push_back(get(v));
        return;
      case OpKind::If: {
        std::vector<Elements> out = run_block(op.regions[get(op.operands[0])[0] ? 0 : 1]);
        for (size_t i = 0; i < out.size(); ++i) values_[op.results[i].index] = out[i];
        return;
      }
      case OpKind::For: {
        std::vector<Elements> carried;
        for (size_t i = 3; i < op.operands.size(); ++i) carried.push_back(get(op.operands[i]));
        const ir::Block& body = fn_.block(op.regions[0]);
        for (int64_t iv = get(op.operands[0])[0]; iv < get(op.operands[1])[0]; iv += get(op.operands[2])[0]) {
          values_[body.args[0].index] = {iv};
          for (size_t i = 0; i < carried.size(); ++i) values_[body.args[i + 1].index] = carried[i];
          carried = run_block(op.regions[0]);
        }
        for (size_t i = 0; i < carried.size(); ++i) values_[op.results[i].index] = carried[i];
        return;
      }
      default:
        values_[op.results.at(0).index] = compute(op);
    }
  }

  Elements compute(const ir::Op& op) {
    const ir::Type& type = fn_.type(op.results[0]);
    size_t n = static_cast<size_t>(type.numel());
    Elements out(n);
    switch (op.kind) {
      case OpKind::Constant: return Elements(n, op.int_attr("value"));
      case OpKind::Splat: return Elements(n, get(op.operands[0])[0]);
      case OpKind::Arange:
        for (size_t i = 0; i < n; ++i) out[i] = op.int_attr("start") + static_cast<int64_t>(i);
        return out;
      default: break;
    }
    for (size_t i = 0; i < n; ++i) {
      std::vector<int64_t> x;
      for (ValueId v : op.operands) x.push_back(get(v)[i]);
      out[i] = wrap(element(op, x), type);
    }
    return out;
  }

  int64_t element(const ir::Op& op, const std::vector<int64_t>& x) {
    switch (op.kind) {
      case OpKind::Add: return x[0] + x[1];
      case OpKind::Sub: return x[0] - x[1];
      case OpKind::Mul: return x[0] * x[1];
      case OpKind::Div: return x[0] / x[1];
      case OpKind::Rem: return x[0] % x[1];
      case OpKind::And: return x[0] & x[1];
      case OpKind::Or: return x[0] | x[1];
      case OpKind::Xor: return x[0] ^ x[1];
      case OpKind::Shl: return static_cast<int64_t>(static_cast<uint32_t>(x[0]) << x[1]);
      case OpKind::Shr: return static_cast<int32_t>(x[0]) >> x[1];
      case OpKind::Min: return std::min(x[0], x[1]);
      case OpKind::Max: return std::max(x[0], x[1]);
      case OpKind::Neg: return -x[0];
      case OpKind::Not: return ~x[0];
      case OpKind::Select: return x[0] ? x[1] : x[2];
      case OpKind::Cmp: {
        const std::string& p = op.str_attr("pred");
        if (p == "eq") return x[0] == x[1];
        if (p == "ne") return x[0] != x[1];
        if (p == "lt") return x[0] < x[1];
        if (p == "le") return x[0] <= x[1];
        if (p == "gt") return x[0] > x[1];
        return x[0] >= x[1];
      }
      default:
        ADD_FAILURE() << "the interpreter does not know " << ir::name(op.kind);
        return 0;
    }
  }

  const ir::Function& fn_;
  std::map<uint32_t, Elements> values_;
  std::vector<std::vector<int64_t>> printed_;
};

// Writes a random kernel over i32 scalars and tiles: arithmetic (division only
// by nonzero constants other than -1, shifts only by 0..31), comparisons,
// selects, nested ifs and fors with loop-carried values, and prints.
class RandomKernel {
 public:
  explicit RandomKernel(uint64_t seed) : rng_(seed), b_(fn_) {
    fn_.name = "random";
    for (const char* name : {"a", "b"}) {
      fn_.params.push_back(ir::Param{name, ir::Type::of(ir::Scalar::I32), 1});
      scalars_.push_back(fn_.add_block_arg(fn_.body(), ir::Type::of(ir::Scalar::I32)));
    }
    b_.set_insertion_end(fn_.body());
    tiles_.push_back(b_.create1(OpKind::Arange, {}, tile(ir::Scalar::I32),
                                {{"start", int64_t{0}}, {"end", kTile}}));
    emit(30, 0);
    for (ValueId v : scalars_) print(v);
    for (ValueId v : tiles_) print(v);
    b_.create(OpKind::Return, {}, {});
  }

  ir::Function take() { return std::move(fn_); }

 private:
  static ir::Type tile(ir::Scalar s) { return ir::Type::tile(s, {kTile}); }
  ir::Type type_of(bool is_tile) const { return is_tile ? tile(ir::Scalar::I32) : ir::Type::of(ir::Scalar::I32); }
  int64_t pick(int64_t n) { return static_cast<int64_t>(rng_() % static_cast<uint64_t>(n)); }
  ValueId any(const std::vector<ValueId>& values) {
    return values[static_cast<size_t>(pick(static_cast<int64_t>(values.size())))];
  }
  std::vector<ValueId>& pool(bool is_tile) { return is_tile ? tiles_ : scalars_; }

  ValueId constant(int64_t v, bool is_tile) { return b_.int_constant(v, type_of(is_tile)); }
  void print(ValueId v) { b_.create(OpKind::Print, {v}, {}, {{"prefix", std::string()}}); }

  ValueId condition(bool is_tile) {
    static const char* kPreds[] = {"eq", "ne", "lt", "le", "gt", "ge"};
    ir::Type t = is_tile ? tile(ir::Scalar::I1) : ir::Type::of(ir::Scalar::I1);
    if (!is_tile && pick(4) == 0) return b_.int_constant(pick(2), t);
    return b_.create1(OpKind::Cmp, {any(pool(is_tile)), any(pool(is_tile))}, t,
                      {{"pred", std::string(kPreds[pick(6)])}});
  }

  ValueId arithmetic(bool is_tile) {
    static const OpKind kBinary[] = {OpKind::Add, OpKind::Sub, OpKind::Mul, OpKind::And, OpKind::Or,
                                     OpKind::Xor, OpKind::Min, OpKind::Max};
    static const int64_t kConstants[] = {0, 1, -1, 2, 3, 16, 1024, -7};
    static const int64_t kDivisors[] = {1, 2, 3, 4, 16, -5};
    ir::Type t = type_of(is_tile);
    ValueId x = any(pool(is_tile));
    switch (pick(9)) {
      case 0: return constant(kConstants[pick(8)], is_tile);
      case 1: return is_tile ? b_.create1(OpKind::Splat, {any(scalars_)}, t) : constant(pick(100), false);
      case 2: return b_.create1(pick(2) ? OpKind::Div : OpKind::Rem, {x, constant(kDivisors[pick(6)], is_tile)}, t);
      case 3: return b_.create1(pick(2) ? OpKind::Shl : OpKind::Shr, {x, constant(pick(32), is_tile)}, t);
      case 4: return b_.create1(pick(2) ? OpKind::Neg : OpKind::Not, {x}, t);
      case 5: return b_.create1(OpKind::Select, {condition(is_tile), x, any(pool(is_tile))}, t);
      case 6: return b_.create1(kBinary[pick(8)], {x, x}, t);
      default: return b_.create1(kBinary[pick(8)], {x, any(pool(is_tile))}, t);
    }
  }

  // Regions see the enclosing pools; what they define stays inside.
  std::vector<ValueId> region(ir::BlockId block, int count, int depth, size_t results, bool is_tile) {
    auto saved_scalars = scalars_, saved_tiles = tiles_;
    b_.set_insertion_end(block);
    emit(count, depth + 1);
    std::vector<ValueId> yielded;
    for (size_t i = 0; i < results; ++i) yielded.push_back(any(pool(is_tile && i == 1)));
    b_.create(OpKind::Yield, yielded, {});
    scalars_ = saved_scalars, tiles_ = saved_tiles;
    return yielded;
  }

  void emit_if(int depth) {
    ValueId cond = condition(false);
    ir::OpId op = b_.create(OpKind::If, {cond}, {type_of(false), type_of(true)});
    ir::BlockId insertion = b_.insertion_block();
    for (int r = 0; r < 2; ++r) {
      ir::BlockId block = fn_.add_block(op);
      fn_.op(op).regions.push_back(block);
      region(block, static_cast<int>(pick(5)), depth, 2, true);
    }
    b_.set_insertion_end(insertion);
    scalars_.push_back(fn_.op(op).results[0]);
    tiles_.push_back(fn_.op(op).results[1]);
  }

  void emit_for(int depth) {
    // A non-constant bound uses %a, which the test keeps small.
    ValueId lb = constant(pick(3), false), ub = pick(3) ? constant(pick(4), false) : scalars_[0];
    ValueId step = constant(1 + pick(2), false);
    ValueId init_scalar = any(scalars_), init_tile = any(tiles_);
    ir::OpId op = b_.create(OpKind::For, {lb, ub, step, init_scalar, init_tile}, {type_of(false), type_of(true)});
    ir::BlockId insertion = b_.insertion_block();
    ir::BlockId body = fn_.add_block(op);
    fn_.op(op).regions.push_back(body);
    scalars_.push_back(fn_.add_block_arg(body, type_of(false)));
    scalars_.push_back(fn_.add_block_arg(body, type_of(false)));
    tiles_.push_back(fn_.add_block_arg(body, type_of(true)));
    region(body, static_cast<int>(pick(6)), depth, 2, true);
    scalars_.resize(scalars_.size() - 2);
    tiles_.pop_back();
    b_.set_insertion_end(insertion);
    scalars_.push_back(fn_.op(op).results[0]);
    tiles_.push_back(fn_.op(op).results[1]);
  }

  void emit(int count, int depth) {
    for (int i = 0; i < count; ++i) {
      int64_t choice = pick(20);
      if (choice == 0 && depth < 2) {
        emit_if(depth);
      } else if (choice == 1 && depth < 2) {
        emit_for(depth);
      } else if (choice == 2) {
        print(any(pool(pick(2))));
      } else {
        bool is_tile = pick(2);
        pool(is_tile).push_back(arithmetic(is_tile));
      }
    }
  }

  ir::Function fn_;
  std::mt19937_64 rng_;
  ir::Builder b_;
  std::vector<ValueId> scalars_, tiles_;
};

TEST(Pipeline, RandomKernelsPrintTheSameValuesOptimized) {
  std::mt19937_64 args_rng(3);
  for (uint64_t seed = 0; seed < 300; ++seed) {
    ir::Function fn = RandomKernel(seed).take();
    ASSERT_EQ(ir::verify(fn), "") << "seed " << seed;
    std::string before = ir::print(fn);
    std::vector<int64_t> args = {static_cast<int64_t>(args_rng() % 6), static_cast<int32_t>(args_rng())};
    std::vector<std::vector<int64_t>> expected = Interpreter(fn, args).run();
    try {
      optimize(fn);
    } catch (const InternalError& e) {
      FAIL() << "seed " << seed << ": " << e.what() << "\n" << before;
    }
    EXPECT_EQ(Interpreter(fn, args).run(), expected) << "seed " << seed << "\nbefore:\n" << before << "after:\n"
                                                     << ir::print(fn);
  }
}

}  // namespace
}  // namespace tegula::passes
