// What the CPU dialect adds to structured control flow
// (backends/c_family/control_flow.h): loop results computed in place.
//
// A tile computed fresh each iteration and yielded in place of a carried
// argument that is dead by then (`acc = acc + x`, `acc = tl.dot(a, b, acc)`,
// `ptrs += step`) is written straight into the carried storage, so the yield
// copies nothing; see plan_in_place_yields. It is planned at the top of each
// `for` body (CodegenContext::begin_iteration).
#include <string>
#include <vector>

#include "backends/cpu/codegen_context.h"
#include "support/diagnostic.h"

namespace tegula::backends::cpu {

using ir::OpKind;

namespace {

// The op of `block` that is `op` or holds it in one of its regions; invalid
// when `op` is not inside `block`.
ir::OpId ancestor_in(const ir::Function& fn, ir::OpId op, ir::BlockId block) {
  while (op.valid() && fn.op(op).parent != block) {
    ir::BlockId parent = fn.op(op).parent;
    op = parent.valid() ? fn.block(parent).parent : ir::OpId{};
  }
  return op;
}

bool is_view(const ir::Function& fn, const ir::Op& op) {
  return (op.kind == OpKind::Reshape || op.kind == OpKind::ExpandDims) && fn.type(op.operands[0]).is_tile() &&
         fn.type(op.results[0]).is_tile();
}

// Whether `def`, which computes its result in place of the storage of
// `carried`, reads that storage (through `reader`, a value sharing it) only
// before writing the same element: per-element ops read element i and then
// write element i; a dot may update its accumulator in place, but must not
// read a or b from the storage it writes.
bool reads_before_writing(const ir::Op& def, ir::ValueId reader) {
  if (def.kind == OpKind::Dot) {
    for (size_t j = 0; j < def.operands.size(); ++j)
      if (def.operands[j] == reader && j != 2) return false;
    return true;
  }
  return ir::is_elementwise(def.kind) || def.kind == OpKind::Load;
}

// Whether yielded value `yielded` can be computed directly in the storage of
// the carried argument `carried` of the loop body `body`: it is a tile of the
// same type defined by a top-level op of the body that writes a fresh array
// element by element (a fused per-element op) or a dot, and nothing reads the
// carried storage (the argument or a view of it) after that op.
bool can_compute_in_place(CodegenContext& ctx, ir::BlockId body, ir::ValueId carried, ir::ValueId yielded) {
  const ir::Function& fn = ctx.fn;
  if (!fn.type(yielded).is_tile() || fn.type(yielded) != fn.type(carried)) return false;
  ir::OpId def_id = fn.value(yielded).def;
  if (!def_id.valid() || fn.op(def_id).parent != body) return false;
  const ir::Op& def = fn.op(def_id);
  bool writes_fresh_array = def.kind == OpKind::Dot || (is_per_element(ctx, def) && def.kind != OpKind::Store &&
                                                        !is_view(fn, def));
  if (!writes_fresh_array || def.results.size() != 1) return false;
  size_t def_position = fn.position_of(def_id);

  std::vector<ir::ValueId> sharing = {carried};  // the argument and its views
  for (size_t s = 0; s < sharing.size(); ++s) {
    for (ir::OpId user : ctx.users(sharing[s])) {
      ir::OpId top = ancestor_in(fn, user, body);
      if (!top.valid()) return false;
      size_t position = fn.position_of(top);
      if (position > def_position) return false;
      if (position == def_position && (user != def_id || !reads_before_writing(def, sharing[s]))) return false;
      if (is_view(fn, fn.op(user))) sharing.push_back(fn.op(user).results[0]);
    }
  }
  return true;
}

void plan_in_place_yields(CodegenContext& ctx, ir::BlockId body, const std::vector<ir::ValueId>& carried,
                          const std::vector<ir::ValueId>& yielded) {
  for (size_t i = 0; i < carried.size(); ++i) {
    size_t times_yielded = 0;
    for (ir::ValueId y : yielded) times_yielded += y == yielded[i];
    if (times_yielded == 1 && can_compute_in_place(ctx, body, carried[i], yielded[i]))
      ctx.plan_storage(yielded[i], carried[i]);
  }
}

}  // namespace

void CodegenContext::begin_iteration(ir::OpId loop, const std::string& trips, const std::string& k) {
  ir::BlockId body = fn.op(loop).regions[0];
  std::vector<ir::ValueId> carried(fn.block(body).args.begin() + 1, fn.block(body).args.end());
  plan_in_place_yields(*this, body, carried, terminator(body).operands);
}

}  // namespace tegula::backends::cpu
