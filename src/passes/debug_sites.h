// The checks debug mode compiles into a kernel, numbered: every load, store
// and atomic (a bounds check) and every assert, in program order (the order
// of Function::walk). Both backends number their checks with this table, the
// generated code writes a site's number into the error record, and the
// runtime keeps the table (in the kernel-cache manifest) to turn that number
// back into an op kind, a source location, the arrays the pointer may point
// into and the assert's message. docs/debug-mode.md describes the whole mode.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/ir.h"

namespace tegula::passes {

struct DebugSite {
  enum class Kind { Load, Store, Atomic, Assert };

  Kind kind = Kind::Load;
  std::string file;  // of the op's location; empty without one
  int32_t line = 0;
  int32_t col = 0;
  // Bounds checks: the element type accessed (the pointer's pointee) and the
  // parameters whose arrays the pointer may point into (PointerProvenance).
  ir::Scalar element = ir::Scalar::I8;
  std::vector<int32_t> params;
  // Asserts: the message and the condition's tile shape (empty for a scalar).
  std::string message;
  std::vector<int64_t> shape;

  bool operator==(const DebugSite&) const = default;
};

// "load", "store", "atomic", "assert".
const char* to_string(DebugSite::Kind kind);

// One line of text (no newline) that parse_debug_site reads back exactly:
// `<kind> <line> <col> <element> <params> <shape> <file> <message>`, lists
// comma-separated, strings hex-encoded, `-` for empty ones. The kernel cache
// keeps a debug kernel's sites in this form.
std::string to_text(const DebugSite& site);
std::optional<DebugSite> parse_debug_site(std::string_view text);

// Which ops debug mode checks: load, store, the atomics (bounds) and assert.
bool is_checked_access(ir::OpKind kind);

class DebugSites {
 public:
  explicit DebugSites(const ir::Function& fn);

  const std::vector<DebugSite>& sites() const { return sites_; }
  // The site number of `op`, or -1 when debug mode does not check it.
  int32_t index(ir::OpId op) const { return op.index < index_.size() ? index_[op.index] : -1; }
  const DebugSite& site(ir::OpId op) const { return sites_.at(static_cast<size_t>(index(op))); }

 private:
  std::vector<DebugSite> sites_;
  std::vector<int32_t> index_;  // by OpId
};

}  // namespace tegula::passes
