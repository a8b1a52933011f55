// Helpers for the debugging features of generated CPU code, emitted only by
// the kernels that use them, so every other kernel's source stays as it was:
//
//  * kDebugPrelude (debug mode, docs/debug-mode.md), after
//    c_family::kDebugRecord (the error record the runtime reads after a
//    launch and the extent tests, shared with the CUDA backend): a
//    program's view of debug mode, the report of an error and the checks
//    every load, store, atomic and assert of a debug kernel calls.
//  * kPrintPrelude (kernels with print ops): the per-thread buffer a
//    program's printed lines go to; the entry point writes it out with one
//    fwrite when the program ends, so a program's lines come out together.
#pragma once

#include <string_view>

namespace tegula::backends::cpu {

// After c_family::kDebugRecord.
inline constexpr std::string_view kDebugPrelude = R"PRELUDE(
// One program instance's view of debug mode.
struct TgDebug {
  TgDebugRecord* record;
  const TgExtent* extents;  // indexed by parameter
  int64_t program;
  int32_t pid[3];
  bool stopped;             // after its first error a program touches no memory
};

// Records an error of this program and stops it. The record keeps the error
// of the smallest linear program id (then site, then element), so which one
// is reported does not depend on thread timing.
static void tg_debug_report(TgDebug& d, int32_t site, int32_t param, int64_t offset, int64_t size, int64_t index) {
  d.stopped = true;
  TgDebugRecord* r = d.record;
  if (r == nullptr) return;
  while (__atomic_exchange_n(&r->lock, 1, __ATOMIC_ACQUIRE) != 0) {
  }
  bool earlier = !r->reported || d.program < r->program ||
                 (d.program == r->program && (site < r->site || (site == r->site && index < r->index)));
  if (earlier) {
    r->program = d.program;
    r->site = site;
    r->param = param;
    r->pid[0] = d.pid[0];
    r->pid[1] = d.pid[1];
    r->pid[2] = d.pid[2];
    r->offset = offset;
    r->size = size;
    r->index = index;
    r->reported = 1;
  }
  __atomic_store_n(&r->lock, 0, __ATOMIC_RELEASE);
}

// Whether an access of `size` bytes at `p` may happen: the program has not
// stopped and `p` lies in the array of one of the parameters it may derive
// from (First, Rest...). Otherwise the error is recorded against the one of
// those arrays it is nearest to.
template <int First, int... Rest>
static inline bool tg_access(TgDebug& d, const void* p, uint64_t size, int32_t site) {
  if (d.stopped) return false;
  if ((tg_inside(d.extents[First], p, size) || ... || tg_inside(d.extents[Rest], p, size))) return true;
  int32_t param = First;
  const int32_t candidates[] = {First, Rest...};
  for (size_t k = 1; k < sizeof(candidates) / sizeof(candidates[0]); ++k)
    if (tg_outside_by(d.extents[candidates[k]], p, size) < tg_outside_by(d.extents[param], p, size))
      param = candidates[k];
  const TgExtent& e = d.extents[param];
  const int64_t bytes = (int64_t)((uint64_t)(uintptr_t)p - e.base);
  const int64_t width = (int64_t)size;
  const int64_t offset = bytes >= 0 ? bytes / width : -((width - 1 - bytes) / width);  // floor
  tg_debug_report(d, site, param, offset, (int64_t)(e.bytes / size), 0);
  return false;
}

// ptr + off (in elements) in debug mode. Where the offset's bytes do not fit
// in 64 bits, or carry the address out of the address space, plain
// tg_addptr wraps, maybe into the array itself (x + 2**62 + 1 reads x[1]):
// here the result is instead the highest aligned address below 2**63, which
// no array holds, so the access through it is reported (past the array's end).
template <class T, class I> static inline T* tg_addptr_checked(T* p, I off) {
  int64_t bytes = 0;
  intptr_t at = 0;
  if (__builtin_mul_overflow((int64_t)off, (int64_t)sizeof(T), &bytes) ||
      __builtin_add_overflow((intptr_t)p, (intptr_t)bytes, &at))
    return reinterpret_cast<T*>((uintptr_t)INTPTR_MAX & ~(uintptr_t)(alignof(T) - 1));
  return reinterpret_cast<T*>(at);
}

// An assert whose condition fails at flat element `index`.
static inline void tg_debug_assert(TgDebug& d, int32_t site, int64_t index) {
  if (!d.stopped) tg_debug_report(d, site, -1, 0, 0, index);
}
)PRELUDE";

inline constexpr std::string_view kPrintPrelude = R"PRELUDE(
// ---- print: one buffer per thread, written out when a program ends ----
#include <cstdarg>
struct TgPrintBuffer {
  char* data = nullptr;
  size_t size = 0;
  size_t capacity = 0;
  ~TgPrintBuffer() { std::free(data); }
};
static TgPrintBuffer& tg_print_buffer() {
  static thread_local TgPrintBuffer buffer;
  return buffer;
}
// Appends one formatted line to this thread's buffer.
static void tg_print(const char* format, ...) {
  TgPrintBuffer& b = tg_print_buffer();
  for (int attempt = 0; attempt < 2; ++attempt) {
    va_list args;
    va_start(args, format);
    int n = std::vsnprintf(b.data ? b.data + b.size : nullptr, b.data ? b.capacity - b.size : 0, format, args);
    va_end(args);
    if (n < 0) return;
    if (b.data && b.size + (size_t)n < b.capacity) {
      b.size += (size_t)n;
      return;
    }
    size_t wanted = std::max(b.capacity * 2, b.size + (size_t)n + 1024);
    char* grown = static_cast<char*>(std::realloc(b.data, wanted));
    if (grown == nullptr) return;
    b.data = grown;
    b.capacity = wanted;
  }
}
// Writes out what this thread's program printed, in one piece.
static void tg_print_flush() {
  TgPrintBuffer& b = tg_print_buffer();
  if (b.size == 0) return;
  std::fwrite(b.data, 1, b.size, stdout);
  std::fflush(stdout);
  b.size = 0;
}
)PRELUDE";

}  // namespace tegula::backends::cpu
