#include "ir/descriptor.h"

#include <optional>
#include <variant>

#include "ir/atomic.h"
#include "ir/type.h"
#include "support/error.h"

namespace tegula::ir {

namespace {

bool has_value(const Op& op) { return op.kind != OpKind::DescLoad; }

// desc_load: base + 3r operands; desc_store, desc_atomic: one more (the value).
size_t rank_of(const Op& op) {
  size_t roles = op.operands.size() - 1 - (has_value(op) ? 1 : 0);
  return roles / 3;
}

// What is wrong with desc_atomic's `op` attribute for elements of kind `s`.
std::string atomic_op_problem(const Op& op, Scalar s) {
  const Attr* attr = op.attr("op");
  const std::string* text = attr ? std::get_if<std::string>(attr) : nullptr;
  std::optional<AtomicOp> parsed = text ? parse_atomic_op(*text) : std::nullopt;
  if (!parsed || *parsed == AtomicOp::Xchg)
    return "needs the attribute op = \"add\", \"max\", \"min\", \"and\", \"or\" or \"xor\"";
  if (!atomic_supports(*parsed, s))
    return std::string("has no atomic ") + to_string(*parsed) + " of " + to_string(Type::of(s)) + " elements";
  return "";
}

}  // namespace

bool is_descriptor_op(OpKind kind) {
  return kind == OpKind::DescLoad || kind == OpKind::DescStore || kind == OpKind::DescAtomic;
}

ValueId descriptor_block_value(const Op& op) {
  TEGULA_ASSERT(is_descriptor_op(op.kind), "not a descriptor op");
  return has_value(op) ? op.operands.back() : op.results[0];
}

DescriptorOperands descriptor_operands(const Op& op) {
  TEGULA_ASSERT(is_descriptor_op(op.kind), "not a descriptor op");
  DescriptorOperands out;
  out.rank = rank_of(op);
  out.base = op.operands[0];
  for (size_t d = 0; d < out.rank; ++d) {
    out.shape.push_back(op.operands[1 + d]);
    out.strides.push_back(op.operands[1 + out.rank + d]);
    out.offsets.push_back(op.operands[1 + 2 * out.rank + d]);
  }
  if (has_value(op)) out.value = op.operands.back();
  return out;
}

std::string descriptor_problem(const Function& fn, const Op& op) {
  bool is_load = op.kind == OpKind::DescLoad;
  size_t roles = op.operands.size() - 1 - (has_value(op) ? 1 : 0);
  if (roles == 0 || roles % 3 != 0)
    return "takes a base, then a shape, a stride and an offset per dimension" +
           std::string(is_load ? "" : ", then the value") + "; got " + std::to_string(op.operands.size()) +
           " operands";
  DescriptorOperands d = descriptor_operands(op);
  const Type& base = fn.type(d.base);
  if (!base.pointer || base.is_tile()) return "operand 0 must be a scalar pointer, got " + to_string(base);
  auto scalar_int = [&](ValueId v) {
    const Type& t = fn.type(v);
    return !t.pointer && !t.is_tile() && is_integer(t.scalar) && is_signed(t.scalar);
  };
  for (size_t i = 0; i < d.rank; ++i) {
    if (!scalar_int(d.shape[i]) || !scalar_int(d.strides[i]))
      return "shapes and strides must be signed integer scalars, got " + to_string(fn.type(d.shape[i])) + " and " +
             to_string(fn.type(d.strides[i]));
    if (!(fn.type(d.offsets[i]) == Type::of(Scalar::I32)))
      return "offsets must be i32 scalars, got " + to_string(fn.type(d.offsets[i]));
  }
  const Type& block = is_load ? fn.type(op.results[0]) : fn.type(d.value);
  if (!block.is_tile() || block.pointer || block.scalar != base.scalar || static_cast<size_t>(block.rank()) != d.rank)
    return std::string(is_load ? "the result" : op.kind == OpKind::DescStore ? "the stored value" : "the value") + " must be a rank-" + std::to_string(d.rank) +
           " tile of " + to_string(Type::of(base.scalar)) + ", got " + to_string(block);
  if (op.kind == OpKind::DescAtomic) return atomic_op_problem(op, base.scalar);
  if (is_load) {
    const Attr* padding = op.attr("padding");
    const std::string* text = padding ? std::get_if<std::string>(padding) : nullptr;
    if (!text || (*text != "zero" && *text != "nan")) return "needs the attribute padding = \"zero\" or \"nan\"";
    if (*text == "nan" && !is_float(base.scalar)) return "padding \"nan\" needs float elements";
  }
  return "";
}

}  // namespace tegula::ir
