// The op kinds of the tile IR and their properties, generated from ops.def so
// that the printer, parser, verifier and passes never repeat a switch.
#pragma once

#include <cstdint>
#include <string_view>

namespace tegula::ir {

enum class OpKind : uint8_t {
#define OP(name, text, flags) name,
#include "ir/ops.def"
#undef OP
};

enum OpFlag : uint32_t {
  PURE = 1u << 0,
  COMM = 1u << 1,
  EW = 1u << 2,
  TERM = 1u << 3,
  REGIONS = 1u << 4,
};

struct OpInfo {
  const char* name;
  uint32_t flags;
};

const OpInfo& info(OpKind kind);
inline const char* name(OpKind kind) { return info(kind).name; }
inline bool is_pure(OpKind k) { return info(k).flags & PURE; }
inline bool is_commutative(OpKind k) { return info(k).flags & COMM; }
inline bool is_elementwise(OpKind k) { return info(k).flags & EW; }
inline bool is_terminator(OpKind k) { return info(k).flags & TERM; }
inline bool has_regions(OpKind k) { return info(k).flags & REGIONS; }
bool parse_op_kind(std::string_view text, OpKind* out);

}  // namespace tegula::ir
