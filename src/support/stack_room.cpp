#include "support/stack_room.h"

#include <pthread.h>

namespace tegula {

StackRoom::StackRoom() {
  pthread_attr_t attr;
  if (pthread_getattr_np(pthread_self(), &attr) != 0) return;
  void* address = nullptr;
  size_t size = 0;
  if (pthread_attr_getstack(&attr, &address, &size) == 0) lowest_ = reinterpret_cast<uintptr_t>(address);
  pthread_attr_destroy(&attr);
}

bool StackRoom::low() const {
  if (lowest_ == 0) return false;
  // The frame's address, not a local's: under AddressSanitizer locals may
  // live on a separate fake stack.
  auto here = reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
  return here < lowest_ + kMargin;
}

}  // namespace tegula
