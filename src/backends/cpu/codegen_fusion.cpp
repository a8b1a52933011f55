// Fusion of per-element tile ops into one element loop.
//
// A run of consecutive ops of one block that each compute element i from
// element i of their operands (elementwise ops, splat, tile constants,
// arange, broadcast of a finished tile, reshape/expand_dims, load, store)
// and share an element count becomes a single loop over i. A value that only
// ops of the run use never gets an array: it is a scalar local of the loop
// body (`e7`), so a chain like load -> mul -> add -> store reads and writes
// memory once per element. Values used elsewhere are written to their array
// (`v7[i]`).
//
// Ordering: inside a fused loop, the memory accesses of element i happen
// before those of element i + 1, instead of op after op. Only a store ends a
// run, so a store is never followed by a load of the same run; a run's loads
// may still see its store to an *other* element when the addresses overlap,
// which is the same ordering freedom the GPU backend has between threads
// (documented in docs/backend-cpu.md).
#include <string>
#include <vector>

#include "backends/cpu/codegen_context.h"
#include "support/diagnostic.h"

namespace tegula::backends::cpu {

using ir::OpKind;

bool is_per_element(const CodegenContext& ctx, const ir::Op& op) {
  auto tile = [&](ir::ValueId v) { return ctx.fn.type(v).is_tile(); };
  switch (op.kind) {
    case OpKind::Store: return tile(op.operands[0]);
    case OpKind::Load:
    case OpKind::Constant:
    case OpKind::Splat:
    case OpKind::Arange: return tile(op.results[0]);
    case OpKind::Broadcast:
    case OpKind::ExpandDims:
    case OpKind::Reshape: return tile(op.operands[0]) && tile(op.results[0]);
    default: return ir::is_elementwise(op.kind) && tile(op.results[0]);
  }
}

namespace {

// The element expression of one member, from its operands' elements.
std::string member_value(const CodegenContext& ctx, const ir::Op& op, const std::vector<std::string>& operands,
                         const std::string& index) {
  switch (op.kind) {
    case OpKind::Load: return load_element(ctx, op, operands);
    case OpKind::Constant:
    case OpKind::Splat:
    case OpKind::Arange: return value_source_element(ctx, op, operands, index);
    case OpKind::Broadcast: return broadcast_element(ctx, op, index);
    case OpKind::ExpandDims:
    case OpKind::Reshape: return operands[0];
    default: return elementwise_expr(ctx, op, operands);
  }
}

class FusedRun {
 public:
  FusedRun(CodegenContext& ctx, const std::vector<ir::OpId>& ops) : ctx_(ctx), fn_(ctx.fn), ops_(ops) {
    const ir::Op& first = fn_.op(ops[0]);
    numel_ = fn_.type(first.results.empty() ? first.operands[0] : first.results[0]).numel();
    plan_arrays();
    plan_contiguous_accesses();
  }

  void emit();

 private:
  std::vector<bool> live_members() const;
  bool in_run(ir::OpId id) const {
    for (ir::OpId o : ops_)
      if (o == id) return true;
    return false;
  }
  bool defined_in_run(ir::ValueId v) const {
    ir::OpId def = fn_.value(v).def;
    return def.valid() && in_run(def);
  }
  static bool is_view(const ir::Op& o) { return o.kind == OpKind::Reshape || o.kind == OpKind::ExpandDims; }
  static std::string local(ir::ValueId v) { return "e" + std::to_string(v.index); }

  // Which results need an array: those used outside the run. A reshape
  // needing one shares its operand's array, which then needs one too.
  void plan_arrays() {
    needs_array_.assign(fn_.num_values(), false);
    for (ir::OpId id : ops_)
      for (ir::ValueId r : fn_.op(id).results)
        for (ir::OpId user : ctx_.users(r))
          if (!in_run(user)) needs_array_[r.index] = true;
    for (size_t k = ops_.size(); k-- > 0;) {
      const ir::Op& o = fn_.op(ops_[k]);
      if (is_view(o) && needs_array_[o.results[0].index]) needs_array_[o.operands[0].index] = true;
    }
  }

  // Whether `v` can be evaluated at any index before the loop: computed in
  // this run (or outside it) without reading memory.
  bool computable_anywhere(ir::ValueId v) const {
    if (!defined_in_run(v)) return true;
    const ir::Op& o = fn_.op(fn_.value(v).def);
    if (o.kind == OpKind::Load) return false;
    for (ir::ValueId operand : o.operands)
      if (!computable_anywhere(operand)) return false;
    return true;
  }

  // Element `index` of `v` as one expression (for row base pointers).
  std::string value_at(ir::ValueId v, const std::string& index) const {
    if (!defined_in_run(v)) return ctx_.element(v, index);
    const ir::Op& o = fn_.op(fn_.value(v).def);
    std::vector<std::string> operands;
    for (ir::ValueId operand : o.operands) operands.push_back(value_at(operand, index));
    return member_value(ctx_, o, operands, index);
  }

  // Loads and stores whose pointers are contiguous along whole rows (axis
  // info) address memory as `row_base[c]`: a plain affine access the C++
  // compiler turns into (masked) vector loads and stores. Rows are the last
  // dim of the first such pointer; fully contiguous pointers fit any row.
  void plan_contiguous_accesses() {
    row_ = numel_;
    std::vector<ir::ValueId> candidates;
    for (ir::OpId id : ops_) {
      const ir::Op& o = fn_.op(id);
      if (o.kind != OpKind::Load && o.kind != OpKind::Store) continue;
      ir::ValueId p = o.operands[0];
      const ir::Type& t = fn_.type(p);
      int64_t contiguity = ctx_.axis_info().get(p).contiguity.back();
      if (!computable_anywhere(p)) continue;
      if (contiguity == t.numel()) {
        candidates.push_back(p);
      } else if (contiguity == t.shape.back() && contiguity > 1) {
        if (row_ == numel_) row_ = contiguity;
        if (contiguity == row_) candidates.push_back(p);
      }
    }
    for (ir::ValueId p : candidates) {
      bool seen = false;
      for (const auto& b : bases_) seen |= b.first == p;
      if (!seen) bases_.emplace_back(p, "row" + std::to_string(p.index));
    }
  }
  const std::string* base_of(ir::ValueId p) const {
    for (const auto& b : bases_)
      if (b.first == p) return &b.second;
    return nullptr;
  }

  std::string element_of(ir::ValueId v) const {
    if (defined_in_run(v) && !needs_array_[v.index]) return local(v);
    return ctx_.element(v, "i");
  }

  CodegenContext& ctx_;
  const ir::Function& fn_;
  const std::vector<ir::OpId>& ops_;
  int64_t numel_ = 0;
  int64_t row_ = 0;  // elements per row of the loop nest
  std::vector<bool> needs_array_;
  std::vector<std::pair<ir::ValueId, std::string>> bases_;  // pointer tile -> its row base local
};

// Members whose value nothing in the loop reads any more (pointer chains
// replaced by row bases) are left out; the compiler would drop them anyway,
// readers should not have to.
std::vector<bool> FusedRun::live_members() const {
  std::vector<bool> live(ops_.size(), false);
  std::vector<bool> read(fn_.num_values(), false);
  for (size_t k = ops_.size(); k-- > 0;) {
    const ir::Op& o = fn_.op(ops_[k]);
    live[k] = o.kind == OpKind::Store || (!o.results.empty() && (needs_array_[o.results[0].index] || read[o.results[0].index]));
    if (!live[k]) continue;
    for (size_t j = 0; j < o.operands.size(); ++j) {
      bool replaced = j == 0 && (o.kind == OpKind::Load || o.kind == OpKind::Store) && base_of(o.operands[0]);
      if (!replaced) read[o.operands[j].index] = true;
    }
  }
  return live;
}

void FusedRun::emit() {
  bool single = ops_.size() == 1;
  std::vector<bool> live = live_members();
  std::vector<std::string> body;
  for (size_t k = 0; k < ops_.size(); ++k) {
    if (!live[k]) continue;
    ir::OpId id = ops_[k];
    const ir::Op& o = fn_.op(id);
    if (single) ctx_.out.line(op_comment(ctx_, o));
    else body.push_back(op_comment(ctx_, o));
    std::vector<std::string> operands;
    for (ir::ValueId v : o.operands) operands.push_back(element_of(v));
    if ((o.kind == OpKind::Load || o.kind == OpKind::Store) && base_of(o.operands[0]) != nullptr)
      operands[0] = "(" + *base_of(o.operands[0]) + " + c)";
    if (o.kind == OpKind::Store) {
      body.push_back(store_statement(ctx_, o, operands));
      continue;
    }
    ir::ValueId r = o.results[0];
    if (is_view(o) && needs_array_[r.index]) {
      ctx_.alias(r, o.operands[0]);
      body.push_back("// v" + std::to_string(r.index) + " shares the array of " + ctx_.name(r));
      continue;
    }
    std::string value = member_value(ctx_, o, operands, "i");
    if (needs_array_[r.index]) {
      ctx_.declare(r);
      body.push_back(ctx_.element(r, "i") + " = " + value + ";");
    } else {
      body.push_back(c_const(fn_.type(r).element()) + " " + local(r) + " = " + value + ";");
    }
  }
  if (single && fn_.op(ops_[0]).kind != OpKind::Store && body.size() == 1 && body[0].rfind("//", 0) == 0) {
    ctx_.out.line(body[0]);  // a view: nothing to compute
    return;
  }
  if (bases_.empty()) {
    ctx_.open_element_loop("i", numel_);
    for (const std::string& line : body) ctx_.out.line(line);
    ctx_.out.close();
    return;
  }
  // for each row r: row base pointers, then the elements c of the row.
  bool one_row = row_ == numel_;
  std::string row_start = one_row ? "0" : "r * " + std::to_string(row_);
  if (!one_row) ctx_.out.open("for (int r = 0; r < " + std::to_string(numel_ / row_) + "; ++r)");
  for (const auto& [pointer, base] : bases_)
    ctx_.out.line(c_const(fn_.type(pointer).element()) + " " + base + " = " + value_at(pointer, row_start) + ";  // &v" +
                  std::to_string(pointer.index) + "[" + row_start + "]");
  ctx_.open_element_loop("c", row_);
  ctx_.out.line(one_row ? "const int i = c;" : "const int i = r * " + std::to_string(row_) + " + c;");
  for (const std::string& line : body) ctx_.out.line(line);
  ctx_.out.close();
  if (!one_row) ctx_.out.close();
}

}  // namespace

void emit_fused(CodegenContext& ctx, const std::vector<ir::OpId>& ops) {
  TEGULA_ASSERT(!ops.empty(), "empty fused run");
  FusedRun(ctx, ops).emit();
}

}  // namespace tegula::backends::cpu
