// dot on tensor cores with mma.sync (sm_80 and newer): out = a @ b + acc,
// the result in the MMA accumulator layout (layout.h, layout_mma.cpp).
//
// 1. Both operands are in shared memory as swizzled tiles (shared_tile.h):
//    put there ahead by a pipelined loop (codegen_pipeline.cpp), or staged
//    here from registers. A staged tile's rows run along K ("k-major": A as
//    [M][K], B as [N][K]) unless the operand's registers run along M or N;
//    then its rows are K ([K][M], [K][N]), so that each thread stores whole
//    groups of consecutive registers either way.
// 2. Per K step (16 for f16/bf16, 8 for tf32, 32 for s8: always 32 bytes of
//    K, two chunks), each warp loads the A fragments of its 16-row tiles and
//    the B fragments of its 8-column tiles with ldmatrix.x4 (.trans for
//    16-bit tiles whose rows are K; 32-bit shared loads for the other tiles
//    whose rows are K) and issues one mma per (row tile, column tile) pair.
//
// Accumulation is in f32 (s32 for int8, saturating) whatever the result
// type, an f16/bf16 result rounded once at the end; except f16 operands
// into an f16 result, which accumulate in f16 as Triton's do. tf32 operands
// are rounded to nearest (cvt.rna) before the mma, which would otherwise
// truncate them. f32 operands at precision tf32x3 are split into two tf32
// each (hi + lo) and multiplied three times (lo hi, hi lo, hi hi: all but
// the smallest term of the product); at bf16x3 / bf16x6 into two / three
// bf16 and multiplied 3 / 6 times with m16n8k16 bf16. The bf16 forms load
// their fragments with the tf32 loaders, two K steps of 8 at a time: word t
// of the two K chunks of a tf32 step are the two halves of one bf16
// fragment word, a permutation of K that a and b share, so the sum is the
// same.
// A warpgroup (Hopper) layout runs as wgmma instead when its operands fit
// wgmma's descriptors (codegen_wgmma.cpp).
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "backends/c_family/tile_index.h"
#include "backends/cuda/codegen_mma.h"
#include "support/diagnostic.h"

namespace tegula::backends::cuda {

using ir::Scalar;

namespace {

std::string str(int64_t v) { return std::to_string(v); }

// The dim along which a thread's registers hold the longest runs of
// consecutive elements (ties: the dim neighbouring lanes walk, else K).
int contiguous_dim(const Distribution& d, const std::vector<int64_t>& shape, int k_dim) {
  int along_k = contiguous_registers(d, shape, k_dim), across = contiguous_registers(d, shape, 1 - k_dim);
  if (along_k != across) return along_k > across ? k_dim : 1 - k_dim;
  if (!d.lane_bits.empty() && d.lane_bits[0] >= 0) {
    CoordinateBit c = coordinate_bit(shape, d.lane_bits[0]);
    if (c.bit == 0) return c.dim;
  }
  return k_dim;
}

}  // namespace

namespace {

// The registers operand `index` of dot `id` is staged from and their
// distribution over the operand: its own, or the source's of a transpose
// the dot stages (transpose_staged_by_dot).
std::pair<std::string, Distribution> operand_registers(const CudaContext& ctx, ir::OpId id, size_t index) {
  ir::ValueId v = ctx.fn.op(id).operands[index];
  if (ir::OpId def = ctx.fn.value(v).def; def.valid() && transpose_staged_by_dot(ctx, def))
    return {ctx.name(ctx.fn.op(def).operands[0]), transposed_distribution(ctx, def)};
  return {ctx.operand(id, index), ctx.distribution(ctx.operand_layout(id, index), ctx.fn.type(v).shape)};
}

}  // namespace

bool transpose_staged_by_dot(const CudaContext& ctx, ir::OpId trans) {
  const ir::Function& fn = ctx.fn;
  const ir::Op& op = fn.op(trans);
  if (op.kind != ir::OpKind::Trans || !fn.type(op.results[0]).is_tile() || fn.type(op.results[0]).rank() != 2)
    return false;
  // The dot right after it (constants between, the dot's zero accumulator),
  // so nothing between rewrites the source's registers (a dot accumulating
  // in place) before the staging reads them.
  const std::vector<ir::OpId>& ops = fn.block(op.parent).ops;
  auto at = std::find(ops.begin(), ops.end(), trans);
  if (at == ops.end()) return false;
  auto next = std::find_if(at + 1, ops.end(), [&](ir::OpId id) {
    const ir::Op& o = fn.op(id);
    return !o.erased && o.kind != ir::OpKind::Constant && o.kind != ir::OpKind::Splat;
  });
  if (next == ops.end()) return false;
  const ir::Op& dot = fn.op(*next);
  ir::ValueId result = op.results[0];
  if (dot.kind != ir::OpKind::Dot || !ctx.layout(dot.results[0]).mma ||
      (dot.operands[0] != result && dot.operands[1] != result))
    return false;
  int uses = 0;
  fn.walk([&](ir::OpId u) {
    for (ir::ValueId v : fn.op(u).operands) uses += v == result;
  });
  return uses == 1;
}

SharedTile plan_operand(const CudaContext& ctx, ir::OpId id, size_t index, int64_t offset) {
  const ir::Type& t = ctx.fn.type(ctx.fn.op(id).operands[index]);
  SharedTile s;
  s.k_dim = index == 0 ? 1 : 0;
  s.element_bytes = static_cast<int>(element_bytes(t));
  s.c_type = c_element(t);
  Distribution d = operand_registers(ctx, id, index).second;
  s.k_major = contiguous_dim(d, t.shape, s.k_dim) == s.k_dim;
  s.rows = t.shape[static_cast<size_t>(s.row_dim())];
  s.row_elements = t.shape[static_cast<size_t>(s.col_dim())];
  s.offset = std::to_string(offset);
  return s;
}

// Each owner thread writes its elements of the operand into the swizzled
// tile, in groups of consecutive registers that stay inside one chunk.
void stage_operand(CudaContext& ctx, ir::OpId id, size_t index, const SharedTile& s) {
  auto [registers, d] = operand_registers(ctx, id, index);
  stage_registers(ctx, registers, d, ctx.fn.type(ctx.fn.op(id).operands[index]).shape, s);
}

void stage_registers(CudaContext& ctx, const std::string& src, const Distribution& d, const std::vector<int64_t>& shape,
                     const SharedTile& s) {
  int vector = std::min<int>(contiguous_registers(d, shape, s.col_dim()), 16 / s.element_bytes);
  std::string own = ctx.owner(d);
  if (!own.empty()) ctx.out.open("if (" + own + ")");
  std::string i = ctx.open_unrolled(d.registers(), vector);
  std::string e = ctx.fresh("e");
  ctx.out.line("const int " + e + " = " + ctx.element_index(d, i) + ";");
  std::string dim0 = e + " >> " + str(c_family::log2_ceil(shape[1])), dim1 = e + " & " + str(shape[1] - 1);
  std::string row = s.row_dim() == 0 ? dim0 : dim1, col = s.col_dim() == 0 ? dim0 : dim1;
  std::string vec = "tg_vec<" + s.c_type + ", " + str(vector) + ">";
  std::string w = ctx.fresh("w");
  ctx.out.line(vec + " " + w + ";");
  for (int j = 0; j < vector; ++j)
    ctx.out.line(w + ".v[" + str(j) + "] = " + src + "[" + i + (j ? " + " + str(j) : "") + "];");
  ctx.out.line("*reinterpret_cast<" + vec + "*>(tg_smem + " + s.element_at("(" + row + ")", col) + ") = " + w + ";");
  ctx.out.close();
  if (!own.empty()) ctx.out.close();
}

namespace {

// What one warp computes: `row_tiles` tiles of 16 rows (rows wr + mr * 16 *
// warps_m) by `col_tiles` tiles of 8 columns: warp_n / 8 adjacent ones from
// column wc, repeated every warp_n * warps_n columns.
struct WarpTiles {
  MmaLayout mma;
  int64_t m = 0, n = 0;
  int64_t row_tiles = 1, col_tiles = 2, k_steps = 1;
  std::string mma_fn;    // tg_mma_bf16, ...
  bool tf32 = false;
};

std::string row_of_tile(const WarpTiles& w, const std::string& mr) {
  return "(wr + " + mr + " * " + str(16 * w.mma.warps_m) + ")";
}
std::string col_of_tile(const WarpTiles& w, const std::string& nt) {
  int chunks = w.mma.warp_n / 8;
  if (chunks == 1) return "(wc + " + nt + " * " + str(8 * w.mma.warps_n) + ")";
  return "(wc + " + nt + " / " + str(chunks) + " * " + str(w.mma.warp_n * w.mma.warps_n) + " + " + nt + " % " +
         str(chunks) + " * 8)";
}

// Fragment word `dest` of a tile whose rows are K and not 16-bit: the word
// lane % 4 of the 16-byte K chunk `k_half` of K step `ks`, at M/N index `mn`
// (its rows already include lane / 4).
void load_word_from_k_rows(CudaContext& ctx, const SharedTile& s, const std::string& dest, const std::string& mn,
                           const std::string& ks, int k_half) {
  if (s.element_bytes == 4) {
    std::string k = "8 * " + ks + " + " + str(4 * k_half) + " + (lane & 3)";
    ctx.out.line(dest + " = tg_lds32(sm + " + s.element_at(k, mn) + ");");
    return;
  }
  TEGULA_ASSERT(s.element_bytes == 1, "16-bit tiles use ldmatrix.trans");
  std::string word;
  for (int j = 0; j < 4; ++j) {
    std::string k = "32 * " + ks + " + " + str(16 * k_half + j) + " + 4 * (lane & 3)";
    word += (j ? " | " : "") + std::string("(tg_lds8(sm + ") + s.element_at(k, mn) + ") << " + str(8 * j) + ")";
  }
  ctx.out.line(dest + " = " + word + ";");
}

// fa[mr][0..3]: rows +8 in words 1 and 3, K chunk +1 in words 2 and 3.
void load_a(CudaContext& ctx, const SharedTile& s, const WarpTiles& w, const std::string& ks,
            const std::string& fa = "fa") {
  std::string mr = ctx.open_unrolled(static_cast<int>(w.row_tiles));
  std::string m0 = row_of_tile(w, mr);
  std::string regs = fa + "[" + mr + "][0], " + fa + "[" + mr + "][1], " + fa + "[" + mr + "][2], " + fa + "[" + mr + "][3]";
  if (s.k_major) {  // lane group g = lane / 8 gives matrix g: rows + 8 * (g & 1), chunk + (g >> 1)
    ctx.out.line("tg_ldmatrix_x4(" + regs + ", sm + " + s.chunk_at(m0 + " + (lane & 15)", "2 * " + ks + " + (lane >> 4)") +
                 ");");
  } else if (s.element_bytes == 2) {  // rows are K: matrix g at K + 8 * (g >> 1), M chunk + (g & 1)
    ctx.out.line("tg_ldmatrix_x4_trans(" + regs + ", sm + " +
                 s.chunk_at("16 * " + ks + " + ((lane >> 4) << 3) + (lane & 7)", m0 + " / 8 + ((lane >> 3) & 1)") + ");");
  } else {
    for (int r = 0; r < 4; ++r)
      load_word_from_k_rows(ctx, s, fa + "[" + mr + "][" + str(r) + "]",
                            m0 + " + " + str(8 * (r & 1)) + " + (lane >> 2)", ks, r >> 1);
  }
  if (w.tf32)
    for (int r = 0; r < 4; ++r) ctx.out.line(fa + "[" + mr + "][" + str(r) + "] = tg_to_tf32(" + fa + "[" + mr + "][" + str(r) + "]);");
  ctx.out.close();
}

// fb[nt][0..1]: K chunk +1 in word 1. ldmatrix.x4 loads two column tiles.
void load_b(CudaContext& ctx, const SharedTile& s, const WarpTiles& w, const std::string& ks,
            const std::string& fb = "fb") {
  bool pairs = s.k_major || s.element_bytes == 2;
  std::string nt = ctx.open_unrolled(static_cast<int>(w.col_tiles), pairs ? 2 : 1);
  std::string regs = fb + "[" + nt + "][0], " + fb + "[" + nt + "][1], " + fb + "[" + nt + " + 1][0], " + fb + "[" + nt + " + 1][1]";
  // Lane group g = lane / 8 gives matrix g: column tile + (g >> 1), K chunk + (g & 1).
  std::string n_of_group = col_of_tile(w, "(" + nt + " + (lane >> 4))");
  if (s.k_major) {
    ctx.out.line("tg_ldmatrix_x4(" + regs + ", sm + " +
                 s.chunk_at(n_of_group + " + (lane & 7)", "2 * " + ks + " + ((lane >> 3) & 1)") + ");");
  } else if (s.element_bytes == 2) {
    ctx.out.line("tg_ldmatrix_x4_trans(" + regs + ", sm + " +
                 s.chunk_at("16 * " + ks + " + (((lane >> 3) & 1) << 3) + (lane & 7)", n_of_group + " / 8") + ");");
  } else {
    for (int r = 0; r < 2; ++r)
      load_word_from_k_rows(ctx, s, fb + "[" + nt + "][" + str(r) + "]", col_of_tile(w, nt) + " + (lane >> 2)", ks, r);
  }
  if (w.tf32) {
    std::vector<std::string> tiles = {nt};
    if (pairs) tiles.push_back(nt + " + 1");
    for (const std::string& t : tiles)
      for (int r = 0; r < 2; ++r) {
        std::string reg = fb + "[" + t + "][" + str(r) + "]";
        ctx.out.line(reg + " = tg_to_tf32(" + reg + ");");
      }
  }
  ctx.out.close();
}

// The accumulator registers of tile (mr, nt) are 4 * (nt + col_tiles * mr) + c:
// checks that the layout's distribution says so.
void check_accumulator_order(const Distribution& d, const WarpTiles& w) {
  for (int64_t mr = 0; mr < w.row_tiles; ++mr)
    for (int64_t nt = 0; nt < w.col_tiles; ++nt)
      for (int c = 0; c < 4; ++c) {
        int64_t chunks = w.mma.warp_n / 8;
        int64_t row = mr * 16 * w.mma.warps_m + 8 * (c >> 1);
        int64_t col = nt / chunks * w.mma.warp_n * w.mma.warps_n + nt % chunks * 8 + (c & 1);
        int reg = static_cast<int>(4 * (nt + w.col_tiles * mr) + c);
        TEGULA_ASSERT(reg < d.registers() && d.register_offset(reg) == row * w.n + col,
                      "MMA accumulator registers out of fragment order");
      }
}

}  // namespace

void emit_dot_mma(CudaContext& ctx, ir::OpId id) {
  const ir::Op& op = ctx.fn.op(id);
  ir::ValueId result = op.results[0];
  const ir::Type& tr = ctx.fn.type(result);
  const ir::Type& ta = ctx.fn.type(op.operands[0]);
  const Layout& layout = ctx.layout(result);
  TEGULA_ASSERT(layout.mma && tr.rank() == 2, "emit_dot_mma needs an MMA result layout");

  WarpTiles w;
  w.mma = *layout.mma;
  w.m = tr.shape[0];
  w.n = tr.shape[1];
  int64_t k = ta.shape[1];
  DotPrecision precision = dot_precision(ctx.fn, op);
  // bf16 splits load two tf32 steps of 8 per K step of 16 (see the top).
  bool bf16_split = precision == DotPrecision::Bf16x3 || precision == DotPrecision::Bf16x6;
  int64_t k_step = ta.scalar == Scalar::F32 ? (bf16_split ? 16 : 8) : ta.scalar == Scalar::I8 ? 32 : 16;
  w.k_steps = k / k_step;
  w.row_tiles = std::max<int64_t>(1, w.m / (16 * w.mma.warps_m));
  w.col_tiles = w.n / (8 * w.mma.warps_n);
  w.tf32 = precision == DotPrecision::Tf32;
  w.mma_fn = ta.scalar == Scalar::F16 ? (accumulates_in_f16(ctx.fn, op) ? "tg_mma_f16_f16" : "tg_mma_f16")
           : ta.scalar == Scalar::BF16 || bf16_split ? "tg_mma_bf16"
           : ta.scalar == Scalar::F32                ? "tg_mma_tf32" : "tg_mma_s8";
  TEGULA_ASSERT(w.col_tiles >= 2 && w.col_tiles % 2 == 0 && k % k_step == 0, "dot shape unfit for mma");
  Distribution d = ctx.distribution(layout, tr.shape);
  check_accumulator_order(d, w);

  DotOperands operands = plan_operands(ctx, id);
  if (layout.mma->warpgroup && wgmma_fits(ctx, id, operands)) return emit_dot_wgmma(ctx, id, operands);
  const SharedTile& a = operands.a;
  const SharedTile& b = operands.b;
  static const char* const kSplit[] = {"", "", "", " (tf32x3)", " (bf16x3)", " (bf16x6)"};
  ctx.out.line("// tensor cores: " + w.mma_fn.substr(7) + " mma" + kSplit[static_cast<int>(precision)] + ", warps " +
               str(w.mma.warps_m) + "x" + str(w.mma.warps_n) + ", a " +
               (operands.a_in_registers ? "in registers" : a.k_major ? "[M][K]" : "[K][M]") + ", b " +
               (b.k_major ? "[N][K]" : "[K][N]") + " in shared memory" +
               (operands.a_from_ring || operands.b_from_ring ? " (pipelined)" : ""));
  bool staged = stage_operands(ctx, id, operands, false);
  Accumulator acc = start_accumulator(ctx, id);

  ctx.thread_ids();
  ctx.out.open("");
  ctx.out.line("const unsigned sm = tg_shared_address(tg_smem);");
  int warp_m_bits = c_family::log2_ceil(w.mma.warps_m);
  ctx.out.line("const int wr = ((warp & " + str(w.mma.warps_m - 1) + ") << 4) & " + str(w.m - 1) + ";");
  ctx.out.line("const int wc = ((warp >> " + str(warp_m_bits) + ") & " + str(w.mma.warps_n - 1) + ") * " +
               str(w.mma.warp_n) + ";");
  std::string ks = ctx.open_unrolled(static_cast<int>(w.k_steps));
  std::string fa_dims = "[" + str(w.row_tiles) + "][4]", fb_dims = "[" + str(w.col_tiles) + "][2]";
  ctx.out.line("unsigned fa" + fa_dims + ", fb" + fb_dims + ";");
  if (operands.a_in_registers) {
    std::string mr = ctx.open_unrolled(static_cast<int>(w.row_tiles));
    for (int word = 0; word < 4; ++word)
      ctx.out.line("fa[" + mr + "][" + str(word) + "] = " + a_fragment_word(ctx, id, mr, ks, word) + ";");
    ctx.out.close();
  } else if (bf16_split) {
    ctx.out.line("unsigned fa2" + fa_dims + ", fb2" + fb_dims + ";");
    load_a(ctx, a, w, "(2 * " + ks + ")");
    load_a(ctx, a, w, "(2 * " + ks + " + 1)", "fa2");
  } else {
    load_a(ctx, a, w, ks);
  }
  if (bf16_split) {
    load_b(ctx, b, w, "(2 * " + ks + ")");
    load_b(ctx, b, w, "(2 * " + ks + " + 1)", "fb2");
  } else {
    load_b(ctx, b, w, ks);
  }
  // The products, smallest terms first: (a part, b part) pairs.
  std::vector<std::pair<std::string, std::string>> products = {{"fa", "fb"}};
  if (precision == DotPrecision::Tf32x3) {
    ctx.out.line("unsigned fa_lo" + fa_dims + ", fb_lo" + fb_dims + ";");
    for (const char* f : {"fa", "fb"}) {
      std::string t = ctx.open_unrolled(static_cast<int>(f[1] == 'a' ? w.row_tiles : w.col_tiles));
      for (int r = 0; r < (f[1] == 'a' ? 4 : 2); ++r) {
        std::string reg = "[" + t + "][" + str(r) + "]";
        ctx.out.line("tg_split_tf32(" + std::string(f) + reg + ", " + f + reg + ", " + f + "_lo" + reg + ");");
      }
      ctx.out.close();
    }
    products = {{"fa_lo", "fb"}, {"fa", "fb_lo"}, {"fa", "fb"}};
  } else if (bf16_split) {
    int parts = precision == DotPrecision::Bf16x3 ? 2 : 3;
    ctx.out.line("unsigned pa[" + str(parts) + "]" + fa_dims + ", pb[" + str(parts) + "]" + fb_dims + ";");
    std::string split_a = "tg_split_bf16x2<" + str(parts) + ", " + str(4 * w.row_tiles) + ">";
    std::string mr = ctx.open_unrolled(static_cast<int>(w.row_tiles));
    for (int word = 0; word < 4; ++word) {  // rows +8 in odd words, K +8 (the second tf32 step) in words 2, 3
      std::string from = word < 2 ? "fa" : "fa2", at = from + "[" + mr + "][" + str(word & 1);
      ctx.out.line(split_a + "(" + at + "], " + at + " + 2], &pa[0][" + mr + "][" + str(word) + "]);");
    }
    ctx.out.close();
    std::string split_b = "tg_split_bf16x2<" + str(parts) + ", " + str(2 * w.col_tiles) + ">";
    std::string nt = ctx.open_unrolled(static_cast<int>(w.col_tiles));
    for (int word = 0; word < 2; ++word) {
      std::string from = (word ? "fb2[" : "fb[") + nt + "]";
      ctx.out.line(split_b + "(" + from + "[0], " + from + "[1], &pb[0][" + nt + "][" + str(word) + "]);");
    }
    ctx.out.close();
    products.clear();
    for (int order = parts - 1; order >= 0; --order)
      for (int i = 0; i <= order; ++i)
        products.push_back({"pa[" + str(i) + "]", "pb[" + str(order - i) + "]"});
  }
  std::string mr = ctx.open_unrolled(static_cast<int>(w.row_tiles));
  std::string nt = ctx.open_unrolled(static_cast<int>(w.col_tiles));
  for (const auto& [fa, fb] : products)
    ctx.out.line(w.mma_fn + "(" + acc.array + " + 4 * (" + nt + " + " + str(w.col_tiles) + " * " + mr + "), " + fa +
                 "[" + mr + "], " + fb + "[" + nt + "]);");
  ctx.out.close();
  ctx.out.close();
  ctx.out.close();  // k steps
  ctx.out.close();
  // Only the scratch this dot staged into: a dot reading pipeline stages
  // alone must not narrow what earlier ops left pending (a TMA store's or
  // reduction's block, still read by the copy engine until its thread's
  // wait) to whatever scratch was handed out last.
  if (staged) ctx.shared_reads_done();
  finish_accumulator(ctx, id, acc);
}

// --- what the mma.sync and wgmma emitters share ---------------------------------------------------

DotOperands plan_operands(const CudaContext& ctx, ir::OpId id) {
  const ir::Op& op = ctx.fn.op(id);
  DotOperands d;
  auto ring = [&](size_t k) -> const SharedTile* {
    auto it = ctx.ring_tiles.find(op.operands[k].index);
    return it == ctx.ring_tiles.end() ? nullptr : &it->second;
  };
  int64_t base = ctx.shared_reserved(), next = 0;
  if (std::optional<Layout> fragments = a_fragment_layout(ctx, id); fragments && !ring(0)) {
    const ir::Type& a = ctx.fn.type(op.operands[0]);
    d.a_in_registers = distribute(*fragments, a.shape) == distribute(ctx.operand_layout(id, 0), a.shape);
  }
  for (size_t k = 0; k < 2; ++k) {
    SharedTile& tile = k == 0 ? d.a : d.b;
    if (k == 0 && d.a_in_registers) {
      tile = plan_operand(ctx, id, 0, base);  // describes a; nothing is stored
      continue;
    }
    if (const SharedTile* r = ring(k)) {
      tile = r->as_operand(k);  // a tile staged for one dot may be the other operand of this one
      (k == 0 ? d.a_from_ring : d.b_from_ring) = true;
      continue;
    }
    tile = plan_operand(ctx, id, k, base + next);
    next = next_line(next + tile.bytes());
  }
  d.scratch_bytes = next;
  return d;
}

bool stage_operands(CudaContext& ctx, ir::OpId id, const DotOperands& operands, bool async_proxy) {
  bool a_staged = !operands.a_from_ring && !operands.a_in_registers;
  if (!a_staged && operands.b_from_ring) return false;
  ctx.shared_scratch(operands.scratch_bytes);
  if (a_staged) stage_operand(ctx, id, 0, operands.a);
  if (!operands.b_from_ring) stage_operand(ctx, id, 1, operands.b);
  if (async_proxy) ctx.out.line("tg_fence_proxy_async();  // the stores, visible to wgmma");
  ctx.barrier();
  return true;
}

std::optional<Layout> a_fragment_layout(const CudaContext& ctx, ir::OpId id) {
  const ir::Op& op = ctx.fn.op(id);
  const Layout& result = ctx.layout(op.results[0]);
  const ir::Type& a = ctx.fn.type(op.operands[0]);
  if (!result.mma || (a.scalar != Scalar::F16 && a.scalar != Scalar::BF16) || a.rank() != 2) return std::nullopt;
  if (ir::OpId def = ctx.fn.value(op.operands[0]).def; def.valid() && transpose_staged_by_dot(ctx, def))
    return std::nullopt;  // staged: its registers are the source's
  MmaLayout fragments = *result.mma;
  fragments.warp_n = static_cast<int>(a.shape[1]);
  return Layout{{}, {}, fragments};
}

std::string a_fragment_word(const CudaContext& ctx, ir::OpId id, const std::string& mr, const std::string& ks,
                            int word) {
  int64_t k = ctx.fn.type(ctx.fn.op(id).operands[0]).shape[1];
  std::string src = ctx.operand(id, 0);
  std::string low = str(k / 2) + " * " + mr + " + 8 * " + ks + " + " + str(2 * word);
  return "((unsigned)" + src + "[" + low + "] | ((unsigned)" + src + "[" + low + " + 1] << 16))";
}

namespace {

int use_count(const ir::Function& fn, ir::ValueId v) {
  int uses = 0;
  fn.walk([&](ir::OpId u) {
    for (ir::ValueId operand : fn.op(u).operands) uses += operand == v;
  });
  return uses;
}

bool same_distribution(const CudaContext& ctx, ir::ValueId a, ir::ValueId b) {
  return distribute(ctx.layout(a), ctx.fn.type(a).shape) == distribute(ctx.layout(b), ctx.fn.type(b).shape);
}

// A `for` body argument (not the induction variable) of block `block`.
bool is_carried(const CudaContext& ctx, ir::ValueId v, ir::BlockId block) {
  const ir::Value& value = ctx.fn.value(v);
  if (value.def.valid() || !value.block.valid() || value.block != block || value.position == 0) return false;
  const ir::Block& body = ctx.fn.block(block);
  return body.parent.valid() && ctx.fn.op(body.parent).kind == ir::OpKind::For;
}

}  // namespace

ir::ValueId carried_accumulator(const CudaContext& ctx, ir::OpId id) {
  const ir::Op& op = ctx.fn.op(id);
  ir::ValueId acc = op.operands[2], result = op.results[0];
  ir::ValueId carried;
  if (is_carried(ctx, acc, op.parent)) {
    carried = acc;
  } else if (ir::OpId def = ctx.fn.value(acc).def; def.valid()) {
    // acc = f(carried, ...) elementwise (attention's acc * alpha), its only use this dot.
    const ir::Op& scale = ctx.fn.op(def);
    if (scale.parent != op.parent || !ir::is_elementwise(scale.kind) || use_count(ctx.fn, acc) != 1 ||
        ctx.fn.type(acc) != ctx.fn.type(result) || !same_distribution(ctx, acc, result))
      return {};
    for (ir::ValueId u : scale.operands) {
      if (!is_carried(ctx, u, op.parent)) continue;
      if (carried.valid()) return {};  // the carried value twice
      carried = u;
    }
    if (!carried.valid() || ctx.fn.type(carried) != ctx.fn.type(acc)) return {};
  }
  if (!carried.valid()) return {};
  const ir::Block& body = ctx.fn.block(op.parent);
  const ir::Op& yield = ctx.fn.op(body.ops.back());
  size_t position = ctx.fn.value(carried).position;
  if (position - 1 >= yield.operands.size() || yield.operands[position - 1] != result) return {};
  // Nothing else reads the carried value, so the dot may overwrite it.
  if (use_count(ctx.fn, carried) != 1 || !same_distribution(ctx, carried, result)) return {};
  return carried;
}

ir::ValueId accumulator_storage(const CudaContext& ctx, ir::OpId elementwise) {
  const ir::Op& scale = ctx.fn.op(elementwise);
  if (scale.results.size() != 1 || !scale.parent.valid()) return {};
  ir::ValueId value = scale.results[0];
  const ir::Type& t = ctx.fn.type(value);
  if (!t.is_tile() || t.rank() != 2 || !ir::is_float(t.scalar)) return {};  // not a tensor-core accumulator
  for (ir::OpId id : ctx.fn.block(scale.parent).ops) {
    const ir::Op& dot = ctx.fn.op(id);
    if (dot.erased || dot.kind != ir::OpKind::Dot || dot.operands[2] != value) continue;
    if (!ctx.layout(dot.results[0]).mma) return {};
    ir::ValueId carried = carried_accumulator(ctx, id);
    return carried.valid() && carried != value && accumulates_in_place(ctx, id) ? carried : ir::ValueId{};
  }
  return {};
}

namespace {

// Whether dot `id` may accumulate in its acc operand's registers: acc is a
// `for` body argument of the dot's own block (or an elementwise op of one,
// computed back into its registers), used by nothing else, and the body
// yields the dot's result back into it.
bool in_place(const CudaContext& ctx, ir::OpId id) { return carried_accumulator(ctx, id).valid(); }

}  // namespace

bool accumulates_in_place(const CudaContext& ctx, ir::OpId id) {
  return !is_half(ctx.fn.type(ctx.fn.op(id).results[0]).scalar) && in_place(ctx, id);
}

Accumulator start_accumulator(CudaContext& ctx, ir::OpId id) {
  const ir::Op& op = ctx.fn.op(id);
  ir::ValueId result = op.results[0];
  const ir::Type& tr = ctx.fn.type(result);
  Accumulator acc;
  acc.registers = ctx.distribution(ctx.layout(result), tr.shape).registers();
  acc.narrow = is_half(tr.scalar) && !accumulates_in_f16(ctx.fn, op);
  if (accumulates_in_place(ctx, id)) {
    acc.in_place = true;
    ctx.alias(result, op.operands[2]);
    acc.array = ctx.name(result);
    ctx.out.line("// " + acc.array + " accumulates in place");
    return acc;
  }
  ctx.declare_tile(ctx.name(result), tr, ctx.layout(result));
  acc.array = ctx.name(result);
  if (acc.narrow) {
    acc.array = ctx.fresh("acc");
    ctx.out.line("float " + acc.array + "[" + str(acc.registers) + "];");
  }
  std::string i = ctx.open_unrolled(acc.registers);
  std::string init = ctx.operand(id, 2) + "[" + i + "]";
  ctx.out.line(acc.array + "[" + i + "] = " + (acc.narrow ? to_compute(tr.scalar, init) : init) + ";");
  ctx.out.close();
  return acc;
}

void finish_accumulator(CudaContext& ctx, ir::OpId id, const Accumulator& acc) {
  if (!acc.narrow) return;
  ir::ValueId result = ctx.fn.op(id).results[0];
  std::string i = ctx.open_unrolled(acc.registers);
  ctx.out.line(ctx.name(result) + "[" + i + "] = " + from_compute(ctx.fn.type(result).scalar, acc.array + "[" + i + "]") +
               ";");
  ctx.out.close();
}

}  // namespace tegula::backends::cuda
