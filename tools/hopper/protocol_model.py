"""A CPU model of ws_matmul.cu's shared-memory layouts and of its barrier protocol, for checks without a GPU.

    python3 tools/hopper/protocol_model.py     # (bench_proto.py --self-test runs it too)

Layouts: every element a TMA box writes (128-byte swizzle on address bits) is
where the wgmma descriptors the kernel builds read it, decoded as the PTX ISA
describes the canonical layouts (tests/python/cuda_emulator.h reads them the
same way); the stmatrix addresses of the TMA-store epilogue are where the C
map's box reads each accumulator element; the direct epilogue writes every
element of C once.

Protocol: the producer thread, every consumer warp, the TMA copies in flight
and the wgmma groups in flight are actors of a random scheduler (random
weights per run, so some actors starve), written to mirror the kernel's
loops: mbarriers with phases, pending arrivals and transaction bytes, parity
waits, named barriers, multicast to both CTAs of a cluster, remote arrivals.
A run fails when a consumer reads a stage holding other data than its (tile,
K step), when a copy lands in a stage a wgmma still reads, when an arrival
reaches a barrier past its count or a CTA that has exited, on deadlock, or
when a tile is not computed by the consumers that own it. Mutations of the
protocol (no ping-pong hand-over, a wrong parity, an early release, local-only
releases in a cluster, no producer tail) must each be caught.
"""

import random
import sys

# --- layouts --------------------------------------------------------------------------------------------------------


def swizzle128(address: int) -> int:
    """The 128-byte swizzle on a shared-memory byte address: chunk bits [4, 7) ^= bits [7, 10)."""
    return address ^ (((address >> 7) & 7) << 4)


def wgmma_desc(address: int, lbo: int, sbo: int, mode: int = 1) -> int:
    """tg_wgmma_desc of the .cu."""
    return ((address & 0x3FFFF) >> 4) | (((lbo >> 4) & 0x3FFF) << 16) | (((sbo >> 4) & 0x3FFF) << 32) | (mode << 62)


def desc_element(desc: int, mn_major: bool, mn: int, k: int, elem: int = 2) -> int:
    """Physical byte address of element (mn, k) (of `elem` bytes) read through a descriptor (128-byte swizzle
    only; MN-major only for 16-bit elements, as wgmma allows)."""
    start, lbo, sbo = (desc & 0x3FFF) << 4, ((desc >> 16) & 0x3FFF) << 4, ((desc >> 32) & 0x3FFF) << 4
    assert desc >> 62 == 1 and (desc >> 49) & 7 == 0, "128-byte swizzle, base offset 0"
    per_row = 128 // elem
    if mn_major:
        assert elem == 2, "8-bit wgmma operands are K-major only"
        logical = start + (mn // per_row) * lbo + (k // 8) * sbo + (k % 8) * 128 + (mn % per_row) * 2
    else:
        logical = start + (mn // 8) * sbo + (k // per_row) * lbo + (mn % 8) * 128 + (k % per_row) * elem
    return swizzle128(logical)


def tma_box_element(box_start: int, row: int, col: int, elem: int = 2) -> int:
    """Physical byte address of element (row, col) of a box with 128-byte rows landed at box_start."""
    assert box_start % 1024 == 0, "swizzled boxes start on 1024-byte lines"
    assert 0 <= col < 128 // elem
    return swizzle128(box_start + row * 128 + col * elem)


def check_layouts(v) -> None:
    """Descriptors against TMA boxes for A and B at two stages, stmatrix against the C box, direct-store coverage."""
    base = 1024 * 3  # any 1024-aligned base
    elem = v.elem
    box_k, k_step = 128 // elem, 32 // elem  # elements per 128-byte row; per wgmma K step (32 bytes)
    a_stage, b_stage = v.bm * v.bk * elem, v.bn * v.bk * elem
    a_ring, b_ring = base, base + v.stages * a_stage
    rows = v.rows
    consumers = 1 if v.pingpong else v.consumers
    for stage in (0, v.stages - 1):
        for cw in range(consumers):
            row0 = 0 if v.pingpong else cw * rows
            a_desc = wgmma_desc(a_ring + row0 * 128, 16, 1024)
            b_desc = wgmma_desc(b_ring, 16, 1024) if v.b_kmajor else wgmma_desc(b_ring, v.bk * 128, 1024)
            da = a_desc + ((stage * a_stage) >> 4)
            db = b_desc + ((stage * b_stage) >> 4)
            for kk in range(v.bk // k_step):
                a_off = (kk // 4) * v.bm * 128 + (kk % 4) * 32
                b_off = (kk // 4) * v.bn * 128 + (kk % 4) * 32 if v.b_kmajor else kk * 16 * 128
                for m in range(rows // 64):
                    desc = da + ((a_off + m * 64 * 128) >> 4)
                    for mn in range(64):
                        for k in range(k_step):
                            row, col = row0 + m * 64 + mn, kk * k_step + k  # of the A stage tile [BM][BK]
                            box = a_ring + stage * a_stage + (col // box_k) * v.bm * 128
                            assert desc_element(desc, False, mn, k, elem) == \
                                tma_box_element(box, row, col % box_k, elem), (v.name, "A", stage, cw, kk, m, mn, k)
                desc = db + (b_off >> 4)
                for n in range(v.bn):
                    for k in range(k_step):
                        kg = kk * k_step + k
                        if v.b_kmajor:  # B^T stage tile [BN][BK], boxes of 128 bytes of K
                            box = b_ring + stage * b_stage + (kg // box_k) * v.bn * 128
                            want = tma_box_element(box, n, kg % box_k, elem)
                        else:  # B stage tile [BK][BN], boxes of 64 N
                            box = b_ring + stage * b_stage + (n // 64) * v.bk * 128
                            want = tma_box_element(box, kg, n % 64)
                        assert desc_element(desc, not v.b_kmajor, n, k, elem) == want, (v.name, "B", stage, kk, n, k)
    # Accumulator fragment of m64nN (mma's, per 16 rows of a warp): register 4 j + e of lane l of warp w.
    def fragment(w, lane, j, e):
        return 16 * w + lane // 4 + 8 * (e // 2), 8 * j + 2 * (lane % 4) + e % 2

    # Direct stores: every (row, col) of a consumer's rows x BN exactly once.
    seen = set()
    for m in range(rows // 64):
        for w in range(4):
            for lane in range(32):
                for j in range(v.bn // 8):
                    for e in range(4):
                        r, c = fragment(w, lane, j, e)
                        seen.add((m * 64 + r, c))
    assert seen == {(r, c) for r in range(rows) for c in range(v.bn)}, v.name
    # stmatrix x4 into the staging tile, read back by the C map's boxes (64 columns x rows each).
    tile = 1024 * 7
    written = {}
    for m in range(rows // 64):
        for w in range(4):
            for jj in range(v.bn // 16):
                # register i of lane l: row l / 4, columns 2 (l % 4) + {0, 1} of matrix i, which is
                # (upper/lower 8 rows) x (columns 16 jj + 8 (i / 2) ..): accumulator registers 8 jj + 2 i, +1.
                addresses = {}
                for lane in range(32):
                    quad = lane // 8
                    row = m * 64 + w * 16 + 8 * (quad & 1) + lane % 8
                    chunk = 2 * jj + (quad >> 1)
                    addresses[quad, lane % 8] = tile + (chunk // 8) * (rows * 128) + row * 128 + \
                        (((chunk % 8) ^ (row % 8)) << 4)
                for lane in range(32):
                    for i in range(4):
                        for half in range(2):
                            reg = 8 * jj + 2 * i + half
                            r, c = fragment(w, lane, reg // 4, reg % 4)
                            address = addresses[i, lane // 4] + (2 * (lane % 4) + half) * 2
                            written[m * 64 + r, c] = address
    for (r, c), address in written.items():
        box = tile + (c // 64) * rows * 128
        assert address == tma_box_element(box, r, c % 64), (v.name, "C", r, c)
    assert len(written) == rows * v.bn and len(set(written.values())) == rows * v.bn


# --- the protocol ---------------------------------------------------------------------------------------------------
class ProtocolError(Exception):
    pass


class Barrier:
    """An mbarrier: the current phase, arrivals still expected in it, transaction bytes still pending."""

    def __init__(self, count: int, name: str):
        self.count, self.pending, self.tx, self.phase, self.name = count, count, 0, 0, name

    def arrive(self, expect_tx: int = 0):
        self.tx += expect_tx
        self.pending -= 1
        if self.pending < 0:
            raise ProtocolError(f"{self.name}: more arrivals than its count in phase {self.phase}")
        self._maybe_complete()

    def complete_tx(self, nbytes: int):
        self.tx -= nbytes  # may go negative: bytes may land before the arrive.expect_tx that announces them
        self._maybe_complete()

    def _maybe_complete(self):
        if self.pending == 0 and self.tx == 0:
            self.phase += 1
            self.pending = self.count

    def try_wait(self, parity: int) -> bool:
        """True when the phase of that parity has completed: the current phase is the other parity."""
        return (self.phase & 1) != parity


class NamedBarrier:
    def __init__(self, threads: int):
        self.threads, self.arrived, self.generation = threads, 0, 0

    def arrive(self, threads: int):
        self.arrived += threads
        if self.arrived > self.threads:
            raise ProtocolError("named barrier over-arrived")
        if self.arrived == self.threads:
            self.arrived, self.generation = 0, self.generation + 1


class Cta:
    def __init__(self, sim, rank_in_cluster: int, index: int):
        v = sim.v
        self.index, self.rank = index, rank_in_cluster
        arrivals = 4 * (1 if v.pingpong else v.consumers) * v.cluster
        if "local_release" in sim.mutations:
            arrivals = 4 * (1 if v.pingpong else v.consumers)
        self.full = [Barrier(1, f"cta{index}.full[{s}]") for s in range(v.stages)]
        self.empty = [Barrier(arrivals, f"cta{index}.empty[{s}]") for s in range(v.stages)]
        self.tags = [dict() for _ in range(v.stages)]  # part -> (unit, kt) of the bytes now in the stage
        self.readers = [set() for _ in range(v.stages)]  # (warp, group) of wgmma groups reading the stage
        self.named = {i: NamedBarrier(256) for i in (3, 4)}
        self.actors_left = 0
        self.exited = False


class Interleaving:
    """A random scheduler of actors (generators yielding a wait predicate, or None to yield without waiting) and
    asynchronous events (callables; one returning False is not ready and stays queued). Each actor belongs to an
    owner (a CTA: `actors_left`, `exited`). Random weights per actor, so some starve. run() ends in verify()."""

    def __init__(self, seed: int):
        self.rng = random.Random(seed)
        self.actors = []  # [generator, wait predicate or None, weight, owner]
        self.async_events = []  # (callable, weight)

    def spawn(self, gen, cta):
        cta.actors_left += 1
        self.actors.append([gen, None, self.rng.choice([0.05, 1.0, 1.0, 8.0]), cta])

    # -- the scheduler --
    def run(self, max_steps: int = 2_000_000):
        for _ in range(max_steps):
            runnable = [a for a in self.actors if a[1] is None or a[1]()]
            if not runnable and not self.async_events:
                if self.actors:
                    raise ProtocolError(f"deadlock with {len(self.actors)} actors waiting")
                break
            choices = [(a[2], "actor", a) for a in runnable] + [(e[1], "event", e) for e in self.async_events]
            pick = self.rng.random() * sum(c[0] for c in choices)
            for weight, kind, item in choices:
                pick -= weight
                if pick <= 0:
                    break
            if kind == "event":
                if item[0]() is not False:
                    self.async_events.remove(item)
                continue
            try:
                item[1] = next(item[0])
            except StopIteration:
                self.actors.remove(item)
                cta = item[3]
                cta.actors_left -= 1
                cta.exited = cta.actors_left == 0
        else:
            raise ProtocolError("no progress bound reached")
        self.verify()

    def verify(self):
        pass


class Simulation(Interleaving):
    """One random interleaving of a grid of `clusters` x v.cluster CTAs over `units` work units of `k_tiles`."""

    def __init__(self, v, units: int, k_tiles: int, clusters: int, seed: int, mutations=()):
        super().__init__(seed)
        self.v, self.units, self.k_tiles, self.mutations = v, units, k_tiles, set(mutations)
        self.ctas = [Cta(self, i % v.cluster, i) for i in range(clusters * v.cluster)]
        self.clusters = clusters
        self.groups_done = set()
        self.issued = {}  # (cta, consumer, warp) -> its wgmma groups in issue order
        self.computed = []  # (unit, rank, consumer)
        for cta in self.ctas:
            self.spawn(self.producer(cta), cta)
            for cw in range(v.consumers):
                for w in range(4):
                    self.spawn(self.consumer_warp(cta, cw, w), cta)

    def cluster_of(self, cta):
        first = cta.index - cta.rank
        return self.ctas[first:first + self.v.cluster]

    def cta_units(self, cta):
        cluster_id = cta.index // self.v.cluster
        return list(range(cluster_id, self.units, self.clusters))

    # -- the kernel's roles --
    def producer(self, cta):
        v, stage, phase = self.v, 0, 0
        a_bytes, b_bytes = v.stage_bytes * v.bm // (v.bm + v.bn), v.stage_bytes * v.bn // (v.bm + v.bn)
        parity_flip = 0 if "producer_parity" in self.mutations else 1
        for u in self.cta_units(cta):
            for kt in range(self.k_tiles):
                s, p = stage, phase
                yield lambda: cta.empty[s].try_wait(p ^ parity_flip)
                cta.full[s].arrive(expect_tx=a_bytes + b_bytes)
                self.copy(cta, [cta], s, "A", (u, kt), a_bytes)
                if v.cluster == 1:
                    self.copy(cta, [cta], s, "B", (u, kt), b_bytes)
                else:
                    self.copy(cta, self.cluster_of(cta), s, f"B{cta.rank}", (u, kt), b_bytes // v.cluster)
                yield None
                stage, phase = (0, phase ^ 1) if stage + 1 == v.stages else (stage + 1, phase)
        if v.cluster > 1 and "no_tail" not in self.mutations:
            for _ in range(v.stages):
                s, p = stage, phase
                yield lambda: cta.empty[s].try_wait(p ^ 1)
                stage, phase = (0, phase ^ 1) if stage + 1 == v.stages else (stage + 1, phase)

    def copy(self, source, targets, stage, part, tag, nbytes):
        for target in targets:  # a multicast lands in each CTA on its own time
            def land(target=target):
                if target.exited:
                    raise ProtocolError(f"copy from cta{source.index} lands in exited cta{target.index}")
                if target.readers[stage]:
                    raise ProtocolError(f"cta{target.index} stage {stage} overwritten ({part} of {tag}) while "
                                        f"wgmma groups {sorted(target.readers[stage])} read it")
                target.tags[stage][part] = tag
                target.full[stage].complete_tx(nbytes)
            self.async_events.append((land, 1.0))

    def release(self, cta, stage):
        if "local_release" in self.mutations or self.v.cluster == 1:
            cta.empty[stage].arrive()
            return
        for peer in self.cluster_of(cta):
            if peer.exited:
                raise ProtocolError(f"cta{cta.index} arrives on exited cta{peer.index}")
            peer.empty[stage].arrive()

    def consumer_warp(self, cta, cw, w):
        v = self.v
        parts = ["A"] + (["B"] if v.cluster == 1 else [f"B{r}" for r in range(v.cluster)])
        step = 2 if v.pingpong else 1
        my_units = self.cta_units(cta)
        pending = []  # this warp's groups in flight, oldest first
        for local in range(cw if v.pingpong else 0, len(my_units), step):
            u = my_units[local]
            if v.pingpong and local > 0 and "no_order" not in self.mutations:
                bar = cta.named[3 + cw]
                generation = bar.generation
                bar.arrive(32)
                yield lambda: bar.generation != generation
            it = local * self.k_tiles
            stage, phase, previous = it % v.stages, (it // v.stages) & 1, None
            for kt in range(self.k_tiles):
                s, p = stage, phase
                yield lambda: cta.full[s].try_wait(p)
                for part in parts:
                    if cta.tags[s].get(part) != (u, kt):
                        raise ProtocolError(f"cta{cta.index} consumer {cw} warp {w} reads stage {s} part {part} "
                                            f"holding {cta.tags[s].get(part)} for {(u, kt)}")
                group = (cta.index, cw, w, u, kt)
                cta.readers[s].add(group)
                self.issued.setdefault((cta.index, cw, w), []).append(group)
                pending.append((group, s))
                self.async_events.append((lambda g=group: self.finish_group(g), 1.0))
                yield None  # commit
                if "early_release" in self.mutations:
                    self.release(cta, s)
                else:
                    yield lambda: all(g in self.groups_done for g, _ in pending[:-1])  # wait_group 1
                    if kt > 0:
                        self.release(cta, previous)
                previous = s
                stage, phase = (0, phase ^ 1) if stage + 1 == v.stages else (stage + 1, phase)
            if v.pingpong and local + 1 < len(my_units) and "no_order" not in self.mutations:
                cta.named[3 + (1 - cw)].arrive(32)
            yield lambda: all(g in self.groups_done for g, _ in pending)  # wait_group 0
            if self.k_tiles > 0 and "early_release" not in self.mutations:
                self.release(cta, previous)
            pending = []
            if w == 0:
                self.computed.append((u, cta.rank, cw))

    def finish_group(self, group):
        # wgmma groups of one warp complete in order: only the oldest unfinished one may finish now.
        cta_index = group[0]
        older = [g for g in self.issued[group[:3]] if g not in self.groups_done]
        if older[0] != group:
            return False
        self.groups_done.add(group)
        for readers in self.ctas[cta_index].readers:
            readers.discard(group)
        return True

    def verify(self):
        v = self.v
        want = []
        for cta in self.ctas:
            units = self.cta_units(cta)
            for local, u in enumerate(units):
                owners = [local % 2] if v.pingpong else range(v.consumers)
                want += [(u, cta.rank, cw) for cw in owners]
        if sorted(self.computed) != sorted(want):
            raise ProtocolError(f"tiles computed {sorted(self.computed)} != owed {sorted(want)}")


def simulate(v, seeds=range(12), mutations=(), units=5, k_tiles=5, clusters=2):
    for seed in seeds:
        Simulation(v, units, k_tiles, clusters, seed, mutations).run()


def catches(v, mutation, seeds=range(40), run=None, **kw) -> bool:
    """Whether some seed's interleaving of `run` (this model's simulate by default) fails with `mutation`."""
    try:
        (run or simulate)(v, seeds=seeds, mutations=(mutation,), **kw)
    except ProtocolError:
        return True
    return False


def self_test(variants) -> None:
    for v in variants:
        check_layouts(v)
        simulate(v)
        simulate(v, seeds=range(3), units=7, k_tiles=1)  # one K step per tile: release right at the tile's end
        simulate(v, seeds=range(3), units=3, k_tiles=2 * v.stages + 1)
    pingpong = next(v for v in variants if v.pingpong)
    cluster = next(v for v in variants if v.cluster > 1)
    coop = next(v for v in variants if not v.pingpong and v.cluster == 1)
    assert catches(pingpong, "no_order", units=6, k_tiles=5), "ping-pong without hand-over went unnoticed"
    assert catches(coop, "producer_parity"), "a producer waiting on the wrong parity went unnoticed"
    assert catches(coop, "early_release"), "releasing a stage still read went unnoticed"
    assert catches(cluster, "local_release"), "a cluster releasing only its own stages went unnoticed"
    assert catches(cluster, "no_tail", units=2, k_tiles=2), "a producer leaving before remote arrivals went unnoticed"


if __name__ == "__main__":
    sys.path.insert(0, __file__.rsplit("/", 1)[0])
    import bench_proto  # noqa: E402

    self_test(bench_proto.VARIANTS)
    print("protocol model: layouts and protocol of", len(bench_proto.VARIANTS), "variants pass; mutations caught")
