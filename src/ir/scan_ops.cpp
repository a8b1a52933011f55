// Verifier rules of scan, sort, gather and histogram (see scan_ops.h).
#include "ir/scan_ops.h"

#include <variant>

namespace tegula::ir {

namespace {

// Reads an integer attribute, or says why it cannot.
std::string read_int(const Op& op, const char* name, bool optional, int64_t* out) {
  const Attr* a = op.attr(name);
  if (!a) {
    *out = 0;
    return optional ? "" : std::string("needs an integer attribute `") + name + "`";
  }
  if (!std::holds_alternative<int64_t>(*a)) return std::string("attribute `") + name + "` must be an integer";
  *out = std::get<int64_t>(*a);
  return "";
}

std::string check_axis(const Op& op, const Type& t, int64_t* axis) {
  if (std::string p = read_int(op, "axis", false, axis); !p.empty()) return p;
  if (*axis < 0 || *axis >= t.rank())
    return "axis " + std::to_string(*axis) + " is out of range for rank " + std::to_string(t.rank());
  return "";
}

std::string check_flag(const Op& op, const char* name) {
  int64_t v = 0;
  if (std::string p = read_int(op, name, true, &v); !p.empty()) return p;
  if (v != 0 && v != 1) return std::string("attribute `") + name + "` must be 0 or 1, got " + std::to_string(v);
  return "";
}

std::string expect(const Function& fn, const Op& op, size_t result, const Type& want) {
  if (fn.type(op.results[result]) == want) return "";
  return "result " + std::to_string(result) + " must be " + to_string(want) + ", got " +
         to_string(fn.type(op.results[result]));
}

std::string scan_problem(const Function& fn, const Op& op) {
  size_t n = op.operands.size();
  if (op.results.size() != n)
    return "has " + std::to_string(n) + " operands but " + std::to_string(op.results.size()) + " results";
  const Type& first = fn.type(op.operands[0]);
  if (!first.is_tile()) return "operands must be tiles, got " + to_string(first);
  int64_t axis = 0;
  if (std::string p = check_axis(op, first, &axis); !p.empty()) return p;
  if (std::string p = check_flag(op, "reverse"); !p.empty()) return p;
  std::vector<Type> elements;
  for (size_t i = 0; i < n; ++i) {
    const Type& t = fn.type(op.operands[i]);
    if (t.shape != first.shape || t.pointer)
      return "operand " + std::to_string(i) + " (" + to_string(t) +
             ") must be a non-pointer tile of the shape of operand 0 (" + to_string(first) + ")";
    if (std::string p = expect(fn, op, i, t); !p.empty()) return p;
    elements.push_back(t.element());
  }
  const Block& region = fn.block(op.regions[0]);
  if (region.args.size() != 2 * n)
    return "region has " + std::to_string(region.args.size()) + " arguments, expected " + std::to_string(2 * n) +
           " (accumulated values, then new values)";
  for (size_t i = 0; i < 2 * n; ++i)
    if (!(fn.type(region.args[i]) == elements[i % n]))
      return "region argument " + std::to_string(i) + " has type " + to_string(fn.type(region.args[i])) +
             ", expected " + to_string(elements[i % n]) + " (accumulated values, then new values)";
  const Op& yield = fn.op(region.ops.back());
  if (yield.operands.size() != n)
    return "the combiner yields " + std::to_string(yield.operands.size()) + " values, expected " + std::to_string(n);
  for (size_t i = 0; i < n; ++i)
    if (!(fn.type(yield.operands[i]) == elements[i]))
      return "the combiner yields " + to_string(fn.type(yield.operands[i])) + " as value " + std::to_string(i) +
             ", expected " + to_string(elements[i]);
  return "";
}

std::string sort_problem(const Function& fn, const Op& op) {
  const Type& x = fn.type(op.operands[0]);
  if (!x.is_tile() || x.pointer) return "operand must be a non-pointer tile, got " + to_string(x);
  int64_t axis = 0;
  if (std::string p = check_axis(op, x, &axis); !p.empty()) return p;
  if (std::string p = check_flag(op, "descending"); !p.empty()) return p;
  return expect(fn, op, 0, x);
}

std::string gather_problem(const Function& fn, const Op& op) {
  const Type& src = fn.type(op.operands[0]);
  const Type& index = fn.type(op.operands[1]);
  if (!src.is_tile() || src.pointer) return "src must be a non-pointer tile, got " + to_string(src);
  if (!index.is_tile() || index.pointer || !is_integer(index.scalar))
    return "index must be a tile of integers, got " + to_string(index);
  if (index.rank() != src.rank())
    return "index (" + to_string(index) + ") must have the rank of src (" + to_string(src) + ")";
  int64_t axis = 0;
  if (std::string p = check_axis(op, src, &axis); !p.empty()) return p;
  for (int d = 0; d < src.rank(); ++d)
    if (d != axis && index.shape[static_cast<size_t>(d)] != src.shape[static_cast<size_t>(d)])
      return "index (" + to_string(index) + ") must match src (" + to_string(src) + ") in every dimension but axis " +
             std::to_string(axis);
  return expect(fn, op, 0, src.with_shape(index.shape));
}

std::string histogram_problem(const Function& fn, const Op& op) {
  const Type& input = fn.type(op.operands[0]);
  if (!input.is_tile() || input.pointer || !is_integer(input.scalar))
    return "input must be a tile of integers, got " + to_string(input);
  if (op.operands.size() > 1 && !(fn.type(op.operands[1]) == input.with_scalar(Scalar::I1)))
    return "mask must be " + to_string(input.with_scalar(Scalar::I1)) + ", got " + to_string(fn.type(op.operands[1]));
  const Type& result = fn.type(op.results[0]);
  if (result.rank() != 1 || result.pointer || result.scalar != Scalar::I32)
    return "result must be a 1-d tile of i32 (one count per bin), got " + to_string(result);
  return "";
}

}  // namespace

std::string scan_family_problem(const Function& fn, const Op& op) {
  switch (op.kind) {
    case OpKind::Scan: return scan_problem(fn, op);
    case OpKind::Sort: return sort_problem(fn, op);
    case OpKind::Gather: return gather_problem(fn, op);
    case OpKind::Histogram: return histogram_problem(fn, op);
    default: return std::string("is not a scan, sort, gather or histogram");
  }
}

bool scan_reverse(const Op& scan) {
  const Attr* a = scan.attr("reverse");
  return a && std::holds_alternative<int64_t>(*a) && std::get<int64_t>(*a) != 0;
}

bool sort_descending(const Op& sort) {
  const Attr* a = sort.attr("descending");
  return a && std::holds_alternative<int64_t>(*a) && std::get<int64_t>(*a) != 0;
}

}  // namespace tegula::ir
