// `tegula explain CODE`: prints what an error code means, with a wrong kernel
// and the fix, from docs/diagnostics.md (compiled into the executable, so it
// works wherever the CLI does).
#pragma once

#include <string>
#include <string_view>

namespace tegula::tools {

// docs/diagnostics.md as it was when Tegula was built.
std::string_view diagnostics_doc();

// The section of `doc` that starts with the heading `## CODE` (CODE as in
// "E0401"), up to the next heading, without trailing blank lines; empty
// when `doc` has no such section.
std::string doc_entry(std::string_view doc, std::string_view code);

// Runs `tegula explain ARG`; returns the exit status.
int explain_command(std::string_view arg);

}  // namespace tegula::tools
