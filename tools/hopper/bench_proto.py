"""Builds, checks and times the hand-written Hopper matmul prototype (tools/hopper/ws_matmul.cu).

    python3 tools/hopper/bench_proto.py               # GPU machine: build if needed, check, time
    python3 tools/hopper/bench_proto.py --dry-run     # anywhere: what it would build, encode and launch
    python3 tools/hopper/bench_proto.py --self-test   # anywhere: unit checks of the pure parts
    python3 tools/hopper/bench_proto.py --build-only [--ptx-check]   # compile, print ptxas' report

Every variant of VARIANTS is one cubin (tools/hopper/out/NAME.cubin, built by
nvcc from ws_matmul.cu with -D flags; rebuilt when the source or the
command changed) holding a bf16 and an fp16 entry point. The GPU part runs in
a worker subprocess that loads each cubin with the driver API
(cuda.bindings.driver), encodes the tensor maps, launches on torch's current
stream, checks against an fp32 torch.matmul on random data (output poisoned
with NaN first, so an element never written fails) at the benchmark shapes,
times the variant and cuBLAS (torch.matmul) with triton.testing.do_bench
(median, L2 flushed), then checks ragged shapes. A variant that fails to
load or verify is reported and skipped; after a CUDA error the worker exits,
and one that hangs (a wrong barrier phase deadlocks) is killed; either way a
new worker goes on with the variants left. One table at the end, also written as JSON to
$OUT/hopper_proto.json when OUT is set (--json overrides).
"""

import argparse
import ctypes
import dataclasses
import hashlib
import json
import os
import queue
import re
import shutil
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCE = HERE / "ws_matmul.cu"
OUT_DIR = HERE / "out"
SMEM_LIMIT = 232448  # bytes of dynamic shared memory a block may opt into on sm_90
H200_SMS = 132
MARK = "@@ "  # worker -> parent protocol lines


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

    @property
    def threads(self) -> int:
        return 128 * (self.consumers + 1)

    @property
    def rows(self) -> int:
        """Rows of C one consumer warpgroup computes per tile (the C map's box height)."""
        return self.bm if self.pingpong else self.bm // self.consumers

    @property
    def stage_bytes(self) -> int:
        return (self.bm + self.bn) * self.bk * 2

    @property
    def smem_bytes(self) -> int:
        """TgConfig::smem_bytes: alignment slack, ring, C staging tiles, 2 mbarriers per stage."""
        c_bytes = self.rows * self.bn * 2 if self.tma_store else 0
        return 1024 + self.stages * self.stage_bytes + self.consumers * c_bytes + 2 * self.stages * 8

    @property
    def registers(self) -> tuple:
        """(per thread at launch, producer after setmaxnreg.dec, consumers after .inc), as TgConfig."""
        launch = min((65536 // self.threads) // 8 * 8, 248)
        producer = 40
        consumer = min((launch * (self.consumers + 1) - producer) // self.consumers // 8 * 8, 256)
        return launch, producer, consumer

    def problems(self) -> list:
        """The .cu's static_asserts, so a bad variant is caught before nvcc."""
        out = []
        if self.bk % 64:
            out.append("BK must be a multiple of 64")
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
        return out

    def defines(self) -> list:
        return [f"-DTG_BM={self.bm}", f"-DTG_BN={self.bn}", f"-DTG_BK={self.bk}", f"-DTG_STAGES={self.stages}",
                f"-DTG_CONSUMERS={self.consumers}", f"-DTG_PINGPONG={int(self.pingpong)}",
                f"-DTG_TMA_STORE={int(self.tma_store)}", f"-DTG_B_KMAJOR={int(self.b_kmajor)}",
                f"-DTG_CLUSTER={self.cluster}"]

    def config_words(self) -> list:
        """What the cubin's tg_ws_config global must hold."""
        launch, producer, consumer = self.registers
        return [self.bm, self.bn, self.bk, self.stages, self.consumers, int(self.pingpong), int(self.tma_store),
                int(self.b_kmajor), self.cluster, self.smem_bytes, self.threads, producer, consumer]


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
]
BY_NAME = {v.name: v for v in VARIANTS}
DTYPES = ("bf16", "fp16")
# Ragged shapes checked before the benchmark ones: partial tiles along M, N
# and K (TMA zero-fills loads past the edges and clips stores), K below one
# K step, an odd number of tile rows (a cluster's second CTA past M), fewer
# tiles than SMs.
CHECK_SHAPES = [(1100, 776, 1000), (200, 264, 40), (384, 512, 4096)]


# --- tensor maps (pure) ---------------------------------------------------------------------------------------------
def tensor_map_fields(rows: int, cols: int, row_stride: int, box_rows: int, box_cols: int, itemsize: int = 2) -> dict:
    """cuTensorMapEncodeTiled's fields for a row-major [rows, cols] matrix whose rows are `row_stride` elements
    apart, copied in boxes of box_rows x box_cols with the 128-byte swizzle. Dims run innermost first, strides are
    in bytes for every dim but the innermost. Raises ValueError where TMA would refuse the map."""
    if min(rows, cols, box_rows, box_cols) <= 0:
        raise ValueError("empty tensor or box")
    if box_cols * itemsize > 128:
        raise ValueError(f"box row of {box_cols * itemsize} bytes: the 128-byte swizzle takes at most 128")
    if (box_cols * itemsize) % 16:
        raise ValueError("box rows must be whole 16-byte chunks")
    if box_rows > 256 or box_cols > 256:
        raise ValueError("a box dim is at most 256 elements")
    stride_bytes = row_stride * itemsize
    if stride_bytes % 16 or stride_bytes >= 1 << 40:
        raise ValueError(f"row stride of {stride_bytes} bytes: TMA wants a multiple of 16 below 2^40")
    if rows > 1 << 32 or cols > 1 << 32:
        raise ValueError("a dim is at most 2^32")
    return {"globalDim": [cols, rows], "globalStrides": [stride_bytes], "boxDim": [box_cols, box_rows],
            "elementStrides": [1, 1]}


def operand_maps(v: Variant, M: int, N: int, K: int) -> dict:
    """The three maps a launch passes: A [M, K] in boxes of BM rows x 64 of K; B [K, N] in boxes of BK rows x 64 of
    N (or B^T [N, K] in boxes of BN rows x 64 of K); C [M, N] in boxes of one consumer's rows x 64 columns."""
    a = tensor_map_fields(M, K, K, v.bm, 64)
    b = tensor_map_fields(N, K, K, v.bn, 64) if v.b_kmajor else tensor_map_fields(K, N, N, v.bk, 64)
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


# --- building -------------------------------------------------------------------------------------------------------
def nvcc_path() -> str:
    return os.environ.get("NVCC") or shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"


def nvcc_command(v: Variant, output: Path, ptx: bool = False) -> list:
    kind = ["-ptx", "-gencode=arch=compute_90a,code=compute_90a"] if ptx else \
        ["-cubin", "-gencode=arch=compute_90a,code=sm_90a"]
    return [nvcc_path(), *kind, "-O3", "-Xptxas", "-v", *v.defines(), str(SOURCE), "-o", str(output)]


def build_key(v: Variant) -> str:
    """What a cubin was built from: the source's bytes and the command, less the compiler's path."""
    command = " ".join(nvcc_command(v, Path("x"))[1:])
    return hashlib.sha256(SOURCE.read_bytes() + command.encode()).hexdigest()


def parse_ptxas(log: str) -> dict:
    """Per entry point: registers, spill bytes, stack; plus every warning line."""
    entries = {}
    current = None
    for line in log.splitlines():
        m = re.search(r"Compiling entry function '(\w+)'", line)
        if m:
            current = entries.setdefault(m.group(1), {})
            continue
        m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if m and current is not None:
            current.update(stack=int(m.group(1)), spill_stores=int(m.group(2)), spill_loads=int(m.group(3)))
        m = re.search(r"Used (\d+) registers", line)
        if m and current is not None:
            current["registers"] = int(m.group(1))
    warnings = [line.strip() for line in log.splitlines() if "warning" in line.lower() or re.search(r"C75\d\d", line)]
    return {"entries": entries, "warnings": warnings}


def build_problems(v: Variant, report: dict) -> list:
    """What in ptxas' report would make the variant wrong or slow: spills, a stack, a register count other than
    the one setmaxnreg's arithmetic assumes (the consumers' .inc would wait forever for registers), warnings."""
    out = []
    launch = v.registers[0]
    for name, e in report["entries"].items():
        if e.get("spill_stores") or e.get("spill_loads") or e.get("stack"):
            out.append(f"{name}: spills/stack {e}")
        if e.get("registers") != launch:
            out.append(f"{name}: {e.get('registers')} registers at launch, setmaxnreg assumes {launch}")
    out += [f"ptxas: {w}" for w in report["warnings"]]
    if len(report["entries"]) != 2:
        out.append(f"expected 2 entry points, ptxas reported {sorted(report['entries'])}")
    return out


# Instructions each variant's PTX must contain (substrings), by what the variant uses.
def expected_ptx(v: Variant) -> list:
    want = ["cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes",
            f"wgmma.mma_async.sync.aligned.m64n{v.bn}k16.f32.bf16.bf16",
            f"wgmma.mma_async.sync.aligned.m64n{v.bn}k16.f32.f16.f16",
            "setmaxnreg.dec.sync.aligned.u32 40", f"setmaxnreg.inc.sync.aligned.u32 {v.registers[2]}",
            "mbarrier.try_wait.parity", "mbarrier.arrive.expect_tx.shared::cta.b64", "fence.mbarrier_init",
            "wgmma.fence.sync.aligned", "wgmma.commit_group.sync.aligned", "wgmma.wait_group.sync.aligned 1",
            "prefetch.tensormap"]
    if v.tma_store:
        want += ["stmatrix.sync.aligned.m8n8.x4.shared.b16", "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group",
                 "cp.async.bulk.wait_group.read 0", "fence.proxy.async.shared::cta"]
    if v.cluster > 1:
        want += [".multicast::cluster", "mapa.shared::cluster", "mbarrier.arrive.shared::cluster.b64",
                 "barrier.cluster.arrive", "%cluster_ctarank"]
    else:
        want += ["mbarrier.arrive.shared::cta.b64"]
    if v.pingpong:
        want += ["bar.arrive"]
    return want


def build_one(v: Variant, force: bool = False, ptx_check: bool = False) -> dict:
    """Compiles one variant unless its cubin is current; returns the build record."""
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    cubin, key_file, log_file = OUT_DIR / f"{v.name}.cubin", OUT_DIR / f"{v.name}.key", OUT_DIR / f"{v.name}.log"
    record = {"variant": v.name, "cubin": str(cubin)}
    bad = v.problems()
    if bad:
        return {**record, "status": "invalid", "problems": bad}
    key = build_key(v)
    fresh = not force and cubin.exists() and key_file.exists() and key_file.read_text() == key and log_file.exists()
    if not fresh:
        started = time.time()
        done = subprocess.run(nvcc_command(v, cubin), capture_output=True, text=True)
        log_file.write_text(done.stdout + done.stderr)
        record["seconds"] = round(time.time() - started, 1)
        if done.returncode != 0:
            return {**record, "status": "build failed", "problems": (done.stdout + done.stderr).strip().splitlines()[-20:]}
        key_file.write_text(key)
    report = parse_ptxas(log_file.read_text())
    record.update(status="built" if not fresh else "cached", ptxas=report["entries"], problems=build_problems(v, report))
    if ptx_check:
        ptx = OUT_DIR / f"{v.name}.ptx"
        done = subprocess.run(nvcc_command(v, ptx, ptx=True), capture_output=True, text=True)
        if done.returncode != 0:
            record["problems"].append("PTX build failed: " + (done.stdout + done.stderr).strip()[-500:])
        else:
            text = ptx.read_text()
            missing = [w for w in expected_ptx(v) if w not in text]
            record["ptx_missing"] = missing
            record["problems"] += [f"PTX lacks `{w}`" for w in missing]
            record["ptx_wgmma"] = text.count("wgmma.mma_async")
            record["ptx_tma_loads"] = text.count("cp.async.bulk.tensor.2d.shared::cluster.global")
    return record


def build_all(variants: list, force: bool = False, ptx_check: bool = False, jobs: int = None) -> list:
    with ThreadPoolExecutor(max_workers=jobs or min(len(variants), os.cpu_count() or 2)) as pool:
        return list(pool.map(lambda v: build_one(v, force, ptx_check), variants))


def print_builds(records: list) -> None:
    print(f"{'variant':36} {'status':12} {'regs bf16/f16':>14} {'spills':>7}  problems")
    for r in records:
        entries = r.get("ptxas") or {}
        regs = "/".join(str(entries.get(e, {}).get("registers", "-")) for e in ("tg_ws_matmul_bf16", "tg_ws_matmul_f16"))
        spills = sum(e.get("spill_stores", 0) + e.get("spill_loads", 0) for e in entries.values())
        problems = "; ".join(r.get("problems") or []) or "none"
        print(f"{r['variant']:36} {r['status']:12} {regs:>14} {spills:>7}  {problems}")


# --- the GPU worker -------------------------------------------------------------------------------------------------
def emit(**fields) -> None:
    print(MARK + json.dumps(fields), flush=True)


def import_driver():
    try:
        from cuda.bindings import driver
    except ImportError:  # cuda-python before the cuda.bindings split
        from cuda import cuda as driver
    return driver


class Driver:
    """The few driver calls the worker needs, raising on errors."""

    def __init__(self):
        self.d = import_driver()
        self.check(self.d.cuInit(0))

    def check(self, result):
        result = result if isinstance(result, tuple) else (result,)
        err, rest = result[0], result[1:]
        if int(err) != 0:
            name = self.d.cuGetErrorName(err)
            raise RuntimeError(f"CUDA driver error {int(err)} ({name[1] if len(name) > 1 else '?'})")
        return rest[0] if len(rest) == 1 else rest

    def ensure_context(self, torch):
        torch.zeros(1, device="cuda")  # the runtime makes the primary context current on this thread
        ctx = self.check(self.d.cuCtxGetCurrent())
        if int(ctx) == 0:
            dev = self.check(self.d.cuDeviceGet(torch.cuda.current_device()))
            self.check(self.d.cuCtxSetCurrent(self.check(self.d.cuDevicePrimaryCtxRetain(dev))))

    def encode(self, fields: dict, pointer: int, dtype: str):
        d = self.d
        data_type = (d.CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 if dtype == "bf16"
                     else d.CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_FLOAT16)
        return self.check(d.cuTensorMapEncodeTiled(
            data_type, 2, pointer, [d.cuuint64_t(x) for x in fields["globalDim"]],
            [d.cuuint64_t(x) for x in fields["globalStrides"]], [d.cuuint32_t(x) for x in fields["boxDim"]],
            [d.cuuint32_t(x) for x in fields["elementStrides"]], d.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE,
            d.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_128B, d.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
            d.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE))


class Kernel:
    """One variant's cubin: both entry points, checked against the variant, shared memory raised."""

    def __init__(self, drv: Driver, v: Variant, sms: int):
        self.drv, self.v = drv, v
        d = drv.d
        self.module = drv.check(d.cuModuleLoadData(Path(OUT_DIR / f"{v.name}.cubin").read_bytes()))
        pointer, size = drv.check(d.cuModuleGetGlobal(self.module, b"tg_ws_config"))
        words = (ctypes.c_int32 * (int(size) // 4))()
        drv.check(d.cuMemcpyDtoH(ctypes.addressof(words), pointer, int(size)))
        if list(words) != v.config_words():
            raise RuntimeError(f"cubin config {list(words)} is not the variant's {v.config_words()} (stale build?)")
        self.functions = {}
        self.registers = {}
        for dtype in DTYPES:
            f = drv.check(d.cuModuleGetFunction(self.module, f"tg_ws_matmul_{dtype.replace('fp', 'f')}".encode()))
            drv.check(d.cuFuncSetAttribute(f, d.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                           v.smem_bytes))
            # All of L1 as shared memory, as Tegula's launcher asks for (docs/backend-cuda.md, "The ABI").
            drv.check(d.cuFuncSetAttribute(f, d.CUfunction_attribute.CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT,
                                           100))
            self.registers[dtype] = drv.check(d.cuFuncGetAttribute(d.CUfunction_attribute.CU_FUNC_ATTRIBUTE_NUM_REGS, f))
            self.functions[dtype] = f
        self.max_clusters = None
        if v.cluster > 1:
            try:
                config = d.CUlaunchConfig()
                config.gridDimX, config.gridDimY, config.gridDimZ = sms, 1, 1
                config.blockDimX, config.blockDimY, config.blockDimZ = v.threads, 1, 1
                config.sharedMemBytes = v.smem_bytes
                self.max_clusters = int(drv.check(d.cuOccupancyMaxActiveClusters(self.functions["bf16"], config)))
            except Exception as e:  # noqa: BLE001 - fall back to one cluster per SM pair
                print(f"cuOccupancyMaxActiveClusters failed ({e}); assuming {sms // v.cluster}", flush=True)


class Launch:
    """One (kernel, dtype, operands) launch with its parameter block built once, callable many times."""

    def __init__(self, k: Kernel, dtype: str, a, b_arg, c, M: int, N: int, K: int, group_m: int, sms: int, stream):
        v, drv = k.v, k.drv
        fields = operand_maps(v, M, N, K)
        self.maps = [drv.encode(fields["a"], a.data_ptr(), dtype), drv.encode(fields["b"], b_arg.data_ptr(), dtype),
                     drv.encode(fields["c"], c.data_ptr(), dtype)]
        self.storage = []
        for m in self.maps:
            block = (ctypes.c_uint64 * 16)()
            ctypes.memmove(block, m.getPtr(), 128)
            self.storage.append(block)
        self.storage += [ctypes.c_uint64(c.data_ptr()), ctypes.c_int32(M), ctypes.c_int32(N), ctypes.c_int32(K),
                         ctypes.c_int32(group_m)]
        self.pointers = (ctypes.c_void_p * len(self.storage))(*[ctypes.addressof(s) for s in self.storage])
        self.grid = grid_size(v, M, N, sms, k.max_clusters)
        self.args = (k.functions[dtype], self.grid, 1, 1, v.threads, 1, 1, v.smem_bytes, stream,
                     ctypes.addressof(self.pointers), 0)
        self.drv = drv

    def __call__(self):
        self.drv.check(self.drv.d.cuLaunchKernel(*self.args))


def worker(args) -> None:
    import torch
    import triton.testing

    torch.backends.cuda.matmul.allow_tf32 = False
    drv = Driver()
    drv.ensure_context(torch)
    props = torch.cuda.get_device_properties(0)
    sms = props.multi_processor_count
    emit(event="device", name=props.name, sms=sms, torch=torch.__version__, triton=triton.__version__)
    stream = drv.d.CUstream(torch.cuda.current_stream().cuda_stream)
    torch_dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}
    gen = torch.Generator(device="cuda")
    operands = {}

    def inputs(M, N, K, dtype):
        key = (M, N, K, dtype)
        if key not in operands:
            if len(operands) > 3:  # the 8192 ones are large: keep few
                operands.pop(next(iter(operands)))
            gen.manual_seed(((M * 31 + N) * 31 + K) * 2 + DTYPES.index(dtype))
            a = torch.randn(M, K, device="cuda", generator=gen).to(torch_dtype[dtype])
            b = torch.randn(K, N, device="cuda", generator=gen).to(torch_dtype[dtype])
            operands[key] = (a, b, b.t().contiguous(), a.float() @ b.float())
        return operands[key]

    def bench(fn) -> float:
        return triton.testing.do_bench(fn, warmup=args.warmup_ms, rep=args.rep_ms, return_mode="median")

    cublas = {}
    for size in args.sizes:
        for dtype in args.dtypes:
            a, b, _, _ = inputs(size, size, size, dtype)
            c = torch.empty(size, size, device="cuda", dtype=torch_dtype[dtype])
            ms = bench(lambda: torch.matmul(a, b, out=c))
            cublas[(size, dtype)] = 2 * size ** 3 / ms / 1e9
            emit(event="cublas", size=size, dtype=dtype, ms=ms, tflops=cublas[(size, dtype)])

    for name in args.variants:
        v = BY_NAME[name]
        emit(event="start", variant=name)
        try:
            kernel = Kernel(drv, v, sms)
        except Exception as e:  # noqa: BLE001 - reported, next variant
            emit(event="fail", variant=name, stage="load", error=str(e))
            emit(event="done", variant=name)
            continue
        emit(event="loaded", variant=name, registers=kernel.registers, max_clusters=kernel.max_clusters)

        def check(dtype, M, N, K) -> bool:
            """One launch on NaN-poisoned output against the fp32 reference. A CUDA error leaves the context
            unusable: the worker then reports it and exits, and the parent restarts one for the variants left."""
            a, b, b_t, want = inputs(M, N, K, dtype)
            c = torch.empty(M, N, device="cuda", dtype=torch_dtype[dtype])
            c.fill_(float("nan"))  # an element never written stays NaN
            try:
                launch = Launch(kernel, dtype, a, b_t if v.b_kmajor else b, c, M, N, K, args.group_m, sms, stream)
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
        for dtype in args.dtypes:
            if not all([check(dtype, s, s, s) for s in args.sizes]):
                continue
            for size in args.sizes:
                a, b, b_t, _ = inputs(size, size, size, dtype)
                c = torch.empty(size, size, device="cuda", dtype=torch_dtype[dtype])
                launch = Launch(kernel, dtype, a, b_t if v.b_kmajor else b, c, size, size, size, args.group_m, sms,
                                stream)
                ms = bench(launch)
                tflops = 2 * size ** 3 / ms / 1e9
                emit(event="result", variant=name, size=size, dtype=dtype, ms=ms, tflops=tflops,
                     cublas_tflops=cublas[(size, dtype)], ratio=tflops / cublas[(size, dtype)], grid=launch.grid)
        if not args.no_ragged:
            for dtype in args.dtypes:
                for shape in CHECK_SHAPES:
                    check(dtype, *shape)
        emit(event="done", variant=name)
    for size in args.sizes:  # cuBLAS again: how far the clocks moved during the run
        for dtype in args.dtypes:
            a, b, _, _ = inputs(size, size, size, dtype)
            c = torch.empty(size, size, device="cuda", dtype=torch_dtype[dtype])
            ms = bench(lambda: torch.matmul(a, b, out=c))
            emit(event="cublas_end", size=size, dtype=dtype, ms=ms, tflops=2 * size ** 3 / ms / 1e9)
    emit(event="finished")


# --- the parent: workers, restarts, the table -----------------------------------------------------------------------
def worker_command(args, variants: list) -> list:
    command = [sys.executable, str(Path(__file__).resolve()), "--worker", "--variants", ",".join(variants),
               "--sizes", *map(str, args.sizes), "--dtypes", *args.dtypes, "--group-m", str(args.group_m),
               "--warmup-ms", str(args.warmup_ms), "--rep-ms", str(args.rep_ms)]
    return command + (["--no-ragged"] if args.no_ragged else [])


def run_workers(args, variants: list, started: float, command=worker_command, quiet: bool = False) -> list:
    """Runs workers until every variant was tried; kills one that prints nothing for --hang-timeout seconds (the
    first line waits for torch's import as well) and restarts for the variants after the one it was on."""
    say = (lambda *_: None) if quiet else (lambda text: print(text, flush=True))
    events, left = [], list(variants)
    while left:
        proc = subprocess.Popen(command(args, left), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, bufsize=1)
        lines = queue.Queue()

        def pump(stream=proc.stdout, sink=lines):
            for line in stream:
                sink.put(line)
            sink.put(None)

        threading.Thread(target=pump, daemon=True).start()
        current, got_any, finished = None, False, False
        while True:
            limit = args.hang_timeout if got_any else args.hang_timeout + 60
            if time.time() - started > args.budget:
                limit = 0
            try:
                line = lines.get(timeout=max(limit, 0.1))
            except queue.Empty:
                proc.kill()
                why = "time budget spent" if time.time() - started > args.budget else f"no output for {limit} s"
                say(f"worker killed: {why} (variant {current})")
                if current:
                    events.append({"event": "fail", "variant": current, "stage": "hang", "error": why})
                    left.remove(current)
                elif not finished:  # stuck outside any variant (cuBLAS, inputs): restarting would not help
                    events.append({"event": "fail", "variant": "*", "stage": "worker", "error": why})
                    left = []
                if time.time() - started > args.budget:
                    for name in left:
                        events.append({"event": "fail", "variant": name, "stage": "not run", "error": why})
                    left = []
                break
            if line is None:
                proc.wait()
                if not finished:
                    say(f"worker exited with {proc.returncode} (variant {current})")
                    if current:
                        events.append({"event": "fail", "variant": current, "stage": "crash",
                                       "error": f"worker exit {proc.returncode}"})
                        left.remove(current)
                    elif not got_any:
                        events.append({"event": "fail", "variant": "*", "stage": "worker", "error": "no output"})
                        left = []
                break
            if not line.startswith(MARK):
                say("  | " + line.rstrip())
                continue
            got_any = True
            e = json.loads(line[len(MARK):])
            events.append(e)
            say("  " + describe(e))
            if e["event"] == "start":
                current = e["variant"]
            elif e["event"] == "done":
                left.remove(e["variant"])
                current = None
            elif e["event"] == "finished":
                finished = True
                left = []
    return events


def describe(e: dict) -> str:
    kind = e["event"]
    if kind == "check":
        return (f"check {e['variant']} {e['dtype']} {tuple(e['shape'])}: rel error {e['rel_error']:.2e}, "
                f"unwritten {e['unwritten']}, grid {e['grid']} -> {'ok' if e['ok'] else 'WRONG'}")
    if kind == "result":
        return (f"{e['variant']} {e['size']}^3 {e['dtype']}: {e['tflops']:.0f} TFLOP/s = {e['ratio']:.3f} of cuBLAS "
                f"({e['cublas_tflops']:.0f})")
    if kind in ("cublas", "cublas_end"):
        return f"{kind} {e['size']}^3 {e['dtype']}: {e['tflops']:.0f} TFLOP/s"
    return json.dumps(e)


def table(events: list) -> list:
    rows = [e for e in events if e["event"] == "result"]
    fails = [e for e in events if e["event"] == "fail" or (e["event"] == "check" and not e["ok"])]
    cublas = {(e["size"], e["dtype"]): e["tflops"] for e in events if e["event"] == "cublas"}
    print()
    print(f"{'variant':36} {'shape':>6} {'dtype':>5} {'TFLOP/s':>8} {'/cuBLAS':>8}")
    for (size, dtype), tflops in sorted(cublas.items()):
        print(f"{'cuBLAS (torch.matmul)':36} {size:>6} {dtype:>5} {tflops:>8.0f} {1:>8.3f}")
    for e in sorted(rows, key=lambda e: (e["size"], e["dtype"], -e["ratio"])):
        print(f"{e['variant']:36} {e['size']:>6} {e['dtype']:>5} {e['tflops']:>8.0f} {e['ratio']:>8.3f}")
    for e in fails:
        where = e.get("stage") or f"check {e.get('shape')}"
        detail = e.get("error") or f"rel error {e.get('rel_error')}, unwritten {e.get('unwritten')}"
        print(f"FAILED {e['variant']} {e.get('dtype', '')} {where}: {detail}")
    return rows


def json_path(args) -> Path:
    if args.json:
        return Path(args.json)
    if os.environ.get("OUT"):
        return Path(os.environ["OUT"]) / "hopper_proto.json"
    return None


# --- dry run and self-test ------------------------------------------------------------------------------------------
def dry_run(args, variants: list) -> None:
    print(f"source {SOURCE}; cubins in {OUT_DIR}; nvcc {nvcc_path()}")
    for v in variants:
        launch, producer, consumer = v.registers
        print(f"\n{v.name}: {v.threads} threads, {v.smem_bytes} B shared ({v.stages} stages x {v.stage_bytes} B), "
              f"registers {launch} at launch -> producer {producer}, consumers {consumer}; "
              f"{'ping-pong' if v.pingpong else 'cooperative'}, {'TMA store' if v.tma_store else 'direct stores'}, "
              f"B {'[N, K]' if v.b_kmajor else '[K, N]'}, cluster {v.cluster}")
        problems = v.problems()
        if problems:
            print("  INVALID: " + "; ".join(problems))
            continue
        print("  build: " + " ".join(nvcc_command(v, OUT_DIR / f"{v.name}.cubin")))
        for size in args.sizes:
            maps = operand_maps(v, size, size, size)
            grid = grid_size(v, size, size, H200_SMS)
            print(f"  {size}^3: {units(v, size, size)} units, grid {grid} x {v.threads} threads, "
                  f"{v.smem_bytes} B dynamic shared memory (H200: {H200_SMS} SMs)")
            for op, f in maps.items():
                print(f"    map {op}: globalDim {f['globalDim']} globalStrides {f['globalStrides']} "
                      f"boxDim {f['boxDim']} SWIZZLE_128B")
        if not args.no_ragged:
            print("  ragged checks: " + ", ".join(f"{m}x{n}x{k}" for m, n, k in CHECK_SHAPES))
    print(f"\nthen: cuBLAS and every variant at sizes {args.sizes}, dtypes {args.dtypes}, group_m {args.group_m}; "
          f"table to {json_path(args) or '(no $OUT)'}")


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
    for bad in (lambda: tensor_map_fields(64, 1001, 1001, 64, 64),  # 2002-byte rows
                lambda: tensor_map_fields(64, 128, 128, 64, 128),  # 256-byte box rows
                lambda: tensor_map_fields(64, 128, 128, 512, 64)):  # box of 512 rows
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
    assert v.registers == (168, 40, 232) and 40 * 128 + 232 * 256 <= 168 * 384
    for x in VARIANTS:
        assert not x.problems(), (x.name, x.problems())
        assert x.smem_bytes <= SMEM_LIMIT and x.smem_bytes > (SMEM_LIMIT // 2)  # one CTA per SM, by design
    assert Variant("x", 128, 256, stages=5).problems(), "5 stages of 48 KB cannot fit"
    assert Variant("x", 128, 256, cluster=2, b_kmajor=True).problems()
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
    report = parse_ptxas(log)
    assert report["entries"]["tg_ws_matmul_f16"] == {"stack": 0, "spill_stores": 0, "spill_loads": 0,
                                                      "registers": 168}
    problems = build_problems(v, report)
    assert any("spills" in p for p in problems) and any("128 registers" in p for p in problems)
    assert any("C7508" in p for p in problems) and not any("tg_ws_matmul_f16" in p for p in problems)
    # Worker arguments survive the round trip through the command line.
    args = parse_args(["--sizes", "4096", "--dtypes", "bf16", "--no-ragged"])
    back = parse_args(worker_command(args, ["coop_128x256_s4", "coop_256x128_s4"])[2:])
    assert back.worker and back.variants == ["coop_128x256_s4", "coop_256x128_s4"] and back.sizes == [4096]
    assert back.dtypes == ["bf16"] and back.no_ragged and back.group_m == args.group_m
    # The parent survives a worker that hangs on a variant and one that crashes on another.
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
    args = parse_args(["--hang-timeout", "1.5"])
    events = run_workers(args, ["a", "hangs", "b", "crashes", "dies", "c"], time.time(),
                         command=lambda _, left: [sys.executable, "-c", fake, ",".join(left)], quiet=True)
    done = [e["variant"] for e in events if e["event"] == "done"]
    failed = {e["variant"]: e["stage"] for e in events if e["event"] == "fail"}
    assert done == ["a", "b", "dies", "c"] and failed == {"hangs": "hang", "crashes": "crash"}, (done, failed)
    try:
        import protocol_model  # noqa: PLC0415 - beside this file
    except ImportError:
        sys.path.insert(0, str(HERE))
        import protocol_model  # noqa: PLC0415
    protocol_model.self_test(VARIANTS)
    print("self-test passed")


# --- main -----------------------------------------------------------------------------------------------------------
def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--variants", type=lambda s: [x for x in s.split(",") if x], default=[v.name for v in VARIANTS],
                   help="comma-separated subset of: " + ", ".join(BY_NAME))
    p.add_argument("--sizes", type=int, nargs="+", default=[4096, 8192])
    p.add_argument("--dtypes", nargs="+", default=list(DTYPES), choices=DTYPES)
    p.add_argument("--group-m", type=int, default=8, help="tile rows per scheduler group (Triton's GROUP_M)")
    p.add_argument("--warmup-ms", type=int, default=25)
    p.add_argument("--rep-ms", type=int, default=100)
    p.add_argument("--no-ragged", action="store_true", help="check at the benchmark shapes only")
    p.add_argument("--dry-run", action="store_true")
    p.add_argument("--self-test", action="store_true")
    p.add_argument("--build-only", action="store_true")
    p.add_argument("--ptx-check", action="store_true", help="with --build-only: also check the PTX's instructions")
    p.add_argument("--rebuild", action="store_true")
    p.add_argument("--prebuilt", action="store_true", help="never run nvcc; use the cubins in tools/hopper/out")
    p.add_argument("--hang-timeout", type=float, default=45.0, help="seconds without worker output before a kill")
    p.add_argument("--budget", type=float, default=220.0, help="seconds for the whole run, builds included")
    p.add_argument("--json", help="where to write the table (default $OUT/hopper_proto.json)")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    unknown = [n for n in args.variants if n not in BY_NAME]
    if unknown:
        p.error(f"unknown variants {unknown}")
    return args


def main() -> int:
    args = parse_args()
    if args.worker:
        worker(args)
        return 0
    if args.self_test:
        self_test()
        return 0
    variants = [BY_NAME[n] for n in args.variants]
    if args.dry_run:
        dry_run(args, variants)
        return 0
    started = time.time()
    if args.prebuilt:
        builds = [{"variant": v.name, "status": "prebuilt" if (OUT_DIR / f"{v.name}.cubin").exists() else "missing",
                   "problems": [] if (OUT_DIR / f"{v.name}.cubin").exists() else ["no cubin"]} for v in variants]
    else:
        builds = build_all(variants, force=args.rebuild, ptx_check=args.ptx_check)
    print_builds(builds)
    print(f"builds: {time.time() - started:.0f} s", flush=True)
    if args.build_only:
        return 1 if any(b["status"] in ("invalid", "build failed") for b in builds) else 0
    runnable = [b["variant"] for b in builds if b["status"] in ("built", "cached", "prebuilt")]
    events = [{"event": "fail", "variant": b["variant"], "stage": b["status"], "error": "; ".join(b["problems"])}
              for b in builds if b["variant"] not in runnable]
    events += run_workers(args, runnable, started) if runnable else []
    rows = table(events)
    elapsed = time.time() - started
    print(f"\n{len(rows)} timings, {elapsed:.0f} s")
    path = json_path(args)
    if path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"rows": rows, "events": events, "builds": builds, "elapsed_s": elapsed,
                                    "args": {k: v for k, v in vars(args).items()}}, indent=1))
        print(f"wrote {path}")
    return 0 if rows else 1


if __name__ == "__main__":
    sys.exit(main())
