// The `--signature` of `tegula compile`: how the command line says what each
// kernel parameter is bound to, in the spirit of Triton's ahead-of-time
// signatures.
//
//   "*fp32:16, *fp32, i32:16, fp32, 1024"
//
// One comma-separated entry per kernel parameter, in order:
//   *DTYPE[:16]   a pointer to DTYPE elements (`:16`: the address is 16-byte aligned)
//   i32 | i64 | u64 [:16 | :1]
//                 an integer (`:16`: divisible by 16; `:1`: the value is 1)
//   fp32          a float scalar;  i1  a bool scalar
//   VALUE         for a tl.constexpr parameter: 1024, -1, 0x10, 0.5, 1e-6, True,
//                 False, None, a dtype (fp16, bf16, float32...) or a quoted string
// DTYPE is one of fp16 bf16 fp32 fp64 i1 i8 i16 i32 i64 u8 u16 u32 u64, or a
// long spelling (float16, bfloat16, float32, int32, uint8, bool...).
// Trailing parameters may be left out when `--const NAME=VALUE` gives them or
// they have a literal default in the source.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "frontend/request.h"

namespace tegula::tools {

// A mistake on the command line, said in terms of the entry or option at fault.
class SignatureError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// One kernel parameter, as the signature needs to know it.
struct KernelParam {
  std::string name;
  bool is_constexpr = false;                           // annotated tl.constexpr
  std::optional<frontend::GlobalValue> default_value;  // a literal default in the source
};

// The Tegula name of a dtype spelling ("fp16" -> "float16", "i32" -> "int32"),
// as GlobalValue::DType expects it; nullopt if `text` names no dtype.
std::optional<std::string> canonical_dtype_name(std::string_view text);

// The value of a constexpr literal: an int, a float, True/False/None, a dtype
// name, or a string in single or double quotes. nullopt if `text` is none of these.
std::optional<frontend::GlobalValue> parse_constexpr_literal(std::string_view text);

// The ArgSpec of one signature entry for `param`. Throws SignatureError.
frontend::ArgSpec parse_entry(std::string_view entry, const KernelParam& param);

// The ArgSpecs of every parameter of kernel `kernel`, from the signature text
// and the `--const NAME=VALUE` pairs. Throws SignatureError naming the entry
// (1-based) or option at fault and why.
std::vector<frontend::ArgSpec> bind_signature(std::string_view kernel, std::string_view signature,
                                              const std::vector<KernelParam>& params,
                                              const std::vector<std::pair<std::string, std::string>>& consts);

}  // namespace tegula::tools
