// tl.extra.cuda's functions (see builtins_target.h). num_warps() and
// num_threads() are constexprs in Triton (a kernel may size tl.arange with
// them), so they are the launch's values here too, on every backend: a CPU
// program runs on one thread, but a kernel computes what it would on CUDA.
// The others are ops of ir/ops.def's tl.extra.cuda block, which each backend
// gives a meaning (docs/language.md, "tl.extra.cuda").
#include "frontend/builtins_target.h"

namespace tegula::frontend {

using ir::OpKind;
using ir::Scalar;

Symbol lower_target_query(Lowerer& l, const CallArgs& c, const std::string& n) {
  BoundArgs a(n, {}, c);
  int64_t warps = l.request().num_warps;
  if (n == "num_warps") return Symbol::of(ConstValue::integer(warps));
  if (n == "num_threads") return Symbol::of(ConstValue::integer(32 * warps));
  if (n == "globaltimer") return Symbol::of(l.create(OpKind::GlobalTimer, {}, ir::Type::of(Scalar::I64), c.loc));
  if (n == "smid") return Symbol::of(l.create(OpKind::Smid, {}, ir::Type::of(Scalar::I32), c.loc));
  l.builder().set_loc(c.loc);
  l.builder().create(n == "gdc_wait" ? OpKind::GdcWait : OpKind::GdcLaunchDependents, {}, {}, {});
  return Symbol::of(ConstValue::none());
}

}  // namespace tegula::frontend
