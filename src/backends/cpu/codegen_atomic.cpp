// atomic_rmw and atomic_cas: one call of a prelude_atomic.h helper per
// element, in element order, each a real atomic instruction (programs run
// on several threads at once).
//
// Atomics are not per-element ops of the fusion planner (codegen_fusion.cpp):
// each one ends the open segment and is emitted on its own, after every
// memory access before it and before every one after it, so program order
// holds. Their tile operands therefore always have arrays. A scalar atomic
// runs once per program, as every scalar op does here. Masked-off elements
// (and in debug mode elements out of bounds) touch no memory and give 0.
// `scope` has no CPU meaning.
#include <string>
#include <vector>

#include "backends/cpu/codegen_bounds.h"
#include "backends/cpu/codegen_context.h"
#include "ir/atomic.h"
#include "support/diagnostic.h"

namespace tegula::backends::cpu {

using ir::AtomicOp;
using ir::Scalar;

namespace {

std::string memory_order(ir::MemorySem sem) {
  switch (sem) {
    case ir::MemorySem::Relaxed: return "__ATOMIC_RELAXED";
    case ir::MemorySem::Acquire: return "__ATOMIC_ACQUIRE";
    case ir::MemorySem::Release: return "__ATOMIC_RELEASE";
    case ir::MemorySem::AcqRel: return "__ATOMIC_ACQ_REL";
  }
  TEGULA_ASSERT(false, "unknown memory order");
}

// The prelude helper applying `op` to elements of kind `s`.
std::string helper(AtomicOp op, Scalar s) {
  bool is_float = ir::is_float(s);
  switch (op) {
    case AtomicOp::Add:
      if (s == Scalar::F16) return "tg_atomic_f16_add";
      if (s == Scalar::BF16) return "tg_atomic_bf16_add";
      return is_float ? "tg_atomic_fadd" : "tg_atomic_add";
    case AtomicOp::Max: return is_float ? "tg_atomic_fmax" : "tg_atomic_max";
    case AtomicOp::Min: return is_float ? "tg_atomic_fmin" : "tg_atomic_min";
    case AtomicOp::And: return "tg_atomic_and";
    case AtomicOp::Or: return "tg_atomic_or";
    case AtomicOp::Xor: return "tg_atomic_xor";
    case AtomicOp::Xchg: return "tg_atomic_xchg";
    case AtomicOp::Cas: return "tg_atomic_cas";
  }
  TEGULA_ASSERT(false, "unknown atomic op");
}

}  // namespace

bool uses_atomics(const ir::Function& fn) {
  bool found = false;
  fn.walk([&](ir::OpId id) { found = found || ir::is_atomic(fn.op(id).kind); });
  return found;
}

void emit_atomic(CodegenContext& ctx, const ir::Op& op) {
  ir::AtomicInfo info = ir::atomic_info(op);
  ir::ValueId result = op.results[0];
  const ir::Type& t = ctx.fn.type(result);
  // atomic_rmw: ptr, val [, mask]; atomic_cas: ptr, cmp, val.
  size_t data_operands = op.kind == ir::OpKind::AtomicCas ? 3 : 2;
  bool masked = op.operands.size() > data_operands;
  bool used = !ctx.users(result).empty();

  auto call = [&](const std::string& index) {
    std::string args;
    for (size_t k = 0; k < data_operands; ++k) {
      ir::ValueId v = op.operands[k];
      TEGULA_ASSERT(!ctx.fn.type(v).is_tile() || ctx.has_storage(v), "atomic operand without an array");
      args += (k ? ", " : "") + ctx.element(v, index);
    }
    return helper(info.op, t.scalar) + "<" + memory_order(info.sem) + ">(" + args + ")";
  };
  auto mask = [&](const std::string& index) { return ctx.element(op.operands[data_operands], index); };
  auto statement = [&](const std::string& index, const std::string& target) {
    // The mask and, in debug mode, the bounds check (codegen_bounds.h).
    std::string guard = access_condition(ctx, op, ctx.element(op.operands[0], index), masked ? mask(index) : "");
    if (!used) return guard.empty() ? call(index) + ";" : "if (" + guard + ") " + call(index) + ";";
    std::string value = guard.empty() ? call(index) : guard + " ? " + call(index) + " : " + c_element(t) + "()";
    return target + " = " + value + ";";
  };

  if (!t.is_tile()) {
    ctx.out.line(used ? statement("", c_const(t) + " " + ctx.name(result)) : statement("", ""));
    return;
  }
  if (used) ctx.declare(result);
  // A plain loop: no vectorization hint, the iterations may hit one address.
  std::string i = ctx.fresh("i");
  ctx.out.open("for (int " + i + " = 0; " + i + " < " + std::to_string(t.numel()) + "; ++" + i + ")");
  ctx.out.line(statement(i, ctx.element(result, i)));
  ctx.out.close();
}

}  // namespace tegula::backends::cpu
