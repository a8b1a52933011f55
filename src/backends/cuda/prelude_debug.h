// The device helpers of debug mode (docs/debug-mode.md), emitted after the
// prelude only in debug kernels, so every other kernel's source stays as it
// was: the error record the runtime reads back after the launch (its layout
// is backends/kernel_abi.h's DebugRecord), each pointer parameter's array
// extent, and the checks every load, store, atomic and assert calls.
//
// Nothing here traps: a failed check records the error, skips the access
// and stops the thread's later accesses, and the kernel runs to its end, so
// the CUDA context stays usable and the launcher can read the record.
#pragma once

#include <string_view>

namespace tegula::backends::cuda {

inline constexpr std::string_view kDebugPrelude = R"PRELUDE(
// ---- debug mode: bounds checks and the error record (docs/debug-mode.md) ----
// Filled by the first failing program (the smallest linear program id wins,
// then the earliest site, then the smallest element index); read back by the
// runtime after the launch.
struct TgDebugRecord {
  int lock;            // a spin lock around the fields below
  int reported;        // 1 once an error is recorded
  long long program;   // linear program id
  int site;            // the check that failed (the kernel's table of debug sites)
  int param;           // the parameter whose array was left (-1 for asserts)
  int pid[3];
  int unused;
  long long offset;    // element offset from the array's first byte
  long long size;      // the array's size in elements
  long long index;     // linear index of the failing element in its tile
};
// One pointer parameter's array: accesses must stay in [base, base + bytes).
struct TgExtent {
  unsigned long long base;
  unsigned long long bytes;
};
// One thread's view of debug mode.
struct TgDebug {
  TgDebugRecord* record;
  const TgExtent* extents;  // indexed by parameter
  long long program;
  bool stopped;             // after its first error a thread touches no memory
};

// Keeps this error in the record if it comes before the one there. The lock
// is taken by one thread at a time, with a loop form that cannot starve the
// lanes of one warp; errors are rare, and a later program never even tries.
__device__ __noinline__ void tg_debug_report(TgDebugRecord* r, long long program, int site, int param,
                                             long long offset, long long size, long long index) {
  if (r == 0) return;
  volatile TgDebugRecord* v = r;
  if (v->reported && v->program < program) return;
  bool done = false;
  while (!done) {
    if (atomicCAS(&r->lock, 0, 1) == 0) {
      __threadfence();
      bool earlier = v->reported == 0 || program < v->program ||
                     (program == v->program && (site < v->site || (site == v->site && index < v->index)));
      if (earlier) {
        v->program = program;
        v->site = site;
        v->param = param;
        v->pid[0] = (int)blockIdx.x;
        v->pid[1] = (int)blockIdx.y;
        v->pid[2] = (int)blockIdx.z;
        v->offset = offset;
        v->size = size;
        v->index = index;
        v->reported = 1;
      }
      __threadfence();
      atomicExch(&r->lock, 0);
      done = true;
    }
  }
}

// Whether `size` bytes at `p` lie inside the array `e`. Below the base the
// unsigned difference wraps to a huge value, which is outside too.
TG_DEVICE bool tg_inside(const TgExtent& e, const void* p, unsigned long long size) {
  unsigned long long from_base = (unsigned long long)p - e.base;
  return e.bytes >= size && from_base <= e.bytes - size;
}

// How far `size` bytes at `p` reach out of the array `e`, in bytes.
TG_DEVICE unsigned long long tg_outside_by(const TgExtent& e, const void* p, unsigned long long size) {
  unsigned long long address = (unsigned long long)p;
  if (address < e.base) return e.base - address;
  return address + size - e.base - e.bytes;
}

// Whether an access of `size` bytes at `p` (element `index` of its tile) may
// happen: the thread has not stopped and `p` lies in the array of one of the
// parameters it may derive from (First, Rest...). Otherwise the error is
// recorded against the one of those arrays it is nearest to, and the thread
// stops.
template <int First, int... Rest>
TG_DEVICE bool tg_access(TgDebug& d, const void* p, unsigned long long size, int site, long long index) {
  if (d.stopped) return false;
  if ((tg_inside(d.extents[First], p, size) || ... || tg_inside(d.extents[Rest], p, size))) return true;
  int param = First;
  const int others[] = {First, Rest...};
  for (int k = 1; k < (int)(sizeof(others) / sizeof(others[0])); ++k)
    if (tg_outside_by(d.extents[others[k]], p, size) < tg_outside_by(d.extents[param], p, size)) param = others[k];
  const TgExtent& e = d.extents[param];
  const long long bytes = (long long)((unsigned long long)p - e.base);
  const long long width = (long long)size;
  const long long offset = bytes >= 0 ? bytes / width : -((width - 1 - bytes) / width);  // floor
  d.stopped = true;
  tg_debug_report(d.record, d.program, site, param, offset, (long long)(e.bytes / size), index);
  return false;
}

// An assert whose condition fails at linear element `index`.
TG_DEVICE void tg_debug_assert(TgDebug& d, int site, long long index) {
  if (d.stopped) return;
  d.stopped = true;
  tg_debug_report(d.record, d.program, site, -1, 0, 0, index);
}
)PRELUDE";

}  // namespace tegula::backends::cuda
