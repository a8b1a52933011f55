// print and assert.
//
// print formats one line per element, `pid (x, y, z) idx (i, j) prefix v1, v2`
// (without `idx (...)` when every operand is a scalar, without the prefix
// when it is empty), into the thread's print buffer (prelude_debug.h); the
// entry point writes a program's lines out in one piece when it ends, so the
// lines of concurrent programs never interleave.
//
// assert is compiled only with CodegenOptions::debug (as device asserts are
// a debug feature): the first failing element of a program is recorded in
// the launch's error record (codegen_bounds.h), which the runtime turns into
// a tegula.DeviceError, and the program stops touching memory.
#include <string>
#include <vector>

#include "backends/c_family/debug_ops.h"
#include "backends/cpu/codegen_bounds.h"
#include "backends/cpu/codegen_context.h"
#include "support/diagnostic.h"

namespace tegula::backends::cpu {

namespace {

// printf's format is built from literal pieces only; user text goes in as %s
// arguments, so a '%' in a prefix or message is printed, not interpreted.
void emit_print(CodegenContext& ctx, const ir::Op& op) {
  std::string prefix = op.has_attr("prefix") ? op.str_attr("prefix") : "";
  const ir::Type* tile = nullptr;
  for (ir::ValueId v : op.operands)
    if (ctx.fn.type(v).is_tile()) tile = &ctx.fn.type(v);
  std::string format = "pid (%d, %d, %d)";
  std::string args = "pid_x, pid_y, pid_z";
  std::string i = "i";
  if (tile != nullptr) {
    format += " idx (";
    int64_t stride = tile->numel();
    for (int d = 0; d < tile->rank(); ++d) {
      stride /= tile->shape[static_cast<size_t>(d)];
      format += d ? ", %d" : "%d";
      args += ", (int)(" + i + " / " + std::to_string(stride) + " % " +
              std::to_string(tile->shape[static_cast<size_t>(d)]) + ")";
    }
    format += ")";
  }
  std::vector<ir::Type> types;
  std::vector<std::string> elements;
  for (ir::ValueId v : op.operands) {
    const ir::Type& t = ctx.fn.type(v);
    TEGULA_ASSERT(!t.is_tile() || t.numel() == tile->numel(), "print operands of different shapes");
    types.push_back(t.element());
    elements.push_back(ctx.element(v, i));
  }
  c_family::append_printed_values(format, args, prefix, types, elements, ctx.dialect, op.has_attr("hex"));
  std::string call = "tg_print(\"" + format + "\\n\", " + args + ");";
  if (tile != nullptr) {
    ctx.out.open("for (int " + i + " = 0; " + i + " < " + std::to_string(tile->numel()) + "; ++" + i + ")");
    ctx.out.line(call);
    ctx.out.close();
  } else {
    ctx.out.line(call);
  }
}

void emit_assert(CodegenContext& ctx, const ir::Op& op) {
  auto failure = [&](const std::string& index) { return assert_failure_statement(ctx, op, index); };
  if (!c_family::emit_assert_start(ctx, op, ctx.options.debug, failure)) return;
  ir::ValueId cond = op.operands.at(0);
  const ir::Type& t = ctx.fn.type(cond);
  // The first failing element, in row-major order.
  ctx.out.open("for (int i = 0; i < " + std::to_string(t.numel()) + "; ++i)");
  ctx.out.open("if (!" + ctx.element(cond, "i") + ")");
  ctx.out.line(assert_failure_statement(ctx, op, "i"));
  ctx.out.line("break;");
  ctx.out.close();
  ctx.out.close();
}

}  // namespace

void emit_debug(CodegenContext& ctx, const ir::Op& op) {
  if (op.kind == ir::OpKind::Print) return emit_print(ctx, op);
  TEGULA_ASSERT(op.kind == ir::OpKind::Assert, "not a debug op");
  emit_assert(ctx, op);
}

}  // namespace tegula::backends::cpu
