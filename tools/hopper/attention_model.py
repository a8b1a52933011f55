"""A CPU model of ws_attention.cu's shared-memory layouts, register fragments and barrier protocol.

    python3 tools/hopper/attention_model.py     # (bench_attention.py --self-test runs it too)

Layouts: every element of Q, K and V a TMA box writes (128-byte swizzle) is where the kernel's wgmma descriptors
read it (S = Q K^T with both operands K-major; O += P V with V read MN-major), decoded as protocol_model.py does
for the matmul; and P, packed from S's accumulator fragment into 32-bit words, is the register A fragment of the
PV wgmma (mma.sync's m16n8k16 A layout per warp, as the PTX ISA draws it for wgmma with A in registers).

Protocol: the producer thread, the eight consumer warps (two warpgroups), the TMA copies in flight and every warp's
wgmma groups in flight are actors of protocol_model's random scheduler, written to mirror the kernel's loops:
Q's buffer with one phase per tile, the K and V rings, the named barriers of the ping-pong. A run fails when a GEMM
reads a buffer holding other data than its (tile, block), when a copy lands in a buffer a wgmma group still reads,
on deadlock, when a named barrier completes without the warpgroup whose turn it hands over, when one is left
half-arrived at exit, when the consumers' GEMM issues do not alternate (ping-pong), or when a tile is not
computed by both consumers. Each mutation of the protocol must be caught.
"""

import sys

import protocol_model
from protocol_model import Barrier, Interleaving, ProtocolError, desc_element, tma_box_element, wgmma_desc

BM = 128


# --- layouts --------------------------------------------------------------------------------------------------------
def check_layouts(v) -> None:
    """Q, K and V descriptors at two buffers against the TMA boxes; P's packing against the A fragment."""
    base = 1024 * 5
    q_bytes, kv = BM * v.d * 2, v.bn * v.d * 2
    q, k_ring, v_ring = base, base + q_bytes, base + q_bytes + v.stages * kv
    for cw in range(2):  # S = Q K^T: A = this consumer's 64 rows of Q, B = K [keys][D], both K-major
        q_desc = wgmma_desc(q + 64 * cw * 128, 16, 1024)
        for stage in (0, v.stages - 1):
            k_desc = wgmma_desc(k_ring, 16, 1024) + ((stage * kv) >> 4)
            for kk in range(v.d // 16):
                q_off = (kk // 4) * BM * 128 + (kk % 4) * 32
                k_off = (kk // 4) * v.bn * 128 + (kk % 4) * 32
                for k in range(16):
                    col = 16 * kk + k  # of D
                    for mn in range(64):
                        want = tma_box_element(q + (col // 64) * BM * 128, 64 * cw + mn, col % 64)
                        assert desc_element(q_desc + (q_off >> 4), False, mn, k) == want, (v.name, "Q", cw, kk, mn, k)
                    for n in range(v.bn):
                        want = tma_box_element(k_ring + stage * kv + (col // 64) * v.bn * 128, n, col % 64)
                        assert desc_element(k_desc + (k_off >> 4), False, n, k) == want, (v.name, "K", stage, kk, n)
    for stage in (0, v.stages - 1):  # O += P V: B = V [keys][D], N (= D) contiguous: MN-major
        v_desc = wgmma_desc(v_ring, v.bn * 128, 1024) + ((stage * kv) >> 4)
        for kk in range(v.bn // 16):
            for k in range(16):
                key = 16 * kk + k
                for n in range(v.d):
                    want = tma_box_element(v_ring + stage * kv + (n // 64) * v.bn * 128, key, n % 64)
                    assert desc_element(v_desc + ((kk * 16 * 128) >> 4), True, n, k) == want, (v.name, "V", kk, n, k)
    check_p_fragment(v.bn)


def accumulator_place(lane: int, reg: int) -> tuple:
    """(row within the warp's 16, column) of accumulator register `reg` of `lane` (m64nN, fp32)."""
    i, c = divmod(reg, 4)
    return lane // 4 + 8 * (c // 2), 8 * i + 2 * (lane % 4) + c % 2


def a_fragment_place(lane: int, reg: int, half: int) -> tuple:
    """(row within the warp's 16, k) of 16-bit half `half` of A-fragment register `reg` of `lane` (m16n8k16's A:
    registers 0..3 = rows +0/+8 x k 0..7, then k 8..15)."""
    return lane // 4 + 8 * (reg % 2), 8 * (reg // 2) + 2 * (lane % 4) + half


def check_p_fragment(bn: int) -> None:
    """tg_attn_pack: word w of a lane packs accumulator registers 2w (low half) and 2w + 1; the PV wgmma's k16 step
    kk takes words 4 kk .. 4 kk + 3 as its A fragment. Every element must land where the A layout wants it."""
    for lane in range(32):
        for w in range(bn // 4):
            kk, reg = divmod(w, 4)
            for half in range(2):
                row, col = accumulator_place(lane, 2 * w + half)
                a_row, a_k = a_fragment_place(lane, reg, half)
                assert (row, col) == (a_row, 16 * kk + a_k), (bn, lane, w, half)


# --- the protocol ---------------------------------------------------------------------------------------------------
class Cta:
    def __init__(self, v, mutations):
        self.q_full, self.q_empty = Barrier(1, "q_full"), Barrier(8, "q_empty")
        self.k_full = [Barrier(1, f"k_full[{s}]") for s in range(v.stages)]
        self.k_empty = [Barrier(8, f"k_empty[{s}]") for s in range(v.stages)]
        self.v_full = [Barrier(1, f"v_full[{s}]") for s in range(v.stages)]
        self.v_empty = [Barrier(8, f"v_empty[{s}]") for s in range(v.stages)]
        self.tags = {}  # buffer -> the data it holds: ("Q", tile), ("K", tile, block), ("V", tile, block)
        self.readers = {}  # buffer -> wgmma groups reading it
        self.named = {1: NamedTurn(1), 2: NamedTurn(2)}
        self.actors_left, self.exited = 0, False


class NamedTurn:
    """A named barrier of 256 threads used for hand-overs: one warpgroup's bar.sync (4 warps) completes with the
    other's bar.arrive (4 warps). A generation completed by arrivals alone lost a turn."""

    def __init__(self, index: int):
        self.index, self.arrived, self.synced, self.generation = index, 0, 0, 0

    def arrive(self, warps_syncing: int):
        self.arrived += 32
        self.synced += 32 * warps_syncing
        if self.arrived == 256:
            if self.synced != 128:
                raise ProtocolError(f"named barrier {self.index} completed with {self.synced // 32} syncing warps")
            self.arrived, self.synced, self.generation = 0, 0, self.generation + 1


class AttnSimulation(Interleaving):
    """One random interleaving of one CTA walking tiles with the given numbers of K/V blocks."""

    def __init__(self, v, blocks: list, seed: int, mutations=()):
        super().__init__(seed)
        self.v, self.blocks, self.mutations = v, blocks, set(mutations)
        self.cta = Cta(v, self.mutations)
        self.issued = {}  # (consumer, warp) -> groups in issue order
        self.done = set()
        self.turns = []  # consumer of each GEMM issue, in order (warp 0's view)
        self.computed = []
        self.spawn(self.producer(), self.cta)
        for c in range(2):
            for w in range(4):
                self.spawn(self.consumer_warp(c, w), self.cta)

    def copy(self, buffer, tag, barrier, nbytes):
        cta = self.cta

        def land():
            if cta.readers.get(buffer):
                raise ProtocolError(f"{tag} lands in {buffer} while wgmma groups {sorted(cta.readers[buffer])} read it")
            cta.tags[buffer] = tag
            barrier.complete_tx(nbytes)
        self.async_events.append((land, 1.0))

    def producer(self):
        v, cta = self.v, self.cta
        ring = {"K": [0, 0], "V": [0, 0]}  # buffer index, parity
        kv_bytes = v.bn * v.d * 2

        def load(kind, tile, n):
            s, p = ring[kind]
            full, empty = (cta.k_full, cta.k_empty) if kind == "K" else (cta.v_full, cta.v_empty)
            yield lambda: empty[s].try_wait(p ^ 1)
            full[s].arrive(expect_tx=kv_bytes)
            self.copy((kind, s), (kind, tile, n), full[s], kv_bytes)
            ring[kind] = [0, p ^ 1] if s + 1 == v.stages else [s + 1, p]

        for tile, blocks in enumerate(self.blocks):
            parity = tile & 1
            yield lambda: cta.q_empty.try_wait(parity ^ 1)
            cta.q_full.arrive(expect_tx=BM * v.d * 2)
            self.copy(("Q",), ("Q", tile), cta.q_full, BM * v.d * 2)
            for n in range(blocks - 1, -1, -1):
                yield from load("K", tile, n)
                if n + 1 < blocks:
                    yield from load("V", tile, n + 1)
            yield from load("V", tile, 0)

    def issue(self, c, w, reads):
        """One wgmma group reading `reads` ({buffer: expected tag}): checked now, read until it completes."""
        cta = self.cta
        for buffer, tag in reads.items():
            if cta.tags.get(buffer) != tag:
                raise ProtocolError(f"consumer {c} warp {w} reads {buffer} holding {cta.tags.get(buffer)} for {tag}")
        group = (c, w, len(self.issued.setdefault((c, w), [])))
        self.issued[(c, w)].append(group)
        for buffer in reads:
            cta.readers.setdefault(buffer, set()).add(group)
        self.async_events.append((lambda: self.finish(group, reads), 1.0))

    def finish(self, group, reads):
        older = [g for g in self.issued[group[:2]] if g not in self.done]
        if older[0] != group:  # a warp's groups complete in order
            return False
        self.done.add(group)
        for buffer in reads:
            self.cta.readers[buffer].discard(group)
        return True

    def pending(self, c, w):
        return sum(1 for g in self.issued.get((c, w), []) if g not in self.done)

    def consumer_warp(self, c, w):
        v, cta, mut = self.v, self.cta, self.mutations
        ring = {"K": [0, 0], "V": [0, 0]}
        pp = v.pingpong

        def turn_begin():
            if pp:
                bar = cta.named[1 if "same_barrier" in mut else 1 + c]
                generation = bar.generation
                bar.arrive(1)
                yield lambda: bar.generation != generation
                if w == 0:
                    self.turns.append(c)

        def turn_end():
            if pp:
                cta.named[1 if "same_barrier" in mut else 2 - c].arrive(0)

        def wait_full(kind):
            s, p = ring[kind]
            full = cta.k_full if kind == "K" else cta.v_full
            if kind == "K" and "k_parity" in mut:
                p ^= 1
            yield lambda: full[s].try_wait(p)

        def release(kind):
            s, p = ring[kind]
            (cta.k_empty if kind == "K" else cta.v_empty)[s].arrive()
            ring[kind] = [0, p ^ 1] if s + 1 == v.stages else [s + 1, p]

        def wait_groups(n):
            yield lambda: self.pending(c, w) <= n

        def qk(tile, n):
            yield from wait_full("K")
            self.issue(c, w, {("Q",): ("Q", tile), ("K", ring["K"][0]): ("K", tile, n)})

        def pv(tile, n):
            yield from wait_full("V")
            self.issue(c, w, {("V", ring["V"][0]): ("V", tile, n)})

        if pp and c == 1 and "no_first_handover" not in mut:
            cta.named[1].arrive(0)
        for tile, blocks in enumerate(self.blocks):
            q_parity = 0 if "q_parity" in mut else tile & 1
            yield lambda: cta.q_full.try_wait(q_parity)
            yield from turn_begin()
            yield from qk(tile, blocks - 1)
            turn_end()
            yield from wait_groups(0)
            release("K")
            if blocks == 1 or "early_q_release" in mut:
                cta.q_empty.arrive()
            if v.overlap:
                early_v = "v_release_at_issue" in mut  # the mutation: V released as its PV is issued

                def finish_pv():  # the top of the next step: the PV product done, its V released
                    yield from wait_groups(0)
                    if not early_v:
                        release("V")

                def issue_pv(n):
                    yield from pv(tile, n)
                    if early_v:
                        release("V")

                for n in range(blocks - 2, -1, -1):
                    if n < blocks - 2:
                        yield from finish_pv()
                    yield from turn_begin()
                    yield from qk(tile, n)
                    yield from issue_pv(n + 1)
                    turn_end()
                    yield from wait_groups(1)
                    release("K")
                    if n == 0 and "early_q_release" not in mut:
                        cta.q_empty.arrive()
                if blocks >= 2:
                    yield from finish_pv()
                yield from turn_begin()
                yield from issue_pv(0)
                turn_end()
                yield from finish_pv()
            else:
                for n in range(blocks - 1, -1, -1):
                    yield from turn_begin()
                    yield from pv(tile, n)
                    turn_end()
                    yield from wait_groups(0)
                    release("V")
                    if n == 0:
                        break
                    yield from turn_begin()
                    yield from qk(tile, n - 1)
                    turn_end()
                    yield from wait_groups(0)
                    release("K")
                    if n == 1 and "early_q_release" not in mut:
                        cta.q_empty.arrive()
            if w == 0:
                self.computed.append((tile, c))
        if pp and c == 0 and "no_last_sync" not in mut:
            yield from turn_begin()

    def verify(self):
        if sorted(self.computed) != sorted((t, c) for t in range(len(self.blocks)) for c in range(2)):
            raise ProtocolError(f"tiles computed {sorted(self.computed)}")
        for bar in self.cta.named.values():
            if bar.arrived:
                raise ProtocolError(f"named barrier {bar.index} left with {bar.arrived} threads arrived at exit")
        if self.v.pingpong:
            turns = self.turns[:-1]  # consumer 0's closing sync takes back the first hand-over: no GEMMs
            if turns != [i % 2 for i in range(len(turns))]:
                raise ProtocolError(f"GEMM issues do not alternate: {turns[:16]}")


def simulate(v, seeds=range(10), mutations=(), blocks=(3, 1, 4, 2, 5)):
    for seed in seeds:
        AttnSimulation(v, list(blocks), seed, mutations).run()


def catches(v, mutation, **kw) -> bool:
    return protocol_model.catches(v, mutation, run=simulate, **kw)


def attention_self_test(variants) -> None:
    for v in variants:
        check_layouts(v)
        simulate(v)
        simulate(v, seeds=range(3), blocks=(1, 1, 1))  # one block per tile: Q released at the first S
        simulate(v, seeds=range(3), blocks=(2 * v.stages + 3, 2))
    main = next(v for v in variants if v.pingpong and v.overlap)
    plain = next(v for v in variants if not v.overlap)
    for mutation, why in (("no_first_handover", "consumer 0 waiting for a first turn nobody hands it"),
                          ("no_last_sync", "the last hand-over left pending at exit"),
                          ("same_barrier", "both consumers taking turns on one barrier"),
                          ("k_parity", "a K wait on the wrong parity"),
                          ("q_parity", "Q's phase not flipped per tile"),
                          ("early_q_release", "Q released before the tile's last S = Q K^T"),
                          ("v_release_at_issue", "V released while the PV product still reads it")):
        assert catches(main, mutation), f"{why} went unnoticed"
    assert catches(plain, "early_q_release"), "Q released early (no overlap) went unnoticed"
    assert catches(plain, "no_last_sync"), "the last hand-over left pending (no overlap) went unnoticed"


if __name__ == "__main__":
    sys.path.insert(0, __file__.rsplit("/", 1)[0])
    import bench_attention  # noqa: E402

    attention_self_test(bench_attention.VARIANTS)
    print("attention model: layouts and protocol of", len(bench_attention.VARIANTS), "variants pass; mutations caught")
