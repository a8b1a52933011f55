// Structured control flow: for, if, while.
//
// Conditions are scalars, the same in every thread of the block, so the
// whole block takes the same path and barriers inside loops and branches
// are safe. Loop-carried values are register arrays (or scalars) declared
// before the loop in the layout the plan chose for them (layout.h), used
// as the body's arguments; `yield` copies into them as a parallel copy (a
// source that is another destination is saved first, so `yield %b, %a`
// swaps). After the loop the op's results name the same arrays. `if`
// results are arrays both branches assign.
//
// `for` computes its trip count up front without overflow (a zero step runs
// nothing) and derives the induction variable with wrapping arithmetic,
// like the CPU backend.
#include <string>
#include <vector>

#include "backends/cuda/codegen_context.h"
#include "support/diagnostic.h"

namespace tegula::backends::cuda {

using ir::OpKind;

namespace {

// Declares mutable storage for `v` (its primary layout for tiles).
void declare_storage(CudaContext& ctx, ir::ValueId v) {
  const ir::Type& t = ctx.fn.type(v);
  if (t.is_tile())
    ctx.declare_tile(ctx.name(v), t, ctx.layout(v));
  else
    ctx.out.line(c_element(t) + " " + ctx.name(v) + "{};");
}

int registers_of(const CudaContext& ctx, ir::ValueId v) {
  const ir::Type& t = ctx.fn.type(v);
  return t.is_tile() ? ctx.distribution(ctx.layout(v), t.shape).registers() : 0;
}

void copy_value(CudaContext& ctx, ir::ValueId dest, const std::string& source) {
  if (ctx.fn.type(dest).is_tile())
    emit_tile_copy(ctx, ctx.name(dest), source, registers_of(ctx, dest));
  else if (ctx.name(dest) != source)
    ctx.out.line(ctx.name(dest) + " = " + source + ";");
}

// dests[i] = operand first+i of `term` (read in dests[i]'s layout), all at
// once: a source that is also a destination is saved before any copy.
void parallel_copy(CudaContext& ctx, const std::vector<ir::ValueId>& dests, ir::OpId term, size_t first) {
  std::vector<std::string> sources;
  for (size_t i = 0; i < dests.size(); ++i) sources.push_back(ctx.operand(term, first + i));
  for (size_t i = 0; i < dests.size(); ++i) {
    bool clobbered = false;
    for (size_t j = 0; j < dests.size(); ++j)
      if (j != i && ctx.name(dests[j]) == sources[i]) clobbered = true;
    if (!clobbered) continue;
    std::string saved = ctx.fresh("saved");
    const ir::Type& t = ctx.fn.type(dests[i]);
    if (t.is_tile()) {
      int registers = registers_of(ctx, dests[i]);
      ctx.out.line(c_element(t) + " " + saved + "[" + std::to_string(registers) + "];");
      emit_tile_copy(ctx, saved, sources[i], registers);
    } else {
      ctx.out.line(c_const(t) + " " + saved + " = " + sources[i] + ";");
    }
    sources[i] = saved;
  }
  for (size_t i = 0; i < dests.size(); ++i) copy_value(ctx, dests[i], sources[i]);
}

std::vector<ir::ValueId> tail(const std::vector<ir::ValueId>& values, size_t from) {
  return {values.begin() + static_cast<std::ptrdiff_t>(from), values.end()};
}

void emit_extras_of(CudaContext& ctx, const std::vector<ir::ValueId>& values) {
  for (ir::ValueId v : values)
    if (ctx.fn.type(v).is_tile()) ctx.emit_extras(v);
}

// Entering a loop body: the previous iteration may have left shared-memory
// readers and global stores behind.
void enter_loop_body(CudaContext& ctx, ir::BlockId body) {
  ctx.assume_shared_readers();
  if (ctx.contains_store(body)) ctx.assume_global_stores();
}

void leave_regions(CudaContext& ctx, const ir::Op& op) {
  ctx.assume_shared_readers();
  for (ir::BlockId r : op.regions)
    if (ctx.contains_store(r)) ctx.assume_global_stores();
}

void emit_for(CudaContext& ctx, ir::OpId id) {
  const ir::Op& op = ctx.fn.op(id);
  TEGULA_ASSERT(op.operands.size() >= 3 && op.regions.size() == 1, "malformed for");
  ir::BlockId body = op.regions[0];
  const std::vector<ir::ValueId>& args = ctx.fn.block(body).args;
  std::vector<ir::ValueId> carried = tail(args, 1);
  TEGULA_ASSERT(carried.size() + 3 == op.operands.size() && op.results.size() == carried.size(), "for arity mismatch");
  for (size_t i = 0; i < carried.size(); ++i) {
    declare_storage(ctx, carried[i]);
    copy_value(ctx, carried[i], ctx.operand(id, 3 + i));
  }
  std::string iv_type = c_scalar(ctx.fn.type(args[0]).scalar);
  std::string lb = ctx.name(op.operands[0]), ub = ctx.name(op.operands[1]), step = ctx.name(op.operands[2]);
  std::string trips = ctx.fresh("trips"), k = ctx.fresh("k");
  ctx.out.line("const unsigned long long " + trips + " = tg_trip_count<" + iv_type + ">(" + lb + ", " + ub + ", " +
               step + ");");
  pipeline_before_loop(ctx, id, trips);
  ctx.out.open("for (unsigned long long " + k + " = 0; " + k + " < " + trips + "; ++" + k + ")");
  ctx.out.line("const " + iv_type + " " + ctx.name(args[0]) + " = tg_induction<" + iv_type + ">(" + lb + ", " + k +
               ", " + step + ");");
  enter_loop_body(ctx, body);
  emit_extras_of(ctx, carried);
  pipeline_iteration(ctx, id, trips, k);
  ctx.emit_block_body(body);
  const ir::Op& yield = ctx.terminator(body);
  TEGULA_ASSERT(yield.kind == OpKind::Yield, "for body must end in yield");
  parallel_copy(ctx, carried, ctx.fn.block(body).ops.back(), 0);
  ctx.out.close();
  leave_regions(ctx, op);
  pipeline_after_loop(ctx, id);
  for (size_t i = 0; i < carried.size(); ++i) ctx.alias(op.results[i], carried[i]);
}

void emit_if(CudaContext& ctx, ir::OpId id) {
  const ir::Op& op = ctx.fn.op(id);
  TEGULA_ASSERT(op.operands.size() == 1 && !op.regions.empty(), "malformed if");
  for (ir::ValueId r : op.results) declare_storage(ctx, r);
  auto branch = [&](ir::BlockId block) {
    ctx.emit_block_body(block);
    TEGULA_ASSERT(ctx.terminator(block).kind == OpKind::Yield, "if branch must end in yield");
    parallel_copy(ctx, op.results, ctx.fn.block(block).ops.back(), 0);
  };
  ctx.out.open("if (" + ctx.name(op.operands[0]) + ")");
  branch(op.regions[0]);
  if (op.regions.size() > 1 && (ctx.fn.block(op.regions[1]).ops.size() > 1 || !op.results.empty())) {
    // Barriers and stores of the then-branch are not known to have happened.
    ctx.assume_shared_readers();
    if (ctx.contains_store(op.regions[0])) ctx.assume_global_stores();
    ctx.out.close_open("else");
    branch(op.regions[1]);
  }
  ctx.out.close();
  leave_regions(ctx, op);
}

// while: the before-region computes `condition %c, values`; the values
// become the after-region's arguments (or the results, once %c is false);
// the after-region yields the next before-region arguments.
void emit_while(CudaContext& ctx, ir::OpId id) {
  const ir::Op& op = ctx.fn.op(id);
  TEGULA_ASSERT(op.regions.size() == 2, "malformed while");
  ir::BlockId before = op.regions[0], after = op.regions[1];
  const std::vector<ir::ValueId>& before_args = ctx.fn.block(before).args;
  const std::vector<ir::ValueId>& after_args = ctx.fn.block(after).args;
  TEGULA_ASSERT(before_args.size() == op.operands.size() && after_args.size() == op.results.size(),
                "while arity mismatch");
  for (size_t i = 0; i < before_args.size(); ++i) {
    declare_storage(ctx, before_args[i]);
    copy_value(ctx, before_args[i], ctx.operand(id, i));
  }
  for (ir::ValueId a : after_args) declare_storage(ctx, a);
  ctx.out.open("while (true)");
  enter_loop_body(ctx, before);
  if (ctx.contains_store(after)) ctx.assume_global_stores();
  emit_extras_of(ctx, before_args);
  ctx.emit_block_body(before);
  const ir::Op& condition = ctx.terminator(before);
  TEGULA_ASSERT(condition.kind == OpKind::Condition && !condition.operands.empty(),
                "while before-region must end in condition");
  parallel_copy(ctx, after_args, ctx.fn.block(before).ops.back(), 1);
  ctx.out.line("if (!" + ctx.name(condition.operands[0]) + ") break;");
  emit_extras_of(ctx, after_args);
  ctx.emit_block_body(after);
  TEGULA_ASSERT(ctx.terminator(after).kind == OpKind::Yield, "while after-region must end in yield");
  parallel_copy(ctx, before_args, ctx.fn.block(after).ops.back(), 0);
  ctx.out.close();
  leave_regions(ctx, op);
  for (size_t i = 0; i < after_args.size(); ++i) ctx.alias(op.results[i], after_args[i]);
}

}  // namespace

void emit_control(CudaContext& ctx, ir::OpId id) {
  switch (ctx.fn.op(id).kind) {
    case OpKind::For: return emit_for(ctx, id);
    case OpKind::If: return emit_if(ctx, id);
    case OpKind::While: return emit_while(ctx, id);
    default: TEGULA_ASSERT(false, "not a control-flow op");
  }
}

}  // namespace tegula::backends::cuda
