// load and store. A masked-off element never touches memory: the access sits
// on the taken side of a conditional, which g++/clang++ turn into masked
// vector loads/stores (AVX-512, AVX2 for 32/64-bit elements) or a branch.
//
// i1 lives in memory as one byte: loads read `byte != 0`, stores write 0/1.
// Cache and eviction hints have no CPU meaning and are ignored; `volatile`
// loads go through a volatile pointer.
#include <string>

#include "backends/cpu/codegen_context.h"
#include "support/diagnostic.h"

namespace tegula::backends::cpu {

namespace {

bool is_volatile(const ir::Op& op) {
  const ir::Attr* a = op.attr("volatile");
  return a != nullptr && std::holds_alternative<int64_t>(*a) && std::get<int64_t>(*a) != 0;
}

std::string read_through(const ir::Type& pointee, const std::string& pointer, bool volatile_access) {
  std::string memory_type = pointee.scalar == ir::Scalar::I1 ? "uint8_t" : c_scalar(pointee.scalar);
  std::string read = volatile_access
                         ? "*reinterpret_cast<const volatile " + memory_type + "*>(" + pointer + ")"
                         : "*" + pointer;
  return pointee.scalar == ir::Scalar::I1 ? "(" + read + " != 0)" : read;
}

void emit_load(CodegenContext& ctx, const ir::Op& op) {
  ir::ValueId result = op.results[0];
  const ir::Type& t = ctx.fn.type(result);
  bool has_mask = op.operands.size() > 1;
  bool has_other = op.operands.size() > 2;
  std::string element_type = c_element(t);
  auto element_expr = [&](const std::string& index) {
    std::string read = read_through(t, ctx.element(op.operands[0], index), is_volatile(op));
    if (!has_mask) return read;
    // Without `other`, masked-off elements are zero (the IR leaves them
    // unspecified; zero keeps runs reproducible).
    std::string fallback = has_other ? ctx.element(op.operands[2], index) : element_type + "()";
    return ctx.element(op.operands[1], index) + " ? " + read + " : " + fallback;
  };
  if (!t.is_tile()) {
    ctx.out.line(element_type + " const " + ctx.name(result) + " = " + element_expr("") + ";");
    return;
  }
  ctx.declare(result);
  ctx.open_element_loop("i", t.numel());
  ctx.out.line(ctx.element(result, "i") + " = " + element_expr("i") + ";");
  ctx.out.close();
}

void emit_store(CodegenContext& ctx, const ir::Op& op) {
  ir::ValueId pointer = op.operands[0], value = op.operands[1];
  const ir::Type& t = ctx.fn.type(value);
  bool has_mask = op.operands.size() > 2;
  auto statement = [&](const std::string& index) {
    std::string v = ctx.element(value, index);
    if (t.scalar == ir::Scalar::I1) v = "(uint8_t)" + v;
    std::string store = "*" + ctx.element(pointer, index) + " = " + v + ";";
    return has_mask ? "if (" + ctx.element(op.operands[2], index) + ") " + store : store;
  };
  const ir::Type& pt = ctx.fn.type(pointer);
  if (!pt.is_tile()) {
    ctx.out.line(statement(""));
    return;
  }
  ctx.open_element_loop("i", pt.numel());
  ctx.out.line(statement("i"));
  ctx.out.close();
}

}  // namespace

void emit_memory(CodegenContext& ctx, const ir::Op& op) {
  if (op.kind == ir::OpKind::Load) return emit_load(ctx, op);
  TEGULA_ASSERT(op.kind == ir::OpKind::Store, "not a memory op");
  emit_store(ctx, op);
}

}  // namespace tegula::backends::cpu
