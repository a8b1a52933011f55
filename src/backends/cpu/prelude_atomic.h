// The helpers generated CPU code calls for `atomic_rmw` and `atomic_cas`,
// emitted after the prelude only by units that use atomics (so every other
// kernel's source, and its golden text, stays as it was).
//
// Programs run concurrently on the runtime's worker threads, so these are
// real atomic instructions: the GCC/Clang `__atomic` builtins, with the
// memory order as a template argument (the builtins need a constant). Scope
// means nothing on the CPU: every order is process-wide.
//
// Integer add/and/or/xor/xchg are native read-modify-writes on the unsigned
// type of the element's width (so they wrap). Everything else (integer
// max/min, float and half add/max/min) is a compare-and-swap loop on the
// element's bits that always writes, so it has the full read-modify-write
// semantics of its memory order. Float max/min order by IEEE-754 totalOrder
// on the bits (-NaN < -inf < ... < -0.0 < +0.0 < ... < +inf < +NaN), which is
// what the CUDA backend's signed/unsigned integer atomics compute.
#pragma once

#include <string_view>

namespace tegula::backends::cpu {

inline constexpr std::string_view kAtomicPrelude = R"PRELUDE(
// ---- atomics ----
// The element's bits, as integers that may alias any type (float memory is
// updated through them).
template <int Bytes> struct tg_atomic_word;
template <> struct tg_atomic_word<2> { typedef uint16_t type; typedef uint16_t __attribute__((may_alias)) alias; };
template <> struct tg_atomic_word<4> { typedef uint32_t type; typedef uint32_t __attribute__((may_alias)) alias; };
template <> struct tg_atomic_word<8> { typedef uint64_t type; typedef uint64_t __attribute__((may_alias)) alias; };
template <class T> using tg_word = typename tg_atomic_word<sizeof(T)>::type;
template <class T> static inline typename tg_atomic_word<sizeof(T)>::alias* tg_word_ptr(T* p) {
  return reinterpret_cast<typename tg_atomic_word<sizeof(T)>::alias*>(p);
}

// A compare-and-swap that fails only reads: its order is the load part of O.
template <int O> struct tg_failure_order {
  static constexpr int value = O == __ATOMIC_ACQ_REL ? __ATOMIC_ACQUIRE : O == __ATOMIC_RELEASE ? __ATOMIC_RELAXED : O;
};

// Native read-modify-writes on integers.
template <int O, class T> static inline T tg_atomic_add(T* p, T v) {
  return (T)__atomic_fetch_add(tg_word_ptr(p), (tg_word<T>)v, O);
}
template <int O, class T> static inline T tg_atomic_and(T* p, T v) {
  return (T)__atomic_fetch_and(tg_word_ptr(p), (tg_word<T>)v, O);
}
template <int O, class T> static inline T tg_atomic_or(T* p, T v) {
  return (T)__atomic_fetch_or(tg_word_ptr(p), (tg_word<T>)v, O);
}
template <int O, class T> static inline T tg_atomic_xor(T* p, T v) {
  return (T)__atomic_fetch_xor(tg_word_ptr(p), (tg_word<T>)v, O);
}

// Exchange and compare-and-swap move bits, for every element type.
template <int O, class T> static inline T tg_atomic_xchg(T* p, T v) {
  return tg_bitcast<T>(__atomic_exchange_n(tg_word_ptr(p), tg_bitcast<tg_word<T>>(v), O));
}
template <int O, class T> static inline T tg_atomic_cas(T* p, T cmp, T v) {
  tg_word<T> expected = tg_bitcast<tg_word<T>>(cmp);
  __atomic_compare_exchange_n(tg_word_ptr(p), &expected, tg_bitcast<tg_word<T>>(v), false, O,
                              tg_failure_order<O>::value);
  return tg_bitcast<T>(expected);  // the old value whether or not it matched
}

// Replaces *p by next(*p) in one step; returns the old value.
template <int O, class T, class Next> static inline T tg_atomic_update(T* p, Next next) {
  auto* word = tg_word_ptr(p);
  tg_word<T> old = __atomic_load_n(word, tg_failure_order<O>::value);
  while (!__atomic_compare_exchange_n(word, &old, tg_bitcast<tg_word<T>>(next(tg_bitcast<T>(old))), true, O,
                                      tg_failure_order<O>::value)) {
  }
  return tg_bitcast<T>(old);
}

template <int O, class T> static inline T tg_atomic_max(T* p, T v) {
  return tg_atomic_update<O>(p, [v](T x) { return x < v ? v : x; });
}
template <int O, class T> static inline T tg_atomic_min(T* p, T v) {
  return tg_atomic_update<O>(p, [v](T x) { return v < x ? v : x; });
}

// IEEE totalOrder of a float's bits as a signed integer: negative values
// have their magnitude bits flipped, so larger magnitudes sort lower.
template <class W> static inline typename std::make_signed<W>::type tg_total_order_key(W bits) {
  typedef typename std::make_signed<W>::type S;
  S s = (S)bits;
  S magnitude = (S)(((W)1 << (8 * sizeof(W) - 1)) - 1);
  return (S)(s ^ (s < 0 ? magnitude : (S)0));
}
// T: float, double, or uint16_t holding f16/bf16 bits.
template <int O, class T> static inline T tg_atomic_fmax(T* p, T v) {
  return tg_atomic_update<O>(p, [v](T x) {
    return tg_total_order_key(tg_bitcast<tg_word<T>>(x)) < tg_total_order_key(tg_bitcast<tg_word<T>>(v)) ? v : x;
  });
}
template <int O, class T> static inline T tg_atomic_fmin(T* p, T v) {
  return tg_atomic_update<O>(p, [v](T x) {
    return tg_total_order_key(tg_bitcast<tg_word<T>>(v)) < tg_total_order_key(tg_bitcast<tg_word<T>>(x)) ? v : x;
  });
}

template <int O, class F> static inline F tg_atomic_fadd(F* p, F v) {
  return tg_atomic_update<O>(p, [v](F x) { return x + v; });
}
template <int O> static inline uint16_t tg_atomic_f16_add(uint16_t* p, uint16_t v) {
  return tg_atomic_update<O>(p, [v](uint16_t x) { return tg_f32_to_f16(tg_f16_to_f32(x) + tg_f16_to_f32(v)); });
}
template <int O> static inline uint16_t tg_atomic_bf16_add(uint16_t* p, uint16_t v) {
  return tg_atomic_update<O>(p, [v](uint16_t x) { return tg_f32_to_bf16(tg_bf16_to_f32(x) + tg_bf16_to_f32(v)); });
}
)PRELUDE";

}  // namespace tegula::backends::cpu
