// tl.extra.libdevice's functions beyond the float functions of
// builtins_math.cpp (see builtins_libdevice.h). Operand and result dtypes
// follow Triton's libdevice wrapper, including its quirks: float2uint_* and
// float_as_uint return int32 (the unsigned value's bits), double2ull_* int64.
// What is one IEEE operation or one library function is an op of ir/ops.def;
// the rest composes existing ops here, so both backends agree by
// construction (docs/language.md, "libdevice").
#include "frontend/builtins_libdevice.h"

#include <climits>
#include <tuple>

#include "frontend/builtins_math.h"
#include "frontend/type_rules.h"
#include "support/diagnostic.h"

namespace tegula::frontend {

using ir::OpKind;
using ir::Scalar;

namespace {

bool is_16_bit_float(Scalar s) { return s == Scalar::F16 || s == Scalar::BF16; }

// A constant of element type `s` broadcast to `like`'s shape.
ir::ValueId splat(Lowerer& l, const ConstValue& v, Scalar s, ir::ValueId like, const SourceLoc& loc) {
  return l.broadcast_to(l.constant(v, ir::Type::of(s), loc), l.type(like).shape, loc);
}

ir::ValueId int_splat(Lowerer& l, int64_t v, Scalar s, ir::ValueId like, const SourceLoc& loc) {
  return splat(l, ConstValue::integer(v), s, like, loc);
}

ir::ValueId op(Lowerer& l, OpKind kind, std::vector<ir::ValueId> xs, const SourceLoc& loc) {
  ir::Type t = l.type(xs[0]);
  return l.create(kind, std::move(xs), t, loc);
}

ir::ValueId compare(Lowerer& l, ir::ValueId a, ir::ValueId b, const char* pred, const SourceLoc& loc) {
  return l.create(OpKind::Cmp, {a, b}, l.type(a).with_scalar(Scalar::I1), loc, {{"pred", ir::Attr{std::string(pred)}}});
}

ir::ValueId select(Lowerer& l, ir::ValueId cond, ir::ValueId a, ir::ValueId b, const SourceLoc& loc) {
  return l.create(OpKind::Select, {cond, a, b}, l.type(a), loc);
}

ir::ValueId bitcast(Lowerer& l, ir::ValueId x, Scalar to, const SourceLoc& loc) {
  if (l.type(x).scalar == to) return x;
  return l.create(OpKind::Bitcast, {x}, l.type(x).with_scalar(to), loc);
}

void require(Lowerer& l, ir::ValueId x, bool ok, const SourceLoc& loc, const std::string& name,
             const std::string& what) {
  if (ok && !l.type(x).is_pointer()) return;
  error_at(loc, Diag::UnsupportedElementType,
           "libdevice." + name + " takes " + what + ", not " + l.describe(Symbol::of(x)),
           "convert the operand first, e.g. x.to(tl.float32)");
}

bool is_f32_or_f64(Scalar s) { return s == Scalar::F32 || s == Scalar::F64; }
bool is_int32_or_64(Scalar s) { return ir::is_integer(s) && s != Scalar::I1 && ir::bit_width(s) >= 32; }

// The directed rounding of a libdevice name: its last two letters.
std::string mode_of(const std::string& name) { return name.substr(name.size() - 2); }

// The op that rounds a float to an integral float in `mode`.
OpKind integral_rounding(const std::string& mode) {
  return mode == "rn" ? OpKind::Rint : mode == "rz" ? OpKind::Trunc : mode == "rd" ? OpKind::Floor : OpKind::Ceil;
}

// The scalar type of a libdevice conversion's source or destination name.
Scalar conversion_type(const std::string& t) {
  if (t == "float") return Scalar::F32;
  if (t == "double") return Scalar::F64;
  if (t == "int") return Scalar::I32;
  if (t == "uint") return Scalar::U32;
  if (t == "ll") return Scalar::I64;
  TEGULA_ASSERT(t == "ull", "unknown libdevice conversion type " + t);
  return Scalar::U64;
}

// As Triton types the results: unsigned destinations come back as the
// signed integer of their width.
Scalar triton_result(Scalar s) { return s == Scalar::U32 ? Scalar::I32 : s == Scalar::U64 ? Scalar::I64 : s; }

}  // namespace

Symbol lower_rounded(Lowerer& l, const CallArgs& c, const std::string& n) {
  std::string base = n.substr(0, n.size() - 3), mode = mode_of(n);
  OpKind kind = base == "add"   ? OpKind::AddRound
                : base == "sub" ? OpKind::SubRound
                : base == "mul" ? OpKind::MulRound
                : base == "fma" ? OpKind::FmaRound
                : base == "sqrt" ? OpKind::SqrtRound
                                 : OpKind::DivRound;  // div, rcp
  int arity = kind == OpKind::FmaRound ? 3 : (base == "sqrt" || base == "rcp") ? 1 : 2;
  std::vector<ir::ValueId> xs = operands_of(l, c, n, arity);
  require(l, xs[0], is_f32_or_f64(l.type(xs[0]).scalar), c.loc, n, "float32 or float64 operands");
  if (base == "rcp") xs.insert(xs.begin(), splat(l, ConstValue::real(1.0), l.type(xs[0]).scalar, xs[0], c.loc));
  ir::Type t = l.type(xs[0]);
  return Symbol::of(l.create(kind, std::move(xs), t, c.loc, {{"rounding", ir::Attr{mode}}}));
}

Symbol lower_conversion(Lowerer& l, const CallArgs& c, const std::string& n) {
  size_t two = n.find('2');
  Scalar from = conversion_type(n.substr(0, two));
  Scalar to = conversion_type(n.substr(two + 1, n.size() - two - 4));
  std::string mode = mode_of(n);
  BoundArgs a(n, {"x"}, c);
  ir::ValueId x = l.to_value(a.get("x"), a.loc("x"), "the operand of libdevice." + n);
  Scalar s = l.type(x).scalar;
  // Narrower operands widen exactly; a wider one would be rounded or cut before the conversion.
  bool kind = ir::is_float(from) ? ir::is_float(s) : ir::is_integer(s) && s != Scalar::I1;
  require(l, x, kind && ir::bit_width(s) <= ir::bit_width(from), a.loc("x"), n,
          std::string(ir::is_float(from) ? "a float" : "an integer") + " operand of at most " +
              std::to_string(ir::bit_width(from)) + " bits");
  x = l.cast(x, from, c.loc);
  if (ir::is_integer(to)) {
    ir::ValueId integral = l.create(integral_rounding(mode), {x}, l.type(x), c.loc);
    return Symbol::of(bitcast(l, l.cast(integral, to, c.loc), triton_result(to), c.loc));
  }
  if (mode == "rn") return Symbol::of(l.cast(x, to, c.loc));
  std::string rounding = mode == "rz" ? "rtz" : mode;
  return Symbol::of(l.create(OpKind::Cast, {x}, l.type(x).with_scalar(to), c.loc, {{"rounding", ir::Attr{rounding}}}));
}

Symbol lower_integer_bits(Lowerer& l, const CallArgs& c, const std::string& n) {
  // sad's z is unsigned while x and y may be signed: it joins after they are promoted.
  int arity = n == "byte_perm" ? 3 : (n == "clz" || n == "popc" || n == "brev" || n == "ffs") ? 1 : 2;
  CallArgs pair = c;
  if (n == "sad" && pair.positional.size() == 3) {
    pair.positional.pop_back();
    pair.positional_locs.pop_back();
  }
  std::vector<ir::ValueId> xs = operands_of(l, n == "sad" ? pair : c, n, arity);
  Scalar s = l.type(xs[0]).scalar;
  bool wide_ok = n == "clz" || n == "popc" || n == "brev" || n == "ffs" || n == "mulhi";
  require(l, xs[0], wide_ok ? is_int32_or_64(s) : ir::is_integer(s) && ir::bit_width(s) == 32, c.loc, n,
          wide_ok ? "32- or 64-bit integer operands" : "32-bit integer operands");
  ir::ValueId x = xs[0];
  const SourceLoc& loc = c.loc;
  auto k = [&](int64_t v) { return int_splat(l, v, s, x, loc); };
  if (n == "clz" || n == "popc")
    return Symbol::of(l.cast(op(l, n == "clz" ? OpKind::Clz : OpKind::Popc, {x}, loc), Scalar::I32, loc));
  if (n == "brev") return Symbol::of(op(l, OpKind::Brev, {x}, loc));
  if (n == "ffs") {  // the lowest set bit, from 1; 0 for 0: the ones below it and it, counted
    ir::ValueId below = op(l, OpKind::Xor, {x, op(l, OpKind::Sub, {x, k(1)}, loc)}, loc);
    ir::ValueId count = select(l, compare(l, x, k(0), "eq", loc), k(0), op(l, OpKind::Popc, {below}, loc), loc);
    return Symbol::of(l.cast(count, Scalar::I32, loc));
  }
  if (n == "mulhi") {  // the high half of the signed product from the unsigned one
    ir::ValueId y = xs[1];
    ir::ValueId hi = op(l, OpKind::UMulHi, {x, y}, loc);
    if (!ir::is_signed(s)) return Symbol::of(hi);
    ir::ValueId zero = k(0);
    hi = op(l, OpKind::Sub, {hi, select(l, compare(l, x, zero, "lt", loc), y, zero, loc)}, loc);
    return Symbol::of(op(l, OpKind::Sub, {hi, select(l, compare(l, y, zero, "lt", loc), x, zero, loc)}, loc));
  }
  if (n == "mul24") {  // the low 32 bits of the product of the low 24 bits (sign-extended if signed)
    auto low24 = [&](ir::ValueId v) {
      return ir::is_signed(s) ? op(l, OpKind::Shr, {op(l, OpKind::Shl, {v, k(8)}, loc), k(8)}, loc)
                              : op(l, OpKind::And, {v, k(0xffffff)}, loc);
    };
    return Symbol::of(op(l, OpKind::Mul, {low24(x), low24(xs[1])}, loc));
  }
  if (n == "hadd" || n == "rhadd") {  // (x + y) >> 1 and (x + y + 1) >> 1 without overflow
    ir::ValueId y = xs[1];
    ir::ValueId halves =
        op(l, OpKind::Add, {op(l, OpKind::Shr, {x, k(1)}, loc), op(l, OpKind::Shr, {y, k(1)}, loc)}, loc);
    ir::ValueId carry = op(l, n == "hadd" ? OpKind::And : OpKind::Or, {x, y}, loc);
    return Symbol::of(op(l, OpKind::Add, {halves, op(l, OpKind::And, {carry, k(1)}, loc)}, loc));
  }
  if (n == "sad") {  // |x - y| + z
    if (c.positional.size() != 3) error_at(loc, Diag::WrongArgumentCount, "libdevice.sad takes three arguments");
    ir::ValueId z = l.cast(l.to_value(c.positional[2], c.positional_locs[2], "the operand of libdevice.sad"), s, loc);
    ir::ValueId y = xs[1];
    ir::ValueId diff =
        select(l, compare(l, x, y, "gt", loc), op(l, OpKind::Sub, {x, y}, loc), op(l, OpKind::Sub, {y, x}, loc), loc);
    auto [d, z2] = l.broadcast_pair(diff, z, loc);
    return Symbol::of(op(l, OpKind::Add, {d, z2}, loc));
  }
  // byte_perm(x, y, s): byte i of the result is byte (s >> 4i) & 7 of the
  // eight bytes y:x (x the low four).
  TEGULA_ASSERT(n == "byte_perm", "unknown libdevice integer function " + n);
  auto u64 = [&](ir::ValueId v) { return l.cast(l.cast(v, Scalar::U32, loc), Scalar::U64, loc); };
  auto k64 = [&](int64_t v) { return int_splat(l, v, Scalar::U64, x, loc); };
  ir::ValueId bytes = op(l, OpKind::Or, {op(l, OpKind::Shl, {u64(xs[1]), k64(32)}, loc), u64(x)}, loc);
  ir::ValueId selector = u64(xs[2]);
  ir::ValueId result = k64(0);
  for (int i = 0; i < 4; ++i) {
    ir::ValueId which = op(l, OpKind::And, {op(l, OpKind::Shr, {selector, k64(4 * i)}, loc), k64(7)}, loc);
    ir::ValueId shifted = op(l, OpKind::Shr, {bytes, op(l, OpKind::Mul, {which, k64(8)}, loc)}, loc);
    ir::ValueId byte = op(l, OpKind::And, {shifted, k64(0xff)}, loc);
    result = op(l, OpKind::Or, {result, op(l, OpKind::Shl, {byte, k64(8 * i)}, loc)}, loc);
  }
  return Symbol::of(bitcast(l, l.cast(result, Scalar::U32, loc), s, loc));
}

Symbol lower_reinterpret(Lowerer& l, const CallArgs& c, const std::string& n) {
  const SourceLoc& loc = c.loc;
  if (n == "hiloint2double") {  // the high and low words of a double
    BoundArgs a(n, {"hi", "lo"}, c);
    auto [hi, lo] = l.arith_operands(a.get("hi"), a.get("lo"), false, loc, "libdevice.hiloint2double");
    Scalar s = l.type(hi).scalar;
    require(l, hi, ir::is_integer(s) && ir::bit_width(s) == 32, loc, n, "32-bit integers");
    auto word = [&](ir::ValueId v) { return l.cast(bitcast(l, v, Scalar::U32, loc), Scalar::U64, loc); };
    ir::ValueId high = op(l, OpKind::Shl, {word(hi), int_splat(l, 32, Scalar::U64, hi, loc)}, loc);
    ir::ValueId bits = op(l, OpKind::Or, {high, word(lo)}, loc);
    return Symbol::of(bitcast(l, bits, Scalar::F64, loc));
  }
  BoundArgs a(n, {"x"}, c);
  ir::ValueId x = l.to_value(a.get("x"), a.loc("x"), "the operand of libdevice." + n);
  Scalar s = l.type(x).scalar;
  if (n == "double2hiint" || n == "double2loint") {
    require(l, x, s == Scalar::F64, a.loc("x"), n, "a float64 operand");
    ir::ValueId bits = bitcast(l, x, Scalar::U64, loc);
    if (n == "double2hiint") bits = op(l, OpKind::Shr, {bits, int_splat(l, 32, Scalar::U64, x, loc)}, loc);
    return Symbol::of(bitcast(l, l.cast(bits, Scalar::U32, loc), Scalar::I32, loc));
  }
  // float_as_int, float_as_uint (int32, as Triton), int_as_float, uint_as_float,
  // double_as_longlong, longlong_as_double.
  bool to_float = n == "int_as_float" || n == "uint_as_float" || n == "longlong_as_double";
  int width = n == "double_as_longlong" || n == "longlong_as_double" ? 64 : 32;
  Scalar to = to_float ? (width == 64 ? Scalar::F64 : Scalar::F32) : (width == 64 ? Scalar::I64 : Scalar::I32);
  bool fits = (to_float ? ir::is_integer(s) && s != Scalar::I1 : ir::is_float(s)) && ir::bit_width(s) == width;
  require(l, x, fits, a.loc("x"), n,
          std::string(to_float ? "an integer" : "a float") + " operand of " + std::to_string(width) + " bits");
  return Symbol::of(bitcast(l, x, to, loc));
}

Symbol lower_float_to_integer(Lowerer& l, const CallArgs& c, const std::string& n) {
  BoundArgs a(n, {"x"}, c);
  ir::ValueId x = l.to_value(a.get("x"), a.loc("x"), "the operand of libdevice." + n);
  Scalar s = l.type(x).scalar;
  require(l, x, ir::is_float(s), a.loc("x"), n, "a float operand");
  if (is_16_bit_float(s)) x = l.cast(x, Scalar::F32, c.loc);
  if (n == "ilogb") {  // logb as an i32: 0 -> INT_MIN, inf -> INT_MAX (saturating), NaN -> INT_MIN
    ir::ValueId e = l.cast(op(l, OpKind::Logb, {x}, c.loc), Scalar::I32, c.loc);
    return Symbol::of(select(l, compare(l, x, x, "ne", c.loc), int_splat(l, INT_MIN, Scalar::I32, x, c.loc), e, c.loc));
  }
  // llrint rounds ties to even, llround away from zero; the conversion saturates, NaN -> 0.
  return Symbol::of(l.cast(op(l, n == "llrint" ? OpKind::Rint : OpKind::Round, {x}, c.loc), Scalar::I64, c.loc));
}

Symbol lower_float_and_int(Lowerer& l, const CallArgs& c, const std::string& n) {
  bool order_first = n == "jn" || n == "yn";  // jn(n, x), ldexp(x, n)
  BoundArgs a(n, order_first ? std::vector<std::string>{"n", "x"} : std::vector<std::string>{"x", "n"}, c);
  ir::ValueId x = l.to_value(a.get("x"), a.loc("x"), "the operand of libdevice." + n);
  ir::ValueId e = l.to_value(a.get("n"), a.loc("n"), "the integer operand of libdevice." + n);
  Scalar s = l.type(x).scalar;
  require(l, x, ir::is_float(s), a.loc("x"), n, "a float x");
  require(l, e, ir::is_integer(l.type(e).scalar) && l.type(e).scalar != Scalar::I1, a.loc("n"), n, "an integer n");
  if (is_16_bit_float(s)) x = l.cast(x, Scalar::F32, c.loc);
  e = l.cast(e, Scalar::I32, c.loc);
  std::tie(x, e) = l.broadcast_pair(x, e, c.loc);
  OpKind kind = n == "jn" ? OpKind::Jn : n == "yn" ? OpKind::Yn : OpKind::Ldexp;  // scalbn is ldexp in radix 2
  ir::ValueId r = l.create(kind, {x, e}, l.type(x), c.loc);
  return Symbol::of(is_16_bit_float(s) ? l.cast(r, s, c.loc) : r);
}

Symbol lower_libdevice_function(Lowerer& l, const CallArgs& c, const std::string& n) {
  bool f64_only = n == "rcp64h";
  bool f32_only = n.rfind("fast_", 0) == 0 || n == "saturatef" || n == "rsqrt_rn";
  if (f32_only || f64_only) {
    std::vector<ir::ValueId> xs = operands_of(l, c, n, n == "fast_powf" || n == "fast_dividef" ? 2 : 1);
    Scalar s = l.type(xs[0]).scalar;
    require(l, xs[0], f64_only ? s == Scalar::F64 : s == Scalar::F32 || is_16_bit_float(s), c.loc, n,
            f64_only ? "a float64 operand" : "float32 operands");
    if (n == "fast_dividef") {  // the approximate quotient of tl.fdiv
      std::vector<ir::ValueId> ys = xs;
      for (ir::ValueId& y : ys) y = l.cast(y, Scalar::F32, c.loc);
      ir::ValueId q = l.create(OpKind::Div, ys, l.type(ys[0]), c.loc, {approx_attr()});
      return Symbol::of(l.cast(q, s, c.loc));
    }
  }
  return lower_math_function(l, c, n);
}

}  // namespace tegula::frontend
