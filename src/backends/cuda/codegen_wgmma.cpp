// dot on Hopper tensor cores with wgmma (sm_90a): out = a @ b + acc for
// f16/bf16 operands, the result in a warpgroup MMA layout (layout_mma.cpp:
// each 4 warps hold 64 x warp_n tiles in mma.sync's fragment order, so
// everything downstream works as for mma.sync).
//
// Both operands are read straight from shared memory through matrix
// descriptors: the swizzled tiles of shared_tile.h are wgmma's canonical
// layouts (8-row x 32/64/128-byte swizzle atoms, rows along K or along M/N),
// so a descriptor is the tile's address plus its strides:
//   rows along K ("K-major"): stride byte offset = 8 rows of a block (the
//     next 8 rows of M or N), leading byte offset = the next 128-byte block
//     along K; a K step of 16 moves the start address 32 bytes into the row;
//   rows along M/N ("MN-major", transposed): leading byte offset = the next
//     block along M/N, stride byte offset = the next 8 rows of K; a K step
//     moves the start 16 rows down.
// Per K step each warpgroup issues one m64nNk16 per 64-row slab and N-wide
// column tile (N = warp_n), all committed as one group, and waits for the
// group before anything reads the result; except in a pipelined K loop that
// lets the group run on into the next iteration (codegen_pipeline.cpp,
// CudaContext::in_flight_dot): there the dot waits for the previous
// iteration's group only (wait_group 1) and the loop waits for the last one
// after it ends.
//
// No register the wgmmas of a group use is touched by other instructions
// between them: ptxas would otherwise insert warpgroup.arrive before each
// one (C7519) and serialize them. So the register-A form packs every A
// fragment word of the dot before the wgmma.fence, and the accumulator is
// only touched by the wgmmas' "+f" operands until the wait.
#include <string>

#include "backends/c_family/tile_index.h"
#include "backends/cuda/codegen_mma.h"
#include "support/diagnostic.h"

namespace tegula::backends::cuda {

using ir::Scalar;

namespace {

std::string str(int64_t v) { return std::to_string(v); }

// The swizzle mode field of a descriptor for a tile's block width.
int swizzle_mode(const SharedTile& t) { return t.block_bytes() == 128 ? 1 : t.block_bytes() == 64 ? 2 : 3; }

// Leading and stride byte offsets (see the top of the file).
int64_t leading_bytes(const SharedTile& t) { return t.block_stride(); }
int64_t stride_bytes(const SharedTile& t) { return 8 * t.block_bytes(); }

// Byte offset, from the tile's start, of the matrix whose first M/N index is
// `mn` (a multiple of 8) at K step `ks` (16 elements of 16 bits, or 32 of
// fp8: 32 bytes along a K-major row either way).
std::string step_offset(const SharedTile& t, const std::string& mn, const std::string& ks) {
  int64_t bb = t.block_bytes();
  std::string k_bytes = "(" + ks + ") * 32";
  if (t.k_major)  // block of K, 8-row group of M/N, bytes into the row
    return "(" + k_bytes + ") / " + str(bb) + " * " + str(t.block_stride()) + " + (" + mn + ") * " + str(bb) +
           " + (" + k_bytes + ") % " + str(bb);
  // block of M/N, then 16 rows of K per step
  return "(" + mn + ") * " + str(t.element_bytes) + " / " + str(bb) + " * " + str(t.block_stride()) + " + (" + ks +
         ") * " + str(16 * bb);
}

// Whether step_offset(t, runtime + constant, ks) is step_offset(t, runtime,
// 0) + step_offset(t, constant, ks) for every multiple `runtime` of `unit`
// rows along M/N: always along K-major rows; MN-major when a unit is whole
// 128-byte blocks (or the tile's block width).
bool separable(const SharedTile& t, int64_t unit) {
  return t.k_major || (unit * t.element_bytes) % t.block_bytes() == 0;
}

// The element type wgmma reads from a tile: the dot's operand type, or the
// fp8 format of a ring's block that the front end widened for the dot.
Scalar read_type(const SharedTile& t, Scalar operand) {
  if (t.element_bytes != 1) return operand;
  return t.c_type == "tg_f8e5m2" ? Scalar::F8E5M2 : Scalar::F8E4M3;
}

bool is_fp8_read(Scalar s) { return s == Scalar::F8E4M3 || s == Scalar::F8E5M2; }

// The PTX name of a wgmma type and the emulator's number for it.
std::string ptx_type(Scalar s) {
  return s == Scalar::BF16 ? "bf16" : s == Scalar::F8E4M3 ? "e4m3" : s == Scalar::F8E5M2 ? "e5m2" : "f16";
}
int emulator_type(Scalar s) {
  return s == Scalar::BF16 ? 1 : s == Scalar::F8E4M3 ? 2 : s == Scalar::F8E5M2 ? 3 : 0;
}

// The m64nNk16 (fp8: m64nNk32) instruction for this shape, types and
// majorness, as a device function of the unit; returns its name.
std::string instruction(CudaContext& ctx, int n, Scalar type, bool a_mn_major, bool b_mn_major) {
  std::string t = ptx_type(type);
  bool fp8 = is_fp8_read(type);
  std::string k = fp8 ? "k32" : "k16";
  std::string name = "tg_wgmma_m64n" + str(n) + k + "_" + t + "_" + (a_mn_major ? "m" : "k") + (b_mn_major ? "n" : "k");
  int registers = n / 2;
  std::string outputs, list;
  for (int r = 0; r < registers; ++r) {
    list += (r ? ", %" : "%") + str(r);
    outputs += std::string(r ? ", " : "") + "\"+f\"(d[" + str(r) + "])";
  }
  std::string text = "// d[0.." + str(registers) + ") += a * b: this warpgroup's 64x" + str(n) +
                     " tile, asynchronous until tg_wgmma_wait.\n"
                     "TG_DEVICE void " + name + "(float* d, unsigned long long a, unsigned long long b) {\n"
                     "  TG_WGMMA_HOOK(d, a, b, " + str(n) + ", " + str(emulator_type(type)) + ", " +
                     (a_mn_major ? "1" : "0") + ", " + (b_mn_major ? "1" : "0") + ");\n"
                     "  asm volatile(\"{\\n.reg .pred p;\\nsetp.ne.b32 p, %" + str(registers + 2) + ", 0;\\n\"\n"
                     "               \"wgmma.mma_async.sync.aligned.m64n" + str(n) + k + ".f32." + t + "." + t + " {" + list +
                     "}, %" + str(registers) + ", %" + str(registers + 1) + ", p, 1, 1" +
                     (fp8 ? "" : std::string(", ") + (a_mn_major ? "1" : "0") + ", " + (b_mn_major ? "1" : "0")) +
                     ";\\n}\\n\"\n"
                     "               : " + outputs + "\n               : \"l\"(a), \"l\"(b), \"r\"(1));\n}\n";
  ctx.add_device_helper(name, text);
  return name;
}

// The same with operand a from registers: four 32-bit words per thread,
// mma.sync's A fragment of this warp's 16 rows (the warpgroup's 64).
std::string instruction_a_in_registers(CudaContext& ctx, int n, Scalar type, bool b_mn_major) {
  std::string t = type == Scalar::BF16 ? "bf16" : "f16";
  std::string name = "tg_wgmma_m64n" + str(n) + "k16_" + t + "_r" + (b_mn_major ? "n" : "k");
  int registers = n / 2;
  std::string outputs, list;
  for (int r = 0; r < registers; ++r) {
    list += (r ? ", %" : "%") + str(r);
    outputs += std::string(r ? ", " : "") + "\"+f\"(d[" + str(r) + "])";
  }
  std::string a = "{%" + str(registers) + ", %" + str(registers + 1) + ", %" + str(registers + 2) + ", %" +
                  str(registers + 3) + "}";
  std::string text = "// d[0.." + str(registers) + ") += a * b: this warpgroup's 64x" + str(n) +
                     " tile, a from registers, asynchronous until tg_wgmma_wait.\n"
                     "TG_DEVICE void " + name + "(float* d, const unsigned* a, unsigned long long b) {\n"
                     "  TG_WGMMA_REG_HOOK(d, a, b, " + str(n) + ", " + (type == Scalar::BF16 ? "1" : "0") + ", " +
                     (b_mn_major ? "1" : "0") + ");\n"
                     "  asm volatile(\"{\\n.reg .pred p;\\nsetp.ne.b32 p, %" + str(registers + 5) + ", 0;\\n\"\n"
                     "               \"wgmma.mma_async.sync.aligned.m64n" + str(n) + "k16.f32." + t + "." + t + " {" + list +
                     "}, " + a + ", %" + str(registers + 4) + ", p, 1, 1, " + (b_mn_major ? "1" : "0") + ";\\n}\\n\"\n"
                     "               : " + outputs + "\n               : \"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), "
                     "\"r\"(a[3]), \"l\"(b), \"r\"(1));\n}\n";
  ctx.add_device_helper(name, text);
  return name;
}

// Accumulator registers of (slab mr, column tile nr): (warp_n / 2) * (nr + NR * mr)
// onwards, 4 per 8 columns: checks the layout's distribution says so.
void check_accumulator_order(const Distribution& d, const MmaLayout& mma, int64_t n, int64_t slabs, int64_t tiles) {
  int64_t groups_m = mma.warps_m / 4;
  for (int64_t mr = 0; mr < slabs; ++mr)
    for (int64_t nr = 0; nr < tiles; ++nr)
      for (int64_t i = 0; i < mma.warp_n / 8; ++i)
        for (int c = 0; c < 4; ++c) {
          int64_t row = mr * 64 * groups_m + 8 * (c >> 1), col = nr * mma.warp_n * mma.warps_n + 8 * i + (c & 1);
          int64_t reg = mma.warp_n / 2 * (nr + tiles * mr) + 4 * i + c;
          TEGULA_ASSERT(reg < d.registers() && d.register_offset(static_cast<int>(reg)) == row * n + col,
                        "wgmma accumulator registers out of fragment order");
        }
}

}  // namespace

bool wgmma_fits(const CudaContext& ctx, ir::OpId id, const DotOperands& operands) {
  const ir::Op& op = ctx.fn.op(id);
  const Layout& layout = ctx.layout(op.results[0]);
  if (!layout.mma || !layout.mma->warpgroup || ctx.options.arch < 90) return false;
  for (const SharedTile* t : {&operands.a, &operands.b}) {
    if (t == &operands.a && operands.a_in_registers) continue;
    // fp8 blocks (a ring's, read as the dot's widened operand): K-major only.
    bool fp8 = t->element_bytes == 1 && t->k_major && !operands.a_in_registers;
    if ((t->element_bytes != 2 && !fp8) || t->row_bytes() < 32 || t->rows % 8 != 0) return false;
  }
  if (!operands.a_in_registers && (operands.a.element_bytes != operands.b.element_bytes ||
                                   (operands.a.element_bytes == 1 && operands.a.c_type != operands.b.c_type)))
    return false;  // one wgmma type for both
  // A transposed (M-major) a steps by 64-row slabs, b by warp_n columns:
  // each matrix must start on a block boundary.
  if (!operands.a_in_registers && !operands.a.k_major && (64 * 2) % operands.a.block_bytes() != 0) return false;
  if (!operands.b.k_major && (int64_t{layout.mma->warp_n} * 2) % operands.b.block_bytes() != 0) return false;
  return true;
}

namespace {

// What every emitter of a dot's wgmma group needs of its shape.
struct GroupShape {
  const MmaLayout* mma;
  int64_t groups_m, groups_n, slabs, tiles, k_steps, k_step;
  Scalar type;  // what wgmma reads
};

GroupShape group_shape(const CudaContext& ctx, ir::OpId id, const DotOperands& operands) {
  const ir::Op& op = ctx.fn.op(id);
  ir::ValueId result = op.results[0];
  const ir::Type& tr = ctx.fn.type(result);
  const ir::Type& ta = ctx.fn.type(op.operands[0]);
  GroupShape g;
  g.mma = &*ctx.layout(result).mma;
  int64_t m = tr.shape[0], n = tr.shape[1], k = ta.shape[1];
  g.groups_m = g.mma->warps_m / 4;
  g.groups_n = g.mma->warps_n;
  g.type = read_type(operands.b, ta.scalar);
  g.k_step = is_fp8_read(g.type) ? 32 : 16;
  g.slabs = m / (64 * g.groups_m);
  g.tiles = n / (int64_t{g.mma->warp_n} * g.groups_n);
  g.k_steps = k / g.k_step;
  TEGULA_ASSERT(g.slabs >= 1 && g.tiles >= 1 && k % g.k_step == 0, "dot shape unfit for wgmma");
  return g;
}

// Every A fragment word of the dot into `fa` (declared by the caller):
// before the fence (see the top of the file).
void pack_fragments(CudaContext& ctx, ir::OpId id, const GroupShape& g, const std::string& fa) {
  std::string ks = ctx.open_unrolled(static_cast<int>(g.k_steps));
  std::string mr = ctx.open_unrolled(static_cast<int>(g.slabs));
  for (int word = 0; word < 4; ++word)
    ctx.out.line(fa + "[" + ks + "][" + mr + "][" + str(word) + "] = " + a_fragment_word(ctx, id, mr, ks, word) + ";");
  ctx.out.close();
  ctx.out.close();
}

std::string fragments_declaration(const GroupShape& g, const std::string& fa) {
  return "unsigned " + fa + "[" + str(g.k_steps) + "][" + str(g.slabs) + "][4];";
}

// The group's issue in the caller's scope: descriptors, (with `pack` the A
// fragments into `fa`, declared here), the fence, every wgmma, the commit.
void issue_group(CudaContext& ctx, ir::OpId id, const DotOperands& operands, const GroupShape& g,
                 const std::string& acc_array, const std::string& fa, bool pack) {
  const SharedTile& a = operands.a;
  const SharedTile& b = operands.b;
  bool a_regs = operands.a_in_registers;
  const ir::Type& ta = ctx.fn.type(ctx.fn.op(id).operands[0]);
  const MmaLayout& mma = *g.mma;
  std::string fn = a_regs ? instruction_a_in_registers(ctx, mma.warp_n, ta.scalar, !b.k_major)
                          : instruction(ctx, mma.warp_n, g.type, !a.k_major, !b.k_major);
  ctx.out.line("const unsigned sm = tg_shared_address(tg_smem);");
  ctx.out.line("const int wg = warp >> 2;  // warpgroup");
  ctx.out.line("const int wm = (wg & " + str(g.groups_m - 1) + ") * 64;");
  ctx.out.line("const int wn = (wg >> " + str(c_family::log2_ceil(g.groups_m)) + ") * " + str(mma.warp_n) + ";");
  if (!a_regs)
    ctx.out.line("const unsigned long long da = tg_wgmma_desc(sm + " + a.offset + ", " + str(leading_bytes(a)) + ", " +
                 str(stride_bytes(a)) + ", " + str(swizzle_mode(a)) + ");");
  ctx.out.line("const unsigned long long db = tg_wgmma_desc(sm + " + b.offset + ", " + str(leading_bytes(b)) + ", " +
               str(stride_bytes(b)) + ", " + str(swizzle_mode(b)) + ");");
  // The warpgroup's own rows / columns, folded into the descriptors once:
  // the steps of the unrolled loop are then constants (immediate adds).
  if (!a_regs && separable(a, 64))
    ctx.out.line("const unsigned long long da_w = da + ((" + step_offset(a, "wm", "0") + ") >> 4);");
  if (separable(b, mma.warp_n))
    ctx.out.line("const unsigned long long db_w = db + ((" + step_offset(b, "wn", "0") + ") >> 4);");
  if (a_regs && pack) {
    ctx.out.line(fragments_declaration(g, fa));
    pack_fragments(ctx, id, g, fa);
  }
  ctx.out.line("tg_wgmma_fence();  // the accumulator's (and A's) registers, written before");
  std::string ks = ctx.open_unrolled(static_cast<int>(g.k_steps));
  std::string mr = ctx.open_unrolled(static_cast<int>(g.slabs));
  std::string nr = ctx.open_unrolled(static_cast<int>(g.tiles));
  std::string rows = mr + " * " + str(64 * g.groups_m), cols = nr + " * " + str(int64_t{mma.warp_n} * g.groups_n);
  std::string a_desc = "da", b_desc = "db";
  if (!separable(a, 64)) a_desc = "da", rows = "wm + " + rows;
  else if (!a_regs) a_desc = "da_w";
  if (!separable(b, mma.warp_n)) cols = "wn + " + cols;
  else b_desc = "db_w";
  std::string a_operand =
      a_regs ? fa + "[" + ks + "][" + mr + "]" : a_desc + " + ((" + step_offset(a, rows, ks) + ") >> 4)";
  ctx.out.line(fn + "(" + acc_array + " + " + str(mma.warp_n / 2) + " * (" + nr + " + " + str(g.tiles) + " * " + mr +
               "), " + a_operand + ", " + b_desc + " + ((" + step_offset(b, cols, ks) + ") >> 4));");
  ctx.out.close();
  ctx.out.close();
  ctx.out.close();
  ctx.out.line("tg_wgmma_commit();");
}

}  // namespace

void declare_late_fragments(CudaContext& ctx, ir::OpId dot, const DotOperands& operands, const std::string& fa) {
  ctx.out.line(fragments_declaration(group_shape(ctx, dot, operands), fa) +
               "  // the last dot's A fragments, read by its group one iteration late");
}

void emit_wgmma_late_issue(CudaContext& ctx, ir::OpId dot, const DotOperands& operands, const std::string& fragments) {
  ir::ValueId acc = carried_accumulator(ctx, dot);
  ctx.out.open("");
  issue_group(ctx, dot, operands, group_shape(ctx, dot, operands), ctx.name(acc), fragments, false);
  ctx.out.close();
}

void emit_dot_wgmma(CudaContext& ctx, ir::OpId id, const DotOperands& operands) {
  const ir::Op& op = ctx.fn.op(id);
  ir::ValueId result = op.results[0];
  const ir::Type& tr = ctx.fn.type(result);
  GroupShape g = group_shape(ctx, id, operands);
  const MmaLayout& mma = *g.mma;
  const SharedTile& a = operands.a;
  const SharedTile& b = operands.b;
  bool a_regs = operands.a_in_registers;
  check_accumulator_order(ctx.distribution(ctx.layout(result), tr.shape), mma, tr.shape[1], g.slabs, g.tiles);
  ctx.out.line("// tensor cores: wgmma m64n" + str(mma.warp_n) + "k" + str(g.k_step) +
               (is_fp8_read(g.type) ? " " + ptx_type(g.type) : "") + ", warpgroups " + str(g.groups_m) + "x" +
               str(g.groups_n) + ", a " + (a_regs ? "in registers" : a.k_major ? "[M][K]" : "[K][M]") + ", b " +
               (b.k_major ? "[N][K]" : "[K][N]") +
               " in shared memory" + (operands.a_from_ring || operands.b_from_ring ? " (pipelined)" : ""));
  bool staged = stage_operands(ctx, id, operands, true);
  Accumulator acc = start_accumulator(ctx, id);
  ctx.thread_ids();
  bool in_flight = ctx.in_flight_dot && ctx.in_flight_dot->dot == id;
  if (in_flight && ctx.in_flight_dot->late) {
    // Issued behind the next iteration's first dot (or after the loop): here
    // the previous iteration's group retires, then this one's A fragments
    // are packed where that issue reads them.
    TEGULA_ASSERT(acc.in_place && !acc.narrow, "an in-flight wgmma must accumulate in place");
    if (!ctx.in_flight_dot->retired) tma_ring_retire(ctx);
    if (a_regs) pack_fragments(ctx, id, g, ctx.in_flight_dot->fragments);
    ctx.out.line("// the group is issued after the next iteration's first dot, or after the loop");
    return;
  }
  ctx.out.open("");
  std::string fa = a_regs ? ctx.fresh("fa") : "";
  issue_group(ctx, id, operands, g, acc.array, fa, true);
  if (in_flight) {
    // The accumulator is read only after the loop (pipeline_after_loop waits)
    // or, with a covering dot, after that dot's wait in the next iteration.
    TEGULA_ASSERT(acc.in_place && !acc.narrow, "an in-flight wgmma must accumulate in place");
    if (ctx.in_flight_dot->cover.valid())
      ctx.out.line("// in flight until " + ctx.name(ctx.fn.op(ctx.in_flight_dot->cover).results[0]) +
                   " of the next iteration waits for every group");
    else
      ctx.out.line("tg_wgmma_wait<1>();  // the previous iteration's group is done: its stage may be refilled");
    ctx.out.close();
    pipeline_refill(ctx);
    return;
  }
  bool late_cover = ctx.in_flight_dot && ctx.in_flight_dot->cover == id && ctx.in_flight_dot->late;
  if (late_cover) {
    // The last dot's group of the previous iteration goes behind this one
    // (an empty group in the first iteration), and runs on while the body
    // computes with this one's result.
    tma_ring_issue_late(ctx, true);
    ctx.out.line("tg_wgmma_wait<1>();  // this dot's group; the last dot's stays in flight");
  } else {
    ctx.out.line("tg_wgmma_wait<0>();");
  }
  std::string r = ctx.open_unrolled(acc.registers);
  ctx.out.line("tg_pin(" + acc.array + "[" + r + "]);  // no read of it moves above the wait");
  ctx.out.close();
  if (late_cover) tma_ring_first_dot_retired(ctx);
  if (ctx.in_flight_dot && ctx.in_flight_dot->cover == id && !late_cover) {
    // The previous iteration's in-flight group is done too: pin its
    // accumulator (the carried value) so no read of it moves above the wait.
    ir::OpId flying = ctx.in_flight_dot->dot;
    ir::ValueId carried = carried_accumulator(ctx, flying);
    ir::ValueId result = ctx.fn.op(flying).results[0];
    std::string c = ctx.open_unrolled(ctx.distribution(ctx.layout(result), ctx.fn.type(result).shape).registers());
    ctx.out.line("tg_pin(" + ctx.name(carried) + "[" + c + "]);  // the previous iteration's in-flight group");
    ctx.out.close();
  }
  ctx.out.close();
  if (staged) ctx.shared_reads_done();  // as in emit_dot_mma: only the scratch it staged into
  finish_accumulator(ctx, id, acc);
}

}  // namespace tegula::backends::cuda
