// Triton's type objects inside kernels (builtins_types.cpp). A type object is
// a DType constant (const_value.h): an element dtype, a pointer type, a
// block type (`tile.type`, tl.block_type), tl.void, or the constexpr_type of
// a constant's `.type`. builtins.cpp's registry names the handlers.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "frontend/lowering.h"

namespace tegula::frontend {

// isinstance(obj, cls) on kernel symbols, decided at compile time.
Symbol lower_isinstance(Lowerer& l, const CallArgs& c, const std::string& name);
// tl.dtype(name), tl.block_type(element_ty, shape), tl.tuple(items) / tuple(items).
Symbol lower_dtype_class(Lowerer& l, const CallArgs& c, const std::string& name);
Symbol lower_block_type(Lowerer& l, const CallArgs& c, const std::string& name);
Symbol lower_tuple_type(Lowerer& l, const CallArgs& c, const std::string& name);
Symbol lower_get_int_dtype(Lowerer& l, const CallArgs& c, const std::string& name);
Symbol lower_unwrap_if_constexpr(Lowerer& l, const CallArgs& c, const std::string& name);
Symbol lower_tuple(Lowerer& l, const CallArgs& c, const std::string& name);
// dtype.is_fp16(), dtype.is_floating(), dtype.get_int_max_value(), ... of a type object.
Symbol lower_dtype_method(Lowerer& l, const CallArgs& c, const std::string& name);
// tl.tensor, tl.const, tl.constexpr_type, tl.slice: classes, refused as calls.
Symbol lower_type_class(Lowerer& l, const CallArgs& c, const std::string& name);
// tl.condition(cond, disable_licm=False): `cond`.
Symbol lower_condition(Lowerer& l, const CallArgs& c, const std::string& name);
// tl.async_task(task_ids, ...): the marker `with` accepts (lower_stmt.cpp).
Symbol lower_async_task(Lowerer& l, const CallArgs& c, const std::string& name);

// `t[start:stop:step]` of a tuple `t`, with Python's rules (constant bounds).
Symbol slice_tuple(Lowerer& l, const Symbol& tuple, const std::vector<std::optional<Symbol>>& bounds,
                   const SourceLoc& loc);
// tl.void.
ConstValue void_type();
// The constants of the language that are not dtypes: TRITON_MAX_TENSOR_NUMEL
// (Tegula's tile limit, 2^20 elements, as Triton's), tl.void, tl.pi32_t.
std::optional<Symbol> language_constant(const std::string& name);
// `s.type`: a value's dtype or block type; a constant's (or a tuple of
// constants') constexpr_type, which holds the constant's text.
Symbol type_of(Lowerer& l, const Symbol& s);
// The Python text of a constant or a tuple of constants ("10", "(5, 6, 7)"),
// with equal numbers written alike (True, 1 and 1.0 as "1"); nullopt for
// anything else.
std::optional<std::string> constexpr_text(const Symbol& s);
// `t.scalar`, `t.element_ty`, `t.shape`, `t.numel` of a type object, and an
// element dtype's `name`, `int_bitwidth`, `fp_mantissa_width` and
// `exponent_bias`; nullopt for other attributes.
std::optional<Symbol> type_object_attribute(const ConstValue& t, const std::string& attr);

}  // namespace tegula::frontend
