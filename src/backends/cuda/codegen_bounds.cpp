// Debug mode on the CUDA backend: checked loads and stores, the check an
// atomic adds to its mask, the assert report, and the debug ABI of the
// kernel (codegen_bounds.h).
//
// A check is one call, `tg_access<params...>(tg_dbg, pointer, bytes, site,
// element)`, ANDed after the access's mask so that masked-off lanes are
// never checked: the parameters are the pointer's provenance
// (passes/pointer_provenance.h), the site its number in passes::DebugSites,
// the element the linear index of the element in its tile (it orders two
// errors of one program). A pointer that may come from several arrays
// (tl.where between two of them) passes when it lies inside any of them. A
// failed check skips the access (a load yields `other`, or 0) and stops the
// thread: its later accesses are skipped too, while the other threads of the
// program finish theirs (all of them in bounds, or checked the same way).
#include "backends/cuda/codegen_bounds.h"
#include "backends/c_family/prelude_text.h"

#include <algorithm>

#include "backends/cuda/prelude_debug.h"
#include "support/diagnostic.h"

namespace tegula::backends::cuda {

namespace {

bool is_volatile(const ir::Op& op) {
  const ir::Attr* a = op.attr("volatile");
  return a != nullptr && std::holds_alternative<int64_t>(*a) && std::get<int64_t>(*a) != 0;
}

std::string read(ir::Scalar s, const std::string& pointer, bool volatile_access) {
  std::string value = volatile_access ? "*(const volatile " + c_memory(s) + "*)" + pointer : "*" + pointer;
  return s == ir::Scalar::I1 ? "(" + value + " != 0)" : value;
}

std::string stored(ir::Scalar s, const std::string& value) {
  return s == ir::Scalar::I1 ? "(unsigned char)" + value : value;
}

void emit_tile_load(CudaContext& ctx, ir::OpId id) {
  const ir::Op& op = ctx.fn.op(id);
  ir::ValueId result = op.results[0];
  const ir::Type& t = ctx.fn.type(result);
  const Layout& layout = ctx.operand_layout(id, 0);
  Distribution d = ctx.distribution(layout, t.shape);
  int registers = ctx.declare_tile(ctx.name(result), t, ctx.layout(result));
  TEGULA_ASSERT(registers == d.registers(), "a load reading its pointers in another distribution");
  std::string ptrs = ctx.operand(id, 0);
  std::string mask = op.operands.size() > 1 ? ctx.operand(id, 1) : "";
  std::string other = op.operands.size() > 2 ? ctx.operand(id, 2) : "";
  ctx.before_global_load();
  std::string i = ctx.open_unrolled(registers);
  std::string pointer = ptrs + "[" + i + "]";
  std::string condition =
      access_condition(ctx, id, pointer, mask.empty() ? "" : mask + "[" + i + "]", &d, i);
  std::string fallback = other.empty() ? "(" + c_scalar(t.scalar) + ")0" : other + "[" + i + "]";
  std::string value = read(t.scalar, pointer, is_volatile(op));
  if (!condition.empty()) value = "(" + condition + ") ? " + value + " : " + fallback;
  ctx.out.line(ctx.name(result) + "[" + i + "] = " + value + ";");
  ctx.out.close();
}

void emit_tile_store(CudaContext& ctx, ir::OpId id) {
  const ir::Op& op = ctx.fn.op(id);
  const ir::Type& value_type = ctx.fn.type(op.operands[1]);
  Distribution d = ctx.distribution(ctx.operand_layout(id, 0), value_type.shape);
  std::string ptrs = ctx.operand(id, 0), values = ctx.operand(id, 1);
  std::string mask = op.operands.size() > 2 ? ctx.operand(id, 2) : "";
  std::string own = ctx.owner(d);
  if (!own.empty()) ctx.out.open("if (" + own + ")");
  std::string i = ctx.open_unrolled(d.registers());
  std::string pointer = ptrs + "[" + i + "]";
  std::string condition =
      access_condition(ctx, id, pointer, mask.empty() ? "" : mask + "[" + i + "]", &d, i);
  std::string store = "*" + pointer + " = " + stored(value_type.scalar, values + "[" + i + "]") + ";";
  ctx.out.line(condition.empty() ? store : "if (" + condition + ") " + store);
  ctx.out.close();
  if (!own.empty()) ctx.out.close();
  ctx.after_global_store();
}

void emit_scalar_load(CudaContext& ctx, ir::OpId id) {
  const ir::Op& op = ctx.fn.op(id);
  ir::ValueId result = op.results[0];
  ir::Scalar s = ctx.fn.type(result).scalar;
  ctx.before_global_load();
  std::string pointer = ctx.name(op.operands[0]);
  std::string condition = access_condition(ctx, id, pointer, op.operands.size() > 1 ? ctx.name(op.operands[1]) : "");
  std::string value = read(s, pointer, is_volatile(op));
  if (!condition.empty()) {
    std::string other = op.operands.size() > 2 ? ctx.name(op.operands[2]) : "(" + c_scalar(s) + ")0";
    value = "(" + condition + ") ? " + value + " : " + other;
  }
  ctx.out.line(c_const(ctx.fn.type(result)) + " " + ctx.name(result) + " = " + value + ";");
}

void emit_scalar_store(CudaContext& ctx, ir::OpId id) {
  const ir::Op& op = ctx.fn.op(id);
  std::string pointer = ctx.name(op.operands[0]);
  std::string condition = "threadIdx.x == 0";
  std::string checked = access_condition(ctx, id, pointer, op.operands.size() > 2 ? ctx.name(op.operands[2]) : "");
  if (!checked.empty()) condition += " && " + checked;
  ir::Scalar s = ctx.fn.type(op.operands[1]).scalar;
  ctx.out.line("if (" + condition + ") *" + pointer + " = " + stored(s, ctx.name(op.operands[1])) + ";");
  ctx.after_global_store();
}

}  // namespace

void emit_checked_memory(CudaContext& ctx, ir::OpId id) {
  const ir::Op& op = ctx.fn.op(id);
  bool tile = ctx.fn.type(op.operands[0]).is_tile();
  if (op.kind == ir::OpKind::Load) return tile ? emit_tile_load(ctx, id) : emit_scalar_load(ctx, id);
  TEGULA_ASSERT(op.kind == ir::OpKind::Store, "not a load or store");
  tile ? emit_tile_store(ctx, id) : emit_scalar_store(ctx, id);
}

std::string access_condition(CudaContext& ctx, ir::OpId op, const std::string& pointer, const std::string& mask,
                             const Distribution* d, const std::string& reg) {
  if (!ctx.debug_sites) return mask;
  int32_t site = ctx.debug_sites->index(op);
  TEGULA_ASSERT(site >= 0, std::string("no debug site for `") + ir::name(ctx.fn.op(op).kind) + "`");
  const passes::DebugSite& s = ctx.debug_sites->sites()[static_cast<size_t>(site)];
  // No array to check against: the pointer was made from an integer or read
  // from memory (unknown provenance, docs/debug-mode.md), so it may point into
  // memory no argument covers; the access is not checked.
  if (s.params.empty()) return mask;
  std::string params;
  for (int32_t p : s.params) params += (params.empty() ? "" : ", ") + std::to_string(p);
  std::string index = d == nullptr ? "0" : ctx.element_index(*d, reg);
  std::string check = "tg_access<" + params + ">(tg_dbg, (const void*)(" + pointer + "), " +
                      std::to_string(ir::byte_size(s.element)) + ", " + std::to_string(site) + ", " + index + ")";
  // The mask first: masked-off lanes are never checked.
  return mask.empty() ? check : "(" + mask + ") && " + check;
}

std::string assert_failure_statement(const CudaContext& ctx, ir::OpId op, const std::string& index) {
  TEGULA_ASSERT(ctx.debug_sites, "asserts are compiled only in debug mode");
  return "tg_debug_assert(tg_dbg, " + std::to_string(ctx.debug_sites->index(op)) + ", " + index + ");";
}

void emit_debug_helpers(Emitter& unit, const CodegenOptions& options) {
  if (options.debug) {
    unit.raw(c_family::kCudaFunctions);
    unit.raw(c_family::kDebugRecord);
    unit.raw(kDebugPrelude);
  }
}

std::string debug_kernel_parameters(const ir::Function& fn, const CodegenOptions& options) {
  if (!options.debug) return "";
  std::string params;
  for (size_t i = 0; i < fn.params.size(); ++i) {
    if (!fn.params[i].type.is_pointer()) continue;
    std::string n = std::to_string(i);
    params += ", unsigned long long tg_base_" + n + ", unsigned long long tg_bytes_" + n;
  }
  params += ", TgDebugRecord* tg_record";
  return fn.params.empty() ? params.substr(2) : params;
}

std::string debug_prologue(const ir::Function& fn, const CodegenOptions& options) {
  if (!options.debug) return "";
  std::string extents;
  for (size_t i = 0; i < fn.params.size(); ++i) {
    std::string n = std::to_string(i);
    // A parameter passed by value is read where the kernel holds it, not at the host address launched with.
    const ir::Param& p = fn.params[i];
    std::string extent = p.by_value_bytes > 0 ? "{(unsigned long long)tg_value" + n + ".b, " +
                                                    std::to_string(p.by_value_bytes) + "ull}"
                         : p.type.is_pointer() ? "{tg_base_" + n + ", tg_bytes_" + n + "}"
                                               : std::string("{0ull, 0ull}");
    extents += (i ? ", " : "") + extent;
  }
  if (extents.empty()) extents = "{0ull, 0ull}";
  return "// debug mode: each pointer parameter's array, and this thread's view of the error record\n"
         "const TgExtent tg_extents[" + std::to_string(std::max<size_t>(fn.params.size(), 1)) + "] = {" + extents +
         "};\n"
         "TgDebug tg_dbg = {tg_record, tg_extents,\n"
         "                  (long long)blockIdx.x + (long long)gridDim.x * ((long long)blockIdx.y + "
         "(long long)gridDim.y * (long long)blockIdx.z), false};\n";
}

}  // namespace tegula::backends::cuda
