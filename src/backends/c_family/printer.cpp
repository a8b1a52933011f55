#include "backends/c_family/printer.h"

#include "backends/c_family/spelling.h"
#include "backends/c_family/text.h"
#include "support/diagnostic.h"

namespace tegula::backends::c_family {

Printer::Printer(const ir::Function& f, Dialect d) : fn(f), dialect(d), names_(f.num_values()) {}

std::string Printer::fresh(std::string_view stem) { return std::string(stem) + std::to_string(next_fresh_++); }

std::string Printer::scalar_type(ir::Scalar s) const { return c_family::scalar_type(s, dialect); }

std::string Printer::element_type(const ir::Type& t) const { return c_family::element_type(t, dialect); }

std::string Printer::const_type(const ir::Type& t) const { return c_family::const_type(t, dialect); }

const ir::Op& Printer::terminator(ir::BlockId block) const {
  const ir::Block& b = fn.block(block);
  TEGULA_ASSERT(!b.ops.empty(), "block without terminator");
  const ir::Op& term = fn.op(b.ops.back());
  TEGULA_ASSERT(ir::is_terminator(term.kind), "block does not end in a terminator");
  return term;
}

void Printer::open_for(ir::OpId, const std::string& count_type, const std::string& k, const std::string& trips) {
  out.open("for (" + count_type + " " + k + " = 0; " + k + " < " + trips + "; ++" + k + ")");
}

void Printer::open_while(ir::OpId) { out.open("while (true)"); }

void Printer::close_loop(ir::OpId) { out.close(); }

std::string Printer::location(const ir::Op& op) const {
  if (!op.loc.valid()) return "";
  std::string file = op.loc.file < static_cast<int32_t>(fn.files.size()) ? fn.files[static_cast<size_t>(op.loc.file)]
                                                                         : "<unknown>";
  return comment_text(file) + ":" + std::to_string(op.loc.line) + ":" + std::to_string(op.loc.col);
}

std::string Printer::op_comment(const ir::Op& o) const {
  std::string text = "// ";
  for (size_t i = 0; i < o.results.size(); ++i) text += (i ? ", " : "") + comment_name(o.results[i]);
  if (!o.results.empty()) text += " = ";
  text += ir::name(o.kind);
  if (const ir::Attr* pred = o.attr("pred"); pred && std::holds_alternative<std::string>(*pred))
    text += "." + comment_text(std::get<std::string>(*pred));
  text += "(";
  for (size_t i = 0; i < o.operands.size(); ++i) text += (i ? ", " : "") + comment_name(o.operands[i]);
  text += ")";
  std::string loc = location(o);
  if (!loc.empty()) text += "  " + loc;
  return text;
}

}  // namespace tegula::backends::c_family
