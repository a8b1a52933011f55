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

std::string render(const Diagnostic& d, const SourceManager* sources) {
  std::string out;
  if (sources && d.loc.valid()) out += sources->describe(d.loc) + ": ";
  out += "error[" + std::string(code_of(d.code)) + "]: " + d.message + "\n";
  if (sources && d.loc.valid()) {
    std::string_view line = sources->line_text(d.loc.file, d.loc.line);
    if (!line.empty()) {
      std::string number = std::to_string(d.loc.line);
      std::string gutter(number.size(), ' ');
      out += " " + number + " | " + std::string(line) + "\n";
      // Keep tabs in the caret line so the caret lines up under tabs too.
      std::string pad;
      for (int32_t i = 1; i < d.loc.col && static_cast<size_t>(i - 1) < line.size(); ++i)
        pad += line[static_cast<size_t>(i - 1)] == '\t' ? '\t' : ' ';
      int32_t width = std::max<int32_t>(1, d.loc.end_col - d.loc.col);
      out += " " + gutter + " | " + pad + "^" + std::string(static_cast<size_t>(width - 1), '~') + "\n";
    }
  }
  if (!d.hint.empty()) out += "hint: " + d.hint + "\n";
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
