// The driver of CUDA code generation: the kernel function and its prologue,
// the dispatch of every op to its family's emitter, and the services of
// CudaContext (names, register arrays, thread coordinates, layout
// conversions, shared memory and barriers).
#include "backends/cuda/codegen.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "backends/c_family/control_flow.h"
#include "backends/c_family/prelude_text.h"
#include "backends/c_family/op_syntax.h"
#include "backends/cuda/codegen_bounds.h"
#include "backends/cuda/codegen_context.h"
#include "backends/cuda/codegen_mma.h"
#include "backends/cuda/prelude.h"
#include "backends/cuda/prelude_async.h"
#include "backends/cuda/prelude_atomic.h"
#include "backends/cuda/prelude_fp8.h"
#include "backends/cuda/prelude_libdevice.h"
#include "backends/cuda/prelude_mma.h"
#include "backends/kernel_abi.h"
#include "ir/fp8.h"
#include "support/diagnostic.h"

namespace tegula::backends::cuda {

using ir::OpKind;
using ir::Scalar;

// --- C++ spellings ------------------------------------------------------------------

int64_t element_bytes(const ir::Type& t) { return t.is_pointer() ? 8 : ir::byte_size(t.scalar); }

std::string int_literal(int64_t value, Scalar s) {
  int bits = ir::bit_width(s);
  if (s == Scalar::I1 || bits == 64) return c_family::int_literal(value, s);
  if (ir::is_signed(s)) value = static_cast<int64_t>(static_cast<uint64_t>(value) << (64 - bits)) >> (64 - bits);
  std::string text = c_family::int_literal(value, s);
  if (text[0] == '-') text = "(" + text + ")";
  return bits == 32 ? text : "(" + c_scalar(s) + ")" + text;
}

int64_t shared_limit(int arch) {
  if (arch >= 90) return 227 * 1024;
  if (arch == 80 || arch == 87) return 163 * 1024;
  return 99 * 1024;
}

namespace {

uint32_t float_bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

// Round a double to the bits of f16 or bf16, nearest even: first to float
// rounding to odd (keeps the sticky information), then on the bits.
uint16_t narrow_bits(double d, bool bf16) {
  if (std::isnan(d)) return bf16 ? 0x7fc0 : 0x7e00;
  float f = static_cast<float>(d);
  if (static_cast<double>(f) != d && std::isfinite(f)) {
    float toward_zero = std::fabs(static_cast<double>(f)) > std::fabs(d) ? std::nextafter(f, 0.0f) : f;
    uint32_t b = float_bits(toward_zero) | 1u;
    std::memcpy(&f, &b, 4);
  }
  uint32_t bits = float_bits(f);
  uint32_t sign = bits & 0x80000000u, a = bits & 0x7fffffffu;
  if (bf16) {
    if (a >= 0x7f800000u) return static_cast<uint16_t>((sign | a) >> 16);
    return static_cast<uint16_t>((sign >> 16) | ((a + 0x7fffu + ((a >> 16) & 1u)) >> 16));
  }
  uint16_t hs = static_cast<uint16_t>(sign >> 16);
  if (a >= 0x477ff000u) return hs | 0x7c00u;  // overflow (and inf)
  if (a < 0x38800000u) {                      // subnormal or zero in f16: steps of 2^-24
    double scaled = static_cast<double>(std::fabs(f)) * 16777216.0;
    return hs | static_cast<uint16_t>(std::nearbyint(scaled));
  }
  return hs | static_cast<uint16_t>((a - 0x38000000u + 0xfffu + ((a >> 13) & 1u)) >> 13);
}

}  // namespace

std::string float_literal(double value, Scalar s) {
  if (ir::is_fp8(s)) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "(%s)0x%02x", c_scalar(s).c_str(), ir::encode_fp8(value, s));
    return buf;
  }
  if (is_half(s)) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "(%s)0x%04x", c_scalar(s).c_str(), narrow_bits(value, s == Scalar::BF16));
    return buf;
  }
  if (s == Scalar::F32) {
    float f = static_cast<float>(value);
    if (std::isnan(f)) return "__int_as_float(0x7fc00000)";
    if (std::isinf(f)) return f < 0 ? "__int_as_float(0xff800000)" : "__int_as_float(0x7f800000)";
    std::string text = c_family::shortest_decimal(f, 9) + "f";
    return f < 0 || (f == 0 && std::signbit(f)) ? "(" + text + ")" : text;
  }
  if (std::isnan(value)) return "__longlong_as_double(0x7ff8000000000000LL)";
  if (std::isinf(value)) return value < 0 ? "(-__longlong_as_double(0x7ff0000000000000LL))"
                                          : "__longlong_as_double(0x7ff0000000000000LL)";
  std::string text = c_family::shortest_decimal(value, 17);
  return value < 0 || (value == 0 && std::signbit(value)) ? "(" + text + ")" : text;
}

std::string bits_expr(const std::string& var, const std::vector<int>& dest, int width) {
  if (var == "0") return "0";
  std::string expr;
  int n = static_cast<int>(dest.size());
  for (int k = 0; k < n;) {
    if (dest[static_cast<size_t>(k)] < 0) {
      ++k;
      continue;
    }
    int run = 1;
    while (k + run < n && dest[static_cast<size_t>(k + run)] == dest[static_cast<size_t>(k)] + run) ++run;
    int to = dest[static_cast<size_t>(k)];
    std::string term = var;
    if (k > 0) term = "(" + term + " >> " + std::to_string(k) + ")";
    if (k + run < width) term = "(" + term + " & " + std::to_string((1 << run) - 1) + ")";
    if (to > 0) term = "(" + term + " << " + std::to_string(to) + ")";
    expr += (expr.empty() ? "" : " + ") + term;
    k += run;
  }
  return expr.empty() ? "0" : expr;
}

// --- CudaContext ------------------------------------------------------------------

namespace {

bool is_identifier(const std::string& s) {
  if (s.empty() || (s[0] >= '0' && s[0] <= '9')) return false;
  for (char c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_')) return false;
  return true;
}

}  // namespace

CudaContext::CudaContext(const ir::Function& f, const CodegenOptions& o)
    : Printer(f, c_family::Dialect::Cuda), options(o), axis_info(f), plan(f, axis_info, o.num_warps, o.arch) {
  std::vector<std::string> printed = printed_names(fn);
  const ir::Block& body = fn.block(fn.body());
  for (size_t i = 0; i < fn.num_values(); ++i) names_[i] = "v" + printed[i];
  for (size_t i = 0; i < body.args.size(); ++i) {
    const std::string& p = i < fn.params.size() ? fn.params[i].name : std::string();
    names_[body.args[i].index] = is_identifier(p) ? "arg_" + p : "arg" + std::to_string(i);
  }
  if (o.debug) debug_sites.emplace(f);
  fn.walk([&](ir::OpId id) {
    OpKind kind = fn.op(id).kind;
    has_bulk_stores_ = has_bulk_stores_ || kind == OpKind::DescStore;
    has_bulk_writes_ = has_bulk_writes_ || kind == OpKind::DescStore || kind == OpKind::DescAtomic;
  });
}

std::string CudaContext::extra_name(ir::ValueId v, size_t index) const {
  return name(v) + "_" + std::to_string(index + 1);
}

std::string CudaContext::tile(ir::ValueId v, const Layout& want) const {
  const ir::Type& t = fn.type(v);
  TEGULA_ASSERT(t.is_tile(), "tile() of a scalar");
  Distribution d = distribute(want, t.shape);
  if (distribute(layout(v), t.shape) == d) return name(v);
  const std::vector<Layout>& extras = plan.extras(v);
  for (size_t i = 0; i < extras.size(); ++i)
    if (distribute(extras[i], t.shape) == d) return extra_name(v, i);
  internal_error(__FILE__, __LINE__, "no copy of " + name(v) + " in layout " + to_string(want));
}

const Layout& CudaContext::operand_layout(ir::OpId op, size_t k) const { return plan.request(op, k); }

std::string CudaContext::operand(ir::OpId op, size_t k) const {
  ir::ValueId v = fn.op(op).operands.at(k);
  if (!fn.type(v).is_tile()) return name(v);
  return tile(v, plan.request(op, k));
}

int CudaContext::declare_tile(const std::string& array, const ir::Type& type, const Layout& l) {
  int registers = distribute(l, type.shape).registers();
  out.line(c_element(type) + " " + array + "[" + std::to_string(registers) + "];");
  return registers;
}

std::string CudaContext::thread_base(const Distribution& d) {
  for (size_t i = 0; i < bases_.size(); ++i)
    if (bases_[i].lane_bits == d.lane_bits && bases_[i].warp_bits == d.warp_bits && bases_[i].numel == d.numel)
      return "tb" + std::to_string(i);
  thread_ids();
  std::string name = "tb" + std::to_string(bases_.size());
  int warp_width = static_cast<int>(d.warp_bits.size());
  std::string lanes = bits_expr("lane", d.lane_bits, 5);
  std::string warps = bits_expr("warp", d.warp_bits, warp_width);
  std::string value = lanes == "0" ? warps : warps == "0" ? lanes : lanes + " + " + warps;
  prologue_.line("const int " + name + " = " + value + ";");
  bases_.push_back(d);
  replicated_base_.push_back(false);
  return name;
}

void CudaContext::thread_ids() {
  if (thread_ids_declared_) return;
  prologue_.line("const int lane = threadIdx.x & 31;");
  prologue_.line("const int warp = tg_warp_index();");
  thread_ids_declared_ = true;
}

std::string CudaContext::owner(const Distribution& d) {
  if (!d.replicated()) return "";
  std::string base = thread_base(d);
  std::string name = "own" + base.substr(2);
  size_t index = static_cast<size_t>(std::stoi(base.substr(2)));
  if (!replicated_base_[index]) {
    int lane_mask = 0, warp_mask = 0;
    for (size_t k = 0; k < d.lane_bits.size(); ++k)
      if (d.lane_bits[k] < 0) lane_mask |= 1 << k;
    for (size_t k = 0; k < d.warp_bits.size(); ++k)
      if (d.warp_bits[k] < 0) warp_mask |= 1 << k;
    std::string cond;
    if (lane_mask) cond = "(lane & " + std::to_string(lane_mask) + ") == 0";
    if (warp_mask) cond += (cond.empty() ? "" : " && ") + std::string("(warp & ") + std::to_string(warp_mask) + ") == 0";
    prologue_.line("const bool " + name + " = " + cond + ";  // one owner per element of " + base);
    replicated_base_[index] = true;
  }
  return name;
}

std::string CudaContext::element_index(const Distribution& d, const std::string& reg) {
  std::string base = thread_base(d);
  std::string offset = bits_expr(reg, d.register_bits, static_cast<int>(d.register_bits.size()));
  return offset == "0" ? base : base + " + " + offset;
}

std::string CudaContext::open_unrolled(int count, int step) {
  if (count <= step) {  // one iteration: a plain block
    out.open("");
    return "0";
  }
  std::string i = fresh(out.depth() % 2 ? "i" : "j");
  out.line("#pragma unroll");
  out.open("for (int " + i + " = 0; " + i + " < " + std::to_string(count) + "; " +
           (step == 1 ? "++" + i : i + " += " + std::to_string(step)) + ")");
  return i;
}

std::string CudaContext::shared_scratch(int64_t bytes, int64_t align) {
  // A small area goes beside the one whose readers may still be running
  // rather than over it: back-to-back reductions (layer norm's mean, then its
  // variance) then alternate between two areas and skip the barrier that
  // overwriting the first would need. Their own barrier, between writing the
  // new area and reading it, is what ends the older reads. A warp-specialized
  // kernel runs one program per multiprocessor (its registers say so), so
  // any area up to the limit goes beside: the one-kernel attention backward
  // stages dS^T and then its dQ block for the TMA's reduction, and the block
  // beside dS^T lets the next step write dS^T while the TMA still reads it.
  constexpr int64_t kBesideLimit = 2048;  // bytes past the start: never enough to cost occupancy
  const int64_t beside_limit = warp_specialization ? shared_limit(options.arch) - 1024 : shared_reserved_ + kBesideLimit;
  int64_t offset = shared_reserved_;
  bool needs_barrier = false;
  if (shared_readers_pending_ && offset < pending_end_ && pending_begin_ < offset + bytes) {
    bool fits_beside = false;
    if (pending_end_ != kEverything) {
      int64_t beside = (pending_end_ + align - 1) / align * align;
      fits_beside = beside + bytes <= beside_limit;
      if (fits_beside) offset = beside;
    }
    needs_barrier = !fits_beside;
  }
  if (bulk_reads_pending_ && offset < bulk_end_ && bulk_begin_ < offset + bytes) {
    wait_bulk_reads_over(offset, offset + bytes);
    needs_barrier = true;  // every thread writes the area after thread 0's wait
  }
  if (needs_barrier) barrier();
  shared_readers_pending_ = false;
  scratch_begin_ = offset;
  scratch_end_ = offset + bytes;
  shared_bytes_ = std::max(shared_bytes_, offset + bytes);
  return offset == 0 ? "tg_smem" : "(tg_smem + " + std::to_string(offset) + ")";
}

void CudaContext::shared_reads_done() {
  shared_readers_pending_ = true;
  pending_begin_ = scratch_begin_;
  pending_end_ = scratch_end_;
}

void CudaContext::assume_shared_readers() {
  shared_readers_pending_ = true;
  pending_begin_ = 0;
  pending_end_ = kEverything;
  // A region that ran (or a loop's previous iteration) may have left a TMA
  // store or reduction reading any area.
  if (has_bulk_writes_) {
    bulk_reads_pending_ = true;
    bulk_begin_ = 0;
    bulk_end_ = kEverything;
  }
}

void CudaContext::bulk_reads_pending() {
  shared_reads_done();
  if (!bulk_reads_pending_) {
    bulk_begin_ = scratch_begin_;
    bulk_end_ = scratch_end_;
  } else if (bulk_end_ != kEverything) {
    bulk_begin_ = std::min(bulk_begin_, scratch_begin_);
    bulk_end_ = std::max(bulk_end_, scratch_end_);
  }
  bulk_reads_pending_ = true;
}

void CudaContext::wait_bulk_reads_over(int64_t begin, int64_t end) {
  if (!bulk_reads_pending_ || end <= bulk_begin_ || bulk_end_ <= begin) return;
  out.line("if (threadIdx.x == 0) tg_bulk_wait_read<0>();  // earlier TMA stores and reductions, out of shared memory");
  bulk_reads_pending_ = false;
}

void CudaContext::finish_bulk_reads() {
  wait_bulk_reads_over(0, kEverything);
}

std::string CudaContext::tensor_map(const TensorMapParam& map) {
  size_t index = 0;
  while (index < tensor_maps_.size() && !(tensor_maps_[index] == map)) ++index;
  if (index == tensor_maps_.size()) tensor_maps_.push_back(map);
  return "tg_map" + std::to_string(index);
}

void CudaContext::add_device_helper(const std::string& name, const std::string& definition) {
  for (const auto& [existing, text] : device_helpers_)
    if (existing == name) return;
  device_helpers_.emplace_back(name, definition);
}

std::string CudaContext::device_helpers() const {
  std::string text;
  for (const auto& [name, definition] : device_helpers_) text += definition;
  return text;
}

void CudaContext::reserve_shared(int64_t bytes) {
  TEGULA_ASSERT(shared_reserved_ == 0, "nested shared-memory reservations");
  bool bulk = bulk_reads_pending_ && bulk_begin_ < bytes;
  wait_bulk_reads_over(0, bytes);
  if ((shared_readers_pending_ && pending_begin_ < bytes) || bulk) barrier();
  shared_readers_pending_ = false;
  shared_bytes_ = std::max(shared_bytes_, bytes);
  shared_reserved_ = (bytes + 1023) / 1024 * 1024;  // tiles after it stay on 1024-byte lines
}

void CudaContext::release_shared() {
  shared_reserved_ = 0;
  assume_shared_readers();
}

void CudaContext::before_global_load(ir::ValueId pointer) {
  bool reduced = may_read_reduced(pointer);
  if (!global_store_pending_ && !reduced) return;
  if (bulk_store_pending_)
    out.line("if (threadIdx.x == 0) tg_bulk_wait<0>();  // this program's TMA stores, written");
  else if (reduced)
    out.line("if (threadIdx.x == 0) tg_bulk_wait<0>();  // this program's TMA reductions, written");
  if (bulk_store_pending_ || reduced) {  // wait_group 0 covers every bulk group, their reads too
    reduced_params_.clear();
    reduced_unknown_ = false;
    bulk_reads_pending_ = false;
  }
  bulk_store_pending_ = false;
  out.line(barrier_statement() + ";  // this program's stores before its loads");
  global_store_pending_ = false;
  shared_readers_pending_ = false;  // the barrier also ends earlier shared-memory reads
}

void CudaContext::after_bulk_reduce(ir::ValueId base) {
  if (!provenance_) provenance_.emplace(fn);
  const std::vector<int32_t>& sources = provenance_->sources(base);
  reduced_unknown_ = reduced_unknown_ || provenance_->unknown(base) || sources.empty();
  for (int32_t p : sources)
    if (std::find(reduced_params_.begin(), reduced_params_.end(), p) == reduced_params_.end()) reduced_params_.push_back(p);
}

void CudaContext::assume_bulk_reductions(ir::BlockId block) {
  fn.walk_block(block, [&](ir::OpId id) {
    const ir::Op& o = fn.op(id);
    if (o.kind == OpKind::DescAtomic) after_bulk_reduce(o.operands[0]);
  });
}

bool CudaContext::may_read_reduced(ir::ValueId pointer) {
  if (reduced_params_.empty() && !reduced_unknown_) return false;
  if (!pointer.valid() || reduced_unknown_ || provenance_->unknown(pointer)) return true;
  const std::vector<int32_t>& sources = provenance_->sources(pointer);
  if (sources.empty()) return true;
  return std::any_of(sources.begin(), sources.end(), [&](int32_t p) {
    return std::find(reduced_params_.begin(), reduced_params_.end(), p) != reduced_params_.end();
  });
}

bool CudaContext::contains_store(ir::BlockId block) const {
  for (ir::OpId id : fn.block(block).ops) {
    const ir::Op& o = fn.op(id);
    if (o.kind == OpKind::Store || o.kind == OpKind::DescStore || o.kind == OpKind::AtomicRmw ||
        o.kind == OpKind::AtomicCas)
      return true;
    for (ir::BlockId r : o.regions)
      if (contains_store(r)) return true;
  }
  return false;
}

// --- emission -----------------------------------------------------------------------

namespace {

bool is_value_source(OpKind k) {
  return k == OpKind::Constant || k == OpKind::ProgramId || k == OpKind::NumPrograms || k == OpKind::Arange ||
         k == OpKind::Splat || k == OpKind::GlobalTimer || k == OpKind::Smid;
}

// Ops whose result can be computed in any layout from operands in the
// matching layout (register work only).
bool computes_in_any_layout(OpKind k) {
  return ir::is_elementwise(k) || is_value_source(k) || k == OpKind::Broadcast || k == OpKind::ExpandDims;
}

Layout matching_operand_layout(const ir::Op& op, const Layout& result) {
  if (op.kind == OpKind::ExpandDims) return slice(result, static_cast<int>(op.int_attr("axis")));
  return result;
}

}  // namespace

void CudaContext::emit_block_body(ir::BlockId block) {
  for (ir::OpId id : fn.block(block).ops) {
    const ir::Op& o = fn.op(id);
    if (o.erased || ir::is_terminator(o.kind)) continue;
    at_source(o.loc, [&] { emit_op(id); });  // an internal error names the kernel line
  }
}

void CudaContext::emit_op(ir::OpId id) {
  const ir::Op& o = fn.op(id);
  if (in_flight_dot && in_flight_dot->late && !in_flight_dot->retired && in_flight_dot->retire_before == id)
    tma_ring_retire(*this);
  out.line(op_comment(o));
  if (o.kind == OpKind::Load && ring_tiles.count(o.results[0].index)) {
    out.line("// issued ahead with cp.async: the dot reads the tile from shared memory");
    return;
  }
  if ((o.kind == OpKind::DescLoad || o.kind == OpKind::Trans || o.kind == OpKind::Cast) &&
      ring_tiles.count(o.results[0].index)) {
    out.line("// issued ahead by the TMA ring: the dot reads the block where it landed");
    return;
  }
  if (transpose_staged_by_tma(*this, id)) {
    out.line("// the desc op after it stages the operand's registers transposed (codegen_tma.cpp)");
    return;
  }
  if (transpose_staged_by_dot(*this, id)) {
    out.line("// the dot after it stages the operand's registers transposed (codegen_mma.cpp)");
    return;
  }
  auto result_layout = [&]() -> const Layout* {
    return !o.results.empty() && fn.type(o.results[0]).is_tile() ? &layout(o.results[0]) : nullptr;
  };
  auto result_name = [&] { return o.results.empty() ? std::string() : name(o.results[0]); };
  if (ir::is_elementwise(o.kind) || is_value_source(o.kind)) {
    emit_elementwise(*this, id, result_layout(), result_name());
    if (ir::ValueId storage = accumulator_storage(*this, id); storage.valid()) {
      // Back into the carried accumulator's registers, where the dot that
      // reads it accumulates in place (the compiler drops the copy).
      ir::ValueId result = o.results[0];
      emit_tile_copy(*this, name(storage), name(result), distribution(layout(result), fn.type(result).shape).registers());
      alias(result, storage);
    }
  } else {
    switch (o.kind) {
      case OpKind::Broadcast:
      case OpKind::ExpandDims:
      case OpKind::Reshape:
      case OpKind::Trans:
      case OpKind::Join:
      case OpKind::Split: emit_shape(*this, id, result_layout(), result_name()); break;
      case OpKind::Load:
      case OpKind::Store: emit_memory(*this, id); break;
      case OpKind::AtomicRmw:
      case OpKind::AtomicCas: emit_atomic(*this, id); break;
      case OpKind::DescLoad:
      case OpKind::DescStore:
      case OpKind::DescAtomic: emit_tma(*this, id); break;
      case OpKind::Reduce: emit_reduce(*this, id); break;
      case OpKind::Dot: emit_dot(*this, id); break;
      case OpKind::Scan: emit_scan(*this, id); break;
      case OpKind::Sort: emit_sort(*this, id); break;
      case OpKind::Gather:
      case OpKind::Histogram: emit_indexed(*this, id); break;
      case OpKind::For:
      case OpKind::If:
      case OpKind::While: c_family::emit_control(*this, id); break;
      case OpKind::Print:
      case OpKind::Assert: emit_debug(*this, id); break;
      case OpKind::InlineAsm: emit_inline_asm(*this, id); break;
      // Programmatic dependent launch exists from sm_90; before, no grid depends on another.
      case OpKind::GdcWait:
        if (options.arch >= 90) out.line("asm volatile(\"griddepcontrol.wait;\" ::: \"memory\");");
        break;
      case OpKind::GdcLaunchDependents:
        if (options.arch >= 90) out.line("asm volatile(\"griddepcontrol.launch_dependents;\" ::: \"memory\");");
        break;
      // Every op of verified IR has a CUDA form (E0801 is reserved, never raised).
      default: internal_error(__FILE__, __LINE__, std::string("`") + ir::name(o.kind) + "` has no CUDA form");
    }
  }
  for (ir::ValueId r : o.results)
    if (fn.type(r).is_tile()) emit_extras(r);
}

void CudaContext::emit_extras(ir::ValueId v) {
  const std::vector<Layout>& extras = plan.extras(v);
  ir::OpId def = fn.value(v).def;
  for (size_t j = 0; j < extras.size(); ++j) {
    std::string dest = extra_name(v, j);
    bool recompute = def.valid() && computes_in_any_layout(fn.op(def).kind);
    if (recompute) {
      const ir::Op& d = fn.op(def);
      Layout operand_layout = matching_operand_layout(d, extras[j]);
      for (ir::ValueId u : d.operands) {
        if (!fn.type(u).is_tile()) continue;
        bool available = distribute(layout(u), fn.type(u).shape) == distribute(operand_layout, fn.type(u).shape);
        for (const Layout& e : plan.extras(u))
          available = available || distribute(e, fn.type(u).shape) == distribute(operand_layout, fn.type(u).shape);
        recompute = recompute && available;
      }
    }
    if (recompute) {
      out.line("// " + dest + ": " + name(v) + " recomputed in " + to_string(extras[j]));
      if (fn.op(def).kind == OpKind::Broadcast || fn.op(def).kind == OpKind::ExpandDims)
        emit_shape(*this, def, &extras[j], dest);
      else
        emit_elementwise(*this, def, &extras[j], dest);
    } else {
      out.line("// " + dest + ": " + name(v) + " in " + to_string(extras[j]));
      emit_conversion(v, name(v), layout(v), dest, extras[j]);
    }
  }
}

void emit_tile_copy(CudaContext& ctx, const std::string& dest, const std::string& src, int registers) {
  if (dest == src) return;
  std::string i = ctx.open_unrolled(registers);
  ctx.out.line(dest + "[" + i + "] = " + src + "[" + i + "];");
  ctx.out.close();
}

// --- the translation unit --------------------------------------------------------------

namespace {

// The most registers one tile may take per thread: beyond it nvcc spends
// minutes unrolling and the kernel spills to local memory anyway.
constexpr int kMaxRegistersPerTile = 8192;

std::string indented(const std::string& text) {
  std::string out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    if (end > start) out += "  " + text.substr(start, end - start);
    out += "\n";
    start = end + 1;
  }
  return out;
}

void check_options(const CodegenOptions& options) {
  int w = options.num_warps;
  if (w < 1 || w > 32 || (w & (w - 1)) != 0)
    error_at(SourceLoc{}, Diag::InvalidCompileOption,
             "num_warps must be a power of two from 1 to 32, not " + std::to_string(w));
}

void check_register_use(const CudaContext& ctx) {
  ctx.fn.walk([&](ir::OpId id) {
    const ir::Op& o = ctx.fn.op(id);
    for (ir::ValueId r : o.results) {
      const ir::Type& t = ctx.fn.type(r);
      if (!t.is_tile()) continue;
      int64_t per_thread = distribute(ctx.layout(r), t.shape).registers();
      if (per_thread > kMaxRegistersPerTile)
        error_at(o.loc, Diag::TooManyRegisters,
                 ir::to_string(t) + " would take " + std::to_string(per_thread) +
                     " registers per thread in the CUDA backend (at most " + std::to_string(kMaxRegistersPerTile) +
                     ")",
                 "use more warps (num_warps) or smaller blocks");
    }
  });
}

// The kernel's body emitted into a fresh context, warp-specialized where
// the plan says so and `specialize` allows it (else `why` says why not).
std::unique_ptr<CudaContext> emit_body(const ir::Function& fn, const CodegenOptions& options, bool specialize,
                                       std::string& why) {
  auto ctx = std::make_unique<CudaContext>(fn, options);
  check_register_use(*ctx);
  if (specialize) ctx->warp_specialization = plan_warp_specialization(*ctx, why);
  if (ctx->warp_specialization) emit_warp_specialization(*ctx, *ctx->warp_specialization);
  ctx->emit_block_body(fn.body());
  ctx->finish_bulk_reads();
  return ctx;
}

int64_t shared_bytes_of(const CudaContext& ctx) {
  return ctx.uses_tma_barrier() ? (ctx.shared_bytes() + 7) / 8 * 8 + 8 : ctx.shared_bytes();
}

}  // namespace

CudaKernel emit_cuda(const ir::Function& fn, const CodegenOptions& options) {
  check_options(options);
  const ir::Block& body = fn.block(fn.body());
  TEGULA_ASSERT(body.args.size() == fn.params.size(), "kernel parameters and body arguments differ");
  std::string not_specialized;
  std::unique_ptr<CudaContext> owned = emit_body(fn, options, true, not_specialized);
  // A producer walking tiles keeps the ring while the epilogue stages its
  // results; when both do not fit, the ring is refilled by thread 0 and the
  // epilogue reuses its area, as without the producer.
  if (owned->warp_specialization && owned->warp_specialization->tiles.valid() &&
      shared_bytes_of(*owned) > shared_limit(options.arch)) {
    std::string needed = std::to_string(shared_bytes_of(*owned));
    owned = emit_body(fn, options, false, not_specialized);
    not_specialized = "the ring beside the tiles' epilogue would need " + needed +
                      " bytes of shared memory; fewer stages would fit";
  }
  CudaContext& ctx = *owned;

  CudaKernel kernel;
  kernel.num_threads = ctx.warp_specialization ? ctx.warp_specialization->threads() : 32 * options.num_warps;
  fn.walk([&](ir::OpId id) { kernel.tune_occupancy = kernel.tune_occupancy && fn.op(id).kind != ir::OpKind::Dot; });
  kernel.tensor_maps = ctx.tensor_maps();
  bool uses_tma = !kernel.tensor_maps.empty();
  int64_t tma_barrier_at = (ctx.shared_bytes() + 7) / 8 * 8;
  kernel.shared_bytes = static_cast<int>(shared_bytes_of(ctx));
  kernel.layouts = ctx.plan.describe();
  for (const std::string& path : ctx.descriptor_paths) kernel.layouts += path + "\n";
  kernel.layouts += describe_warp_specialization(fn, ctx.warp_specialization, not_specialized);
  if (kernel.shared_bytes > shared_limit(options.arch))
    error_at(SourceLoc{}, Diag::TooMuchSharedMemory,
             "kernel @" + fn.name + " needs " + std::to_string(kernel.shared_bytes) +
                 " bytes of shared memory, more than sm_" + std::to_string(options.arch) + " has (" +
                 std::to_string(shared_limit(options.arch)) + ")",
             "use smaller blocks");

  Emitter unit;
  unit.line("// Generated by Tegula: CUDA code for kernel @" + c_family::comment_text(fn.name) + ".");
  unit.raw(kPrelude);
  if (ir::uses_fp8(fn)) {
    unit.raw(c_family::kCudaFunctions);
    unit.raw(kFp8Types);
    unit.raw(c_family::kSoftFp8);
    unit.raw(kFp8Prelude);
    if (ir::uses_scalar(fn, ir::Scalar::F8E4B15)) {
      unit.raw(kFp8E4b15Types);
      unit.raw(c_family::kSoftFp8E4b15);
    }
    if (ir::uses_scalar(fn, ir::Scalar::F8E4B8) || ir::uses_scalar(fn, ir::Scalar::F8E5B16)) {
      unit.raw(kFp8FnuzTypes);
      unit.raw(c_family::kSoftFp8Fnuz);
    }
  }
  if (uses_atomics(fn)) unit.raw(kAtomicPrelude);
  if (c_family::uses_libdevice(fn)) unit.raw(kLibdevicePrelude);
  if (options.arch >= 80 && (uses_dot(fn) || uses_tma)) unit.raw(kMmaPrelude);
  if (options.arch >= 90 && (uses_dot(fn) || uses_tma)) unit.raw(kWgmmaPrelude);
  if (uses_tma) unit.raw(kAsyncPrelude);
  if (std::any_of(fn.params.begin(), fn.params.end(), [](const ir::Param& p) { return p.by_value_bytes > 0; })) {
    unit.line("// A parameter the launch passes by value (a host TMA descriptor's bytes).");
    unit.line("template <int N> struct __align__(16) TgValueBytes { unsigned char b[N]; };");
  }
  emit_debug_helpers(unit, options);
  unit.raw(ctx.device_helpers());
  unit.blank();
  unit.line("// ---- kernel ----");
  std::string params;
  // A parameter passed by value (a host TMA descriptor's bytes) arrives as a __grid_constant__ block the
  // kernel points at: reads through a generic pointer into parameter space, as in Triton.
  std::string by_value_aliases;
  for (size_t i = 0; i < fn.params.size(); ++i) {
    const ir::Param& p = fn.params[i];
    if (p.by_value_bytes > 0) {
      std::string block = "tg_value" + std::to_string(i);
      params += (i ? ", " : "") + std::string("const __grid_constant__ TgValueBytes<") +
                std::to_string(p.by_value_bytes) + "> " + block;
      by_value_aliases += c_element(p.type) + " const " + ctx.name(body.args[i]) + " = (" + c_element(p.type) +
                          ")" + block + ".b;\n";
      continue;
    }
    params += (i ? ", " : "") + c_element(p.type) + " " + ctx.name(body.args[i]);
  }
  // Tensor maps after the kernel's own parameters (backends/kernel_abi.h).
  for (size_t i = 0; i < kernel.tensor_maps.size(); ++i)
    params += (params.empty() ? "" : ", ") + std::string("const __grid_constant__ TgTensorMap tg_map") + std::to_string(i);
  // The build's occupancy tuning may ask for more resident blocks by
  // defining abi::kMinBlocksMacro (backends/kernel_abi.h). Without it the
  // bounds name no minimum: an explicit 1 is not the same to ptxas, which
  // then spends registers more freely.
  const std::string min_blocks = abi::kMinBlocksMacro;
  unit.line("#ifdef " + min_blocks);
  unit.line("#define TG_LAUNCH_BOUNDS(threads) __launch_bounds__(threads, " + min_blocks + ")");
  unit.line("#else");
  unit.line("#define TG_LAUNCH_BOUNDS(threads) __launch_bounds__(threads)");
  unit.line("#endif");
  // A register cap of the launch's replaces the launch bounds (NVRTC takes
  // __maxnreg__ only without them) and occupancy tuning.
  std::string bounds = "TG_LAUNCH_BOUNDS(" + std::to_string(kernel.num_threads) + ") ";
  if (options.maxnreg > 0) {
    bounds = "__maxnreg__(" + std::to_string(options.maxnreg) + ") ";
    kernel.tune_occupancy = false;
  }
  // One block per multiprocessor: the register budgets of the warpgroups
  // (warp_specialize.h) add up to what these bounds give a thread.
  if (ctx.warp_specialization) {
    bounds = "__launch_bounds__(" + std::to_string(kernel.num_threads) + ", 1) ";
    kernel.tune_occupancy = false;
  }
  unit.line("extern \"C\" __global__ void " + bounds + abi::kEntrySymbol + "(" + params + debug_kernel_parameters(fn, options) + ") {");
  // Tensor-core tiles sit on 1024-byte lines, a period of wgmma's swizzles;
  // TMA blocks on 128-byte ones.
  if (kernel.shared_bytes > 0)
    unit.line("  extern __shared__ __align__(" + std::string(uses_dot(fn) || uses_tma ? "1024" : "16") +
              ") unsigned char tg_smem[];");
  if (ctx.uses_tma_barrier()) {
    unit.line("  // The mbarrier TMA loads complete on, one phase per load (codegen_tma.cpp).");
    unit.line("  const unsigned tg_tma_bar = tg_shared_address(tg_smem) + " + std::to_string(tma_barrier_at) + ";");
    unit.line("  unsigned tg_tma_phase = 0;");
    unit.line("  if (threadIdx.x == 0) {");
    unit.line("    tg_mbar_init(tg_tma_bar, 1);");
    unit.line("    tg_fence_mbar_init();");
    unit.line("  }");
    unit.line("  __syncthreads();");
  }
  unit.raw(indented(by_value_aliases));
  unit.raw(indented(debug_prologue(fn, options)));
  unit.raw(indented(ctx.prologue()));
  unit.raw(indented(ctx.out.text()));
  unit.line("}");
  kernel.source = unit.text();
  return kernel;
}

}  // namespace tegula::backends::cuda
