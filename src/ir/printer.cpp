// The textual form of the tile IR. The grammar (docs/ir.md has the long form):
//
//   kernel @name(%x: ptr<f32> div(16), %n: i32) {
//     %r0, %r1 = opname %a, %b {attr = 1, other = "s"} : type0, type1    // file:line:col
//     %9 = for %lb, %ub, %st, %init : tile<128xf32> {                      // file:line:col
//     ^bb(%10: i32, %11: tile<128xf32>):
//       yield %11
//     }
//   }
//
// One op per line. Regions follow the result types; an op's location comment
// sits on its first line. Values are numbered in the order they appear in the
// text, so printing a parsed function reproduces the text exactly.
//
// The printer must never fail: the verifier prints the op it rejects, so the
// function may be malformed (dangling ids, shared or cyclic regions). Anything
// that cannot be named is printed in a form the parser rejects (`%?17`).
#include "ir/printer.h"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace tegula::ir {

namespace {

// Location comments start at this column when the op text is shorter, so a
// column of comments reads as a margin.
constexpr size_t kLocationColumn = 60;

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '.';
}

std::string quote(const std::string& s) {
  std::string out = "\"";
  for (char ch : s) {
    unsigned char c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (c < 0x20 || c == 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\x%02x", c);
          out += buf;
        } else {
          out += ch;  // printable ASCII and UTF-8 bytes stay as they are
        }
    }
  }
  return out + "\"";
}

// Kernel and parameter names are Python identifiers in practice; anything else
// is quoted so that the text still parses. Digits first would collide with the
// numbered values, so those are quoted too.
std::string print_name(const std::string& name) {
  bool plain = !name.empty() && !(name[0] >= '0' && name[0] <= '9');
  for (char c : name) plain = plain && is_name_char(c);
  return plain ? name : quote(name);
}

// Shortest text that reads back to the same double; always contains `.` or
// `e` (or is inf/nan) so that a float attribute never looks like an integer.
std::string format_float(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  auto result = std::to_chars(buf, buf + sizeof buf, v);
  std::string s(buf, result.ptr);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

std::string format_attr(const Attr& a) {
  if (const int64_t* i = std::get_if<int64_t>(&a)) return std::to_string(*i);
  if (const double* d = std::get_if<double>(&a)) return format_float(*d);
  if (const std::string* s = std::get_if<std::string>(&a)) return quote(*s);
  const auto& list = std::get<std::vector<int64_t>>(a);
  std::string out = "[";
  for (size_t i = 0; i < list.size(); ++i) out += (i ? ", " : "") + std::to_string(list[i]);
  return out + "]";
}

class Printer {
 public:
  Printer(const Function& fn, const PrintOptions& options) : fn_(fn), options_(options) {
    number_values();
  }

  std::string function() {
    std::string header = "kernel @" + print_name(fn_.name) + "(";
    const Block& body = fn_.block(fn_.body());
    for (size_t i = 0; i < body.args.size(); ++i) {
      if (i) header += ", ";
      header += value_ref(body.args[i]) + ": " + type_of(body.args[i]);
      if (i < fn_.params.size() && fn_.params[i].divisibility > 1)
        header += " div(" + std::to_string(fn_.params[i].divisibility) + ")";
      if (i < fn_.params.size() && fn_.params[i].by_value_bytes > 0)
        header += " by_value(" + std::to_string(fn_.params[i].by_value_bytes) + ")";
    }
    out_ = header + ") {\n";
    printed_.assign(fn_.num_blocks(), false);
    printed_[fn_.body().index] = true;
    print_ops(fn_.body(), 1);
    out_ += "}\n";
    return out_;
  }

  // One line: the op's header, with `{ ... }` standing for its regions.
  std::string single_op(OpId id) {
    if (id.index >= fn_.num_ops()) return "<invalid op " + std::to_string(id.index) + ">";
    const Op& op = fn_.op(id);
    std::string line = op_header(op);
    if (!op.regions.empty()) line += " { ... }";
    return line;
  }

 private:
  // Names in print order: the parameters by name, then every result and block
  // argument numbered as the text meets it (results of an op come before the
  // arguments of its regions).
  void number_values() {
    names_.assign(fn_.num_values(), "");
    std::vector<bool> seen(fn_.num_blocks(), false);
    const Block& body = fn_.block(fn_.body());
    seen[fn_.body().index] = true;
    for (size_t i = 0; i < body.args.size(); ++i) {
      ValueId v = body.args[i];
      if (v.index >= names_.size()) continue;
      if (i < fn_.params.size() && !fn_.params[i].name.empty())
        names_[v.index] = print_name(fn_.params[i].name);
      else
        names_[v.index] = std::to_string(next_number_++);
    }
    number_ops(fn_.body(), seen);
  }

  void number_ops(BlockId b, std::vector<bool>& seen) {
    for (OpId id : fn_.block(b).ops) {
      if (id.index >= fn_.num_ops()) continue;
      const Op& op = fn_.op(id);
      for (ValueId r : op.results) name_new(r);
      for (BlockId region : op.regions) {
        if (region.index >= fn_.num_blocks() || seen[region.index]) continue;
        seen[region.index] = true;
        for (ValueId a : fn_.block(region).args) name_new(a);
        number_ops(region, seen);
      }
    }
  }

  void name_new(ValueId v) {
    if (v.index < names_.size() && names_[v.index].empty()) names_[v.index] = std::to_string(next_number_++);
  }

  std::string value_ref(ValueId v) const {
    if (v.index < names_.size() && !names_[v.index].empty()) return "%" + names_[v.index];
    return "%?" + std::to_string(v.index);
  }

  std::string type_of(ValueId v) const {
    if (v.index >= fn_.num_values()) return "<invalid>";
    return to_string(fn_.type(v));
  }

  std::string op_header(const Op& op) const {
    std::string line;
    for (size_t i = 0; i < op.results.size(); ++i) line += (i ? ", " : "") + value_ref(op.results[i]);
    if (!op.results.empty()) line += " = ";
    line += name(op.kind);
    for (size_t i = 0; i < op.operands.size(); ++i) line += (i ? ", " : " ") + value_ref(op.operands[i]);
    if (!op.attrs.empty()) {
      line += " {";
      for (size_t i = 0; i < op.attrs.size(); ++i)
        line += (i ? ", " : "") + op.attrs[i].name + " = " + format_attr(op.attrs[i].value);
      line += "}";
    }
    for (size_t i = 0; i < op.results.size(); ++i) line += (i ? ", " : " : ") + type_of(op.results[i]);
    return line;
  }

  std::string location_comment(const SourceLoc& loc) const {
    if (!options_.locations || !loc.valid()) return "";
    std::string file = static_cast<size_t>(loc.file) < fn_.files.size() ? fn_.files[loc.file] : "?";
    return "// " + file + ":" + std::to_string(loc.line) + ":" + std::to_string(loc.col);
  }

  void emit_line(std::string text, const SourceLoc& loc) {
    std::string comment = location_comment(loc);
    if (!comment.empty()) {
      text += text.size() + 2 <= kLocationColumn ? std::string(kLocationColumn - text.size(), ' ') : "  ";
      text += comment;
    }
    out_ += text + "\n";
  }

  void print_ops(BlockId b, int depth) {
    for (OpId id : fn_.block(b).ops) {
      std::string indent(static_cast<size_t>(depth) * 2, ' ');
      if (id.index >= fn_.num_ops()) {
        out_ += indent + "<invalid op " + std::to_string(id.index) + ">\n";
        continue;
      }
      print_op(fn_.op(id), depth);
    }
  }

  void print_op(const Op& op, int depth) {
    std::string indent(static_cast<size_t>(depth) * 2, ' ');
    std::string line = indent + op_header(op);
    if (op.regions.empty()) {
      emit_line(line, op.loc);
      return;
    }
    emit_line(line + " {", op.loc);
    for (size_t r = 0; r < op.regions.size(); ++r) {
      if (r > 0) {
        std::string label = region_label(op.kind, r);
        out_ += indent + "} " + (label.empty() ? "" : label + " ") + "{\n";
      }
      print_region(op.regions[r], depth);
    }
    out_ += indent + "}\n";
  }

  void print_region(BlockId b, int depth) {
    std::string indent(static_cast<size_t>(depth) * 2, ' ');
    if (b.index >= fn_.num_blocks() || printed_[b.index]) {
      out_ += indent + "  <invalid or already printed block " + std::to_string(b.index) + ">\n";
      return;
    }
    printed_[b.index] = true;
    const Block& block = fn_.block(b);
    if (!block.args.empty()) {
      std::string header = indent + "^bb(";
      for (size_t i = 0; i < block.args.size(); ++i)
        header += (i ? ", " : "") + value_ref(block.args[i]) + ": " + type_of(block.args[i]);
      out_ += header + "):\n";
    }
    print_ops(b, depth + 1);
  }

  const Function& fn_;
  const PrintOptions& options_;
  std::vector<std::string> names_;  // by value index; empty: not reachable from the body
  uint32_t next_number_ = 0;
  std::vector<bool> printed_;       // blocks already printed (guards shared/cyclic regions)
  std::string out_;
};

}  // namespace

std::string print(const Function& fn, const PrintOptions& options) {
  return Printer(fn, options).function();
}

std::string print_op(const Function& fn, OpId op) {
  PrintOptions options;
  options.locations = false;
  return Printer(fn, options).single_op(op);
}

const char* region_label(OpKind kind, size_t index) {
  if (kind == OpKind::If && index == 1) return "else";
  if (kind == OpKind::While && index == 1) return "do";
  return "";
}

}  // namespace tegula::ir
