// Pointer types as values (builtins_pointer.cpp): `tl.pointer_type(elem)` is a
// compile-time dtype, and `x.to(tl.pointer_type(elem))` / `tl.cast` convert
// between integers and pointers and between pointer types, as Triton's
// tutorial 08 (grouped GEMM) does with addresses loaded from an int64 array.
// builtins.cpp puts `pointer_type` in its handler table and sends `.to()`
// calls that involve a pointer here.
#pragma once

#include <string>

#include "frontend/lowering.h"

namespace tegula::frontend {

// tl.pointer_type(element_ty, address_space=1, const=False) -> a pointer dtype.
Symbol lower_pointer_type(Lowerer& l, const CallArgs& c, const std::string& name);
// Whether `.to(input, dtype)` converts to or from a pointer.
bool converts_pointer(Lowerer& l, const BoundArgs& a);
// int -> pointer (its address), pointer -> int64/uint64 (the address) or
// bool (not null), pointer -> pointer of another element type.
Symbol lower_pointer_cast(Lowerer& l, const BoundArgs& a, const SourceLoc& loc);

}  // namespace tegula::frontend
