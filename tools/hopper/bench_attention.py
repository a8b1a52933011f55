"""Builds, checks and times the hand-written Hopper flash-attention forward (tools/hopper/ws_attention.cu).

    python3 tools/hopper/bench_attention.py               # GPU machine: build if needed, check, time
    python3 tools/hopper/bench_attention.py --dry-run     # anywhere: what it would build, encode and launch
    python3 tools/hopper/bench_attention.py --self-test   # anywhere: unit checks of the pure parts
    python3 tools/hopper/bench_attention.py --build-only [--ptx-check]

Every variant of VARIANTS is one cubin (tools/hopper/out/NAME.cubin) holding four entry points: bf16 and fp16,
causal and not. The worker (harness.py) checks each variant against torch's scaled_dot_product_attention in fp32
(O: relative Frobenius error below 1e-2) and an fp32 log-sum-exp of the masked scores (largest error below 2e-2),
output poisoned with NaN first, at the benchmark shape (B 4, H 32, S 4096, the variant's D), then times it between two
timings of SDPA (cuDNN's backend where torch has it) with triton.testing.do_bench (median, L2 flushed), then
checks ragged shapes (S not a multiple of the tiles, fewer keys than one block, a persistent grid of a few CTAs
walking many tiles). TFLOP/s counts 4 B H S^2 D, halved with causal. One table at the end, also written as JSON
to $OUT/hopper_attention.json when OUT is set (--json overrides).
"""

import ctypes
import dataclasses
import json
import math
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness  # noqa: E402
from harness import H200_SMS, OUT_DIR, SMEM_LIMIT, emit, tensor_map_fields  # noqa: E402

SOURCE = harness.HERE / "ws_attention.cu"
DTYPES = ("bf16", "fp16")
BM = 128  # query rows per tile: two consumer warpgroups of 64
BENCH = (4, 32, 4096)  # B, H, S
# Ragged checks: (B, H, S, most CTAs). S = 1000: partial last Q and K/V blocks; 77: fewer keys than a block;
# 384 over 5 CTAs and 1000 over 3: a persistent CTA walks several tiles (Q's phase per tile, the rings' phases
# and the ping-pong hand-overs carried across tiles, causal tiles of different lengths).
CHECK_SHAPES = [(1, 3, 1000, None), (2, 2, 77, None), (2, 4, 384, 5), (1, 4, 1000, 3)]


# --- variants -------------------------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Variant:
    """One build of ws_attention.cu (fields: its TG_* macros) and how it is launched (persistent: one CTA per SM
    walking tiles, else one CTA per tile)."""

    name: str
    d: int = 128
    bn: int = 128
    stages: int = 2
    pingpong: bool = True
    overlap: bool = True
    persistent: bool = True

    source = SOURCE
    threads = 384
    launch_registers = 168
    producer_registers = 24
    consumer_registers = 240

    @property
    def entries(self) -> list:
        return [entry(dtype, causal) for dtype in DTYPES for causal in (False, True)]

    @property
    def smem_bytes(self) -> int:
        """TgAttnConfig::smem_bytes: alignment slack, Q, the K and V rings, 2 + 4 * stages mbarriers."""
        return 1024 + BM * self.d * 2 + 2 * self.stages * self.bn * self.d * 2 + 8 * (2 + 4 * self.stages)

    def problems(self) -> list:
        out = []
        if self.d not in (64, 128):
            out.append("D must be 64 or 128")
        if self.bn not in (64, 128):
            out.append("BN must be 64 or 128")
        if self.smem_bytes > SMEM_LIMIT:
            out.append(f"{self.smem_bytes} bytes of shared memory > {SMEM_LIMIT}")
        if self.producer_registers * 128 + self.consumer_registers * 256 > self.launch_registers * self.threads:
            out.append("setmaxnreg.inc would wait for registers the pool never frees")
        return out

    def defines(self) -> list:
        return [f"-DTG_HEAD_DIM={self.d}", f"-DTG_BN={self.bn}", f"-DTG_STAGES={self.stages}",
                f"-DTG_PINGPONG={int(self.pingpong)}", f"-DTG_OVERLAP={int(self.overlap)}"]

    def config_words(self) -> list:
        """What the cubin's tg_attn_config global must hold."""
        return [self.d, self.bn, self.stages, int(self.pingpong), int(self.overlap), self.smem_bytes, self.threads,
                self.consumer_registers]

    def expected_ptx(self) -> list:
        want = ["cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes",
                f"setmaxnreg.dec.sync.aligned.u32 {self.producer_registers}",
                f"setmaxnreg.inc.sync.aligned.u32 {self.consumer_registers}",
                "mbarrier.try_wait.parity", "mbarrier.arrive.expect_tx.shared::cta.b64", "fence.mbarrier_init",
                "mbarrier.arrive.shared::cta.b64", "prefetch.tensormap", "wgmma.fence.sync.aligned",
                "wgmma.commit_group.sync.aligned", "ex2.approx.ftz.f32"]
        for t in ("bf16", "f16"):
            # S = Q K^T from shared memory (trans-b 0); O += P V with P from registers and V MN-major (trans-b 1).
            want += [f"wgmma.mma_async.sync.aligned.m64n{self.bn}k16.f32.{t}.{t}",
                     f"wgmma.mma_async.sync.aligned.m64n{self.d}k16.f32.{t}.{t}"]
        want += [", p, 1, 1, 0, 0;", ", p, 1, 1, 1;"]
        if self.pingpong:
            want += ["bar.arrive"]
        if self.overlap:
            want += ["wgmma.wait_group.sync.aligned 1"]
        return want

    def expected_sass(self) -> list:
        """SASS the variant must show (nvdisasm, sm_90a): 3-D TMA loads, S = Q K^T from shared memory, O += P V with
        A from registers (a register operand before the descriptor), the register moves of setmaxnreg."""
        want = ["UTMALDG.3D", f"HGMMA.64x{self.bn}x16.F32.BF16 R", "USETMAXREG.DEALLOC.CTAPOOL",
                "USETMAXREG.TRY_ALLOC.CTAPOOL", "SYNCS.PHASECHK.TRANS64.TRYWAIT", "MUFU.EX2"]
        want += ["gdesc[UR", ".tnspB"]  # V read MN-major
        if self.pingpong:
            want += ["BAR.ARV"]
        return want

    def tiles(self, B: int, H: int, S: int) -> int:
        return -(-S // BM) * B * H

    def grid(self, B: int, H: int, S: int, sms: int, cap: int = None) -> int:
        grid = min(sms, self.tiles(B, H, S)) if self.persistent else self.tiles(B, H, S)
        return min(grid, cap) if cap else grid


def entry(dtype: str, causal: bool) -> str:
    return f"tg_attn_fwd_{'f16' if dtype == 'fp16' else 'bf16'}{'_causal' if causal else ''}"


VARIANTS = [
    Variant("d128_pp_ov_s2"),
    Variant("d128_pp_ov_s3", stages=3),
    Variant("d128_pp_ov_s2_grid", persistent=False),
    Variant("d128_ov_s2", pingpong=False),
    Variant("d128_pp_s2", overlap=False),
    Variant("d64_pp_ov_s2", d=64),
    Variant("d64_pp_ov_s4", d=64, stages=4),
]
BY_NAME = {v.name: v for v in VARIANTS}
JSON_NAME = "hopper_attention.json"


# --- tensor maps, tiles, flops (pure) -------------------------------------------------------------------------------
def operand_maps(v: Variant, B: int, H: int, S: int) -> dict:
    """Q, K, V [B, H, S, D] as 3-D maps (dims D, S, B * H): boxes of 64 columns (128 bytes) by 128 rows (Q) or BN
    rows (K, V), one head deep. Rows past S land as zeros."""
    q = tensor_map_fields(S, v.d, v.d, BM, 64, 2, outer=B * H, outer_stride=S * v.d)
    kv = tensor_map_fields(S, v.d, v.d, v.bn, 64, 2, outer=B * H, outer_stride=S * v.d)
    return {"q": q, "k": kv, "v": kv}


def flops(B: int, H: int, S: int, D: int, causal: bool) -> float:
    """4 B H S^2 D (two GEMMs of 2 S^2 D per head), halved for causal: the convention of FlashAttention's
    benchmarks and of issue 18's table."""
    return 4.0 * B * H * S * S * D / (2 if causal else 1)


def tile_order(t: int, tiles_m: int, causal: bool) -> tuple:
    """tg_attn_tile of the .cu: (head, query block) of tile t."""
    bh, i = divmod(t, tiles_m)
    return bh, (tiles_m - 1 - i) if causal else i


def key_blocks(m0: int, S: int, bn: int, causal: bool) -> int:
    """tg_attn_blocks of the .cu: K/V blocks query rows [m0, m0 + 128) read."""
    end = min(m0 + BM, S) if causal else S
    return -(-end // bn)


# --- the GPU worker -------------------------------------------------------------------------------------------------
def worker(args) -> None:
    import torch
    import torch.nn.functional as F
    import triton.testing

    drv, sms, stream = harness.start_worker(torch, triton)
    torch_dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
    except ImportError:  # older torch: SDPA's own choice
        SDPBackend = sdpa_kernel = None
    gen = torch.Generator(device="cuda")
    cache = {}

    def inputs(B, H, S, D, dtype, causal):
        """q, k, v [B, H, S, D] and the fp32 references: O from SDPA on the fp32 copies, the log-sum-exp of the
        scaled (masked) scores computed a few heads at a time."""
        key = (B, H, S, D, dtype, causal)
        if key not in cache:
            small = [k for k in cache if list(k[:3]) != list(args.shape)]
            if len(small) > 4:  # the benchmark shape's references stay for the next variant of the same D
                cache.pop(small[0])
            gen.manual_seed(((B * 31 + H) * 31 + S) * 4 + D + DTYPES.index(dtype))
            q, k, v = (torch.randn(B, H, S, D, device="cuda", generator=gen).to(torch_dtype[dtype]) for _ in range(3))
            qf, kf, vf = q.float(), k.float(), v.float()
            o_ref = F.scaled_dot_product_attention(qf, kf, vf, is_causal=causal)
            lse_ref = torch.empty(B * H, S, device="cuda")
            q2, k2 = qf.reshape(B * H, S, D), kf.reshape(B * H, S, D)
            mask = torch.ones(S, S, device="cuda", dtype=torch.bool).tril() if causal else None
            step = max(1, (1 << 27) // (S * S))  # 512 MB of scores at a time
            for i in range(0, B * H, step):
                scores = torch.matmul(q2[i:i + step], k2[i:i + step].transpose(1, 2)) / math.sqrt(D)
                if causal:
                    scores = scores.masked_fill(~mask, float("-inf"))
                lse_ref[i:i + step] = torch.logsumexp(scores, dim=-1)
            cache[key] = (q, k, v, o_ref, lse_ref.reshape(B, H, S))
        return cache[key]

    def sdpa(q, k, v, causal, backend):
        if sdpa_kernel is None or backend is None:
            return lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal)

        def run():
            with sdpa_kernel([backend]):
                return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        return run

    # The peer: cuDNN's SDPA where this torch runs it, else SDPA's own choice.
    peer_backend = None
    if SDPBackend is not None:
        try:
            q = torch.randn(1, 1, 256, 128, device="cuda", dtype=torch.bfloat16)
            sdpa(q, q, q, False, SDPBackend.CUDNN_ATTENTION)()
            torch.cuda.synchronize()
            peer_backend = SDPBackend.CUDNN_ATTENTION
        except Exception as e:  # noqa: BLE001 - reported, SDPA's default instead
            emit(event="note", text=f"cuDNN SDPA unavailable ({e}); the peer is SDPA's default backend")
    peer_label = "SDPA (cuDNN)" if peer_backend is not None else "SDPA (default)"
    emit(event="peer", name=peer_label)

    bench = harness.bencher(args, triton)
    for name in args.variants:
        v = BY_NAME[name]
        emit(event="start", variant=name)
        module = harness.load_module(drv, v, b"tg_attn_config")
        if module is None:
            continue
        emit(event="loaded", variant=name, registers=module.registers)

        def launch_for(dtype, causal, q, k, vv, o, lse, B, H, S, cap=None):
            fields = operand_maps(v, B, H, S)
            params = [drv.encode(fields["q"], q.data_ptr(), dtype), drv.encode(fields["k"], k.data_ptr(), dtype),
                      drv.encode(fields["v"], vv.data_ptr(), dtype), ctypes.c_uint64(o.data_ptr()),
                      ctypes.c_uint64(lse.data_ptr()), ctypes.c_int32(S), ctypes.c_int32(B * H)]
            return harness.Launch(drv, module.functions[entry(dtype, causal)], params, v.grid(B, H, S, sms, cap),
                                  v.threads, v.smem_bytes, stream)

        def check(dtype, causal, B, H, S, cap=None) -> bool:
            """One launch on NaN-poisoned O and LSE against the fp32 references. A CUDA error leaves the context
            unusable: the worker reports it and exits; the parent restarts one for the variants left."""
            q, k, vv, o_ref, lse_ref = inputs(B, H, S, v.d, dtype, causal)
            o = torch.full_like(q, float("nan"))
            lse = torch.full((B, H, S), float("nan"), device="cuda")
            try:
                launch = launch_for(dtype, causal, q, k, vv, o, lse, B, H, S, cap)
                launch()
                torch.cuda.synchronize()
                unwritten = int(torch.isnan(o).sum().item() + torch.isnan(lse).sum().item())
                error = ((o.float() - o_ref).norm() / o_ref.norm()).item() if unwritten == 0 else float("nan")
                lse_error = (lse - lse_ref).abs().max().item() if unwritten == 0 else float("nan")
            except Exception as e:  # noqa: BLE001
                emit(event="fail", variant=name, dtype=dtype, shape=[B, H, S, v.d], causal=causal, stage="launch",
                     error=str(e))
                emit(event="done", variant=name)
                os._exit(3)
            good = unwritten == 0 and error < 1e-2 and lse_error < 2e-2
            emit(event="check", variant=name, dtype=dtype, shape=[B, H, S, v.d], causal=causal, unwritten=unwritten,
                 rel_error=error, lse_error=lse_error, ok=good, grid=launch.grid)
            return good

        B, H, S = args.shape
        for dtype in args.dtypes:
            for causal in (False, True):
                if not check(dtype, causal, B, H, S) or dtype not in args.time_dtypes:
                    continue
                q, k, vv, _, _ = inputs(B, H, S, v.d, dtype, causal)
                o = torch.empty_like(q)
                lse = torch.empty(B, H, S, device="cuda")
                launch = launch_for(dtype, causal, q, k, vv, o, lse, B, H, S)
                before, ms, after = harness.interleaved(bench, sdpa(q, k, vv, causal, peer_backend), launch)
                work = flops(B, H, S, v.d, causal)
                peer_tflops = work / ((before + after) / 2) / 1e9
                emit(event="result", variant=name, dtype=dtype, d=v.d, causal=causal, shape=[B, H, S], ms=ms,
                     tflops=work / ms / 1e9, peer=peer_label, peer_tflops=peer_tflops,
                     peer_before=work / before / 1e9, peer_after=work / after / 1e9, ratio=work / ms / 1e9 / peer_tflops,
                     grid=launch.grid)
        if not args.no_ragged:
            for dtype in args.dtypes:
                for causal in (False, True):
                    for b, h, s, cap in CHECK_SHAPES:
                        check(dtype, causal, b, h, s, cap)
        emit(event="done", variant=name)
    emit(event="finished")


# --- the parent: its command line for workers, the table ------------------------------------------------------------
def worker_command(args, variants: list) -> list:
    command = [sys.executable, str(Path(__file__).resolve()), "--worker", "--variants", ",".join(variants),
               "--shape", *map(str, args.shape), "--dtypes", *args.dtypes, "--time-dtypes", *args.time_dtypes,
               "--warmup-ms", str(args.warmup_ms), "--rep-ms", str(args.rep_ms)]
    return command + (["--no-ragged"] if args.no_ragged else [])


def describe(e: dict) -> str:
    kind = e["event"]
    mask = lambda e: "causal" if e["causal"] else "full"  # noqa: E731
    if kind == "check":
        return (f"check {e['variant']} {e['dtype']} {tuple(e['shape'])} {mask(e)}: O rel error {e['rel_error']:.2e}, "
                f"LSE max error {e['lse_error']:.2e}, unwritten {e['unwritten']}, grid {e['grid']} -> "
                f"{'ok' if e['ok'] else 'WRONG'}")
    if kind == "result":
        return (f"{e['variant']} D{e['d']} {mask(e)} {e['dtype']}: {e['tflops']:.0f} TFLOP/s = {e['ratio']:.3f} of "
                f"{e['peer']} ({e['peer_before']:.0f} before, {e['peer_after']:.0f} after)")
    return json.dumps(e)


def table(events: list) -> list:
    rows = [e for e in events if e["event"] == "result"]
    fails = [e for e in events if e["event"] == "fail" or (e["event"] == "check" and not e["ok"])]
    print()
    print(f"{'variant':24} {'D':>4} {'mask':>6} {'dtype':>5} {'TFLOP/s':>8} {'peer':>6} {'/peer':>7}  peer")
    for e in sorted(rows, key=lambda e: (e["d"], e["causal"], e["dtype"], -e["ratio"])):
        print(f"{e['variant']:24} {e['d']:>4} {'causal' if e['causal'] else 'full':>6} {e['dtype']:>5} "
              f"{e['tflops']:>8.0f} {e['peer_tflops']:>6.0f} {e['ratio']:>7.3f}  {e['peer']}")
    for e in fails:
        where = e.get("stage") or f"check {e.get('shape')} {'causal' if e.get('causal') else 'full'}"
        detail = e.get("error") or (f"O rel error {e.get('rel_error')}, LSE error {e.get('lse_error')}, "
                                    f"unwritten {e.get('unwritten')}")
        print(f"FAILED {e['variant']} {e.get('dtype', '')} {where}: {detail}")
    return rows


# --- dry run and self-test ------------------------------------------------------------------------------------------
def dry_run(args, variants: list) -> None:
    B, H, S = args.shape
    print(f"source {SOURCE}; cubins in {OUT_DIR}; nvcc {harness.nvcc_path()}")
    for v in variants:
        print(f"\n{v.name}: D {v.d}, tiles {BM} x {v.bn}, {v.stages} K and V buffers, {v.smem_bytes} B shared, "
              f"registers {v.launch_registers} at launch -> producer {v.producer_registers}, consumers "
              f"{v.consumer_registers}; ping-pong {v.pingpong}, overlap {v.overlap}, persistent {v.persistent}")
        problems = v.problems()
        if problems:
            print("  INVALID: " + "; ".join(problems))
            continue
        print("  build: " + " ".join(harness.nvcc_command(v, OUT_DIR / f"{v.name}.cubin")))
        print(f"  B {B} H {H} S {S}: {v.tiles(B, H, S)} tiles, grid {v.grid(B, H, S, H200_SMS)} x {v.threads} "
              f"threads (H200: {H200_SMS} SMs); {flops(B, H, S, v.d, False) / 1e12:.2f} TFLOP full, half causal")
        for op, f in operand_maps(v, B, H, S).items():
            print(f"    map {op}: globalDim {f['globalDim']} globalStrides {f['globalStrides']} boxDim {f['boxDim']} "
                  "SWIZZLE_128B")
        if not args.no_ragged:
            print("  ragged checks (B, H, S, most CTAs): " + ", ".join(map(str, CHECK_SHAPES)))
    print(f"\nthen: checks in {args.dtypes}, each variant between two timings of SDPA in {args.time_dtypes}, causal "
          f"and not; table to {harness.json_path(args, JSON_NAME) or '(no $OUT)'}")


def self_test() -> None:
    """Unit checks of everything that needs no GPU."""
    v = BY_NAME["d128_pp_ov_s2"]
    maps = operand_maps(v, *BENCH)
    assert maps["q"] == {"globalDim": [128, 4096, 128], "globalStrides": [256, 4096 * 256], "boxDim": [64, 128, 1],
                         "elementStrides": [1, 1, 1]}, maps["q"]
    assert maps["k"]["boxDim"] == [64, 128, 1] and maps["v"] == maps["k"]
    assert operand_maps(BY_NAME["d64_pp_ov_s2"], 1, 3, 1000)["q"]["globalStrides"] == [128, 1000 * 128]
    # Shared memory as TgAttnConfig computes it; one CTA per SM by design; every variant valid.
    assert v.smem_bytes == 1024 + 32768 + 4 * 32768 + 80 == 164944
    assert BY_NAME["d128_pp_ov_s3"].smem_bytes == 1024 + 32768 + 6 * 32768 + 112 <= SMEM_LIMIT
    assert Variant("x", stages=4).problems(), "4 stages of D 128 cannot fit"
    assert Variant("x", bn=192).problems() and Variant("x", d=96).problems()
    for x in VARIANTS:
        assert not x.problems(), (x.name, x.problems())
        assert x.smem_bytes > SMEM_LIMIT // 2 or x.d == 64
    assert len({x.name for x in VARIANTS}) == len(VARIANTS)
    assert 24 * 128 + 240 * 256 == 168 * 384  # the register pool setmaxnreg moves
    # Tiles and grids.
    assert v.tiles(*BENCH) == 32 * 128 and v.grid(*BENCH, 132) == 132
    assert BY_NAME["d128_pp_ov_s2_grid"].grid(*BENCH, 132) == 4096 and v.grid(2, 4, 384, 132, 5) == 5
    assert flops(4, 32, 4096, 128, False) == 2 * flops(4, 32, 4096, 128, True) == 4 * 128 * 4096 ** 2 * 128
    # The tile order visits every (head, query block) once; causal puts a head's longest rows first.
    for causal in (False, True):
        seen = {tile_order(t, 8, causal) for t in range(8 * 6)}
        assert seen == {(h, m) for h in range(6) for m in range(8)}
    assert tile_order(0, 8, True) == (0, 7) and tile_order(0, 8, False) == (0, 0)
    # Key blocks: causal stops at the diagonal; S past the last whole block adds one.
    assert key_blocks(0, 4096, 128, True) == 1 and key_blocks(3968, 4096, 128, True) == 32
    assert key_blocks(0, 1000, 128, False) == 8 and key_blocks(896, 1000, 128, True) == 8
    assert key_blocks(0, 77, 128, True) == 1 and key_blocks(128, 384, 64, True) == 4
    # Worker arguments survive the round trip through the command line.
    args = parse_args(["--variants", "d64_pp_ov_s2", "--shape", "2", "8", "1024", "--no-ragged"])
    back = parse_args(worker_command(args, ["d64_pp_ov_s2"])[2:])
    assert back.worker and back.variants == ["d64_pp_ov_s2"] and back.shape == [2, 8, 1024] and back.no_ragged
    assert back.dtypes == list(DTYPES) and back.time_dtypes == ["bf16"]
    import attention_model  # noqa: PLC0415 - beside this file
    attention_model.attention_self_test(VARIANTS)
    print("self-test passed")


# --- main -----------------------------------------------------------------------------------------------------------
def parse_args(argv=None):
    p = harness.parser(__doc__.splitlines()[0], BY_NAME)
    p.add_argument("--shape", type=int, nargs=3, default=list(BENCH), metavar=("B", "H", "S"))
    p.add_argument("--dtypes", nargs="+", default=list(DTYPES), choices=DTYPES, help="checked")
    p.add_argument("--time-dtypes", nargs="+", default=["bf16"], choices=DTYPES, help="timed (of those checked)")
    return harness.parse(p, argv, BY_NAME, budget=150.0, json_name=JSON_NAME)


if __name__ == "__main__":
    sys.exit(harness.main(parse_args(), sys.modules[__name__]))
