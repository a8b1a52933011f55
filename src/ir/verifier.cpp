// Structural and type checks of a Function, in three sweeps:
//  1. structure: every id in range, each op and block linked exactly once,
//     parent links agree, no erased op still linked, results and block
//     arguments point back at their owner. After this sweep every lookup the
//     later sweeps make is in range, so they can index freely.
//  2. parameters agree with the body's arguments.
//  3. a walk in program order that tracks which values are visible (defined
//     earlier in the block or in an enclosing block) and checks each op
//     against its row of ops.def: operand, result and region counts, then
//     its type rule.
// The first problem found is reported; the sweeps stop there.
#include "ir/verifier.h"

#include <algorithm>
#include <cstdint>

#include "ir/atomic.h"
#include "ir/descriptor.h"
#include "ir/hint.h"
#include "ir/printer.h"
#include "ir/scan_ops.h"
#include "support/diagnostic.h"

namespace tegula::ir {

namespace {

bool is_power_of_two(int64_t v) { return v > 0 && (v & (v - 1)) == 0; }

std::string quoted(OpKind kind) { return std::string("`") + name(kind) + "`"; }

// The first failure unwinds the walk; verify() turns it into its message.
struct Failure {
  std::string message;
  OpId op;  // invalid when the problem is not one op's
};

class Verifier {
 public:
  explicit Verifier(const Function& fn) : fn_(fn) {}

  void run() {
    check_structure();
    check_params();
    visible_.assign(fn_.num_values(), false);
    check_block(fn_.body(), OpKind::Return);
  }

 private:
  [[noreturn]] void fail(OpId op, std::string message) const {
    if (op.valid() && op.index < fn_.num_ops()) message = quoted(fn_.op(op).kind) + ": " + message;
    throw Failure{std::move(message), op};
  }

  std::string type_name(ValueId v) const { return to_string(fn_.type(v)); }

  // --- sweep 1: structure --------------------------------------------------------

  void check_structure() {
    linked_.assign(fn_.num_ops(), false);
    block_seen_.assign(fn_.num_blocks(), false);
    if (fn_.block(fn_.body()).parent.valid()) fail({}, "the kernel body must not belong to an op");
    block_seen_[fn_.body().index] = true;
    check_block_structure(fn_.body(), 0);
  }

  void check_block_structure(BlockId b, int depth) {
    if (depth > 1000) fail({}, "regions nested too deeply");
    const Block& block = fn_.block(b);
    for (size_t i = 0; i < block.args.size(); ++i) {
      ValueId a = block.args[i];
      if (a.index >= fn_.num_values()) fail(block.parent, "block argument " + std::to_string(i) + " is not a value");
      const Value& v = fn_.value(a);
      if (v.def.valid() || !(v.block == b) || v.position != i)
        fail(block.parent, "block argument " + std::to_string(i) + " does not point back at its block");
    }
    for (OpId id : block.ops) {
      if (id.index >= fn_.num_ops()) fail({}, "block holds op id " + std::to_string(id.index) + " out of range");
      if (linked_[id.index]) fail(id, "op is linked into the IR more than once");
      linked_[id.index] = true;
      const Op& op = fn_.op(id);
      if (op.erased) fail(id, "erased op is still linked into a block");
      if (!(op.parent == b)) fail(id, "op's parent is not the block that holds it");
      for (size_t i = 0; i < op.operands.size(); ++i)
        if (op.operands[i].index >= fn_.num_values())
          fail(id, "operand " + std::to_string(i) + " is not a value");
      for (size_t i = 0; i < op.results.size(); ++i) {
        ValueId r = op.results[i];
        if (r.index >= fn_.num_values()) fail(id, "result " + std::to_string(i) + " is not a value");
        const Value& v = fn_.value(r);
        if (!(v.def == id) || v.position != i)
          fail(id, "result " + std::to_string(i) + " does not point back at its op");
      }
      for (BlockId region : op.regions) {
        if (region.index >= fn_.num_blocks()) fail(id, "region block out of range");
        if (block_seen_[region.index]) fail(id, "region block is shared with another region");
        block_seen_[region.index] = true;
        if (!(fn_.block(region).parent == id)) fail(id, "region block does not point back at its op");
        check_block_structure(region, depth + 1);
      }
    }
  }

  // --- sweep 2: parameters ------------------------------------------------------------

  void check_params() {
    const Block& body = fn_.block(fn_.body());
    if (fn_.params.size() != body.args.size())
      fail({}, "kernel has " + std::to_string(fn_.params.size()) + " params but its body has " +
                   std::to_string(body.args.size()) + " arguments");
    for (size_t i = 0; i < fn_.params.size(); ++i) {
      const Param& p = fn_.params[i];
      std::string which = "param " + std::to_string(i) + " (" + p.name + ")";
      if (!(p.type == fn_.type(body.args[i])))
        fail({}, which + " has type " + to_string(p.type) + " but its body argument is " + type_name(body.args[i]));
      if (p.type.is_tile()) fail({}, which + " must be a scalar or a pointer, not a tile");
      if (p.divisibility < 1) fail({}, which + " has divisibility " + std::to_string(p.divisibility));
      if (p.by_value_bytes < 0 || (p.by_value_bytes > 0 && !p.type.is_pointer()))
        fail({}, which + " is passed by value as " + std::to_string(p.by_value_bytes) +
                     " bytes, which only a pointer parameter may be");
      for (size_t j = 0; j < i; ++j)
        if (fn_.params[j].name == p.name) fail({}, which + " repeats the name of param " + std::to_string(j));
    }
  }

  // --- sweep 3: dominance and types ---------------------------------------------------

  void check_value_type(OpId id, ValueId v, const std::string& what) {
    const Type& t = fn_.type(v);
    int64_t numel = 1;
    for (int64_t d : t.shape) {
      if (!is_power_of_two(d))
        fail(id, what + " has type " + to_string(t) + ": tile dimensions must be powers of two");
      // Both factors stay <= kMaxTileElements, so the product cannot overflow.
      numel = d > kMaxTileElements ? kMaxTileElements + 1 : numel * d;
      if (numel > kMaxTileElements)
        fail(id, what + " has type " + to_string(t) + ": more than " + std::to_string(kMaxTileElements) +
                     " elements");
    }
  }

  // `terminator` is the kind that must end this block.
  void check_block(BlockId b, OpKind terminator) {
    const Block& block = fn_.block(b);
    OpId owner = block.parent;
    for (size_t i = 0; i < block.args.size(); ++i) {
      check_value_type(owner, block.args[i], "block argument " + std::to_string(i));
      visible_[block.args[i].index] = true;
    }
    for (size_t i = 0; i < block.ops.size(); ++i) {
      OpId id = block.ops[i];
      if (is_terminator(fn_.op(id).kind) && i + 1 != block.ops.size())
        fail(id, "terminator must be the last op of its block");
      check_op(id);
    }
    std::string where = owner.valid() ? "a region of " + quoted(fn_.op(owner).kind) : "the kernel body";
    if (block.ops.empty()) fail(owner, where + " is empty; it must end in " + quoted(terminator));
    const Op& last = fn_.op(block.ops.back());
    if (last.kind != terminator)
      fail(block.ops.back(), where + " must end in " + quoted(terminator) + ", not " + quoted(last.kind));
    // Leaving the block: its values are out of scope for what follows.
    for (ValueId a : block.args) visible_[a.index] = false;
    for (OpId id : block.ops)
      for (ValueId r : fn_.op(id).results) visible_[r.index] = false;
  }

  void check_op(OpId id) {
    const Op& op = fn_.op(id);
    const OpInfo& row = info(op.kind);
    for (size_t i = 0; i < op.operands.size(); ++i)
      if (!visible_[op.operands[i].index])
        fail(id, "operand " + std::to_string(i) + " is not defined before this use (or not in scope)");
    int operands = static_cast<int>(op.operands.size());
    if (operands < row.min_operands || (row.max_operands != kAnyCount && operands > row.max_operands)) {
      std::string want = row.min_operands == row.max_operands ? std::to_string(row.min_operands)
                         : row.max_operands == kAnyCount     ? "at least " + std::to_string(row.min_operands)
                                                              : std::to_string(row.min_operands) + " to " +
                                                                    std::to_string(row.max_operands);
      fail(id, "expects " + want + " operands, got " + std::to_string(operands));
    }
    if (row.results != kAnyCount && static_cast<int>(op.results.size()) != row.results)
      fail(id, "expects " + std::to_string(row.results) + " results, got " + std::to_string(op.results.size()));
    if (static_cast<int>(op.regions.size()) != row.regions)
      fail(id, "expects " + std::to_string(row.regions) + " regions, got " + std::to_string(op.regions.size()));
    for (size_t i = 0; i < op.results.size(); ++i)
      check_value_type(id, op.results[i], "result " + std::to_string(i));
    if (is_elementwise(op.kind)) check_elementwise_shapes(id, op);

    for (size_t r = 0; r < op.regions.size(); ++r) {
      OpKind end = op.kind == OpKind::While && r == 0 ? OpKind::Condition : OpKind::Yield;
      check_block(op.regions[r], end);
    }
    check_rule(id, op, row.rule);
    for (ValueId r : op.results) visible_[r.index] = true;
  }

  void check_elementwise_shapes(OpId id, const Op& op) {
    const std::vector<int64_t>& shape = fn_.type(op.results[0]).shape;
    for (size_t i = 0; i < op.operands.size(); ++i)
      if (fn_.type(op.operands[i]).shape != shape)
        fail(id, "operand " + std::to_string(i) + " (" + type_name(op.operands[i]) +
                     ") must have the shape of the result (" + type_name(op.results[0]) + ")");
  }

  void check_rule(OpId id, const Op& op, TypeRule rule);

  // Shared helpers for the rules below.
  void require_same_type_as_result(OpId id, const Op& op, size_t first_operand) {
    for (size_t i = first_operand; i < op.operands.size(); ++i)
      if (!(fn_.type(op.operands[i]) == fn_.type(op.results[0])))
        fail(id, "operand " + std::to_string(i) + " (" + type_name(op.operands[i]) + ") must have the result type (" +
                     type_name(op.results[0]) + ")");
  }

  void expect_result(OpId id, const Op& op, size_t index, const Type& expected) {
    if (!(fn_.type(op.results[index]) == expected))
      fail(id, "result " + std::to_string(index) + " must be " + to_string(expected) + ", got " +
                   type_name(op.results[index]));
  }

  int64_t int_attr(OpId id, const Op& op, const char* attr_name) {
    const Attr* a = op.attr(attr_name);
    if (!a || !std::holds_alternative<int64_t>(*a))
      fail(id, std::string("needs an integer attribute `") + attr_name + "`");
    return std::get<int64_t>(*a);
  }

  void optional_attr_kind(OpId id, const Op& op, const char* attr_name, bool want_string) {
    const Attr* a = op.attr(attr_name);
    if (!a) return;
    bool ok = want_string ? std::holds_alternative<std::string>(*a) : std::holds_alternative<int64_t>(*a);
    if (!ok) fail(id, std::string("attribute `") + attr_name + "` must be " + (want_string ? "a string" : "an integer"));
  }

  // The values a region's terminator hands back must have `types`.
  void check_yields(OpId owner, BlockId region, size_t first, const std::vector<Type>& types, const char* what) {
    OpId term_id = fn_.block(region).ops.back();
    const Op& term = fn_.op(term_id);
    if (term.operands.size() - first != types.size())
      fail(term_id, "yields " + std::to_string(term.operands.size() - first) + " values but the enclosing " +
                        quoted(fn_.op(owner).kind) + " expects " + std::to_string(types.size()));
    for (size_t i = 0; i < types.size(); ++i)
      if (!(fn_.type(term.operands[first + i]) == types[i]))
        fail(term_id, "value " + std::to_string(i) + " has type " + type_name(term.operands[first + i]) +
                          " but the enclosing " + quoted(fn_.op(owner).kind) + " expects " + to_string(types[i]) +
                          " (" + what + ")");
  }

  void check_block_args(OpId owner, BlockId region, const std::vector<Type>& types, const char* what) {
    const Block& block = fn_.block(region);
    if (block.args.size() != types.size())
      fail(owner, "region has " + std::to_string(block.args.size()) + " arguments, expected " +
                      std::to_string(types.size()) + " (" + what + ")");
    for (size_t i = 0; i < types.size(); ++i)
      if (!(fn_.type(block.args[i]) == types[i]))
        fail(owner, "region argument " + std::to_string(i) + " has type " + type_name(block.args[i]) + ", expected " +
                        to_string(types[i]) + " (" + what + ")");
  }

  std::vector<Type> types_of(const std::vector<ValueId>& values, size_t first = 0) const {
    std::vector<Type> out;
    for (size_t i = first; i < values.size(); ++i) out.push_back(fn_.type(values[i]));
    return out;
  }

  // Rules, grouped as ops.def groups them.
  void check_constant(OpId id, const Op& op);
  void check_shape_op(OpId id, const Op& op, TypeRule rule);
  void check_elementwise(OpId id, const Op& op, TypeRule rule);
  void check_memory(OpId id, const Op& op, TypeRule rule);
  void check_reduce(OpId id, const Op& op);
  void check_dot(OpId id, const Op& op);
  void check_for(OpId id, const Op& op);
  void check_if(OpId id, const Op& op);
  void check_while(OpId id, const Op& op);

  const Function& fn_;
  std::vector<bool> linked_;      // by op index: seen in some block
  std::vector<bool> block_seen_;  // by block index: reached from the body
  std::vector<bool> visible_;     // by value index: in scope at the current op
};

void Verifier::check_rule(OpId id, const Op& op, TypeRule rule) {
  switch (rule) {
    case TypeRule::Constant:
      return check_constant(id, op);
    case TypeRule::GridIndex: {
      int64_t axis = int_attr(id, op, "axis");
      if (axis < 0 || axis > 2) fail(id, "axis must be 0, 1 or 2, got " + std::to_string(axis));
      return expect_result(id, op, 0, Type::of(Scalar::I32));
    }
    case TypeRule::TargetQuery:  // the row fixes the count: one result or none
      if (op.results.empty()) return;
      return expect_result(id, op, 0, Type::of(op.kind == OpKind::GlobalTimer ? Scalar::I64 : Scalar::I32));
    case TypeRule::Arange: {
      int64_t start = int_attr(id, op, "start");
      int64_t end = int_attr(id, op, "end");
      if (start < INT32_MIN || end - 1 > INT32_MAX) fail(id, "start and end must be 32-bit integers");
      if (end <= start)
        fail(id, "end (" + std::to_string(end) + ") must be greater than start (" + std::to_string(start) + ")");
      if (!is_power_of_two(end - start))
        fail(id, "length end - start = " + std::to_string(end - start) + " is not a power of two");
      return expect_result(id, op, 0, Type::tile(Scalar::I32, {end - start}));
    }
    case TypeRule::Splat:
    case TypeRule::Broadcast:
    case TypeRule::ExpandDims:
    case TypeRule::Reshape:
    case TypeRule::Trans:
    case TypeRule::Join:
    case TypeRule::Split:
      return check_shape_op(id, op, rule);
    case TypeRule::Numbers:
    case TypeRule::Integers:
    case TypeRule::Floats:
    case TypeRule::Rounded:
    case TypeRule::FloatAndInt:
    case TypeRule::Compare:
    case TypeRule::Select:
    case TypeRule::Cast:
    case TypeRule::Bitcast:
    case TypeRule::AddPtr:
      return check_elementwise(id, op, rule);
    case TypeRule::Load:
    case TypeRule::Store:
      return check_memory(id, op, rule);
    case TypeRule::Atomic:
      if (std::string problem = atomic_problem(fn_, op); !problem.empty()) fail(id, problem);
      return;
    case TypeRule::Descriptor:
      if (std::string problem = descriptor_problem(fn_, op); !problem.empty()) fail(id, problem);
      return;
    case TypeRule::Reduce:
      return check_reduce(id, op);
    case TypeRule::Dot:
      return check_dot(id, op);
    case TypeRule::ScanFamily:
      if (std::string problem = scan_family_problem(fn_, op); !problem.empty()) fail(id, problem);
      return;
    case TypeRule::Hint:
      if (std::string problem = hint_problem(fn_, op); !problem.empty()) fail(id, problem);
      return;
    case TypeRule::For:
      return check_for(id, op);
    case TypeRule::If:
      return check_if(id, op);
    case TypeRule::While:
      return check_while(id, op);
    case TypeRule::Terminator:
      return;  // the owner of the region checks what its terminator hands back
    case TypeRule::Print:
      return optional_attr_kind(id, op, "prefix", true);
    case TypeRule::InlineAsm: {
      for (const char* a : {"asm", "constraints"}) {
        const Attr* s = op.attr(a);
        if (!s || !std::holds_alternative<std::string>(*s)) fail(id, std::string("needs a string attribute `") + a + "`");
      }
      if (int_attr(id, op, "pack") < 1) fail(id, "pack must be at least 1");
      optional_attr_kind(id, op, "pure", false);
      if (op.results.empty()) fail(id, "needs at least one result");
      const std::vector<int64_t>& shape = fn_.type(op.results[0]).shape;
      for (ValueId v : op.operands)
        if (fn_.type(v).shape != shape || (!fn_.type(v).pointer && fn_.type(v).scalar == Scalar::I1))
          fail(id, "operand " + type_name(v) + " must be a pointer or a non-boolean number of the results' shape");
      for (ValueId v : op.results)
        if (fn_.type(v).shape != shape || fn_.type(v).pointer || fn_.type(v).scalar == Scalar::I1)
          fail(id, "results must be non-boolean numbers of one shape, got " + type_name(v));
      return;
    }
    case TypeRule::Assert: {
      const Type& cond = fn_.type(op.operands[0]);
      if (cond.pointer || cond.scalar != Scalar::I1)
        fail(id, "condition must be i1 (scalar or tile), got " + to_string(cond));
      return optional_attr_kind(id, op, "message", true);
    }
  }
}

void Verifier::check_constant(OpId id, const Op& op) {
  const Type& t = fn_.type(op.results[0]);
  const Attr* value = op.attr("value");
  if (!value) fail(id, "needs a `value` attribute");
  if (t.pointer) fail(id, "cannot have pointer type " + to_string(t));
  if (is_float(t.scalar)) {
    if (!std::holds_alternative<double>(*value))
      fail(id, "the value of a " + to_string(t) + " constant must be a float attribute");
    return;
  }
  if (!std::holds_alternative<int64_t>(*value))
    fail(id, "the value of a " + to_string(t) + " constant must be an integer attribute");
  int64_t v = std::get<int64_t>(*value);
  int bits = bit_width(t.scalar);
  if (bits == 64) return;
  // Unsigned constants may also be written as the signed value of the same bits.
  int64_t low = t.scalar == Scalar::I1 ? 0 : -(int64_t{1} << (bits - 1));
  int64_t high = is_signed(t.scalar) ? (int64_t{1} << (bits - 1)) - 1 : (int64_t{1} << bits) - 1;
  if (v < low || v > high) fail(id, "value " + std::to_string(v) + " does not fit in " + to_string(t.scalar));
}

void Verifier::check_shape_op(OpId id, const Op& op, TypeRule rule) {
  const Type& in = fn_.type(op.operands[0]);
  const Type& out = fn_.type(op.results[0]);
  switch (rule) {
    case TypeRule::Splat:
      if (in.is_tile()) fail(id, "operand must be a scalar, got " + to_string(in));
      if (!out.is_tile()) fail(id, "result must be a tile, got " + to_string(out));
      return expect_result(id, op, 0, in.with_shape(out.shape));
    case TypeRule::Broadcast:
      if (!in.is_tile() || !out.is_tile() || in.rank() != out.rank() || !(in.element() == out.element()))
        fail(id, "operand (" + to_string(in) + ") and result (" + to_string(out) +
                     ") must be tiles of the same rank and element type");
      for (int d = 0; d < in.rank(); ++d)
        if (in.shape[d] != out.shape[d] && in.shape[d] != 1)
          fail(id, "dimension " + std::to_string(d) + " has size " + std::to_string(in.shape[d]) +
                       "; only size-1 dimensions can be broadcast (to " + std::to_string(out.shape[d]) + ")");
      return;
    case TypeRule::ExpandDims: {
      int64_t axis = int_attr(id, op, "axis");
      if (!in.is_tile()) fail(id, "operand must be a tile, got " + to_string(in));
      if (axis < 0 || axis > in.rank())
        fail(id, "axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(in.rank()));
      std::vector<int64_t> shape = in.shape;
      shape.insert(shape.begin() + axis, 1);
      return expect_result(id, op, 0, in.with_shape(shape));
    }
    case TypeRule::Reshape:
      if (!in.is_tile() || !out.is_tile() || !(in.element() == out.element()))
        fail(id, "operand (" + to_string(in) + ") and result (" + to_string(out) +
                     ") must be tiles of the same element type");
      if (in.numel() != out.numel())
        fail(id, "cannot reshape " + std::to_string(in.numel()) + " elements into " + std::to_string(out.numel()));
      return;
    case TypeRule::Trans: {
      const Attr* a = op.attr("perm");
      if (!a || !std::holds_alternative<std::vector<int64_t>>(*a)) fail(id, "needs an int-list attribute `perm`");
      const std::vector<int64_t>& perm = std::get<std::vector<int64_t>>(*a);
      if (!in.is_tile()) fail(id, "operand must be a tile, got " + to_string(in));
      std::vector<bool> used(static_cast<size_t>(in.rank()), false);
      bool valid = static_cast<int>(perm.size()) == in.rank();
      for (size_t i = 0; valid && i < perm.size(); ++i) {
        valid = perm[i] >= 0 && perm[i] < in.rank() && !used[static_cast<size_t>(perm[i])];
        if (valid) used[static_cast<size_t>(perm[i])] = true;
      }
      if (!valid) fail(id, "perm is not a permutation of the " + std::to_string(in.rank()) + " dimensions");
      std::vector<int64_t> shape;
      for (int64_t p : perm) shape.push_back(in.shape[static_cast<size_t>(p)]);
      return expect_result(id, op, 0, in.with_shape(shape));
    }
    case TypeRule::Join: {
      if (!(fn_.type(op.operands[1]) == in))
        fail(id, "operands must have the same type, got " + to_string(in) + " and " + type_name(op.operands[1]));
      std::vector<int64_t> shape = in.shape;
      shape.push_back(2);
      return expect_result(id, op, 0, in.with_shape(shape));
    }
    case TypeRule::Split: {
      if (!in.is_tile() || in.shape.back() != 2)
        fail(id, "operand must be a tile whose last dimension is 2, got " + to_string(in));
      std::vector<int64_t> shape(in.shape.begin(), in.shape.end() - 1);
      expect_result(id, op, 0, in.with_shape(shape));
      return expect_result(id, op, 1, in.with_shape(shape));
    }
    default:
      TEGULA_ASSERT(false, "not a shape rule");
  }
}

void Verifier::check_elementwise(OpId id, const Op& op, TypeRule rule) {
  const Type& first = fn_.type(op.operands[0]);
  const Type& result = fn_.type(op.results[0]);
  switch (rule) {
    case TypeRule::Numbers:
      if (first.pointer) fail(id, "does not apply to pointers (" + to_string(first) + ")");
      optional_attr_kind(id, op, "propagate_nan", false);  // min/max only; see docs/ir.md
      optional_attr_kind(id, op, "approx", false);         // float div only; see docs/ir.md
      return require_same_type_as_result(id, op, 0);
    case TypeRule::Integers:
      if (first.pointer || !is_integer(first.scalar)) fail(id, "needs integer operands, got " + to_string(first));
      return require_same_type_as_result(id, op, 0);
    case TypeRule::Floats:
      if (first.pointer || !is_float(first.scalar)) fail(id, "needs float operands, got " + to_string(first));
      optional_attr_kind(id, op, "approx", false);  // exp only; see docs/ir.md
      return require_same_type_as_result(id, op, 0);
    case TypeRule::Rounded: {
      if (first.pointer || (first.scalar != Scalar::F32 && first.scalar != Scalar::F64))
        fail(id, "needs f32 or f64 operands, got " + to_string(first));
      const Attr* mode = op.attr("rounding");
      const std::string* m = mode ? std::get_if<std::string>(mode) : nullptr;
      if (!m || (*m != "rn" && *m != "rz" && *m != "rd" && *m != "ru"))
        fail(id, "needs a string attribute `rounding`: one of rn rz rd ru");
      return require_same_type_as_result(id, op, 0);
    }
    case TypeRule::FloatAndInt:
      if (first.pointer || !is_float(first.scalar)) fail(id, "needs a float first operand, got " + to_string(first));
      if (!(fn_.type(op.operands[1]) == first.with_scalar(Scalar::I32)))
        fail(id, "operand 1 must be " + to_string(first.with_scalar(Scalar::I32)) + ", got " + type_name(op.operands[1]));
      return expect_result(id, op, 0, first);
    case TypeRule::Compare: {
      const Attr* pred = op.attr("pred");
      static const char* const kPreds[] = {"eq", "ne", "lt", "le", "gt", "ge"};
      bool known = pred && std::holds_alternative<std::string>(*pred) &&
                   std::any_of(std::begin(kPreds), std::end(kPreds),
                               [&](const char* p) { return std::get<std::string>(*pred) == p; });
      if (!known) fail(id, "needs a string attribute `pred`: one of eq ne lt le gt ge");
      if (!(fn_.type(op.operands[1]) == first))
        fail(id, "operands must have the same type, got " + to_string(first) + " and " + type_name(op.operands[1]));
      return expect_result(id, op, 0, Type::tile(Scalar::I1, first.shape));
    }
    case TypeRule::Select:
      if (first.pointer || first.scalar != Scalar::I1) fail(id, "condition must be i1, got " + to_string(first));
      return require_same_type_as_result(id, op, 1);
    case TypeRule::Cast: {
      // A pointer converts to and from integers (its address); changing the
      // pointee is a bitcast.
      bool from_int = !first.pointer && is_integer(first.scalar);
      bool to_int = !result.pointer && is_integer(result.scalar);
      if ((first.pointer && !to_int) || (result.pointer && !from_int))
        fail(id, "cannot cast " + to_string(first) + " to " + to_string(result) +
                     " (pointers convert only to and from integers; use bitcast to change the pointee)");
      return optional_attr_kind(id, op, "rounding", true);
    }
    case TypeRule::Bitcast:
      if (first.pointer != result.pointer ||
          (!first.pointer && bit_width(first.scalar) != bit_width(result.scalar)))
        fail(id, "cannot bitcast " + to_string(first) + " to " + to_string(result) +
                     " (both pointers, or both values of the same bit width)");
      return;
    case TypeRule::AddPtr: {
      const Type& offset = fn_.type(op.operands[1]);
      if (!first.pointer) fail(id, "operand 0 must be a pointer, got " + to_string(first));
      if (offset.pointer || !is_integer(offset.scalar))
        fail(id, "offset must be an integer, got " + to_string(offset));
      return expect_result(id, op, 0, first);
    }
    default:
      TEGULA_ASSERT(false, "not an elementwise rule");
  }
}

void Verifier::check_memory(OpId id, const Op& op, TypeRule rule) {
  const Type& ptr = fn_.type(op.operands[0]);
  if (!ptr.pointer) fail(id, "operand 0 must be a pointer or a tile of pointers, got " + to_string(ptr));
  Type value = ptr.with_scalar(ptr.scalar);
  size_t mask_index = rule == TypeRule::Load ? 1 : 2;
  if (rule == TypeRule::Load) {
    expect_result(id, op, 0, value);
    if (op.operands.size() > 2 && !(fn_.type(op.operands[2]) == value))
      fail(id, "`other` must be " + to_string(value) + ", got " + type_name(op.operands[2]));
    optional_attr_kind(id, op, "volatile", false);
  } else if (!(fn_.type(op.operands[1]) == value)) {
    fail(id, "stored value must be " + to_string(value) + ", got " + type_name(op.operands[1]));
  }
  if (op.operands.size() > mask_index && !(fn_.type(op.operands[mask_index]) == ptr.with_scalar(Scalar::I1)))
    fail(id, "mask must be " + to_string(ptr.with_scalar(Scalar::I1)) + ", got " +
                 type_name(op.operands[mask_index]));
  optional_attr_kind(id, op, "cache_modifier", true);
  optional_attr_kind(id, op, "eviction_policy", true);
}

void Verifier::check_reduce(OpId id, const Op& op) {
  if (op.results.size() != op.operands.size())
    fail(id, "has " + std::to_string(op.operands.size()) + " operands but " + std::to_string(op.results.size()) +
                 " results");
  int64_t axis = int_attr(id, op, "axis");
  const Type& first = fn_.type(op.operands[0]);
  if (!first.is_tile()) fail(id, "operands must be tiles, got " + to_string(first));
  if (axis < 0 || axis >= first.rank())
    fail(id, "axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(first.rank()));
  std::vector<int64_t> reduced = first.shape;
  reduced.erase(reduced.begin() + axis);
  std::vector<Type> elements;
  for (size_t i = 0; i < op.operands.size(); ++i) {
    const Type& t = fn_.type(op.operands[i]);
    if (t.shape != first.shape || t.pointer)
      fail(id, "operand " + std::to_string(i) + " (" + to_string(t) +
                   ") must be a non-pointer tile of the shape of operand 0 (" + to_string(first) + ")");
    expect_result(id, op, i, t.with_shape(reduced));
    elements.push_back(t.element());
  }
  std::vector<Type> args = elements;
  args.insert(args.end(), elements.begin(), elements.end());
  check_block_args(id, op.regions[0], args, "accumulators, then new values");
  check_yields(id, op.regions[0], 0, elements, "one combined value per operand");
}

void Verifier::check_dot(OpId id, const Op& op) {
  const Type& a = fn_.type(op.operands[0]);
  const Type& b = fn_.type(op.operands[1]);
  const Type& acc = fn_.type(op.operands[2]);
  std::string got = " (got " + to_string(a) + ", " + to_string(b) + ", " + to_string(acc) + ")";
  if (a.rank() != 2 || b.rank() != 2 || acc.rank() != 2 || a.pointer || b.pointer || acc.pointer)
    fail(id, "operands must be 2-d tiles of numbers" + got);
  if (a.scalar != b.scalar) fail(id, "a and b must have the same element type" + got);
  if (a.shape[1] != b.shape[0]) fail(id, "a is MxK and b must be KxN" + got);
  if (acc.shape[0] != a.shape[0] || acc.shape[1] != b.shape[1]) fail(id, "the accumulator must be MxN" + got);
  optional_attr_kind(id, op, "precision", true);
  expect_result(id, op, 0, acc);
}

void Verifier::check_for(OpId id, const Op& op) {
  const Type& lb = fn_.type(op.operands[0]);
  if (lb.is_tile() || lb.pointer || !is_integer(lb.scalar))
    fail(id, "bounds and step must be integer scalars, got " + to_string(lb));
  if (!(fn_.type(op.operands[1]) == lb) || !(fn_.type(op.operands[2]) == lb))
    fail(id, "lower bound, upper bound and step must have the same type (" + to_string(lb) + ", " +
                 type_name(op.operands[1]) + ", " + type_name(op.operands[2]) + ")");
  std::vector<Type> carried = types_of(op.operands, 3);
  if (op.results.size() != carried.size())
    fail(id, "has " + std::to_string(carried.size()) + " loop-carried values but " +
                 std::to_string(op.results.size()) + " results");
  for (size_t i = 0; i < carried.size(); ++i)
    expect_result(id, op, i, carried[i]);
  std::vector<Type> args = {lb};
  args.insert(args.end(), carried.begin(), carried.end());
  check_block_args(id, op.regions[0], args, "induction variable, then loop-carried values");
  check_yields(id, op.regions[0], 0, carried, "loop-carried values");
}

void Verifier::check_if(OpId id, const Op& op) {
  const Type& cond = fn_.type(op.operands[0]);
  if (!(cond == Type::of(Scalar::I1))) fail(id, "condition must be an i1 scalar, got " + to_string(cond));
  std::vector<Type> results = types_of(op.results);
  for (BlockId region : op.regions) {
    check_block_args(id, region, {}, "if regions take no arguments");
    check_yields(id, region, 0, results, "results of the if");
  }
}

void Verifier::check_while(OpId id, const Op& op) {
  std::vector<Type> carried = types_of(op.operands);
  check_block_args(id, op.regions[0], carried, "loop-carried values");
  OpId cond_id = fn_.block(op.regions[0]).ops.back();
  const Op& condition = fn_.op(cond_id);
  const Type& cond = fn_.type(condition.operands[0]);
  if (!(cond == Type::of(Scalar::I1))) fail(cond_id, "operand 0 must be an i1 scalar, got " + to_string(cond));
  std::vector<Type> forwarded = types_of(condition.operands, 1);
  if (!(types_of(op.results) == forwarded))
    fail(id, "results must have the types of the values `condition` forwards");
  check_block_args(id, op.regions[1], forwarded, "the values `condition` forwards");
  check_yields(id, op.regions[1], 0, carried, "loop-carried values");
}

}  // namespace

std::string verify(const Function& fn) {
  try {
    Verifier(fn).run();
  } catch (const Failure& failure) {
    return failure.message;
  }
  return "";
}

void verify_or_throw(const Function& fn, const char* stage) {
  try {
    Verifier(fn).run();
  } catch (const Failure& failure) {
    std::string message = std::string("IR verification failed after `") + stage + "`: " + failure.message;
    if (failure.op.valid()) message += "\n  at: " + print_op(fn, failure.op);
    InternalError error(message);
    if (failure.op.valid()) error.locate(fn.op(failure.op).loc);
    throw error;
  }
}

}  // namespace tegula::ir
