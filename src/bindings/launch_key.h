// The specialization key of a launch: everything that decides which
// compiled kernel the launch runs, written as bytes without building any
// object, so that a launch in a loop costs one memcmp against the previous
// one. The bytes are the specialization itself: a cache miss decodes them
// back into the compile request's argument specs and the compile options,
// so the key and the request can never disagree.
//
// Per parameter, in order (Triton's rules, applied by launch_arguments.cpp):
//   pointer       element type, whether the address is 16-byte aligned, whether it holds a host TMA
//                 descriptor passed by value
//   int           width (i32, i64, u64, or the parameter's declared type), is the value 1 (a typed
//                 1 for a declared type), divisible by 16
//   float         its type (f32, or the parameter's declared float type)
//   bool          nothing more
//   constexpr     its value (kind and payload; a tuple: its length, then its elements)
//   descriptor    its base pointer's, its shape and strides as ints, block shape, padding
// then the launch options that change the code, debug mode, and the backend
// and device the launch runs on.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "frontend/request.h"
#include "ir/type.h"

namespace tegula::python {

// What decides an int argument's specialization.
struct IntClass {
  ir::Scalar width = ir::Scalar::I32;  // I32, I64 or U64; any integer type when declared
  bool is_one = false;
  bool divisible_by_16 = false;
  bool typed_one = false;  // with is_one: the parameter's type is declared (frontend::ArgSpec::typed_one)
};

class LaunchKey {
 public:
  // `host_descriptor`: the pointer is to a host TMA descriptor's bytes (frontend::legacy_descriptor::kBytes), passed by value
  // (frontend::ArgSpec::by_value_bytes).
  void pointer(ir::Scalar element, bool aligned16, bool host_descriptor = false);
  void integer(const IntClass& value);
  void real(ir::Scalar type = ir::Scalar::F32);
  void boolean();
  // Constexprs: one of these per value.
  void constant_int(int64_t value);
  void constant_bool(bool value);
  void constant_none();
  void constant_float(double value);  // by its bit pattern
  void constant_str(std::string_view value);
  void constant_dtype(std::string_view canonical_name);
  // A function of the tile language (its path, "triton.language.extra.cuda.smid")
  // or a @jit function (a reference the Python side resolves at compile time,
  // support.constexpr_function).
  void constant_language_member(std::string_view path);
  void constant_jit_function(std::string_view reference);
  // Any other value (a uuid.UUID): the kernel may hold it but not use it; `description` (its repr)
  // keys the compile and names it in errors.
  void constant_opaque(std::string_view description);
  // A tuple of constants: then one constant_*() call per element.
  void constant_tuple(uint32_t count);
  // A tuple of runtime values (a runtime parameter given a tuple): then one
  // item per element, runtime or constant (a tl.constexpr, None, a nested
  // tuple). `fields`: a named tuple's field names, comma-separated ("" for a
  // plain tuple).
  void tuple(uint32_t count, std::string_view fields);
  // A TensorDescriptor: its base, block shape and padding; then
  // `2 * block_shape.size()` integer() calls for its shape and strides.
  void descriptor(ir::Scalar element, bool aligned16, const std::vector<int64_t>& block_shape,
                  std::string_view padding);
  // After every parameter: the options, debug mode and where the launch runs.
  void trailer(int num_warps, int num_stages, bool fp_fusion, bool debug, int maxnreg, uint8_t backend,
               int32_t device);

  // do_not_specialize_on_alignment: forgets the 16-byte alignment of the
  // pointer, or the divisibility by 16 of the int, whose item starts at byte
  // `at` (its value 1 still specializes, as in Triton); other items stay.
  void drop_alignment(size_t at);
  size_t size() const { return spilled_.empty() ? size_ : spilled_.size(); }

  std::string_view bytes() const {
    return spilled_.empty() ? std::string_view(local_.data(), size_) : std::string_view(spilled_);
  }

 private:
  void append(const void* data, size_t size) {
    if (spilled_.empty() && size_ + size <= local_.size()) {
      std::memcpy(local_.data() + size_, data, size);
      size_ += size;
      return;
    }
    spill(data, size);
  }
  void append(char tag) { append(&tag, 1); }
  void text(std::string_view value);
  void spill(const void* data, size_t size);

  std::array<char, 192> local_;  // short keys (all but kernels with dozens of parameters) stay off the heap
  size_t size_ = 0;
  std::string spilled_;  // the whole key, once it outgrew local_
};

// A key read back: the compile request's argument specs and what the
// trailer holds.
struct DecodedKey {
  std::vector<frontend::ArgSpec> args;
  int num_warps = 4;
  int num_stages = 3;
  bool fp_fusion = true;
  bool debug = false;
  int maxnreg = 0;      // 0: none
  uint8_t backend = 0;  // index into runtime::all_backends()
  int32_t device = -1;
};
DecodedKey decode(std::string_view bytes);
// The argument specs of key items without a trailer (a key in the making).
std::vector<frontend::ArgSpec> decode_arguments(std::string_view items);

}  // namespace tegula::python
