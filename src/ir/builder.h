// Creates ops at an insertion point, with shape/type helpers shared by the
// front end and the passes.
#pragma once

#include "ir/ir.h"

namespace tegula::ir {

class Builder {
 public:
  explicit Builder(Function& fn) : fn_(fn) {}

  Function& function() { return fn_; }
  // Insert at the end of `block` (or before its terminator if `before_terminator`).
  void set_insertion_end(BlockId block);
  void set_insertion_before(OpId op);
  BlockId insertion_block() const { return block_; }
  void set_loc(SourceLoc loc) { loc_ = loc; }
  SourceLoc loc() const { return loc_; }

  // Generic creation; returns the op. The op gets the current location.
  OpId create(OpKind kind, std::vector<ValueId> operands, const std::vector<Type>& result_types,
              std::vector<NamedAttr> attrs = {});
  // Same, for single-result ops; returns the result.
  ValueId create1(OpKind kind, std::vector<ValueId> operands, Type result_type,
                  std::vector<NamedAttr> attrs = {});

  ValueId int_constant(int64_t v, Type type);
  ValueId float_constant(double v, Type type);
  // Splat / broadcast `v` to `shape` (no-op when the shape already matches).
  ValueId broadcast_to(ValueId v, const std::vector<int64_t>& shape);

 private:
  Function& fn_;
  BlockId block_;
  size_t pos_ = 0;
  bool at_end_ = true;
  SourceLoc loc_;
};

}  // namespace tegula::ir
