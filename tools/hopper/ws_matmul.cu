// A hand-written Hopper (sm_90a) matmul in the shape Tegula's CUDA backend
// should learn to emit: C = A @ B, A [M, K] row-major, B [K, N] row-major
// (or [N, K] with TG_B_KMAJOR), bf16 or fp16 in, fp32 accumulate, bf16 or
// fp16 out; or (TG_FP8) e4m3 in with B given [N, K], per-tensor scales
// applied to the fp32 accumulator, bf16 out. Written like Tegula's
// generated units: helpers with a tg_ prefix (the shared ones in
// hopper_prelude.cuh, as Tegula's preludes), inline PTX.
// tools/hopper/NOTES.md gives the design; tools/hopper/bench_proto.py
// builds, checks and times it.
//
// Structure (one persistent CTA per SM, or one cluster of 2 per SM pair):
//   warpgroup 0       producer: one thread issues the TMA copies
//                     (cp.async.bulk.tensor) of every stage into a ring of
//                     TG_STAGES shared-memory buffers; registers lowered with
//                     setmaxnreg.dec.
//   warpgroups 1..C   consumers: wgmma on the ring through shared-memory
//                     descriptors, registers raised with setmaxnreg.inc, then
//                     the epilogue (direct stores, or stmatrix + TMA store).
// Per stage two mbarriers: full (the producer's arrive.expect_tx plus the
// copies' complete_tx) and empty (one arrive per consumer warp that read
// it, from every CTA of the cluster). Both sides walk the same sequence of
// (stage, phase) pairs: iteration i of the CTA's K-loop iterations uses
// stage i % S in round i / S, and round r waits for phase parity r & 1.
//
// Compile-time configuration (nvcc -D...; bench_proto.py lists the variants):
//   TG_BM, TG_BN, TG_BK   CTA tile; BK a multiple of 64 (one 128-byte swizzle
//                          row of 16-bit elements), BN 128 or 256
//   TG_STAGES             ring depth
//   TG_CONSUMERS          consumer warpgroups (2)
//   TG_PINGPONG           0: cooperative, the consumers split each tile's rows;
//                         1: ping-pong, each consumer owns alternate tiles whole
//   TG_TMA_STORE          0: epilogue stores registers straight to global;
//                         1: stmatrix into swizzled shared memory, TMA store
//   TG_B_KMAJOR           0: B is [K, N] row-major (wgmma reads it transposed);
//                         1: B is given as [N, K] row-major (B^T)
//   TG_CLUSTER            1, or 2: CTA pairs along M share each B tile, each CTA
//                         loading half of it with TMA multicast
//   TG_FP8                1: A and B are e4m3 (wgmma k32, both operands K-major,
//                         so TG_B_KMAJOR); BK counts bytes' worth of elements (a
//                         128-byte swizzle row is 128 of them); C = scale_a *
//                         scale_b * (A @ B) in bf16

#ifndef TG_BM
#define TG_BM 128
#endif
#ifndef TG_BN
#define TG_BN 256
#endif
#ifndef TG_BK
#define TG_BK 64
#endif
#ifndef TG_STAGES
#define TG_STAGES 4
#endif
#ifndef TG_CONSUMERS
#define TG_CONSUMERS 2
#endif
#ifndef TG_PINGPONG
#define TG_PINGPONG 0
#endif
#ifndef TG_TMA_STORE
#define TG_TMA_STORE 0
#endif
#ifndef TG_B_KMAJOR
#define TG_B_KMAJOR 0
#endif
#ifndef TG_CLUSTER
#define TG_CLUSTER 1
#endif
#ifndef TG_FP8
#define TG_FP8 0
#endif

#include "hopper_prelude.cuh"

// --- configuration ----------------------------------------------------------------------
struct TgConfig {
  static constexpr int bm = TG_BM, bn = TG_BN, bk = TG_BK, stages = TG_STAGES, consumers = TG_CONSUMERS;
  static constexpr bool pingpong = TG_PINGPONG != 0, tma_store = TG_TMA_STORE != 0, b_kmajor = TG_B_KMAJOR != 0;
  static constexpr int cluster = TG_CLUSTER;
  // Element bytes; a 128-byte swizzle row (one TMA box row along K) holds
  // box_k of them; one wgmma K step (k16, or k32 for 8-bit types) is 32 bytes.
  static constexpr bool fp8 = TG_FP8 != 0;
  static constexpr int elem = fp8 ? 1 : 2, box_k = 128 / elem, k_step = 32 / elem;
  static constexpr int threads = 128 * (consumers + 1);
  // Rows of C one consumer computes per tile, in 64-row wgmma slabs.
  static constexpr int rows = pingpong ? bm : bm / consumers;
  static constexpr int slabs = rows / 64;
  // Shared memory, from a 1024-byte aligned base (a whole period of the
  // 128-byte swizzle, which TMA and the wgmma descriptors both apply to
  // address bits): the A ring, the B ring, one C staging tile per consumer
  // (TMA store only), then the barriers.
  static constexpr int a_stage_bytes = bm * bk * elem;
  static constexpr int b_stage_bytes = bn * bk * elem;
  static constexpr int stage_bytes = a_stage_bytes + b_stage_bytes;  // what full[s] expects
  static constexpr int ring_bytes = stages * stage_bytes;
  static constexpr int c_bytes = tma_store ? rows * bn * 2 : 0;
  static constexpr int barrier_offset = ring_bytes + consumers * c_bytes;
  static constexpr int smem_bytes = 1024 + barrier_offset + 2 * stages * 8;  // 1024: alignment slack
  // Each stage is read by every consumer (cooperative) or by one (ping-pong);
  // one arrive per reading warp, from each CTA of the cluster.
  static constexpr int empty_arrivals = 4 * (pingpong ? 1 : consumers) * cluster;
  // Registers: ptxas gives each thread launch_regs (65536 / threads, in steps
  // of 8); the producer warpgroup hands back all but producer_regs and the
  // consumers take the CTA's pool that frees.
  static constexpr int launch_regs = (65536 / threads) / 8 * 8 > 255 ? 248 : (65536 / threads) / 8 * 8;
  static constexpr int producer_regs = 40;
  static constexpr int consumer_regs_raw = (launch_regs * (consumers + 1) - producer_regs) / consumers / 8 * 8;
  static constexpr int consumer_regs = consumer_regs_raw > 256 ? 256 : consumer_regs_raw;
};

static_assert(TgConfig::bk % TgConfig::box_k == 0, "BK: whole 128-byte swizzle rows");
static_assert(!TgConfig::fp8 || (TgConfig::b_kmajor && TgConfig::cluster == 1),
              "8-bit wgmma reads both operands K-major: B given as [N, K]");
static_assert(TgConfig::bn == 128 || TgConfig::bn == 256, "BN: one wgmma m64n128 or m64n256 per slab");
static_assert(TgConfig::bm <= 256 && TgConfig::bk <= 256, "a TMA box dim is at most 256");
static_assert(TgConfig::rows % 64 == 0 && TgConfig::slabs >= 1, "consumer rows: whole 64-row slabs");
static_assert(TgConfig::slabs * TgConfig::bn / 2 <= 128, "at most 128 accumulator registers per thread");
static_assert(!TgConfig::pingpong || TgConfig::consumers == 2, "ping-pong alternates two consumers");
static_assert(TgConfig::smem_bytes <= 232448, "more shared memory than sm_90 gives a block (227 KB)");
static_assert(TgConfig::cluster == 1 || TgConfig::cluster == 2, "clusters of 1 or 2");
static_assert(TgConfig::cluster == 1 || (!TgConfig::b_kmajor && (TgConfig::bn / 64) % 2 == 0),
              "multicast splits B into pairs of 64-column boxes");
static_assert(TgConfig::consumer_regs >= TgConfig::producer_regs, "register split");

// d (+)= a * b for one m64nNk16: scale-d from a register (0 on a tile's
// first step: the accumulator's old value is ignored), A and B scales 1, A
// K-major (imm-trans-a 0), B K-major or transposed (imm-trans-b).
#define TG_WGMMA_TEXT(SHAPE, TYPE, REGS, DA, DB, SCALE, TRANS_B)                                     \
  "{\n.reg .pred p;\nsetp.ne.b32 p, " SCALE ", 0;\n"                                                 \
  "wgmma.mma_async.sync.aligned." SHAPE ".f32." TYPE "." TYPE " " REGS ", " DA ", " DB ", p, 1, 1, 0, " \
  TRANS_B ";\n}\n"

// d[0..64) += a * b: this warpgroup's 64x128 tile, asynchronous until tg_wgmma_wait.
template <bool F16, int TRANS_B>
TG_DEVICE void tg_wgmma_m64n128k16(float* d, unsigned long long a, unsigned long long b, int scale_d) {
  if constexpr (F16)
    asm volatile(TG_WGMMA_TEXT("m64n128k16", "f16", TG_REGS_64, "%64", "%65", "%66", "%67")
                 : TG_ACC_64
                 : "l"(a), "l"(b), "r"(scale_d), "n"(TRANS_B));
  else
    asm volatile(TG_WGMMA_TEXT("m64n128k16", "bf16", TG_REGS_64, "%64", "%65", "%66", "%67")
                 : TG_ACC_64
                 : "l"(a), "l"(b), "r"(scale_d), "n"(TRANS_B));
}
// d[0..128) += a * b: this warpgroup's 64x256 tile, asynchronous until tg_wgmma_wait.
template <bool F16, int TRANS_B>
TG_DEVICE void tg_wgmma_m64n256k16(float* d, unsigned long long a, unsigned long long b, int scale_d) {
  if constexpr (F16)
    asm volatile(TG_WGMMA_TEXT("m64n256k16", "f16", TG_REGS_128, "%128", "%129", "%130", "%131")
                 : TG_ACC_128
                 : "l"(a), "l"(b), "r"(scale_d), "n"(TRANS_B));
  else
    asm volatile(TG_WGMMA_TEXT("m64n256k16", "bf16", TG_REGS_128, "%128", "%129", "%130", "%131")
                 : TG_ACC_128
                 : "l"(a), "l"(b), "r"(scale_d), "n"(TRANS_B));
}
// The same for e4m3 x e4m3, m64nNk32: 8-bit wgmma takes no transpose
// operands (both K-major) and reads 32 bytes of K per row, as k16 does.
#define TG_WGMMA_E4M3_TEXT(SHAPE, REGS, DA, DB, SCALE)                                               \
  "{\n.reg .pred p;\nsetp.ne.b32 p, " SCALE ", 0;\n"                                                 \
  "wgmma.mma_async.sync.aligned." SHAPE ".f32.e4m3.e4m3 " REGS ", " DA ", " DB ", p, 1, 1;\n}\n"
template <int N>
TG_DEVICE void tg_wgmma_e4m3(float* d, unsigned long long a, unsigned long long b, int scale_d) {
  if constexpr (N == 256)
    asm volatile(TG_WGMMA_E4M3_TEXT("m64n256k32", TG_REGS_128, "%128", "%129", "%130")
                 : TG_ACC_128
                 : "l"(a), "l"(b), "r"(scale_d));
  else
    asm volatile(TG_WGMMA_E4M3_TEXT("m64n128k32", TG_REGS_64, "%64", "%65", "%66")
                 : TG_ACC_64
                 : "l"(a), "l"(b), "r"(scale_d));
}
template <bool F16, int N, int TRANS_B>
TG_DEVICE void tg_wgmma(float* d, unsigned long long a, unsigned long long b, int scale_d) {
  if constexpr (N == 256)
    tg_wgmma_m64n256k16<F16, TRANS_B>(d, a, b, scale_d);
  else
    tg_wgmma_m64n128k16<F16, TRANS_B>(d, a, b, scale_d);
}


// The accumulator fragments of `rows` x BN of C (each 64-row slab: warp w
// holds rows 16 w + lane / 4 and + 8; registers 4 j .. 4 j + 3 are columns
// 8 j + 2 (lane % 4) + {0, 1} of the upper row, then of the lower row),
// rounded to 16 bits and stored as 32-bit words at (r0, c0) of c [M, N].
// CHECKED: skip what lies outside C (N is even, since TMA wants 16-byte row
// strides, so a pair is all in or all out).
template <bool F16, bool CHECKED, int SLABS, int HALF_BN>
TG_DEVICE void tg_store_fragment(float (&acc)[SLABS][HALF_BN], unsigned short* c, int r0, int c0, int warp, int lane,
                                 int M, int N) {
#pragma unroll
  for (int m = 0; m < SLABS; ++m) {
    const int r = r0 + m * 64 + warp * 16 + lane / 4;
    unsigned short* upper = c + (long long)r * N + c0 + 2 * (lane % 4);
    unsigned short* lower = upper + 8LL * N;
#pragma unroll
    for (int j = 0; j < HALF_BN / 4; ++j) {
      const bool in_col = !CHECKED || c0 + 8 * j + 2 * (lane % 4) < N;
      if (!CHECKED || (in_col && r < M))
        *reinterpret_cast<unsigned*>(upper + 8 * j) = tg_pack2<F16>(acc[m][4 * j], acc[m][4 * j + 1]);
      if (!CHECKED || (in_col && r + 8 < M))
        *reinterpret_cast<unsigned*>(lower + 8 * j) = tg_pack2<F16>(acc[m][4 * j + 2], acc[m][4 * j + 3]);
    }
  }
}

// --- the tile scheduler -----------------------------------------------------------------
// Unit u (a tile, or a column of `cluster` tiles along M) in grouped order:
// groups of `group` unit-rows are swept column by column, so the units that
// run at the same time share A rows and B columns in L2 (Triton's GROUP_M).
TG_DEVICE void tg_unit_coords(int u, int units_m, int units_n, int group, int& um, int& un) {
  const int per_group = group * units_n;
  const int g = u / per_group;
  const int first = g * group;
  const int height = units_m - first < group ? units_m - first : group;
  const int within = u - g * per_group;
  um = first + within % height;
  un = within / height;
}

// --- the kernel -------------------------------------------------------------------------
template <bool F16>
TG_DEVICE void tg_ws_matmul(const TgTensorMap& map_a, const TgTensorMap& map_b, const TgTensorMap& map_c,
                            unsigned short* c, int M, int N, int K, int group_m, const float* scale_a,
                            const float* scale_b) {
  using C = TgConfig;
  extern __shared__ __align__(1024) unsigned char tg_smem[];
  const unsigned base = (tg_shared_address(tg_smem) + 1023u) & ~1023u;
  const unsigned a_ring = base;
  const unsigned b_ring = base + C::stages * C::a_stage_bytes;
  const unsigned c_tiles = base + C::ring_bytes;
  const unsigned full = base + C::barrier_offset;  // full[s] at full + 8 s
  const unsigned empty = full + 8 * C::stages;    // empty[s] at empty + 8 s

  // Work units: with a cluster, the CTA of rank r computes tile row
  // C::cluster * um + r of unit (um, un); its partner shares the B tile.
  const int tiles_m = (M + C::bm - 1) / C::bm;
  const int units_m = (tiles_m + C::cluster - 1) / C::cluster;
  const int units_n = (N + C::bn - 1) / C::bn;
  const int units = units_m * units_n;
  const int k_tiles = (K + C::bk - 1) / C::bk;
  int group = group_m / C::cluster;
  if (group < 1) group = 1;
  const int rank = C::cluster > 1 ? (int)tg_cluster_ctarank() : 0;
  const int first_unit = C::cluster > 1 ? (int)tg_cluster_id_x() : (int)blockIdx.x;
  const int unit_step = C::cluster > 1 ? (int)tg_cluster_count_x() : (int)gridDim.x;

  if (threadIdx.x == 0) {
    for (int s = 0; s < C::stages; ++s) {
      tg_mbar_init(full + 8 * s, 1);  // the producer's arrive.expect_tx; the bytes do the rest
      tg_mbar_init(empty + 8 * s, C::empty_arrivals);
    }
    tg_fence_mbar_init();
  }
  if constexpr (C::cluster > 1)
    tg_cluster_sync();  // the partner's barriers exist before our multicasts and arrivals reach them
  else
    __syncthreads();

  const int wg = __shfl_sync(0xffffffffu, (int)threadIdx.x / 128, 0);  // warp-uniform for ptxas
  if (wg == 0) {
    // ---- producer ----
    tg_setmaxnreg_dec<C::producer_regs>();
    if (threadIdx.x == 0) {
      tg_prefetch_tensormap(&map_a);
      tg_prefetch_tensormap(&map_b);
      int stage = 0;
      unsigned phase = 0;  // round & 1 of the current stage
      for (int u = first_unit; u < units; u += unit_step) {
        int um, un;
        tg_unit_coords(u, units_m, units_n, group, um, un);
        const int m0 = (um * C::cluster + rank) * C::bm, n0 = un * C::bn;
        for (int kt = 0; kt < k_tiles; ++kt) {
          // Round r refills stage s once round r - 1's readers released it
          // (parity (r - 1) & 1; round 0 passes at once).
          tg_mbar_wait(empty + 8 * stage, phase ^ 1u);
          const unsigned bar = full + 8 * stage;
          tg_mbar_arrive_expect_tx(bar, C::stage_bytes);
          const int k0 = kt * C::bk;
          // A [M, K]: box {128 bytes of K, BM rows} per 128 bytes of K; block j
          // at j * BM * 128.
          const unsigned a_dst = a_ring + stage * C::a_stage_bytes;
#pragma unroll
          for (int j = 0; j < C::bk / C::box_k; ++j)
            tg_tma_load_2d(a_dst + j * C::bm * 128, &map_a, bar, k0 + C::box_k * j, m0);
          const unsigned b_dst = b_ring + stage * C::b_stage_bytes;
          if constexpr (C::b_kmajor) {
            // B^T [N, K]: box {128 bytes of K, BN rows} per 128 bytes of K; block
            // j at j * BN * 128.
#pragma unroll
            for (int j = 0; j < C::bk / C::box_k; ++j)
              tg_tma_load_2d(b_dst + j * C::bn * 128, &map_b, bar, k0 + C::box_k * j, n0);
          } else {
            // B [K, N]: box {64 of N, BK rows of K} per 64 of N; block j at j * BK * 128.
#pragma unroll
            for (int j = 0; j < C::bn / 64; ++j) {
              if constexpr (C::cluster == 1)
                tg_tma_load_2d(b_dst + j * C::bk * 128, &map_b, bar, n0 + 64 * j, k0);
              else if (j % C::cluster == rank)  // our half of B, to both CTAs
                tg_tma_load_2d_multicast(b_dst + j * C::bk * 128, &map_b, bar, n0 + 64 * j, k0,
                                         (unsigned short)((1u << C::cluster) - 1));
            }
          }
          if (++stage == C::stages) {
            stage = 0;
            phase ^= 1u;
          }
        }
      }
      if constexpr (C::cluster > 1) {
        // Stay until every reader, ours and the partner's, released the last
        // round of every stage: the partner's consumers arrive on our empty
        // barriers, which must outlive those arrivals.
        for (int i = 0; i < C::stages; ++i) {
          tg_mbar_wait(empty + 8 * stage, phase ^ 1u);
          if (++stage == C::stages) {
            stage = 0;
            phase ^= 1u;
          }
        }
      }
    }
    return;
  }

  // ---- consumers ----
  tg_setmaxnreg_inc<C::consumer_regs>();
  const int cw = wg - 1;  // consumer index
  const int t = (int)threadIdx.x % 128, warp = t / 32, lane = t % 32;
  // Cooperative: consumer cw computes rows [cw * rows, +rows) of every tile.
  // Ping-pong: consumer cw computes the CTA's tiles cw, cw + 2, ... whole.
  const int row0 = C::pingpong ? 0 : cw * C::rows;
  const int tile_step = C::pingpong ? 2 : 1;
  // Descriptors at stage 0, k step 0, this consumer's first row; the loop
  // adds constants (>> 4: the address field counts 16 bytes).
  // A, K-major 128-byte swizzle: rows of 128 bytes, 8-row groups 1024 apart
  // (stride byte offset); the leading byte offset is unused.
  const unsigned long long a_desc = tg_wgmma_desc(a_ring + row0 * 128, 16, 1024, 1);
  // B K-major: as A. B [K][N] (transposed, "MN-major"): leading byte offset
  // = the next 64-column block (BK rows of 128 bytes), stride byte offset =
  // the next 8 rows of K.
  const unsigned long long b_desc =
      C::b_kmajor ? tg_wgmma_desc(b_ring, 16, 1024, 1) : tg_wgmma_desc(b_ring, C::bk * 128, 1024, 1);

  float acc[C::slabs][C::bn / 2];
#pragma unroll
  for (int m = 0; m < C::slabs; ++m)
#pragma unroll
    for (int i = 0; i < C::bn / 2; ++i) acc[m][i] = 0.0f;

  for (int local = C::pingpong ? cw : 0, u = first_unit + local * unit_step; u < units;
       local += tile_step, u += tile_step * unit_step) {
    int um, un;
    tg_unit_coords(u, units_m, units_n, group, um, un);
    const int m0 = (um * C::cluster + rank) * C::bm, n0 = un * C::bn;

    // Ping-pong: wait for the other consumer to have passed every full
    // barrier of its tile. A parity wait only tells the awaited phase from
    // the one before it, so a consumer may wait on a stage's round r only
    // once round r - 1 of that stage was waited for: the tiles' K loops
    // must run one after the other, as the producer fills them.
    if constexpr (C::pingpong) {
      if (local > 0) tg_named_barrier<256>(3 + cw);
    }
    // The producer's iteration counter at this tile's first K step.
    const int it = local * k_tiles;
    int stage = it % C::stages;
    unsigned phase = (unsigned)(it / C::stages) & 1u;
    int previous = 0;
    if (k_tiles == 0) {  // K == 0: no wgmma resets the accumulator (scale-d 0), so zero it here
#pragma unroll
      for (int m = 0; m < C::slabs; ++m)
#pragma unroll
        for (int i = 0; i < C::bn / 2; ++i) acc[m][i] = 0.0f;
    }
    for (int kt = 0; kt < k_tiles; ++kt) {
      tg_mbar_wait(full + 8 * stage, phase);  // stage's copies have landed
      tg_wgmma_fence();
      const unsigned long long da = a_desc + ((unsigned)(stage * C::a_stage_bytes) >> 4);
      const unsigned long long db = b_desc + ((unsigned)(stage * C::b_stage_bytes) >> 4);
#pragma unroll
      for (int kk = 0; kk < C::bk / C::k_step; ++kk) {
        // A: block kk / 4 of K, 32 bytes per k step inside the 128-byte row.
        const unsigned a_off = (kk / 4) * C::bm * 128 + (kk % 4) * 32;
        // B K-major: as A; B [K][N]: 16 rows of 128 bytes per k step.
        const unsigned b_off = C::b_kmajor ? (kk / 4) * C::bn * 128 + (kk % 4) * 32 : kk * 16 * 128;
#pragma unroll
        for (int m = 0; m < C::slabs; ++m) {
          if constexpr (C::fp8)
            tg_wgmma_e4m3<C::bn>(acc[m], da + ((a_off + m * 64 * 128) >> 4), db + (b_off >> 4),
                                 (kt > 0 || kk > 0) ? 1 : 0);
          else
            tg_wgmma<F16, C::bn, C::b_kmajor ? 0 : 1>(acc[m], da + ((a_off + m * 64 * 128) >> 4),
                                                       db + (b_off >> 4), (kt > 0 || kk > 0) ? 1 : 0);
        }
      }
      tg_wgmma_commit();
      // This K step's group stays in flight; the previous one is done, so
      // its stage goes back to the producer (one arrive per warp, in every
      // CTA of the cluster).
      tg_wgmma_wait<1>();
      if (kt > 0 && lane == 0) {
        if constexpr (C::cluster > 1) {
#pragma unroll
          for (int r = 0; r < C::cluster; ++r) tg_mbar_arrive_cluster(empty + 8 * previous, r);
        } else {
          tg_mbar_arrive(empty + 8 * previous);
        }
      }
      previous = stage;
      if (++stage == C::stages) {
        stage = 0;
        phase ^= 1u;
      }
    }
    if constexpr (C::pingpong) {
      // Every wgmma of this tile is issued: the other consumer's K loop
      // (the CTA's next tile, if any) may start while ours drains and while
      // our epilogue runs.
      if (u + unit_step < units) tg_named_arrive<256>(3 + (1 - cw));
    }
    tg_wgmma_wait<0>();
    if (k_tiles > 0 && lane == 0) {
      if constexpr (C::cluster > 1) {
#pragma unroll
        for (int r = 0; r < C::cluster; ++r) tg_mbar_arrive_cluster(empty + 8 * previous, r);
      } else {
        tg_mbar_arrive(empty + 8 * previous);
      }
    }
#pragma unroll
    for (int m = 0; m < C::slabs; ++m)
#pragma unroll
      for (int i = 0; i < C::bn / 2; ++i) tg_pin(acc[m][i]);  // no read moves above the wait
    if constexpr (C::fp8) {
      // Per-tensor scales on the fp32 sums (torch._scaled_mm's convention:
      // C = scale_a * scale_b * (A @ B)), read once per tile from global.
      const float scale = scale_a[0] * scale_b[0];
#pragma unroll
      for (int m = 0; m < C::slabs; ++m)
#pragma unroll
        for (int i = 0; i < C::bn / 2; ++i) acc[m][i] *= scale;
    }

    // ---- epilogue ----
    if constexpr (!C::tma_store) {
      if (m0 + C::bm <= M && n0 + C::bn <= N)
        tg_store_fragment<F16, false>(acc, c, m0 + row0, n0, warp, lane, M, N);
      else
        tg_store_fragment<F16, true>(acc, c, m0 + row0, n0, warp, lane, M, N);
    } else {
      // Staging tile of this consumer: rows x BN, in 64-column blocks of
      // rows x 128 bytes (j at j * rows * 128), 16-byte chunks XORed with
      // row % 8: the 128-byte swizzle the C map's TMA store undoes.
      const unsigned tile = c_tiles + cw * C::c_bytes;
      // The previous tile's store must have read the staging tile.
      if (t == 0) tg_bulk_wait_read<0>();
      tg_named_barrier<128>(1 + cw);
      const int quad = lane / 8;  // which of the four matrices this lane addresses
#pragma unroll
      for (int m = 0; m < C::slabs; ++m) {
        const int row = m * 64 + warp * 16 + 8 * (quad & 1) + lane % 8;
#pragma unroll
        for (int jj = 0; jj < C::bn / 16; ++jj) {
          // Matrices: (upper 8 rows, columns 16 jj..+7), (lower, same),
          // (upper, 16 jj + 8..+15), (lower, same).
          const int chunk = 2 * jj + (quad >> 1);  // 16-byte chunk of the row (8 columns)
          const unsigned address = tile + (chunk / 8) * (C::rows * 128) + row * 128 + (((chunk % 8) ^ (row % 8)) << 4);
          tg_stmatrix_x4(address, tg_pack2<F16>(acc[m][8 * jj + 0], acc[m][8 * jj + 1]),
                         tg_pack2<F16>(acc[m][8 * jj + 2], acc[m][8 * jj + 3]),
                         tg_pack2<F16>(acc[m][8 * jj + 4], acc[m][8 * jj + 5]),
                         tg_pack2<F16>(acc[m][8 * jj + 6], acc[m][8 * jj + 7]));
        }
      }
      tg_fence_proxy_async();
      tg_named_barrier<128>(1 + cw);
      if (t == 0) {
#pragma unroll
        for (int j = 0; j < C::bn / 64; ++j) tg_tma_store_2d(&map_c, tile + j * C::rows * 128, n0 + 64 * j, m0 + row0);
        tg_bulk_commit();
      }
    }
  }
  if constexpr (C::tma_store) {
    if (t == 0) tg_bulk_wait<0>();  // the last stores finish before the CTA (and its shared memory) goes
  }
}

#if TG_CLUSTER > 1
#define TG_CLUSTER_DIMS __cluster_dims__(TG_CLUSTER, 1, 1)
#else
#define TG_CLUSTER_DIMS
#endif

// The harness reads these back to check it loaded the variant it meant to.
extern "C" {
__device__ int tg_ws_config[14] = {TG_BM,        TG_BN,        TG_BK,      TG_STAGES,
                                   TG_CONSUMERS, TG_PINGPONG,  TG_TMA_STORE, TG_B_KMAJOR,
                                   TG_CLUSTER,   TgConfig::smem_bytes, TgConfig::threads,
                                   TgConfig::producer_regs, TgConfig::consumer_regs, TG_FP8};
}

// c: [M, N] row-major, 16-bit. map_a: A [M, K] (or map of the same box over
// any [M, K] view); map_b: B [K, N], or B^T [N, K] with TG_B_KMAJOR; map_c:
// C, used by the TMA-store epilogue only (always passed, so every variant
// has one signature). group_m: tile rows per scheduler group. With TG_FP8
// the one entry point takes e4m3 maps and the two fp32 scales' addresses.
#if TG_FP8
extern "C" __global__ void __launch_bounds__(TgConfig::threads, 1) TG_CLUSTER_DIMS
    tg_ws_matmul_e4m3(const __grid_constant__ TgTensorMap map_a, const __grid_constant__ TgTensorMap map_b,
                      const __grid_constant__ TgTensorMap map_c, tg_bf16* c, int M, int N, int K, int group_m,
                      const float* scale_a, const float* scale_b) {
  tg_ws_matmul<false>(map_a, map_b, map_c, c, M, N, K, group_m, scale_a, scale_b);
}
#else
extern "C" __global__ void __launch_bounds__(TgConfig::threads, 1) TG_CLUSTER_DIMS
    tg_ws_matmul_bf16(const __grid_constant__ TgTensorMap map_a, const __grid_constant__ TgTensorMap map_b,
                      const __grid_constant__ TgTensorMap map_c, tg_bf16* c, int M, int N, int K, int group_m) {
  tg_ws_matmul<false>(map_a, map_b, map_c, c, M, N, K, group_m, nullptr, nullptr);
}

extern "C" __global__ void __launch_bounds__(TgConfig::threads, 1) TG_CLUSTER_DIMS
    tg_ws_matmul_f16(const __grid_constant__ TgTensorMap map_a, const __grid_constant__ TgTensorMap map_b,
                     const __grid_constant__ TgTensorMap map_c, tg_f16* c, int M, int N, int K, int group_m) {
  tg_ws_matmul<true>(map_a, map_b, map_c, c, M, N, K, group_m, nullptr, nullptr);
}
#endif
