// scan: N tiles scanned along `axis` by the op's combiner region, inlined as
// scalar code (see ir/scan_ops.h for the semantics).
//
// The tile is viewed as [outer, A, inner] around the axis. Each outer slice
// is scanned in order: the first (or, reversed, the last) row of A is copied,
// then row k combines the result of row k - 1 (k + 1) with the input of row
// k. A row is a flat loop over the `inner` contiguous elements, independent
// of each other, so a scan along a leading axis vectorizes; along the last
// axis (inner == 1) each step depends on the previous one. The order of the
// combinations is exactly the sequential one, so a combiner that is not
// associative (float addition) gives the same bits in every run.
#include <string>
#include <vector>

#include "backends/c_family/combine.h"
#include "backends/c_family/tile_index.h"
#include "backends/cpu/codegen_context.h"
#include "ir/scan_ops.h"
#include "support/diagnostic.h"

namespace tegula::backends::cpu {

using c_family::emit_combine;
using c_family::indexed;

void emit_scan(CodegenContext& ctx, const ir::Op& op) {
  size_t n = op.operands.size();
  TEGULA_ASSERT(n >= 1 && op.results.size() == n && op.regions.size() == 1, "malformed scan");
  const ir::Type& t = ctx.fn.type(op.operands[0]);
  bool reverse = ir::scan_reverse(op);
  c_family::AxisView view = c_family::view_around(t, op.int_attr("axis"));
  int64_t outer = view.outer, length = view.length, inner = view.inner;

  std::vector<std::string> inputs, results;
  for (size_t j = 0; j < n; ++j) {
    ctx.declare(op.results[j]);
    inputs.push_back(ctx.name(op.operands[j]));
    results.push_back(ctx.name(op.results[j]));
  }
  std::string o = ctx.fresh("o"), k = ctx.fresh("k"), x = ctx.fresh("x");
  // Flat index of element (o, row, x): `row` is a C++ expression.
  auto index = [&](const std::string& row) {
    std::string i = o + " * " + std::to_string(length * inner) + " + (" + row + ")";
    if (inner > 1) i += " * " + std::to_string(inner) + " + " + x;
    return i;
  };
  // A loop over the inner elements of a row (nothing when inner == 1).
  auto open_row = [&] {
    if (inner > 1) ctx.open_element_loop(x, inner);
    else ctx.out.open("");
  };

  ctx.out.open("for (int " + o + " = 0; " + o + " < " + std::to_string(outer) + "; ++" + o + ")");
  std::string first = reverse ? std::to_string(length - 1) : "0";
  open_row();
  for (size_t j = 0; j < n; ++j) ctx.out.line(results[j] + "[" + index(first) + "] = " + inputs[j] + "[" + index(first) + "];");
  ctx.out.close();
  if (length > 1) {
    std::string previous = reverse ? k + " + 1" : k + " - 1";
    if (reverse)
      ctx.out.open("for (int " + k + " = " + std::to_string(length - 2) + "; " + k + " >= 0; --" + k + ")");
    else
      ctx.out.open("for (int " + k + " = 1; " + k + " < " + std::to_string(length) + "; ++" + k + ")");
    open_row();
    emit_combine(ctx, op, indexed(results, index(previous)), indexed(inputs, index(k)), indexed(results, index(k)));
    ctx.out.close();
    ctx.out.close();
  }
  ctx.out.close();
}

}  // namespace tegula::backends::cpu
