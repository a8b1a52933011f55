// tl.dot_scaled: the product of two microscaled (OCP MX) operands, emulated
// as Triton emulates it on hardware without native MX support. Each operand
// is decoded to float32 (e2m1 from packed nibbles, e4m3/e5m2 from bytes or
// fp8 tiles, bf16/fp16 from their bits), multiplied by its e8m0 scale
// 2^(s - 127) (s = 255 is NaN; NVFP4's float8e4nv scales by their value)
// repeated over groups of K, rounded to bf16 (to
// fp16 if either operand is fp16), and multiplied by tl.dot accumulating in
// float32. Composed from other builtins: nothing new reaches the IR.
#include "frontend/builtins_dot_scaled.h"

#include "frontend/lowering.h"
#include "support/diagnostic.h"

namespace tegula::frontend {

using ir::Scalar;

namespace {

struct Composer {
  Lowerer& l;
  SourceLoc loc;

  Symbol call(const std::string& name, std::vector<Symbol> args,
              std::vector<std::pair<std::string, Symbol>> keywords = {}) const {
    CallArgs c;
    c.loc = loc;
    c.positional = std::move(args);
    c.positional_locs.assign(c.positional.size(), loc);
    c.keywords = std::move(keywords);
    c.keyword_locs.assign(c.keywords.size(), loc);
    return l.call_builtin(name, c);
  }
  Symbol op(ast::BinaryOp o, const Symbol& a, const Symbol& b) const { return l.binary(o, a, b, loc); }
  Symbol cmp(ast::CmpOp o, const Symbol& a, const Symbol& b) const { return l.compare(o, a, b, loc); }
  static Symbol num(int64_t v) { return Symbol::of(ConstValue::integer(v)); }
  static Symbol dtype(Scalar s) { return Symbol::of(ConstValue::type(s)); }
  Symbol to(const Symbol& x, Scalar s, bool bitcast = false) const {
    std::vector<std::pair<std::string, Symbol>> kw;
    if (bitcast) kw.push_back({"bitcast", Symbol::of(ConstValue::boolean(true))});
    return call("to", {x, dtype(s)}, kw);
  }
  std::vector<int64_t> shape(const Symbol& x) const { return l.type(x.value).shape; }
};

// The e2m1 value of each low nibble of `nibbles` (u32), as float32: sign bit
// 3, exponent bits 2..1 (bias 1), mantissa bit 0; exponent 0 is subnormal (0
// or 0.5). Values 0, 0.5, 1, 1.5, 2, 3, 4, 6 and their negatives.
Symbol decode_e2m1(const Composer& k, const Symbol& nibbles) {
  using ast::BinaryOp;
  Symbol e = k.op(BinaryOp::BitAnd, k.op(BinaryOp::RShift, nibbles, k.num(1)), k.num(3));
  Symbol m = k.op(BinaryOp::BitAnd, nibbles, k.num(1));
  Symbol sign = k.op(BinaryOp::LShift, k.op(BinaryOp::RShift, nibbles, k.num(3)), k.num(31));
  // normal: 2^(e-1) * (1 + m/2) = bits (e - 1 + 127) << 23 | m << 22
  Symbol normal = k.op(BinaryOp::BitOr, k.op(BinaryOp::LShift, k.op(BinaryOp::Add, e, k.num(126)), k.num(23)),
                       k.op(BinaryOp::LShift, m, k.num(22)));
  Symbol half = k.op(BinaryOp::Mul, m, k.num(0x3F000000));  // 0.5 or 0
  Symbol bits = k.call("where", {k.cmp(ast::CmpOp::Eq, e, k.num(0)), half, normal});
  return k.to(k.to(k.op(BinaryOp::BitOr, bits, sign), Scalar::U32), Scalar::F32, true);
}

// Packed e2m1 (two per byte, the first in the low nibble) unpacked along
// `axis` (0 or 1 of a 2-D tile) into float32.
Symbol unpack_e2m1(const Composer& k, const Symbol& packed, int64_t axis) {
  Symbol bytes = k.to(packed, Scalar::U32);
  Symbol low = decode_e2m1(k, k.op(ast::BinaryOp::BitAnd, bytes, k.num(15)));
  Symbol high = decode_e2m1(k, k.op(ast::BinaryOp::RShift, bytes, k.num(4)));
  std::vector<int64_t> s = k.shape(packed);
  Symbol pairs = k.call("join", {low, high});  // [a, b, 2]
  if (axis == 0) pairs = k.call("permute", {pairs, k.num(0), k.num(2), k.num(1)});  // [a, 2, b]
  std::vector<int64_t> out = s;
  out[static_cast<size_t>(axis)] *= 2;
  return k.call("reshape", {pairs, k.num(out[0]), k.num(out[1])});
}

// An operand of `format` as float32, its K along `k_axis` unpacked.
Symbol decode_operand(const Composer& k, const Symbol& x, const std::string& format, bool k_pack, int64_t k_axis,
                      const SourceLoc& where) {
  Scalar s = k.l.type(x.value).scalar;
  auto expect = [&](std::initializer_list<Scalar> allowed, const std::string& what) {
    for (Scalar a : allowed)
      if (s == a) return;
    error_at(where, Diag::UnsupportedElementType,
             "a tl.dot_scaled operand in format \"" + format + "\" must be " + what + ", but it is " +
                 k.l.describe(x));
  };
  if (format == "e2m1") {
    expect({Scalar::U8}, "uint8 (two e2m1 values per byte)");
    return unpack_e2m1(k, x, k_pack ? k_axis : 1 - k_axis);
  }
  if (!k_pack)
    error_at(where, Diag::InvalidOption, "only e2m1 operands can be packed along a dimension other than K",
             "pass k_pack=True for \"" + format + "\"");
  Scalar as = format == "e4m3" ? Scalar::F8E4M3 : format == "e5m2" ? Scalar::F8E5M2
            : format == "bf16" ? Scalar::BF16 : Scalar::F16;
  Scalar bits = ir::bit_width(as) == 8 ? Scalar::U8 : Scalar::U16;
  expect({as, bits}, std::string("tl.") + ir::scalar_info(as).tl_name + " or its bits as tl." + ir::scalar_info(bits).tl_name);
  Symbol typed = s == as ? x : k.to(x, as, true);
  return k.to(typed, Scalar::F32);
}

// 2^(s - 127) of e8m0 scales `scale` [rows, groups] (s = 255: NaN), each
// repeated `group` times along K: [rows, groups * group], float32.
// NVFP4's scales are float8e4nv (e4m3) values instead, their value the factor.
Symbol expand_scale(const Composer& k, const Symbol& scale, bool e4m3, int64_t group) {
  using ast::BinaryOp;
  Symbol factor;
  if (e4m3) {
    factor = k.to(scale, Scalar::F32);
  } else {
    Symbol s = k.to(scale, Scalar::U32);
    // 2^(s-127) is the float32 with exponent field s; s = 0 is the subnormal 2^-127.
    Symbol bits = k.call("where", {k.cmp(ast::CmpOp::Eq, s, k.num(0)), k.num(0x00400000),
                                   k.op(BinaryOp::LShift, s, k.num(23))});
    bits = k.call("where", {k.cmp(ast::CmpOp::Eq, s, k.num(255)), k.num(0x7FC00000), bits});
    factor = k.to(k.to(bits, Scalar::U32), Scalar::F32, true);
  }
  std::vector<int64_t> sh = k.shape(scale);
  Symbol wide = k.call("broadcast_to", {k.call("expand_dims", {factor, k.num(2)}), k.num(sh[0]), k.num(sh[1]),
                                        k.num(group)});
  return k.call("reshape", {wide, k.num(sh[0]), k.num(sh[1] * group)});
}

std::string format_arg(Lowerer& l, const BoundArgs& a, const char* name) {
  ConstValue f = l.to_const(a.get(name), a.loc(name), std::string("the ") + name + " of tl.dot_scaled");
  if (f.kind != ConstValue::Kind::Str ||
      (f.s != "e2m1" && f.s != "e4m3" && f.s != "e5m2" && f.s != "bf16" && f.s != "fp16"))
    error_at(a.loc(name), Diag::InvalidOption, std::string("invalid ") + name + " " + to_string(f),
             "use one of \"e2m1\", \"e4m3\", \"e5m2\", \"bf16\", \"fp16\"");
  return f.s;
}

}  // namespace

Symbol lower_dot_scaled(Lowerer& l, const CallArgs& c, const std::string& n) {
  BoundArgs a(n, {"lhs", "lhs_scale", "lhs_format", "rhs", "rhs_scale", "rhs_format", "?acc", "?fast_math",
                  "?lhs_k_pack", "?rhs_k_pack", "?out_dtype"},
              c);
  Composer k{l, c.loc};
  std::string lhs_format = format_arg(l, a, "lhs_format"), rhs_format = format_arg(l, a, "rhs_format");
  auto flag = [&](const char* name) {
    return !a.has(name) || l.to_const(a.get(name), a.loc(name), std::string("`") + name + "`").truthy();
  };
  if (a.has("fast_math")) l.to_const(a.get("fast_math"), a.loc("fast_math"), "`fast_math`");
  if (a.has("out_dtype") && l.to_dtype(a.get("out_dtype"), a.loc("out_dtype"), "the out_dtype") != Scalar::F32)
    error_at(a.loc("out_dtype"), Diag::UnsupportedElementType, "tl.dot_scaled computes in float32 only",
             "convert the result with .to(...)");
  auto operand = [&](const char* name) {
    Symbol x = Symbol::of(l.to_value(a.get(name), a.loc(name), std::string("the ") + name + " of tl.dot_scaled"));
    if (l.type(x.value).rank() != 2)
      error_at(a.loc(name), Diag::WrongRank,
               std::string("tl.dot_scaled needs 2-D operands, but the ") + name + " is " + l.describe(x));
    return x;
  };
  Symbol lhs = decode_operand(k, operand("lhs"), lhs_format, flag("lhs_k_pack"), 1, a.loc("lhs"));
  Symbol rhs = decode_operand(k, operand("rhs"), rhs_format, flag("rhs_k_pack"), 0, a.loc("rhs"));
  int64_t kdim = k.shape(lhs)[1];
  if (k.shape(rhs)[0] != kdim)
    error_at(c.loc, Diag::ShapeMismatch,
             "tl.dot_scaled operands hold different K: " + std::to_string(kdim) + " and " +
                 std::to_string(k.shape(rhs)[0]) + " elements");
  // Scales: lhs_scale [M, K / group], rhs_scale [N, K / group] (not transposed).
  auto scale = [&](const char* name, const Symbol& x, int64_t rows, bool transpose) -> Symbol {
    if (!a.has(name)) return x;
    Symbol s = Symbol::of(l.to_value(a.get(name), a.loc(name), std::string("the ") + name + " of tl.dot_scaled"));
    const ir::Type t = l.type(s.value);
    bool e4m3 = t.scalar == Scalar::F8E4M3;  // NVFP4: float8e4nv scales (a group of 16 elements each)
    if ((t.scalar != Scalar::U8 && !e4m3) || t.rank() != 2 || t.shape[0] != rows || kdim % t.shape[1] != 0)
      error_at(a.loc(name), Diag::ShapeMismatch,
               std::string("the ") + name + " of tl.dot_scaled must be e8m0 scales as a uint8 tile (or, for "
                   "NVFP4, float8e4nv scales) of shape [" + std::to_string(rows) + ", K / group] (K = " +
                   std::to_string(kdim) + "), but it is " + l.describe(s));
    Symbol factor = expand_scale(k, s, e4m3, kdim / t.shape[1]);
    if (transpose) factor = k.call("trans", {factor});
    return k.op(ast::BinaryOp::Mul, x, factor);
  };
  // Both operands' scales must cover groups of one size along K, or the products mix scale blocks.
  auto group = [&](const char* name) -> int64_t {
    if (!a.has(name) || !a.get(name).is_value()) return 0;
    const ir::Type t = l.type(a.get(name).value);
    return t.rank() == 2 && t.shape[1] > 0 ? kdim / t.shape[1] : 0;
  };
  int64_t lhs_group = group("lhs_scale"), rhs_group = group("rhs_scale");
  if (lhs_group && rhs_group && lhs_group != rhs_group)
    error_at(c.loc, Diag::ShapeMismatch,
             "Operands must have the same scale factor; (lhs: " + std::to_string(lhs_group) + " vs rhs: " +
                 std::to_string(rhs_group) + ")",
             "give lhs_scale and rhs_scale one column per group of K of the same size (32 for the MX formats)");
  lhs = scale("lhs_scale", lhs, k.shape(lhs)[0], false);
  rhs = scale("rhs_scale", rhs, k.shape(rhs)[1], true);
  Scalar compute = lhs_format == "fp16" || rhs_format == "fp16" ? Scalar::F16 : Scalar::BF16;
  std::vector<std::pair<std::string, Symbol>> kw = {{"out_dtype", Composer::dtype(Scalar::F32)}};
  if (a.has("acc")) kw.push_back({"acc", a.get("acc")});
  return k.call("dot", {k.to(lhs, compute), k.to(rhs, compute)}, kw);
}

}  // namespace tegula::frontend
