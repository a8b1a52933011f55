// Structured control flow: for, if, while.
//
// Loop-carried values (block arguments) are locals or arrays declared before
// the C++ loop; `yield` copies into them with CodegenContext::parallel_copy,
// so swapping yields (`yield %b, %a`) work. After the loop the op's results
// name the same storage, which nothing writes any more. `if` results are
// fresh locals both branches copy into.
//
// A tile computed fresh each iteration and yielded in place of a carried
// argument that is dead by then (`acc = acc + x`, `acc = tl.dot(a, b, acc)`,
// `ptrs += step`) is written straight into the carried storage, so the yield
// copies nothing; see plan_in_place_yields.
#include <string>
#include <vector>

#include "backends/cpu/codegen_context.h"
#include "support/diagnostic.h"

namespace tegula::backends::cpu {

using ir::OpKind;

namespace {

std::vector<ir::ValueId> tail(const std::vector<ir::ValueId>& values, size_t from) {
  return {values.begin() + static_cast<std::ptrdiff_t>(from), values.end()};
}

// The op of `block` that is `op` or holds it in one of its regions; invalid
// when `op` is not inside `block`.
ir::OpId ancestor_in(const ir::Function& fn, ir::OpId op, ir::BlockId block) {
  while (op.valid() && fn.op(op).parent != block) {
    ir::BlockId parent = fn.op(op).parent;
    op = parent.valid() ? fn.block(parent).parent : ir::OpId{};
  }
  return op;
}

bool is_view(const ir::Function& fn, const ir::Op& op) {
  return (op.kind == OpKind::Reshape || op.kind == OpKind::ExpandDims) && fn.type(op.operands[0]).is_tile() &&
         fn.type(op.results[0]).is_tile();
}

// Whether `def`, which computes its result in place of the storage of
// `carried`, reads that storage (through `reader`, a value sharing it) only
// before writing the same element: per-element ops read element i and then
// write element i; a dot may update its accumulator in place, but must not
// read a or b from the storage it writes.
bool reads_before_writing(const ir::Op& def, ir::ValueId reader) {
  if (def.kind == OpKind::Dot) {
    for (size_t j = 0; j < def.operands.size(); ++j)
      if (def.operands[j] == reader && j != 2) return false;
    return true;
  }
  return ir::is_elementwise(def.kind) || def.kind == OpKind::Load;
}

// Whether yielded value `yielded` can be computed directly in the storage of
// the carried argument `carried` of the loop body `body`: it is a tile of the
// same type defined by a top-level op of the body that writes a fresh array
// element by element (a fused per-element op) or a dot, and nothing reads the
// carried storage (the argument or a view of it) after that op.
bool can_compute_in_place(CodegenContext& ctx, ir::BlockId body, ir::ValueId carried, ir::ValueId yielded) {
  const ir::Function& fn = ctx.fn;
  if (!fn.type(yielded).is_tile() || fn.type(yielded) != fn.type(carried)) return false;
  ir::OpId def_id = fn.value(yielded).def;
  if (!def_id.valid() || fn.op(def_id).parent != body) return false;
  const ir::Op& def = fn.op(def_id);
  bool writes_fresh_array = def.kind == OpKind::Dot || (is_per_element(ctx, def) && def.kind != OpKind::Store &&
                                                        !is_view(fn, def));
  if (!writes_fresh_array || def.results.size() != 1) return false;
  size_t def_position = fn.position_of(def_id);

  std::vector<ir::ValueId> sharing = {carried};  // the argument and its views
  for (size_t s = 0; s < sharing.size(); ++s) {
    for (ir::OpId user : ctx.users(sharing[s])) {
      ir::OpId top = ancestor_in(fn, user, body);
      if (!top.valid()) return false;
      size_t position = fn.position_of(top);
      if (position > def_position) return false;
      if (position == def_position && (user != def_id || !reads_before_writing(def, sharing[s]))) return false;
      if (is_view(fn, fn.op(user))) sharing.push_back(fn.op(user).results[0]);
    }
  }
  return true;
}

void plan_in_place_yields(CodegenContext& ctx, ir::BlockId body, const std::vector<ir::ValueId>& carried,
                          const std::vector<ir::ValueId>& yielded) {
  for (size_t i = 0; i < carried.size(); ++i) {
    size_t times_yielded = 0;
    for (ir::ValueId y : yielded) times_yielded += y == yielded[i];
    if (times_yielded == 1 && can_compute_in_place(ctx, body, carried[i], yielded[i]))
      ctx.plan_storage(yielded[i], carried[i]);
  }
}

// for %iv = lb to ub step st, iter args -> results
void emit_for(CodegenContext& ctx, const ir::Op& op) {
  TEGULA_ASSERT(op.operands.size() >= 3 && op.regions.size() == 1, "malformed for");
  ir::BlockId body = op.regions[0];
  const std::vector<ir::ValueId>& args = ctx.fn.block(body).args;
  std::vector<ir::ValueId> inits = tail(op.operands, 3);
  std::vector<ir::ValueId> carried = tail(args, 1);
  TEGULA_ASSERT(carried.size() == inits.size() && op.results.size() == inits.size(), "for arity mismatch");
  for (size_t i = 0; i < inits.size(); ++i) ctx.declare_copy(carried[i], inits[i]);

  std::string iv_type = c_scalar(ctx.fn.type(args[0]).scalar);
  std::string lb = ctx.name(op.operands[0]), ub = ctx.name(op.operands[1]), step = ctx.name(op.operands[2]);
  std::string count = ctx.fresh("trips"), k = ctx.fresh("k");
  ctx.out.line("const uint64_t " + count + " = tg_trip_count<" + iv_type + ">(" + lb + ", " + ub + ", " + step +
               ");");
  ctx.out.open("for (uint64_t " + k + " = 0; " + k + " < " + count + "; ++" + k + ")");
  ctx.out.line("const " + iv_type + " " + ctx.name(args[0]) + " = tg_induction<" + iv_type + ">(" + lb + ", " +
               k + ", " + step + ");");
  const ir::Op& yield = ctx.terminator(body);
  TEGULA_ASSERT(yield.kind == OpKind::Yield, "for body must end in yield");
  plan_in_place_yields(ctx, body, carried, yield.operands);
  ctx.emit_block_body(body);
  ctx.parallel_copy(carried, yield.operands);
  ctx.out.close();
  for (size_t i = 0; i < carried.size(); ++i) ctx.alias(op.results[i], carried[i]);
}

void emit_if(CodegenContext& ctx, const ir::Op& op) {
  TEGULA_ASSERT(op.operands.size() == 1 && !op.regions.empty(), "malformed if");
  for (ir::ValueId r : op.results) ctx.declare(r);
  auto branch = [&](ir::BlockId block) {
    ctx.emit_block_body(block);
    const ir::Op& yield = ctx.terminator(block);
    TEGULA_ASSERT(yield.kind == OpKind::Yield, "if branch must end in yield");
    ctx.parallel_copy(op.results, yield.operands);
  };
  ctx.out.open("if (" + ctx.name(op.operands[0]) + ")");
  branch(op.regions[0]);
  bool has_else = op.regions.size() > 1 && ctx.fn.block(op.regions[1]).ops.size() > 1;
  if (has_else || (op.regions.size() > 1 && !op.results.empty())) {
    ctx.out.close_open("else");
    branch(op.regions[1]);
  }
  ctx.out.close();
}

// while: the before-region computes `condition %c, values`; the values become
// the after-region's arguments (or the results, once %c is false); the
// after-region yields the next before-region arguments.
void emit_while(CodegenContext& ctx, const ir::Op& op) {
  TEGULA_ASSERT(op.regions.size() == 2, "malformed while");
  ir::BlockId before = op.regions[0], after = op.regions[1];
  const std::vector<ir::ValueId>& before_args = ctx.fn.block(before).args;
  const std::vector<ir::ValueId>& after_args = ctx.fn.block(after).args;
  TEGULA_ASSERT(before_args.size() == op.operands.size() && after_args.size() == op.results.size(),
                "while arity mismatch");
  for (size_t i = 0; i < before_args.size(); ++i) ctx.declare_copy(before_args[i], op.operands[i]);
  for (ir::ValueId a : after_args) ctx.declare(a);
  ctx.out.open("while (true)");
  ctx.emit_block_body(before);
  const ir::Op& condition = ctx.terminator(before);
  TEGULA_ASSERT(condition.kind == OpKind::Condition && !condition.operands.empty(),
                "while before-region must end in condition");
  ctx.parallel_copy(after_args, tail(condition.operands, 1));
  ctx.out.line("if (!" + ctx.name(condition.operands[0]) + ") break;");
  ctx.emit_block_body(after);
  const ir::Op& yield = ctx.terminator(after);
  TEGULA_ASSERT(yield.kind == OpKind::Yield, "while after-region must end in yield");
  ctx.parallel_copy(before_args, yield.operands);
  ctx.out.close();
  for (size_t i = 0; i < after_args.size(); ++i) ctx.alias(op.results[i], after_args[i]);
}

}  // namespace

void emit_control(CodegenContext& ctx, const ir::Op& op) {
  switch (op.kind) {
    case OpKind::For: return emit_for(ctx, op);
    case OpKind::If: return emit_if(ctx, op);
    case OpKind::While: return emit_while(ctx, op);
    default: TEGULA_ASSERT(false, "not a control-flow op");
  }
}

}  // namespace tegula::backends::cpu
