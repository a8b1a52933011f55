// print and assert.
//
// print writes Triton's lines, one printf each so lines do not mix:
// `pid (x, y, z) idx (  i,  j)<prefix>v` per element, the index padded to
// the digits of its dimension, `idx ()` for scalars, one line per operand
// (`(operand k) v`) when several are printed, and `pid (x, y, z)<prefix>`
// alone for none. The thread owning an element prints it; every thread of
// the program prints a scalar, and a print of no values, as on Triton's GPU
// backend (its tests count one line per thread). Tile operands are read in the first tile's layout. User text goes
// in as a %s argument, never as the format. The order of lines between
// threads and programs is the device printf buffer's (docs/debug-mode.md).
//
// assert is compiled only with CodegenOptions::debug (device asserts are a
// debug feature, as in Triton): each thread looks for the first failing
// element it holds and records it in the launch's error record
// (codegen_bounds.h), which the runtime turns into a tegula.DeviceError;
// nothing traps, and the thread stops touching memory.
#include <string>
#include <vector>

#include "backends/c_family/debug_ops.h"
#include "backends/c_family/text.h"
#include "backends/cuda/codegen_bounds.h"
#include "backends/cuda/codegen_context.h"
#include "support/diagnostic.h"

namespace tegula::backends::cuda {

namespace {

const char* kPid = "(int)blockIdx.x, (int)blockIdx.y, (int)blockIdx.z";

void emit_print(CudaContext& ctx, ir::OpId id) {
  const ir::Op& op = ctx.fn.op(id);
  std::string prefix = op.has_attr("prefix") ? op.str_attr("prefix") : "";
  const ir::Type* tile = nullptr;
  const Layout* layout = nullptr;
  for (ir::ValueId v : op.operands)
    if (ctx.fn.type(v).is_tile() && tile == nullptr) {
      tile = &ctx.fn.type(v);
      layout = &ctx.layout(v);
    }
  std::vector<std::string> arrays;
  for (ir::ValueId v : op.operands) {
    const ir::Type& t = ctx.fn.type(v);
    if (!t.is_tile()) {
      arrays.push_back(ctx.name(v));
      continue;
    }
    TEGULA_ASSERT(t.shape == tile->shape, "print operands of different shapes");
    if (ctx.distribution(ctx.layout(v), t.shape) == ctx.distribution(*layout, t.shape)) {
      arrays.push_back(ctx.name(v));
    } else {
      std::string copy = ctx.fresh("printed");
      ctx.emit_conversion(v, ctx.name(v), ctx.layout(v), copy, *layout);
      arrays.push_back(copy);
    }
  }
  std::string format = "pid (%d, %d, %d)";
  std::string args = kPid;
  std::string i, e;
  Distribution d;
  if (tile != nullptr) {
    d = ctx.distribution(*layout, tile->shape);
    std::string own = ctx.owner(d);
    ctx.out.open(own.empty() ? std::string() : "if (" + own + ")");
    i = ctx.open_unrolled(d.registers());
    e = ctx.fresh("e");
    ctx.out.line("const int " + e + " = " + ctx.element_index(d, i) + ";");
    format += " idx (";
    int shift = 0;
    std::vector<std::string> coords;
    for (size_t k = tile->shape.size(); k-- > 0;) {
      int bits = 0;
      while ((int64_t{1} << bits) < tile->shape[k]) ++bits;
      coords.insert(coords.begin(), "(" + e + " >> " + std::to_string(shift) + ") & " + std::to_string(tile->shape[k] - 1));
      shift += bits;
    }
    for (size_t k = 0; k < coords.size(); ++k) {
      format += (k ? ", %" : "%") + std::to_string(c_family::index_width(tile->shape[k])) + "d";
      args += ", " + coords[k];
    }
    format += ")";
  } else {
    ctx.out.open(std::string());  // every thread prints a scalar line, as Triton's GPU backend does
    if (!op.operands.empty()) format += " idx ()";
  }
  auto line = [&](const std::string& format, const std::string& args) {
    ctx.out.line("printf(\"" + format + "\\n\", " + args + ");");
  };
  if (op.operands.empty()) {
    line(format + "%s", args + ", " + c_family::string_literal(prefix, ctx.dialect));
  }
  for (size_t k = 0; k < op.operands.size(); ++k) {
    const ir::Type& t = ctx.fn.type(op.operands[k]);
    std::string f = format, a = args;
    c_family::append_printed_value(f, a, prefix, op.operands.size() > 1 ? static_cast<int>(k) : -1, t.element(),
                                   t.is_tile() ? arrays[k] + "[" + i + "]" : arrays[k], ctx.dialect,
                                   op.has_attr("hex"));
    line(f, a);
  }
  if (tile != nullptr) ctx.out.close();
  ctx.out.close();
}

void emit_assert(CudaContext& ctx, ir::OpId id) {
  const ir::Op& op = ctx.fn.op(id);
  auto failure = [&](const std::string& index) { return assert_failure_statement(ctx, id, index); };
  if (!c_family::emit_assert_start(ctx, op, ctx.options.debug, failure)) return;
  ir::ValueId cond = op.operands.at(0);
  const ir::Type& t = ctx.fn.type(cond);
  // The failing element with the smallest linear index this thread holds.
  Distribution d = ctx.distribution(ctx.layout(cond), t.shape);
  std::string first = ctx.fresh("failed");
  ctx.out.line("long long " + first + " = -1;");
  std::string i = ctx.open_unrolled(d.registers());
  std::string e = ctx.fresh("e");
  ctx.out.line("const long long " + e + " = " + ctx.element_index(d, i) + ";");
  ctx.out.line("if (!" + ctx.name(cond) + "[" + i + "] && (" + first + " < 0 || " + e + " < " + first + ")) " +
               first + " = " + e + ";");
  ctx.out.close();
  ctx.out.line("if (" + first + " >= 0) " + assert_failure_statement(ctx, id, first));
}

}  // namespace

void emit_debug(CudaContext& ctx, ir::OpId id) {
  if (ctx.fn.op(id).kind == ir::OpKind::Print) return emit_print(ctx, id);
  TEGULA_ASSERT(ctx.fn.op(id).kind == ir::OpKind::Assert, "not a debug op");
  emit_assert(ctx, id);
}

}  // namespace tegula::backends::cuda
