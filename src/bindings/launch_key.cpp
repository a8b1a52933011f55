#include "bindings/launch_key.h"

#include <bit>

#include "frontend/legacy_descriptor_layout.h"
#include "support/diagnostic.h"

namespace tegula::python {

namespace {

// One tag per item, so a concatenation of parameters decodes one way only.
constexpr char kPointer = 'P', kInt = 'I', kFloat = 'F', kBool = 'B', kConstant = 'C', kDescriptor = 'D',
               kTuple = 'U', kTrailer = 'T';

// A pointer item's flags.
constexpr uint8_t kAligned16 = 1, kHostDescriptor = 2;

uint8_t int_flags(const IntClass& value) {
  return (value.is_one ? 1 : 0) | (value.divisible_by_16 ? 2 : 0) | (value.is_one && value.typed_one ? 4 : 0);
}

// Reads a key back, item by item; a malformed key is a bug of this file.
class Reader {
 public:
  explicit Reader(std::string_view bytes) : bytes_(bytes) {}

  bool done() const { return pos_ == bytes_.size(); }
  char tag() { return take<char>(); }
  template <class T>
  T take() {
    TEGULA_ASSERT(pos_ + sizeof(T) <= bytes_.size(), "a launch key ends early");
    T value;
    std::memcpy(&value, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return value;
  }
  std::string text() {
    auto size = take<uint32_t>();
    TEGULA_ASSERT(pos_ + size <= bytes_.size(), "a launch key ends inside a text");
    std::string out(bytes_.substr(pos_, size));
    pos_ += size;
    return out;
  }

 private:
  std::string_view bytes_;
  size_t pos_ = 0;
};

frontend::ArgSpec pointer_spec(Reader& in) {
  frontend::ArgSpec spec;
  spec.kind = frontend::ArgSpec::Kind::Pointer;
  spec.dtype = static_cast<ir::Scalar>(in.take<uint8_t>());
  auto flags = in.take<uint8_t>();
  spec.divisibility = (flags & kAligned16) ? 16 : 1;
  if (flags & kHostDescriptor) spec.by_value_bytes = frontend::legacy_descriptor::kBytes;
  return spec;
}

frontend::ArgSpec int_spec(Reader& in) {
  frontend::ArgSpec spec;
  spec.kind = frontend::ArgSpec::Kind::Int;
  spec.dtype = static_cast<ir::Scalar>(in.take<uint8_t>());
  auto flags = in.take<uint8_t>();
  spec.is_one = (flags & 1) != 0;
  spec.divisibility = (flags & 2) ? 16 : 1;
  spec.typed_one = (flags & 4) != 0;
  return spec;
}

frontend::ArgSpec constant_spec(Reader& in) {
  using Kind = frontend::GlobalValue::Kind;
  frontend::ArgSpec spec;
  spec.kind = frontend::ArgSpec::Kind::Constexpr;
  frontend::GlobalValue& value = spec.value;
  value.kind = static_cast<Kind>(in.take<uint8_t>());
  switch (value.kind) {
    case Kind::Int:
    case Kind::Bool: value.int_value = in.take<int64_t>(); break;
    case Kind::Float: value.float_value = std::bit_cast<double>(in.take<uint64_t>()); break;
    case Kind::Str:
    case Kind::DType:
    case Kind::LanguageMember:
    case Kind::Opaque:
    case Kind::JitFunction: value.text = in.text(); break;
    case Kind::None: break;
    case Kind::Tuple: {
      auto count = in.take<uint32_t>();
      for (uint32_t i = 0; i < count; ++i) {
        TEGULA_ASSERT(in.tag() == kConstant, "a constant tuple holds constants");
        value.elements.push_back(constant_spec(in).value);
      }
      break;
    }
    default: TEGULA_ASSERT(false, "a launch key holds a constant of an unexpected kind");
  }
  return spec;
}

frontend::ArgSpec descriptor_spec(Reader& in) {
  frontend::ArgSpec spec = pointer_spec(in);
  spec.kind = frontend::ArgSpec::Kind::TensorDescriptor;
  auto rank = in.take<uint8_t>();
  for (int i = 0; i < rank; ++i) spec.block_shape.push_back(in.take<int64_t>());
  spec.value.kind = frontend::GlobalValue::Kind::Str;
  spec.value.text = in.text();
  for (int i = 0; i < 2 * rank; ++i) {
    TEGULA_ASSERT(in.tag() == kInt, "a descriptor's shape and strides are ints");
    spec.parts.push_back(int_spec(in));
  }
  return spec;
}

}  // namespace

void LaunchKey::spill(const void* data, size_t size) {
  if (spilled_.empty()) spilled_.assign(local_.data(), size_);
  spilled_.append(static_cast<const char*>(data), size);
}

void LaunchKey::text(std::string_view value) {
  auto size = static_cast<uint32_t>(value.size());
  append(&size, sizeof size);
  append(value.data(), value.size());
}

void LaunchKey::pointer(ir::Scalar element, bool aligned16, bool host_descriptor) {
  const char item[3] = {kPointer, static_cast<char>(element),
                        static_cast<char>((aligned16 ? kAligned16 : 0) | (host_descriptor ? kHostDescriptor : 0))};
  append(item, sizeof item);
}

void LaunchKey::integer(const IntClass& value) {
  const char item[3] = {kInt, static_cast<char>(value.width), static_cast<char>(int_flags(value))};
  append(item, sizeof item);
}

void LaunchKey::drop_alignment(size_t at) {
  if (at + 3 > size()) return;  // an item shorter than three bytes (float, bool): nothing to forget
  char* item = spilled_.empty() ? local_.data() + at : spilled_.data() + at;
  if (item[0] == kPointer) item[2] = static_cast<char>(item[2] & ~kAligned16);
  if (item[0] == kInt) item[2] = static_cast<char>(item[2] & ~2);  // int_flags: bit 1 is divisible_by_16
}

void LaunchKey::real(ir::Scalar type) {
  const char item[2] = {kFloat, static_cast<char>(type)};
  append(item, sizeof item);
}
void LaunchKey::boolean() { append(kBool); }

void LaunchKey::constant_int(int64_t value) {
  const char head[2] = {kConstant, static_cast<char>(frontend::GlobalValue::Kind::Int)};
  append(head, sizeof head);
  append(&value, sizeof value);
}

void LaunchKey::constant_bool(bool value) {
  const char head[2] = {kConstant, static_cast<char>(frontend::GlobalValue::Kind::Bool)};
  append(head, sizeof head);
  int64_t bits = value ? 1 : 0;
  append(&bits, sizeof bits);
}

void LaunchKey::constant_none() {
  const char head[2] = {kConstant, static_cast<char>(frontend::GlobalValue::Kind::None)};
  append(head, sizeof head);
}

void LaunchKey::constant_tuple(uint32_t count) {
  const char head[2] = {kConstant, static_cast<char>(frontend::GlobalValue::Kind::Tuple)};
  append(head, sizeof head);
  append(&count, sizeof count);
}

void LaunchKey::tuple(uint32_t count, std::string_view fields) {
  append(kTuple);
  append(&count, sizeof count);
  text(fields);
}

void LaunchKey::constant_float(double value) {
  const char head[2] = {kConstant, static_cast<char>(frontend::GlobalValue::Kind::Float)};
  append(head, sizeof head);
  auto bits = std::bit_cast<uint64_t>(value);
  append(&bits, sizeof bits);
}

void LaunchKey::constant_str(std::string_view value) {
  const char head[2] = {kConstant, static_cast<char>(frontend::GlobalValue::Kind::Str)};
  append(head, sizeof head);
  text(value);
}

void LaunchKey::constant_dtype(std::string_view canonical_name) {
  const char head[2] = {kConstant, static_cast<char>(frontend::GlobalValue::Kind::DType)};
  append(head, sizeof head);
  text(canonical_name);
}

void LaunchKey::constant_language_member(std::string_view path) {
  const char head[2] = {kConstant, static_cast<char>(frontend::GlobalValue::Kind::LanguageMember)};
  append(head, sizeof head);
  text(path);
}

void LaunchKey::constant_opaque(std::string_view description) {
  const char head[2] = {kConstant, static_cast<char>(frontend::GlobalValue::Kind::Opaque)};
  append(head, sizeof head);
  text(description);
}

// Decoded as a JitFunction whose `function` index is still -1 and whose text
// is the reference: the Python side puts the function's source in the
// request and sets the index before compiling.
void LaunchKey::constant_jit_function(std::string_view reference) {
  const char head[2] = {kConstant, static_cast<char>(frontend::GlobalValue::Kind::JitFunction)};
  append(head, sizeof head);
  text(reference);
}

void LaunchKey::descriptor(ir::Scalar element, bool aligned16, const std::vector<int64_t>& block_shape,
                           std::string_view padding) {
  const char head[4] = {kDescriptor, static_cast<char>(element), static_cast<char>(aligned16),
                        static_cast<char>(block_shape.size())};
  append(head, sizeof head);
  for (int64_t d : block_shape) append(&d, sizeof d);
  text(padding);
}

void LaunchKey::trailer(int num_warps, int num_stages, bool fp_fusion, bool debug, int maxnreg, uint8_t backend,
                        int32_t device) {
  char item[20];
  item[0] = kTrailer;
  auto warps = static_cast<int32_t>(num_warps), stages = static_cast<int32_t>(num_stages);
  std::memcpy(item + 1, &warps, 4);
  std::memcpy(item + 5, &stages, 4);
  item[9] = static_cast<char>(fp_fusion);
  item[10] = static_cast<char>(debug);
  item[11] = static_cast<char>(backend);
  std::memcpy(item + 12, &device, 4);
  auto registers = static_cast<int32_t>(maxnreg);
  std::memcpy(item + 16, &registers, 4);
  append(item, sizeof item);
}

namespace {

// The item whose tag `tag` was just read.
frontend::ArgSpec read_item(Reader& in, char tag) {
  switch (tag) {
    case kPointer: return pointer_spec(in);
    case kInt: return int_spec(in);
    case kFloat: return frontend::ArgSpec{frontend::ArgSpec::Kind::Float, static_cast<ir::Scalar>(in.take<uint8_t>())};
    case kBool: return frontend::ArgSpec{frontend::ArgSpec::Kind::Bool, ir::Scalar::I1};
    case kConstant: return constant_spec(in);
    case kDescriptor: return descriptor_spec(in);
    case kTuple: {
      frontend::ArgSpec spec;
      spec.kind = frontend::ArgSpec::Kind::Tuple;
      auto count = in.take<uint32_t>();
      spec.value.kind = frontend::GlobalValue::Kind::Str;
      spec.value.text = in.text();
      for (uint32_t i = 0; i < count; ++i) spec.parts.push_back(read_item(in, in.tag()));
      return spec;
    }
    default: TEGULA_ASSERT(false, "a launch key holds an unknown item");
  }
}

// Reads argument items up to the trailer (or the end of `in`, when
// `trailer` is false).
std::vector<frontend::ArgSpec> read_arguments(Reader& in, bool trailer) {
  std::vector<frontend::ArgSpec> args;
  while (!(!trailer && in.done())) {
    char tag = in.tag();
    if (tag == kTrailer && trailer) break;
    args.push_back(read_item(in, tag));
  }
  return args;
}

}  // namespace

std::vector<frontend::ArgSpec> decode_arguments(std::string_view items) {
  Reader in(items);
  return read_arguments(in, /*trailer=*/false);
}

DecodedKey decode(std::string_view bytes) {
  Reader in(bytes);
  DecodedKey out;
  out.args = read_arguments(in, /*trailer=*/true);
  out.num_warps = in.take<int32_t>();
  out.num_stages = in.take<int32_t>();
  out.fp_fusion = in.take<char>() != 0;
  out.debug = in.take<char>() != 0;
  out.backend = static_cast<uint8_t>(in.take<char>());
  out.device = in.take<int32_t>();
  out.maxnreg = in.take<int32_t>();
  TEGULA_ASSERT(in.done(), "a launch key goes on after its trailer");
  return out;
}

}  // namespace tegula::python
