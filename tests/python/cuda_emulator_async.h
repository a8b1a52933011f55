// Hopper's asynchronous proxy in the host CUDA emulator (included by
// cuda_emulator.h, part 2): the bodies of the TG_HOOK(op, ...) helpers of
// src/backends/cuda/prelude_async.h (and of the prototypes' own helpers in
// tools/hopper), tensor maps and the launch.
//
// What is modelled, after the PTX ISA:
// - mbarriers: arrivals expected per phase, pending arrivals and transaction
//   bytes; a phase completes when both reach zero; try_wait.parity(p) is true
//   once the phase of parity p has completed (so right away for the phase
//   before the current one). try_wait suspends until then (the device's time
//   limit is infinite here): a waiter that never wakes is a deadlock.
// - bulk tensor copies (TMA loads): issued now, landing later (at a random
//   point the scheduler picks, or, at the latest, when a thread waits on an
//   incomplete phase of their mbarrier): the box of the tensor map at the
//   coordinates, out-of-bounds elements zero-filled, laid out densely and
//   swizzled (none, 32, 64, 128 bytes) at the shared address, then complete_tx
//   of the whole box's bytes on the mbarrier. A copy landing in a later phase
//   than the one it was issued in means that phase completed without its
//   bytes (expect_tx missing or too small): reported.
// - TMA stores: a bulk group per commit; wait_group(.read) lands them (read
//   shared memory, write the in-bounds part of the box). TMA reductions
//   (cp.reduce.async.bulk.tensor) likewise, each in-bounds element updated
//   by an atomic of its own, for the element types and operations the PTX
//   ISA lists for them (others are reported at the issue).
// - shared-memory races of the async proxy: a copy into bytes an in-flight
//   wgmma reads or another copy is still filling, a wgmma reading bytes a
//   copy has not landed in yet, stmatrix overwriting the source of a store
//   not yet read, an async read (wgmma, TMA store) of bytes written by
//   stmatrix without fence.proxy.async by the writer, a copy signalling an
//   mbarrier initialized without fence.mbarrier_init.
// - named barriers with thread counts, the cluster barrier, setmaxnreg with
//   the CTA's register pool (launch registers x threads).
// - clusters along x: every CTA of a cluster runs at once; remote arrivals
//   (mapa) and multicast copies reach the partner's barriers and memory.
// Not modelled: memory ordering beyond program order (everything a thread
// writes is visible at once to the generic proxy), cp.async and plain stores
// as generic-proxy writes for the fence check (only stmatrix is tracked),
// im2col and interleaved tensor maps, element strides other than 1,
// L2 promotion and cache hints.
//
// All of it is the runtime's (TG_EMU_RUNTIME): a unit sees the hooks'
// declarations (cuda_emulator.h, part 1), tg_emu::launch's and the launcher's
// templates at the end; Python finds tg_emu_encode_tensor_map_tiled and
// tg_emu_configure through the unit's library, which links the runtime's.

#ifdef TG_EMU_RUNTIME

// --- tensor maps ----------------------------------------------------------------------------------------------------
// What the emulator keeps in the 128 bytes of a CUtensorMap (TgTensorMap):
// the arguments of cuTensorMapEncodeTiled, as tg_emu_encode_tensor_map_tiled
// (the host side of a launch) wrote them.
struct TgEmuTensorMap {
  unsigned magic;
  unsigned char data_type, rank, interleave, swizzle, l2_promotion, oob_fill, element_bytes, unused;
  unsigned long long address;
  unsigned long long dims[5];
  unsigned long long strides[4];  // bytes between consecutive indices of dims 1..rank-1
  unsigned short box[5];
  unsigned char element_strides[5];
};
static_assert(sizeof(TgEmuTensorMap) <= 128, "a tensor map is 128 bytes");
inline constexpr unsigned kTgEmuTensorMapMagic = 0x4d544754;  // "TGTM"

// CUtensorMapDataType: element bytes, 0 for an unknown type.
inline int tg_emu_data_type_bytes(int type) {
  static const int bytes[] = {1, 2, 4, 4, 8, 8, 2, 4, 8, 2, 4, 4, 4};
  return type >= 0 && type < 13 ? bytes[type] : 0;
}
inline bool tg_emu_data_type_float(int type) { return type >= 6; }

// cuTensorMapEncodeTiled's inputs and checks (CUtensorMapDataType,
// CUtensorMapInterleave, CUtensorMapSwizzle, CUtensorMapL2promotion and
// CUtensorMapFloatOOBfill as their enum values): nullptr when encoded, else
// what the driver would refuse.
extern "C" const char* tg_emu_encode_tensor_map_tiled(void* out, int data_type, unsigned rank, void* address,
                                                      const unsigned long long* dims,
                                                      const unsigned long long* strides, const unsigned* box,
                                                      const unsigned* element_strides, int interleave, int swizzle,
                                                      int l2_promotion, int oob_fill) {
  static thread_local std::string reason;
  auto refuse = [](std::string why) {
    reason = std::move(why);
    return reason.c_str();
  };
  int bytes = tg_emu_data_type_bytes(data_type);
  if (bytes == 0) return refuse("unknown data type " + std::to_string(data_type));
  if (rank < 1 || rank > 5) return refuse("rank must be 1..5");
  if (interleave != 0) return refuse("interleaved tensor maps are not emulated");
  if (swizzle < 0 || swizzle > 3) return refuse("unknown swizzle");
  if (oob_fill < 0 || oob_fill > 1 || (oob_fill == 1 && !tg_emu_data_type_float(data_type)))
    return refuse("NaN fill wants a floating-point type");
  if (reinterpret_cast<uintptr_t>(address) % 16) return refuse("the global address must be 16-byte aligned");
  TgEmuTensorMap m{};
  m.magic = kTgEmuTensorMapMagic;
  m.data_type = static_cast<unsigned char>(data_type);
  m.rank = static_cast<unsigned char>(rank);
  m.swizzle = static_cast<unsigned char>(swizzle);
  m.l2_promotion = static_cast<unsigned char>(l2_promotion);
  m.oob_fill = static_cast<unsigned char>(oob_fill);
  m.element_bytes = static_cast<unsigned char>(bytes);
  m.address = reinterpret_cast<uintptr_t>(address);
  for (unsigned i = 0; i < rank; ++i) {
    if (dims[i] == 0 || dims[i] > (1ull << 32)) return refuse("globalDim[" + std::to_string(i) + "] must be 1..2^32");
    if (box[i] == 0 || box[i] > 256) return refuse("boxDim[" + std::to_string(i) + "] must be 1..256");
    if (element_strides[i] == 0 || element_strides[i] > 8)
      return refuse("elementStrides[" + std::to_string(i) + "] must be 1..8");
    m.dims[i] = dims[i];
    m.box[i] = static_cast<unsigned short>(box[i]);
    m.element_strides[i] = static_cast<unsigned char>(element_strides[i]);
  }
  for (unsigned i = 0; i + 1 < rank; ++i) {
    if (strides[i] % 16 || strides[i] >= (1ull << 40))
      return refuse("globalStrides[" + std::to_string(i) + "] must be a multiple of 16 below 2^40");
    m.strides[i] = strides[i];
  }
  unsigned inner = box[0] * static_cast<unsigned>(bytes);
  if (inner % 16) return refuse("the inner box dim must be a multiple of 16 bytes");
  if (swizzle != 0 && inner > (16u << swizzle))
    return refuse("the inner box dim (" + std::to_string(inner) + " bytes) exceeds the swizzle span (" +
                  std::to_string(16u << swizzle) + ")");
  std::memset(out, 0, 128);
  std::memcpy(out, &m, sizeof m);
  return nullptr;
}

inline const TgEmuTensorMap& tg_emu_map(const void* map) {
  const auto* m = static_cast<const TgEmuTensorMap*>(map);
  if (m->magic != kTgEmuTensorMapMagic)
    tg_emu::fail("a TMA operation's tensor map was not encoded by tg_emu_encode_tensor_map_tiled");
  for (int i = 0; i < m->rank; ++i)
    if (m->element_strides[i] != 1) tg_emu::fail("tensor maps with element strides other than 1 are not emulated");
  return *m;
}

inline unsigned tg_emu_box_bytes(const TgEmuTensorMap& m) {
  unsigned n = m.element_bytes;
  for (int i = 0; i < m.rank; ++i) n *= m.box[i];
  return n;
}

// The shared-memory byte of box byte `offset` at `dst` (the swizzle XORs
// address bits [4, 4 + s) with bits [7, 7 + s)).
inline unsigned tg_emu_swizzled(const TgEmuTensorMap& m, unsigned dst, unsigned offset) {
  unsigned a = dst + offset;
  if (m.swizzle == 0) return a;
  unsigned mask = (1u << m.swizzle) - 1;
  return a ^ (((a >> 7) & mask) << 4);
}

// Calls f(box byte offset, global address or nullptr when out of bounds) for
// every element of the box at `coords`.
template <class F>
void tg_emu_for_box(const TgEmuTensorMap& m, const int* coords, F f) {
  unsigned count = tg_emu_box_bytes(m) / m.element_bytes;
  for (unsigned e = 0; e < count; ++e) {
    unsigned rest = e;
    bool inside = true;
    unsigned long long address = m.address;
    for (int i = 0; i < m.rank; ++i) {
      long long c = static_cast<long long>(coords[i]) + rest % m.box[i];
      rest /= m.box[i];
      if (c < 0 || static_cast<unsigned long long>(c) >= m.dims[i]) inside = false;
      address += static_cast<unsigned long long>(c) * (i == 0 ? m.element_bytes : m.strides[i - 1]);
    }
    f(e * m.element_bytes, inside ? reinterpret_cast<unsigned char*>(address) : nullptr);
  }
}

// --- mbarriers ------------------------------------------------------------------------------------------------------
inline tg_emu::MBarrier& tg_emu_mbarrier(tg_emu::Cta& cta, unsigned bar) {
  auto it = cta.mbarriers.find(bar);
  if (it == cta.mbarriers.end())
    tg_emu::fail("mbarrier at shared " + tg_emu::hex(bar) + (cta.cluster->ctas.size() > 1 ? " of CTA " + std::to_string(cta.rank) : "") +
                 " used before mbarrier.init");
  return it->second;
}

inline std::string tg_emu_mbarrier_state(const tg_emu::Cta& cta, unsigned bar, const tg_emu::MBarrier& b) {
  std::string s = "mbarrier at shared " + tg_emu::hex(bar);
  if (cta.cluster->ctas.size() > 1) s += " of CTA " + std::to_string(cta.rank);
  return s + " (phase " + std::to_string(b.phase) + ": " + std::to_string(b.pending) + " of " +
         std::to_string(b.count) + " arrivals and " + std::to_string(b.tx) + " transaction bytes pending)";
}

inline void tg_emu_mbarrier_settle(tg_emu::MBarrier& b) {
  if (b.pending == 0 && b.tx == 0) {
    ++b.phase;
    b.pending = b.count;
    tg_emu::touch();
  }
}

void tg_emu_mbar_init(unsigned bar, unsigned count) {
  tg_emu::ThreadState& t = tg_emu::me();
  if (bar % 8) tg_emu::fail("mbarrier.init at shared " + tg_emu::hex(bar) + ": not 8-byte aligned");
  if (count == 0 || count >= (1u << 20)) tg_emu::fail("mbarrier.init: count " + std::to_string(count) + " outside 1..2^20-1");
  tg_emu::MBarrier b;
  b.count = b.pending = count;
  b.init_thread = static_cast<int>(t.thread.x);
  t.cta->mbarriers[bar] = b;
}
void tg_emu_fence_mbar_init() {
  tg_emu::ThreadState& t = tg_emu::me();
  for (auto& [bar, b] : t.cta->mbarriers)
    if (b.init_thread == static_cast<int>(t.thread.x)) b.fenced = true;
  tg_fence_proxy_async();
}

inline void tg_emu_mbarrier_arrive(tg_emu::Cta& cta, unsigned bar, unsigned expect_bytes) {
  tg_emu::MBarrier& b = tg_emu_mbarrier(cta, bar);
  if (b.pending == 0)
    tg_emu::fail("one arrival too many on " + tg_emu_mbarrier_state(cta, bar, b) + " by " + tg_emu::thread_name(tg_emu::me()));
  b.tx += expect_bytes;
  --b.pending;
  tg_emu_mbarrier_settle(b);
  tg_emu::touch();
  tg_emu::yield();
}
void tg_emu_mbar_arrive(unsigned bar) { tg_emu_mbarrier_arrive(*tg_emu::me().cta, bar, 0); }
void tg_emu_mbar_arrive_expect_tx(unsigned bar, unsigned bytes) {
  tg_emu_mbarrier_arrive(*tg_emu::me().cta, bar, bytes);
}
// mapa + a remote arrive: the barrier at the same offset in CTA `cta`.
void tg_emu_mbar_arrive_cluster(unsigned bar, unsigned cta) {
  tg_emu::Cluster& c = *tg_emu::me().cta->cluster;
  if (cta >= c.ctas.size()) tg_emu::fail("mapa to CTA " + std::to_string(cta) + " of a cluster of " + std::to_string(c.ctas.size()));
  tg_emu_mbarrier_arrive(*c.ctas[cta], bar, 0);
}

bool tg_emu_mbar_try_wait(unsigned bar, unsigned parity) {
  tg_emu::Cta& cta = *tg_emu::me().cta;
  tg_emu::MBarrier* b = &tg_emu_mbarrier(cta, bar);
  parity &= 1;
  auto complete = [b, parity] { return (b->phase & 1) != parity; };
  if (complete()) return true;
  // The copies that signal this barrier land at the latest now.
  tg_emu::scheduler->land_where([&](const tg_emu::AsyncOp& op) { return op.signals(&cta, bar); });
  if (complete()) return true;
  tg_emu::Cta* c = &cta;
  tg_emu::block(complete, [c, b, bar, parity] {
    std::string s = tg_emu_mbarrier_state(*c, bar, *b) + " to complete its phase of parity " + std::to_string(parity);
    if (b->tx < 0) s += "; more bytes landed than arrive.expect_tx announced";
    if (b->tx > 0) s += "; no copy in flight will deliver those bytes (expect_tx announced too many?)";
    return s;
  });
  return true;
}

// --- TMA: bulk tensor copies and stores -----------------------------------------------------------------------------
unsigned long long tg_emu_async_ids = 0;

struct TgEmuTmaLoad : tg_emu::AsyncOp {
  struct Target {
    tg_emu::Cta* cta;
    unsigned phase;  // of its mbarrier at issue
  };
  TgEmuTensorMap map;
  int coords[5] = {};
  unsigned dst = 0, bar = 0, bytes = 0;
  std::vector<Target> targets;
  unsigned long long id = 0;
  std::string issuer;

  std::string describe() const override {
    std::string c;
    for (int i = 0; i < map.rank; ++i) c += (i ? ", " : "") + std::to_string(coords[i]);
    return "a bulk tensor copy of " + std::to_string(bytes) + " bytes (box at {" + c + "}, issued by " + issuer +
           ", on the mbarrier at " + tg_emu::hex(bar) + ")";
  }
  bool signals(const tg_emu::Cta* cta, unsigned b) const override {
    if (b != bar) return false;
    for (const Target& t : targets)
      if (t.cta == cta) return true;
    return false;
  }
  void land() override {
    std::vector<unsigned char> box(bytes);
    unsigned eb = map.element_bytes;
    bool nan = map.oob_fill == 1;
    tg_emu_for_box(map, coords, [&](unsigned offset, const unsigned char* global) {
      if (global) {
        std::memcpy(&box[offset], global, eb);
      } else if (nan) {  // a quiet NaN of the element's width
        unsigned long long bits = eb == 2 ? (map.data_type == 9 ? 0x7fc0 : 0x7e00) : eb == 4 ? 0x7fc00000 : 0x7ff8000000000000;
        std::memcpy(&box[offset], &bits, eb);
      } else {
        std::memset(&box[offset], 0, eb);
      }
    });
    for (const Target& t : targets) {
      for (unsigned i = 0; i < bytes; i += 16)
        std::memcpy(t.cta->smem.data() + tg_emu_swizzled(map, dst, i), &box[i], std::min(16u, bytes - i));
      auto& in = t.cta->incoming;
      in.erase(std::remove_if(in.begin(), in.end(), [&](const tg_emu::Incoming& x) { return x.id == id; }), in.end());
      tg_emu::MBarrier& b = tg_emu_mbarrier(*t.cta, bar);
      if (b.phase != t.phase)
        tg_emu::fail(describe() + " landed on " + tg_emu_mbarrier_state(*t.cta, bar, b) + ", but was issued in phase " +
                     std::to_string(t.phase) + ": that phase completed without its bytes "
                     "(arrive.expect_tx missing, or announcing too few bytes?)");
      b.tx -= bytes;
      tg_emu_mbarrier_settle(b);
    }
  }
};

// The TMA computes a box's first address from its coordinates and needs it
// 16-byte aligned: on the H200 an innermost coordinate of 3 floats stops the
// kernel with "illegal instruction" (the outer dims move by strides that are
// multiples of 16 bytes, so only the innermost coordinate can break it).
void tg_emu_check_innermost_coordinate(const TgEmuTensorMap& m, int c0, const std::string& what) {
  if (static_cast<long long>(c0) * m.element_bytes % 16 != 0)
    tg_emu::fail(what + " at innermost coordinate " + std::to_string(c0) + " (" +
                 std::to_string(static_cast<long long>(c0) * m.element_bytes) +
                 " bytes): not a multiple of 16 bytes, an illegal instruction on the GPU");
}

// cp.async.bulk.tensor.Nd.shared::cluster.global.mbarrier::complete_tx::bytes
// [.multicast::cluster with a CTA mask].
void tg_emu_tma_load(unsigned dst, const void* map, unsigned bar, int dims, int c0, int c1, int c2,
                     unsigned cta_mask) {
  tg_emu::ThreadState& t = tg_emu::me();
  auto op = std::make_unique<TgEmuTmaLoad>();
  op->map = tg_emu_map(map);
  if (op->map.rank != dims)
    tg_emu::fail("a " + std::to_string(dims) + "-D bulk tensor copy with a tensor map of rank " + std::to_string(op->map.rank));
  tg_emu_check_innermost_coordinate(op->map, c0, "a bulk tensor copy");
  op->coords[0] = c0, op->coords[1] = c1, op->coords[2] = c2;
  op->dst = dst, op->bar = bar, op->bytes = tg_emu_box_bytes(op->map);
  op->id = ++tg_emu_async_ids;
  op->issuer = tg_emu::thread_name(t);
  if (dst % 128) tg_emu::fail("a bulk tensor copy to shared " + tg_emu::hex(dst) + ": not 128-byte aligned");
  tg_emu::Cluster& cluster = *t.cta->cluster;
  std::vector<tg_emu::Cta*> ctas;
  if (cta_mask == 0) {
    ctas.push_back(t.cta);
  } else {
    for (unsigned r = 0; r < 16; ++r)
      if (cta_mask & (1u << r)) {
        if (r >= cluster.ctas.size()) tg_emu::fail("a multicast copy to CTA " + std::to_string(r) + " of a cluster of " + std::to_string(cluster.ctas.size()));
        ctas.push_back(cluster.ctas[r].get());
      }
  }
  tg_emu::Range range{dst, dst + op->bytes};
  for (tg_emu::Cta* cta : ctas) {
    if (range.hi > cta->smem.size()) tg_emu::fail(op->describe() + " writes past the end of shared memory");
    tg_emu::MBarrier& b = tg_emu_mbarrier(*cta, bar);
    if (!b.fenced)
      tg_emu::fail(op->describe() + " signals " + tg_emu_mbarrier_state(*cta, bar, b) +
                   ", which its initializing thread did not follow by fence.mbarrier_init");
    for (const tg_emu::AsyncRead& r : cta->async_reads)
      if (tg_emu::overlaps(r.range, range))
        tg_emu::fail(op->describe() + " into shared " + tg_emu::describe(range) + " while " + r.what + " (issued by thread " +
                     std::to_string(r.thread) + ") still reads " + tg_emu::describe(r.range) +
                     (r.store ? " (no cp.async.bulk.wait_group.read since)"
                              : " (no wgmma.wait_group retired it yet): either the buffer was refilled before its "
                                "readers released it, or the reader went ahead without waiting for this copy (its "
                                "mbarrier phase completed early: wrong parity, arrive.expect_tx missing or too "
                                "small?)"));
    for (const tg_emu::Incoming& in : cta->incoming)
      if (tg_emu::overlaps(in.range, range))
        tg_emu::fail(op->describe() + " into shared " + tg_emu::describe(range) + " while " + in.what +
                     " into the same bytes is still in flight");
    cta->incoming.push_back({range, op->id, op->describe()});
    op->targets.push_back({cta, b.phase});
  }
  tg_emu::scheduler->add_async(std::move(op));
  tg_emu::yield();
}
void tg_emu_prefetch_tensormap(const void* map) { tg_emu_map(map); }

// The operations of cp.reduce.async.bulk.tensor, by the prelude's code
// (TG_TMA_REDUCE in prelude_async.h), and the map data types
// (CUtensorMapDataType) the PTX ISA lists for each: add .u32 .s32 .u64 .f32
// (.f16 .bf16 too, not emulated: the compiler keeps those on pointer
// atomics), min/max .u32 .s32 .u64 .s64, and/or/xor .b32 .b64.
inline const char* tg_emu_reduce_name(int op) {
  static const char* names[] = {"add", "min", "max", "and", "or", "xor"};
  return op >= 0 && op < 6 ? names[op] : "?";
}
inline bool tg_emu_reduces(int op, int data_type) {
  bool word = data_type == 2 || data_type == 3, wide = data_type == 4 || data_type == 5;
  if (op == 0) return word || data_type == 4 || data_type == 7;
  return op >= 1 && op <= 5 && (word || wide);
}

// *global = *global OP *from as one indivisible update, as the hardware
// applies each element's reduction: the emulator's own atomics on the
// same word (cuda_emulator_atomic.h) see all of it or none.
template <class T>
void tg_emu_reduce_element(int op, unsigned char* global, const unsigned char* from) {
  T v;
  std::memcpy(&v, from, sizeof v);
  auto next = [&](T x) -> T {
    if constexpr (std::is_floating_point_v<T>) {
      return x + v;
    } else {
      using U = std::make_unsigned_t<T>;
      switch (op) {
        case 0: return static_cast<T>(static_cast<U>(x) + static_cast<U>(v));  // wraps
        case 1: return v < x ? v : x;
        case 2: return x < v ? v : x;
        case 3: return x & v;
        case 4: return x | v;
        default: return x ^ v;
      }
    }
  };
  std::atomic_ref<T> word(*reinterpret_cast<T*>(global));
  T old = word.load();
  while (!word.compare_exchange_weak(old, next(old))) {
  }
}

struct TgEmuTmaStore : tg_emu::AsyncOp {
  TgEmuTensorMap map;
  int coords[5] = {};
  tg_emu::Cta* cta = nullptr;
  unsigned src = 0, bytes = 0;
  int thread = 0, group = 0;
  unsigned long long id = 0;
  int reduce = -1;  // a store, or the code of a reduction's operation

  std::string describe() const override {
    std::string what = reduce < 0 ? "store" : std::string("reduction (") + tg_emu_reduce_name(reduce) + ")";
    return "a bulk tensor " + what + " of " + std::to_string(bytes) + " bytes from shared " + tg_emu::hex(src) +
           " (issued by thread " + std::to_string(thread) + ")";
  }
  // The source bytes as a wait_group.read of its thread found them: the
  // copy engine has read them, the global writes may land any time later.
  std::vector<unsigned char> read;

  // Its source stays claimed (async_reads) until a wait_group of its thread
  // covers it, however early the store itself lands.
  void land() override {
    tg_emu_for_box(map, coords, [&](unsigned offset, unsigned char* global) {
      unsigned at = tg_emu_swizzled(map, src, offset);
      const unsigned char* from = read.empty() ? cta->smem.data() + at : read.data() + (at - src);
      if (!global) return;  // outside the tensor: left alone
      switch (reduce < 0 ? -1 : map.data_type) {
        case -1: std::memcpy(global, from, map.element_bytes); break;
        case 2: tg_emu_reduce_element<unsigned>(reduce, global, from); break;
        case 3: tg_emu_reduce_element<int>(reduce, global, from); break;
        case 4: tg_emu_reduce_element<unsigned long long>(reduce, global, from); break;
        case 5: tg_emu_reduce_element<long long>(reduce, global, from); break;
        case 7: tg_emu_reduce_element<float>(reduce, global, from); break;
        default: tg_emu::fail("no reduction of data type " + std::to_string(map.data_type));  // refused at issue
      }
    });
  }
  bool outlives_threads() const override { return !read.empty(); }
};

// cp.async.bulk.tensor.Nd.global.shared::cta.bulk_group, and (reduce: the
// operation's code) cp.reduce.async.bulk.tensor.Nd.global.shared::cta.OP.tile.bulk_group.
void tg_emu_bulk_write(const void* map, unsigned src, int dims, int c0, int c1, int c2, int reduce) {
  tg_emu::ThreadState& t = tg_emu::me();
  auto op = std::make_unique<TgEmuTmaStore>();
  op->map = tg_emu_map(map);
  op->reduce = reduce;
  std::string what = reduce < 0 ? "store" : "reduction";
  if (op->map.rank != dims)
    tg_emu::fail("a " + std::to_string(dims) + "-D bulk tensor " + what + " with a tensor map of rank " +
                 std::to_string(op->map.rank));
  if (reduce >= 0 && !tg_emu_reduces(reduce, op->map.data_type))
    tg_emu::fail(std::string("cp.reduce.async.bulk.tensor has no .") + tg_emu_reduce_name(reduce) +
                 " for tensor map data type " + std::to_string(op->map.data_type));
  tg_emu_check_innermost_coordinate(op->map, c0, "a bulk tensor " + what);
  // Written boxes must start inside the tensor: on the H200 a store or reduction at a negative coordinate
  // stops the kernel with "illegal instruction" (loads take them, filling what lies outside).
  for (int i = 0; i < dims; ++i)
    if ((i == 0 ? c0 : i == 1 ? c1 : c2) < 0)
      tg_emu::fail("a bulk tensor " + what + " at coordinate " + std::to_string(i == 0 ? c0 : i == 1 ? c1 : c2) +
                   " of dim " + std::to_string(i) + ": negative, an illegal instruction on the GPU");
  op->coords[0] = c0, op->coords[1] = c1, op->coords[2] = c2;
  op->cta = t.cta, op->src = src, op->bytes = tg_emu_box_bytes(op->map);
  op->thread = static_cast<int>(t.thread.x), op->group = t.bulk_groups, op->id = ++tg_emu_async_ids;
  if (src % 128) tg_emu::fail("a bulk tensor " + what + " from shared " + tg_emu::hex(src) + ": not 128-byte aligned");
  tg_emu::Range range{src, src + op->bytes};
  if (range.hi > t.cta->smem.size()) tg_emu::fail(op->describe() + " reads past the end of shared memory");
  tg_emu_check_async_read(*t.cta, range, op->describe());
  t.cta->async_reads.push_back({range, op->thread, op->group, op->describe(), op->id});
  tg_emu::scheduler->add_async(std::move(op));
  tg_emu::yield();
}
void tg_emu_tma_store(const void* map, unsigned src, int dims, int c0, int c1, int c2) {
  tg_emu_bulk_write(map, src, dims, c0, c1, c2, -1);
}
void tg_emu_tma_reduce(const void* map, unsigned src, int dims, int c0, int c1, int c2, int op) {
  tg_emu_bulk_write(map, src, dims, c0, c1, c2, op);
}
void tg_emu_bulk_commit() {
  ++tg_emu::me().bulk_groups;
  tg_emu::yield();
}
// wait_group N: the stores (and reductions) of every group but the N most
// recent land now.
// wait_group.read N: their sources have been read (their shared memory is
// free again); their global writes still land at any later point, up to
// after the kernel's threads have exited.
void tg_emu_bulk_wait(int n, bool read) {
  tg_emu::ThreadState& t = tg_emu::me();
  int thread = static_cast<int>(t.thread.x), below = t.bulk_groups - n;
  tg_emu::Cta* cta = t.cta;
  auto covered = [&](const tg_emu::AsyncOp& op) {
    auto* s = dynamic_cast<const TgEmuTmaStore*>(&op);
    return s && s->cta == cta && s->thread == thread && s->group < below;
  };
  if (read) {
    tg_emu::scheduler->for_each_async([&](tg_emu::AsyncOp& op) {
      auto& s = static_cast<TgEmuTmaStore&>(op);
      if (covered(op) && s.read.empty()) s.read.assign(cta->smem.begin() + s.src, cta->smem.begin() + s.src + s.bytes);
    });
  } else {
    tg_emu::scheduler->land_where(covered);
  }
  auto& reads = cta->async_reads;
  reads.erase(std::remove_if(reads.begin(), reads.end(),
                             [&](const tg_emu::AsyncRead& r) { return r.store && r.thread == thread && r.group < below; }),
              reads.end());
}

// --- stmatrix -------------------------------------------------------------------------------------------------------
// Lane l writes row l % 8 of matrix l / 8 at its address: word q of that row
// is register l / 8 of lane 4 (l % 8) + q. A generic-proxy write: it stays
// unfenced until this lane's fence.proxy.async.
void tg_emu_stmatrix_x4(unsigned address, unsigned r0, unsigned r1, unsigned r2, unsigned r3) {
  struct Mine {
    unsigned address, r[4];
  };
  std::array<Mine, 32> all = tg_emu::warp_exchange(Mine{address, {r0, r1, r2, r3}});
  tg_emu::ThreadState& t = tg_emu::me();
  int l = tg_emu::lane();
  if (address % 16) tg_emu::fail("stmatrix row address " + tg_emu::hex(address) + ": not 16-byte aligned");
  tg_emu::Range range{address, address + 16};
  if (range.hi > t.cta->smem.size()) tg_emu::fail("stmatrix writes past the end of shared memory");
  for (const tg_emu::AsyncRead& r : t.cta->async_reads)
    if (tg_emu::overlaps(r.range, range))
      tg_emu::fail("stmatrix by " + tg_emu::thread_name(t) + " writes shared " + tg_emu::describe(range) + " that " +
                   r.what + " still reads" +
                   (r.store ? " (no cp.async.bulk.wait_group.read by its thread since)" : " (no wgmma.wait_group since)"));
  for (const tg_emu::Incoming& in : t.cta->incoming)
    if (tg_emu::overlaps(in.range, range))
      tg_emu::fail("stmatrix writes shared " + tg_emu::describe(range) + " while " + in.what + " into it is in flight");
  for (int q = 0; q < 4; ++q)
    std::memcpy(tg_emu::shared() + address + 4 * q, &all[static_cast<size_t>(4 * (l % 8) + q)].r[l / 8], 4);
  t.cta->unfenced_writer[address / 16] = static_cast<int>(t.thread.x);
  t.unfenced.push_back(address / 16);
}

// --- named barriers, clusters -----------------------------------------------------------------------------------------
void tg_emu_named_barrier(int id, int threads, bool wait) {
  tg_emu::Cta& cta = *tg_emu::me().cta;
  if (id < 0 || id > 15) tg_emu::fail("named barrier " + std::to_string(id) + ": ids are 0..15");
  if (threads <= 0 || threads % 32 || threads > cta.threads)
    tg_emu::fail("named barrier " + std::to_string(id) + " with " + std::to_string(threads) +
                 " threads: a multiple of 32, at most the CTA's " + std::to_string(cta.threads));
  tg_emu::barrier_arrive(cta.named[id], threads, wait, "named barrier " + std::to_string(id));
  if (!wait) tg_emu::yield();
}
unsigned tg_emu_cluster_ctarank() { return static_cast<unsigned>(tg_emu::me().cta->rank); }
unsigned tg_emu_cluster_id_x() { return tg_emu::me().block.x / tg_emu::cluster_dim.x; }
unsigned tg_emu_cluster_count_x() { return tg_emu::grid_dim.x / tg_emu::cluster_dim.x; }
void tg_emu_cluster_sync() {
  tg_emu::Cluster& c = *tg_emu::me().cta->cluster;
  tg_emu::barrier_arrive(c.sync, c.threads, true, "barrier.cluster");
}

// --- setmaxnreg -------------------------------------------------------------------------------------------------------
// Per warp (all four of a warpgroup execute it): dec returns registers to the
// CTA's pool, inc waits until the pool has them.
void tg_emu_setmaxnreg(int n, bool inc) {
  const char* what = inc ? "setmaxnreg.inc" : "setmaxnreg.dec";
  std::array<int, 32> all = tg_emu::warp_exchange(n);
  tg_emu::ThreadState& t = tg_emu::me();
  tg_emu::Cta* cta = t.cta;
  tg_emu::Warp* w = &tg_emu::warp();
  int warp = static_cast<int>(t.thread.x / 32);
  for (int v : all)
    if (v != n) tg_emu::fail(std::string(what) + ": the lanes of warp " + std::to_string(warp) + " ask for different counts");
  if (n < 24 || n > 256 || n % 8)
    tg_emu::fail(std::string(what) + " " + std::to_string(n) + ": the count must be a multiple of 8 in [24, 256]");
  if (cta->launch_registers == 0)
    tg_emu::fail(std::string(what) + ": the launch did not say how many registers a thread starts with (registers=)");
  if (inc ? n < w->registers : n > w->registers)
    tg_emu::fail(std::string(what) + " " + std::to_string(n) + " in warp " + std::to_string(warp) + ", which holds " +
                 std::to_string(w->registers) + " registers per thread");
  if (tg_emu::lane() != 0) {
    tg_emu::block([w, n] { return w->registers == n; }, [] { return std::string("lane 0 of its warp"); });
    return;
  }
  long long need = 32LL * (n - w->registers);
  if (inc)
    tg_emu::block([cta, need] { return cta->register_pool >= need; },
                  [cta, need, n, warp] {
                    return "setmaxnreg.inc " + std::to_string(n) + " in warp " + std::to_string(warp) + ": it needs " +
                           std::to_string(need) + " registers from the CTA's pool, which holds " +
                           std::to_string(cta->register_pool) + " (" + std::to_string(cta->launch_registers) +
                           " per thread at launch; the other warpgroups' setmaxnreg.dec free what .inc takes)";
                  });
  cta->register_pool -= need;
  w->registers = n;
  tg_emu::touch();
}

// --- the prototypes' arithmetic helpers (tools/hopper) ------------------------------------------------------------------
// cvt.rn.{f16,bf16}x2.f32 of (hi, lo): lo in bits 0..15.
unsigned tg_emu_pack2(float lo, float hi, bool f16) {
  unsigned a = f16 ? tg_f32_to_f16(lo) : tg_f32_to_bf16(lo), b = f16 ? tg_f32_to_f16(hi) : tg_f32_to_bf16(hi);
  return a | (b << 16);
}
float tg_emu_ex2(float x) { return tg_exp2(x); }
// lg2.approx.ftz.f32: subnormal inputs flush to zero (-inf).
float tg_emu_lg2(float x) {
  if (std::fabs(x) < std::numeric_limits<float>::min()) x = 0.0f;
  return std::log2(x);
}
#endif  // TG_EMU_RUNTIME

// --- the launch -------------------------------------------------------------------------------------------------------
namespace tg_emu {

// Runs `kernel` over the grid, one cluster (of launch_options.cluster_x CTAs
// along x) after the other; the first error found, or "".
std::string launch(Dim3 grid, unsigned threads, unsigned shared_bytes, const std::function<void()>& kernel);

#ifdef TG_EMU_RUNTIME
struct LaunchOptions {
  unsigned cluster_x = 1;
  int registers = 0;  // per thread at launch, for setmaxnreg; 0: not accounted
  unsigned long long seed = 0;
  double land_rate = 0.02;  // chance per scheduling step that an op in flight lands
};
LaunchOptions launch_options;

// What a thread must not leave behind.
inline void check_thread_exit(ThreadState& t) {
  for (const AsyncRead& r : t.cta->async_reads)
    if (r.store && r.thread == static_cast<int>(t.thread.x))
      fail(thread_name(t) + " exited before " + r.what +
           " read its source (cp.async.bulk.wait_group.read missing before the CTA's shared memory goes)");
  if (!t.wgmmas.empty())
    fail(thread_name(t) + " exited with " + std::to_string(t.wgmmas.size()) + " wgmma(s) no wgmma.wait_group retired");
}

std::string launch(Dim3 grid, unsigned threads, unsigned shared_bytes, const std::function<void()>& kernel) {
  const LaunchOptions options = launch_options;
  if (options.cluster_x == 0 || grid.x % options.cluster_x)
    return "the grid's x (" + std::to_string(grid.x) + ") is not a multiple of the cluster size";
  grid_dim = grid;
  block_dim = {threads, 1, 1};
  cluster_dim = {options.cluster_x, 1, 1};
  unsigned long long index = 0;
  for (unsigned z = 0; z < grid.z; ++z)
    for (unsigned y = 0; y < grid.y; ++y)
      for (unsigned x0 = 0; x0 < grid.x; x0 += options.cluster_x, ++index) {
        Cluster cluster;
        cluster.threads = static_cast<int>(threads * options.cluster_x);
        Scheduler s(options.seed * 0x9E3779B97F4A7C15ull + index, options.land_rate);
        s.at_thread_exit = check_thread_exit;
        scheduler = &s;
        for (unsigned r = 0; r < options.cluster_x; ++r) {
          auto cta = std::make_unique<Cta>();
          cta->cluster = &cluster;
          cta->rank = static_cast<int>(r);
          cta->block = {x0 + r, y, z};
          cta->threads = static_cast<int>(threads);
          // Garbage, like real shared memory, so unwritten reads show.
          cta->smem.assign(shared_bytes + 16, 0xA5);
          cta->unfenced_writer.assign(cta->smem.size() / 16 + 1, -1);
          cta->launch_registers = options.registers;
          for (unsigned w = 0; w < (threads + 31) / 32; ++w) {
            cta->warps.push_back(std::make_unique<Warp>());
            cta->warps.back()->registers = options.registers;
          }
          for (unsigned t = 0; t < threads; ++t) {
            ThreadState state;
            state.thread = {t, 0, 0};
            state.block = cta->block;
            state.cta = cta.get();
            s.spawn(std::move(state), kernel);
          }
          cluster.ctas.push_back(std::move(cta));
        }
        std::string error = s.run();
        scheduler = nullptr;
        if (!error.empty())
          return "block (" + std::to_string(x0) + ", " + std::to_string(y) + ", " + std::to_string(z) + "): " + error;
      }
  return "";
}
#endif  // TG_EMU_RUNTIME

}  // namespace tg_emu

#ifdef TG_EMU_RUNTIME
// The options of the next launches (cuda_emulator.py sets them).
extern "C" void tg_emu_configure(unsigned cluster_x, int registers, unsigned long long seed, double land_rate) {
  tg_emu::launch_options = {cluster_x, registers, seed, land_rate};
}
#endif

// Runs `kernel` (a __global__ function of the unit) with args[i] pointing
// at its i-th argument; the first error found, or nullptr.
template <class... P, size_t... I>
void tg_emu_call(void (*kernel)(P...), void** args, std::index_sequence<I...>) {
  kernel(*static_cast<std::remove_cv_t<std::remove_reference_t<P>>*>(args[I])...);
}
template <class... P>
const char* tg_emu_run(void (*kernel)(P...), void** args, unsigned gx, unsigned gy, unsigned gz, unsigned threads,
                       unsigned shared_bytes) {
  static std::string error;
  error = tg_emu::launch({gx, gy, gz}, threads, shared_bytes,
                         [=] { tg_emu_call(kernel, args, std::index_sequence_for<P...>{}); });
  return error.empty() ? nullptr : error.c_str();
}
