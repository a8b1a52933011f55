// atomic_rmw and atomic_cas: one prelude_atomic.h helper call (one PTX
// `atom`, or a compare-and-swap loop) per element.
//
// Layout: an atomic reads its operands in its result's layout (the plan
// treats it like an elementwise op). Each element's atomic must happen once,
// so where that layout replicates elements only the owner thread (`ownN`,
// the store path's mechanism) issues it; when the old values are used, the
// owners hand them to the replicas through shared memory, one barrier.
//
// A scalar atomic is executed once per program, by thread 0; a used result
// goes to every thread through shared memory (scalars are uniform).
//
// Order within the program: an atomic reads and writes global memory, so it
// waits for the program's earlier stores (the barrier loads take) and
// counts as a store for the loads after it. The ordering between programs
// is the atomic's own `sem` and `scope`.
#include <string>

#include "backends/cuda/codegen_access.h"
#include "backends/cuda/codegen_bounds.h"
#include "backends/cuda/codegen_context.h"
#include "ir/atomic.h"
#include "support/diagnostic.h"

namespace tegula::backends::cuda {

using ir::AtomicOp;
using ir::Scalar;

namespace {

std::string order_arguments(const ir::AtomicInfo& info) {
  return std::string("<tg_") + ir::to_string(info.sem) + ", tg_" + ir::to_string(info.scope) + ">";
}

// The prelude helper applying `op` to elements of kind `s`.
std::string helper(AtomicOp op, Scalar s) {
  bool half = is_half(s);
  bool is_float = ir::is_float(s);
  switch (op) {
    case AtomicOp::Add:
      if (s == Scalar::F16) return "tg_atom_add_f16";
      if (s == Scalar::BF16) return "tg_atom_add_bf16";
      return "tg_atom_add";
    case AtomicOp::Max: return half ? "tg_atom_fmax16" : is_float ? "tg_atom_fmax" : "tg_atom_max";
    case AtomicOp::Min: return half ? "tg_atom_fmin16" : is_float ? "tg_atom_fmin" : "tg_atom_min";
    case AtomicOp::And: return "tg_atom_and";
    case AtomicOp::Or: return "tg_atom_or";
    case AtomicOp::Xor: return "tg_atom_xor";
    case AtomicOp::Xchg: return half ? "tg_atom_xchg16" : "tg_atom_xchg";
    case AtomicOp::Cas: return "tg_atom_cas";
  }
  TEGULA_ASSERT(false, "unknown atomic op");
}

bool is_used(const ir::Function& fn, ir::ValueId v) {
  bool used = false;
  fn.walk([&](ir::OpId id) {
    for (ir::ValueId operand : fn.op(id).operands) used = used || operand == v;
  });
  return used;
}

struct AtomicCall {
  std::string helper;           // "tg_atom_add<tg_acq_rel, tg_gpu>"
  size_t data_operands = 2;     // ptr, val (atomic_cas: ptr, cmp, val)
  bool masked = false;
};

AtomicCall describe(const ir::Function& fn, const ir::Op& op) {
  ir::AtomicInfo info = ir::atomic_info(op);
  AtomicCall call;
  call.helper = helper(info.op, fn.type(op.results[0]).scalar) + order_arguments(info);
  call.data_operands = op.kind == ir::OpKind::AtomicCas ? 3 : 2;
  call.masked = op.operands.size() > call.data_operands;
  return call;
}

void emit_scalar_atomic(CudaContext& ctx, ir::OpId id) {
  const ir::Op& op = ctx.fn.op(id);
  AtomicCall call = describe(ctx.fn, op);
  ir::ValueId result = op.results[0];
  const ir::Type& t = ctx.fn.type(result);
  std::string args;
  for (size_t k = 0; k < call.data_operands; ++k) args += (k ? ", " : "") + ctx.name(op.operands[k]);
  // The mask and, in debug mode, the bounds check (codegen_bounds.h).
  std::string guard =
      access_condition(ctx, id, ctx.name(op.operands[0]), call.masked ? ctx.name(op.operands[call.data_operands]) : "");
  std::string invoke = call.helper + "(" + args + ")";
  if (!is_used(ctx.fn, result)) {
    ctx.out.line("if (threadIdx.x == 0" + (guard.empty() ? "" : " && (" + guard + ")") + ") " + invoke + ";");
    return;
  }
  // Thread 0 writes the old value straight into shared memory.
  std::string smem = ctx.shared_scratch(element_bytes(t));
  std::string slot = "*reinterpret_cast<" + c_scalar(t.scalar) + "*>(" + smem + ")";
  std::string value = guard.empty() ? invoke : "(" + guard + ") ? " + invoke + " : (" + c_scalar(t.scalar) + ")0";
  ctx.out.line("if (threadIdx.x == 0) " + slot + " = " + value + ";  // to every thread");
  ctx.barrier();
  ctx.out.line(c_const(t) + " " + ctx.name(result) + " = " + slot + ";");
  ctx.shared_reads_done();
}

// A float add whose old values nobody reads, relaxed or release, on sm_90:
// groups of 2 or 4 registers that the axis facts say are consecutive,
// aligned words go out as one vector `red` each (tg_red_add_f32x2/x4), a
// quarter of the instructions and of the L2 requests for a row-major tile.
// False (nothing emitted) when that does not apply.
bool emit_vector_reduction(CudaContext& ctx, ir::OpId id, const Distribution& d, const std::string& own,
                           const std::vector<std::string>& operands) {
  const ir::Op& op = ctx.fn.op(id);
  if (!vector_reduction(ctx.fn, op, ctx.options.arch)) return false;
  ir::AtomicInfo info = ir::atomic_info(op);
  AccessPlan a = plan_access(ctx, op, ctx.layout(op.results[0]));
  int vector = a.vector >= 4 ? 4 : a.vector >= 2 ? 2 : 1;
  bool masked = op.operands.size() > 2;
  if (vector == 1 || (masked && !a.uniform_mask)) return false;
  std::string helper = std::string(vector == 4 ? "tg_red_add_f32x4" : "tg_red_add_f32x2") + order_arguments(info);
  std::string i = ctx.open_unrolled(d.registers(), vector);
  std::string args = operands[0] + "[" + i + "]";
  for (int j = 0; j < vector; ++j) args += ", " + operands[1] + "[" + i + (j ? " + " + std::to_string(j) : "") + "]";
  std::string condition = own;
  if (masked) condition += (condition.empty() ? "" : " && ") + operands[2] + "[" + i + "]";
  std::string invoke = helper + "(" + args + ");";
  ctx.out.line(condition.empty() ? invoke : "if (" + condition + ") " + invoke);
  ctx.out.close();
  return true;
}

void emit_tile_atomic(CudaContext& ctx, ir::OpId id) {
  const ir::Op& op = ctx.fn.op(id);
  AtomicCall call = describe(ctx.fn, op);
  ir::ValueId result = op.results[0];
  const ir::Type& t = ctx.fn.type(result);
  const Layout& layout = ctx.layout(result);
  Distribution d = ctx.distribution(layout, t.shape);
  std::string own = ctx.owner(d);
  bool used = is_used(ctx.fn, result);
  std::vector<std::string> operands;
  for (size_t k = 0; k < op.operands.size(); ++k) operands.push_back(ctx.operand(id, k));
  if (used) ctx.declare_tile(ctx.name(result), t, layout);

  if (!used && !ctx.debug_sites && emit_vector_reduction(ctx, id, d, own, operands)) return;
  std::string i = ctx.open_unrolled(d.registers());
  std::string args;
  for (size_t k = 0; k < call.data_operands; ++k) args += (k ? ", " : "") + operands[k] + "[" + i + "]";
  std::string invoke = call.helper + "(" + args + ")";
  std::string condition = own;
  if (call.masked) condition += (condition.empty() ? "" : " && ") + operands[call.data_operands] + "[" + i + "]";
  // In debug mode, the bounds check too (codegen_bounds.h).
  condition = access_condition(ctx, id, operands[0] + "[" + i + "]", condition, &d, i);
  if (!used) {
    ctx.out.line(condition.empty() ? invoke + ";" : "if (" + condition + ") " + invoke + ";");
  } else {
    std::string target = ctx.name(result) + "[" + i + "]";
    ctx.out.line(condition.empty() ? target + " = " + invoke + ";"
                                   : target + " = " + condition + " ? " + invoke + " : (" + c_scalar(t.scalar) + ")0;");
  }
  ctx.out.close();
  if (!used || own.empty()) return;

  // Replicas take the owner's old values.
  std::string smem = ctx.shared_scratch(t.numel() * element_bytes(t));
  std::string slots = ctx.fresh("slots");
  ctx.out.line(c_scalar(t.scalar) + "* const " + slots + " = reinterpret_cast<" + c_scalar(t.scalar) + "*>(" + smem +
               ");  // the owners' old values, to their replicas");
  ctx.out.open("if (" + own + ")");
  std::string j = ctx.open_unrolled(d.registers());
  ctx.out.line(slots + "[" + ctx.element_index(d, j) + "] = " + ctx.name(result) + "[" + j + "];");
  ctx.out.close();
  ctx.out.close();
  ctx.barrier();
  std::string k = ctx.open_unrolled(d.registers());
  ctx.out.line(ctx.name(result) + "[" + k + "] = " + slots + "[" + ctx.element_index(d, k) + "];");
  ctx.out.close();
  ctx.shared_reads_done();
}

}  // namespace

bool uses_atomics(const ir::Function& fn) {
  bool found = false;
  fn.walk([&](ir::OpId id) { found = found || ir::is_atomic(fn.op(id).kind); });
  return found;
}

void emit_atomic(CudaContext& ctx, ir::OpId id) {
  const ir::Op& op = ctx.fn.op(id);
  TEGULA_ASSERT(ir::is_atomic(op.kind), "not an atomic op");
  ctx.before_global_load(op.operands[0]);
  if (ctx.fn.type(op.results[0]).is_tile())
    emit_tile_atomic(ctx, id);
  else
    emit_scalar_atomic(ctx, id);
  ctx.after_global_store();
}

}  // namespace tegula::backends::cuda
