#include "cli/explain.h"

#include <iostream>

#include "support/diagnostic.h"

namespace tegula::tools {

std::string doc_entry(std::string_view doc, std::string_view code) {
  std::string heading = "## " + std::string(code);
  size_t start = 0;
  // A heading is a whole line that starts with `## CODE` followed by a
  // non-digit (so E0401 does not match E04010).
  while ((start = doc.find(heading, start)) != std::string_view::npos) {
    size_t after = start + heading.size();
    bool line_start = start == 0 || doc[start - 1] == '\n';
    bool whole_code = after >= doc.size() || !(doc[after] >= '0' && doc[after] <= '9');
    if (line_start && whole_code) break;
    start = after;
  }
  if (start == std::string_view::npos) return {};
  size_t end = doc.find("\n#", start);  // the next heading of any level
  std::string entry(doc.substr(start, end == std::string_view::npos ? std::string_view::npos : end + 1 - start));
  while (!entry.empty() && (entry.back() == '\n' || entry.back() == ' ')) entry.pop_back();
  return entry + "\n";
}

int explain_command(std::string_view arg) {
  std::optional<Diag> diag = find_diagnostic(arg);
  if (!diag) {
    std::cerr << "tegula: error[" << code_of(Diag::CliUsage) << "]: '" << arg
              << "' is not a Tegula error code (they look like E0401)\n"
              << "(docs/diagnostics.md lists them all)\n";
    return 2;
  }
  const DiagInfo& row = info(*diag);
  std::string entry = doc_entry(diagnostics_doc(), row.code);
  // Every code has an entry (a test checks it); the summary is the fallback
  // for a build whose document was edited by hand.
  std::cout << (entry.empty() ? "## " + std::string(row.code) + ": " + std::string(row.summary) + "\n" : entry);
  return 0;
}

}  // namespace tegula::tools
