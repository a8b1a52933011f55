// sort: each line of the tile along `axis` (the [outer, A, inner] view) is
// turned into unsigned keys whose order is the sort order, the keys are
// sorted by the sort prelude's tg_sort_keys, and turned back (the order and
// the keys: prelude_sort.h; the semantics: ir/scan_ops.h). The key loops read
// and write the line where it lies (strided unless the axis is the last), so
// no other copy of the line is needed.
#include <string>

#include "backends/c_family/tile_index.h"
#include "backends/cpu/codegen_context.h"
#include "ir/scan_ops.h"
#include "support/diagnostic.h"

namespace tegula::backends::cpu {

namespace {

// How elements of `s` become keys and back: C++ expressions of `x` (a
// stored element) and `k` (a key).
struct Keys {
  std::string type;  // the unsigned key type
  std::string to_key;
  std::string from_key;
};

Keys keys_of(ir::Scalar s, const std::string& x, const std::string& k) {
  int bits = ir::bit_width(s) == 1 ? 8 : ir::bit_width(s);
  std::string type = "uint" + std::to_string(bits) + "_t";
  switch (s) {
    case ir::Scalar::F16: return {type, "tg_key_f16(" + x + ")", "tg_unkey_half(" + k + ")"};
    case ir::Scalar::BF16: return {type, "tg_key_bf16(" + x + ")", "tg_unkey_half(" + k + ")"};
    case ir::Scalar::F32: return {type, "tg_key_f32(" + x + ")", "tg_unkey_f32(" + k + ")"};
    case ir::Scalar::F64: return {type, "tg_key_f64(" + x + ")", "tg_unkey_f64(" + k + ")"};
    default: break;
  }
  if (!ir::is_signed(s)) return {type, "(" + type + ")" + x, k};
  // Signed: flipping the sign bit maps the signed order onto the unsigned one.
  std::string sign = "(" + type + ")(" + type + "{1} << " + std::to_string(bits - 1) + ")";
  return {type, "(" + type + ")((" + type + ")" + x + " ^ " + sign + ")",
          "(" + c_scalar(s) + ")(" + type + ")(" + k + " ^ " + sign + ")"};
}

}  // namespace

bool uses_sort(const ir::Function& fn) {
  bool found = false;
  fn.walk([&](ir::OpId id) { found = found || fn.op(id).kind == ir::OpKind::Sort; });
  return found;
}

void emit_sort(CodegenContext& ctx, const ir::Op& op) {
  const ir::Type& t = ctx.fn.type(op.operands[0]);
  c_family::AxisView view = c_family::view_around(t, op.int_attr("axis"));
  int64_t outer = view.outer, length = view.length, inner = view.inner;
  ir::ValueId r = op.results[0];
  ctx.declare(r);
  std::string keys = ctx.fresh("keys"), temp = ctx.fresh("temp");
  std::string o = ctx.fresh("o"), x = ctx.fresh("x"), k = ctx.fresh("k");
  std::string at = o + " * " + std::to_string(length * inner) + " + " + k +
                   (inner > 1 ? " * " + std::to_string(inner) + " + " + x : "");
  // Descending sorts complement the keys (on the way in and out).
  std::string flip = ir::sort_descending(op) ? "~" : "";
  Keys how = keys_of(t.scalar, ctx.element(op.operands[0], at), flip + keys + "[" + k + "]");
  int64_t key_bytes = ir::bit_width(t.scalar) <= 8 ? 1 : ir::bit_width(t.scalar) / 8;
  ctx.declare_array(how.type, key_bytes, length, keys);
  ctx.declare_array(how.type, key_bytes, length, temp);
  ctx.out.open("for (int " + o + " = 0; " + o + " < " + std::to_string(outer) + "; ++" + o + ")");
  ctx.out.open("for (int " + x + " = 0; " + x + " < " + std::to_string(inner) + "; ++" + x + ")");
  ctx.open_element_loop(k, length);
  ctx.out.line(keys + "[" + k + "] = (" + how.type + ")" + flip + how.to_key + ";");
  ctx.out.close();
  ctx.out.line("tg_sort_keys(" + keys + ", " + temp + ", " + std::to_string(length) + ");");
  ctx.open_element_loop(k, length);
  ctx.out.line(ctx.element(r, at) + " = " + how.from_key + ";");
  ctx.out.close();
  ctx.out.close();
  ctx.out.close();
}

}  // namespace tegula::backends::cpu
