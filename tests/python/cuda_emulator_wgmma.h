// wgmma for the host CUDA emulator (included by cuda_emulator.h, part 2):
// each instruction runs when a wait_group covers its group.
//
// Operands are read through the descriptors as the PTX ISA describes the
// canonical layouts: swizzle atoms of 8 rows x W bytes (W = 128, 64, 32 for
// modes 1, 2, 3), rows along K ("K-major": the stride byte offset steps 8
// rows of M/N, the leading one the next atom along K) or along M/N
// (transposed: the leading byte offset steps the next atom along M/N, the
// stride one 8 rows of K); then the hardware's swizzle: address bits
// [4, 4 + log2(W/16)) ^= bits [7, 7 + log2(W/16)). The accumulator fragment:
// warp w % 4 of the warpgroup holds rows 16 (w % 4) .. + 15, as mma.sync's.
// Types: 0 f16 and 1 bf16 (m64nNk16), 2 e4m3 and 3 e5m2 (m64nNk32, both
// operands K-major). scale-d 0 makes d = a * b (its old value ignored).
//
// Between issue and retirement a warpgroup's wgmma reads shared memory
// asynchronously: its footprint is registered (tg_emu::Cta::async_reads), so
// that a bulk tensor copy issued into it (a stage refilled before its
// readers released it) is reported, and at issue the footprint must hold no
// copy still in flight (a consumer that did not wait for the stage's full
// barrier) nor generic-proxy writes no fence.proxy.async covered.
//
// A unit compiles the wgmma helpers its kernel calls (fence, commit, the
// wait_group template); the rest is the runtime's (TG_EMU_RUNTIME).

#ifdef TG_EMU_RUNTIME
inline int tg_emu_element_bytes(int type) { return type >= 2 ? 1 : 2; }

// e4m3 (float8e4nv): 1 sign, 4 exponent (bias 7), 3 mantissa bits; no
// infinities, S.1111.111 is NaN.
inline float tg_emu_e4m3(unsigned char v) {
  int exponent = (v >> 3) & 15, mantissa = v & 7;
  float magnitude;
  if (exponent == 15 && mantissa == 7)
    magnitude = std::numeric_limits<float>::quiet_NaN();
  else if (exponent == 0)
    magnitude = std::ldexp(static_cast<float>(mantissa) / 8.0f, -6);
  else
    magnitude = std::ldexp(1.0f + static_cast<float>(mantissa) / 8.0f, exponent - 7);
  return (v & 0x80) ? -magnitude : magnitude;
}

// e5m2: 1 sign, 5 exponent (bias 15), 2 mantissa bits; IEEE-style
// infinities and NaNs.
inline float tg_emu_e5m2(unsigned char v) {
  int exponent = (v >> 2) & 31, mantissa = v & 3;
  float magnitude;
  if (exponent == 31)
    magnitude = mantissa ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::infinity();
  else if (exponent == 0)
    magnitude = std::ldexp(static_cast<float>(mantissa) / 4.0f, -14);
  else
    magnitude = std::ldexp(1.0f + static_cast<float>(mantissa) / 4.0f, exponent - 15);
  return (v & 0x80) ? -magnitude : magnitude;
}

// The shared-memory byte of element (mn, k) of an operand through `desc`.
inline unsigned tg_emu_desc_address(unsigned long long desc, bool mn_major, int mn, int k, int element_bytes) {
  unsigned start = static_cast<unsigned>(desc & 0x3fff) << 4;
  unsigned lbo = static_cast<unsigned>((desc >> 16) & 0x3fff) << 4;
  unsigned sbo = static_cast<unsigned>((desc >> 32) & 0x3fff) << 4;
  unsigned mode = static_cast<unsigned>(desc >> 62);
  unsigned width = mode == 1 ? 128 : mode == 2 ? 64 : mode == 3 ? 32 : 0;
  if (width == 0) tg_emu::fail("a wgmma descriptor without swizzle (interleaved core matrices) is not emulated");
  unsigned per_row = width / static_cast<unsigned>(element_bytes);  // elements in a row of an atom
  unsigned u = mn_major ? start + (mn / per_row) * lbo + (k / 8) * sbo + (k % 8) * width + (mn % per_row) * element_bytes
                        : start + (mn / 8) * sbo + (k / per_row) * lbo + (mn % 8) * width + (k % per_row) * element_bytes;
  return u ^ (((u >> 7) & (width / 16 - 1)) << 4);
}

inline float tg_emu_desc_element(unsigned long long desc, bool mn_major, int mn, int k, int type) {
  unsigned address = tg_emu_desc_address(desc, mn_major, mn, k, tg_emu_element_bytes(type));
  if (type == 2) return tg_emu_e4m3(tg_emu::shared()[address]);
  if (type == 3) return tg_emu_e5m2(tg_emu::shared()[address]);
  unsigned short h;
  std::memcpy(&h, tg_emu::shared() + address, 2);
  return type == 0 ? tg_f16_to_f32(h) : __uint_as_float(static_cast<unsigned>(h) << 16);
}

// The bytes `rows` x K of an operand occupy: the bounding range of its
// 16-byte chunks.
inline tg_emu::Range tg_emu_desc_footprint(unsigned long long desc, bool mn_major, int rows, int type) {
  int bytes = tg_emu_element_bytes(type), k_size = 32 / bytes, per_chunk = 16 / bytes;
  tg_emu::Range r{~0u, 0};
  for (int mn = 0; mn < rows; mn += mn_major ? per_chunk : 1)
    for (int k = 0; k < k_size; k += mn_major ? 1 : per_chunk) {
      unsigned a = tg_emu_desc_address(desc, mn_major, mn, k, bytes) & ~15u;
      r.lo = std::min(r.lo, a);
      r.hi = std::max(r.hi, a + 16);
    }
  return r;
}

// The checks of an asynchronous read of `range` by the async proxy (`what`
// names the reader): no copy still in flight into it, no generic-proxy write
// without a fence.proxy.async after it.
inline void tg_emu_check_async_read(tg_emu::Cta& cta, tg_emu::Range range, const std::string& what) {
  for (const tg_emu::Incoming& in : cta.incoming)
    if (tg_emu::overlaps(in.range, range))
      tg_emu::fail(what + " reads shared memory " + tg_emu::describe(range) + " while " + in.what +
                   " into " + tg_emu::describe(in.range) +
                   " is still in flight: the reader did not wait for the copy's mbarrier phase "
                   "(wrong parity, or a phase that completed early: arrive.expect_tx missing or too small?)");
  for (unsigned chunk = range.lo / 16; chunk < (range.hi + 15) / 16 && chunk < cta.unfenced_writer.size(); ++chunk) {
    int writer = cta.unfenced_writer[chunk];
    if (writer >= 0)
      tg_emu::fail(what + " reads shared memory " + tg_emu::describe(range) + " that thread " +
                   std::to_string(writer) + " wrote through the generic proxy (at " + tg_emu::hex(16 * chunk) +
                   ") with no fence.proxy.async between its write and this read");
  }
}

// The instruction's issue, by each thread of the warpgroup. Lane 0 of each
// warp registers the footprint (until that warp's wait_group retires it)
// and checks it.
inline void tg_emu_wgmma_issue(tg_emu::WgmmaOp op) {
  tg_emu::ThreadState& t = tg_emu::me();
  if (op.type >= 2 && (op.trans_a || op.trans_b || op.a_registers))
    tg_emu::fail("fp8 wgmma reads both operands K-major from shared memory (no transpose, no register A)");
  if (t.thread.x % 32 == 0) {
    std::string what = "a wgmma m64n" + std::to_string(op.n) + " of warp " + std::to_string(t.thread.x / 32) +
                       " (warpgroup " + std::to_string(t.thread.x / 128) + ")";
    std::vector<tg_emu::Range> ranges{tg_emu_desc_footprint(op.b, op.trans_b != 0, op.n, op.type)};
    if (!op.a_registers) ranges.push_back(tg_emu_desc_footprint(op.a, op.trans_a != 0, 64, op.type));
    for (tg_emu::Range r : ranges) {
      tg_emu_check_async_read(*t.cta, r, what);
      t.cta->async_reads.push_back({r, static_cast<int>(t.thread.x), op.group, what});
    }
  }
  t.wgmmas.push_back(std::move(op));
}

void tg_emu_wgmma(float* d, unsigned long long a, unsigned long long b, int n, int type, int trans_a, int trans_b,
                  int scale_d) {
  tg_emu_wgmma_issue({d, a, b, n, type, trans_a, trans_b, tg_emu::me().wgmma_groups, scale_d != 0});
}
void tg_emu_wgmma_reg(float* d, const unsigned* a, unsigned long long b, int n, int type, int trans_b,
                      int scale_d) {
  std::array<unsigned, 4> mine;
  std::memcpy(mine.data(), a, sizeof mine);
  auto all = std::make_shared<std::array<std::array<unsigned, 4>, 32>>(tg_emu::warp_exchange(mine));
  tg_emu_wgmma_issue({d, 0, b, n, type, 0, trans_b, tg_emu::me().wgmma_groups, scale_d != 0, std::move(all)});
}
#endif  // TG_EMU_RUNTIME
inline void tg_wgmma_fence() {}
inline void tg_wgmma_commit() {
  ++tg_emu::me().wgmma_groups;
  tg_emu::yield();
}
inline void tg_pin(float&) {}
inline void tg_pin(int&) {}

// Generic-proxy writes of this thread become visible to the async proxy.
void tg_fence_proxy_async();
#ifdef TG_EMU_RUNTIME
void tg_fence_proxy_async() {
  tg_emu::ThreadState& t = tg_emu::me();
  int self = static_cast<int>(t.thread.x);
  for (unsigned chunk : t.unfenced)
    if (t.cta->unfenced_writer[chunk] == self) t.cta->unfenced_writer[chunk] = -1;
  t.unfenced.clear();
}
#endif

// wait_group n (of the instruction's template argument) is warp-collective
// (.sync.aligned): no lane of the warp goes on before every lane's retired
// wgmmas have read their operands.
void tg_emu_wgmma_wait(int n);
#ifdef TG_EMU_RUNTIME
void tg_emu_wgmma_wait(int n) {
  tg_emu::ThreadState& t = tg_emu::me();
  int l = tg_emu::lane(), quarter = static_cast<int>(t.thread.x / 32) % 4;
  int retired_below = t.wgmma_groups - n;
  std::vector<tg_emu::WgmmaOp> left;
  for (const tg_emu::WgmmaOp& w : t.wgmmas) {
    if (w.group >= retired_below) {
      left.push_back(w);
      continue;
    }
    int k_size = w.type >= 2 ? 32 : 16;
    for (int i = 0; i < w.n / 8; ++i)
      for (int c = 0; c < 4; ++c) {
        int row = 16 * quarter + l / 4 + 8 * (c / 2), col = 8 * i + 2 * (l % 4) + c % 2;
        double sum = 0;
        for (int k = 0; k < k_size; ++k) {
          double a;
          if (w.a_registers) {
            TgEmuPlace p = tg_emu_a_place(0, row - 16 * quarter, k);
            a = tg_emu_element(0, w.type, (*w.a_registers)[static_cast<size_t>(p.lane)][static_cast<size_t>(p.reg)],
                               p.byte);
          } else {
            a = tg_emu_desc_element(w.a, w.trans_a != 0, row, k, w.type);
          }
          sum += a * tg_emu_desc_element(w.b, w.trans_b != 0, col, k, w.type);
        }
        float& out = w.d[4 * i + c];
        out = w.accumulate ? static_cast<float>(out + sum) : static_cast<float>(sum);
      }
  }
  t.wgmmas = std::move(left);
  tg_emu::warp_sync();
  if (t.thread.x % 32 == 0) {
    auto& reads = t.cta->async_reads;
    int self = static_cast<int>(t.thread.x);
    reads.erase(std::remove_if(reads.begin(), reads.end(),
                               [&](const tg_emu::AsyncRead& r) {
                                 return !r.store && r.thread == self && r.group < retired_below;
                               }),
                reads.end());
  }
}
#endif  // TG_EMU_RUNTIME
template <int N>
void tg_wgmma_wait() { tg_emu_wgmma_wait(N); }
