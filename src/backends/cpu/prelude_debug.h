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
// A printed tile's elements as 8-byte cells (double, long long or unsigned
// long long), in a buffer each thread reuses; null when it cannot grow.
struct TgPrintCells {
  void* data = nullptr;
  size_t capacity = 0;
  ~TgPrintCells() { std::free(data); }
};
static void* tg_print_cells(size_t n) {
  static thread_local TgPrintCells cells;
  if (n * 8 > cells.capacity) {
    void* grown = std::realloc(cells.data, n * 8);
    if (grown == nullptr) return nullptr;
    cells.data = grown;
    cells.capacity = n * 8;
  }
  return cells.data;
}
// A tile as Triton-CPU prints it, torch-like: `(x, y, z)<prefix>[a, b, ...]`,
// eight elements a line, nested brackets per dimension, continuation lines
// indented under the first element; integers right-aligned to the widest
// (one more column when some are negative), floats the same with four
// decimals, or `%.4e` when their integer parts differ by more than three
// digits or need more than eight columns; hex as 0x and `hex_digits` digits.
enum TgPrintKind { TG_PRINT_FLOAT, TG_PRINT_SIGNED, TG_PRINT_UNSIGNED };
struct TgPrintFormat {
  int kind;
  int hex_digits;
  int max_digits;
  bool negative;
  bool scientific;
};
static int tg_print_digits(unsigned long long v) {
  int digits = 1;
  for (; v >= 10; v /= 10) ++digits;
  return digits;
}
// The digits of element i's integer part (3 for NaN and infinities); whether it is negative.
static int tg_print_digits(int kind, const void* cells, size_t i, bool* negative) {
  if (kind == TG_PRINT_FLOAT) {
    double v = static_cast<const double*>(cells)[i];
    *negative = v < 0;
    if (!(v == v) || v - v != 0) return 3;
    double a = v < 0 ? -v : v;
    return a < 10 ? 1 : (int)std::log10(a) + 1;
  }
  if (kind == TG_PRINT_SIGNED) {
    long long v = static_cast<const long long*>(cells)[i];
    *negative = v < 0;
    return tg_print_digits(v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v);
  }
  *negative = false;
  return tg_print_digits(static_cast<const unsigned long long*>(cells)[i]);
}
static void tg_print_element(const TgPrintFormat& f, const void* cells, size_t i) {
  if (f.hex_digits > 0) {
    tg_print("0x%0*llx", f.hex_digits, static_cast<const unsigned long long*>(cells)[i]);
    return;
  }
  bool negative = false;
  int digits = tg_print_digits(f.kind, cells, i, &negative);
  int pad = f.negative && !negative ? 1 : 0;
  if (f.kind == TG_PRINT_FLOAT && f.scientific) {
    tg_print("%*s%.4e", pad, "", static_cast<const double*>(cells)[i]);
    return;
  }
  pad += f.max_digits - digits;
  if (f.kind == TG_PRINT_FLOAT) tg_print("%*s%.4f", pad, "", static_cast<const double*>(cells)[i]);
  else if (f.kind == TG_PRINT_SIGNED) tg_print("%*s%lld", pad, "", static_cast<const long long*>(cells)[i]);
  else tg_print("%*s%llu", pad, "", static_cast<const unsigned long long*>(cells)[i]);
}
static void tg_print_block(const TgPrintFormat& f, const void* cells, size_t& next, int rank, const int64_t* shape,
                           int indent) {
  tg_print("[");
  for (int64_t k = 0; k < shape[0]; ++k) {
    if (rank > 1) tg_print_block(f, cells, next, rank - 1, shape + 1, indent + 1);
    else tg_print_element(f, cells, next++);
    if (k == shape[0] - 1) break;
    if (rank > 1 || (shape[0] > 8 && k % 8 == 7)) tg_print(",\n%*s", indent + 1, "");
    else tg_print(", ");
  }
  tg_print("]");
}
static void tg_print_tile(int pid_x, int pid_y, int pid_z, const char* prefix, const void* cells, int rank,
                          const int64_t* shape, int kind, int hex_digits) {
  if (cells == nullptr) return;
  size_t n = 1;
  for (int d = 0; d < rank; ++d) n *= (size_t)shape[d];
  TgPrintFormat f{kind, hex_digits, 0, false, false};
  int min_digits = 1 << 30;
  for (size_t i = 0; i < n; ++i) {
    bool negative = false;
    int digits = tg_print_digits(kind, cells, i, &negative);
    f.negative = f.negative || negative;
    f.max_digits = digits > f.max_digits ? digits : f.max_digits;
    min_digits = digits < min_digits ? digits : min_digits;
  }
  f.scientific = kind == TG_PRINT_FLOAT && (f.max_digits + 2 + (f.negative ? 1 : 0) > 8 || f.max_digits - min_digits > 3);
  int indent = std::snprintf(nullptr, 0, "(%d, %d, %d)%s", pid_x, pid_y, pid_z, prefix);
  tg_print("(%d, %d, %d)%s", pid_x, pid_y, pid_z, prefix);
  size_t next = 0;
  tg_print_block(f, cells, next, rank, shape, indent);
  tg_print("\n");
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
