// The device helpers of debug mode (docs/debug-mode.md), emitted after the
// prelude only in debug kernels, so every other kernel's source stays as it
// was, and after c_family::kDebugRecord (the error record the runtime reads
// back after the launch and the extent tests, shared with the CPU backend):
// a thread's view of debug mode, the report of an error and the checks
// every load, store, atomic and assert calls.
//
// Nothing here traps: a failed check records the error, skips the access
// and stops the thread's later accesses, and the kernel runs to its end, so
// the CUDA context stays usable and the launcher can read the record.
#pragma once

#include <string_view>

namespace tegula::backends::cuda {

// After c_family::kDebugRecord.
inline constexpr std::string_view kDebugPrelude = R"PRELUDE(
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

// p + off (in elements) in debug mode. Where the offset's bytes do not fit in 64 bits, or carry the
// address out of the address space, plain pointer arithmetic wraps, maybe into the array itself
// (x + 2**62 + 1 reads x[1]): here the result is instead the highest aligned address below 2**63, which
// no array holds, so the access through it is reported (past the array's end).
template <class T, class I> TG_DEVICE T* tg_addptr_checked(T* p, I off) {
  const long long size = (long long)sizeof(T);
  const long long far = 0x7fffffffffffffffLL & ~(long long)(alignof(T) - 1);
  if ((I)-1 > (I)0 && (unsigned long long)off > 0x7fffffffffffffffULL) return (T*)far;  // unsigned, >= 2**63
  const long long o = (long long)off;
  if (o > 0x7fffffffffffffffLL / size || o < (-0x7fffffffffffffffLL - 1) / size) return (T*)far;
  const long long bytes = o * size, at = (long long)p;
  if ((bytes > 0 && at > 0x7fffffffffffffffLL - bytes) || (bytes < 0 && at < (-0x7fffffffffffffffLL - 1) - bytes))
    return (T*)far;
  return (T*)(at + bytes);
}

// An assert whose condition fails at linear element `index`.
TG_DEVICE void tg_debug_assert(TgDebug& d, int site, long long index) {
  if (d.stopped) return;
  d.stopped = true;
  tg_debug_report(d.record, d.program, site, -1, 0, 0, index);
}
)PRELUDE";

}  // namespace tegula::backends::cuda
