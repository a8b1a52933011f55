// load and store. A masked-off element never touches memory: the access sits
// on the taken side of a conditional, which g++/clang++ turn into masked
// vector loads/stores (AVX-512, AVX2 for 32/64-bit elements) or a branch.
//
// i1 lives in memory as one byte: loads read `byte != 0`, stores write 0/1.
// Cache and eviction hints have no CPU meaning and are ignored; `volatile`
// loads go through a volatile pointer.
#include <string>

#include "backends/cpu/codegen_bounds.h"
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

}  // namespace

std::string load_element(const CodegenContext& ctx, const ir::Op& op, const std::vector<std::string>& operands) {
  const ir::Type& t = ctx.fn.type(op.results[0]);
  std::string read = read_through(t, operands[0], is_volatile(op));
  std::string condition = access_condition(ctx, op, operands[0], operands.size() > 1 ? operands[1] : "");
  if (condition.empty()) return read;
  // Without `other`, masked-off elements are zero (the IR leaves them
  // unspecified; zero keeps runs reproducible).
  std::string fallback = operands.size() > 2 ? operands[2] : c_element(t) + "()";
  return condition + " ? " + read + " : " + fallback;
}

std::string store_statement(const CodegenContext& ctx, const ir::Op& op, const std::vector<std::string>& operands) {
  std::string v = operands[1];
  if (ctx.fn.type(op.operands[1]).scalar == ir::Scalar::I1) v = "(uint8_t)" + v;
  std::string store = "*" + operands[0] + " = " + v + ";";
  std::string condition = access_condition(ctx, op, operands[0], operands.size() > 2 ? operands[2] : "");
  return condition.empty() ? store : "if (" + condition + ") " + store;
}

namespace {

std::vector<std::string> scalar_operands(const CodegenContext& ctx, const ir::Op& op) {
  std::vector<std::string> names;
  for (ir::ValueId v : op.operands) {
    TEGULA_ASSERT(!ctx.fn.type(v).is_tile(), "tile memory ops are emitted in fused loops");
    names.push_back(ctx.name(v));
  }
  return names;
}

}  // namespace

void emit_memory(CodegenContext& ctx, const ir::Op& op) {
  std::vector<std::string> operands = scalar_operands(ctx, op);
  if (op.kind == ir::OpKind::Load) {
    ir::ValueId result = op.results[0];
    ctx.out.line(c_const(ctx.fn.type(result)) + " " + ctx.name(result) + " = " + load_element(ctx, op, operands) + ";");
    return;
  }
  TEGULA_ASSERT(op.kind == ir::OpKind::Store, "not a memory op");
  ctx.out.line(store_statement(ctx, op, operands));
}

}  // namespace tegula::backends::cpu
