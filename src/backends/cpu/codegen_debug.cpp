// print and assert.
//
// print writes Triton-CPU's lines into the thread's print buffer
// (prelude_debug.h): a tile operand as one block, `(x, y, z)<prefix>[...]`,
// its elements aligned and eight to a line (the prelude's tg_print_tile), a
// scalar as `(x, y, z)<prefix>v`, each operand on its own; the entry point
// writes a program's lines out in one piece when it ends, so the lines of
// concurrent programs never interleave.
//
// assert is compiled only with CodegenOptions::debug (as device asserts are
// a debug feature): the first failing element of a program is recorded in
// the launch's error record (codegen_bounds.h), which the runtime turns into
// a tegula.DeviceError, and the program stops touching memory.
#include <string>
#include <vector>

#include "backends/c_family/debug_ops.h"
#include "backends/c_family/text.h"
#include "backends/cpu/codegen_bounds.h"
#include "backends/cpu/codegen_context.h"
#include "support/diagnostic.h"

namespace tegula::backends::cpu {

namespace {

// printf's format is built from literal pieces only; user text goes in as %s
// arguments, so a '%' in a prefix or message is printed, not interpreted.
void emit_print(CodegenContext& ctx, const ir::Op& op) {
  std::string prefix = op.has_attr("prefix") ? op.str_attr("prefix") : "";
  const bool hex = op.has_attr("hex");
  const std::string pid = "(%d, %d, %d)";
  const std::string pid_args = "pid_x, pid_y, pid_z";
  if (op.operands.empty())
    ctx.out.line("tg_print(\"" + pid + "%s\\n\", " + pid_args + ", " + c_family::string_literal(prefix, ctx.dialect) +
                 ");");
  for (ir::ValueId v : op.operands) {
    const ir::Type& t = ctx.fn.type(v);
    if (!t.is_tile()) {
      std::string format = pid, args = pid_args;
      c_family::append_printed_value(format, args, prefix, -1, t, ctx.name(v), ctx.dialect, hex);
      ctx.out.line("tg_print(\"" + format + "\\n\", " + args + ");");
      continue;
    }
    // The elements as 8-byte cells of one of three kinds, which the prelude formats.
    const ir::Type e = t.element();
    const bool is_float = !hex && !e.is_pointer() && ir::is_float(e.scalar);
    const bool is_signed = !hex && !e.is_pointer() && !is_float && e.scalar != ir::Scalar::I1 && ir::is_signed(e.scalar);
    const char* kind = is_float ? "TG_PRINT_FLOAT" : is_signed ? "TG_PRINT_SIGNED" : "TG_PRINT_UNSIGNED";
    const char* cell = is_float ? "double" : is_signed ? "long long" : "unsigned long long";
    std::string value = ctx.element(v, "i");
    if (e.is_pointer()) value = "(unsigned long long)(uintptr_t)" + value;
    else value = c_family::printf_argument(e, value, hex).value;
    const int hex_digits = hex ? ir::scalar_info(e.scalar).bits / 4 : e.is_pointer() ? 16 : 0;
    std::string shape;
    for (int64_t d : t.shape) shape += (shape.empty() ? "" : ", ") + std::to_string(d);
    ctx.out.open("");
    ctx.out.line(std::string(cell) + "* const cells = static_cast<" + cell + "*>(tg_print_cells(" +
                 std::to_string(t.numel()) + "));");
    ctx.out.line("static const int64_t shape[] = {" + shape + "};");
    ctx.out.open("if (cells != nullptr)");
    ctx.out.line("for (int i = 0; i < " + std::to_string(t.numel()) + "; ++i) cells[i] = " + value + ";");
    ctx.out.line("tg_print_tile(" + pid_args + ", " + c_family::string_literal(prefix, ctx.dialect) + ", cells, " +
                 std::to_string(t.rank()) + ", shape, " + kind + ", " + std::to_string(hex_digits) + ");");
    ctx.out.close();
    ctx.out.close();
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
