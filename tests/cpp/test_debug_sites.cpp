// Pointer provenance (which parameters' arrays a pointer may point into) and
// the numbered debug sites built from it, on IR written by hand.
#include <gtest/gtest.h>

#include <map>

#include "ir/parser.h"
#include "pass_test_util.h"
#include "passes/debug_sites.h"
#include "passes/pointer_provenance.h"

namespace tegula::passes {
namespace {

using Sources = std::vector<int32_t>;

// Parses `text` and answers the sources of values by their printed name.
class Provenance {
 public:
  explicit Provenance(const std::string& text) : fn_(ir::parse(text)), analysis_(fn_) {
    names_ = testing::printed_names(fn_);
  }

  const Sources& operator()(const std::string& name) const { return analysis_.sources(names_.at(name)); }
  bool unknown(const std::string& name) const { return analysis_.unknown(names_.at(name)); }

 private:
  ir::Function fn_;
  PointerProvenance analysis_;
  std::map<std::string, ir::ValueId> names_;
};

TEST(PointerProvenance, FollowsShapeOpsAndAddptrToOneParameter) {
  Provenance p(R"(kernel @k(%n: i32, %x: ptr<f32>, %y: ptr<f32>) {
  %0 = arange {start = 0, end = 8} : tile<8xi32>
  %1 = splat %y : tile<8xptr<f32>>
  %2 = addptr %1, %0 : tile<8xptr<f32>>
  %3 = expand_dims %2 {axis = 0} : tile<1x8xptr<f32>>
  %4 = broadcast %3 : tile<4x8xptr<f32>>
  %5 = reshape %4 : tile<32xptr<f32>>
  %6 = bitcast %5 : tile<32xptr<i32>>
  %7 = load %6 : tile<32xi32>
  return
}
)");
  for (const char* v : {"%y", "%1", "%2", "%3", "%4", "%5", "%6"}) EXPECT_EQ(p(v), Sources{2}) << v;
  EXPECT_EQ(p("%x"), Sources{1});
  EXPECT_TRUE(p("%0").empty());
  EXPECT_TRUE(p("%7").empty());
  EXPECT_TRUE(p("%n").empty());
}

TEST(PointerProvenance, SelectTakesBothSides) {
  Provenance p(R"(kernel @k(%x: ptr<f32>, %y: ptr<f32>, %c: i1) {
  %0 = select %c, %x, %y : ptr<f32>
  %1 = load %0 : f32
  return
}
)");
  EXPECT_EQ(p("%0"), (Sources{0, 1}));
}

TEST(PointerProvenance, LoopCarriedPointersReachAFixedPoint) {
  // The carried pointer starts in %x; the yield of the second iteration on
  // makes it point into %y, so both the body argument and the result may
  // point into either.
  Provenance p(R"(kernel @k(%x: ptr<f32>, %y: ptr<f32>, %n: i32) {
  %0 = constant {value = 0} : i32
  %1 = constant {value = 1} : i32
  %2 = for %0, %n, %1, %x : ptr<f32> {
  ^bb(%3: i32, %4: ptr<f32>):
    %5 = load %4 : f32
    %6 = addptr %y, %3 : ptr<f32>
    yield %6
  }
  %7 = load %2 : f32
  return
}
)");
  EXPECT_EQ(p("%4"), (Sources{0, 1}));
  EXPECT_EQ(p("%2"), (Sources{0, 1}));
  EXPECT_EQ(p("%6"), Sources{1});
}

TEST(PointerProvenance, IfAndWhileResultsUniteTheirRegions) {
  Provenance p(R"(kernel @k(%x: ptr<f32>, %y: ptr<f32>, %z: ptr<f32>, %c: i1) {
  %0 = if %c : ptr<f32> {
    yield %x
  } else {
    yield %y
  }
  %1 = while %z : ptr<f32> {
  ^bb(%2: ptr<f32>):
    condition %c, %2
  } do {
  ^bb(%3: ptr<f32>):
    yield %0
  }
  return
}
)");
  EXPECT_EQ(p("%0"), (Sources{0, 1}));
  EXPECT_EQ(p("%2"), (Sources{0, 1, 2}));
  EXPECT_EQ(p("%3"), (Sources{0, 1, 2}));
  EXPECT_EQ(p("%1"), (Sources{0, 1, 2}));
}

// An address from a table (issue #8: `tl.load(table + i).to(tl.pointer_type(...))`)
// points into an array no parameter covers: checking it against `%x` or `%y`
// would report a correct access, so its provenance is unknown and unchecked.
TEST(PointerProvenance, APointerMadeFromAnIntegerHasUnknownProvenance) {
  Provenance p(R"(kernel @k(%x: ptr<f32>, %n: i64, %y: ptr<i8>) {
  %0 = cast %n : ptr<f32>
  %1 = load %0 : f32
  %2 = addptr %0, %n : ptr<f32>
  %3 = addptr %x, %n : ptr<f32>
  return
}
)");
  EXPECT_TRUE(p.unknown("%0"));
  EXPECT_EQ(p("%0"), Sources{});
  EXPECT_TRUE(p.unknown("%2"));
  EXPECT_FALSE(p.unknown("%3"));
  EXPECT_EQ(p("%3"), Sources{0});
  EXPECT_FALSE(p.unknown("%x"));
}

// Unknown absorbs through select and loops: a pointer that may be the
// integer-made one is not checked either (checking it against `%x` alone
// would report the integer-made case).
TEST(PointerProvenance, UnknownAbsorbsThroughSelectAndLoops) {
  Provenance p(R"(kernel @k(%x: ptr<f32>, %a: i64, %c: i1) {
  %0 = cast %a : ptr<f32>
  %1 = select %c, %x, %0 : ptr<f32>
  %2 = constant {value = 0} : i32
  %3 = constant {value = 4} : i32
  %4 = constant {value = 1} : i32
  %5 = for %2, %3, %4, %x : ptr<f32> {
  ^bb(%6: i32, %7: ptr<f32>):
    %8 = load %7 : f32
    yield %0
  }
  return
}
)");
  EXPECT_TRUE(p.unknown("%1"));
  EXPECT_TRUE(p.unknown("%7"));
  EXPECT_TRUE(p.unknown("%5"));
  EXPECT_FALSE(p.unknown("%x"));
}

constexpr const char* kSitesKernel = R"(kernel @k(%x: ptr<f32>, %n: i32, %out: ptr<i8>) {
  %0 = arange {start = 0, end = 8} : tile<8xi32>  // a.py:3:5
  %1 = splat %x : tile<8xptr<f32>>
  %2 = addptr %1, %0 : tile<8xptr<f32>>
  %3 = load %2 : tile<8xf32>                                 // a.py:4:9
  %4 = constant {value = 0.0} : tile<8xf32>
  %5 = cmp %3, %4 {pred = "ge"} : tile<8xi1>
  assert %5 {message = "x >= 0"}                             // b b.py:5:5
  %6 = cast %3 : tile<8xi8>
  %7 = splat %out : tile<8xptr<i8>>
  %8 = addptr %7, %0 : tile<8xptr<i8>>
  store %8, %6                                               // a.py:6:5
  return
}
)";

TEST(DebugSites, NumberEveryAccessAndAssertInProgramOrder) {
  ir::Function fn = ir::parse(kSitesKernel);
  DebugSites sites(fn);
  ASSERT_EQ(sites.sites().size(), 3u);
  const DebugSite& load = sites.sites()[0];
  EXPECT_EQ(load.kind, DebugSite::Kind::Load);
  EXPECT_EQ(load.file, "a.py");
  EXPECT_EQ(load.line, 4);
  EXPECT_EQ(load.col, 9);
  EXPECT_EQ(load.element, ir::Scalar::F32);
  EXPECT_EQ(load.params, std::vector<int32_t>{0});
  const DebugSite& check = sites.sites()[1];
  EXPECT_EQ(check.kind, DebugSite::Kind::Assert);
  EXPECT_EQ(check.file, "b b.py");
  EXPECT_EQ(check.message, "x >= 0");
  EXPECT_EQ(check.shape, std::vector<int64_t>{8});
  const DebugSite& store = sites.sites()[2];
  EXPECT_EQ(store.kind, DebugSite::Kind::Store);
  EXPECT_EQ(store.element, ir::Scalar::I8);
  EXPECT_EQ(store.params, std::vector<int32_t>{2});

  int32_t seen = 0;
  fn.walk([&](ir::OpId id) {
    int32_t index = sites.index(id);
    if (index >= 0) EXPECT_EQ(index, seen++) << ir::name(fn.op(id).kind);
  });
  EXPECT_EQ(seen, 3);
}

TEST(DebugSites, TextRoundTripsExactly) {
  ir::Function fn = ir::parse(kSitesKernel);
  DebugSites sites(fn);
  for (const DebugSite& site : sites.sites()) {
    std::string text = to_text(site);
    EXPECT_EQ(text.find('\n'), std::string::npos);
    std::optional<DebugSite> back = parse_debug_site(text);
    ASSERT_TRUE(back) << text;
    EXPECT_EQ(*back, site) << text;
  }
  DebugSite odd;
  odd.kind = DebugSite::Kind::Atomic;
  odd.file = "dir with spaces/k\xc3\xa9.py";
  odd.message = "say \"no\" 100%\n";
  odd.params = {0, 3, 7};
  odd.shape = {4, 16};
  odd.element = ir::Scalar::BF16;
  EXPECT_EQ(to_text(odd), "atomic 0 0 bf16 0,3,7 4,16 6469722077697468207370616365732f6bc3a92e7079 "
                          "73617920226e6f2220313030250a");
  std::optional<DebugSite> back = parse_debug_site(to_text(odd));
  ASSERT_TRUE(back);
  EXPECT_EQ(*back, odd);
}

TEST(DebugSites, MalformedTextIsRejected) {
  for (const char* text : {"", "load", "load 1 2 f32 0 - -", "load 1 2 f32 0 - - - extra",
                           "loud 1 2 f32 0 - - -", "load x 2 f32 0 - - -", "load 1 2 f99 0 - - -",
                           "load 1 2 f32 0,,1 - - -", "load 1 2 f32 0 - 6 -", "load 1 2 f32 0 - zz -"})
    EXPECT_FALSE(parse_debug_site(text)) << text;
  EXPECT_TRUE(parse_debug_site("load 1 2 f32 0 - - -"));
}

}  // namespace
}  // namespace tegula::passes
