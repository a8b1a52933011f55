// Suggestions for misspelled names: "did you mean `tl.load`?" in the hint of
// an error about `tl.lod`, `x.summ()` or `mask` written `msk`.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tegula {

// The candidate nearest to `word` by edit distance (insertions, deletions,
// substitutions and swaps of two neighbouring characters, each 1), if it is
// within max(1, word.size() / 3); the first of equally near candidates.
// nullopt when none is near enough or `word` is itself a candidate.
std::optional<std::string> closest_name(std::string_view word, const std::vector<std::string>& candidates);

// "did you mean `tl.load`?" (`prefix` then closest_name's answer), or "" when
// it has none: the start of an error's hint.
std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates,
                         std::string_view prefix = "");

}  // namespace tegula
