// Streamed stores, emitted after the prelude only by units that have them
// (codegen_fusion.cpp decides which stores qualify).
//
// A store of a whole contiguous tile normally reads every cache line before
// writing it (the write-allocate of a write-back cache), so a kernel that
// writes N bytes moves 2N. When a launch moves more bytes than the last-level
// cache holds, nothing it writes is still cached when a later kernel reads
// it, so such a tile is computed into a stack buffer and copied out with
// non-temporal stores, which write whole lines without reading them. Whether
// a launch streams is decided per launch from its grid and the bytes one
// program moves (`tg_program_bytes`, a constant of the unit), against the
// last-level cache size read once per process. $TEGULA_STREAM_STORES=0
// turns streaming off and =1 forces it (for measurements).
//
// Non-temporal stores are weakly ordered: the entry point keeps a
// `tg_stream_fence` whose destructor issues an sfence, so every streamed
// byte is globally visible before the entry returns and the thread pool
// reports the launch finished.
#pragma once

#include <string_view>

namespace tegula::backends::cpu {

inline constexpr std::string_view kStreamPrelude = R"PRELUDE(#if defined(__SSE2__)
#include <immintrin.h>
#endif
#include <unistd.h>

// The bytes of the highest-level data cache of CPU 0, as sysfs gives it
// (its `size` reads "32768K"); 0 when sysfs has none.
static inline long tg_sysfs_last_level_cache() {
  long bytes = 0;
  int best = 0;
  for (int index = 0; index < 16; ++index) {
    char path[96], text[32] = {};
    auto read = [&](const char* name) {
      std::snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/%s", index, name);
      FILE* f = std::fopen(path, "r");
      if (f == nullptr) return false;
      bool ok = std::fgets(text, sizeof text, f) != nullptr;
      std::fclose(f);
      return ok;
    };
    if (!read("type") || std::strncmp(text, "Instruction", 11) == 0 || !read("level")) continue;
    int level = std::atoi(text);
    if (level <= best || !read("size")) continue;
    char* unit = nullptr;
    long size = std::strtol(text, &unit, 10);
    long scale = *unit == 'K' ? 1024L : *unit == 'M' ? 1024L * 1024 : *unit == 'G' ? 1024L * 1024 * 1024 : 1;
    if (size > 0) bytes = size * scale, best = level;
  }
  return bytes;
}

// Launches moving more bytes than this stream their stores: the last-level
// cache a core shares. sysfs first: glibc's sysconf may report a whole
// socket's L3 instead (384 MB on a two-vCPU EPYC whose cores share 32 MB),
// which kept launches of up to 384 MB from streaming.
static inline double tg_stream_threshold() {
  static const double threshold = [] {
    if (const char* forced = std::getenv("TEGULA_STREAM_STORES")) {
      if (forced[0] == '0' && forced[1] == '\0') return __builtin_inf();
      if (forced[0] == '1' && forced[1] == '\0') return 0.0;
    }
    long llc = tg_sysfs_last_level_cache();
#if defined(_SC_LEVEL3_CACHE_SIZE)
    if (llc <= 0) llc = sysconf(_SC_LEVEL3_CACHE_SIZE);
    if (llc <= 0) llc = sysconf(_SC_LEVEL2_CACHE_SIZE);
#endif
    return llc > 0 ? (double)llc : 32.0 * 1024 * 1024;
  }();
  return threshold;
}

// Whether this launch streams: its programs together move more than the cache.
static inline bool tg_streams(const int32_t* grid, int64_t program_bytes) {
  return (double)grid[0] * grid[1] * grid[2] * (double)program_bytes > tg_stream_threshold();
}

// Writes the 64-byte line at `d` (line-aligned) from `s` without reading it.
static inline void tg_stream_line(unsigned char* d, const unsigned char* s) {
#if defined(__AVX512F__)
  _mm512_stream_si512(reinterpret_cast<__m512i*>(d), _mm512_loadu_si512(s));
#elif defined(__AVX__)
  _mm256_stream_si256(reinterpret_cast<__m256i*>(d), _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s)));
  _mm256_stream_si256(reinterpret_cast<__m256i*>(d + 32), _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + 32)));
#elif defined(__SSE2__)
  for (int k = 0; k < 64; k += 16)
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + k), _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + k)));
#else
  std::memcpy(d, s, 64);
#endif
}

// Streams `lines` whole lines from `s` to the line-aligned `d`. NumPy's large
// arrays start 16 bytes past a line, so a tile staged in an aligned buffer
// is read 16 bytes off its lines, and each line's load would straddle two
// (a third of a streamed softmax's compute on a Zen 4). Where `s` is 4-byte
// aligned, each aligned line of the source is loaded once and two of them
// are merged into the one to write; the bytes are the same.
static inline void tg_stream_lines(unsigned char* d, const unsigned char* s, int64_t lines) {
#if defined(__AVX512F__)
  const uintptr_t offset = reinterpret_cast<uintptr_t>(s) & 63;
  if (lines > 0 && offset != 0 && offset % 4 == 0) {
    const unsigned char* aligned = s - offset;  // every line read holds bytes of s
    const __m512i pick = _mm512_add_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                                          _mm512_set1_epi32((int)(offset / 4)));
    __m512i low = _mm512_load_si512(reinterpret_cast<const __m512i*>(aligned));
    for (int64_t k = 0; k < lines; ++k) {
      const __m512i high = _mm512_load_si512(reinterpret_cast<const __m512i*>(aligned + 64 * (k + 1)));
      _mm512_stream_si512(reinterpret_cast<__m512i*>(d + 64 * k), _mm512_permutex2var_epi32(low, pick, high));
      low = high;
    }
    return;
  }
#endif
  for (int64_t k = 0; k < lines; ++k) tg_stream_line(d + 64 * k, s + 64 * k);
}

// Copies `bytes` from `src` to `dst` with non-temporal stores for the whole
// 64-byte lines of dst (ordinary stores for a partial line at either end).
static inline void tg_stream_store(void* dst, const void* src, int64_t bytes) {
  unsigned char* d = static_cast<unsigned char*>(dst);
  const unsigned char* s = static_cast<const unsigned char*>(src);
  int64_t head = (int64_t)((64 - (reinterpret_cast<uintptr_t>(d) & 63)) & 63);
  if (head > bytes) head = bytes;
  std::memcpy(d, s, (size_t)head);
  d += head, s += head, bytes -= head;
  tg_stream_lines(d, s, bytes / 64);
  d += bytes / 64 * 64, s += bytes / 64 * 64;
  std::memcpy(d, s, (size_t)(bytes % 64));
}

// The partial line at the end of a streamed tile, held back for the next
// program of the thread: NumPy's large arrays start 16 bytes past a line,
// so consecutive programs' tiles share a line at each boundary, and two
// ordinary partial writes of it read the line from memory first. Held
// here, the next program's head completes it and it is streamed whole.
// What is still held when the entry returns is written by the destructor
// (before the entry's fence).
struct tg_line_carry {
  unsigned char* line = nullptr;  // the held line; null when nothing is held
  int64_t filled = 0;             // its bytes [0, filled) are held
  alignas(64) unsigned char bytes[64];

  tg_line_carry() = default;
  tg_line_carry(const tg_line_carry&) = delete;
  tg_line_carry& operator=(const tg_line_carry&) = delete;
  ~tg_line_carry() { flush(); }
  void flush() {
    if (line != nullptr) std::memcpy(line, bytes, (size_t)filled);
    line = nullptr;
  }
  // Before the program reads or writes `size` bytes at `p`: the held bytes
  // go to memory first if `p` lies in the held line.
  void flush_if_holds(const void* p, size_t size) {
    const uintptr_t first = reinterpret_cast<uintptr_t>(p), start = reinterpret_cast<uintptr_t>(line);
    if (line != nullptr && first < start + 64 && first + size > start) flush();
  }
};

// The same copy in parts, as a loop fills `src`: once bytes [0, to) of it
// are final, streams the whole lines of dst that end past `from` and by
// `to`, so each line goes out once, as soon as it is complete, and the
// writes overlap the loop's work instead of following it as a burst. The
// call with `to` == `bytes` also writes the partial lines at either end:
// with a `carry`, the head completes the line the thread's last tile left
// there, and the tail is held for the next tile.
static inline void tg_stream_store_part(void* dst, const void* src, int64_t bytes, int64_t from, int64_t to,
                                        tg_line_carry* carry) {
  unsigned char* d = static_cast<unsigned char*>(dst);
  const unsigned char* s = static_cast<const unsigned char*>(src);
  const int64_t to_boundary = (int64_t)((64 - (reinterpret_cast<uintptr_t>(d) & 63)) & 63);
  const int64_t head = to_boundary > bytes ? bytes : to_boundary;
  // The whole lines start at head + 64 k; the first to write ends past `from`.
  int64_t line = from - 63 - head <= 0 ? head : head + (from - 63 - head + 63) / 64 * 64;
  if (line + 64 <= to) tg_stream_lines(d + line, s + line, (to - line) / 64);
  if (to < bytes) return;
  const int64_t tail = head + (bytes - head) / 64 * 64;
  if (carry == nullptr) {
    std::memcpy(d, s, (size_t)head);
    std::memcpy(d + tail, s + tail, (size_t)(bytes - tail));
    return;
  }
  if (head > 0) {
    unsigned char* head_line = d + head - 64;
    if (head == to_boundary && carry->line == head_line && carry->filled == 64 - head) {
      std::memcpy(carry->bytes + carry->filled, s, (size_t)head);
      tg_stream_line(head_line, carry->bytes);
      carry->line = nullptr;
    } else {
      carry->flush();  // first, in case it holds bytes of this same line
      std::memcpy(d, s, (size_t)head);
    }
  }
  if (tail < bytes) {
    carry->flush();
    carry->line = d + tail;
    carry->filled = bytes - tail;
    std::memcpy(carry->bytes, s + tail, (size_t)carry->filled);
  }
}

// Next tiles (codegen_fusion.cpp): a program that reads a row in place
// waits for it in its first loop and then computes from cache with no
// memory traffic, so time per row is memory time plus compute time, and
// the hardware prefetcher, which stops at 4 KB pages, does not fetch the
// next row. Programs of one thread run in order, so the row the next one
// reads is predicted from the last two this thread read (`last`, kept by
// the entry), and later loops fetch it into L2 while they compute.
// Only a launch that streams does this; a prediction that misses (the
// first program of a chunk) costs a few prefetches, which never fault.
static inline const char* tg_next_tile(const char*& last, const void* now, bool streams) {
  const char* here = static_cast<const char*>(now);
  const char* next = nullptr;
  if (streams && last != nullptr)  // in integers: the guess may lie outside every array
    next = reinterpret_cast<const char*>(2 * reinterpret_cast<uintptr_t>(here) - reinterpret_cast<uintptr_t>(last));
  last = here;
  return next;
}

// Fetches `bytes` (whole lines) from `offset` on of `tile` into L2; a null
// tile does nothing. Forced inline: g++ does not inline it into a program
// compiled under another target pragma, and then drops the call, which has
// no effect it can see.
__attribute__((always_inline)) static inline void tg_prefetch(const char* tile, int64_t offset, int64_t bytes) {
  if (tile == nullptr) return;
  for (int64_t k = offset; k < offset + bytes; k += 64) __builtin_prefetch(tile + k, 0, 2);
}


// Makes this thread's streamed stores visible to every thread when it goes.
struct tg_stream_fence {
  tg_stream_fence() = default;
  tg_stream_fence(const tg_stream_fence&) = delete;
  tg_stream_fence& operator=(const tg_stream_fence&) = delete;
  ~tg_stream_fence() {
#if defined(__SSE2__)
    _mm_sfence();
#endif
  }
};
)PRELUDE";

}  // namespace tegula::backends::cpu
