"""What the Hopper prototype benchmarks share (bench_proto.py: matmul, bench_attention.py: attention).

Building: a variant is any object with `name`, `source` (a .cu beside this file), `defines()`, `problems()` (what
the .cu's static_asserts would say), `entries` (its kernels' names), `launch_registers` (what ptxas must report for
each: setmaxnreg's arithmetic assumes it), `consumer_registers`, `expected_ptx()` and `expected_sass()`
(instructions its PTX and, where nvdisasm is at hand, its SASS must contain) and `config_words()` (the words of its
config global, `config_symbol`). Cubins go to tools/hopper/out/NAME.cubin,
rebuilt when the source, the shared prelude or the nvcc command changed.

The GPU side: a worker subprocess prints MARK-prefixed JSON events; the parent (run_workers) restarts it past a
variant that hangs (a wrong barrier phase deadlocks) or crashes it. Timing interleaves the peer (cuBLAS, SDPA)
with each variant, peer / variant / peer, because the clocks drift under load: a ratio is the variant against
the mean of the two peer timings around it.
"""

import argparse
import ctypes
import hashlib
import json
import os
import queue
import re
import shutil
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
PRELUDE = HERE / "hopper_prelude.cuh"
OUT_DIR = HERE / "out"
SMEM_LIMIT = 232448  # bytes of dynamic shared memory a block may opt into on sm_90
H200_SMS = 132
MARK = "@@ "  # worker -> parent protocol lines
ITEMSIZE = {"bf16": 2, "fp16": 2, "e4m3": 1}


# --- tensor maps (pure) ---------------------------------------------------------------------------------------------
def tensor_map_fields(rows: int, cols: int, row_stride: int, box_rows: int, box_cols: int, itemsize: int = 2,
                      outer: int = None, outer_stride: int = None) -> dict:
    """cuTensorMapEncodeTiled's fields for a row-major [rows, cols] matrix whose rows are `row_stride` elements
    apart (or `outer` such matrices `outer_stride` elements apart: a 3-D map, boxes one matrix deep), copied in
    boxes of box_rows x box_cols with the 128-byte swizzle. Dims run innermost first, strides are in bytes for
    every dim but the innermost. Raises ValueError where TMA would refuse the map."""
    if min(rows, cols, box_rows, box_cols) <= 0 or (outer is not None and outer <= 0):
        raise ValueError("empty tensor or box")
    if box_cols * itemsize > 128:
        raise ValueError(f"box row of {box_cols * itemsize} bytes: the 128-byte swizzle takes at most 128")
    if (box_cols * itemsize) % 16:
        raise ValueError("box rows must be whole 16-byte chunks")
    if box_rows > 256 or box_cols > 256:
        raise ValueError("a box dim is at most 256 elements")
    strides = [row_stride * itemsize] + ([outer_stride * itemsize] if outer is not None else [])
    for stride_bytes in strides:
        if stride_bytes % 16 or stride_bytes >= 1 << 40:
            raise ValueError(f"stride of {stride_bytes} bytes: TMA wants a multiple of 16 below 2^40")
    if max(rows, cols, outer or 1) > 1 << 32:
        raise ValueError("a dim is at most 2^32")
    if outer is None:
        return {"globalDim": [cols, rows], "globalStrides": strides, "boxDim": [box_cols, box_rows],
                "elementStrides": [1, 1]}
    return {"globalDim": [cols, rows, outer], "globalStrides": strides, "boxDim": [box_cols, box_rows, 1],
            "elementStrides": [1, 1, 1]}


# --- building -------------------------------------------------------------------------------------------------------
def nvcc_path() -> str:
    return os.environ.get("NVCC") or shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"


def nvcc_command(v, output: Path, ptx: bool = False) -> list:
    kind = ["-ptx", "-gencode=arch=compute_90a,code=compute_90a"] if ptx else \
        ["-cubin", "-gencode=arch=compute_90a,code=sm_90a"]
    return [nvcc_path(), *kind, "-O3", "-Xptxas", "-v", *v.defines(), str(v.source), "-o", str(output)]


def build_key(v) -> str:
    """What a cubin was built from: the source's and the prelude's bytes and the command, less the compiler's path."""
    command = " ".join(nvcc_command(v, Path("x"))[1:])
    return hashlib.sha256(v.source.read_bytes() + PRELUDE.read_bytes() + command.encode()).hexdigest()


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


def build_problems(v, report: dict) -> list:
    """What in ptxas' report would make the variant wrong or slow: spills, a stack, a register count other than
    the one setmaxnreg's arithmetic assumes (the consumers' .inc would wait forever for registers), warnings and
    remarks (a C75xx remark: ptxas serialized wgmmas or added a warpgroup.arrive), entry points missing."""
    out = []
    for name, e in report["entries"].items():
        if e.get("spill_stores") or e.get("spill_loads") or e.get("stack"):
            out.append(f"{name}: spills/stack {e}")
        if e.get("registers") != v.launch_registers:
            out.append(f"{name}: {e.get('registers')} registers at launch, setmaxnreg assumes {v.launch_registers}")
    out += [f"ptxas: {w}" for w in report["warnings"]]
    if sorted(report["entries"]) != sorted(v.entries):
        out.append(f"expected entry points {sorted(v.entries)}, ptxas reported {sorted(report['entries'])}")
    return out


def build_one(v, force: bool = False, ptx_check: bool = False) -> dict:
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
            missing = [w for w in v.expected_ptx() if w not in text]
            record["ptx_missing"] = missing
            record["problems"] += [f"PTX lacks `{w}`" for w in missing]
            record["ptx_wgmma"] = text.count("wgmma.mma_async")
            record["ptx_tma_loads"] = len(re.findall(r"cp\.async\.bulk\.tensor\.\dd\.shared::cluster\.global", text))
        record["problems"] += sass_problems(v, cubin)
    return record


def nvdisasm_path():
    """nvdisasm from $NVDISASM, PATH or beside nvcc; None where there is none (the PyPI package
    nvidia-cuda-nvdisasm ships one)."""
    found = os.environ.get("NVDISASM") or shutil.which("nvdisasm") or str(Path(nvcc_path()).parent / "nvdisasm")
    return found if Path(found).is_file() and os.access(found, os.X_OK) else None


def sass_problems(v, cubin: Path) -> list:
    """What the SASS must show, where nvdisasm is at hand: every instruction of v.expected_sass() (TMA copies,
    the tensor-core instruction, the register moves setmaxnreg compiles to) and no register numbered at or past
    the consumers' setmaxnreg budget (ptxas honoured it)."""
    tool = nvdisasm_path()
    if tool is None:
        return []
    done = subprocess.run([tool, str(cubin)], capture_output=True, text=True)
    if done.returncode != 0:
        return ["nvdisasm failed: " + done.stderr.strip()[-300:]]
    sass = done.stdout
    (OUT_DIR / f"{v.name}.sass").write_text(sass)
    out = [f"SASS lacks `{w}`" for w in v.expected_sass() if w not in sass]
    highest = max((int(r) for r in re.findall(r"\bR(\d+)\b", sass)), default=0)
    if highest >= v.consumer_registers:
        out.append(f"SASS uses R{highest}, past the consumers' {v.consumer_registers} registers")
    return out


def build_all(variants: list, force: bool = False, ptx_check: bool = False, jobs: int = None) -> list:
    with ThreadPoolExecutor(max_workers=jobs or min(len(variants), os.cpu_count() or 2)) as pool:
        return list(pool.map(lambda v: build_one(v, force, ptx_check), variants))


def print_builds(records: list) -> None:
    print(f"{'variant':36} {'status':12} {'regs per entry':>14} {'spills':>7}  problems")
    for r in records:
        entries = r.get("ptxas") or {}
        regs = "/".join(str(e.get("registers", "-")) for e in entries.values()) or "-"
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
        """A tiled tensor map (2-D or 3-D, as `fields` say) with the 128-byte swizzle; e4m3 is encoded as bytes."""
        d = self.d
        kinds = d.CUtensorMapDataType
        data_type = {"bf16": kinds.CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, "fp16": kinds.CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
                     "e4m3": kinds.CU_TENSOR_MAP_DATA_TYPE_UINT8}[dtype]
        return self.check(d.cuTensorMapEncodeTiled(
            data_type, len(fields["globalDim"]), pointer, [d.cuuint64_t(x) for x in fields["globalDim"]],
            [d.cuuint64_t(x) for x in fields["globalStrides"]], [d.cuuint32_t(x) for x in fields["boxDim"]],
            [d.cuuint32_t(x) for x in fields["elementStrides"]], d.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE,
            d.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_128B, d.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
            d.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE))


def start_worker(torch, triton) -> tuple:
    """The worker's setup: TF32 off (references in true fp32), the driver on torch's context, the device event;
    returns (driver, SM count, torch's current stream as a driver stream)."""
    torch.backends.cuda.matmul.allow_tf32 = False
    drv = Driver()
    drv.ensure_context(torch)
    props = torch.cuda.get_device_properties(0)
    emit(event="device", name=props.name, sms=props.multi_processor_count, torch=torch.__version__,
         triton=triton.__version__)
    return drv, props.multi_processor_count, drv.d.CUstream(torch.cuda.current_stream().cuda_stream)


class Module:
    """One variant's cubin: its config global checked against the variant (a stale build fails here), every entry
    point with the variant's dynamic shared memory allowed and all of L1 as shared memory (as Tegula's launcher
    asks, docs/backend-cuda.md "The ABI"); `functions` and `registers` by entry name."""

    def __init__(self, drv: Driver, v, config_symbol: bytes):
        self.drv, self.v = drv, v
        d = drv.d
        self.module = drv.check(d.cuModuleLoadData((OUT_DIR / f"{v.name}.cubin").read_bytes()))
        pointer, size = drv.check(d.cuModuleGetGlobal(self.module, config_symbol))
        words = (ctypes.c_int32 * (int(size) // 4))()
        drv.check(d.cuMemcpyDtoH(ctypes.addressof(words), pointer, int(size)))
        if list(words) != v.config_words():
            raise RuntimeError(f"cubin config {list(words)} is not the variant's {v.config_words()} (stale build?)")
        self.functions, self.registers = {}, {}
        attribute = d.CUfunction_attribute
        for entry in v.entries:
            f = drv.check(d.cuModuleGetFunction(self.module, entry.encode()))
            drv.check(d.cuFuncSetAttribute(f, attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, v.smem_bytes))
            drv.check(d.cuFuncSetAttribute(f, attribute.CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, 100))
            self.registers[entry] = drv.check(d.cuFuncGetAttribute(attribute.CU_FUNC_ATTRIBUTE_NUM_REGS, f))
            self.functions[entry] = f


class Launch:
    """One launch with its parameter block built once, callable many times. params: tensor maps (the driver's
    CUtensorMap objects, passed by value as 128 bytes) and ctypes scalars, in the kernel's order."""

    def __init__(self, drv: Driver, function, params: list, grid: int, threads: int, smem: int, stream):
        self.drv, self.storage = drv, []
        for item in params:
            if isinstance(item, ctypes._SimpleCData):
                self.storage.append(item)
            else:
                block = (ctypes.c_uint64 * 16)()
                ctypes.memmove(block, item.getPtr(), 128)
                self.storage.append(block)
        self.pointers = (ctypes.c_void_p * len(self.storage))(*[ctypes.addressof(s) for s in self.storage])
        self.grid = grid
        self.args = (function, grid, 1, 1, threads, 1, 1, smem, stream, ctypes.addressof(self.pointers), 0)

    def __call__(self):
        self.drv.check(self.drv.d.cuLaunchKernel(*self.args))


def load_module(drv: Driver, v, config_symbol: bytes):
    """The variant's Module, or None after reporting why it would not load (the worker goes on with the next)."""
    try:
        return Module(drv, v, config_symbol)
    except Exception as e:  # noqa: BLE001 - reported, next variant
        emit(event="fail", variant=v.name, stage="load", error=str(e))
        emit(event="done", variant=v.name)
        return None


def bencher(args, triton):
    """Milliseconds of one callable: do_bench's median with L2 flushed, --warmup-ms and --rep-ms."""
    return lambda fn: triton.testing.do_bench(fn, warmup=args.warmup_ms, rep=args.rep_ms, return_mode="median")


def interleaved(bench, peer, fn) -> tuple:
    """Milliseconds of peer, fn, peer again, timed back to back: the peer's mean brackets the variant."""
    before = bench(peer)
    ms = bench(fn)
    after = bench(peer)
    return before, ms, after


def json_path(args, name: str) -> Path:
    if args.json:
        return Path(args.json)
    if os.environ.get("OUT"):
        return Path(os.environ["OUT"]) / name
    return None


# --- the parent -----------------------------------------------------------------------------------------------------
def run_workers(args, variants: list, started: float, command, describe=json.dumps, quiet: bool = False) -> list:
    """Runs workers (command(args, variants left) is the command line) until every variant was tried; kills one
    that prints nothing for args.hang_timeout seconds (the first line waits for torch's import as well) and restarts
    for the variants after the one it was on; stops all at args.budget seconds after `started`. describe(event)
    is the line printed for each event."""
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


# --- the command line every benchmark shares ------------------------------------------------------------------------
def parser(description: str, by_name: dict) -> argparse.ArgumentParser:
    """A benchmark's parser with --variants (a comma-separated subset of by_name, all by default)."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--variants", type=lambda s: [x for x in s.split(",") if x], default=list(by_name),
                   help="comma-separated subset of: " + ", ".join(by_name))
    return p


def parse(p: argparse.ArgumentParser, argv, by_name: dict, budget: float, json_name: str):
    """Adds the shared options, parses, refuses unknown variants."""
    common_args(p, budget, json_name)
    args = p.parse_args(argv)
    unknown = [n for n in args.variants if n not in by_name]
    if unknown:
        p.error(f"unknown variants {unknown}")
    return args


def main(args, script) -> int:
    """A benchmark's entry: the worker, the self-test, the dry run, or the parent's run (drive). `script` is the
    benchmark's module: BY_NAME, JSON_NAME, worker, self_test, dry_run, worker_command, describe, table."""
    if args.worker:
        script.worker(args)
        return 0
    if args.self_test:
        script.self_test()
        return 0
    variants = [script.BY_NAME[n] for n in args.variants]
    if args.dry_run:
        script.dry_run(args, variants)
        return 0
    return drive(args, variants, script.worker_command, script.describe, script.table, script.JSON_NAME)


def common_args(p, budget: float, json_name: str) -> None:
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
    p.add_argument("--budget", type=float, default=budget, help="seconds for the whole run, builds included")
    p.add_argument("--json", help=f"where to write the table (default $OUT/{json_name})")
    p.add_argument("--worker", action="store_true", help="(internal) the GPU side")


def drive(args, variants: list, command, describe, table, json_name: str) -> int:
    """The parent's run: build (or take prebuilt cubins), run workers over what built, print the table, write the
    JSON. Returns the exit status: 0 when something was timed (or, with --build-only, everything built)."""
    started = time.time()
    if args.prebuilt:
        builds = [{"variant": v.name, "status": "prebuilt" if (OUT_DIR / f"{v.name}.cubin").exists() else "missing",
                   "problems": [] if (OUT_DIR / f"{v.name}.cubin").exists() else ["no cubin"]} for v in variants]
    else:
        builds = build_all(variants, force=args.rebuild, ptx_check=args.ptx_check)
    print_builds(builds)
    print(f"builds: {time.time() - started:.0f} s", flush=True)
    if args.build_only:
        return 1 if any(b["status"] in ("invalid", "build failed") or b.get("problems") for b in builds) else 0
    runnable = [b["variant"] for b in builds if b["status"] in ("built", "cached", "prebuilt")]
    events = [{"event": "fail", "variant": b["variant"], "stage": b["status"], "error": "; ".join(b["problems"])}
              for b in builds if b["variant"] not in runnable]
    events += run_workers(args, runnable, started, command, describe) if runnable else []
    rows = table(events)
    elapsed = time.time() - started
    print(f"\n{len(rows)} timings, {elapsed:.0f} s")
    path = json_path(args, json_name)
    if path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"rows": rows, "events": events, "builds": builds, "elapsed_s": elapsed,
                                    "args": {k: v for k, v in vars(args).items()}}, indent=1))
        print(f"wrote {path}")
    return 0 if rows else 1
