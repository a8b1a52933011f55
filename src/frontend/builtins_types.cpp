// Triton's type objects as kernels use them (builtins_types.h): the classes
// tl.dtype, tl.block_type, tl.pointer_type, tl.constexpr_type, tl.tensor,
// tl.tuple, tl.slice and tl.const as values of `isinstance` and annotations,
// the constructors tl.dtype(name), tl.block_type(dtype, shape) and
// tl.tuple(items), the attributes of a type object, the loop-condition
// wrapper tl.condition and the block marker tl.async_task.
#include "frontend/builtins_types.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "frontend/type_rules.h"
#include "support/diagnostic.h"

namespace tegula::frontend {

using TypeForm = ConstValue::TypeForm;

namespace {

bool is_type_object(const Symbol& s, TypeForm form) {
  return s.is_const() && s.constant.kind == ConstValue::Kind::DType && s.constant.type_form == form;
}

// Whether `obj` is an instance of the class `cls` names: a class of the
// language (a registry row of this file) or a Python type.
bool instance_of(const Symbol& obj, const Symbol& cls, Lowerer& l, const SourceLoc& loc) {
  if (cls.kind == Symbol::Kind::Tuple) {
    for (const Symbol& c : cls.elements)
      if (instance_of(obj, c, l, loc)) return true;
    return false;
  }
  if (cls.kind == Symbol::Kind::AggregateType) return is_aggregate_instance_of(obj, cls);
  bool dtype = obj.is_const() && obj.constant.kind == ConstValue::Kind::DType;
  bool number = obj.is_const() && !dtype;
  if (cls.kind == Symbol::Kind::Builtin) {
    const std::string& c = cls.name;
    if (c == "tensor") return obj.is_value();
    if (c == "dtype") return dtype && obj.constant.type_form != TypeForm::Constexpr;
    if (c == "pointer_type") return dtype && obj.constant.pointer && obj.constant.type_form == TypeForm::Scalar;
    if (c == "block_type") return is_type_object(obj, TypeForm::Block);
    if (c == "constexpr_type") return is_type_object(obj, TypeForm::Constexpr);
    if (c == "constexpr") return number;
    if (c == "tuple" || c == "py.tuple") return obj.kind == Symbol::Kind::Tuple;
    if (c == "tuple_type")  // a tuple of types, as `.type` of a tuple gives
      return obj.kind == Symbol::Kind::Tuple &&
             std::all_of(obj.elements.begin(), obj.elements.end(), [](const Symbol& e) {
               return e.kind == Symbol::Kind::Tuple || (e.is_const() && e.constant.kind == ConstValue::Kind::DType);
             });
    if (c == "slice") return obj.kind == Symbol::Kind::Slice;
    if (c == "tensor_descriptor") return obj.kind == Symbol::Kind::TensorDescriptor;
    if (c == "const") return false;  // an annotation only: no value is a tl.const
    if (c == "py.int") return number && (obj.constant.kind == ConstValue::Kind::Int ||
                                         obj.constant.kind == ConstValue::Kind::Bool);
    if (c == "py.float") return number && obj.constant.kind == ConstValue::Kind::Float;
    if (c == "py.bool") return number && obj.constant.kind == ConstValue::Kind::Bool;
    if (c == "py.str") return number && obj.constant.kind == ConstValue::Kind::Str;
    if (c == "py.list") return obj.kind == Symbol::Kind::Tuple;
  }
  error_at(loc, Diag::WrongArgumentKind,
           "the second argument of isinstance must be a class such as tl.tensor, tl.dtype or int, but it is " +
               l.describe(cls));
}

}  // namespace

Symbol lower_isinstance(Lowerer& l, const CallArgs& c, const std::string& n) {
  BoundArgs a("isinstance", {"obj", "class_or_tuple"}, c);
  return Symbol::of(ConstValue::boolean(instance_of(a.get("obj"), a.get("class_or_tuple"), l, a.loc("class_or_tuple"))));
}

// tl.dtype("float32"), tl.dtype("fp16"), tl.dtype("void"): the dtype of a name.
Symbol lower_dtype_class(Lowerer& l, const CallArgs& c, const std::string& n) {
  BoundArgs a(n, {"name"}, c);
  const Symbol& s = a.get("name");
  if (s.is_const() && s.constant.kind == ConstValue::Kind::DType) return s;
  ConstValue name = l.to_const(s, a.loc("name"), "the name of tl.dtype");
  if (name.kind == ConstValue::Kind::Str && name.s == "void") return Symbol::of(void_type());
  if (name.kind == ConstValue::Kind::Str)
    if (auto t = dtype_from_name(name.s)) return Symbol::of(ConstValue::type(*t));
  error_at(a.loc("name"), Diag::UnknownDtype, "tl.dtype does not know the type " + to_string(name),
           "use a name such as \"float32\", \"fp16\" or \"int8\"");
}

// tl.core.get_int_dtype(bitwidth, signed): the integer type of a width, as
// Triton's host function gives it to the kernels that call it.
Symbol lower_get_int_dtype(Lowerer& l, const CallArgs& c, const std::string& n) {
  BoundArgs a("get_int_dtype", {"bitwidth", "signed"}, c);
  ConstValue bits = l.to_const(a.get("bitwidth"), a.loc("bitwidth"), "the bitwidth of get_int_dtype");
  bool is_signed = false;
  if (!l.truth_constant(a.get("signed"), a.loc("signed"), &is_signed))
    error_at(a.loc("signed"), Diag::NotConstexpr,
             "get_int_dtype's signed needs a compile-time True or False, but it is " + l.describe(a.get("signed")));
  if (bits.kind == ConstValue::Kind::Int && bits.i == 1) return Symbol::of(ConstValue::type(ir::Scalar::I1));
  if (bits.kind == ConstValue::Kind::Int && (bits.i == 8 || bits.i == 16 || bits.i == 32 || bits.i == 64))
    return Symbol::of(ConstValue::type(*dtype_from_name((is_signed ? "int" : "uint") + std::to_string(bits.i))));
  error_at(a.loc("bitwidth"), Diag::UnknownDtype, "get_int_dtype has no integer type of " + to_string(bits) + " bits",
           "use a bitwidth of 1, 8, 16, 32 or 64");
}

// tl.core._unwrap_if_constexpr(o): Triton's host helper that takes the value out of a constexpr
// wrapper and leaves anything else alone. Libraries' helpers call it inside kernels on dtypes
// passed as constexpr parameters; a kernel's constants carry no wrapper, so it is the identity.
Symbol lower_unwrap_if_constexpr(Lowerer&, const CallArgs& c, const std::string&) {
  BoundArgs a("_unwrap_if_constexpr", {"o"}, c);
  return a.get("o");
}

// dtype.is_fp16(), dtype.is_floating(), dtype.get_int_max_value(), ...:
// Triton's methods of a type object, decided at compile time by its name
// lists (an int1 counts as unsigned; a pointer, block or void type is none
// of the element kinds, as in Triton).
Symbol lower_dtype_method(Lowerer& l, const CallArgs& c, const std::string& n) {
  const std::string method = n.substr(std::string("dtype.").size());
  BoundArgs a(method, {"self"}, c);
  const ConstValue& t = a.get("self").constant;
  const bool element = t.type_form == TypeForm::Scalar && !t.pointer;
  const ir::ScalarInfo& info = ir::scalar_info(t.dtype);
  const bool is_float = element && info.kind == ir::ScalarKind::Float;
  const bool is_signed = element && info.kind == ir::ScalarKind::Signed;
  const bool is_unsigned = element && (info.kind == ir::ScalarKind::Unsigned || info.kind == ir::ScalarKind::Bool);
  auto yes = [](bool v) { return Symbol::of(ConstValue::boolean(v)); };
  if (method == "is_floating") return yes(is_float);
  if (method == "is_standard_floating")
    return yes(element && (t.dtype == ir::Scalar::F16 || t.dtype == ir::Scalar::BF16 || t.dtype == ir::Scalar::F32 ||
                           t.dtype == ir::Scalar::F64));
  if (method == "is_fp8") return yes(element && ir::is_fp8(t.dtype));
  if (method == "is_int") return yes(is_signed || is_unsigned);
  if (method == "is_int_signed") return yes(is_signed);
  if (method == "is_int_unsigned") return yes(is_unsigned);
  if (method == "is_bool") return yes(element && t.dtype == ir::Scalar::I1);
  if (method == "is_ptr") return yes(t.type_form == TypeForm::Scalar && t.pointer);
  if (method == "is_block") return yes(t.type_form == TypeForm::Block);
  if (method == "is_void") return yes(t.type_form == TypeForm::Void);
  if (method == "is_const") return yes(false);
  if (method == "get_int_max_value" || method == "get_int_min_value") {
    if (!is_signed && !is_unsigned)
      error_at(c.loc, Diag::WrongArgumentKind,
               method + " of " + to_string(t) + ", which is not an integer type",
               "call it on an integer dtype");
    const int bits = info.bits;
    const bool max = method == "get_int_max_value";
    if (is_unsigned && max && bits == 64) {
      ConstValue all = ConstValue::integer(-1);
      all.is_unsigned = true;  // 2**64 - 1
      return Symbol::of(all);
    }
    if (is_unsigned) return Symbol::of(ConstValue::integer(max ? (int64_t)((uint64_t{1} << bits) - 1) : 0));
    const int64_t top = bits == 64 ? INT64_MAX : (int64_t{1} << (bits - 1)) - 1;
    return Symbol::of(ConstValue::integer(max ? top : -top - 1));
  }
  // is_<name>: one per dtype's short name (is_fp16, is_fp8e4b8).
  if (method.starts_with("is_")) return yes(element && method.substr(3) == info.short_name);
  error_at(c.loc, Diag::NoSuchAttribute, "a dtype has no method `" + method + "`");
}

// tl.block_type(element_ty, shape): the type of a tile.
Symbol lower_block_type(Lowerer& l, const CallArgs& c, const std::string& n) {
  BoundArgs a(n, {"element_ty", "shape"}, c);
  const Symbol& e = a.get("element_ty");
  ConstValue t = ConstValue::type(ir::Scalar::I32);
  if (e.is_const() && e.constant.kind == ConstValue::Kind::DType && e.constant.pointer &&
      e.constant.type_form == TypeForm::Scalar)
    t = e.constant;
  else
    t = ConstValue::type(l.to_dtype(e, a.loc("element_ty"), "the element type of tl.block_type"));
  t.type_form = TypeForm::Block;
  t.shape = l.to_shape(a.get("shape"), a.loc("shape"), "the shape of tl.block_type");
  return Symbol::of(t);
}

// tl.tuple_type(types, fields=None): a tuple of the types, as `.type` of a
// tuple of tensors is; the fields name its elements as a named tuple's do.
Symbol lower_tuple_type(Lowerer& l, const CallArgs& c, const std::string& n) {
  BoundArgs a(n, {"types", "?fields"}, c);
  const Symbol& types = a.get("types");
  if (types.kind != Symbol::Kind::Tuple)
    error_at(a.loc("types"), Diag::WrongArgumentKind,
             "tl.tuple_type needs a list of types, but it is " + l.describe(types), "write tl.tuple_type([tl.int32, ...])");
  Symbol t = Symbol::tuple(types.elements);
  if (a.has("fields") && !a.get("fields").is_none()) {
    const Symbol& fields = a.get("fields");
    bool names = fields.kind == Symbol::Kind::Tuple && fields.elements.size() == types.elements.size();
    for (size_t k = 0; names && k < fields.elements.size(); ++k)
      names = fields.elements[k].is_const() && fields.elements[k].constant.kind == ConstValue::Kind::Str;
    if (!names)
      error_at(a.loc("fields"), Diag::WrongArgumentKind,
               "the fields of tl.tuple_type are one name (a str) per type, but they are " + l.describe(fields));
    for (size_t k = 0; k < fields.elements.size(); ++k) t.name += (k ? "," : "") + fields.elements[k].constant.s;
  }
  return t;
}

// tl.tuple(items) and tuple(items): the items as a tuple.
Symbol lower_tuple(Lowerer& l, const CallArgs& c, const std::string& n) {
  BoundArgs a(n == "py.tuple" ? "tuple" : "tl.tuple", {"?args"}, c);
  if (!a.has("args")) return Symbol::tuple({});
  const Symbol& items = a.get("args");
  if (items.kind != Symbol::Kind::Tuple)
    error_at(a.loc("args"), Diag::WrongArgumentKind, "tuple() needs a tuple or a list, but it is " + l.describe(items));
  return Symbol::tuple(items.elements);
}

// Classes that kernels name but never construct: tl.tensor (tiles come from
// tl.arange, tl.load, ...), tl.const, tl.constexpr_type, tl.slice and
// tl.tensor_descriptor (made by tl.make_tensor_descriptor).
Symbol lower_type_class(Lowerer& l, const CallArgs& c, const std::string& n) {
  // constexpr_type(v): the type of a constant, as `v.type` of a constexpr is.
  if (n == "constexpr_type" && c.positional.size() == 1 && c.keywords.empty() && constexpr_text(c.positional[0])) {
    Symbol v = c.positional[0];
    v.assigned = false;
    return type_of(l, v);
  }
  error_at(c.loc, Diag::NotCallable, "tl." + n + " is a type: use it in annotations and isinstance(), not as a call",
           n == "tensor"              ? "make tiles with tl.arange, tl.full or tl.load"
           : n == "tensor_descriptor" ? "make descriptors with tl.make_tensor_descriptor"
                                      : "");
}

// while tl.condition(cond, disable_licm=False): the condition. disable_licm
// asks Triton not to hoist loop-invariant code out of the loop (to keep live
// ranges short); hoisting changes no result, and Tegula's hoisting is kept.
Symbol lower_condition(Lowerer& l, const CallArgs& c, const std::string& n) {
  BoundArgs a(n, {"arg1", "?disable_licm"}, c);
  if (a.has("disable_licm")) l.to_const(a.get("disable_licm"), a.loc("disable_licm"), "disable_licm");
  return a.get("arg1");
}

// tl.async_task(task_ids, ...): the context of a `with` block that Triton's
// warp specialization gives to some warp groups. The block runs on every
// thread here (lower_stmt.cpp), so the ids and options only need to be
// constants.
Symbol lower_async_task(Lowerer& l, const CallArgs& c, const std::string& n) {
  for (size_t i = 0; i < c.positional.size(); ++i) {
    const Symbol& ids = c.positional[i];
    for (const Symbol& id : ids.kind == Symbol::Kind::Tuple ? ids.elements : std::vector<Symbol>{ids})
      l.to_const(id, c.positional_locs[i], "a task id of tl.async_task");
  }
  for (size_t k = 0; k < c.keywords.size(); ++k)
    if (c.keywords[k].second.kind != Symbol::Kind::Tuple)
      l.to_const(c.keywords[k].second, c.keyword_locs[k], "`" + c.keywords[k].first + "` of tl.async_task");
  return Symbol::builtin("async_task");
}

ConstValue void_type() {
  ConstValue v = ConstValue::type(ir::Scalar::I32);
  v.type_form = TypeForm::Void;
  return v;
}

Symbol slice_tuple(Lowerer& l, const Symbol& tuple, const std::vector<std::optional<Symbol>>& bounds,
                   const SourceLoc& loc) {
  auto bound = [&](size_t i, const char* what) -> std::optional<int64_t> {
    if (i >= bounds.size() || !bounds[i] || bounds[i]->is_none()) return std::nullopt;
    // 2**63 and above (their bits in `i`) clamp as Python clamps any bound past the tuple.
    const Symbol& b = *bounds[i];
    if (b.is_const() && b.constant.kind == ConstValue::Kind::Int && b.constant.is_unsigned)
      return std::numeric_limits<int64_t>::max();
    return l.to_int_const(b, loc, std::string("the ") + what + " of a tuple slice");
  };
  int64_t n = static_cast<int64_t>(tuple.elements.size());
  int64_t step = bound(2, "step").value_or(1);
  if (step == 0) error_at(loc, Diag::InvalidTupleIndex, "a slice step cannot be zero");
  // Python's rules: negative bounds count from the end, then clamp.
  auto clamp = [&](std::optional<int64_t> v, int64_t fallback) {
    if (!v) return fallback;
    int64_t x = *v < 0 ? *v + n : *v;
    return step > 0 ? std::clamp<int64_t>(x, 0, n) : std::clamp<int64_t>(x, -1, n - 1);
  };
  int64_t start = clamp(bound(0, "start"), step > 0 ? 0 : n - 1);
  int64_t stop = clamp(bound(1, "stop"), step > 0 ? n : -1);
  // Stepped in 128 bits: a step near 2^63 took `i` past int64 and read outside the tuple.
  std::vector<Symbol> out;
  for (__int128 i = start; step > 0 ? i < stop : i > stop; i += step) out.push_back(tuple.elements[static_cast<size_t>(i)]);
  return Symbol::tuple(std::move(out));
}

std::optional<Symbol> language_constant(const std::string& name) {
  if (name == "TRITON_MAX_TENSOR_NUMEL") return Symbol::of(ConstValue::integer(ir::kMaxTileElements));
  if (name == "void") return Symbol::of(void_type());
  if (name == "pi32_t") {
    ConstValue p = ConstValue::type(ir::Scalar::I32);
    p.pointer = true;
    return Symbol::of(p);
  }
  return std::nullopt;
}

Symbol type_of(Lowerer& l, const Symbol& s) {
  if (s.is_value()) {
    ir::Type t = l.type(s.value);
    ConstValue d = ConstValue::type(t.scalar);
    d.pointer = t.is_pointer();
    if (t.is_tile()) {
      d.type_form = TypeForm::Block;
      d.shape = t.shape;
    }
    return Symbol::of(d);
  }
  ConstValue d = void_type();
  d.type_form = TypeForm::Constexpr;
  d.constexpr_of = constexpr_text(s).value_or("");
  return Symbol::of(d);
}

std::optional<std::string> constexpr_text(const Symbol& s) {
  if (s.is_const() && s.constant.is_numeric()) {
    // Python's ==: True == 1 == 1.0, so numbers of one value share a text.
    double d = s.constant.as_double();
    if (s.constant.kind != ConstValue::Kind::Float || (d == std::trunc(d) && std::fabs(d) < 0x1p63))
      return s.constant.kind == ConstValue::Kind::Float ? std::to_string(static_cast<int64_t>(d))
                                                        : to_string(ConstValue::integer(s.constant.i));
  }
  if (s.is_const()) return to_string(s.constant);
  if (s.kind != Symbol::Kind::Tuple) return std::nullopt;
  std::string text = "(";
  for (size_t k = 0; k < s.elements.size(); ++k) {
    std::optional<std::string> element = constexpr_text(s.elements[k]);
    if (!element) return std::nullopt;
    text += (k ? ", " : "") + *element;
  }
  return text + (s.elements.size() == 1 ? ",)" : ")");
}

std::optional<Symbol> type_object_attribute(const ConstValue& t, const std::string& attr) {
  if (t.type_form == TypeForm::Block) {
    ConstValue element = t;
    element.type_form = TypeForm::Scalar;
    element.shape.clear();
    if (attr == "scalar" || attr == "element_ty") return Symbol::of(element);
    if (attr == "shape") {
      std::vector<Symbol> dims;
      for (int64_t d : t.shape) dims.push_back(Symbol::of(ConstValue::integer(d)));
      return Symbol::tuple(std::move(dims));
    }
    if (attr == "numel") {
      int64_t numel = 1;
      for (int64_t d : t.shape) numel *= d;
      return Symbol::of(ConstValue::integer(numel));
    }
    return std::nullopt;
  }
  if (t.type_form == TypeForm::Scalar && attr == "scalar") return Symbol::of(t);
  if (t.type_form == TypeForm::Scalar && !t.pointer) {
    // Triton's other attributes of an element dtype: int_bitwidth of an integer, the layout of a float.
    const ir::ScalarInfo& info = ir::scalar_info(t.dtype);
    const bool is_float = info.kind == ir::ScalarKind::Float;
    if (attr == "name") return Symbol::of(ConstValue::string(info.short_name));
    if (attr == "int_bitwidth" && !is_float) return Symbol::of(ConstValue::integer(info.bits));
    if (attr == "fp_mantissa_width" && is_float) return Symbol::of(ConstValue::integer(info.mantissa));
    if (attr == "exponent_bias" && is_float) return Symbol::of(ConstValue::integer(info.bias));
  }
  return std::nullopt;
}

}  // namespace tegula::frontend
