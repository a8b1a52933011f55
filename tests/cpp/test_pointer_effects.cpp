// Pointer effects (passes/pointer_effects.h): which pointer parameters a
// kernel may read, write or update atomically, on IR written by hand. The
// Python side checks the same answers on compiled kernels
// (tests/python/test_autotune.py).
#include <gtest/gtest.h>

#include "ir/parser.h"
#include "passes/pointer_effects.h"

namespace tegula::passes {
namespace {

constexpr PointerEffects kNone{};
constexpr PointerEffects kRead{true, false, false};
constexpr PointerEffects kWritten{false, true, false};
constexpr PointerEffects kReadWritten{true, true, false};
constexpr PointerEffects kAtomic{true, true, true};

std::vector<PointerEffects> effects_of(const std::string& text) { return pointer_effects(ir::parse(text)); }

TEST(PointerEffects, LoadsReadStoresWriteThroughLoopsAndLoadedOffsets) {
  // %x is read and written; %y is written through a pointer that a loaded
  // index moves and a loop carries (an index never makes it point into
  // another array); %idx is only read; %unused is untouched; %n is no pointer.
  std::vector<PointerEffects> effects = effects_of(R"(kernel @k(%x: ptr<f32>, %y: ptr<f32>, %idx: ptr<i32>, %unused: ptr<f32>, %n: i32) {
  %0 = constant {value = 0} : i32
  %1 = constant {value = 1} : i32
  %2 = load %x : f32
  %3 = load %idx : i32
  %4 = addptr %y, %3 : ptr<f32>
  %5 = for %0, %n, %1, %4 : ptr<f32> {
  ^bb(%6: i32, %7: ptr<f32>):
    %8 = addptr %7, %1 : ptr<f32>
    yield %8
  }
  store %5, %2
  store %x, %2
  return
}
)");
  EXPECT_EQ(effects, (std::vector<PointerEffects>{kReadWritten, kWritten, kRead, kNone, kNone}));
}

TEST(PointerEffects, AnAtomicReadsWritesAndUpdatesAtomically) {
  std::vector<PointerEffects> effects = effects_of(R"(kernel @k(%acc: ptr<f32>, %x: ptr<f32>) {
  %0 = load %x : f32
  %1 = atomic_rmw %acc, %0 {op = "add", sem = "acq_rel"} : f32
  return
}
)");
  EXPECT_EQ(effects, (std::vector<PointerEffects>{kAtomic, kRead}));
}

TEST(PointerEffects, AnAddressMadeFromAnIntegerMayWriteEveryPointerParameter) {
  std::vector<PointerEffects> effects = effects_of(R"(kernel @k(%p: ptr<f32>, %q: ptr<f32>, %a: i64) {
  %0 = cast %a : ptr<f32>
  %1 = constant {value = 1.0} : f32
  store %0, %1
  return
}
)");
  EXPECT_EQ(effects, (std::vector<PointerEffects>{kWritten, kWritten, kNone}));
}

}  // namespace
}  // namespace tegula::passes
