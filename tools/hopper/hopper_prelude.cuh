// Helpers shared by the hand-written Hopper (sm_90a) prototypes (ws_matmul.cu,
// ws_attention.cu). The asynchronous machinery (mbarriers, TMA copies and
// stores, named barriers, clusters, setmaxnreg, stmatrix) and the wgmma
// descriptors and groups are Tegula's own device helpers:
// tegula_preludes.cuh is the text of src/backends/cuda/prelude_mma.h and
// prelude_async.h, written into out/ by harness.py before nvcc runs (the
// host emulator of tests/python pastes the same text). What is left here is
// the prototypes' own: register lists for inline-PTX wgmma and 16-bit
// packing. Written the way Tegula's generated units are: tg_ prefix, inline
// PTX, nothing included but that text.
#pragma once

#define TG_DEVICE __device__ __forceinline__

typedef unsigned short tg_f16;   // IEEE binary16, as its bits
typedef unsigned short tg_bf16;  // bfloat16, as its bits

#include "out/tegula_preludes.cuh"

#define TG_REGS_32                                                                          \
  "{"                                                                                       \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "                  \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"          \
  "}"
#define TG_REGS_64                                                                          \
  "{"                                                                                       \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "                  \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "        \
  "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "        \
  "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"          \
  "}"
#define TG_REGS_128                                                                                     \
  "{"                                                                                                   \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "                              \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "                    \
  "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "                    \
  "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "                    \
  "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "                    \
  "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "                    \
  "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "         \
  "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"       \
  "}"
#define TG_ACC_8(i)                                                                                  \
  "+f"(d[(i) + 0]), "+f"(d[(i) + 1]), "+f"(d[(i) + 2]), "+f"(d[(i) + 3]), "+f"(d[(i) + 4]),          \
      "+f"(d[(i) + 5]), "+f"(d[(i) + 6]), "+f"(d[(i) + 7])
#define TG_ACC_64 TG_ACC_8(0), TG_ACC_8(8), TG_ACC_8(16), TG_ACC_8(24), TG_ACC_8(32), TG_ACC_8(40), TG_ACC_8(48), TG_ACC_8(56)
#define TG_ACC_128 \
  TG_ACC_64, TG_ACC_8(64), TG_ACC_8(72), TG_ACC_8(80), TG_ACC_8(88), TG_ACC_8(96), TG_ACC_8(104), TG_ACC_8(112), TG_ACC_8(120)

#define TG_ACC_32 TG_ACC_8(0), TG_ACC_8(8), TG_ACC_8(16), TG_ACC_8(24)

// --- epilogue helpers -------------------------------------------------------------------
// Two floats rounded to nearest even and packed: lo in bits 0..15 (the lower
// address), hi in 16..31. cvt's first source goes to the upper half.
template <bool F16>
TG_DEVICE unsigned tg_pack2(float lo, float hi) {
  TG_HOOK(pack2, lo, hi, F16);
  unsigned r;
  if constexpr (F16)
    asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  else
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}
