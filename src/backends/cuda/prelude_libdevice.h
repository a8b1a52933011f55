// The helpers generated CUDA code calls for the libdevice ops (ops.def's LIB
// rows) beyond the CUDA math library and intrinsics it spells directly,
// emitted after the prelude only by units that have such an op.
#pragma once

#include <string_view>

namespace tegula::backends::cuda {

inline constexpr std::string_view kLibdevicePrelude = R"PRELUDE(
// ---- libdevice ----
// Bits of 32- and 64-bit integers, counted in the operand's own type.
TG_DEVICE int tg_popc(int x) { return __popc((unsigned)x); }
TG_DEVICE unsigned tg_popc(unsigned x) { return (unsigned)__popc(x); }
TG_DEVICE long long tg_popc(long long x) { return __popcll((unsigned long long)x); }
TG_DEVICE unsigned long long tg_popc(unsigned long long x) { return (unsigned long long)__popcll(x); }
TG_DEVICE int tg_clz(int x) { return __clz(x); }
TG_DEVICE unsigned tg_clz(unsigned x) { return (unsigned)__clz((int)x); }
TG_DEVICE long long tg_clz(long long x) { return __clzll(x); }
TG_DEVICE unsigned long long tg_clz(unsigned long long x) { return (unsigned long long)__clzll((long long)x); }
TG_DEVICE int tg_brev(int x) { return (int)__brev((unsigned)x); }
TG_DEVICE unsigned tg_brev(unsigned x) { return __brev(x); }
TG_DEVICE long long tg_brev(long long x) { return (long long)__brevll((unsigned long long)x); }
TG_DEVICE unsigned long long tg_brev(unsigned long long x) { return __brevll(x); }
// tl.extra.cuda: the special registers.
TG_DEVICE long long tg_globaltimer() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return (long long)t;
}
TG_DEVICE int tg_smid() {
  unsigned r;
  asm("mov.u32 %0, %%smid;" : "=r"(r));
  return (int)r;
}
// libdevice's __nv_rcp64h: the reciprocal from the high word, about 20 bits.
TG_DEVICE double tg_rcp64h(double x) {
  double r;
  asm("rcp.approx.ftz.f64 %0, %1;" : "=d"(r) : "d"(x));
  return r;
}
)PRELUDE";

}  // namespace tegula::backends::cuda
