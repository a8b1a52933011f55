#include "frontend/value_bounds.h"

#include <algorithm>
#include <string>

#include "support/diagnostic.h"

namespace tegula::frontend {

namespace {

const char* const kHint =
    "keep compile-time tuples and strings small: compute with tiles (tl.arange, tl.full, tl.where), "
    "or loop over range(...) at run time";

// Counts until past a bound, so measuring costs at most the bound however
// large the value.
void visit(const Symbol& s, size_t level, ValueSize& size) {
  size.depth = std::max(size.depth, level);
  if (size.parts > kMaxValueParts || level > kMaxValueDepth) return;
  ++size.parts;
  if (s.is_const() && s.constant.kind == ConstValue::Kind::Str)
    size.parts += s.constant.s.size() / kStringCharsPerPart;
  // A receiver (an aggregate's class, a bound method's object) is shared, not
  // copied with the symbol, and was measured when it was built.
  for (const Symbol& e : s.elements) visit(e, level + 1, size);
}

[[noreturn]] void too_many_parts(const SourceLoc& loc, std::string_view what) {
  error_at(loc, Diag::CompileTimeValueTooLarge,
           std::string(what) + " would hold more than " + std::to_string(kMaxValueParts) +
               " values (counting those of the tuples and aggregates inside it, and a string as one per " +
               std::to_string(kStringCharsPerPart) + " characters)",
           kHint);
}

[[noreturn]] void too_deep(const SourceLoc& loc, std::string_view what) {
  error_at(loc, Diag::CompileTimeValueTooLarge,
           std::string(what) + " would nest tuples or aggregates more than " + std::to_string(kMaxValueDepth) +
               " deep",
           kHint);
}

}  // namespace

ValueSize measure(const Symbol& s) {
  ValueSize size;
  visit(s, 0, size);
  return size;
}

void check_value_size(const Symbol& s, const SourceLoc& loc) {
  if (s.elements.empty()) return;
  ValueSize size = measure(s);
  const char* what = s.kind == Symbol::Kind::Aggregate ? "this aggregate" : "this tuple";
  if (size.depth > kMaxValueDepth) too_deep(loc, what);
  if (size.parts > kMaxValueParts) too_many_parts(loc, what);
}

void check_string_length(size_t length, const SourceLoc& loc) {
  if (length > kMaxStringLength)
    error_at(loc, Diag::CompileTimeValueTooLarge,
             "this string would be " + std::to_string(length) + " characters long, more than the " +
                 std::to_string(kMaxStringLength) + " a kernel builds while compiling",
             kHint);
}

void ValueSizer::add(const Symbol& element) {
  ValueSize size = measure(element);
  if (size.depth + 1 > kMaxValueDepth) too_deep(loc_, what_);
  parts_ += size.parts;
  if (parts_ > kMaxValueParts) too_many_parts(loc_, what_);
}

}  // namespace tegula::frontend
