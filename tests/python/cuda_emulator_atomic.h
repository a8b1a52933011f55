// Host versions of the native atomics of src/backends/cuda/prelude_atomic.h,
// for the CUDA emulator (cuda_emulator.py puts this text between its part 1
// and the generated prelude). Defining TG_EMU_ATOMS makes the prelude leave
// out its PTX `atom` and `fence` functions (and the bf16 add built on
// conversions the emulator replaces) and use these; everything the prelude builds on them
// (float max/min through integer max/min, 16-bit compare-and-swap loops)
// then runs unchanged. The emulator runs a block's threads concurrently, so
// these are real atomics: std::atomic_ref, sequentially consistent whatever
// order was asked (a stronger order is always a correct one). Each atomic
// lets the scheduler switch threads first, so a thread spinning on an atomic
// (a lock) lets the others run.
#define TG_EMU_ATOMS

template <class T, class Next>
inline T tg_emu_atomic_update(T* p, Next next) {
  tg_emu::yield();
  std::atomic_ref<T> word(*p);
  T old = word.load();
  while (!word.compare_exchange_weak(old, next(old))) {
  }
  return old;
}

#define TG_EMU_RMW(NAME, T, EXPR)                        \
  template <int S, int C>                                \
  inline T NAME(T* p, T v) {                             \
    return tg_emu_atomic_update(p, [v](T x) { return static_cast<T>(EXPR); }); \
  }
#define TG_EMU_RMW_INTEGERS(NAME, EXPR)                  \
  TG_EMU_RMW(NAME, int, EXPR)                            \
  TG_EMU_RMW(NAME, unsigned, EXPR)                       \
  TG_EMU_RMW(NAME, long long, EXPR)                      \
  TG_EMU_RMW(NAME, unsigned long long, EXPR)

// Integer arithmetic wraps: add in the unsigned type of the same width.
TG_EMU_RMW(tg_atom_add, int, static_cast<unsigned>(x) + static_cast<unsigned>(v))
TG_EMU_RMW(tg_atom_add, unsigned, x + v)
TG_EMU_RMW(tg_atom_add, long long, static_cast<unsigned long long>(x) + static_cast<unsigned long long>(v))
TG_EMU_RMW(tg_atom_add, unsigned long long, x + v)
TG_EMU_RMW(tg_atom_add, float, x + v)
TG_EMU_RMW(tg_atom_add, double, x + v)
TG_EMU_RMW_INTEGERS(tg_atom_max, x < v ? v : x)
TG_EMU_RMW_INTEGERS(tg_atom_min, v < x ? v : x)
TG_EMU_RMW_INTEGERS(tg_atom_and, x & v)
TG_EMU_RMW_INTEGERS(tg_atom_or, x | v)
TG_EMU_RMW_INTEGERS(tg_atom_xor, x ^ v)
TG_EMU_RMW_INTEGERS(tg_atom_xchg, v)
#undef TG_EMU_RMW_INTEGERS
#undef TG_EMU_RMW

inline float tg_emu_half_to_float(unsigned short h, bool bf16) {
  if (bf16) {
    unsigned bits = static_cast<unsigned>(h) << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  }
  _Float16 x;
  std::memcpy(&x, &h, 2);
  return static_cast<float>(x);
}
inline unsigned short tg_emu_float_to_half(float f, bool bf16) {
  if (bf16) {
    unsigned bits;
    std::memcpy(&bits, &f, 4);
    if (std::isnan(f)) return static_cast<unsigned short>((bits >> 16) | 0x40);
    return static_cast<unsigned short>((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);  // nearest even
  }
  _Float16 x = static_cast<_Float16>(f);
  unsigned short h;
  std::memcpy(&h, &x, 2);
  return h;
}
template <int S, int C>
inline unsigned short tg_atom_add_f16(unsigned short* p, unsigned short v) {
  return tg_emu_atomic_update(p, [v](unsigned short x) {
    return tg_emu_float_to_half(tg_emu_half_to_float(x, false) + tg_emu_half_to_float(v, false), false);
  });
}
template <int S, int C>
inline unsigned short tg_atom_add_bf16(unsigned short* p, unsigned short v) {
  return tg_emu_atomic_update(p, [v](unsigned short x) {
    return tg_emu_float_to_half(tg_emu_half_to_float(x, true) + tg_emu_half_to_float(v, true), true);
  });
}

template <int C>
inline void tg_fence() {
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

template <int S, int C, class T>
inline T tg_atom_cas(T* p, T cmp, T v) {
  tg_emu::yield();
  std::atomic_ref<T>(*p).compare_exchange_strong(cmp, v);
  return cmp;  // the old value whether or not it matched
}
