#include "backends/cuda/occupancy.h"

#include <algorithm>
#include <cstdlib>

namespace tegula::backends::cuda {

namespace {

constexpr int kRegistersPerSm = 65536;
constexpr int kWarpAllocationUnit = 256;  // registers are given to a warp in steps of 256
constexpr int kMaxBlocksPerSm = 32;

// The integer after `key` in `log` (the last occurrence: ptxas reports the
// kernel after any helper functions), or -1.
int number_before(const std::string& log, const std::string& suffix) {
  size_t at = log.rfind(suffix);
  if (at == std::string::npos) return -1;
  size_t end = at;
  while (end > 0 && log[end - 1] == ' ') --end;
  size_t begin = end;
  while (begin > 0 && log[begin - 1] >= '0' && log[begin - 1] <= '9') --begin;
  if (begin == end) return -1;
  return std::atoi(log.substr(begin, end - begin).c_str());
}

int max_threads_per_sm(int arch) { return arch == 86 || arch == 89 ? 1536 : 2048; }

}  // namespace

std::optional<RegisterReport> parse_ptxas_report(const std::string& log) {
  RegisterReport r;
  r.registers = number_before(log, "registers");
  if (r.registers < 0) return std::nullopt;
  r.spill_stores = std::max(0, number_before(log, "bytes spill stores"));
  r.spill_loads = std::max(0, number_before(log, "bytes spill loads"));
  r.stack_bytes = std::max({0, number_before(log, "bytes stack frame"), number_before(log, "bytes cumulative stack size")});
  return r;
}

int resident_blocks(int arch, int threads, int registers) {
  int warps = (threads + 31) / 32;
  int per_warp = (registers * 32 + kWarpAllocationUnit - 1) / kWarpAllocationUnit * kWarpAllocationUnit;
  int by_registers = per_warp > 0 ? kRegistersPerSm / (per_warp * warps) : kMaxBlocksPerSm;
  int by_threads = max_threads_per_sm(arch) / (warps * 32);
  return std::min({by_registers, by_threads, kMaxBlocksPerSm});
}

std::optional<int> register_cap_for_next_block(int arch, int threads, int registers) {
  int warps = (threads + 31) / 32;
  int blocks = resident_blocks(arch, threads, registers);
  int by_threads = max_threads_per_sm(arch) / (warps * 32);
  if (blocks >= by_threads || blocks >= kMaxBlocksPerSm) return std::nullopt;  // not register-limited
  int target = blocks + 1;
  int per_warp = kRegistersPerSm / (target * warps) / kWarpAllocationUnit * kWarpAllocationUnit;
  int cap = per_warp / 32 / 8 * 8;
  if (cap < 32 || cap >= registers || cap * 8 < registers * 7) return std::nullopt;
  return cap;
}

}  // namespace tegula::backends::cuda
