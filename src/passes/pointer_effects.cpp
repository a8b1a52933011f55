#include "passes/pointer_effects.h"

#include "ir/atomic.h"
#include "passes/pointer_provenance.h"
#include "support/diagnostic.h"

namespace tegula::passes {

std::vector<PointerEffects> pointer_effects(const ir::Function& fn) {
  std::vector<PointerEffects> effects(fn.params.size());
  PointerProvenance provenance(fn);
  // Marks what an access through `pointer` does on every parameter it may reach.
  auto access = [&](ir::ValueId pointer, bool read, bool written, bool atomic) {
    auto mark = [&](size_t i) {
      effects[i].read = effects[i].read || read;
      effects[i].written = effects[i].written || written;
      effects[i].atomic = effects[i].atomic || atomic;
    };
    const std::vector<int32_t>& sources = provenance.sources(pointer);
    if (provenance.unknown(pointer) || sources.empty()) {
      for (size_t i = 0; i < fn.params.size(); ++i)
        if (fn.params[i].type.is_pointer()) mark(i);
      return;
    }
    for (int32_t i : sources) mark(static_cast<size_t>(i));
  };
  fn.walk([&](ir::OpId id) {
    const ir::Op& op = fn.op(id);
    if (op.operands.empty()) return;
    if (op.kind == ir::OpKind::Load || op.kind == ir::OpKind::DescLoad) access(op.operands[0], true, false, false);
    if (op.kind == ir::OpKind::Store || op.kind == ir::OpKind::DescStore) access(op.operands[0], false, true, false);
    if (ir::is_atomic(op.kind) || op.kind == ir::OpKind::DescAtomic) access(op.operands[0], true, true, true);
    if (op.kind == ir::OpKind::InlineAsm) {  // the asm may read through its pointers, and write unless pure
      bool pure = op.has_attr("pure") && op.int_attr("pure") != 0;
      for (ir::ValueId v : op.operands)
        if (fn.type(v).pointer) access(v, true, !pure, false);
    }
  });
  return effects;
}

void refuse_writes_to_read_only(const ir::Function& fn) {
  bool any = false;
  for (const ir::Param& p : fn.params) any = any || p.read_only || p.by_value_bytes > 0;
  if (!any) return;
  PointerProvenance provenance(fn);
  fn.walk([&](ir::OpId id) {
    const ir::Op& op = fn.op(id);
    bool writes = op.kind == ir::OpKind::Store || op.kind == ir::OpKind::DescStore || ir::is_atomic(op.kind) ||
                  op.kind == ir::OpKind::DescAtomic;
    if (op.operands.empty() || !writes) return;
    for (int32_t i : provenance.sources(op.operands[0])) {
      const ir::Param& p = fn.params[static_cast<size_t>(i)];
      if (p.by_value_bytes > 0)
        error_at(op.loc, Diag::InvalidOperandType,
                 "`" + p.name + "` is a host TMA descriptor, passed by value: the kernel cannot write its bytes",
                 "write a descriptor in the kernel into a device array (a workspace) instead, or fill the host "
                 "descriptor before the launch");
      if (!p.read_only) continue;
      error_at(op.loc, Diag::InvalidOperandType,
               std::string("Cannot store to a constant pointer: `") + p.name + "` is annotated tl.const" +
                   (op.kind == ir::OpKind::Store || op.kind == ir::OpKind::DescStore ? "" : " and atomics write"),
               "drop the tl.const annotation, or store through another pointer");
    }
  });
}

}  // namespace tegula::passes
