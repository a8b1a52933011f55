// The tile IR: a kernel is a Function owning tables of values, ops and blocks.
//
// Semantics (docs/ir.md is the long form):
//  * SSA. A value is defined once, by an op result or a block argument, and
//    used only where its definition dominates (structured regions: an op may
//    use values defined earlier in its block or in any enclosing block).
//  * Values, ops and blocks are 32-bit indices into the Function's tables, so
//    cloning, printing and hashing are trivial. Erased ops stay in the table
//    (marked `erased`) and are unlinked from their block.
//  * Control flow is structured: `for`, `if`, `while`, `reduce` and `scan` own regions;
//    a region is exactly one block whose last op is a terminator (`yield`,
//    `condition`; the kernel body ends in `return`).
//  * Elementwise ops take operands of identical shape: the front end inserts
//    explicit `splat`/`broadcast` ops, so backends never broadcast implicitly.
//  * Integer arithmetic wraps (two's complement); shifts by >= the bit width
//    give an unspecified value; integer division by zero is unspecified (not UB
//    for the compiler: passes never fold it).
//  * Float arithmetic is IEEE-754 with round-to-nearest-even, no fast-math
//    reassociation; NaN compares unequal.
//  * Masked loads read nothing where the mask is false and produce `other`
//    (or an unspecified value without `other`); masked stores write nothing.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "ir/ops.h"
#include "ir/type.h"
#include "support/source.h"

namespace tegula::ir {

struct ValueId {
  uint32_t index = UINT32_MAX;
  bool valid() const { return index != UINT32_MAX; }
  bool operator==(const ValueId&) const = default;
};
struct OpId {
  uint32_t index = UINT32_MAX;
  bool valid() const { return index != UINT32_MAX; }
  bool operator==(const OpId&) const = default;
};
struct BlockId {
  uint32_t index = UINT32_MAX;
  bool valid() const { return index != UINT32_MAX; }
  bool operator==(const BlockId&) const = default;
};

// An attribute value: integer, float, string or list of integers.
using Attr = std::variant<int64_t, double, std::string, std::vector<int64_t>>;

struct NamedAttr {
  std::string name;
  Attr value;
};

struct Value {
  Type type;
  OpId def;                // defining op, or invalid for a block argument
  BlockId block;           // owning block, for block arguments
  uint32_t position = 0;   // result index, or argument index
};

struct Op {
  OpKind kind;
  std::vector<ValueId> operands;
  std::vector<ValueId> results;
  std::vector<NamedAttr> attrs;   // in insertion order (printed in that order)
  std::vector<BlockId> regions;   // one block per region
  BlockId parent;                 // block that contains this op
  SourceLoc loc;
  bool erased = false;

  const Attr* attr(std::string_view name) const;
  bool has_attr(std::string_view name) const { return attr(name) != nullptr; }
  int64_t int_attr(std::string_view name) const;        // asserts presence and kind
  double float_attr(std::string_view name) const;       // accepts int too
  const std::string& str_attr(std::string_view name) const;
  const std::vector<int64_t>& ints_attr(std::string_view name) const;
  void set_attr(std::string name, Attr value);
};

struct Block {
  std::vector<ValueId> args;
  std::vector<OpId> ops;  // in program order; the last is the terminator
  OpId parent;            // op owning this block as a region; invalid for the body
  // Where the last position_of of a mutable Function found an op of this
  // block. Only a starting point for the next search, never trusted.
  size_t position_hint = 0;
};

// A kernel parameter as the launcher sees it.
struct Param {
  std::string name;
  Type type;                 // scalar or ptr<...>
  int64_t divisibility = 1;  // known divisibility of the value (ints) or address (bytes, pointers)
  bool read_only = false;    // a pointer annotated tl.const: stores through it are refused
  // A pointer to this many bytes that the launch passes by value (a host TMA descriptor, Triton's
  // nvTmaDesc): a device backend receives the bytes as the parameter and points at them; the CPU backend
  // receives their host address. 0 for any other parameter.
  int64_t by_value_bytes = 0;
};

class Function {
 public:
  std::string name;
  std::vector<Param> params;          // body block args, in order
  std::vector<std::string> files;     // file names, indexed by SourceLoc::file, for printing
  std::vector<std::string> warnings;  // what the front end warned of, rendered, for the caller to show

  Function();

  BlockId body() const { return body_; }

  // --- tables ---------------------------------------------------------------
  const Value& value(ValueId v) const { return values_.at(v.index); }
  Value& value(ValueId v) { return values_.at(v.index); }
  const Type& type(ValueId v) const { return values_.at(v.index).type; }
  const Op& op(OpId o) const { return ops_.at(o.index); }
  Op& op(OpId o) { return ops_.at(o.index); }
  const Block& block(BlockId b) const { return blocks_.at(b.index); }
  Block& block(BlockId b) { return blocks_.at(b.index); }
  size_t num_values() const { return values_.size(); }
  size_t num_ops() const { return ops_.size(); }
  size_t num_blocks() const { return blocks_.size(); }

  // --- construction -----------------------------------------------------------
  BlockId add_block(OpId parent);
  ValueId add_block_arg(BlockId block, Type type);
  // Creates an op (not yet linked into any block) with results of `result_types`.
  OpId create_op(OpKind kind, std::vector<ValueId> operands, const std::vector<Type>& result_types,
                 SourceLoc loc = {});
  // Links `op` into `block` before position `pos` (pos == ops.size(): append).
  void insert_op(BlockId block, size_t pos, OpId op);

  // --- mutation -----------------------------------------------------------------
  // Replaces every use of `from` by `to` (in all blocks, nested too). Takes
  // time in the uses of `from`, not the size of the function: ops that use
  // a value are indexed on the first call (see users_).
  void replace_all_uses(ValueId from, ValueId to);
  // Unlinks the op from its block and marks it erased (its regions too).
  // Finds the op as position_of does: rewrites that erase the op they visit
  // pay for the distance from the last lookup, not for the block's size;
  // passes that erase many ops of one block erase them with erase_ops.
  void erase_op(OpId op);
  // erase_op of each of `ops` (an op already erased, or listed twice, is
  // skipped), unlinking them in one pass over each block they leave: k ops
  // of a block of n take O(n + k), where k erase_op calls take O(n k).
  void erase_ops(const std::vector<OpId>& ops);
  // Position of `op` inside its parent block. The search starts where the
  // block's last lookup through a mutable Function ended and widens both
  // ways, so a pass that rewrites a block front to back, asking for ops
  // near the one it visits, finds each in time of the distance rather than
  // of the block's size (a 4096-step static_range unrolls into one block).
  // The const overload reads the hint but does not move it: a const
  // Function may be shared between threads.
  size_t position_of(OpId op) const;
  size_t position_of(OpId op);

  // --- queries --------------------------------------------------------------------
  // Number of uses of each value by live ops (index = ValueId::index).
  std::vector<uint32_t> use_counts() const;
  // Calls f(OpId) for every live op in program order, recursing into regions
  // (an op is visited before the ops of its regions).
  template <class F>
  void walk(F&& f) const { walk_block(body_, f); }
  template <class F>
  void walk_block(BlockId b, F&& f) const {
    // Copy: f may erase ops of this block.
    std::vector<OpId> list = block(b).ops;
    for (OpId o : list) {
      if (op(o).erased) continue;
      f(o);
      if (op(o).erased) continue;
      std::vector<BlockId> regions = op(o).regions;
      for (BlockId r : regions) walk_block(r, f);
    }
  }

 private:
  std::vector<Value> values_;
  std::vector<Op> ops_;
  std::vector<Block> blocks_;
  BlockId body_;
  // For replace_all_uses, built on its first call and kept up to date after:
  // for each value, the ops that use it or once did (a superset, checked on
  // use). It relies on operands changing only through create_op and
  // replace_all_uses, or by removal; passes that rewrite an operand of an
  // existing op to another value must go through replace_all_uses.
  std::vector<std::vector<OpId>> users_;
  bool users_indexed_ = false;
  void note_use(ValueId v, OpId user);
};

}  // namespace tegula::ir
