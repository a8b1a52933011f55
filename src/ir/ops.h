// The op kinds of the tile IR and their properties, generated from ops.def so
// that the printer, parser, verifier and passes never repeat a switch.
#pragma once

#include <cstdint>
#include <string_view>

namespace tegula::ir {

enum class OpKind : uint8_t {
#define OP(name, text, ...) name,
#include "ir/ops.def"
#undef OP
};

inline constexpr int kNumOpKinds = 0
#define OP(name, text, ...) +1
#include "ir/ops.def"
#undef OP
    ;

enum OpFlag : uint32_t {
  PURE = 1u << 0,
  COMM = 1u << 1,
  EW = 1u << 2,
  TERM = 1u << 3,
  REGIONS = 1u << 4,
  LIB = 1u << 5,  // spelled with the libdevice preludes' helpers (ops.def)
};

// An operand or result count without a fixed bound (ops.def's ANY).
inline constexpr int kAnyCount = -1;

// What the verifier checks of an op beyond its operand, result and region
// counts (verifier.cpp has one check per rule; docs/ir.md states them).
enum class TypeRule : uint8_t {
  Constant, GridIndex, Arange,
  TargetQuery,  // tl.extra.cuda: no operands; globaltimer -> i64, smid -> i32, gdc_* -> nothing
  Splat, Broadcast, ExpandDims, Reshape, Trans, Join, Split,
  Numbers,   // ints or floats, every operand of the result type
  Integers,  // integers (i1 included), every operand of the result type
  Floats,    // floats, every operand of the result type
  Rounded,   // f32/f64, every operand of the result type; attr rounding rn|rz|rd|ru
  FloatAndInt,  // operand 0 float of the result type, operand 1 i32 of its shape
  Compare, Select, Cast, Bitcast, AddPtr,
  Hint,        // ir/hint.h
  Load, Store,
  Atomic,      // ir/atomic.h
  Descriptor,  // desc_load, desc_store, desc_atomic: ir/descriptor.h
  Reduce, Dot,
  ScanFamily,  // scan, sort, gather, histogram: ir/scan_ops.h
  For, If, While,
  Terminator,  // checked against the op that owns the region
  Print, Assert,
  InlineAsm,  // tl.inline_asm_elementwise (docs/ir.md)
};

struct OpInfo {
  const char* name;
  uint32_t flags;
  int min_operands;
  int max_operands;  // kAnyCount: no upper bound
  int results;       // kAnyCount: the type rule checks the count
  int regions;
  TypeRule rule;
};

const OpInfo& info(OpKind kind);
inline const char* name(OpKind kind) { return info(kind).name; }
inline bool is_pure(OpKind k) { return info(k).flags & PURE; }
inline bool is_commutative(OpKind k) { return info(k).flags & COMM; }
inline bool is_elementwise(OpKind k) { return info(k).flags & EW; }
inline bool is_terminator(OpKind k) { return info(k).flags & TERM; }
inline bool has_regions(OpKind k) { return info(k).flags & REGIONS; }
inline bool uses_libdevice(OpKind k) { return info(k).flags & LIB; }
bool parse_op_kind(std::string_view text, OpKind* out);

}  // namespace tegula::ir
