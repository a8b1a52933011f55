"""Builds, checks and times the hand-written Hopper matmul prototype (tools/hopper/ws_matmul.cu).

    python3 tools/hopper/bench_proto.py               # GPU machine: build if needed, check, time
    python3 tools/hopper/bench_proto.py --dry-run     # anywhere: what it would build, encode and launch
    python3 tools/hopper/bench_proto.py --self-test   # anywhere: unit checks of the pure parts
    python3 tools/hopper/bench_proto.py --build-only [--ptx-check]   # compile, print ptxas' report

Every variant of VARIANTS is one cubin (tools/hopper/out/NAME.cubin, built by nvcc from ws_matmul.cu with -D
flags) holding a bf16 and an fp16 entry point, or (fp8 variants) one e4m3 entry point. The GPU part runs in a
worker subprocess (harness.py) that loads each cubin with the driver API, encodes the tensor maps, launches on
torch's current stream, checks against an fp32 reference on random data (output poisoned with NaN first, so an
element never written fails) at the benchmark shapes, times the variant between two timings of its peer
(torch.matmul, i.e. cuBLAS, or torch._scaled_mm for e4m3) with triton.testing.do_bench (median, L2 flushed), then
checks ragged shapes. A variant that fails to load or verify is reported and skipped; after a CUDA error the
worker exits, and one that hangs is killed; either way a new worker goes on with the variants left. One table at
the end, also written as JSON to $OUT/hopper_proto.json when OUT is set (--json overrides).
"""

import argparse
import ctypes
import dataclasses
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness  # noqa: E402
from harness import H200_SMS, OUT_DIR, SMEM_LIMIT, emit, tensor_map_fields  # noqa: E402

SOURCE = harness.HERE / "ws_matmul.cu"
DTYPES = ("bf16", "fp16", "e4m3")
# e4m3 inputs are scaled back by these (torch._scaled_mm's per-tensor scales); not 1, so that the epilogue's
# multiply is checked.
FP8_SCALES = (0.5, 0.25)


# --- variants -------------------------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Variant:
    """One build of ws_matmul.cu; the fields are its TG_* macros (see the top of the .cu)."""

    name: str
    bm: int
    bn: int
    bk: int = 64
    stages: int = 4
    consumers: int = 2
    pingpong: bool = False
    tma_store: bool = False
    b_kmajor: bool = False
    cluster: int = 1
    fp8: bool = False

    source = SOURCE

    @property
    def threads(self) -> int:
        return 128 * (self.consumers + 1)

    @property
    def elem(self) -> int:
        """Bytes of an input element."""
        return 1 if self.fp8 else 2

    @property
    def dtypes(self) -> tuple:
        return ("e4m3",) if self.fp8 else ("bf16", "fp16")

    @property
    def entries(self) -> list:
        return [entry(d) for d in self.dtypes]

    @property
    def rows(self) -> int:
        """Rows of C one consumer warpgroup computes per tile (the C map's box height)."""
        return self.bm if self.pingpong else self.bm // self.consumers

    @property
    def stage_bytes(self) -> int:
        return (self.bm + self.bn) * self.bk * self.elem

    @property
    def smem_bytes(self) -> int:
        """TgConfig::smem_bytes: alignment slack, ring, C staging tiles (16-bit C), 2 mbarriers per stage."""
        c_bytes = self.rows * self.bn * 2 if self.tma_store else 0
        return 1024 + self.stages * self.stage_bytes + self.consumers * c_bytes + 2 * self.stages * 8

    @property
    def registers(self) -> tuple:
        """(per thread at launch, producer after setmaxnreg.dec, consumers after .inc), as TgConfig."""
        launch = min((65536 // self.threads) // 8 * 8, 248)
        producer = 40
        consumer = min((launch * (self.consumers + 1) - producer) // self.consumers // 8 * 8, 256)
        return launch, producer, consumer

    @property
    def launch_registers(self) -> int:
        return self.registers[0]

    @property
    def consumer_registers(self) -> int:
        return self.registers[2]

    def problems(self) -> list:
        """The .cu's static_asserts, so a bad variant is caught before nvcc."""
        out = []
        if self.bk % (128 // self.elem):
            out.append(f"BK must be whole 128-byte rows ({128 // self.elem} elements)")
        if self.bn not in (128, 256):
            out.append("BN must be 128 or 256")
        if self.bm > 256 or self.bk > 256:
            out.append("a TMA box dim is at most 256")
        if self.rows % 64 or self.rows < 64:
            out.append("consumer rows must be whole 64-row slabs")
        if self.rows // 64 * self.bn // 2 > 128:
            out.append("more than 128 accumulator registers per thread")
        if self.pingpong and self.consumers != 2:
            out.append("ping-pong needs two consumers")
        if self.smem_bytes > SMEM_LIMIT:
            out.append(f"{self.smem_bytes} bytes of shared memory > {SMEM_LIMIT}")
        if self.cluster not in (1, 2):
            out.append("cluster must be 1 or 2")
        if self.cluster > 1 and (self.b_kmajor or (self.bn // 64) % 2):
            out.append("multicast splits B into pairs of 64-column boxes")
        if self.fp8 and not self.b_kmajor:
            out.append("8-bit wgmma reads B K-major: fp8 needs b_kmajor")
        return out

    def defines(self) -> list:
        return [f"-DTG_BM={self.bm}", f"-DTG_BN={self.bn}", f"-DTG_BK={self.bk}", f"-DTG_STAGES={self.stages}",
                f"-DTG_CONSUMERS={self.consumers}", f"-DTG_PINGPONG={int(self.pingpong)}",
                f"-DTG_TMA_STORE={int(self.tma_store)}", f"-DTG_B_KMAJOR={int(self.b_kmajor)}",
                f"-DTG_CLUSTER={self.cluster}", f"-DTG_FP8={int(self.fp8)}"]

    def config_words(self) -> list:
        """What the cubin's tg_ws_config global must hold."""
        launch, producer, consumer = self.registers
        return [self.bm, self.bn, self.bk, self.stages, self.consumers, int(self.pingpong), int(self.tma_store),
                int(self.b_kmajor), self.cluster, self.smem_bytes, self.threads, producer, consumer, int(self.fp8)]

    def expected_ptx(self) -> list:
        """Instructions the variant's PTX must contain (substrings), by what it uses."""
        want = ["cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes",
                "setmaxnreg.dec.sync.aligned.u32 40", f"setmaxnreg.inc.sync.aligned.u32 {self.registers[2]}",
                "mbarrier.try_wait.parity", "mbarrier.arrive.expect_tx.shared::cta.b64", "fence.mbarrier_init",
                "wgmma.fence.sync.aligned", "wgmma.commit_group.sync.aligned", "wgmma.wait_group.sync.aligned 1",
                "prefetch.tensormap"]
        if self.fp8:
            want += [f"wgmma.mma_async.sync.aligned.m64n{self.bn}k32.f32.e4m3.e4m3"]
        else:
            want += [f"wgmma.mma_async.sync.aligned.m64n{self.bn}k16.f32.bf16.bf16",
                     f"wgmma.mma_async.sync.aligned.m64n{self.bn}k16.f32.f16.f16"]
        if self.tma_store:
            want += ["stmatrix.sync.aligned.m8n8.x4.shared.b16",
                     "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group", "cp.async.bulk.wait_group.read 0",
                     "fence.proxy.async.shared::cta"]
        if self.cluster > 1:
            want += [".multicast::cluster", "mapa.shared::cluster", "mbarrier.arrive.shared::cluster.b64",
                     "barrier.cluster.arrive", "%cluster_ctarank"]
        else:
            want += ["mbarrier.arrive.shared::cta.b64"]
        if self.pingpong:
            want += ["bar.arrive"]
        return want


    def expected_sass(self) -> list:
        """SASS every variant must show (nvdisasm, sm_90a): TMA loads, the tensor-core instruction, the register
        moves of setmaxnreg, mbarrier waits."""
        mma = f"QGMMA.64x{self.bn}x32.F32.E4M3.E4M3" if self.fp8 else f"HGMMA.64x{self.bn}x16.F32.BF16"
        want = ["UTMALDG.2D", mma, "USETMAXREG.DEALLOC.CTAPOOL", "USETMAXREG.TRY_ALLOC.CTAPOOL",
                "SYNCS.PHASECHK.TRANS64.TRYWAIT", "SYNCS.ARRIVE.TRANS64"]
        if self.tma_store:
            want += ["UTMASTG.2D", "STSM"]
        return want


def entry(dtype: str) -> str:
    return {"bf16": "tg_ws_matmul_bf16", "fp16": "tg_ws_matmul_f16", "e4m3": "tg_ws_matmul_e4m3"}[dtype]


VARIANTS = [
    Variant("coop_128x256_s4", 128, 256, stages=4),
    Variant("coop_128x256_s3_tmastore", 128, 256, stages=3, tma_store=True),
    Variant("coop_128x256_s4_cluster2", 128, 256, stages=4, cluster=2),
    Variant("coop_128x256_s3_cluster2_tmastore", 128, 256, stages=3, cluster=2, tma_store=True),
    Variant("coop_128x256_s4_bkmajor", 128, 256, stages=4, b_kmajor=True),
    Variant("coop_128x128_s6", 128, 128, stages=6),
    Variant("coop_256x128_s4", 256, 128, stages=4),
    Variant("pingpong_128x128_s6", 128, 128, stages=6, pingpong=True),
    Variant("pingpong_128x128_s5_tmastore", 128, 128, stages=5, pingpong=True, tma_store=True),
    # e4m3: BK = 128 bytes, so a stage is the same 48 KB as bf16's BK = 64, and the same descriptors in bytes.
    Variant("fp8_coop_128x256_s4", 128, 256, bk=128, stages=4, b_kmajor=True, fp8=True),
    Variant("fp8_coop_128x256_s3_tmastore", 128, 256, bk=128, stages=3, b_kmajor=True, fp8=True, tma_store=True),
]
BY_NAME = {v.name: v for v in VARIANTS}
JSON_NAME = "hopper_proto.json"
# Ragged shapes checked after the timings: partial tiles along M, N and K (TMA zero-fills loads past the edges and
# clips stores), K below one K step, an odd number of tile rows (a cluster's second CTA past M), fewer tiles than
# SMs. e4m3 rows must be 16-byte multiples too (TMA strides), hence its own K values.
CHECK_SHAPES = {"16": [(1100, 776, 1000), (200, 264, 40), (384, 512, 4096)],
                "e4m3": [(1100, 776, 1008), (200, 264, 48), (384, 512, 4096)]}


def check_shapes(dtype: str) -> list:
    return CHECK_SHAPES["e4m3" if dtype == "e4m3" else "16"]


# --- tensor maps and the grid (pure) --------------------------------------------------------------------------------
def operand_maps(v: Variant, M: int, N: int, K: int) -> dict:
    """The three maps a launch passes: A [M, K] in boxes of BM rows x 128 bytes of K; B [K, N] in boxes of BK rows
    x 64 of N (or B^T [N, K] in boxes of BN rows x 128 bytes of K); C [M, N] (16-bit) in boxes of one consumer's
    rows x 64 columns."""
    box_k = 128 // v.elem
    a = tensor_map_fields(M, K, K, v.bm, box_k, v.elem)
    b = tensor_map_fields(N, K, K, v.bn, box_k, v.elem) if v.b_kmajor else tensor_map_fields(K, N, N, v.bk, 64)
    c = tensor_map_fields(M, N, N, v.rows, 64)
    return {"a": a, "b": b, "c": c}


def units(v: Variant, M: int, N: int) -> int:
    """Scheduler units: tiles, or columns of `cluster` tiles along M."""
    tiles_m = -(-M // v.bm)
    return -(-tiles_m // v.cluster) * -(-N // v.bn)


def grid_size(v: Variant, M: int, N: int, sms: int, max_clusters: int = None) -> int:
    """Persistent grid: one CTA per SM (one cluster per `cluster` SMs), no more than there are units."""
    if v.cluster == 1:
        return min(sms, units(v, M, N))
    clusters = max_clusters if max_clusters else sms // v.cluster
    return min(clusters, units(v, M, N)) * v.cluster


def unit_coords(u: int, units_m: int, units_n: int, group: int) -> tuple:
    """tg_unit_coords of the .cu: unit u in grouped order."""
    per_group = group * units_n
    g = u // per_group
    first = g * group
    height = min(units_m - first, group)
    within = u - g * per_group
    return first + within % height, within // height


# --- the GPU worker -------------------------------------------------------------------------------------------------
def cluster_capacity(drv, module, v: Variant, sms: int):
    """How many clusters of the variant fit at once (None without clusters, or when the driver will not say)."""
    if v.cluster == 1:
        return None
    d = drv.d
    try:
        config = d.CUlaunchConfig()
        config.gridDimX, config.gridDimY, config.gridDimZ = sms, 1, 1
        config.blockDimX, config.blockDimY, config.blockDimZ = v.threads, 1, 1
        config.sharedMemBytes = v.smem_bytes
        return int(drv.check(d.cuOccupancyMaxActiveClusters(module.functions[v.entries[0]], config)))
    except Exception as e:  # noqa: BLE001 - fall back to one cluster per SM pair
        print(f"cuOccupancyMaxActiveClusters failed ({e}); assuming {sms // v.cluster}", flush=True)
        return None


def worker(args) -> None:
    import torch
    import triton.testing

    drv, sms, stream = harness.start_worker(torch, triton)
    torch_dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "e4m3": torch.float8_e4m3fn}
    out_dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "e4m3": torch.bfloat16}
    scales = [torch.tensor(s, device="cuda", dtype=torch.float32) for s in FP8_SCALES]
    gen = torch.Generator(device="cuda")
    operands = {}

    def inputs(M, N, K, dtype):
        """A [M, K], B [K, N], B^T [N, K] contiguous, and the fp32 reference (of the scaled inputs, for e4m3)."""
        key = (M, N, K, dtype)
        if key not in operands:
            if len(operands) > 3:  # the 8192 ones are large: keep few
                operands.pop(next(iter(operands)))
            gen.manual_seed(((M * 31 + N) * 31 + K) * 3 + DTYPES.index(dtype))
            a = torch.randn(M, K, device="cuda", generator=gen).to(torch_dtype[dtype])
            b_t = torch.randn(N, K, device="cuda", generator=gen).to(torch_dtype[dtype])
            b = b_t.t().contiguous()
            scale = FP8_SCALES[0] * FP8_SCALES[1] if dtype == "e4m3" else 1.0
            operands[key] = (a, b, b_t, (a.float() @ b_t.float().t()) * scale)
        return operands[key]

    def peer(dtype, a, b, b_t, c):
        if dtype == "e4m3":  # B column-major: the [N, K] rows seen transposed
            return lambda: torch._scaled_mm(a, b_t.t(), scale_a=scales[0], scale_b=scales[1], out_dtype=c.dtype)
        return lambda: torch.matmul(a, b, out=c)

    bench = harness.bencher(args, triton)
    for name in args.variants:
        v = BY_NAME[name]
        emit(event="start", variant=name)
        module = harness.load_module(drv, v, b"tg_ws_config")
        if module is None:
            continue
        max_clusters = cluster_capacity(drv, module, v, sms)
        emit(event="loaded", variant=name, registers=module.registers, max_clusters=max_clusters)

        def launch_for(dtype, a, b, b_t, c, M, N, K):
            fields = operand_maps(v, M, N, K)
            params = [drv.encode(fields["a"], a.data_ptr(), dtype),
                      drv.encode(fields["b"], (b_t if v.b_kmajor else b).data_ptr(), dtype),
                      drv.encode(fields["c"], c.data_ptr(), "fp16" if dtype == "fp16" else "bf16"),
                      ctypes.c_uint64(c.data_ptr()), ctypes.c_int32(M), ctypes.c_int32(N), ctypes.c_int32(K),
                      ctypes.c_int32(args.group_m)]
            if v.fp8:
                params += [ctypes.c_uint64(scales[0].data_ptr()), ctypes.c_uint64(scales[1].data_ptr())]
            return harness.Launch(drv, module.functions[entry(dtype)], params,
                                  grid_size(v, M, N, sms, max_clusters), v.threads, v.smem_bytes, stream)

        def check(dtype, M, N, K) -> bool:
            """One launch on NaN-poisoned output against the fp32 reference. A CUDA error leaves the context
            unusable: the worker then reports it and exits, and the parent restarts one for the variants left."""
            a, b, b_t, want = inputs(M, N, K, dtype)
            c = torch.empty(M, N, device="cuda", dtype=out_dtype[dtype])
            c.fill_(float("nan"))  # an element never written stays NaN
            try:
                launch = launch_for(dtype, a, b, b_t, c, M, N, K)
                launch()
                torch.cuda.synchronize()
                unwritten = int(torch.isnan(c).sum().item())
                error = ((c.float() - want).norm() / want.norm()).item() if unwritten == 0 else float("nan")
            except Exception as e:  # noqa: BLE001
                emit(event="fail", variant=name, dtype=dtype, shape=[M, N, K], stage="launch", error=str(e))
                emit(event="done", variant=name)
                os._exit(3)
            good = unwritten == 0 and error < 1e-2
            emit(event="check", variant=name, dtype=dtype, shape=[M, N, K], unwritten=unwritten, rel_error=error,
                 ok=good, grid=launch.grid)
            return good

        # The benchmark shapes gate the timing; the ragged ones come after it, so that a hang there (the worker is
        # then killed) costs no timing.
        dtypes = [d for d in args.dtypes if d in v.dtypes]
        for dtype in dtypes:
            if not all([check(dtype, s, s, s) for s in args.sizes]):
                continue
            for size in args.sizes:
                a, b, b_t, _ = inputs(size, size, size, dtype)
                c = torch.empty(size, size, device="cuda", dtype=out_dtype[dtype])
                c_peer = torch.empty_like(c)
                launch = launch_for(dtype, a, b, b_t, c, size, size, size)
                before, ms, after = harness.interleaved(bench, peer(dtype, a, b, b_t, c_peer), launch)
                flops = 2 * size ** 3
                peer_tflops = flops / ((before + after) / 2) / 1e9
                emit(event="result", variant=name, size=size, dtype=dtype, ms=ms, tflops=flops / ms / 1e9,
                     peer_tflops=peer_tflops, peer_before=flops / before / 1e9, peer_after=flops / after / 1e9,
                     ratio=flops / ms / 1e9 / peer_tflops, grid=launch.grid)
        if not args.no_ragged:
            for dtype in dtypes:
                for shape in check_shapes(dtype):
                    check(dtype, *shape)
        emit(event="done", variant=name)
    emit(event="finished")


# --- the parent: its command line for workers, the table ------------------------------------------------------------
def worker_command(args, variants: list) -> list:
    command = [sys.executable, str(Path(__file__).resolve()), "--worker", "--variants", ",".join(variants),
               "--sizes", *map(str, args.sizes), "--dtypes", *args.dtypes, "--group-m", str(args.group_m),
               "--warmup-ms", str(args.warmup_ms), "--rep-ms", str(args.rep_ms)]
    return command + (["--no-ragged"] if args.no_ragged else [])


def peer_name(dtype: str) -> str:
    return "torch._scaled_mm" if dtype == "e4m3" else "cuBLAS"


def describe(e: dict) -> str:
    kind = e["event"]
    if kind == "check":
        return (f"check {e['variant']} {e['dtype']} {tuple(e['shape'])}: rel error {e['rel_error']:.2e}, "
                f"unwritten {e['unwritten']}, grid {e['grid']} -> {'ok' if e['ok'] else 'WRONG'}")
    if kind == "result":
        return (f"{e['variant']} {e['size']}^3 {e['dtype']}: {e['tflops']:.0f} TFLOP/s = {e['ratio']:.3f} of "
                f"{peer_name(e['dtype'])} ({e['peer_before']:.0f} before, {e['peer_after']:.0f} after)")
    return json.dumps(e)


def table(events: list) -> list:
    rows = [e for e in events if e["event"] == "result"]
    fails = [e for e in events if e["event"] == "fail" or (e["event"] == "check" and not e["ok"])]
    print()
    print(f"{'variant':36} {'shape':>6} {'dtype':>5} {'TFLOP/s':>8} {'peer':>6} {'/peer':>7}  peer")
    for e in sorted(rows, key=lambda e: (e["size"], e["dtype"], -e["ratio"])):
        print(f"{e['variant']:36} {e['size']:>6} {e['dtype']:>5} {e['tflops']:>8.0f} {e['peer_tflops']:>6.0f} "
              f"{e['ratio']:>7.3f}  {peer_name(e['dtype'])}")
    for e in fails:
        where = e.get("stage") or f"check {e.get('shape')}"
        detail = e.get("error") or f"rel error {e.get('rel_error')}, unwritten {e.get('unwritten')}"
        print(f"FAILED {e['variant']} {e.get('dtype', '')} {where}: {detail}")
    return rows


# --- dry run and self-test ------------------------------------------------------------------------------------------
def dry_run(args, variants: list) -> None:
    print(f"source {SOURCE}; cubins in {OUT_DIR}; nvcc {harness.nvcc_path()}")
    for v in variants:
        launch, producer, consumer = v.registers
        print(f"\n{v.name}: {v.threads} threads, {v.smem_bytes} B shared ({v.stages} stages x {v.stage_bytes} B), "
              f"registers {launch} at launch -> producer {producer}, consumers {consumer}; "
              f"{'ping-pong' if v.pingpong else 'cooperative'}, {'TMA store' if v.tma_store else 'direct stores'}, "
              f"B {'[N, K]' if v.b_kmajor else '[K, N]'}, cluster {v.cluster}, inputs {'/'.join(v.dtypes)}")
        problems = v.problems()
        if problems:
            print("  INVALID: " + "; ".join(problems))
            continue
        print("  build: " + " ".join(harness.nvcc_command(v, OUT_DIR / f"{v.name}.cubin")))
        for size in args.sizes:
            maps = operand_maps(v, size, size, size)
            grid = grid_size(v, size, size, H200_SMS)
            print(f"  {size}^3: {units(v, size, size)} units, grid {grid} x {v.threads} threads, "
                  f"{v.smem_bytes} B dynamic shared memory (H200: {H200_SMS} SMs)")
            for op, f in maps.items():
                print(f"    map {op}: globalDim {f['globalDim']} globalStrides {f['globalStrides']} "
                      f"boxDim {f['boxDim']} SWIZZLE_128B")
        if not args.no_ragged:
            print("  ragged checks: " + ", ".join(f"{m}x{n}x{k}" for m, n, k in check_shapes(v.dtypes[0])))
    print(f"\nthen: every variant between two timings of its peer at sizes {args.sizes}, dtypes {args.dtypes}, "
          f"group_m {args.group_m}; table to {harness.json_path(args, JSON_NAME) or '(no $OUT)'}")


def self_test() -> None:
    """Unit checks of everything that needs no GPU."""
    # Tensor maps of the 4096^3 benchmark, cooperative 128x256.
    v = BY_NAME["coop_128x256_s4"]
    maps = operand_maps(v, 4096, 4096, 4096)
    assert maps["a"] == {"globalDim": [4096, 4096], "globalStrides": [8192], "boxDim": [64, 128],
                         "elementStrides": [1, 1]}, maps["a"]
    assert maps["b"]["boxDim"] == [64, 64] and maps["b"]["globalDim"] == [4096, 4096], maps["b"]
    assert maps["c"]["boxDim"] == [64, 64], maps["c"]  # one consumer's 64 rows
    assert operand_maps(BY_NAME["coop_256x128_s4"], 512, 256, 128)["c"]["boxDim"] == [64, 128]
    assert operand_maps(BY_NAME["pingpong_128x128_s6"], 512, 256, 128)["c"]["boxDim"] == [64, 128]
    kmajor = operand_maps(BY_NAME["coop_128x256_s4_bkmajor"], 1024, 768, 512)["b"]
    assert kmajor == {"globalDim": [512, 768], "globalStrides": [1024], "boxDim": [64, 256],
                      "elementStrides": [1, 1]}, kmajor
    ragged = operand_maps(v, 1100, 776, 1000)
    assert ragged["a"]["globalDim"] == [1000, 1100] and ragged["b"]["globalStrides"] == [1552]
    # e4m3: boxes of 128 one-byte elements (128 bytes), strides in bytes, C still 16-bit.
    f8 = operand_maps(BY_NAME["fp8_coop_128x256_s4"], 8192, 8192, 8192)
    assert f8["a"] == {"globalDim": [8192, 8192], "globalStrides": [8192], "boxDim": [128, 128],
                       "elementStrides": [1, 1]}, f8["a"]
    assert f8["b"]["boxDim"] == [128, 256] and f8["c"]["globalStrides"] == [16384], f8
    for m, n, k in CHECK_SHAPES["e4m3"]:
        operand_maps(BY_NAME["fp8_coop_128x256_s4"], m, n, k)  # TMA would take every ragged e4m3 shape
    for bad in (lambda: tensor_map_fields(64, 1001, 1001, 64, 64),  # 2002-byte rows
                lambda: tensor_map_fields(64, 128, 128, 64, 128),  # 256-byte box rows
                lambda: tensor_map_fields(64, 128, 128, 512, 64),  # box of 512 rows
                lambda: tensor_map_fields(64, 1000, 1000, 64, 128, 1)):  # e4m3 rows of 1000 bytes
        try:
            bad()
        except ValueError:
            pass
        else:
            raise AssertionError("a map TMA would refuse was accepted")
    # Shared memory and registers, as TgConfig computes them.
    assert v.smem_bytes == 1024 + 4 * (16384 + 32768) + 64 == 197696
    assert BY_NAME["coop_128x256_s3_tmastore"].smem_bytes == 1024 + 3 * 49152 + 2 * 64 * 256 * 2 + 48
    assert BY_NAME["pingpong_128x128_s5_tmastore"].smem_bytes == 1024 + 5 * 32768 + 2 * 128 * 128 * 2 + 80
    assert BY_NAME["fp8_coop_128x256_s4"].smem_bytes == v.smem_bytes  # 128 bytes of K per stage, as bf16's 64
    assert v.registers == (168, 40, 232) and 40 * 128 + 232 * 256 <= 168 * 384
    for x in VARIANTS:
        assert not x.problems(), (x.name, x.problems())
        assert x.smem_bytes <= SMEM_LIMIT and x.smem_bytes > (SMEM_LIMIT // 2)  # one CTA per SM, by design
    assert Variant("x", 128, 256, stages=5).problems(), "5 stages of 48 KB cannot fit"
    assert Variant("x", 128, 256, cluster=2, b_kmajor=True).problems()
    assert Variant("x", 128, 256, bk=128, fp8=True).problems(), "e4m3 with B [K, N]"
    assert Variant("x", 128, 256, bk=64, b_kmajor=True, fp8=True).problems(), "e4m3 BK of half a swizzle row"
    assert len({x.name for x in VARIANTS}) == len(VARIANTS)
    # The scheduler visits every unit exactly once, ragged last groups included.
    for units_m, units_n, group in ((32, 16, 8), (9, 5, 4), (3, 7, 8), (1, 1, 8), (16, 16, 1)):
        seen = {unit_coords(u, units_m, units_n, group) for u in range(units_m * units_n)}
        assert seen == {(m, n) for m in range(units_m) for n in range(units_n)}, (units_m, units_n, group)
    # Grouped order: the first 8 * 16 units of a 32 x 16 grid stay in the first 8 rows.
    assert {unit_coords(u, 32, 16, 8)[0] for u in range(128)} == set(range(8))
    # Grids: persistent, never more CTAs than units; clusters whole.
    assert grid_size(v, 4096, 4096, 132) == 132 and units(v, 4096, 4096) == 512
    assert grid_size(v, 200, 264, 132) == 4  # 2 x 2 tiles
    c2 = BY_NAME["coop_128x256_s4_cluster2"]
    assert units(c2, 4096, 4096) == 256 and grid_size(c2, 4096, 4096, 132) == 132
    assert grid_size(c2, 4096, 4096, 132, max_clusters=60) == 120
    assert grid_size(c2, 1100, 776, 132) == 5 * 4 * 2  # 9 tile rows -> 5 units of 2
    # ptxas' report.
    log = ("ptxas info    : Compiling entry function 'tg_ws_matmul_f16' for 'sm_90a'\n"
           "ptxas info    : Function properties for tg_ws_matmul_f16\n"
           "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
           "ptxas info    : Used 168 registers, used 1 barriers\n"
           "ptxas info    : Compiling entry function 'tg_ws_matmul_bf16' for 'sm_90a'\n"
           "    0 bytes stack frame, 8 bytes spill stores, 8 bytes spill loads\n"
           "ptxas info    : Used 128 registers, used 1 barriers\n"
           "ptxas warning : setmaxnreg ignored; unable to determine register count at entry (C7508)\n")
    report = harness.parse_ptxas(log)
    assert report["entries"]["tg_ws_matmul_f16"] == {"stack": 0, "spill_stores": 0, "spill_loads": 0,
                                                      "registers": 168}
    problems = harness.build_problems(v, report)
    assert any("spills" in p for p in problems) and any("128 registers" in p for p in problems)
    assert any("C7508" in p for p in problems) and not any("tg_ws_matmul_f16:" in p for p in problems)
    assert any("entry points" in p for p in harness.build_problems(BY_NAME["fp8_coop_128x256_s4"], report))
    # Worker arguments survive the round trip through the command line.
    args = parse_args(["--sizes", "4096", "--dtypes", "bf16", "e4m3", "--no-ragged"])
    back = parse_args(worker_command(args, ["coop_128x256_s4", "coop_256x128_s4"])[2:])
    assert back.worker and back.variants == ["coop_128x256_s4", "coop_256x128_s4"] and back.sizes == [4096]
    assert back.dtypes == ["bf16", "e4m3"] and back.no_ragged and back.group_m == args.group_m
    # Interleaved timing: the peer right before and right after the variant.
    calls = []
    assert harness.interleaved(lambda f: (calls.append(f), len(calls))[1], "peer", "variant") == (1, 2, 3)
    assert calls == ["peer", "variant", "peer"]
    run_worker_self_test()
    import protocol_model  # noqa: PLC0415 - beside this file
    protocol_model.self_test(VARIANTS)
    print("self-test passed")


def run_worker_self_test() -> None:
    """The parent survives a worker that hangs on a variant and one that crashes on another."""
    fake = ("import json, sys, time\n"
            "print('@@ ' + json.dumps({'event': 'device'}), flush=True)\n"
            "for name in sys.argv[1].split(','):\n"
            "    print('@@ ' + json.dumps({'event': 'start', 'variant': name}), flush=True)\n"
            "    if name == 'hangs': time.sleep(60)\n"
            "    if name == 'crashes': sys.exit(3)\n"
            "    if name == 'dies': print('@@ ' + json.dumps({'event': 'done', 'variant': name}), flush=True)\n"
            "    if name == 'dies': sys.exit(3)\n"
            "    print('@@ ' + json.dumps({'event': 'done', 'variant': name}), flush=True)\n"
            "print('@@ ' + json.dumps({'event': 'finished'}), flush=True)\n")
    args = argparse.Namespace(hang_timeout=1.5, budget=220.0)
    events = harness.run_workers(args, ["a", "hangs", "b", "crashes", "dies", "c"], time.time(),
                                 command=lambda _, left: [sys.executable, "-c", fake, ",".join(left)], quiet=True)
    done = [e["variant"] for e in events if e["event"] == "done"]
    failed = {e["variant"]: e["stage"] for e in events if e["event"] == "fail"}
    assert done == ["a", "b", "dies", "c"] and failed == {"hangs": "hang", "crashes": "crash"}, (done, failed)


# --- main -----------------------------------------------------------------------------------------------------------
def parse_args(argv=None):
    p = harness.parser(__doc__.splitlines()[0], BY_NAME)
    p.add_argument("--sizes", type=int, nargs="+", default=[4096, 8192])
    p.add_argument("--dtypes", nargs="+", default=list(DTYPES), choices=DTYPES)
    p.add_argument("--group-m", type=int, default=8, help="tile rows per scheduler group (Triton's GROUP_M)")
    return harness.parse(p, argv, BY_NAME, budget=200.0, json_name=JSON_NAME)


if __name__ == "__main__":
    sys.exit(harness.main(parse_args(), sys.modules[__name__]))
