// The vocabulary of the two atomic ops of the tile IR, `atomic_rmw` and
// `atomic_cas`: the read-modify-write operations, the element types each
// one is defined on, and the memory orders and scopes an atomic carries.
// The front end, the verifier and both backends read these tables, so a
// dtype or a spelling is accepted or refused in one place.
//
// Semantics (docs/ir.md has the long form):
//  * every element of the pointer operand whose mask is true is updated by
//    one indivisible read-modify-write; the result holds the value memory
//    had just before (masked-off elements: 0). Elements hitting the same
//    address are all applied, one after the other, in an unspecified order.
//  * float max/min order values by IEEE-754 totalOrder on their bits:
//    -NaN < -inf < ... < -0.0 < +0.0 < ... < +inf < +NaN. So a positive
//    NaN wins `max`, a negative NaN wins `min`, and +0.0 > -0.0.
//  * `atomic_cas` and `xchg` compare and move bit patterns.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/ir.h"

namespace tegula::ir {

enum class AtomicOp : uint8_t { Add, Max, Min, And, Or, Xor, Xchg, Cas };

// Memory order of an atomic, as in C++ (`acq_rel` is the default of tl.atomic_*).
enum class MemorySem : uint8_t { Relaxed, Acquire, Release, AcqRel };

// Which threads the ordering is promised to: one program (`cta`), the whole
// device (`gpu`, the default) or the device and the host (`sys`). The CPU
// backend treats all three as process-wide.
enum class MemoryScope : uint8_t { Cta, Gpu, Sys };

// Spellings of attributes and of tl.atomic_* arguments: "add", "acq_rel", "gpu".
const char* to_string(AtomicOp op);
const char* to_string(MemorySem sem);
const char* to_string(MemoryScope scope);
std::optional<AtomicOp> parse_atomic_op(std::string_view text);  // not "cas": that is its own op
std::optional<MemorySem> parse_memory_sem(std::string_view text);
std::optional<MemoryScope> parse_memory_scope(std::string_view text);
// Every accepted spelling, quoted, for error messages: "\"relaxed\", \"acquire\", ...".
std::string memory_sem_choices();
std::string memory_scope_choices();

// The element kinds `op` is defined on, in a fixed order (for messages).
const std::vector<Scalar>& atomic_element_kinds(AtomicOp op);
bool atomic_supports(AtomicOp op, Scalar s);

// The decoded attributes of a verified `atomic_rmw` or `atomic_cas`.
struct AtomicInfo {
  AtomicOp op = AtomicOp::Add;
  MemorySem sem = MemorySem::AcqRel;
  MemoryScope scope = MemoryScope::Gpu;
};
AtomicInfo atomic_info(const Op& op);

bool is_atomic(OpKind kind);

// What is wrong with atomic op `op` of `fn` ("" when nothing is): operand
// and result types, the attributes, the element type.
std::string atomic_problem(const Function& fn, const Op& op);

}  // namespace tegula::ir
