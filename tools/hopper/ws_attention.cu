// A hand-written Hopper (sm_90a) flash-attention forward in the shape
// Tegula's CUDA backend should learn to emit for attention: Q, K, V
// [B, H, S, D] bf16 or fp16 (contiguous), O = softmax(Q K^T / sqrt(D)) V in
// the same type and layout, and the log-sum-exp of every row (natural log,
// fp32, [B, H, S]) as the training backward needs it; causal or not.
// tools/hopper/NOTES.md ("Attention") gives the design; bench_attention.py
// builds, checks and times it.
//
// Structure (one CTA of 384 threads per SM; a persistent grid or one CTA per
// tile, the same code):
//   warpgroup 0   producer: one thread issues the TMA copies of a tile's Q
//                 block (128 rows) once and of its K and V blocks (BN rows)
//                 through two rings of TG_STAGES buffers; registers lowered
//                 with setmaxnreg.dec.
//   warpgroups 1, 2   consumers: each owns 64 of the tile's 128 query rows
//                 and walks every K/V block of the tile: S = Q K^T (wgmma,
//                 both operands in shared memory), online softmax in base 2
//                 with the scale folded into one FFMA, P rounded to 16 bits
//                 in registers, O += P V (wgmma with A from registers).
// Barriers (mbarriers): q_full/q_empty (one Q buffer, a phase per tile),
// k_full[s]/k_empty[s] and v_full[s]/v_empty[s]. Full: the producer's
// arrive.expect_tx plus the copies' bytes; empty: one arrive per consumer
// warp that read the buffer (8). Both sides count the K blocks and the V
// blocks they have passed: block i of a ring uses buffer i % S in round
// i / S, whose phase has parity (i / S) & 1.
//
// Per tile the K/V blocks are visited from the last to the first, so that
// the blocks needing a mask (the causal diagonal, the ragged end of S) come
// first and the rest run unmasked. With TG_OVERLAP (FlashAttention-3's
// intra-warpgroup overlap) iteration j issues S_j = Q K_j^T and
// O += P_{j-1} V_{j-1} together and runs the softmax of S_j while the PV
// product is in flight; without it each GEMM is waited for at once. With
// TG_PINGPONG the two consumers take turns issuing their GEMMs (named
// barriers 1 and 2), so one's softmax runs under the other's tensor work.
//
// Compile-time configuration (nvcc -D...; bench_attention.py lists variants):
//   TG_HEAD_DIM   D: 64 or 128
//   TG_BN         keys per K/V block: 64 or 128 (192 compiles, but ptxas
//                 serializes its wgmmas for want of registers: C7512)
//   TG_STAGES     ring depth of K and of V
//   TG_PINGPONG   0/1: consumers alternate their GEMM issue
//   TG_OVERLAP    0/1: softmax of block j under PV of block j - 1

#ifndef TG_HEAD_DIM
#define TG_HEAD_DIM 128
#endif
#ifndef TG_BN
#define TG_BN 128
#endif
#ifndef TG_STAGES
#define TG_STAGES 2
#endif
#ifndef TG_PINGPONG
#define TG_PINGPONG 1
#endif
#ifndef TG_OVERLAP
#define TG_OVERLAP 1
#endif

#include "hopper_prelude.cuh"

// --- configuration ----------------------------------------------------------------------
struct TgAttnConfig {
  static constexpr int d = TG_HEAD_DIM, bm = 128, bn = TG_BN, stages = TG_STAGES;
  static constexpr bool pingpong = TG_PINGPONG != 0, overlap = TG_OVERLAP != 0;
  static constexpr int consumers = 2, threads = 128 * (consumers + 1);
  static constexpr int boxes = d / 64;  // 64-column (128-byte) boxes per row of Q, K or V
  // Shared memory from a 1024-byte aligned base: Q [128][D], the K ring and
  // the V ring ([BN][D] each), then the barriers. Every block of 64 columns
  // lands on a 1024-byte line (the 128-byte swizzle's period).
  static constexpr int q_bytes = bm * d * 2;
  static constexpr int kv_bytes = bn * d * 2;  // one K or V block: what k_full / v_full expect
  static constexpr int k_ring = q_bytes;
  static constexpr int v_ring = q_bytes + stages * kv_bytes;
  static constexpr int barrier_offset = q_bytes + 2 * stages * kv_bytes;
  static constexpr int barriers = 2 + 4 * stages;  // q_full, q_empty, k_full[], k_empty[], v_full[], v_empty[]
  static constexpr int smem_bytes = 1024 + barrier_offset + 8 * barriers;
  static constexpr int empty_arrivals = 4 * consumers;  // every consumer warp reads every buffer
  // Registers: 168 a thread at launch (65536 / 384, in steps of 8); the
  // producer keeps 24, the consumers take what that frees: 24 * 128 + 240 *
  // 256 = 168 * 384.
  static constexpr int launch_regs = 168, producer_regs = 24, consumer_regs = 240;
};

static_assert(TgAttnConfig::d == 64 || TgAttnConfig::d == 128, "head dim 64 or 128");
static_assert(TgAttnConfig::bn == 64 || TgAttnConfig::bn == 128, "BN: 64 or 128");
static_assert(TgAttnConfig::smem_bytes <= 232448, "more shared memory than sm_90 gives a block (227 KB)");
static_assert(TgAttnConfig::producer_regs * 128 + TgAttnConfig::consumer_regs * 256 <=
                  TgAttnConfig::launch_regs * TgAttnConfig::threads,
              "setmaxnreg.inc would wait for registers the pool never frees");
static_assert(TgAttnConfig::kv_bytes % 1024 == 0 && TgAttnConfig::q_bytes % 1024 == 0, "buffers on 1024-byte lines");

// --- the two GEMMs ----------------------------------------------------------------------
// S (BN/2 registers) = Q K^T for one k16 step: both operands K-major in
// shared memory (imm-trans-a 0, imm-trans-b 0), scale-d from a register.
#define TG_WGMMA_SS_TEXT(SHAPE, TYPE, REGS, DA, DB, SCALE)                                           \
  "{\n.reg .pred p;\nsetp.ne.b32 p, " SCALE ", 0;\n"                                                 \
  "wgmma.mma_async.sync.aligned." SHAPE ".f32." TYPE "." TYPE " " REGS ", " DA ", " DB ", p, 1, 1, 0, 0;\n}\n"
// O (D/2 registers) += P V for one k16 step: A (P) from four registers per
// thread, B (V [keys][D]) MN-major in shared memory (imm-trans-b 1).
#define TG_WGMMA_RS_TEXT(SHAPE, TYPE, REGS, A, DB, SCALE)                                            \
  "{\n.reg .pred p;\nsetp.ne.b32 p, " SCALE ", 0;\n"                                                 \
  "wgmma.mma_async.sync.aligned." SHAPE ".f32." TYPE "." TYPE " " REGS ", " A ", " DB ", p, 1, 1, 1;\n}\n"

#define TG_SS(SHAPE, REGS, ACC, DA, DB, SCALE)                                                     \
  if constexpr (F16)                                                                               \
    asm volatile(TG_WGMMA_SS_TEXT(SHAPE, "f16", REGS, DA, DB, SCALE) : ACC : "l"(a), "l"(b), "r"(scale_d)); \
  else                                                                                             \
    asm volatile(TG_WGMMA_SS_TEXT(SHAPE, "bf16", REGS, DA, DB, SCALE) : ACC : "l"(a), "l"(b), "r"(scale_d));
#define TG_RS(SHAPE, REGS, ACC, A, DB, SCALE)                                                      \
  if constexpr (F16)                                                                               \
    asm volatile(TG_WGMMA_RS_TEXT(SHAPE, "f16", REGS, A, DB, SCALE)                                \
                 : ACC                                                                             \
                 : "r"(p[0]), "r"(p[1]), "r"(p[2]), "r"(p[3]), "l"(b), "r"(scale_d));              \
  else                                                                                             \
    asm volatile(TG_WGMMA_RS_TEXT(SHAPE, "bf16", REGS, A, DB, SCALE)                               \
                 : ACC                                                                             \
                 : "r"(p[0]), "r"(p[1]), "r"(p[2]), "r"(p[3]), "l"(b), "r"(scale_d));

// d[0..N/2) (+)= a * b, m64nNk16, a and b shared-memory descriptors.
template <bool F16, int N>
TG_DEVICE void tg_wgmma_ss(float* d, unsigned long long a, unsigned long long b, int scale_d) {
  if constexpr (N == 64) {
    TG_SS("m64n64k16", TG_REGS_32, TG_ACC_32, "%32", "%33", "%34")
  } else {
    static_assert(N == 128, "m64nNk16: N of 64 or 128");
    TG_SS("m64n128k16", TG_REGS_64, TG_ACC_64, "%64", "%65", "%66")
  }
}
// d[0..N/2) (+)= p * b, m64nNk16, p four A-fragment words, b a descriptor.
template <bool F16, int N>
TG_DEVICE void tg_wgmma_rs(float* d, const unsigned* p, unsigned long long b, int scale_d) {
  if constexpr (N == 64) {
    TG_RS("m64n64k16", TG_REGS_32, TG_ACC_32, "{%32, %33, %34, %35}", "%36", "%37")
  } else {
    static_assert(N == 128, "m64nNk16 with A from registers: N of 64 or 128");
    TG_RS("m64n128k16", TG_REGS_64, TG_ACC_64, "{%64, %65, %66, %67}", "%68", "%69")
  }
}

TG_DEVICE void tg_pin(unsigned& x) { asm volatile("" : "+r"(x)::"memory"); }
TG_DEVICE float tg_ex2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
TG_DEVICE float tg_lg2(float x) {
  float y;
  asm("lg2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

template <bool V>
struct TgBool {
  static constexpr bool value = V;
};

// --- the tile order ---------------------------------------------------------------------
// Tile t: head bh = t / tiles_m, query block within the head in the slow-to-
// fast order: CTAs that run at the same time share a head's K and V in L2,
// and with causal the longest rows of a head (the last query blocks) go
// first.
TG_DEVICE void tg_attn_tile(int t, int tiles_m, bool causal, int& bh, int& m_block) {
  bh = t / tiles_m;
  const int i = t - bh * tiles_m;
  m_block = causal ? tiles_m - 1 - i : i;
}
// K/V blocks a query block reads: every block below S, and with causal only
// those starting at or below the block's last row.
TG_DEVICE int tg_attn_blocks(int m0, int S, bool causal) {
  using C = TgAttnConfig;
  const int end = causal ? (m0 + C::bm < S ? m0 + C::bm : S) : S;
  return (end + C::bn - 1) / C::bn;
}

// --- softmax ------------------------------------------------------------------------------
// Accumulator fragment of a consumer's 64 x N (per warp 16 rows): register
// 4 i + c holds row 16 warp + lane / 4 + 8 (c / 2), column 8 i + 2 (lane % 4)
// + c % 2. Rows "a" (c < 2) and "b" (c >= 2) of this thread.

// Sets to -inf the scores of block n0 outside the attention pattern: keys
// at or past S, and with causal keys after the query. row_a: the thread's
// first row (global index in the head).
template <bool CAUSAL>
TG_DEVICE void tg_attn_mask(float (&s)[TgAttnConfig::bn / 2], int n0, int row_a, int lane, int S) {
#pragma unroll
  for (int i = 0; i < TgAttnConfig::bn / 8; ++i)
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      const int col = n0 + 8 * i + 2 * (lane % 4) + (c & 1);
      const int row = row_a + 8 * (c >> 1);
      if (col >= S || (CAUSAL && col > row)) s[4 * i + c] = -__int_as_float(0x7f800000);
    }
}

// Online softmax of one block of raw scores s: m (running max of the raw
// scores), l (this thread's share of the running sum, relative to m) and the
// factor the O rows must be multiplied by (exp2 of old max - new max, in
// scaled units); s becomes P = exp2(s * scale_log2 - m * scale_log2).
TG_DEVICE void tg_attn_softmax(float (&s)[TgAttnConfig::bn / 2], float (&m)[2], float (&l)[2], float (&corr)[2],
                               float scale_log2) {
  constexpr int n = TgAttnConfig::bn / 2;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    float mx = m[h];
#pragma unroll
    for (int i = 0; i < n / 4; ++i) mx = fmaxf(mx, fmaxf(s[4 * i + 2 * h], s[4 * i + 2 * h + 1]));
    // The row's other columns are in the three other lanes of the quad.
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
    // A row with no visible key yet keeps max -inf: subtract 0 then, so that
    // exp2 gives 0 and not NaN (-inf - -inf).
    const float scaled = mx == -__int_as_float(0x7f800000) ? 0.0f : mx * scale_log2;
    corr[h] = tg_ex2(m[h] * scale_log2 - scaled);
    m[h] = mx;
    float sum = 0.0f;
#pragma unroll
    for (int i = 0; i < n / 4; ++i) {
      s[4 * i + 2 * h] = tg_ex2(fmaf(s[4 * i + 2 * h], scale_log2, -scaled));
      s[4 * i + 2 * h + 1] = tg_ex2(fmaf(s[4 * i + 2 * h + 1], scale_log2, -scaled));
      sum += s[4 * i + 2 * h] + s[4 * i + 2 * h + 1];
    }
    l[h] = l[h] * corr[h] + sum;
  }
}

// P (fp32, accumulator layout) to the A fragments of the PV wgmma: word w
// packs columns 2w, 2w + 1 of the block, which is k16 step w / 4's register
// w % 4 (rows a/b x keys 0-7/8-15, as mma.sync's A).
template <bool F16>
TG_DEVICE void tg_attn_pack(const float (&s)[TgAttnConfig::bn / 2], unsigned (&p)[TgAttnConfig::bn / 4]) {
#pragma unroll
  for (int w = 0; w < TgAttnConfig::bn / 4; ++w) p[w] = tg_pack2<F16>(s[2 * w], s[2 * w + 1]);
}

// --- the kernel -------------------------------------------------------------------------
template <bool F16, bool CAUSAL>
TG_DEVICE void tg_attn_fwd(const TgTensorMap& map_q, const TgTensorMap& map_k, const TgTensorMap& map_v,
                           unsigned short* out, float* lse, int S, int BH) {
  using C = TgAttnConfig;
  extern __shared__ __align__(1024) unsigned char tg_smem[];
  const unsigned base = (tg_shared_address(tg_smem) + 1023u) & ~1023u;
  const unsigned q_smem = base, k_ring = base + C::k_ring, v_ring = base + C::v_ring;
  const unsigned q_full = base + C::barrier_offset, q_empty = q_full + 8;
  const unsigned k_full = q_full + 16, k_empty = k_full + 8 * C::stages;  // [s] at + 8 s
  const unsigned v_full = k_empty + 8 * C::stages, v_empty = v_full + 8 * C::stages;

  const int tiles_m = (S + C::bm - 1) / C::bm;
  const int tiles = tiles_m * BH;

  if (threadIdx.x == 0) {
    tg_mbar_init(q_full, 1);
    tg_mbar_init(q_empty, C::empty_arrivals);
    for (int s = 0; s < C::stages; ++s) {
      tg_mbar_init(k_full + 8 * s, 1);
      tg_mbar_init(k_empty + 8 * s, C::empty_arrivals);
      tg_mbar_init(v_full + 8 * s, 1);
      tg_mbar_init(v_empty + 8 * s, C::empty_arrivals);
    }
    tg_fence_mbar_init();
  }
  __syncthreads();

  const int wg = __shfl_sync(0xffffffffu, (int)threadIdx.x / 128, 0);  // warp-uniform for ptxas
  if (wg == 0) {
    // ---- producer ----
    tg_setmaxnreg_dec<C::producer_regs>();
    if (threadIdx.x == 0) {
      tg_prefetch_tensormap(&map_q);
      tg_prefetch_tensormap(&map_k);
      tg_prefetch_tensormap(&map_v);
      int ks = 0, vs = 0;          // ring buffers of the next K and V block
      unsigned kp = 0, vp = 0;     // their rounds' parity
      unsigned tile_parity = 0;    // parity of this CTA's tile count so far (Q's round)
      // One K or V block: wait until its buffer's previous round was
      // released (round 0 passes at once), announce the bytes, copy.
      auto load = [&](const TgTensorMap* map, unsigned ring, unsigned full, unsigned empty, int& stage,
                      unsigned& parity, int row, int bh) {
        tg_mbar_wait(empty + 8 * stage, parity ^ 1u);
        tg_mbar_arrive_expect_tx(full + 8 * stage, C::kv_bytes);
#pragma unroll
        for (int j = 0; j < C::boxes; ++j)
          tg_tma_load_3d(ring + stage * C::kv_bytes + j * C::bn * 128, map, full + 8 * stage, 64 * j, row, bh);
        if (++stage == C::stages) {
          stage = 0;
          parity ^= 1u;
        }
      };
      for (int t = blockIdx.x; t < tiles; t += gridDim.x) {
        int bh, m_block;
        tg_attn_tile(t, tiles_m, CAUSAL, bh, m_block);
        const int m0 = m_block * C::bm;
        const int blocks = tg_attn_blocks(m0, S, CAUSAL);
        // Q of this tile once the consumers' last S = Q K^T of the previous
        // tile is done.
        tg_mbar_wait(q_empty, tile_parity ^ 1u);
        tg_mbar_arrive_expect_tx(q_full, C::q_bytes);
#pragma unroll
        for (int j = 0; j < C::boxes; ++j) tg_tma_load_3d(q_smem + j * C::bm * 128, &map_q, q_full, 64 * j, m0, bh);
        // In the consumers' order: K of the last block, then K of block n
        // and V of block n + 1 downwards, then V of block 0.
        for (int n = blocks - 1; n >= 0; --n) {
          load(&map_k, k_ring, k_full, k_empty, ks, kp, n * C::bn, bh);
          if (n + 1 < blocks) load(&map_v, v_ring, v_full, v_empty, vs, vp, (n + 1) * C::bn, bh);
        }
        load(&map_v, v_ring, v_full, v_empty, vs, vp, 0, bh);
        tile_parity ^= 1u;
      }
    }
    return;
  }

  // ---- consumers ----
  tg_setmaxnreg_inc<C::consumer_regs>();
  const int cw = wg - 1;  // consumer index: rows [64 cw, +64) of each tile
  const int t = (int)threadIdx.x % 128, warp = t / 32, lane = t % 32;
  // Descriptors at buffer 0, k step 0. Q and K: rows of 128 bytes (64
  // columns), 8-row groups 1024 apart, blocks of 64 columns C::bm (C::bn)
  // rows apart. V [keys][D] read transposed ("MN-major"): leading byte
  // offset = the next 64 columns of D (one block), stride = 8 keys.
  const unsigned long long q_desc = tg_wgmma_desc(q_smem + 64 * cw * 128, 16, 1024, 1);
  const unsigned long long k_desc = tg_wgmma_desc(k_ring, 16, 1024, 1);
  const unsigned long long v_desc = tg_wgmma_desc(v_ring, C::bn * 128, 1024, 1);
  // 1 / sqrt(D) in base 2: exp(x / sqrt(D)) = exp2(x * log2(e) / sqrt(D)).
  const float scale_log2 = 1.4426950408889634f / (C::d == 128 ? 11.313708498984761f : 8.0f);
  const float neg_inf = -__int_as_float(0x7f800000);

  int ks = 0, vs = 0;
  unsigned kp = 0, vp = 0, tile_parity = 0;
  float o[C::d / 2], s[C::bn / 2];
  unsigned p[C::bn / 4];

  // Ping-pong: consumer c issues its GEMMs after bar.sync on barrier 1 + c
  // and then lets the other one go (bar.arrive on 2 - c). Consumer 0 goes
  // first: consumer 1 hands it the first turn here, and consumer 0 takes
  // that extra hand-over back after its last tile.
  auto turn_begin = [&]() {
    if constexpr (C::pingpong) tg_named_barrier<256>(1 + cw);
  };
  auto turn_end = [&]() {
    if constexpr (C::pingpong) tg_named_arrive<256>(2 - cw);
  };
  if constexpr (C::pingpong) {
    if (cw == 1) tg_named_arrive<256>(1);
  }
  // One arrive per warp on a buffer this warp's wgmmas finished reading.
  auto release = [&](unsigned bar) {
    if (lane == 0) tg_mbar_arrive(bar);
  };
  auto advance = [&](int& stage, unsigned& parity) {
    if (++stage == C::stages) {
      stage = 0;
      parity ^= 1u;
    }
  };
  // S = Q K^T on the K block in buffer ks (committed as one group). The
  // callers wait for the buffer before the wgmma.fence: a wait loop between
  // the fence and the first wgmma makes ptxas add a warpgroup.arrive.
  auto gemm_qk = [&]() {
    const unsigned long long kd = k_desc + ((unsigned)(ks * C::kv_bytes) >> 4);
#pragma unroll
    for (int kk = 0; kk < C::d / 16; ++kk) {
      // k step kk of D: block kk / 4, 32 bytes per step within the row.
      const unsigned q_off = (kk / 4) * C::bm * 128 + (kk % 4) * 32;
      const unsigned k_off = (kk / 4) * C::bn * 128 + (kk % 4) * 32;
      tg_wgmma_ss<F16, C::bn>(s, q_desc + (q_off >> 4), kd + (k_off >> 4), kk > 0 ? 1 : 0);
    }
    tg_wgmma_commit();
  };
  // O (+)= P V on the V block in buffer vs (committed as one group);
  // accumulate: 0 on a tile's first PV (O holds the previous tile's values).
  auto gemm_pv = [&](int accumulate) {
    const unsigned long long vd = v_desc + ((unsigned)(vs * C::kv_bytes) >> 4);
#pragma unroll
    for (int kk = 0; kk < C::bn / 16; ++kk)  // 16 keys per step: 16 rows of 128 bytes
      tg_wgmma_rs<F16, C::d>(o, p + 4 * kk, vd + ((kk * 16 * 128) >> 4), (kk > 0 || accumulate) ? 1 : 0);
    tg_wgmma_commit();
  };
  auto pin_s = [&]() {
#pragma unroll
    for (int i = 0; i < C::bn / 2; ++i) tg_pin(s[i]);
  };
  auto pin_o_p = [&]() {
#pragma unroll
    for (int i = 0; i < C::d / 2; ++i) tg_pin(o[i]);
#pragma unroll
    for (int i = 0; i < C::bn / 4; ++i) tg_pin(p[i]);  // the PV wgmma read them until its wait
  };
  auto wait_k = [&]() { tg_mbar_wait(k_full + 8 * ks, kp); };
  auto wait_v = [&]() { tg_mbar_wait(v_full + 8 * vs, vp); };
  // wgmma.fence after every register the next GEMM uses was written: the
  // pins keep the compiler from sinking a softmax (s), rescale (o) or pack
  // (p) instruction below the fence (ptxas would then add a
  // warpgroup.arrive, C7519). The PV fence comes while S = Q K^T is in
  // flight, so it pins only o and p.
  auto fence_qk = [&]() {
#pragma unroll
    for (int i = 0; i < C::bn / 2; ++i) tg_pin(s[i]);
    tg_wgmma_fence();
  };
  auto fence_pv = [&]() {
#pragma unroll
    for (int i = 0; i < C::d / 2; ++i) tg_pin(o[i]);
#pragma unroll
    for (int i = 0; i < C::bn / 4; ++i) tg_pin(p[i]);
    tg_wgmma_fence();
  };
  auto rescale = [&](const float (&corr)[2]) {
#pragma unroll
    for (int i = 0; i < C::d / 2; ++i) o[i] *= corr[(i >> 1) & 1];
  };

  for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    int bh, m_block;
    tg_attn_tile(tile, tiles_m, CAUSAL, bh, m_block);
    const int m0 = m_block * C::bm;
    const int blocks = tg_attn_blocks(m0, S, CAUSAL);
    const int row_a = m0 + 64 * cw + 16 * warp + lane / 4;  // this thread's rows: row_a, row_a + 8
    // Blocks from `masked_from` up need the mask: they reach past S, or
    // (causal) past this consumer's first row.
    const int first_row = m0 + 64 * cw;
    auto needs_mask = [&](int n) {
      return (n + 1) * C::bn > S || (CAUSAL && (n + 1) * C::bn - 1 > first_row);
    };
    float m[2] = {neg_inf, neg_inf}, l[2] = {0.0f, 0.0f}, corr[2];

    // Once S_n = Q K_n^T is done: K's buffer released (and Q's after block
    // 0), S masked and softmaxed; s then holds P_n in fp32.
    auto softmax = [&](int n) {
      pin_s();
      release(k_empty + 8 * ks);
      advance(ks, kp);
      if (n == 0) release(q_empty);
      if (needs_mask(n)) tg_attn_mask<CAUSAL>(s, n * C::bn, row_a, lane, S);
      tg_attn_softmax(s, m, l, corr, scale_log2);
    };
    // S_n = Q K_n^T waited for at once, then the softmax.
    auto qk_softmax = [&](int n) {
      turn_begin();
      wait_k();
      fence_qk();
      gemm_qk();
      turn_end();
      tg_wgmma_wait<0>();
      softmax(n);
    };

    tg_mbar_wait(q_full, tile_parity);
    qk_softmax(blocks - 1);  // the last block first

    if constexpr (C::overlap) {
      // Step n issues S_n = Q K_n^T and O += P_{n+1} V_{n+1} together and
      // runs the softmax of S_n while the PV product is in flight. The wait
      // for that product, O's rescaling by the softmax's factor and the
      // packing of P_n come at the top of the next step (or the tail): in
      // one basic block with the softmax, ptxas scheduled the wait above
      // it, which undid the overlap; a loop back-edge keeps it below.
      // FIRST: no PV product in flight yet, O uninitialised.
      auto finish_pv = [&](auto first) {
        if constexpr (!decltype(first)::value) {
          tg_wgmma_wait<0>();  // O += P_{n+2} V_{n+2} is done
          pin_o_p();
          release(v_empty + 8 * vs);
          advance(vs, vp);
          rescale(corr);  // O relative to the new running max, as P_{n+1}
        }
        tg_attn_pack<F16>(s, p);
      };
      auto step = [&](int n, auto first) {
        finish_pv(first);
        turn_begin();
        wait_k();
        fence_qk();
        gemm_qk();
        wait_v();
        fence_pv();
        gemm_pv(decltype(first)::value ? 0 : 1);
        turn_end();
        tg_wgmma_wait<1>();  // S_n is done; the PV product stays in flight
        softmax(n);
      };
      auto tail = [&](auto first) {  // O += P_0 V_0
        finish_pv(first);
        turn_begin();
        wait_v();
        fence_pv();
        gemm_pv(decltype(first)::value ? 0 : 1);
        turn_end();
        tg_wgmma_wait<0>();
        pin_o_p();
        release(v_empty + 8 * vs);
        advance(vs, vp);
      };
      using First = TgBool<true>;
      using Later = TgBool<false>;
      if (blocks >= 2) {
        step(blocks - 2, First{});
#pragma unroll 1
        for (int n = blocks - 3; n >= 0; --n) step(n, Later{});
        tail(Later{});
      } else {
        tail(First{});
      }
    } else {
      // Each GEMM waited for at once: O += P_{n+1} V_{n+1}; S_n = Q K_n^T;
      // softmax; O rescaled.
      for (int n = blocks - 1; n >= 0; --n) {
        tg_attn_pack<F16>(s, p);
        turn_begin();
        wait_v();
        fence_pv();
        gemm_pv(n + 1 < blocks ? 1 : 0);
        turn_end();
        tg_wgmma_wait<0>();
        pin_o_p();
        release(v_empty + 8 * vs);
        advance(vs, vp);
        if (n == 0) break;  // that was O += P_0 V_0
        qk_softmax(n - 1);
        rescale(corr);
      }
    }
    tile_parity ^= 1u;

    // ---- epilogue: O / l to global (16-bit pairs), lse = ln(sum exp) per row ----
    float inv[2], row_lse[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float sum = l[h];
      sum += __shfl_xor_sync(0xffffffffu, sum, 1);
      sum += __shfl_xor_sync(0xffffffffu, sum, 2);
      inv[h] = sum > 0.0f ? 1.0f / sum : 0.0f;
      // ln(sum_j exp(x_j / sqrt(D))) = (m scale_log2 + log2(sum)) ln 2.
      row_lse[h] = sum > 0.0f ? (m[h] * scale_log2 + tg_lg2(sum)) * 0.6931471805599453f : neg_inf;
    }
    const long long head = (long long)bh * S;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = row_a + 8 * h;
      if (row < S) {
        unsigned short* dst = out + (head + row) * C::d + 2 * (lane % 4);
#pragma unroll
        for (int i = 0; i < C::d / 8; ++i)
          *reinterpret_cast<unsigned*>(dst + 8 * i) =
              tg_pack2<F16>(o[4 * i + 2 * h] * inv[h], o[4 * i + 2 * h + 1] * inv[h]);
        if (lane % 4 == 0) lse[head + row] = row_lse[h];
      }
    }
  }
  if constexpr (C::pingpong) {
    if (cw == 0) tg_named_barrier<256>(1);  // the hand-over consumer 1 made after its last turn
  }
}

// The harness reads these back to check it loaded the variant it meant to.
extern "C" {
__device__ int tg_attn_config[8] = {TG_HEAD_DIM,         TG_BN,          TG_STAGES,
                                    TG_PINGPONG,         TG_OVERLAP,     TgAttnConfig::smem_bytes,
                                    TgAttnConfig::threads, TgAttnConfig::consumer_regs};
}

// map_q, map_k, map_v: [B * H, S, D] as 3-D tensor maps (dims D, S, B * H)
// with boxes of 64 columns x 128 (Q) or BN (K, V) rows; o: [B, H, S, D];
// lse: [B, H, S] fp32. Grid: any number of CTAs (each walks tiles blockIdx.x,
// + gridDim.x, ...), 384 threads, TgAttnConfig::smem_bytes of shared memory.
#define TG_ATTN_ENTRY(NAME, F16, CAUSAL)                                                                        \
  extern "C" __global__ void __launch_bounds__(TgAttnConfig::threads, 1)                                        \
      NAME(const __grid_constant__ TgTensorMap map_q, const __grid_constant__ TgTensorMap map_k,                \
           const __grid_constant__ TgTensorMap map_v, unsigned short* o, float* lse, int S, int BH) {           \
    tg_attn_fwd<F16, CAUSAL>(map_q, map_k, map_v, o, lse, S, BH);                                               \
  }
TG_ATTN_ENTRY(tg_attn_fwd_bf16, false, false)
TG_ATTN_ENTRY(tg_attn_fwd_bf16_causal, false, true)
TG_ATTN_ENTRY(tg_attn_fwd_f16, true, false)
TG_ATTN_ENTRY(tg_attn_fwd_f16_causal, true, true)
