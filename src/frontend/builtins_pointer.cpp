#include "frontend/builtins_pointer.h"

#include "frontend/type_rules.h"
#include "support/diagnostic.h"

namespace tegula::frontend {

namespace {

bool is_pointer_dtype(const Symbol& s) {
  return s.is_const() && s.constant.kind == ConstValue::Kind::DType && s.constant.pointer;
}

}  // namespace

Symbol lower_pointer_type(Lowerer& l, const CallArgs& c, const std::string& n) {
  BoundArgs a(n, {"element_ty", "?address_space", "?const"}, c);
  ConstValue t = ConstValue::type(l.to_dtype(a.get("element_ty"), a.loc("element_ty"), "the element type of tl.pointer_type"));
  if (a.has("address_space") &&
      l.to_int_const(a.get("address_space"), a.loc("address_space"), "the address space of tl.pointer_type") != 1)
    error_at(a.loc("address_space"), Diag::ArgumentOutOfRange,
             "tl.pointer_type supports address space 1 (global memory) only");
  t.pointer = true;
  return Symbol::of(t);
}

bool converts_pointer(Lowerer& l, const BoundArgs& a) {
  if (is_pointer_dtype(a.get("dtype"))) return true;
  const Symbol& in = a.get("input");
  return in.is_value() && l.type(in.value).is_pointer();
}

Symbol lower_pointer_cast(Lowerer& l, const BoundArgs& a, const SourceLoc& loc) {
  const Symbol& dtype = a.get("dtype");
  bool to_pointer = is_pointer_dtype(dtype);
  if (a.has("fp_downcast_rounding"))
    error_at(a.loc("fp_downcast_rounding"), Diag::PointerConversion,
             "fp_downcast_rounding does not apply to pointer conversions");
  ir::Scalar target = to_pointer ? dtype.constant.dtype : l.to_dtype(dtype, a.loc("dtype"), "the dtype of .to()");
  ir::ValueId x = l.to_value(a.get("input"), a.loc("input"), "the input of .to()");
  ir::Type from = l.type(x);
  if (from.is_pointer() && to_pointer) {
    if (from.scalar == target) return Symbol::of(x);
    ir::Type result = from;
    result.scalar = target;
    return Symbol::of(l.create(ir::OpKind::Bitcast, {x}, result, loc));
  }
  if (to_pointer) {
    if (!ir::is_integer(from.scalar) || from.scalar == ir::Scalar::I1)
      error_at(loc, Diag::PointerConversion,
               "only an integer (an address) converts to a pointer, not " + triton_name(from.scalar),
               "load the address as tl.int64 or tl.uint64, then .to(tl.pointer_type(...))");
    ir::Type result = ir::Type{target, true, from.shape};
    return Symbol::of(l.create(ir::OpKind::Cast, {x}, result, loc));
  }
  // From a pointer to a value: its address, or whether it is not null.
  if (target != ir::Scalar::I1 && target != ir::Scalar::I64 && target != ir::Scalar::U64)
    error_at(loc, Diag::PointerConversion,
             "a pointer converts to tl.int64, tl.uint64 (its address) or tl.int1 (not null), not " +
                 triton_name(target),
             "use .to(tl.int64) and narrow the integer afterwards");
  if (a.has("bitcast") && target == ir::Scalar::I1)
    error_at(a.loc("bitcast"), Diag::PointerConversion, "a pointer cannot be bitcast to tl.int1");
  return Symbol::of(l.create(ir::OpKind::Cast, {x}, from.with_scalar(target), loc));
}

}  // namespace tegula::frontend
