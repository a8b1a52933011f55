#include "backends/c_family/control_flow.h"

#include <string>

#include "support/diagnostic.h"

namespace tegula::backends::c_family {

using ir::OpKind;

namespace {

std::vector<ir::ValueId> tail(const std::vector<ir::ValueId>& values, size_t from) {
  return {values.begin() + static_cast<std::ptrdiff_t>(from), values.end()};
}

// Storage for each of `values`, holding operand first + i of `op`.
void declare_initialized(Printer& p, const std::vector<ir::ValueId>& values, ir::OpId op, size_t first) {
  for (size_t i = 0; i < values.size(); ++i) {
    p.declare_storage(values[i]);
    p.copy_value(values[i], p.operand(op, first + i));
  }
}

ir::OpId terminator_id(const Printer& p, ir::BlockId block) {
  p.terminator(block);  // asserts that there is one
  return p.fn.block(block).ops.back();
}

// for %iv = lb to ub step st, iter args -> results
void emit_for(Printer& p, ir::OpId id) {
  const ir::Op& op = p.fn.op(id);
  TEGULA_ASSERT(op.operands.size() >= 3 && op.regions.size() == 1, "malformed for");
  ir::BlockId body = op.regions[0];
  const std::vector<ir::ValueId>& args = p.fn.block(body).args;
  std::vector<ir::ValueId> carried = tail(args, 1);
  TEGULA_ASSERT(carried.size() + 3 == op.operands.size() && op.results.size() == carried.size(), "for arity mismatch");
  declare_initialized(p, carried, id, 3);

  std::string iv_type = p.scalar_type(p.fn.type(args[0]).scalar);
  std::string count_type = p.scalar_type(ir::Scalar::U64);
  std::string lb = p.name(op.operands[0]), ub = p.name(op.operands[1]), step = p.name(op.operands[2]);
  std::string trips = p.fresh("trips"), k = p.fresh("k");
  p.out.line("const " + count_type + " " + trips + " = tg_trip_count<" + iv_type + ">(" + lb + ", " + ub + ", " + step +
             ");");
  p.begin_loop(id, trips);
  p.open_for(id, count_type, k, trips);
  p.out.line("const " + iv_type + " " + p.name(args[0]) + " = tg_induction<" + iv_type + ">(" + lb + ", " + k + ", " +
             step + ");");
  p.enter_loop_body(id);
  p.enter_block(body);
  TEGULA_ASSERT(p.terminator(body).kind == OpKind::Yield, "for body must end in yield");
  p.begin_iteration(id, trips, k);
  p.emit_block_body(body);
  parallel_copy(p, carried, terminator_id(p, body), 0);
  p.close_loop(id);
  p.leave_regions(id);
  p.end_loop(id);
  for (size_t i = 0; i < carried.size(); ++i) p.alias(op.results[i], carried[i]);
}

void emit_if(Printer& p, ir::OpId id) {
  const ir::Op& op = p.fn.op(id);
  TEGULA_ASSERT(op.operands.size() == 1 && !op.regions.empty(), "malformed if");
  for (ir::ValueId r : op.results) p.declare_storage(r);
  auto branch = [&](ir::BlockId block) {
    p.emit_block_body(block);
    TEGULA_ASSERT(p.terminator(block).kind == OpKind::Yield, "if branch must end in yield");
    parallel_copy(p, op.results, terminator_id(p, block), 0);
  };
  p.out.open("if (" + p.name(op.operands[0]) + ")");
  branch(op.regions[0]);
  if (op.regions.size() > 1 && (p.fn.block(op.regions[1]).ops.size() > 1 || !op.results.empty())) {
    p.before_else(id);
    p.out.close_open("else");
    branch(op.regions[1]);
  }
  p.out.close();
  p.leave_regions(id);
}

// while: the before-region computes `condition %c, values`; the values
// become the after-region's arguments (or the results, once %c is false);
// the after-region yields the next before-region arguments.
void emit_while(Printer& p, ir::OpId id) {
  const ir::Op& op = p.fn.op(id);
  TEGULA_ASSERT(op.regions.size() == 2, "malformed while");
  ir::BlockId before = op.regions[0], after = op.regions[1];
  const std::vector<ir::ValueId>& before_args = p.fn.block(before).args;
  const std::vector<ir::ValueId>& after_args = p.fn.block(after).args;
  TEGULA_ASSERT(before_args.size() == op.operands.size() && after_args.size() == op.results.size(),
                "while arity mismatch");
  declare_initialized(p, before_args, id, 0);
  for (ir::ValueId a : after_args) p.declare_storage(a);
  p.open_while(id);
  p.enter_loop_body(id);
  p.enter_block(before);
  p.emit_block_body(before);
  const ir::Op& condition = p.terminator(before);
  TEGULA_ASSERT(condition.kind == OpKind::Condition && !condition.operands.empty(),
                "while before-region must end in condition");
  parallel_copy(p, after_args, terminator_id(p, before), 1);
  p.out.line("if (!" + p.name(condition.operands[0]) + ") " + p.while_exit(id));
  p.enter_block(after);
  p.emit_block_body(after);
  TEGULA_ASSERT(p.terminator(after).kind == OpKind::Yield, "while after-region must end in yield");
  parallel_copy(p, before_args, terminator_id(p, after), 0);
  p.close_loop(id);
  p.leave_regions(id);
  for (size_t i = 0; i < after_args.size(); ++i) p.alias(op.results[i], after_args[i]);
}

}  // namespace

void parallel_copy(Printer& p, const std::vector<ir::ValueId>& dests, ir::OpId term, size_t first) {
  std::vector<std::string> sources;
  for (size_t i = 0; i < dests.size(); ++i) sources.push_back(p.operand(term, first + i));
  for (size_t i = 0; i < dests.size(); ++i) {
    bool clobbered = false;
    for (size_t j = 0; j < dests.size(); ++j)
      if (j != i && p.name(dests[j]) == sources[i]) clobbered = true;
    if (!clobbered) continue;
    std::string saved = p.fresh("saved");
    const ir::Type& t = p.fn.type(dests[i]);
    if (t.is_tile())
      p.declare_saved_tile(dests[i], saved, sources[i]);
    else
      p.out.line(p.const_type(t) + " " + saved + " = " + sources[i] + ";");
    sources[i] = saved;
  }
  for (size_t i = 0; i < dests.size(); ++i) p.copy_value(dests[i], sources[i]);
}

void emit_control(Printer& p, ir::OpId id) {
  switch (p.fn.op(id).kind) {
    case OpKind::For: return emit_for(p, id);
    case OpKind::If: return emit_if(p, id);
    case OpKind::While: return emit_while(p, id);
    default: TEGULA_ASSERT(false, "not a control-flow op");
  }
}

}  // namespace tegula::backends::c_family
