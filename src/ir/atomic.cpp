#include "ir/atomic.h"

#include "support/diagnostic.h"

namespace tegula::ir {

namespace {

constexpr const char* kOpNames[] = {"add", "max", "min", "and", "or", "xor", "xchg", "cas"};
constexpr const char* kSemNames[] = {"relaxed", "acquire", "release", "acq_rel"};
constexpr const char* kScopeNames[] = {"cta", "gpu", "sys"};

template <class Enum, size_t N>
std::optional<Enum> parse(std::string_view text, const char* const (&names)[N], size_t count = N) {
  for (size_t i = 0; i < count; ++i)
    if (text == names[i]) return static_cast<Enum>(i);
  return std::nullopt;
}

template <size_t N>
std::string choices(const char* const (&names)[N]) {
  std::string out;
  for (const char* n : names) out += (out.empty() ? "\"" : ", \"") + std::string(n) + "\"";
  return out;
}

const std::string* string_attr(const Op& op, const char* name) {
  const Attr* a = op.attr(name);
  return a && std::holds_alternative<std::string>(*a) ? &std::get<std::string>(*a) : nullptr;
}

}  // namespace

const char* to_string(AtomicOp op) { return kOpNames[static_cast<int>(op)]; }
const char* to_string(MemorySem sem) { return kSemNames[static_cast<int>(sem)]; }
const char* to_string(MemoryScope scope) { return kScopeNames[static_cast<int>(scope)]; }

std::optional<AtomicOp> parse_atomic_op(std::string_view text) {
  // `cas` is spelled by the op kind (atomic_cas), never by an `op` attribute.
  return parse<AtomicOp>(text, kOpNames, std::size(kOpNames) - 1);
}
std::optional<MemorySem> parse_memory_sem(std::string_view text) { return parse<MemorySem>(text, kSemNames); }
std::optional<MemoryScope> parse_memory_scope(std::string_view text) {
  return parse<MemoryScope>(text, kScopeNames);
}

std::string memory_sem_choices() { return choices(kSemNames); }
std::string memory_scope_choices() { return choices(kScopeNames); }

const std::vector<Scalar>& atomic_element_kinds(AtomicOp op) {
  // 32- and 64-bit integers everywhere; floats where the operation means
  // something on them (bitwise ops do not). Both backends have a native or
  // compare-and-swap path for every pair listed.
  static const std::vector<Scalar> numbers = {Scalar::I32, Scalar::U32, Scalar::I64, Scalar::U64,
                                              Scalar::F16, Scalar::BF16, Scalar::F32, Scalar::F64};
  static const std::vector<Scalar> integers = {Scalar::I32, Scalar::U32, Scalar::I64, Scalar::U64};
  switch (op) {
    case AtomicOp::And:
    case AtomicOp::Or:
    case AtomicOp::Xor: return integers;
    default: return numbers;
  }
}

bool atomic_supports(AtomicOp op, Scalar s) {
  for (Scalar k : atomic_element_kinds(op))
    if (k == s) return true;
  return false;
}

bool is_atomic(OpKind kind) { return kind == OpKind::AtomicRmw || kind == OpKind::AtomicCas; }

AtomicInfo atomic_info(const Op& op) {
  TEGULA_ASSERT(is_atomic(op.kind), "not an atomic op");
  AtomicInfo info;
  if (op.kind == OpKind::AtomicCas) {
    info.op = AtomicOp::Cas;
  } else {
    const std::string* name = string_attr(op, "op");
    std::optional<AtomicOp> parsed = name ? parse_atomic_op(*name) : std::nullopt;
    TEGULA_ASSERT(parsed.has_value(), "atomic_rmw without a valid `op` attribute");
    info.op = *parsed;
  }
  const std::string* sem = string_attr(op, "sem");
  const std::string* scope = string_attr(op, "scope");
  std::optional<MemorySem> s = sem ? parse_memory_sem(*sem) : std::nullopt;
  std::optional<MemoryScope> c = scope ? parse_memory_scope(*scope) : std::nullopt;
  TEGULA_ASSERT(s && c, "atomic op without valid `sem` and `scope` attributes");
  info.sem = *s;
  info.scope = *c;
  return info;
}

std::string atomic_problem(const Function& fn, const Op& op) {
  if (!is_atomic(op.kind)) return "not an atomic op";
  AtomicOp which = AtomicOp::Cas;
  if (op.kind == OpKind::AtomicRmw) {
    const std::string* name = string_attr(op, "op");
    std::optional<AtomicOp> parsed = name ? parse_atomic_op(*name) : std::nullopt;
    if (!parsed) return "needs a string attribute `op`: one of add max min and or xor xchg";
    which = *parsed;
  }
  const std::string* sem = string_attr(op, "sem");
  if (!sem || !parse_memory_sem(*sem)) return "needs a string attribute `sem`: one of relaxed acquire release acq_rel";
  const std::string* scope = string_attr(op, "scope");
  if (!scope || !parse_memory_scope(*scope)) return "needs a string attribute `scope`: one of cta gpu sys";

  const Type& ptr = fn.type(op.operands[0]);
  if (!ptr.pointer) return "operand 0 must be a pointer or a tile of pointers, got " + to_string(ptr);
  if (!atomic_supports(which, ptr.scalar))
    return std::string("`") + to_string(which) + "` is not defined on " + to_string(ptr.scalar);
  Type value = ptr.with_scalar(ptr.scalar);
  if (!(fn.type(op.results[0]) == value))
    return "result must be " + to_string(value) + ", got " + to_string(fn.type(op.results[0]));
  // atomic_rmw: ptr, val [, mask]; atomic_cas: ptr, cmp, val.
  size_t values = op.kind == OpKind::AtomicCas ? 2 : 1;
  for (size_t i = 1; i <= values; ++i)
    if (!(fn.type(op.operands[i]) == value))
      return "operand " + std::to_string(i) + " must be " + to_string(value) + ", got " +
             to_string(fn.type(op.operands[i]));
  if (op.operands.size() > values + 1) {
    const Type& mask = fn.type(op.operands[values + 1]);
    if (!(mask == ptr.with_scalar(Scalar::I1)))
      return "mask must be " + to_string(ptr.with_scalar(Scalar::I1)) + ", got " + to_string(mask);
  }
  return "";
}

}  // namespace tegula::ir
