#include "backends/launch_arguments.h"

#include <cstring>
#include <limits>

#include "ir/float_format.h"
#include "support/error.h"

namespace tegula::backends {

namespace {

std::string describe_kind(ArgValue::Kind kind) {
  switch (kind) {
    case ArgValue::Kind::Pointer: return "a pointer";
    case ArgValue::Kind::Int: return "an int";
    case ArgValue::Kind::UInt: return "an unsigned int";
    case ArgValue::Kind::Float: return "a float";
    case ArgValue::Kind::Bool: return "a bool";
  }
  return "a value";
}

std::string describe_value(const ArgValue& value) {
  switch (value.kind) {
    case ArgValue::Kind::Int: return std::to_string(static_cast<int64_t>(value.bits));
    case ArgValue::Kind::UInt: return std::to_string(value.bits);
    case ArgValue::Kind::Bool: return value.bits ? "True" : "False";
    default: return std::to_string(value.real);
  }
}

std::string signature_of(const std::vector<ir::Param>& params) {
  std::string out;
  for (const ir::Param& p : params) {
    if (!out.empty()) out += ", ";
    out += p.name + ": " + ir::to_string(p.type);
  }
  return "(" + out + ")";
}

class ArgumentPacker {
 public:
  explicit ArgumentPacker(const std::string& kernel) : kernel_(kernel) {}

  abi::ArgSlot pack(const ir::Param& param, const ArgValue& value) const {
    if (param.type.is_tile()) wrong_kind(param, value, "a scalar parameter type");
    if (param.type.is_pointer()) {
      if (value.kind != ArgValue::Kind::Pointer) wrong_kind(param, value, "a pointer (a tensor or array)");
      return store(reinterpret_cast<void*>(static_cast<uintptr_t>(value.bits)));
    }
    ir::Scalar scalar = param.type.scalar;
    switch (scalar) {
      case ir::Scalar::I1:
        if (value.kind != ArgValue::Kind::Bool && value.kind != ArgValue::Kind::Int)
          wrong_kind(param, value, "a bool");
        if (value.bits > 1) out_of_range(param, value, "0 or 1");
        return store(static_cast<uint8_t>(value.bits));
      case ir::Scalar::I8: return store(static_cast<int8_t>(signed_in_range(param, value, 8)));
      case ir::Scalar::I16: return store(static_cast<int16_t>(signed_in_range(param, value, 16)));
      case ir::Scalar::I32: return store(static_cast<int32_t>(signed_in_range(param, value, 32)));
      case ir::Scalar::I64: return store(signed_in_range(param, value, 64));
      case ir::Scalar::U8: return store(static_cast<uint8_t>(unsigned_in_range(param, value, 8)));
      case ir::Scalar::U16: return store(static_cast<uint16_t>(unsigned_in_range(param, value, 16)));
      case ir::Scalar::U32: return store(static_cast<uint32_t>(unsigned_in_range(param, value, 32)));
      case ir::Scalar::U64: return store(unsigned_in_range(param, value, 64));
      case ir::Scalar::F32: return store(static_cast<float>(real(param, value)));
      case ir::Scalar::F64: return store(real(param, value));
      // Narrow floats travel as their bits (kernel_abi.h), rounded once from the double the host holds:
      // through f32 first, a value could round twice.
      case ir::Scalar::F16:
      case ir::Scalar::BF16: return store(static_cast<uint16_t>(ir::encode_float(real(param, value), scalar)));
      case ir::Scalar::F8E4M3:
      case ir::Scalar::F8E5M2:
      case ir::Scalar::F8E4B15:
      case ir::Scalar::F8E4B8:
      case ir::Scalar::F8E5B16: return store(static_cast<uint8_t>(ir::encode_float(real(param, value), scalar)));
    }
    TEGULA_ASSERT(false, "a scalar type without a packing");
  }

 private:
  template <class T>
  static abi::ArgSlot store(T value) {
    static_assert(sizeof(T) <= sizeof(abi::ArgSlot));
    abi::ArgSlot slot = 0;
    std::memcpy(&slot, &value, sizeof(T));
    return slot;
  }

  [[noreturn]] void wrong_kind(const ir::Param& param, const ArgValue& value, const std::string& expected) const {
    fail(ErrorKind::Type, Diag::LaunchArgumentType,
         "argument '" + param.name + "' of kernel '" + kernel_ + "' expects " + expected +
                              " (" + ir::to_string(param.type) + "), got " + describe_kind(value.kind));
  }

  [[noreturn]] void out_of_range(const ir::Param& param, const ArgValue& value, const std::string& range) const {
    fail(ErrorKind::Value, Diag::LaunchArgumentRange,
         "argument '" + param.name + "' of kernel '" + kernel_ + "' is " +
                               ir::to_string(param.type) + ", but " + describe_value(value) +
                               " is out of its range (" + range + ")");
  }

  // The range texts are made only for the error: every launch packs every argument.
  int64_t signed_in_range(const ir::Param& param, const ArgValue& value, int bits) const {
    int64_t max = bits == 64 ? std::numeric_limits<int64_t>::max() : (int64_t{1} << (bits - 1)) - 1;
    int64_t min = -max - 1;
    auto fail_range = [&] { out_of_range(param, value, std::to_string(min) + " to " + std::to_string(max)); };
    switch (value.kind) {
      case ArgValue::Kind::Bool: return value.bits ? 1 : 0;
      case ArgValue::Kind::Int: {
        auto v = static_cast<int64_t>(value.bits);
        if (v < min || v > max) fail_range();
        return v;
      }
      case ArgValue::Kind::UInt:
        if (value.bits > static_cast<uint64_t>(max)) fail_range();
        return static_cast<int64_t>(value.bits);
      default: wrong_kind(param, value, "an integer");
    }
  }

  uint64_t unsigned_in_range(const ir::Param& param, const ArgValue& value, int bits) const {
    uint64_t max = bits == 64 ? std::numeric_limits<uint64_t>::max() : (uint64_t{1} << bits) - 1;
    auto fail_range = [&] { out_of_range(param, value, "0 to " + std::to_string(max)); };
    switch (value.kind) {
      case ArgValue::Kind::Bool: return value.bits ? 1 : 0;
      case ArgValue::Kind::Int:
        if (static_cast<int64_t>(value.bits) < 0 || value.bits > max) fail_range();
        return value.bits;
      case ArgValue::Kind::UInt:
        if (value.bits > max) fail_range();
        return value.bits;
      default: wrong_kind(param, value, "an integer");
    }
  }

  double real(const ir::Param& param, const ArgValue& value) const {
    switch (value.kind) {
      case ArgValue::Kind::Float: return value.real;
      case ArgValue::Kind::Int: return static_cast<double>(static_cast<int64_t>(value.bits));
      case ArgValue::Kind::UInt: return static_cast<double>(value.bits);
      default: wrong_kind(param, value, "a float");
    }
  }

  const std::string& kernel_;
};

}  // namespace

void PackedArguments::append(abi::ArgSlot slot) {
  slots.push_back(slot);
  argv.clear();
  for (size_t i = 0; i < slots.size(); ++i) argv.push_back(&slots[i]);
  for (const ByValue& v : by_value_) argv[v.index] = v.bytes;
}

void PackedArguments::pass_by_value(size_t index, const void* bytes) {
  TEGULA_ASSERT(index < argv.size(), "a parameter passed by value beyond the packed arguments");
  // cuLaunchKernel only reads through argv.
  by_value_.push_back({index, const_cast<void*>(bytes)});
  argv[index] = const_cast<void*>(bytes);
}

void pack_arguments(const std::string& kernel, const std::vector<ir::Param>& params, std::span<const ArgValue> args,
                    PackedArguments& out) {
  if (args.size() != params.size())
    fail(ErrorKind::Value, Diag::LaunchArgumentCount,
         "kernel '" + kernel + "' takes " + std::to_string(params.size()) + " runtime argument" +
             (params.size() == 1 ? "" : "s") + " " + signature_of(params) + ", got " + std::to_string(args.size()));
  ArgumentPacker packer(kernel);
  for (size_t i = 0; i < args.size(); ++i) out.slots.push_back(packer.pack(params[i], args[i]));
  // After the last slot: a spill to the heap moves them.
  for (size_t i = 0; i < args.size(); ++i) out.argv.push_back(&out.slots[i]);
}

}  // namespace tegula::backends
