// Random numbers: Philox and Triton's functions on top of it (see
// builtins_random.h).
//
// Philox-4xW (Salmon et al., "Parallel Random Numbers: As Easy as 1, 2, 3",
// SC 2011) maps a counter of four W-bit words and a key of two words to
// four random words, so each element of a tile gets its own independent
// numbers from (seed, offset) with no state to carry. One round, with the
// public round multipliers A, B and Weyl increments KA, KB of the width:
//
//   c0, c1, c2, c3 = hi(B * c2) ^ c1 ^ k0,  lo(B * c2),  hi(A * c0) ^ c3 ^ k1,  lo(A * c0)
//   k0, k1 = k0 + KA, k1 + KB
//
// Triton's key and counter assignment, which these functions follow so that
// the same seed and offsets give the same bits:
//  * the seed is widened to 64 bits (sign-extended when signed); 32-bit
//    words take its low half as k0 and its high half as k1, 64-bit words
//    take the whole seed as k0 and 0 as k1;
//  * randint4x(seed, offset) runs Philox-4x32 on the counter (low 32 bits of
//    the offset, its high 32 bits, 0, 0): a 32-bit offset's high word is 0,
//    and a 64-bit offset gives 32-bit words too (Triton since May 2025; it
//    ran Philox-4x64 before); the offset's bits are the counter (a negative
//    offset is its bit pattern). tl.philox and tl.philox_impl still run
//    Philox-4x64 on 64-bit counters;
//  * uint_to_uniform_float(x) reads x as signed, maps negative x to -x - 1
//    (= ~x) and scales by a constant just below 2^-31 (2^-63): a float in
//    [0, 1). The integer-to-float conversion and the product are each one
//    IEEE rounding, so both backends give the same bits;
//  * randn is the first half of a Box-Muller pair of the first two words;
//    its log, sqrt, cos and sin are the backends' math functions, so its last
//    bits may differ between the CPU and the GPU.
#include "frontend/builtins_random.h"

#include <cmath>

#include "frontend/type_rules.h"
#include "support/diagnostic.h"

namespace tegula::frontend {

using ir::OpKind;
using ir::Scalar;

namespace {

constexpr int64_t kDefaultRounds = 10;
constexpr int64_t kMaxRounds = 64;

// The constants of Philox-4x32 and Philox-4x64.
struct PhiloxWidth {
  Scalar word;
  uint64_t round_a, round_b;  // multipliers of c0 and c2
  uint64_t key_a, key_b;      // added to k0 and k1 after each round
};
constexpr PhiloxWidth kPhilox32 = {Scalar::U32, 0xD2511F53u, 0xCD9E8D57u, 0x9E3779B9u, 0xBB67AE85u};
constexpr PhiloxWidth kPhilox64 = {Scalar::U64, 0xD2E7470EE14C6C93ull, 0xCA5A826395121157ull,
                                   0x9E3779B97F4A7C15ull, 0xBB67AE8584CAA73Bull};

// The word width a counter symbol asks for: its bit width, or for a
// constant the width Triton gives it (32 bits when it fits in 32 bits).
int counter_bits(Lowerer& l, const Symbol& c, const SourceLoc& loc, const std::string& callee) {
  if (c.is_const() && (c.constant.kind == ConstValue::Kind::Int || c.constant.kind == ConstValue::Kind::Bool)) {
    bool fits32 = !c.constant.is_unsigned && c.constant.i >= INT32_MIN && c.constant.i <= int64_t{UINT32_MAX};
    return fits32 ? 32 : 64;
  }
  ir::ValueId v = l.to_value(c, loc, "a counter of tl." + callee);
  const ir::Type t = l.type(v);
  if (t.is_pointer() || !ir::is_integer(t.scalar) || t.scalar == Scalar::I1)
    error_at(loc, Diag::NotInteger, "the counters of tl." + callee + " must be integers, but one is " + l.describe(c),
             "use the element offsets, e.g. pid * BLOCK + tl.arange(0, BLOCK)");
  int bits = ir::bit_width(t.scalar);
  if (bits != 32 && bits != 64)
    error_at(loc, Diag::UnsupportedElementType,
             "tl." + callee + " needs 32- or 64-bit counters, but one is " + triton_name(t.scalar),
             "convert it with .to(tl.int32) or .to(tl.int64)");
  return bits;
}

class Philox {
 public:
  Philox(Lowerer& l, const SourceLoc& loc, const std::string& callee, int bits)
      : l_(l), loc_(loc), callee_(callee), width_(bits == 64 ? kPhilox64 : kPhilox32) {}

  Scalar word() const { return width_.word; }

  // A counter or key as a word: an integer of the word's width keeps its
  // bits (Triton bitcasts), a constant is taken modulo 2^width.
  ir::ValueId as_word(const Symbol& s, const SourceLoc& loc) {
    if (s.is_const() && (s.constant.kind == ConstValue::Kind::Int || s.constant.kind == ConstValue::Kind::Bool))
      return word_constant(static_cast<uint64_t>(s.constant.i));
    int bits = counter_bits(l_, s, loc, callee_);
    if (bits != ir::bit_width(width_.word))
      error_at(loc, Diag::DtypeMismatch, "the counters and keys of tl." + callee_ + " must all have " +
                        std::to_string(ir::bit_width(width_.word)) + " bits, but one has " + std::to_string(bits),
               "convert them to one width with .to(...)");
    ir::ValueId v = l_.to_value(s, loc, "a counter of tl." + callee_);
    if (l_.type(v).scalar == width_.word) return v;
    return l_.create(OpKind::Bitcast, {v}, l_.type(v).with_scalar(width_.word), loc);
  }

  // The key Triton derives from a seed (see the top of the file).
  std::pair<ir::ValueId, ir::ValueId> key_of_seed(const Symbol& seed, const SourceLoc& loc) {
    ir::ValueId s = l_.to_value(seed, loc, "the seed of tl." + callee_);
    const ir::Type t = l_.type(s);
    if (t.is_pointer() || !ir::is_integer(t.scalar))
      error_at(loc, Diag::NotInteger,
               "the seed of tl." + callee_ + " must be an integer, but it is " + l_.describe(seed),
               "pass an int seed argument, e.g. `seed` with kernel[grid](..., seed=1234)");
    ir::ValueId wide = l_.cast(s, Scalar::U64, loc);
    if (width_.word == Scalar::U64) return {wide, word_constant(0)};
    ir::ValueId high = l_.create(OpKind::Shr, {wide, l_.broadcast_to(u64_constant(32), t.shape, loc)},
                                 l_.type(wide), loc);
    return {l_.cast(wide, Scalar::U32, loc), l_.cast(high, Scalar::U32, loc)};
  }

  // n rounds on counter c and key k; results have `shape` (the broadcast
  // shape of all inputs).
  std::vector<ir::ValueId> run(std::vector<ir::ValueId> c, ir::ValueId k0, ir::ValueId k1, int64_t rounds,
                               const std::vector<int64_t>& shape) {
    for (int64_t r = 0; r < rounds; ++r) {
      ir::ValueId product_b = mul(word_constant(width_.round_b), c[2]);
      ir::ValueId product_a = mul(word_constant(width_.round_a), c[0]);
      ir::ValueId high_b = umulhi(word_constant(width_.round_b), c[2]);
      ir::ValueId high_a = umulhi(word_constant(width_.round_a), c[0]);
      c = {xor_(xor_(high_b, c[1]), k0), product_b, xor_(xor_(high_a, c[3]), k1), product_a};
      k0 = add(k0, word_constant(width_.key_a));
      k1 = add(k1, word_constant(width_.key_b));
    }
    for (ir::ValueId& v : c) v = l_.broadcast_to(v, shape, loc_);
    return c;
  }

 private:
  ir::ValueId word_constant(uint64_t v) {
    if (width_.word == Scalar::U32) v &= 0xffffffffu;
    return l_.constant(ConstValue::integer(static_cast<int64_t>(v)), ir::Type::of(width_.word), loc_);
  }
  ir::ValueId u64_constant(uint64_t v) {
    return l_.constant(ConstValue::integer(static_cast<int64_t>(v)), ir::Type::of(Scalar::U64), loc_);
  }
  ir::ValueId binary(OpKind kind, ir::ValueId a, ir::ValueId b) {
    auto [x, y] = l_.broadcast_pair(a, b, loc_);
    return l_.create(kind, {x, y}, l_.type(x), loc_);
  }
  ir::ValueId mul(ir::ValueId a, ir::ValueId b) { return binary(OpKind::Mul, a, b); }
  ir::ValueId umulhi(ir::ValueId a, ir::ValueId b) { return binary(OpKind::UMulHi, a, b); }
  ir::ValueId xor_(ir::ValueId a, ir::ValueId b) { return binary(OpKind::Xor, a, b); }
  ir::ValueId add(ir::ValueId a, ir::ValueId b) { return binary(OpKind::Add, a, b); }

  Lowerer& l_;
  SourceLoc loc_;
  std::string callee_;
  PhiloxWidth width_;
};

int64_t rounds_of(Lowerer& l, const BoundArgs& a, const std::string& callee) {
  if (!a.has("n_rounds")) return kDefaultRounds;
  int64_t n = l.to_int_const(a.get("n_rounds"), a.loc("n_rounds"), "n_rounds of tl." + callee);
  if (n < 0 || n > kMaxRounds)
    error_at(a.loc("n_rounds"), Diag::ArgumentOutOfRange,
             "n_rounds of tl." + callee + " must be between 0 and " + std::to_string(kMaxRounds) +
                                    ", got " + std::to_string(n),
             "Philox is designed for 10 rounds (the default); 7 is the fewest that pass the usual statistical tests");
  return n;
}

std::vector<int64_t> shape_of(Lowerer& l, const Symbol& s) {
  return s.is_value() ? l.type(s.value).shape : std::vector<int64_t>{};
}

// The broadcast shape of the given symbols (error at loc if none exists).
std::vector<int64_t> common_shape(Lowerer& l, const std::vector<Symbol>& symbols, const SourceLoc& loc,
                                  const std::string& callee) {
  std::vector<int64_t> shape;
  for (const Symbol& s : symbols) {
    std::string why;
    auto joined = broadcast_shapes(shape, shape_of(l, s), &why);
    if (!joined) error_at(loc, Diag::ShapesDoNotBroadcast,
                          "the arguments of tl." + callee + " do not broadcast together: " + why);
    shape = *joined;
  }
  return shape;
}

Symbol tuple_of(const std::vector<ir::ValueId>& values) {
  std::vector<Symbol> items;
  for (ir::ValueId v : values) items.push_back(Symbol::of(v));
  return Symbol::tuple(std::move(items));
}

// Four random 32-bit words of (seed, offset): Philox-4x32 on the counter
// (low half of the offset, its high half, 0, 0).
std::vector<ir::ValueId> randint4x(Lowerer& l, const BoundArgs& a, const CallArgs& c, const std::string& callee) {
  const Symbol& offset = a.get("offset");
  const SourceLoc& at = a.loc("offset");
  bool wide = counter_bits(l, offset, at, callee) == 64;
  Philox philox(l, c.loc, callee, 32);
  auto [k0, k1] = philox.key_of_seed(a.get("seed"), a.loc("seed"));
  auto constant = [&](uint64_t v) { return philox.as_word(Symbol::of(ConstValue::integer(static_cast<int64_t>(v))), at); };
  ir::ValueId zero = constant(0);
  ir::ValueId low = zero, high = zero;
  if (!wide) {
    low = philox.as_word(offset, at);
  } else if (offset.is_const()) {
    uint64_t bits = static_cast<uint64_t>(offset.constant.i);
    low = constant(bits & 0xffffffffu);
    high = constant(bits >> 32);
  } else {
    ir::ValueId v = l.to_value(offset, at, "the offset of tl." + callee);
    if (l.type(v).scalar != Scalar::U64) v = l.create(OpKind::Bitcast, {v}, l.type(v).with_scalar(Scalar::U64), at);
    ir::Type t = l.type(v);
    ir::ValueId shift = l.broadcast_to(l.constant(ConstValue::integer(32), ir::Type::of(Scalar::U64), at), t.shape, at);
    low = l.cast(v, Scalar::U32, at);
    high = l.cast(l.create(OpKind::Shr, {v, shift}, t, at), Scalar::U32, at);
  }
  std::vector<ir::ValueId> counter = {low, high, zero, zero};
  std::vector<int64_t> shape = common_shape(l, {a.get("seed"), offset}, c.loc, callee);
  return philox.run(counter, k0, k1, rounds_of(l, a, callee), shape);
}

// A random word as a float in [0, 1): ~x for negative x (read as signed),
// then one conversion and one product, both correctly rounded.
ir::ValueId uniform_float(Lowerer& l, ir::ValueId x, const SourceLoc& loc, const std::string& callee) {
  const ir::Type t = l.type(x);
  if (t.is_pointer() || !ir::is_integer(t.scalar) || (ir::bit_width(t.scalar) != 32 && ir::bit_width(t.scalar) != 64))
    error_at(loc, Diag::UnsupportedElementType,
             "tl." + callee + " needs 32- or 64-bit integers, but it got " + l.describe(Symbol::of(x)));
  bool wide = ir::bit_width(t.scalar) == 64;
  Scalar signed_word = wide ? Scalar::I64 : Scalar::I32;
  if (t.scalar != signed_word) x = l.create(OpKind::Bitcast, {x}, t.with_scalar(signed_word), loc);
  const ir::Type st = l.type(x);
  ir::ValueId zero = l.broadcast_to(l.constant(ConstValue::integer(0), ir::Type::of(signed_word), loc), st.shape, loc);
  ir::ValueId negative = l.create(OpKind::Cmp, {x, zero}, st.with_scalar(Scalar::I1), loc,
                                  {{"pred", ir::Attr{std::string("lt")}}});
  ir::ValueId flipped = l.create(OpKind::Not, {x}, st, loc);
  ir::ValueId magnitude = l.create(OpKind::Select, {negative, flipped, x}, st, loc);
  // The largest scales with (2^31 - 1) * scale < 1 (2^63 - 1 for 64 bits) after f32 rounding.
  double scale = wide ? 1.0842020432385337e-19 : 4.6566127342e-10;
  ir::ValueId f = l.cast(magnitude, Scalar::F32, loc);
  ir::ValueId s = l.broadcast_to(l.constant(ConstValue::real(scale), ir::Type::of(Scalar::F32), loc), st.shape, loc);
  return l.create(OpKind::Mul, {f, s}, l.type(f), loc);
}

// Box-Muller: two uniforms in [0, 1) -> two independent standard normals.
std::pair<ir::ValueId, ir::ValueId> normal_pair(Lowerer& l, ir::ValueId u1, ir::ValueId u2, const SourceLoc& loc,
                                                const std::string& callee) {
  for (ir::ValueId* u : {&u1, &u2}) {
    const ir::Type t = l.type(*u);
    if (t.is_pointer() || !ir::is_float(t.scalar))
      error_at(loc, Diag::NotFloatingPoint,
               "tl." + callee + " needs floats in [0, 1), but it got " + l.describe(Symbol::of(*u)),
               "make them with tl.rand or tl.uint_to_uniform_float");
    if (t.scalar == Scalar::F16 || t.scalar == Scalar::BF16) *u = l.cast(*u, Scalar::F32, loc);
  }
  std::tie(u1, u2) = l.arith_operands(Symbol::of(u1), Symbol::of(u2), false, loc, "tl.pair_uniform_to_normal");
  ir::Type t = l.type(u1);
  auto constant = [&](double v) { return l.broadcast_to(l.constant(ConstValue::real(v), t.element(), loc), t.shape, loc); };
  auto op = [&](OpKind k, std::vector<ir::ValueId> xs) { return l.create(k, std::move(xs), t, loc); };
  // u1 is kept away from 0, where log diverges.
  ir::ValueId clamped = op(OpKind::Max, {constant(1.0e-7), u1});
  ir::ValueId theta = op(OpKind::Mul, {constant(6.283185307179586), u2});
  ir::ValueId radius = op(OpKind::Sqrt, {op(OpKind::Mul, {constant(-2.0), op(OpKind::Log, {clamped})})});
  return {op(OpKind::Mul, {radius, op(OpKind::Cos, {theta})}), op(OpKind::Mul, {radius, op(OpKind::Sin, {theta})})};
}

}  // namespace

Symbol lower_philox(Lowerer& l, const CallArgs& c, const std::string& n) {
  bool impl = n == "philox_impl";
  std::vector<std::string> params = impl ? std::vector<std::string>{"c0", "c1", "c2", "c3", "k0", "k1", "?n_rounds"}
                                         : std::vector<std::string>{"seed", "c0", "c1", "c2", "c3", "?n_rounds"};
  BoundArgs a(n, params, c);
  Philox philox(l, c.loc, n, counter_bits(l, a.get("c0"), a.loc("c0"), n));
  std::vector<ir::ValueId> counter;
  std::vector<Symbol> inputs;
  for (const char* name : {"c0", "c1", "c2", "c3"}) {
    counter.push_back(philox.as_word(a.get(name), a.loc(name)));
    inputs.push_back(a.get(name));
  }
  ir::ValueId k0, k1;
  if (impl) {
    k0 = philox.as_word(a.get("k0"), a.loc("k0"));
    k1 = philox.as_word(a.get("k1"), a.loc("k1"));
    inputs.push_back(a.get("k0"));
    inputs.push_back(a.get("k1"));
  } else {
    std::tie(k0, k1) = philox.key_of_seed(a.get("seed"), a.loc("seed"));
    inputs.push_back(a.get("seed"));
  }
  return tuple_of(philox.run(counter, k0, k1, rounds_of(l, a, n), common_shape(l, inputs, c.loc, n)));
}

Symbol lower_randint(Lowerer& l, const CallArgs& c, const std::string& n) {
  BoundArgs a(n, {"seed", "offset", "?n_rounds"}, c);
  std::vector<ir::ValueId> words = randint4x(l, a, c, n);
  if (n == "randint4x") return tuple_of(words);
  return Symbol::of(words[0]);  // the other three are dead code
}

Symbol lower_rand(Lowerer& l, const CallArgs& c, const std::string& n) {
  BoundArgs a(n, {"seed", "offset", "?n_rounds"}, c);
  std::vector<ir::ValueId> words = randint4x(l, a, c, n);
  if (n == "rand") return Symbol::of(uniform_float(l, words[0], c.loc, n));
  if (n == "randn") return Symbol::of(normal_pair(l, uniform_float(l, words[0], c.loc, n),
                                                  uniform_float(l, words[1], c.loc, n), c.loc, n).first);
  std::vector<ir::ValueId> u;
  for (ir::ValueId w : words) u.push_back(uniform_float(l, w, c.loc, n));
  if (n == "rand4x") return tuple_of(u);
  auto [n1, n2] = normal_pair(l, u[0], u[1], c.loc, n);
  auto [n3, n4] = normal_pair(l, u[2], u[3], c.loc, n);
  return tuple_of({n1, n2, n3, n4});
}

Symbol lower_uint_to_uniform_float(Lowerer& l, const CallArgs& c, const std::string& n) {
  BoundArgs a(n, {"x"}, c);
  return Symbol::of(uniform_float(l, l.to_value(a.get("x"), a.loc("x"), "the input of tl." + n), a.loc("x"), n));
}

Symbol lower_pair_uniform_to_normal(Lowerer& l, const CallArgs& c, const std::string& n) {
  BoundArgs a(n, {"u1", "u2"}, c);
  auto [n1, n2] = normal_pair(l, l.to_value(a.get("u1"), a.loc("u1"), "u1 of tl." + n),
                              l.to_value(a.get("u2"), a.loc("u2"), "u2 of tl." + n), c.loc, n);
  return tuple_of({n1, n2});
}


}  // namespace tegula::frontend
