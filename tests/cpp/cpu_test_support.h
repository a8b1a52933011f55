// Helpers for the CPU backend tests: building kernels by hand with
// ir::Builder, compiling them with the real toolchain, calling the entry
// point, guarded buffers that fault when a masked-off element is touched,
// and independent references for f16/bf16/f32/f64 rounding.
#pragma once

#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "backends/cpu/codegen.h"
#include "backends/cpu/toolchain.h"
#include "backends/kernel_abi.h"
#include "ir/builder.h"
#include "ir/float_format.h"
#include "ir/ir.h"
#include "temp_dir.h"

namespace tegula::cpu_test {

using testing::TempDir;
using ir::Attr;
using ir::OpKind;
using ir::Scalar;
using ir::Type;
using ir::ValueId;

// --- building kernels ----------------------------------------------------------------

class KernelBuilder {
 public:
  explicit KernelBuilder(std::string name) : b(fn) {
    fn.name = std::move(name);
    fn.files = {"test.py"};
    b.set_insertion_end(fn.body());
    b.set_loc(SourceLoc{0, 1, 1, 2});
  }

  ir::Function fn;
  ir::Builder b;

  void at(int line, int col) { b.set_loc(SourceLoc{0, line, col, col + 1}); }
  ValueId param(std::string name, Type t, int64_t divisibility = 1) {
    fn.params.push_back(ir::Param{std::move(name), t, divisibility});
    return fn.add_block_arg(fn.body(), t);
  }
  const Type& type(ValueId v) const { return fn.type(v); }
  ValueId op(OpKind k, std::vector<ValueId> operands, Type t, std::vector<ir::NamedAttr> attrs = {}) {
    return b.create1(k, std::move(operands), std::move(t), std::move(attrs));
  }
  ValueId constant(int64_t v, Type t) { return b.int_constant(v, std::move(t)); }
  ValueId fconstant(double v, Type t) { return b.float_constant(v, std::move(t)); }
  ValueId i32(int64_t v) { return constant(v, Type::of(Scalar::I32)); }
  ValueId arange(int64_t n) {
    return op(OpKind::Arange, {}, Type::tile(Scalar::I32, {n}),
              {{"start", Attr{int64_t{0}}}, {"end", Attr{n}}});
  }
  ValueId splat(ValueId s, std::vector<int64_t> shape) {
    return op(OpKind::Splat, {s}, type(s).with_shape(std::move(shape)));
  }
  ValueId binary(OpKind k, ValueId x, ValueId y) { return op(k, {x, y}, type(x)); }
  ValueId unary(OpKind k, ValueId x) { return op(k, {x}, type(x)); }
  ValueId cmp(const std::string& pred, ValueId x, ValueId y) {
    Type t = type(x);
    return op(OpKind::Cmp, {x, y}, Type{Scalar::I1, false, t.shape}, {{"pred", Attr{pred}}});
  }
  ValueId cast(ValueId x, Scalar to) {
    Type t = type(x);
    return op(OpKind::Cast, {x}, Type{to, false, t.shape});
  }
  // addptr(splat(base), offsets)
  ValueId pointers(ValueId base, ValueId offsets) {
    Type t = type(offsets);
    ValueId ptrs = splat(base, t.shape);
    return op(OpKind::AddPtr, {ptrs, offsets}, Type{type(base).scalar, true, t.shape});
  }
  ValueId load(ValueId ptrs, ValueId mask = {}, ValueId other = {}) {
    std::vector<ValueId> operands = {ptrs};
    if (mask.valid()) operands.push_back(mask);
    if (other.valid()) operands.push_back(other);
    Type t = type(ptrs);
    return op(OpKind::Load, operands, Type{t.scalar, false, t.shape});
  }
  void store(ValueId ptrs, ValueId value, ValueId mask = {}) {
    std::vector<ValueId> operands = {ptrs, value};
    if (mask.valid()) operands.push_back(mask);
    b.create(OpKind::Store, operands, {});
  }
  void yield(std::vector<ValueId> values) { b.create(OpKind::Yield, std::move(values), {}); }
  void ret() { b.create(OpKind::Return, {}, {}); }

  // Opens a region of `op` and moves the insertion point into it.
  ir::BlockId region(ir::OpId owner) {
    ir::BlockId block = fn.add_block(owner);
    fn.op(owner).regions.push_back(block);
    b.set_insertion_end(block);
    return block;
  }
  void resume(ir::BlockId block) { b.set_insertion_end(block); }
};

// --- compiling and running ---------------------------------------------------------------

using Entry = void (*)(void* const*, const int32_t*, int64_t, int64_t);


class CompiledKernel {
 public:
  explicit CompiledKernel(const ir::Function& fn, backends::cpu::CodegenOptions options = {}) {
    source = backends::cpu::emit_cpp(fn, options);
    std::string so = dir_.path() + "/kernel.so";
    backends::cpu::compile_shared_object(source, so);
    handle_ = ::dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle_ == nullptr) throw std::runtime_error(std::string("dlopen: ") + ::dlerror());
    entry_ = reinterpret_cast<Entry>(::dlsym(handle_, "tegula_kernel"));
    if (entry_ == nullptr) throw std::runtime_error("no tegula_kernel symbol");
  }
  ~CompiledKernel() {
    if (handle_ != nullptr) ::dlclose(handle_);
  }
  CompiledKernel(const CompiledKernel&) = delete;
  CompiledKernel& operator=(const CompiledKernel&) = delete;

  // `args` are the kernel's slots (and the debug ones); the StopPoll slot
  // every launch passes last (backends/kernel_abi.h) is added here: `stop`,
  // or one that never stops.
  void run(const std::vector<void*>& args, int32_t gx = 1, int32_t gy = 1, int32_t gz = 1) const {
    int32_t grid[3] = {gx, gy, gz};
    run_range(args, grid, 0, int64_t{gx} * gy * gz);
  }
  void run_range(const std::vector<void*>& args, const int32_t grid[3], int64_t first, int64_t last,
                 backends::abi::StopPoll* stop = nullptr) const {
    static backends::abi::StopPoll never{[](backends::abi::StopPoll*) { return int32_t{0}; }};
    backends::abi::StopPoll* stop_address = stop ? stop : &never;
    std::vector<void*> slots = args;
    slots.push_back(&stop_address);
    entry_(slots.data(), grid, first, last);
  }

  std::string source;

 private:
  TempDir dir_;
  void* handle_ = nullptr;
  Entry entry_ = nullptr;
};

// Argument slots in the layout codegen.h documents.
class Args {
 public:
  Args& ptr(const void* p) { return slot(&p, sizeof p); }
  Args& i32(int32_t v) { return slot(&v, sizeof v); }
  Args& i64(int64_t v) { return slot(&v, sizeof v); }
  Args& f32(float v) { return slot(&v, sizeof v); }
  const std::vector<void*>& get() const { return pointers_; }

 private:
  Args& slot(const void* value, size_t size) {
    slots_.push_back(std::make_unique<uint64_t>(0));
    std::memcpy(slots_.back().get(), value, size);
    pointers_.push_back(slots_.back().get());
    return *this;
  }
  std::vector<std::unique_ptr<uint64_t>> slots_;
  std::vector<void*> pointers_;
};

// `bytes` of memory that end exactly where an inaccessible page begins, so a
// read or write past the end faults.
class GuardedBuffer {
 public:
  explicit GuardedBuffer(size_t bytes) : bytes_(bytes) {
    size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
    size_t usable = (bytes + page - 1) / page * page;
    mapped_ = usable + page;
    void* m = ::mmap(nullptr, mapped_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) throw std::runtime_error("mmap failed");
    base_ = static_cast<unsigned char*>(m);
    ::mprotect(base_ + usable, page, PROT_NONE);
    data_ = base_ + usable - bytes;
  }
  ~GuardedBuffer() { ::munmap(base_, mapped_); }
  GuardedBuffer(const GuardedBuffer&) = delete;
  GuardedBuffer& operator=(const GuardedBuffer&) = delete;
  unsigned char* data() { return data_; }
  size_t size() const { return bytes_; }

 private:
  size_t bytes_, mapped_;
  unsigned char* base_;
  unsigned char* data_;
};

// --- float formats, independently of the generated code -------------------------------

struct FloatFormat {
  int mantissa_bits;  // with the implicit bit
  int min_exponent;   // of the smallest normal
  int max_exponent;   // of the largest finite
};

inline FloatFormat format_of(Scalar s) {
  switch (s) {
    case Scalar::F16: return {11, -14, 15};
    case Scalar::BF16: return {8, -126, 127};
    case Scalar::F32: return {24, -126, 127};
    default: return {53, -1022, 1023};
  }
}

// The unit in the last place of the format around x.
inline long double ulp_of(long double x, FloatFormat f) {
  int e = 0;
  std::frexp(x, &e);
  int lead = x == 0 ? f.min_exponent : std::max(e - 1, f.min_exponent);
  return std::ldexp(1.0L, lead - (f.mantissa_bits - 1));
}

// x rounded to nearest-even in the format (scaling by a power of two is
// exact, nearbyint rounds half to even).
inline long double round_to(long double x, Scalar s) {
  if (std::isnan(x) || std::isinf(x) || x == 0) return x;
  FloatFormat f = format_of(s);
  long double ulp = ulp_of(x, f);
  long double r = std::nearbyint(x / ulp) * ulp;
  long double max_finite = std::ldexp(2.0L - std::ldexp(1.0L, 1 - f.mantissa_bits), f.max_exponent);
  if (std::fabs(r) > max_finite) return std::copysign(INFINITY, x);
  return r;
}

// Value of an element of scalar kind s stored at p.
inline long double decode(Scalar s, const void* p) {
  switch (s) {
    case Scalar::F16: {
      uint16_t h;
      std::memcpy(&h, p, 2);
      int e = (h >> 10) & 31, m = h & 1023;
      long double v = e == 0 ? std::ldexp((long double)m, -24)
                      : e == 31 ? (m ? NAN : INFINITY)
                                : std::ldexp((long double)(1024 + m), e - 25);
      return (h & 0x8000) ? -v : v;
    }
    case Scalar::BF16: {
      uint16_t h;
      std::memcpy(&h, p, 2);
      uint32_t bits = (uint32_t)h << 16;
      float f;
      std::memcpy(&f, &bits, 4);
      return f;
    }
    case Scalar::F32: { float f; std::memcpy(&f, p, 4); return f; }
    case Scalar::F64: { double d; std::memcpy(&d, p, 8); return d; }
    case Scalar::I1: return *static_cast<const uint8_t*>(p) != 0;
    case Scalar::I8: return *static_cast<const int8_t*>(p);
    case Scalar::I16: { int16_t v; std::memcpy(&v, p, 2); return v; }
    case Scalar::I32: { int32_t v; std::memcpy(&v, p, 4); return v; }
    case Scalar::I64: { int64_t v; std::memcpy(&v, p, 8); return (long double)v; }
    case Scalar::U8: return *static_cast<const uint8_t*>(p);
    case Scalar::U16: { uint16_t v; std::memcpy(&v, p, 2); return v; }
    case Scalar::U32: { uint32_t v; std::memcpy(&v, p, 4); return v; }
    case Scalar::U64: { uint64_t v; std::memcpy(&v, p, 8); return (long double)v; }
    case Scalar::F8E4M3:
    case Scalar::F8E5M2:
    case Scalar::F8E4B15:
    case Scalar::F8E4B8:
    case Scalar::F8E5B16: return ir::decode_float(*static_cast<const uint8_t*>(p), s);
  }
  return 0;
}

// Stores x (exactly representable in the float format s) at p.
inline void encode_float(Scalar s, long double x, void* p) {
  switch (s) {
    case Scalar::F16: {
      uint16_t sign = std::signbit(x) ? 0x8000 : 0;
      long double a = std::fabs(x);
      uint16_t bits;
      if (std::isnan(x)) bits = 0x7e00;
      else if (std::isinf(x)) bits = 0x7c00;
      else if (a < std::ldexp(1.0L, -14)) bits = (uint16_t)(a * std::ldexp(1.0L, 24));
      else {
        int e = 0;
        std::frexp(a, &e);
        int exp = e - 1;
        bits = (uint16_t)(((exp + 15) << 10) | (uint16_t)((a / std::ldexp(1.0L, exp) - 1) * 1024));
      }
      bits |= sign;
      std::memcpy(p, &bits, 2);
      return;
    }
    case Scalar::BF16: {
      float f = (float)x;
      uint32_t bits;
      std::memcpy(&bits, &f, 4);
      uint16_t h = (uint16_t)(bits >> 16);
      std::memcpy(p, &h, 2);
      return;
    }
    case Scalar::F32: { float f = (float)x; std::memcpy(p, &f, 4); return; }
    default: { double d = (double)x; std::memcpy(p, &d, 8); return; }
  }
}

}  // namespace tegula::cpu_test
