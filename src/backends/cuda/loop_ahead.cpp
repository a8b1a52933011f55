#include "backends/cuda/loop_ahead.h"

#include <algorithm>

#include "passes/rewrite_utils.h"

namespace tegula::backends::cuda {

namespace {

// Ops that may be re-emitted for an iteration ahead: pure ops computing in
// any layout from operands in the matching one.
bool recomputable(ir::OpKind k) {
  return ir::is_elementwise(k) || k == ir::OpKind::Constant || k == ir::OpKind::Arange || k == ir::OpKind::Splat ||
         k == ir::OpKind::Broadcast || k == ir::OpKind::ExpandDims;
}

size_t position(const ir::Block& body, ir::OpId id) {
  return static_cast<size_t>(std::find(body.ops.begin(), body.ops.end(), id) - body.ops.begin());
}

}  // namespace

bool collect_ahead(const ir::Function& fn, ir::OpId loop, ir::ValueId v, AheadOps& ahead) {
  if (!passes::is_defined_inside(fn, v, loop)) return true;
  const ir::Block& body = fn.block(fn.op(loop).regions[0]);
  if (v == body.args[0]) {
    ahead.uses_iv = true;
    return true;
  }
  ir::OpId def = fn.value(v).def;
  if (!def.valid() || position(body, def) == body.ops.size() || !recomputable(fn.op(def).kind)) return false;
  if (std::find(ahead.ops.begin(), ahead.ops.end(), def) != ahead.ops.end()) return true;
  ahead.ops.push_back(def);
  for (ir::ValueId u : fn.op(def).operands)
    if (!collect_ahead(fn, loop, u, ahead)) return false;
  return true;
}

void emit_ahead(CudaContext& ctx, ir::OpId loop, const AheadOps& ahead, const std::string& j) {
  const ir::Op& op = ctx.fn.op(loop);
  const ir::Block& body = ctx.fn.block(op.regions[0]);
  if (ahead.uses_iv) {
    ir::ValueId iv = body.args[0];
    std::string type = c_scalar(ctx.fn.type(iv).scalar);
    ctx.out.line("const " + type + " " + ctx.name(iv) + " = tg_induction<" + type + ">(" + ctx.name(op.operands[0]) +
                 ", " + j + ", " + ctx.name(op.operands[2]) + ");");
  }
  std::vector<ir::OpId> ops = ahead.ops;
  std::sort(ops.begin(), ops.end(), [&](ir::OpId x, ir::OpId y) { return position(body, x) < position(body, y); });
  for (ir::OpId m : ops) ctx.emit_op(m);
}

}  // namespace tegula::backends::cuda
