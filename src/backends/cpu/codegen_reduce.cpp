// reduce: N tiles of one shape combined along `axis` by the op's combiner
// region, which is inlined (as scalar code) into the element loops.
//
// The tile is viewed as [outer, A, inner] around the reduced axis (A is a
// power of two). Every loop below applies the combiner to independent
// elements, so it vectorizes without reassociating anything the combiner
// does, and the order is the same for every program and run (reproducible).
//
//  * Contiguous axis (inner == 1, e.g. a row sum): W lanes (W elements of
//    256 bytes, at most A) walk the row, lane x taking elements x, x + W,
//    x + 2W, ... in order; then the W lanes are combined as a tree (x with
//    x + W/2, ...). One pass over the input, no temporary beyond the lanes.
//  * Other axes: a tree over rows. The first level combines rows k and
//    k + A/2 of the input into a temporary of A/2 rows, each further level
//    halves it in place; each level is a flat loop along the contiguous
//    inner elements.
#include <algorithm>
#include <string>
#include <vector>

#include "backends/c_family/combine.h"
#include "backends/c_family/tile_index.h"
#include "backends/cpu/codegen_context.h"
#include "support/diagnostic.h"

namespace tegula::backends::cpu {

using c_family::emit_combine;
using c_family::indexed;

namespace {

// Reduce wraps its applications in blocks of its own where it needs them.
void emit_combine_inline(CodegenContext& ctx, const ir::Op& op, const std::vector<std::string>& lhs,
                         const std::vector<std::string>& rhs, const std::vector<std::string>& dest) {
  emit_combine(ctx, op, lhs, rhs, dest, /*own_block=*/false);
}

// Element `index` of each input: read from its array, or computed there
// when the input is computed where reduced (codegen_fusion.cpp).
std::vector<std::string> input_elements(const CodegenContext& ctx, const ir::Op& op, const std::string& index) {
  std::vector<std::string> elements;
  for (ir::ValueId v : op.operands) elements.push_back(tile_element(ctx, v, index));
  return elements;
}

// Bytes of lanes a contiguous-axis reduce keeps: a few vector registers.
constexpr int64_t kLaneBytes = 256;

// The lanes of a contiguous-axis reduce: kLaneBytes of its widest input.
int64_t lane_count(const CodegenContext& ctx, const ir::Op& op, const c_family::AxisView& s) {
  int64_t widest = 1;
  for (ir::ValueId v : op.operands) widest = std::max(widest, c_element_size(ctx.fn.type(v)));
  return std::min(s.length, std::max<int64_t>(1, kLaneBytes / widest));
}

// The end of the contiguous-axis case: the lanes combined as a tree, lane 0
// the result; closes the loop over outer slices.
template <class ResultElement>
void emit_lane_tree(CodegenContext& ctx, const ir::Op& op, const std::vector<std::string>& lane, const std::string& x,
                    int64_t lanes, ResultElement result_element) {
  if (lanes > 1) {
    std::string width = ctx.fresh("width");
    ctx.out.open("for (int " + width + " = " + std::to_string(lanes / 2) + "; " + width + " >= 1; " + width + " /= 2)");
    ctx.out.line("TG_IVDEP");
    ctx.out.open("for (int " + x + " = 0; " + x + " < " + width + "; ++" + x + ")");
    emit_combine_inline(ctx, op, indexed(lane, x), indexed(lane, x + " + " + width), indexed(lane, x));
    ctx.out.close();
    ctx.out.close();
  }
  for (size_t j = 0; j < lane.size(); ++j) ctx.out.line(result_element(j, "0") + " = " + lane[j] + "[0];");
  ctx.out.close();
}

// The contiguous-axis case (see the top of the file), inside the loop over
// outer slices `o`.
template <class ResultElement>
void emit_lanes(CodegenContext& ctx, const ir::Op& op, const c_family::AxisView& s, const std::string& o,
                ResultElement result_element) {
  int64_t lanes = lane_count(ctx, op, s);
  // A reduction of the program's body in whole blocks fetches its share of
  // the next tiles (codegen_fusion.cpp), block by block: its lanes take a
  // block per step.
  std::vector<NextTileFetch> fetches;
  if (reduce_fetches_next_tiles(ctx, op)) fetches = plan_next_tile_fetches(ctx, s.length / lanes);
  for (const NextTileFetch& f : fetches) ctx.out.line(next_tile_prefetch(f, "0"));
  std::vector<std::string> lane;
  for (ir::ValueId v : op.operands) {
    const ir::Type& t = ctx.fn.type(v);
    lane.push_back(ctx.fresh("lane"));
    ctx.declare_array(c_storage(t), c_element_size(t), lanes, lane.back());
  }
  std::string x = ctx.fresh("x"), k = ctx.fresh("k");
  std::string slice = o + " * " + std::to_string(s.length);
  ctx.open_element_loop(x, lanes);
  std::vector<std::string> first = input_elements(ctx, op, slice + " + " + x);
  for (size_t j = 0; j < lane.size(); ++j) ctx.out.line(lane[j] + "[" + x + "] = " + first[j] + ";");
  ctx.out.close();
  if (lanes < s.length) {
    ctx.out.open("for (int " + k + " = " + std::to_string(lanes) + "; " + k + " < " + std::to_string(s.length) + "; " + k +
                 " += " + std::to_string(lanes) + ")");
    for (const NextTileFetch& f : fetches) ctx.out.line(next_tile_prefetch(f, k));
    ctx.open_element_loop(x, lanes);
    emit_combine_inline(ctx, op, indexed(lane, x), input_elements(ctx, op, slice + " + " + k + " + " + x), indexed(lane, x));
    ctx.out.close();
    ctx.out.close();
  }
  emit_lane_tree(ctx, op, lane, x, lanes, result_element);
}

}  // namespace

bool reduces_in_blocks(const CodegenContext& ctx, const ir::Op& op) {
  if (op.kind != ir::OpKind::Reduce || !ctx.fn.type(op.operands[0]).is_tile()) return false;
  c_family::AxisView s = c_family::view_around(ctx.fn.type(op.operands[0]), op.int_attr("axis"));
  return s.outer == 1 && s.inner == 1 && lane_count(ctx, op, s) == kNextTileBlock && s.length % kNextTileBlock == 0 &&
         s.length > kNextTileBlock;
}

bool reduce_fetches_next_tiles(const CodegenContext& ctx, const ir::Op& op) {
  return op.parent == ctx.fn.body() && reduces_in_blocks(ctx, op) && !reduce_accumulated_where_computed(ctx, op);
}

void emit_reduce(CodegenContext& ctx, const ir::Op& op) {
  size_t n = op.operands.size();
  TEGULA_ASSERT(n >= 1 && op.results.size() == n && op.regions.size() == 1, "malformed reduce");
  TEGULA_ASSERT(ctx.fn.block(op.regions[0]).args.size() == 2 * n, "reduce combiner must take 2N arguments");
  const ir::Type& input = ctx.fn.type(op.operands[0]);
  c_family::AxisView s = c_family::view_around(input, op.int_attr("axis"));
  TEGULA_ASSERT((s.length & (s.length - 1)) == 0, "reduced dimension must be a power of two");

  auto accumulated = ctx.accumulated_lanes.find(op.results[0].index);
  for (ir::ValueId v : op.operands)
    if (ctx.fn.type(v).is_tile() && !ctx.has_storage(v) && accumulated == ctx.accumulated_lanes.end())
      ctx.out.line(ctx.op_comment(ctx.fn.op(ctx.fn.value(v).def)) + "  (computed where reduced)");
  for (ir::ValueId r : op.results) ctx.declare(r);
  std::string o = ctx.fresh("o"), x = ctx.fresh("x");
  auto result_element = [&](size_t j, const std::string& inner_index) {
    return ctx.fn.type(op.results[j]).is_tile() ? ctx.name(op.results[j]) + "[" + o + " * " +
                                                      std::to_string(s.inner) + " + " + inner_index + "]"
                                                : ctx.name(op.results[j]);
  };
  std::string slice = o + " * " + std::to_string(s.length * s.inner);
  ctx.out.open("for (int " + o + " = 0; " + o + " < " + std::to_string(s.outer) + "; ++" + o + ")");

  if (s.length == 1) {
    ctx.open_element_loop(x, s.inner);
    std::vector<std::string> elements = input_elements(ctx, op, slice + " + " + x);
    for (size_t j = 0; j < n; ++j) ctx.out.line(result_element(j, x) + " = " + elements[j] + ";");
    ctx.out.close();
    ctx.out.close();
    return;
  }

  if (accumulated != ctx.accumulated_lanes.end()) {
    emit_lane_tree(ctx, op, accumulated->second, x, lane_count(ctx, op, s), result_element);
    return;
  }
  if (s.inner == 1) {
    emit_lanes(ctx, op, s, o, result_element);
    return;
  }

  int64_t half_rows = s.length / 2 * s.inner;
  std::vector<std::string> partial;
  for (size_t j = 0; j < n; ++j) {
    partial.push_back(ctx.fresh("partial"));
    const ir::Type& t = ctx.fn.type(op.operands[j]);
    ctx.declare_array(c_storage(t), c_element_size(t), half_rows, partial.back());
  }
  // Level 1: rows k and k + A/2 of this slice of the input.
  ctx.open_element_loop(x, half_rows);
  emit_combine_inline(ctx, op, input_elements(ctx, op, slice + " + " + x),
               input_elements(ctx, op, slice + " + " + std::to_string(half_rows) + " + " + x), indexed(partial, x));
  ctx.out.close();
  // Further levels halve the partial results in place.
  std::string width = ctx.fresh("width");
  ctx.out.open("for (int " + width + " = " + std::to_string(half_rows / 2) + "; " + width + " >= " +
               std::to_string(s.inner) + "; " + width + " /= 2)");
  ctx.out.line("TG_IVDEP");
  ctx.out.open("for (int " + x + " = 0; " + x + " < " + width + "; ++" + x + ")");
  emit_combine_inline(ctx, op, indexed(partial, x), indexed(partial, x + " + " + width), indexed(partial, x));
  ctx.out.close();
  ctx.out.close();
  ctx.open_element_loop(x, s.inner);
  for (size_t j = 0; j < n; ++j) ctx.out.line(result_element(j, x) + " = " + partial[j] + "[" + x + "];");
  ctx.out.close();
  ctx.out.close();
}

}  // namespace tegula::backends::cpu
