#include "support/diagnostic.h"

#include <algorithm>
#include <array>
#include <cctype>

namespace tegula {
namespace {

constexpr std::array kTable = {
#define DIAG(code, name, summary) DiagInfo{Diag::name, #code, #name, summary},
#include "support/diagnostic_codes.def"
#undef DIAG
};

}  // namespace

const DiagInfo& info(Diag d) {
  size_t i = static_cast<size_t>(d);
  TEGULA_ASSERT(i < kTable.size(), "diagnostic code out of the table");
  return kTable[i];
}

std::span<const DiagInfo> all_diagnostics() { return kTable; }

std::optional<Diag> find_diagnostic(std::string_view code) {
  std::string wanted;
  for (char c : code) wanted += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (!wanted.empty() && wanted[0] != 'E') wanted = "E" + wanted;
  for (const DiagInfo& row : kTable)
    if (row.code == wanted) return row.diag;
  return std::nullopt;
}

namespace {

// The quoted source line of `loc` with a caret under its span.
void quote(std::string& out, const SourceLoc& loc, const SourceManager& sources) {
  std::string_view line = sources.line_text(loc.file, loc.line);
  if (line.empty()) return;
  std::string number = std::to_string(loc.line);
  std::string gutter(number.size(), ' ');
  out += " " + number + " | " + std::string(line) + "\n";
  // Keep tabs in the caret line so the caret lines up under tabs too.
  std::string pad;
  for (int32_t i = 1; i < loc.col && static_cast<size_t>(i - 1) < line.size(); ++i)
    pad += line[static_cast<size_t>(i - 1)] == '\t' ? '\t' : ' ';
  int32_t width = std::max<int32_t>(1, loc.end_col - loc.col);
  out += " " + gutter + " | " + pad + "^" + std::string(static_cast<size_t>(width - 1), '~') + "\n";
}

// Triton's position of `loc` in the function whose name `def` spans: the
// line counted from the `def` line as 1, the column (from 0) in the source
// dedented by the def line's indentation.
std::string position_in(const SourceLoc& loc, const SourceLoc& def, const SourceManager& sources) {
  std::string_view def_line = sources.line_text(def.file, def.line);
  int32_t indent = static_cast<int32_t>(std::min(def_line.find_first_not_of(" \t"), def_line.size()));
  return "at " + std::to_string(loc.line - def.line + 1) + ":" + std::to_string(std::max(0, loc.col - 1 - indent)) +
         ":";
}

}  // namespace

bool repeats_call(const std::vector<CallFrame>& stack, size_t k) {
  if (k == 0 || k + 1 >= stack.size()) return false;
  const SourceLoc& a = stack[k].called;
  const SourceLoc& b = stack[k - 1].called;
  return a.file == b.file && a.line == b.line && a.col == b.col && stack[k + 1].function == stack[k].function;
}

std::string render(const Diagnostic& d, const SourceManager* sources, size_t depth) {
  std::string out;
  if (sources && d.loc.valid()) out += sources->describe(d.loc) + ": ";
  out += (d.warning ? std::string("warning") : "error[" + std::string(code_of(d.code)) + "]") + ": " + d.message + "\n";
  if (sources && d.loc.valid()) quote(out, d.loc, *sources);
  if (!d.hint.empty()) out += "hint: " + d.hint + "\n";
  // A position inside a function: in its file, at or after its def line
  // (an error in a callee's default argument is reported in the caller).
  auto inside = [](const SourceLoc& loc, const SourceLoc& def) {
    return loc.valid() && def.valid() && loc.file == def.file && loc.line >= def.line;
  };
  size_t frames = std::min(depth, d.stack.size());
  if (!sources || frames == 0 || !inside(d.loc, d.stack[0].def)) return out;
  out += "note: in `" + d.stack[0].function + "` " + position_in(d.loc, d.stack[0].def, *sources) + "\n";
  // A run of the same call (recursion until the nesting limit) shows its
  // first kShownRepeats calls and then how many more there were.
  constexpr size_t kShownRepeats = 3;
  size_t repeats = 0;
  auto same_call = [&](size_t k) { return k >= 2 && repeats_call(d.stack, k - 1); };
  auto end_repeats = [&] {
    if (repeats > kShownRepeats)
      out += "note: the call above repeats " + std::to_string(repeats - kShownRepeats) + " more times\n";
    repeats = 0;
  };
  for (size_t k = 1; k < frames; ++k) {
    const SourceLoc& call = d.stack[k - 1].called;
    if (!inside(call, d.stack[k].def)) break;
    repeats = same_call(k) ? repeats + 1 : (end_repeats(), 1);
    if (repeats > kShownRepeats) continue;
    out += sources->describe(call) + ": note: called from `" + d.stack[k].function + "` " +
           position_in(call, d.stack[k].def, *sources) + "\n";
    quote(out, call, *sources);
  }
  end_repeats();
  return out;
}

void error_at(const SourceLoc& loc, Diag code, std::string message, std::string hint) {
  throw UserError(Diagnostic{loc, code, std::move(message), std::move(hint), ErrorKind::Compile});
}


void internal_error(const char* file, int line, const std::string& message) {
  throw InternalError(std::string("internal compiler error at ") + file + ":" + std::to_string(line) +
                      ": " + message);
}

}  // namespace tegula
