// Room left on the current thread's native stack, for recursion whose depth
// the input decides in ways no single count bounds.
//
// The front end recurses over expressions and blocks, and inlines every @jit
// call into its caller, so a helper's nesting adds to its caller's: each
// construct has its bound (200 brackets, 3,000 tree levels, 64 inlined
// calls), but they multiply. 60 helpers each calling the next inside 95
// nested calls overflowed an 8 MB stack. Asked at each level of that
// recursion, this says when the stack is nearly spent, so the caller can
// report a located error instead of crashing; it measures, so it holds for
// any thread's stack size and any build (sanitizers use more per frame).
#pragma once

#include <cstddef>
#include <cstdint>

namespace tegula {

class StackRoom {
 public:
  // What is left below the caller's frame when low() says so: enough to
  // report the error and unwind.
  static constexpr size_t kMargin = 256 * 1024;

  StackRoom();  // the bounds of the calling thread's stack

  // Whether fewer than kMargin bytes are left below the caller's frame.
  // Always false where the bounds are unknown.
  bool low() const;

 private:
  uintptr_t lowest_ = 0;  // the stack's lowest address (it grows down); 0: unknown
};

}  // namespace tegula
