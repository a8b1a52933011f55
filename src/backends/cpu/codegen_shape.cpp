// Shape ops: splat, broadcast, expand_dims, reshape, trans, join, split.
//
// Tiles are row-major arrays, so expand_dims and reshape change nothing in
// memory: their result simply names the operand's storage. The others copy
// with index math over nested loops whose bounds are compile-time constants.
#include <string>
#include <vector>

#include "backends/cpu/codegen_context.h"
#include "support/diagnostic.h"

namespace tegula::backends::cpu {

using ir::OpKind;

namespace {

std::vector<int64_t> row_major_strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;) strides[d - 1] = strides[d] * shape[d];
  return strides;
}

// "i0 * 64 + i1": the linear index of `indices` under `strides` (0 strides drop out).
std::string linear_index(const std::vector<std::string>& indices, const std::vector<int64_t>& strides) {
  std::string out;
  for (size_t d = 0; d < indices.size(); ++d) {
    if (strides[d] == 0) continue;
    if (!out.empty()) out += " + ";
    out += strides[d] == 1 ? indices[d] : indices[d] + " * " + std::to_string(strides[d]);
  }
  return out.empty() ? "0" : out;
}

// Nested loops over every index of `shape`, innermost last; `statement` gives
// the body for the loop variables' names.
template <class F>
void emit_index_loops(CodegenContext& ctx, const std::vector<int64_t>& shape, F statement) {
  std::vector<std::string> indices;
  for (size_t d = 0; d < shape.size(); ++d) {
    std::string index = ctx.fresh("i");
    indices.push_back(index);
    if (d + 1 == shape.size()) ctx.out.line("TG_IVDEP");
    ctx.out.open("for (int " + index + " = 0; " + index + " < " + std::to_string(shape[d]) + "; ++" + index + ")");
  }
  ctx.out.line(statement(indices));
  for (size_t d = 0; d < shape.size(); ++d) ctx.out.close();
}

// dst[idx] = src[idx * src_strides] over the result's shape.
void emit_strided_copy(CodegenContext& ctx, ir::ValueId dst, ir::ValueId src, const std::vector<int64_t>& src_strides) {
  const ir::Type& t = ctx.fn.type(dst);
  std::vector<int64_t> dst_strides = row_major_strides(t.shape);
  ctx.declare(dst);
  emit_index_loops(ctx, t.shape, [&](const std::vector<std::string>& idx) {
    return ctx.name(dst) + "[" + linear_index(idx, dst_strides) + "] = " + ctx.name(src) + "[" +
           linear_index(idx, src_strides) + "];";
  });
}

void emit_splat(CodegenContext& ctx, const ir::Op& op) {
  ir::ValueId result = op.results[0];
  ctx.declare(result);
  ctx.open_element_loop("i", ctx.fn.type(result).numel());
  ctx.out.line(ctx.element(result, "i") + " = " + ctx.name(op.operands[0]) + ";");
  ctx.out.close();
}

void emit_trans(CodegenContext& ctx, const ir::Op& op) {
  const ir::Type& from = ctx.fn.type(op.operands[0]);
  const std::vector<int64_t>& perm = op.ints_attr("perm");
  TEGULA_ASSERT(static_cast<int>(perm.size()) == from.rank(), "trans permutation of the wrong length");
  std::vector<int64_t> from_strides = row_major_strides(from.shape);
  // Result dim d walks source dim perm[d].
  std::vector<int64_t> strides;
  for (int64_t p : perm) strides.push_back(from_strides.at(static_cast<size_t>(p)));
  emit_strided_copy(ctx, op.results[0], op.operands[0], strides);
}

void emit_join(CodegenContext& ctx, const ir::Op& op) {
  ir::ValueId result = op.results[0];
  int64_t half = ctx.fn.type(result).numel() / 2;
  ctx.declare(result);
  ctx.open_element_loop("i", half);
  ctx.out.line(ctx.name(result) + "[2 * i] = " + ctx.element(op.operands[0], "i") + ";");
  ctx.out.line(ctx.name(result) + "[2 * i + 1] = " + ctx.element(op.operands[1], "i") + ";");
  ctx.out.close();
}

void emit_split(CodegenContext& ctx, const ir::Op& op) {
  TEGULA_ASSERT(op.results.size() == 2, "split must have two results");
  const ir::Type& t = ctx.fn.type(op.results[0]);
  std::string src = ctx.name(op.operands[0]);
  if (!t.is_tile()) {
    for (int half = 0; half < 2; ++half)
      ctx.out.line(c_const(t) + " " + ctx.name(op.results[half]) + " = " + src + "[" +
                   std::to_string(half) + "];");
    return;
  }
  ctx.declare(op.results[0]);
  ctx.declare(op.results[1]);
  ctx.open_element_loop("i", t.numel());
  ctx.out.line(ctx.element(op.results[0], "i") + " = " + src + "[2 * i];");
  ctx.out.line(ctx.element(op.results[1], "i") + " = " + src + "[2 * i + 1];");
  ctx.out.close();
}

}  // namespace

// Result element i sits at multi-index (i / stride_d) % shape_d; the operand
// element is the same multi-index with broadcast dims pinned to 0.
std::string broadcast_element(const CodegenContext& ctx, const ir::Op& op, const std::string& index) {
  const ir::Type& from = ctx.fn.type(op.operands[0]);
  const ir::Type& to = ctx.fn.type(op.results[0]);
  TEGULA_ASSERT(from.is_tile() && from.rank() == to.rank(), "broadcast changes the rank");
  std::vector<int64_t> from_strides = row_major_strides(from.shape), to_strides = row_major_strides(to.shape);
  std::string mapped;
  for (size_t d = 0; d < to.shape.size(); ++d) {
    if (from.shape[d] != to.shape[d]) {
      TEGULA_ASSERT(from.shape[d] == 1, "broadcast of a dimension that is not 1");
      continue;
    }
    if (from.shape[d] == 1) continue;
    std::string coord = to_strides[d] == 1 ? index : index + " / " + std::to_string(to_strides[d]);
    if (d > 0) coord = "(" + coord + ") % " + std::to_string(to.shape[d]);
    if (from_strides[d] != 1) coord = "(" + coord + ") * " + std::to_string(from_strides[d]);
    mapped += (mapped.empty() ? "" : " + ") + coord;
  }
  return ctx.name(op.operands[0]) + "[" + (mapped.empty() ? "0" : mapped) + "]";
}

// In a loop over rows of `row_length` elements (flat index r * L + c, L
// dividing the result's last dim of size > 1): every coordinate but the
// last depends on r alone, the last is (r % (T / L)) * L + c, so the operand
// is read at "r-part + c" -- an access g++ vectorizes (contiguous along c, or
// the same element for every c).
std::string broadcast_row_element(const CodegenContext& ctx, const ir::Op& op, const std::string& row,
                                  int64_t row_length, const std::string& column) {
  const ir::Type& from = ctx.fn.type(op.operands[0]);
  const ir::Type& to = ctx.fn.type(op.results[0]);
  TEGULA_ASSERT(from.is_tile() && from.rank() == to.rank(), "broadcast changes the rank");
  std::vector<int64_t> from_strides = row_major_strides(from.shape), to_strides = row_major_strides(to.shape);
  int first = -1, last = -1;
  for (size_t d = 0; d < to.shape.size(); ++d)
    if (to.shape[d] > 1) last = static_cast<int>(d), first = first < 0 ? static_cast<int>(d) : first;
  std::vector<std::string> terms;
  for (int d = first; d >= 0 && d <= last; ++d) {
    size_t du = static_cast<size_t>(d);
    if (to.shape[du] == 1 || from.shape[du] != to.shape[du]) continue;
    std::string coord;
    if (d == last) {
      TEGULA_ASSERT(to.shape[du] % row_length == 0, "row length must divide the last dim");
      int64_t rows_per_line = to.shape[du] / row_length;
      std::string r_part = d == first ? row : rows_per_line == 1 ? "" : "(" + row + " % " + std::to_string(rows_per_line) + ")";
      coord = r_part.empty() ? column : r_part + " * " + std::to_string(row_length) + " + " + column;
    } else {
      int64_t rows_per_step = to_strides[du] / row_length;
      coord = rows_per_step == 1 ? row : row + " / " + std::to_string(rows_per_step);
      if (d != first) coord = "(" + coord + ") % " + std::to_string(to.shape[du]);
      if (from_strides[du] != 1) coord = "(" + coord + ") * " + std::to_string(from_strides[du]);
    }
    terms.push_back(coord);
  }
  std::string mapped;
  for (const std::string& t : terms) mapped += (mapped.empty() ? "" : " + ") + t;
  return ctx.name(op.operands[0]) + "[" + (mapped.empty() ? "0" : mapped) + "]";
}

int64_t broadcast_source_index(const ir::Type& from, const ir::Type& to, int64_t index) {
  std::vector<int64_t> from_strides = row_major_strides(from.shape), to_strides = row_major_strides(to.shape);
  int64_t source = 0;
  for (size_t d = 0; d < to.shape.size(); ++d) {
    int64_t coord = index / to_strides[d] % to.shape[d];
    if (from.shape[d] == to.shape[d]) source += coord * from_strides[d];
  }
  return source;
}

void emit_shape(CodegenContext& ctx, const ir::Op& op) {
  switch (op.kind) {
    case OpKind::ExpandDims:
    case OpKind::Reshape:
      // Tile -> tile reshapes are per-element (codegen_fusion.cpp); what is
      // left converts between a scalar and a one-element tile.
      TEGULA_ASSERT(ctx.fn.type(op.operands[0]).numel() == 1, "reshape of a tile emitted outside a fused loop");
      if (!ctx.fn.type(op.operands[0]).is_tile()) return emit_splat(ctx, op);
      ctx.out.line(c_const(ctx.fn.type(op.results[0])) + " " + ctx.name(op.results[0]) + " = " +
                   ctx.name(op.operands[0]) + "[0];");
      return;
    case OpKind::Trans: return emit_trans(ctx, op);
    case OpKind::Join: return emit_join(ctx, op);
    case OpKind::Split: return emit_split(ctx, op);
    default: TEGULA_ASSERT(false, "not a shape op");
  }
}

}  // namespace tegula::backends::cpu
