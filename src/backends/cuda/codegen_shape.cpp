// Shape ops and layout conversions.
//
// broadcast and expand_dims never move data between threads: in a layout L,
// a thread holds the elements of the broadcast result whose coordinates
// along the broadcast dims are anything and along the others are those it
// holds of the operand (in L too); expand_dims of an operand in slice(L, a)
// gives L. Both are register copies the compiler removes.
//
// Conversions between layouts compare Distributions (layout.h): the same
// distribution is a copy; the same lanes and warps owning the same elements
// is a permutation of registers; anything else goes through shared memory
// (each owner writes its elements at their linear index, a barrier, each
// thread reads the elements it needs; the scratch rows are padded when that
// spreads a warp's accesses over more banks, ScratchPadding). reshape keeps
// linear indices, trans permutes their bits, join/split interleave them: a
// register copy or selection when the result's layout is the one the operand's
// distribution gives it (layout_in_place, as accumulators get), else a
// shared-memory round trip with remapped addresses.
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "backends/cuda/codegen_context.h"
#include "support/diagnostic.h"

namespace tegula::backends::cuda {

using ir::OpKind;

namespace {

// For each register bit of `to` (on `to_shape`): the register bit of `from`
// (on `from_shape`) holding the same coordinate bit, where `to` dim d is
// `from` dim dim_map[d] (-1: the operand has no such dim, or size 1).
std::vector<int> register_bit_map(const Distribution& to, const std::vector<int64_t>& to_shape, const Distribution& from,
                                  const std::vector<int64_t>& from_shape, const std::vector<int>& dim_map) {
  std::vector<int> map;
  for (int bit : to.register_bits) {
    CoordinateBit c = coordinate_bit(to_shape, bit);
    int found = -1;
    int from_dim = dim_map[static_cast<size_t>(c.dim)];
    for (size_t k = 0; k < from.register_bits.size() && from_dim >= 0; ++k) {
      CoordinateBit f = coordinate_bit(from_shape, from.register_bits[k]);
      if (f.dim == from_dim && f.bit == c.bit) found = static_cast<int>(k);
    }
    map.push_back(found);
  }
  return map;
}

// dest[i] = src[map(i)] for every register of dest.
void emit_register_gather(CudaContext& ctx, const std::string& dest, const std::string& src, int registers,
                          const std::vector<int>& map) {
  std::string i = ctx.open_unrolled(registers);
  int width = static_cast<int>(map.size());
  ctx.out.line(dest + "[" + i + "] = " + src + "[" + bits_expr(i, map, width) + "];");
  ctx.out.close();
}

void emit_broadcast_like(CudaContext& ctx, ir::OpId id, const Layout& layout, const std::string& dest) {
  const ir::Op& op = ctx.fn.op(id);
  ir::ValueId source = op.operands[0];
  const ir::Type& to = ctx.fn.type(op.results[0]);
  const ir::Type& from = ctx.fn.type(source);
  if (!from.is_tile()) {  // a one-element tile of a scalar
    int registers = ctx.declare_tile(dest, to, layout);
    std::string i = ctx.open_unrolled(registers);
    ctx.out.line(dest + "[" + i + "] = " + ctx.name(source) + ";");
    ctx.out.close();
    return;
  }
  std::vector<int> dim_map;
  Layout source_layout = layout;
  if (op.kind == OpKind::ExpandDims) {
    int axis = static_cast<int>(op.int_attr("axis"));
    source_layout = slice(layout, axis);
    for (int d = 0; d < to.rank(); ++d) dim_map.push_back(d < axis ? d : d == axis ? -1 : d - 1);
  } else {
    for (int d = 0; d < to.rank(); ++d) dim_map.push_back(from.shape[static_cast<size_t>(d)] == 1 ? -1 : d);
  }
  Distribution dd = ctx.distribution(layout, to.shape);
  Distribution ds = ctx.distribution(source_layout, from.shape);
  int registers = ctx.declare_tile(dest, to, layout);
  emit_register_gather(ctx, dest, ctx.tile(source, source_layout), registers,
                       register_bit_map(dd, to.shape, ds, from.shape, dim_map));
}

// Each owner thread writes its registers of `src` (distribution `d`) at
// their element indices in scratch `buffer`.
void write_shared(CudaContext& ctx, const std::string& buffer, const std::string& src, const Distribution& d,
                  const std::string& offset = "") {
  std::string own = ctx.owner(d);
  if (!own.empty()) ctx.out.open("if (" + own + ")");
  std::string i = ctx.open_unrolled(d.registers());
  ctx.out.line(buffer + "[" + ctx.element_index(d, i) + offset + "] = " + src + "[" + i + "];");
  ctx.out.close();
  if (!own.empty()) ctx.out.close();
}

void read_shared(CudaContext& ctx, const std::string& dest, const std::string& buffer, const Distribution& d,
                 const std::string& offset = "") {
  std::string i = ctx.open_unrolled(d.registers());
  ctx.out.line(dest + "[" + i + "] = " + buffer + "[" + ctx.element_index(d, i) + offset + "];");
  ctx.out.close();
}

// Padding of a scratch buffer: 2^pad_shift elements after every
// 2^row_shift ("a row"), so the rows one warp access touches at equal
// column offsets start in different banks. Both sides' vectors stay whole
// (the pad is a multiple of the longer run) and every index stays a thread
// base plus a constant: the thread's base and a register's offset have
// disjoint bits, so padding each and adding is padding the sum.
struct ScratchPadding {
  int pad_shift = -1, row_shift = 0;

  bool none() const { return pad_shift < 0; }
  int64_t apply(int64_t index) const { return none() ? index : index + ((index >> row_shift) << pad_shift); }
  int64_t elements(int64_t numel) const { return apply(numel - 1) + 1; }
  std::string pad(const std::string& e) const {
    return "(" + e + " + (((" + e + ") >> " + std::to_string(row_shift) + ") << " + std::to_string(pad_shift) + "))";
  }
  // The padded index of register `reg` of `d` (a C expression).
  std::string index(CudaContext& ctx, const Distribution& d, const std::string& reg) const {
    if (none()) return ctx.element_index(d, reg);
    std::string offset = bits_expr(reg, d.register_bits, static_cast<int>(d.register_bits.size()));
    std::string base = pad(ctx.thread_base(d));
    return offset == "0" ? base : base + " + " + pad(offset);
  }
};

// How many consecutive elements of the linear index each thread holds in a
// row (its registers' lowest bits are the index's lowest bits), as a power of 2.
int contiguous_run(const Distribution& d) {
  int run = 0;
  while (run < static_cast<int>(d.register_bits.size()) && d.register_bits[static_cast<size_t>(run)] == run) ++run;
  return run;
}

// Shared-memory wavefronts that warp 0's accesses of every register of `d`
// take under padding `s`: per vector access (a run of registers), the most
// distinct 4-byte words any one of the 32 banks serves. A model, for
// comparing candidate paddings, not a cycle count.
int64_t scratch_wavefronts(const Distribution& d, int element_bytes, const ScratchPadding& s) {
  int run = contiguous_run(d);
  int64_t vector_bytes = (int64_t{1} << run) * element_bytes, total = 0;
  for (int r = 0; r < d.registers(); r += 1 << run) {
    std::vector<std::vector<int64_t>> words(32);
    for (int lane = 0; lane < 32; ++lane) {
      int64_t index = d.register_offset(r);
      for (size_t k = 0; k < d.lane_bits.size(); ++k)
        if (((lane >> k) & 1) && d.lane_bits[k] >= 0) index |= int64_t{1} << d.lane_bits[k];
      int64_t first = s.apply(index) * element_bytes / 4;
      for (int64_t w = first; w < first + std::max<int64_t>(1, vector_bytes / 4); ++w) {
        std::vector<int64_t>& bank = words[static_cast<size_t>(w % 32)];
        if (std::find(bank.begin(), bank.end(), w) == bank.end()) bank.push_back(w);
      }
    }
    size_t most = 0;
    for (const auto& bank : words) most = std::max(most, bank.size());
    total += static_cast<int64_t>(most);
  }
  return total;
}

// The padding of a shared-memory round trip from `from` to `to`: the
// candidate (none among them) with the fewest modelled wavefronts, writes
// and reads together; ties keep the smaller buffer.
ScratchPadding choose_scratch_padding(const Distribution& from, const Distribution& to, int element_bytes,
                                      const std::vector<int64_t>& shape) {
  ScratchPadding best;
  auto cost = [&](const ScratchPadding& s) {
    return scratch_wavefronts(from, element_bytes, s) + scratch_wavefronts(to, element_bytes, s);
  };
  int64_t best_cost = cost(best);
  // A pad of at least 4 bytes (one bank) and at least the longer run.
  int unit = std::max(contiguous_run(from), contiguous_run(to));
  while ((int64_t{1} << unit) * element_bytes < 4) ++unit;
  int index_bits = 0, row = 0;
  while ((int64_t{1} << index_bits) < from.numel) ++index_bits;
  while (!shape.empty() && (int64_t{1} << row) < shape.back()) ++row;
  for (int row_shift : {row, unit + 3, unit + 5}) {
    if (row_shift <= unit || row_shift >= index_bits) continue;
    ScratchPadding s{unit, row_shift};
    int64_t c = cost(s);
    if (c < best_cost) best = s, best_cost = c;
  }
  return best;
}

std::string scratch_for(CudaContext& ctx, const ir::Type& t, int64_t elements) {
  std::string buffer = ctx.fresh("s");
  std::string type = c_element(t);
  ctx.out.line(type + "* const " + buffer + " = reinterpret_cast<" + type + "*>(" +
               ctx.shared_scratch(elements * element_bytes(t)) + ");");
  return buffer;
}

// Moves a tile between distributions that see the same linear indices,
// after renaming: a copy, a register permutation or a shared-memory trip.
void emit_move(CudaContext& ctx, const ir::Type& t, const std::string& src, const Distribution& from,
               const std::string& dest, const Distribution& to) {
  if (from == to) return emit_tile_copy(ctx, dest, src, to.registers());
  if (from.lane_bits == to.lane_bits && from.warp_bits == to.warp_bits) {
    std::vector<int> map;
    for (int bit : to.register_bits) {
      int found = -1;
      for (size_t k = 0; k < from.register_bits.size(); ++k)
        if (from.register_bits[k] == bit) found = static_cast<int>(k);
      map.push_back(found);
    }
    return emit_register_gather(ctx, dest, src, to.registers(), map);
  }
  ScratchPadding padding = choose_scratch_padding(from, to, element_bytes(t), t.shape);
  std::string buffer = scratch_for(ctx, t, padding.elements(from.numel));
  std::string own = ctx.owner(from);
  if (!own.empty()) ctx.out.open("if (" + own + ")");
  std::string i = ctx.open_unrolled(from.registers());
  ctx.out.line(buffer + "[" + padding.index(ctx, from, i) + "] = " + src + "[" + i + "];");
  ctx.out.close();
  if (!own.empty()) ctx.out.close();
  ctx.barrier();
  i = ctx.open_unrolled(to.registers());
  ctx.out.line(dest + "[" + i + "] = " + buffer + "[" + padding.index(ctx, to, i) + "];");
  ctx.out.close();
  ctx.shared_reads_done();
}

std::vector<int> identity_bits(int64_t numel) {
  std::vector<int> bits;
  for (int b = 0; (int64_t{1} << b) < numel; ++b) bits.push_back(b);
  return bits;
}

void emit_reshape(CudaContext& ctx, ir::OpId id, const Layout* layout, const std::string& dest) {
  const ir::Op& op = ctx.fn.op(id);
  ir::ValueId source = op.operands[0];
  const ir::Type& from = ctx.fn.type(source);
  const ir::Type& to = ctx.fn.type(op.results[0]);
  if (!from.is_tile()) return emit_broadcast_like(ctx, id, *layout, dest);
  if (!to.is_tile()) {  // one element, which every thread holds
    ctx.out.line(c_const(to) + " " + dest + " = " + ctx.name(source) + "[0];");
    return;
  }
  Distribution d_from = ctx.distribution(ctx.layout(source), from.shape);
  Distribution d_to = ctx.distribution(*layout, to.shape);
  ctx.declare_tile(dest, to, *layout);
  emit_move(ctx, to, ctx.name(source), d_from, dest, d_to);
}

void emit_trans(CudaContext& ctx, ir::OpId id, const Layout& layout, const std::string& dest) {
  const ir::Op& op = ctx.fn.op(id);
  ir::ValueId source = op.operands[0];
  const ir::Type& to = ctx.fn.type(op.results[0]);
  Distribution d_from = transposed_distribution(ctx, id);
  Distribution d_to = ctx.distribution(layout, to.shape);
  ctx.declare_tile(dest, to, layout);
  emit_move(ctx, to, ctx.name(source), d_from, dest, d_to);
}

// join: result linear index = 2 * operand index + which.
void emit_join(CudaContext& ctx, ir::OpId id, const Layout& layout, const std::string& dest) {
  const ir::Op& op = ctx.fn.op(id);
  const ir::Type& to = ctx.fn.type(op.results[0]);
  ctx.declare_tile(dest, to, layout);
  ir::ValueId first = op.operands[0], second = op.operands[1];
  if (ctx.fn.type(first).is_tile() && ctx.fn.type(second).is_tile()) {
    Distribution d = ctx.distribution(ctx.layout(first), ctx.fn.type(first).shape);
    if (d == ctx.distribution(ctx.layout(second), ctx.fn.type(second).shape) &&
        joined_distribution(d) == ctx.distribution(layout, to.shape)) {
      // Each thread interleaves its own registers of both (joined_distribution: the new dim is register bit 0).
      std::string i = ctx.open_unrolled(2 * d.registers());
      ctx.out.line(dest + "[" + i + "] = (" + i + " & 1) ? " + ctx.name(second) + "[" + i + " >> 1] : " +
                   ctx.name(first) + "[" + i + " >> 1];");
      ctx.out.close();
      return;
    }
  }
  std::string buffer = scratch_for(ctx, to, to.numel());
  for (size_t which = 0; which < 2; ++which) {
    ir::ValueId v = op.operands[which];
    const std::string off = which ? " + 1" : "";
    if (!ctx.fn.type(v).is_tile()) {
      ctx.out.line("if (threadIdx.x == 0) " + buffer + "[" + std::to_string(which) + "] = " + ctx.name(v) + ";");
      continue;
    }
    std::vector<int> doubled;
    for (int b : identity_bits(ctx.fn.type(v).numel())) doubled.push_back(b + 1);
    write_shared(ctx, buffer, ctx.name(v), renamed(ctx.distribution(ctx.layout(v), ctx.fn.type(v).shape), doubled), off);
  }
  ctx.barrier();
  read_shared(ctx, dest, buffer, ctx.distribution(layout, to.shape));
  ctx.shared_reads_done();
}

// Each thread takes its registers of either half when a register bit holds
// the split dim and both results are in the layout that leaves them there.
bool emit_split_in_registers(CudaContext& ctx, ir::OpId id) {
  const ir::Op& op = ctx.fn.op(id);
  ir::ValueId source = op.operands[0];
  const ir::Type& from = ctx.fn.type(source);
  const ir::Type& to = ctx.fn.type(op.results[0]);
  if (!to.is_tile()) return false;
  Distribution d = ctx.distribution(ctx.layout(source), from.shape);
  std::optional<Distribution> half = split_distribution(d);
  for (ir::ValueId r : op.results)
    if (!half || ctx.distribution(ctx.layout(r), to.shape) != *half) return false;
  int k = static_cast<int>(std::find(d.register_bits.begin(), d.register_bits.end(), 0) - d.register_bits.begin());
  std::string low = std::to_string((1 << k) - 1);
  for (size_t which = 0; which < 2; ++which) {
    ir::ValueId r = op.results[which];
    int registers = ctx.declare_tile(ctx.name(r), to, ctx.layout(r));
    std::string i = ctx.open_unrolled(registers);
    // Register i of a half is the source's register with bit k (the split dim) inserted as `which`.
    std::string index = "((" + i + " >> " + std::to_string(k) + ") << " + std::to_string(k + 1) + ") | (" + i + " & " +
                        low + ")" + (which ? " | " + std::to_string(1 << k) : "");
    ctx.out.line(ctx.name(r) + "[" + i + "] = " + ctx.name(source) + "[" + index + "];");
    ctx.out.close();
  }
  return true;
}

void emit_split(CudaContext& ctx, ir::OpId id) {
  if (emit_split_in_registers(ctx, id)) return;
  const ir::Op& op = ctx.fn.op(id);
  ir::ValueId source = op.operands[0];
  const ir::Type& from = ctx.fn.type(source);
  const ir::Type& to = ctx.fn.type(op.results[0]);
  std::string buffer = scratch_for(ctx, from, from.numel());
  write_shared(ctx, buffer, ctx.name(source), ctx.distribution(ctx.layout(source), from.shape));
  ctx.barrier();
  for (size_t which = 0; which < 2; ++which) {
    ir::ValueId r = op.results[which];
    const std::string off = which ? " + 1" : "";
    if (!to.is_tile()) {
      ctx.out.line(c_const(to) + " " + ctx.name(r) + " = " + buffer + "[" + std::to_string(which) + "];");
      continue;
    }
    std::vector<int> doubled;
    for (int b : identity_bits(to.numel())) doubled.push_back(b + 1);
    ctx.declare_tile(ctx.name(r), to, ctx.layout(r));
    read_shared(ctx, ctx.name(r), buffer, renamed(ctx.distribution(ctx.layout(r), to.shape), doubled), off);
  }
  ctx.shared_reads_done();
}

}  // namespace

Distribution transposed_distribution(const CudaContext& ctx, ir::OpId id) {
  const ir::Op& op = ctx.fn.op(id);
  TEGULA_ASSERT(op.kind == ir::OpKind::Trans, "not a trans");
  ir::ValueId source = op.operands[0];
  const ir::Type& from = ctx.fn.type(source);
  const ir::Type& to = ctx.fn.type(op.results[0]);
  return renamed(ctx.distribution(ctx.layout(source), from.shape),
                 trans_bit_map(from.shape, to.shape, op.ints_attr("perm")));
}

void CudaContext::emit_conversion(ir::ValueId v, const std::string& source, const Layout& from,
                                  const std::string& dest, const Layout& to) {
  const ir::Type& t = fn.type(v);
  declare_tile(dest, t, to);
  emit_move(*this, t, source, distribute(from, t.shape), dest, distribute(to, t.shape));
}

void emit_shape(CudaContext& ctx, ir::OpId id, const Layout* layout, const std::string& dest) {
  const ir::Op& op = ctx.fn.op(id);
  switch (op.kind) {
    case OpKind::Broadcast:
    case OpKind::ExpandDims: return emit_broadcast_like(ctx, id, *layout, dest);
    case OpKind::Reshape: return emit_reshape(ctx, id, layout, dest);
    case OpKind::Trans: return emit_trans(ctx, id, *layout, dest);
    case OpKind::Join: return emit_join(ctx, id, *layout, dest);
    case OpKind::Split: return emit_split(ctx, id);
    default: TEGULA_ASSERT(false, "not a shape op");
  }
}

}  // namespace tegula::backends::cuda
