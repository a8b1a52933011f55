// Occupancy tuning for memory-bound CUDA kernels.
//
// A kernel that streams memory hides DRAM latency with resident warps. ptxas
// picks registers for speed of one thread; when that leaves the multiprocessor
// one block short of the next occupancy step, a few registers fewer buy a
// whole block more (on the H200, the fused chain goes from 5 to 6 blocks of
// 4 warps: 90 -> 80 registers, no spills, 86% -> 92% of copy bandwidth). These
// pure functions read ptxas's report and say which register cap to try; the
// compiler (cuda_compile.cpp) recompiles asking for the extra block and keeps the
// result only when ptxas spills nothing.
#pragma once

#include <optional>
#include <string>

namespace tegula::backends::cuda {

// What ptxas -v says about the kernel: registers per thread and spilled bytes.
struct RegisterReport {
  int registers = 0;
  int spill_stores = 0;
  int spill_loads = 0;
  int stack_bytes = 0;  // stack frame (local memory), also counted as a spill
};

// Reads the report ptxas wrote into NVRTC's log (--ptxas-options=-v);
// nullopt when the log has no "Used N registers" line.
std::optional<RegisterReport> parse_ptxas_report(const std::string& log);

// Blocks of `threads` threads that fit on one multiprocessor of compute
// capability `arch` (x 10) when each thread uses `registers` registers
// (ignoring shared memory, which these kernels barely use).
int resident_blocks(int arch, int threads, int registers);

// The register cap that fits one more block per multiprocessor, when the
// kernel is limited by registers and the cap takes away at most an eighth of
// them; nullopt otherwise (no gain in reach).
std::optional<int> register_cap_for_next_block(int arch, int threads, int registers);

}  // namespace tegula::backends::cuda
