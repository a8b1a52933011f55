// tl.inline_asm_elementwise: the `inline_asm` op as CUDA inline PTX, with
// Triton's operand conventions.
//
// Each thread runs the assembly once per group of `pack` of its registers
// (the last group padded with zeros when the count is not a multiple). Asm
// operands are the results first, then the arguments; for each of them, its
// `pack` elements in one 32-bit register when they are narrower (element k in
// bits [k*w, (k+1)*w)), else one operand per element. Triton's text names
// operands `$0, $1, ...`; CUDA's `%0, %1, ...`, so `$n` becomes `%n`, a
// literal `%` doubles and `$$` is a `$`. The constraint string is Triton's
// (LLVM's): a comma-separated letter per operand, outputs marked `=`; clobbers
// (`~{...}`) become a "memory" clobber. Values cross the asm as their bits in
// a local of the constraint's type (h: 16 bits, r: 32, l: 64, f: float,
// d: double).
#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

#include "backends/cuda/codegen_context.h"
#include "support/diagnostic.h"

namespace tegula::backends::cuda {

using ir::Scalar;

namespace {

std::string unsigned_of_width(int bits) {
  switch (bits) {
    case 8: return "unsigned char";
    case 16: return "unsigned short";
    case 32: return "unsigned";
    default: return "unsigned long long";
  }
}

// The bits of element `v` of type s, as an unsigned integer of its width.
std::string bits_of(Scalar s, const std::string& v) {
  if (s == Scalar::F32) return "__float_as_uint(" + v + ")";
  if (s == Scalar::F64) return "(unsigned long long)__double_as_longlong(" + v + ")";
  return "(" + unsigned_of_width(ir::bit_width(s)) + ")(" + v + ")";
}

// Element of type s from an unsigned integer holding its bits.
std::string from_bits(Scalar s, const std::string& bits) {
  if (s == Scalar::F32) return "__uint_as_float((unsigned)(" + bits + "))";
  if (s == Scalar::F64) return "__longlong_as_double((long long)(" + bits + "))";
  return "(" + c_scalar(s) + ")(" + unsigned_of_width(ir::bit_width(s)) + ")(" + bits + ")";
}

struct Constraint {
  char letter;
  std::string c_type;
  bool is_float;
};

Constraint constraint_of(const std::string& text, const SourceLoc& loc) {
  std::string letter = text;
  while (!letter.empty() && (letter[0] == '=' || letter[0] == '+' || letter[0] == '&')) letter.erase(0, 1);
  if (letter == "h") return {'h', "unsigned short", false};
  if (letter == "r") return {'r', "unsigned", false};
  if (letter == "l") return {'l', "unsigned long long", false};
  if (letter == "f") return {'f', "float", true};
  if (letter == "d") return {'d', "double", true};
  error_at(loc, Diag::InvalidOption,
           "tl.inline_asm_elementwise constraint \"" + text + "\" is not supported",
           "use h (16-bit), r (32-bit), l (64-bit), f (float) or d (double) registers");
}

// Converts between a register local of constraint `c` and unsigned bits.
std::string local_from_bits(const Constraint& c, const std::string& bits) {
  if (c.letter == 'f') return "__uint_as_float((unsigned)(" + bits + "))";
  if (c.letter == 'd') return "__longlong_as_double((long long)(" + bits + "))";
  return "(" + c.c_type + ")(" + bits + ")";
}
std::string bits_from_local(const Constraint& c, const std::string& local) {
  if (c.letter == 'f') return "__float_as_uint(" + local + ")";
  if (c.letter == 'd') return "(unsigned long long)__double_as_longlong(" + local + ")";
  return local;
}

// Triton's asm text in CUDA's operand syntax.
std::string cuda_asm_text(const std::string& text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    char ch = text[i];
    if (ch == '%') {
      out += "%%";
    } else if (ch == '$' && i + 1 < text.size() && text[i + 1] == '$') {
      out += '$';
      ++i;
    } else if (ch == '$' && i + 1 < text.size() && std::isdigit(static_cast<unsigned char>(text[i + 1]))) {
      out += '%';
    } else {
      out += ch;
    }
  }
  return out;
}

}  // namespace

void emit_inline_asm(CudaContext& ctx, ir::OpId id) {
  const ir::Op& op = ctx.fn.op(id);
  const int64_t pack = op.int_attr("pack");
  const ir::Type shape_type = ctx.fn.type(op.results[0]);
  // Operand constraints, clobbers apart.
  std::vector<std::string> constraints;
  bool clobbers_memory = false;
  {
    std::string all = std::get<std::string>(*op.attr("constraints"));
    size_t start = 0;
    while (start <= all.size()) {
      size_t comma = all.find(',', start);
      std::string part = all.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      while (!part.empty() && part.front() == ' ') part.erase(0, 1);
      while (!part.empty() && part.back() == ' ') part.pop_back();
      if (part.rfind("~", 0) == 0) clobbers_memory = true;
      else if (!part.empty()) constraints.push_back(part);
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  // How many asm operands each value takes per group: `pack` elements, several per 32-bit register when narrower.
  // A pointer operand is its 64-bit address.
  auto width = [&](ir::ValueId v) { return ctx.fn.type(v).pointer ? 64 : ir::bit_width(ctx.fn.type(v).scalar); };
  auto per_register = [&](ir::ValueId v) {
    int bits = width(v);
    return static_cast<int64_t>(std::min<int64_t>(std::max(32 / bits, 1), pack));
  };
  size_t needed = 0;
  for (ir::ValueId v : op.results) needed += static_cast<size_t>(pack / per_register(v));
  for (ir::ValueId v : op.operands) needed += static_cast<size_t>(pack / per_register(v));
  for (ir::ValueId v : op.results)
    if (pack % per_register(v) != 0)
      error_at(op.loc, Diag::ArgumentOutOfRange, "the pack of tl.inline_asm_elementwise must be a power of two");
  if (constraints.size() != needed)
    error_at(op.loc, Diag::InvalidOption,
             "tl.inline_asm_elementwise has " + std::to_string(needed) + " asm operands (results, then arguments, " +
                 std::to_string(pack) + " elements each, narrow ones packed into 32-bit registers) but " +
                 std::to_string(constraints.size()) + " constraints");

  // Storage of the results: arrays in the shared layout, or scalars.
  bool tile = shape_type.is_tile();
  const Layout* layout = tile ? &ctx.layout(op.results[0]) : nullptr;
  int registers = 1;
  for (ir::ValueId r : op.results) {
    if (tile) registers = ctx.declare_tile(ctx.name(r), ctx.fn.type(r), *layout);
    else ctx.out.line(c_scalar(ctx.fn.type(r).scalar) + " " + ctx.name(r) + ";");
  }
  std::string i = ctx.open_unrolled(registers, static_cast<int>(pack));
  auto element = [&](const std::string& base, int64_t j) {
    return tile ? base + "[" + i + " + " + std::to_string(j) + "]" : base;
  };
  // Whether element j of the group exists: a scalar has one; the last group of a tile may be short.
  auto present = [&](int64_t j) {
    if (!tile) return std::string(j == 0 ? "true" : "false");
    if (j == 0 || registers % pack == 0) return std::string("true");
    return i + " + " + std::to_string(j) + " < " + std::to_string(registers);
  };
  std::vector<std::string> outputs, inputs;
  std::vector<std::string> unpack;  // after the asm: results from the output locals
  size_t next = 0, local = 0;
  // One asm operand: a local of its constraint's type holding `count` elements from element `first` on.
  auto operand = [&](ir::ValueId v, const std::string& base, int64_t first, int64_t count, bool output) {
    Constraint c = constraint_of(constraints[next++], op.loc);
    Scalar s = ctx.fn.type(v).scalar;
    bool pointer = ctx.fn.type(v).pointer;
    int bits = width(v);
    if (pointer && c.letter != 'l')
      error_at(op.loc, Diag::InvalidOption,
               "operand " + std::to_string(next - 1) + " of tl.inline_asm_elementwise is a pointer, a 64-bit address, "
                   "but its constraint is \"" + constraints[next - 1] + "\"",
               "give pointer operands the constraint l");
    std::string name = "asm" + std::to_string(local++);
    if (output) {
      ctx.out.line(c.c_type + " " + name + ";");
      outputs.push_back("\"=" + std::string(1, c.letter) + "\"(" + name + ")");
      for (int64_t k = 0; k < count; ++k) {
        std::string bits_expr = bits_from_local(c, name);
        if (count > 1) bits_expr = "(" + bits_expr + " >> " + std::to_string(k * bits) + ")";
        std::string assign = element(base, first + k) + " = " + from_bits(s, bits_expr) + ";";
        std::string exists = present(first + k);
        if (exists == "true") unpack.push_back(assign);
        else if (exists != "false") unpack.push_back("if (" + exists + ") " + assign);
      }
      return;
    }
    std::string packed;
    for (int64_t k = 0; k < count; ++k) {
      std::string exists = present(first + k);
      std::string value = element(base, first + k);
      std::string bits_value = exists == "false" ? "0ull"
                               : pointer         ? "(unsigned long long)(" + value + ")"
                                                 : "(unsigned long long)" + bits_of(s, value);
      if (exists != "true" && exists != "false") bits_value = "(" + exists + " ? " + bits_value + " : 0ull)";
      if (k > 0) bits_value = "(" + bits_value + " << " + std::to_string(k * bits) + ")";
      packed += (packed.empty() ? "" : " | ") + bits_value;
    }
    ctx.out.line(c.c_type + " " + name + " = " + local_from_bits(c, packed) + ";");
    inputs.push_back("\"" + std::string(1, c.letter) + "\"(" + name + ")");
  };
  for (ir::ValueId r : op.results)
    for (int64_t j = 0; j < pack; j += per_register(r)) operand(r, ctx.name(r), j, per_register(r), true);
  for (size_t k = 0; k < op.operands.size(); ++k) {
    ir::ValueId v = op.operands[k];
    for (int64_t j = 0; j < pack; j += per_register(v)) operand(v, ctx.operand(id, k), j, per_register(v), false);
  }
  auto join = [](const std::vector<std::string>& parts) {
    std::string s;
    for (const std::string& p : parts) s += (s.empty() ? "" : ", ") + p;
    return s;
  };
  bool pure = op.has_attr("pure") && op.int_attr("pure") != 0;
  ctx.out.line(std::string(pure ? "asm(" : "asm volatile(") +
               c_string_literal(cuda_asm_text(std::get<std::string>(*op.attr("asm")))) + " : " + join(outputs) +
               " : " + join(inputs) + (clobbers_memory ? " : \"memory\"" : "") + ");");
  for (const std::string& line : unpack) ctx.out.line(line);
  ctx.out.close();
}

}  // namespace tegula::backends::cuda
