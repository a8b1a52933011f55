#include "cli/signature.h"

#include <algorithm>
#include <limits>
#include <map>

#include "frontend/legacy_descriptor_layout.h"
#include "frontend/lexer.h"
#include "frontend/type_rules.h"
#include "support/diagnostic.h"

namespace tegula::tools {

using frontend::ArgSpec;
using frontend::GlobalValue;

namespace {

constexpr const char* kDtypeList = "fp16, bf16, fp32, fp64, i1, i8, i16, i32, i64, u8, u16, u32, u64";

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

const char* canonical_name(ir::Scalar s) { return ir::scalar_info(s).tl_name; }

GlobalValue int_value(int64_t v) {
  GlobalValue g;
  g.kind = GlobalValue::Kind::Int;
  g.int_value = v;
  return g;
}

// Splits at commas outside quotes (a string constexpr may hold a comma).
std::vector<std::string_view> split_entries(std::string_view text) {
  std::vector<std::string_view> entries;
  if (trim(text).empty()) return entries;
  char quote = 0;
  size_t start = 0;
  for (size_t i = 0; i <= text.size(); ++i) {
    char c = i < text.size() ? text[i] : ',';
    if (quote) {
      if (c == '\\') ++i;
      else if (c == quote) quote = 0;
    } else if (c == '\'' || c == '"') {
      quote = c;
    } else if (c == ',') {
      entries.push_back(trim(text.substr(start, i - start)));
      start = i + 1;
    }
  }
  if (quote)
    throw SignatureError("the string " + std::string(trim(text.substr(start))) + " in the signature has no closing " +
                         std::string(1, quote));
  return entries;
}

// The ArgSpec a runtime parameter gets from its literal default, as if the
// value had been passed at launch (ints specialize like Python launches do).
ArgSpec spec_from_default(const KernelParam& param) {
  const GlobalValue& v = *param.default_value;
  ArgSpec spec;
  switch (v.kind) {
    case GlobalValue::Kind::Int:
      spec.kind = ArgSpec::Kind::Int;
      spec.dtype = v.int_value >= std::numeric_limits<int32_t>::min() && v.int_value <= std::numeric_limits<int32_t>::max()
                       ? ir::Scalar::I32
                       : ir::Scalar::I64;
      spec.is_one = v.int_value == 1;
      spec.divisibility = v.int_value % 16 == 0 ? 16 : 1;
      return spec;
    case GlobalValue::Kind::Float:
      spec.kind = ArgSpec::Kind::Float;
      spec.dtype = ir::Scalar::F32;
      return spec;
    case GlobalValue::Kind::Bool:
      spec.kind = ArgSpec::Kind::Bool;
      spec.dtype = ir::Scalar::I1;
      return spec;
    default:
      throw SignatureError("parameter '" + param.name +
                           "' is a runtime argument whose default is not a number or a bool; give it a "
                           "signature entry");
  }
}

}  // namespace

std::optional<std::string> canonical_dtype_name(std::string_view text) {
  std::optional<ir::Scalar> scalar = frontend::dtype_from_name(std::string(text));
  if (!scalar) return std::nullopt;
  return std::string(canonical_name(*scalar));
}

std::optional<GlobalValue> parse_constexpr_literal(std::string_view text) {
  text = trim(text);
  if (text.empty() || text.find('\n') != std::string_view::npos) return std::nullopt;
  // Python's own literal syntax (underscores, 0x, 1e-6, escapes), by the kernel lexer.
  SourceManager sources;
  std::vector<frontend::Token> tokens;
  try {
    tokens = frontend::tokenize(sources, sources.add("<signature>", std::string(text)));
  } catch (const UserError&) {
    return std::nullopt;
  }
  using frontend::TokenKind;
  while (!tokens.empty() && (tokens.back().kind == TokenKind::EndOfFile || tokens.back().kind == TokenKind::Newline))
    tokens.pop_back();
  if (tokens.empty()) return std::nullopt;
  GlobalValue g;
  const frontend::Token& first = tokens.front();
  if (tokens.size() == 1 && first.kind == TokenKind::Keyword) {
    if (first.text == "None") return g;
    if (first.text != "True" && first.text != "False") return std::nullopt;
    g.kind = GlobalValue::Kind::Bool;
    g.int_value = first.text == "True";
    return g;
  }
  if (std::all_of(tokens.begin(), tokens.end(), [](const auto& t) { return t.kind == TokenKind::String; })) {
    g.kind = GlobalValue::Kind::Str;
    for (const frontend::Token& t : tokens) g.text += t.value;
    return g;
  }
  // A dtype: `fp16`, or spelled through the language module: `tl.float16`.
  const frontend::Token& last = tokens.back();
  bool qualified = tokens.size() == 3 && first.kind == TokenKind::Name && tokens[1].is_op(".");
  if (last.kind == TokenKind::Name && (tokens.size() == 1 || qualified)) {
    std::optional<std::string> name = canonical_dtype_name(last.text);
    if (!name) return std::nullopt;
    g.kind = GlobalValue::Kind::DType;
    g.text = *name;
    return g;
  }
  bool negative = tokens.size() == 2 && first.is_op("-");
  if (tokens.size() != 1 && !(tokens.size() == 2 && (negative || first.is_op("+")))) return std::nullopt;
  if (last.kind == TokenKind::Float) {
    g.kind = GlobalValue::Kind::Float;
    g.float_value = negative ? -last.float_value : last.float_value;
    return g;
  }
  if (last.kind != TokenKind::Int) return std::nullopt;
  uint64_t magnitude = static_cast<uint64_t>(last.int_value);
  if (!negative && last.is_unsigned) return std::nullopt;  // above INT64_MAX
  if (negative && magnitude > uint64_t{1} << 63) return std::nullopt;
  return int_value(negative ? static_cast<int64_t>(0 - magnitude) : static_cast<int64_t>(magnitude));
}

ArgSpec parse_entry(std::string_view entry, const KernelParam& param) {
  entry = trim(entry);
  ArgSpec spec;
  if (param.is_constexpr) {
    std::optional<GlobalValue> value = parse_constexpr_literal(entry);
    if (!value)
      throw SignatureError("'" + std::string(entry) + "' is not a value; parameter '" + param.name +
                           "' is a tl.constexpr, so its entry must be a value such as 1024, -1, 0.5, True, "
                           "None, fp16 or 'text'");
    spec.kind = ArgSpec::Kind::Constexpr;
    spec.value = *value;
    return spec;
  }
  size_t colon = entry.find(':');
  std::string_view type = trim(entry.substr(0, colon));
  std::string_view suffix = colon == std::string_view::npos ? std::string_view() : trim(entry.substr(colon + 1));
  if (colon != std::string_view::npos && suffix.empty())
    throw SignatureError("'" + std::string(entry) + "' ends with ':'; write ':16' or leave the suffix out");
  // Triton's name for a host TMA descriptor: its bytes, passed by value, read as *u8.
  if (type == "nvTmaDesc") {
    if (!suffix.empty()) throw SignatureError("'nvTmaDesc' takes no ':' suffix");
    spec.kind = ArgSpec::Kind::Pointer;
    spec.dtype = ir::Scalar::U8;
    spec.divisibility = 16;
    spec.by_value_bytes = frontend::legacy_descriptor::kBytes;
    return spec;
  }
  bool pointer = !type.empty() && type.front() == '*';
  std::string_view dtype_text = trim(pointer ? type.substr(1) : type);
  std::optional<ir::Scalar> scalar = frontend::dtype_from_name(std::string(dtype_text));
  if (!scalar) {
    if (!pointer && colon == std::string_view::npos && parse_constexpr_literal(entry))
      throw SignatureError("'" + std::string(entry) + "' is a value, but parameter '" + param.name +
                           "' is a runtime argument, so its entry must be a type such as i32, fp32 or "
                           "*fp16:16 (annotate it `tl.constexpr` to compile for one value)");
    throw SignatureError("'" + std::string(dtype_text) + "' is not a dtype; expected one of " + kDtypeList +
                         (pointer ? "" : ", or *DTYPE for a pointer"));
  }
  spec.dtype = *scalar;
  if (pointer) {
    if (!suffix.empty() && suffix != "16")
      throw SignatureError("a pointer entry takes only ':16' (16-byte aligned), not ':" + std::string(suffix) + "'");
    spec.kind = ArgSpec::Kind::Pointer;
    spec.divisibility = suffix == "16" ? 16 : 1;
    return spec;
  }
  switch (*scalar) {
    case ir::Scalar::I32:
    case ir::Scalar::I64:
    case ir::Scalar::U64:
      if (!suffix.empty() && suffix != "16" && suffix != "1")
        throw SignatureError("an integer entry takes ':16' (divisible by 16) or ':1' (equal to 1), not ':" +
                             std::string(suffix) + "'");
      spec.kind = ArgSpec::Kind::Int;
      spec.divisibility = suffix == "16" ? 16 : 1;
      spec.is_one = suffix == "1";
      return spec;
    case ir::Scalar::F32:
    case ir::Scalar::I1:
      if (!suffix.empty())
        throw SignatureError("'" + std::string(type) + "' takes no ':' suffix");
      spec.kind = *scalar == ir::Scalar::F32 ? ArgSpec::Kind::Float : ArgSpec::Kind::Bool;
      return spec;
    case ir::Scalar::F16:
    case ir::Scalar::BF16:
    case ir::Scalar::F64:
    case ir::Scalar::F8E4M3:
    case ir::Scalar::F8E5M2:
    case ir::Scalar::F8E4B15:
    case ir::Scalar::F8E4B8:
    case ir::Scalar::F8E5B16:
      throw SignatureError("float scalar arguments are passed as fp32, not " + std::string(type) +
                           " (pointers may point to any dtype: *" + std::string(type) + ")");
    default:
      throw SignatureError("integer scalar arguments are passed as i32, i64 or u64, not " + std::string(type) +
                           " (pointers may point to any dtype: *" + std::string(type) + ")");
  }
}

std::vector<ArgSpec> bind_signature(std::string_view kernel, std::string_view signature,
                                    const std::vector<KernelParam>& params,
                                    const std::vector<std::pair<std::string, std::string>>& consts) {
  std::vector<std::string_view> entries = split_entries(signature);
  if (entries.size() > params.size()) {
    std::string names;
    for (const KernelParam& p : params) names += (names.empty() ? "" : ", ") + p.name;
    throw SignatureError("the signature has " + std::to_string(entries.size()) + " entries but kernel '" +
                         std::string(kernel) + "' has " + std::to_string(params.size()) + " parameters (" + names +
                         ")");
  }
  std::map<std::string, std::string> const_values;
  for (const auto& [name, value] : consts) {
    auto param = std::find_if(params.begin(), params.end(), [&](const KernelParam& p) { return p.name == name; });
    if (param == params.end())
      throw SignatureError("--const " + name + ": kernel '" + std::string(kernel) + "' has no parameter '" + name + "'");
    if (!param->is_constexpr)
      throw SignatureError("--const " + name + ": parameter '" + name +
                           "' is not a tl.constexpr; give its type in the signature instead");
    if (!const_values.emplace(name, value).second)
      throw SignatureError("--const " + name + " is given twice");
  }
  std::vector<ArgSpec> specs;
  for (size_t i = 0; i < params.size(); ++i) {
    const KernelParam& param = params[i];
    auto given = const_values.find(param.name);
    if (i < entries.size()) {
      std::string where = "signature entry " + std::to_string(i + 1) + " ('" + std::string(entries[i]) +
                          "') for parameter '" + param.name + "': ";
      if (entries[i].empty()) throw SignatureError(where + "the entry is empty");
      if (given != const_values.end())
        throw SignatureError(where + "the parameter is also given by --const " + param.name);
      try {
        specs.push_back(parse_entry(entries[i], param));
      } catch (const SignatureError& e) {
        throw SignatureError(where + e.what());
      }
    } else if (given != const_values.end()) {
      try {
        specs.push_back(parse_entry(given->second, param));
      } catch (const SignatureError& e) {
        throw SignatureError("--const " + param.name + "=" + given->second + ": " + e.what());
      }
    } else if (param.default_value) {
      if (param.is_constexpr) {
        ArgSpec spec;
        spec.kind = ArgSpec::Kind::Constexpr;
        spec.value = *param.default_value;
        specs.push_back(spec);
      } else {
        specs.push_back(spec_from_default(param));
      }
    } else {
      throw SignatureError("no signature entry for parameter '" + param.name + "' (entry " + std::to_string(i + 1) +
                           ")" + (param.is_constexpr ? "; give its value in the signature or with --const " +
                                                           param.name + "=VALUE"
                                                     : "; give its type, e.g. i32 or *fp32"));
    }
  }
  return specs;
}

}  // namespace tegula::tools
