// Pointer tiles a `for` advances by one scalar step per iteration
// (`a_ptrs += BLOCK_K * stride_ak` in a matmul's K loop), kept as their
// initial tile plus an offset.
//
// Carried tiles live in arrays (codegen_in_place_yields.cpp), so advancing
// one rewrites every pointer each iteration: for a 256x64 tile, 128 KB read
// and written per step, which the loads then read again. When the tile's
// only readers in the body are loads and stores that run before the
// advance, and the advanced tile is only yielded, the loop instead keeps the
// array at its initial value and one `uint64_t` offset (in elements, summed
// with wrap-around exactly as the additions would): element i of the tile is
// `tg_addptr(p[i], offset)` (CodegenContext::element), and the advance is
// `offset += step`. A loop result that is used after the loop gets its
// array advanced by the offset once, at the end. Debug mode keeps the plain
// arrays (its bounds checks name them).
//
// Such a tile is also where a contiguity check pays: its rows hold the same
// addresses relative to each other in every iteration, so one look before
// the loop at whether each row (last dim) holds consecutive addresses tells
// every load of the loop whether it may read whole rows instead of gathering
// (codegen_fusion.cpp). Axis info cannot tell for `(start + arange) % n`
// (the columns of a matmul's B tile: consecutive unless the tile wraps past
// n) or for strides known only at run time, and a hint's promise of it is
// checked the same way.
#include <string>

#include "backends/cpu/codegen_context.h"
#include "support/diagnostic.h"

namespace tegula::backends::cpu {

using ir::OpKind;

namespace {

// The scalar every element of uniform tile `v` holds, as an expression valid
// wherever `v` is used; empty when it is not a splat or constant.
std::string uniform_scalar(const CodegenContext& ctx, ir::ValueId v) {
  ir::OpId def = ctx.fn.value(v).def;
  if (!def.valid()) return "";
  const ir::Op& o = ctx.fn.op(def);
  switch (o.kind) {
    case OpKind::Splat: return ctx.name(o.operands[0]);
    case OpKind::Constant: return value_source_element(ctx, o, {}, "0");
    case OpKind::Broadcast:
    case OpKind::ExpandDims:
    case OpKind::Reshape: return uniform_scalar(ctx, o.operands[0]);
    default: return "";
  }
}

// The op of `block` that is `op` or holds it in one of its regions; invalid
// when `op` is not inside `block`.
ir::OpId top_level_in(const ir::Function& fn, ir::OpId op, ir::BlockId block) {
  while (op.valid() && fn.op(op).parent != block) {
    ir::BlockId parent = fn.op(op).parent;
    op = parent.valid() ? fn.block(parent).parent : ir::OpId{};
  }
  return op;
}

// Whether carried pointer tile `carried` of loop body `body`, yielded as
// `next`, can be an offset: `next` = addptr(carried, uniform) at the top of
// the body, used by nothing but the yield; every other use of `carried` is
// the pointer of a load or store that comes before it.
bool advances_uniformly(const CodegenContext& ctx, ir::BlockId body, ir::ValueId carried, ir::ValueId next) {
  const ir::Function& fn = ctx.fn;
  if (!fn.type(carried).is_tile() || !fn.type(carried).is_pointer()) return false;
  ir::OpId step_id = fn.value(next).def;
  if (!step_id.valid() || fn.op(step_id).parent != body) return false;
  const ir::Op& step = fn.op(step_id);
  if (step.kind != OpKind::AddPtr || step.operands[0] != carried || !is_uniform_tile(fn, step.operands[1]) ||
      uniform_scalar(ctx, step.operands[1]).empty() || fn.type(next) != fn.type(carried))
    return false;
  const std::vector<ir::OpId>& next_users = ctx.users(next);
  if (next_users.size() != 1 || ir::is_terminator(fn.op(next_users[0]).kind) == false) return false;
  size_t step_position = fn.position_of(step_id);
  for (ir::OpId user : ctx.users(carried)) {
    if (user == step_id) continue;
    const ir::Op& u = fn.op(user);
    if (u.kind != OpKind::Load && u.kind != OpKind::Store) return false;
    for (size_t j = 1; j < u.operands.size(); ++j)
      if (u.operands[j] == carried) return false;
    ir::OpId top = top_level_in(fn, user, body);
    if (!top.valid() || fn.position_of(top) >= step_position) return false;
  }
  return true;
}

// Rows shorter than this are not worth a check (nor a row loop, in fusion).
constexpr int64_t kMinCheckedRow = 16;

// The length of the rows of carried pointer tile `carried` worth checking
// for contiguity before its loop: its last dim of size > 1, when a load
// reads it and axis info does not already know the rows are contiguous;
// 0 otherwise.
int64_t row_to_check(const CodegenContext& ctx, ir::ValueId carried) {
  const ir::Type& t = ctx.fn.type(carried);
  size_t d = t.shape.size();
  while (d > 0 && t.shape[d - 1] == 1) --d;
  if (d == 0 || t.shape[d - 1] < kMinCheckedRow) return 0;
  int64_t row = t.shape[d - 1];
  if (ctx.proven_contiguity(carried).at(d - 1) % row == 0) return 0;
  for (ir::OpId user : ctx.users(carried))
    if (ctx.fn.op(user).kind == OpKind::Load) return row;
  return 0;
}

}  // namespace

void CodegenContext::check_rows_contiguous(ir::ValueId carried, int64_t row) {
  // Named after the tile, not fresh(): the other names of the kernel stay as they were.
  std::string tile = std::to_string(carried.index);
  std::string flag = unique("rows" + tile), r = unique("r" + tile), c = unique("c" + tile);
  std::string first = unique("first" + tile), same = unique("same" + tile);
  std::string array = name(carried), length = std::to_string(row);
  out.line("// whether each row of " + length + " pointers of v" + std::to_string(carried.index) +
           " holds consecutive addresses, which its loads then read as rows");
  out.line("bool " + flag + " = true;");
  out.open("for (int " + r + " = 0; " + r + " < " + std::to_string(fn.type(carried).numel() / row) + " && " + flag +
           "; ++" + r + ")");
  out.line(c_const(fn.type(carried).element()) + " " + first + " = " + array + "[" + r + " * " + length + "];");
  out.line("bool " + same + " = true;");
  out.line("TG_IVDEP");
  out.open("for (int " + c + " = 0; " + c + " < " + length + "; ++" + c + ")");
  out.line(same + " &= " + array + "[" + r + " * " + length + " + " + c + "] == tg_addptr(" + first + ", " + c + ");");
  out.close();
  out.line(flag + " = " + same + ";");
  out.close();
  rows_contiguous_[carried.index] = flag;
}

void CodegenContext::begin_loop(ir::OpId loop, const std::string& trips) {
  (void)trips;
  const ir::Op& op = fn.op(loop);
  if (op.kind != OpKind::For || options.debug) return;
  ir::BlockId body = op.regions[0];
  const std::vector<ir::ValueId>& args = fn.block(body).args;
  const ir::Op& yield = terminator(body);
  for (size_t i = 0; i + 1 < args.size() && i < yield.operands.size(); ++i) {
    ir::ValueId carried = args[i + 1], next = yield.operands[i];
    size_t times_yielded = 0;
    for (ir::ValueId y : yield.operands) times_yielded += y == next;
    if (times_yielded != 1 || !advances_uniformly(*this, body, carried, next)) continue;
    std::string offset = unique("offset" + std::to_string(carried.index));
    out.line("// v" + std::to_string(carried.index) + " keeps its initial pointers; the loop advances " + offset);
    out.line("uint64_t " + offset + " = 0;");
    pointer_offsets_[carried.index] = offset;
    offset_steps_[fn.value(next).def.index] = carried;
    if (int64_t row = row_to_check(*this, carried)) check_rows_contiguous(carried, row);
  }
}

bool CodegenContext::emit_offset_step(ir::OpId id) {
  auto found = offset_steps_.find(id.index);
  if (found == offset_steps_.end()) return false;
  const ir::Op& step = fn.op(id);
  ir::ValueId carried = found->second, next = step.results[0];
  plan_storage(next, carried);
  declare(next);
  const std::string& offset = pointer_offsets_.at(carried.index);
  out.line(offset + " += (uint64_t)(int64_t)" + uniform_scalar(*this, step.operands[1]) + ";");
  return true;
}

void CodegenContext::end_loop(ir::OpId loop) {
  const ir::Op& op = fn.op(loop);
  if (op.kind != OpKind::For) return;
  const std::vector<ir::ValueId>& args = fn.block(op.regions[0]).args;
  for (size_t i = 0; i + 1 < args.size(); ++i) {
    ir::ValueId carried = args[i + 1];
    auto found = pointer_offsets_.find(carried.index);
    if (found == pointer_offsets_.end()) continue;
    std::string offset = found->second;
    pointer_offsets_.erase(found);
    rows_contiguous_.erase(carried.index);
    if (users(op.results[i]).empty()) continue;
    std::string x = fresh("x");
    open_element_loop(x, fn.type(carried).numel());
    out.line(name(carried) + "[" + x + "] = " + addptr() + "(" + name(carried) + "[" + x + "], " + offset + ");");
    out.close();
  }
}

}  // namespace tegula::backends::cpu
