// tl.target_info: what a kernel may ask of its target at compile time,
// answered from the TargetInfo the compile driver hands the front end. Each
// answer is a constant, so `if tl.target_info.cuda_capability_geq(9, 0):`
// picks a branch at compile time, as in Triton. Tegula has no HIP backend:
// the is_hip* questions are always false.
#include "frontend/builtins_target_info.h"

namespace tegula::frontend {

Symbol lower_target_info(Lowerer& l, const CallArgs& c, const std::string& n) {
  const TargetInfo& t = l.target();
  bool cuda = t.cuda_arch > 0;
  if (n == "target_info.cuda_capability_geq") {
    BoundArgs a("tl.target_info.cuda_capability_geq", {"major", "?minor"}, c);
    int64_t major = l.to_int_const(a.get("major"), a.loc("major"), "the major version");
    int64_t minor = a.has("minor") ? l.to_int_const(a.get("minor"), a.loc("minor"), "the minor version") : 0;
    return Symbol::of(ConstValue::boolean(cuda && t.cuda_arch >= major * 10 + minor));
  }
  BoundArgs a("tl." + n, {}, c);
  return Symbol::of(ConstValue::boolean(n == "target_info.is_cuda" && cuda));
}

}  // namespace tegula::frontend
