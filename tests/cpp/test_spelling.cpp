#include "support/spelling.h"

#include <gtest/gtest.h>

namespace tegula {
namespace {

const std::vector<std::string> kNames = {"load", "store", "sum", "max", "maximum", "mask", "other", "atomic_add"};

TEST(ClosestName, OneEditAway) {
  EXPECT_EQ(closest_name("lod", kNames), "load");     // a deletion
  EXPECT_EQ(closest_name("summ", kNames), "sum");     // an insertion
  EXPECT_EQ(closest_name("msk", kNames), "mask");
  EXPECT_EQ(closest_name("laod", kNames), "load");    // two neighbours swapped
  EXPECT_EQ(closest_name("stroe", kNames), "store");
}

TEST(ClosestName, LongerWordsAllowMoreEdits) {
  EXPECT_EQ(closest_name("atomc_ad", kNames), "atomic_add");  // 2 edits, 8 characters
  EXPECT_EQ(closest_name("maxmum", kNames), "maximum");
}

TEST(ClosestName, NothingNearEnough) {
  EXPECT_EQ(closest_name("xyz", kNames), std::nullopt);
  EXPECT_EQ(closest_name("softmax", kNames), std::nullopt);
  EXPECT_EQ(closest_name("", kNames), std::nullopt);
  EXPECT_EQ(closest_name("lod", {}), std::nullopt);
}

TEST(ClosestName, AnExactNameIsNoSuggestion) { EXPECT_EQ(closest_name("load", kNames), std::nullopt); }

TEST(ClosestName, TheFirstOfEquallyNearCandidates) {
  EXPECT_EQ(closest_name("mas", kNames), "max");  // max and mask are both one edit away; max comes first
}

TEST(DidYouMean, NamesTheCandidateWithItsPrefix) {
  EXPECT_EQ(did_you_mean("lod", kNames, "tl."), "did you mean `tl.load`?");
  EXPECT_EQ(did_you_mean("msk", kNames), "did you mean `mask`?");
  EXPECT_EQ(did_you_mean("xyz", kNames, "tl."), "");
}

}  // namespace
}  // namespace tegula
