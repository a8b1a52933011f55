#include "frontend/combiner_region.h"

#include <string>

#include "support/diagnostic.h"

namespace tegula::frontend {

ir::BlockId build_combiner_region(Lowerer& l, const std::vector<ir::ValueId>& inputs, const Combiner& combine,
                                  const char* verb, const SourceLoc& loc) {
  ir::Function& fn = l.function();
  ir::BlockId outer = l.builder().insertion_block();
  ir::BlockId region = fn.add_block(ir::OpId{});
  std::vector<ir::ValueId> accumulated, next;
  for (ir::ValueId v : inputs) accumulated.push_back(fn.add_block_arg(region, l.type(v).element()));
  for (ir::ValueId v : inputs) next.push_back(fn.add_block_arg(region, l.type(v).element()));
  l.builder().set_insertion_end(region);
  std::vector<ir::ValueId> combined = combine(accumulated, next);
  if (combined.size() != inputs.size())
    error_at(loc, Diag::InvalidCombineFunction,
             "the combine function returns " + std::to_string(combined.size()) + " values but " +
                 std::to_string(inputs.size()) + " are " + verb);
  for (size_t i = 0; i < combined.size(); ++i) {
    if (l.type(combined[i]).is_tile())
      error_at(loc, Diag::InvalidCombineFunction,
               "the combine function must return scalars, but returns " + l.describe(Symbol::of(combined[i])));
    combined[i] = l.cast(combined[i], l.type(inputs[i]).scalar, loc);
  }
  l.builder().set_loc(loc);
  l.builder().create(ir::OpKind::Yield, combined, {});
  l.builder().set_insertion_end(outer);
  l.builder().set_loc(loc);
  return region;
}

}  // namespace tegula::frontend
