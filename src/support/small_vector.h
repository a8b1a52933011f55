// A vector that keeps its first N elements inside the object: the per-launch
// lists of the launcher (bound arguments, launch values, array places) and
// the packed arguments of a launch stay off the heap for the usual parameter
// counts, and nothing is written before it is used. Only for trivially
// copyable T. Neither copyable nor movable: its elements may live inside it,
// and the lists live for one launch.
#pragma once

#include <cstddef>
#include <new>
#include <type_traits>
#include <vector>

namespace tegula {

template <class T, size_t N>
class SmallVector {
  static_assert(std::is_trivially_copyable_v<T>);

 public:
  SmallVector() = default;
  SmallVector(const SmallVector&) = delete;
  SmallVector& operator=(const SmallVector&) = delete;
  explicit SmallVector(size_t size, T fill = T{}) {
    for (size_t i = 0; i < size; ++i) push_back(fill);
  }

  // The inline case stays small enough for the compiler to inline at every
  // call; moving to the heap is out of line.
  void push_back(const T& value) {
    if (size_ < N) [[likely]] {
      new (local() + size_++) T(value);
      return;
    }
    spill(value);
  }

  void clear() {
    heap_.clear();
    size_ = 0;
  }

  T* data() { return size_ > N ? heap_.data() : local(); }
  const T* data() const { return size_ > N ? heap_.data() : local(); }
  T& operator[](size_t i) { return data()[i]; }
  const T& operator[](size_t i) const { return data()[i]; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const T* begin() const { return data(); }
  const T* end() const { return data() + size_; }

 private:
  [[gnu::noinline]] void spill(const T& value) {
    if (size_ == N) heap_.assign(local(), local() + N);
    heap_.push_back(value);
    ++size_;
  }

  T* local() { return std::launder(reinterpret_cast<T*>(storage_)); }
  const T* local() const { return std::launder(reinterpret_cast<const T*>(storage_)); }

  // Left uninitialized: a launch writes only the elements it uses.
  alignas(T) std::byte storage_[N * sizeof(T)];
  std::vector<T> heap_;  // all elements, once there are more than N
  size_t size_ = 0;
};

}  // namespace tegula
