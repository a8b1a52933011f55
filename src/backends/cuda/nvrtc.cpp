#include "backends/cuda/nvrtc.h"

#include <algorithm>
#include <optional>

#include "backends/cuda/driver_api.h"
#include "backends/cuda/occupancy.h"
#include "backends/kernel_abi.h"
#include "support/diagnostic.h"

namespace tegula::backends::cuda {

namespace {

constexpr NvrtcResult kNvrtcSuccess = 0;
constexpr NvrtcResult kNvrtcCompilationError = 6;

void check_nvrtc(const NvrtcApi& api, NvrtcResult result, const char* what) {
  if (result == kNvrtcSuccess) return;
  const char* text = api.nvrtcGetErrorString(result);
  fail_driver(Diag::CudaDriverError, std::string("NVRTC ") + api.version_text() + ": " + what + " failed: " +
              (text ? text : "error " + std::to_string(result)));
}

// Owns an nvrtcProgram.
class Program {
 public:
  Program(const NvrtcApi& api, const std::string& source, const std::string& name) : api_(api) {
    check_nvrtc(api_, api_.nvrtcCreateProgram(&program_, source.c_str(), name.c_str(), 0, nullptr, nullptr),
                "nvrtcCreateProgram");
  }
  ~Program() {
    if (program_) api_.nvrtcDestroyProgram(&program_);
  }
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;

  NvrtcProgram get() const { return program_; }

  // The bytes one of NVRTC's size/get pairs returns; empty when it has none.
  template <class SizeFn, class GetFn>
  std::string read(SizeFn size_fn, GetFn get_fn) const {
    size_t size = 0;
    if (size_fn(program_, &size) != kNvrtcSuccess || size == 0) return {};
    std::string bytes(size, '\0');
    if (get_fn(program_, bytes.data()) != kNvrtcSuccess) return {};
    return bytes;
  }

 private:
  const NvrtcApi& api_;
  NvrtcProgram program_ = nullptr;
};

// Text results (log, PTX) come NUL-terminated; the NUL is not part of the text.
std::string without_nul(std::string text) {
  while (!text.empty() && text.back() == '\0') text.pop_back();
  return text;
}

const std::vector<int>& supported_architectures() {
  static const std::vector<int> archs = [] {
    const NvrtcApi& api = nvrtc();
    int count = 0;
    check_nvrtc(api, api.nvrtcGetNumSupportedArchs(&count), "nvrtcGetNumSupportedArchs");
    std::vector<int> out(static_cast<size_t>(std::max(count, 0)));
    if (count > 0) check_nvrtc(api, api.nvrtcGetSupportedArchs(out.data()), "nvrtcGetSupportedArchs");
    std::sort(out.begin(), out.end());
    return out;
  }();
  return archs;
}

}  // namespace

std::string choose_gpu_architecture(int arch, const std::vector<int>& supported, int* generated_for) {
  TEGULA_ASSERT(!supported.empty(), "NVRTC reports no supported architecture");
  if (std::find(supported.begin(), supported.end(), arch) != supported.end()) {
    *generated_for = arch;
    return "sm_" + std::to_string(arch) + (arch >= 90 ? "a" : "");
  }
  int best_same_major = 0;
  for (int candidate : supported)
    if (candidate / 10 == arch / 10 && candidate < arch) best_same_major = std::max(best_same_major, candidate);
  if (best_same_major) {
    *generated_for = best_same_major;
    return "sm_" + std::to_string(best_same_major);
  }
  // A device newer than this NVRTC: PTX of the newest architecture it knows
  // (or of the oldest, for a device older than all of them, which then fails
  // to load with the driver's own clear error).
  int fallback = arch > supported.back() ? supported.back() : supported.front();
  *generated_for = fallback;
  return "compute_" + std::to_string(fallback);
}

NvrtcTarget resolve_target(int device, int arch) {
  if (arch <= 0) arch = device_arch(device);
  const NvrtcApi& api = nvrtc();
  NvrtcTarget target;
  target.gpu_architecture = choose_gpu_architecture(arch, supported_architectures(), &target.arch);
  target.nvrtc_version = api.version_text();
  return target;
}

namespace {

// One NVRTC run of `source` with `options`; throws as compile_to_image says.
Image compile_once(const NvrtcApi& api, const std::string& source, const std::string& name,
                   const NvrtcTarget& target, const std::vector<std::string>& options, bool keep_ptx) {
  Program program(api, source, name);
  std::vector<const char*> argv;
  for (const std::string& option : options) argv.push_back(option.c_str());
  NvrtcResult status = api.nvrtcCompileProgram(program.get(), static_cast<int>(argv.size()), argv.data());
  Image image;
  image.log = without_nul(program.read(api.nvrtcGetProgramLogSize, api.nvrtcGetProgramLog));
  if (status == kNvrtcCompilationError) {
    std::string options_text;
    for (const std::string& option : options) options_text += " " + option;
    throw InternalError("NVRTC " + api.version_text() + " rejected the generated CUDA source of '" + name +
                        "' (options:" + options_text + "):\n" + image.log);
  }
  check_nvrtc(api, status, "nvrtcCompileProgram");

  bool sass = target.gpu_architecture.starts_with("sm_");
  std::string ptx = without_nul(program.read(api.nvrtcGetPTXSize, api.nvrtcGetPTX));
  if (sass) {
    image.binary = program.read(api.nvrtcGetCUBINSize, api.nvrtcGetCUBIN);
    if (image.binary.empty()) fail_driver(Diag::CudaDriverError,
                                          "NVRTC " + api.version_text() + " produced no cubin for " + name);
  } else {
    if (ptx.empty()) fail_driver(Diag::CudaDriverError, "NVRTC " + api.version_text() + " produced no PTX for " + name);
    image.binary = ptx;  // the driver wants it NUL-terminated: std::string::c_str() is
  }
  if (keep_ptx) image.ptx = std::move(ptx);
  return image;
}

}  // namespace

Image compile_to_image(const std::string& source, const std::string& name, const NvrtcTarget& target, bool debug,
                       bool keep_details, bool fp_fusion, int occupancy_threads, CompileProfile* profile) {
  CompileProfile unprofiled;
  std::optional<PhaseTimer> phase(std::in_place, profile ? *profile : unprofiled, "nvrtc");
  const NvrtcApi& api = nvrtc();
  std::vector<std::string> options = {"--gpu-architecture=" + target.gpu_architecture, "-std=c++17",
                                      fp_fusion ? "--fmad=true" : "--fmad=false"};
  bool tune = occupancy_threads > 0 && target.gpu_architecture.starts_with("sm_");
  if (keep_details || tune) {
    options.push_back("--ptxas-options=-v");
    // NVRTC 12.9+ keeps its own cache of compiled programs; a hit skips
    // ptxas, and with it the register report that stages and occupancy
    // tuning read. Our disk cache already keeps what we build.
    if (api.major > 12 || (api.major == 12 && api.minor >= 9)) options.push_back("--no-cache");
  }
  if (debug) options.push_back("--generate-line-info");
  Image image = compile_once(api, source, name, target, options, keep_details);
  if (!tune) return image;

  std::optional<RegisterReport> first = parse_ptxas_report(image.log);
  if (!first) return image;
  if (first->stack_bytes > 0 || first->spill_stores > 0 || first->spill_loads > 0) {
    // Bounds without a minimum let ptxas trade a spill for one more resident
    // block, and it sometimes does near a block boundary; an explicit minimum
    // of one lets it take the registers instead. Kept if it spills less.
    std::vector<std::string> one_block = options;
    one_block.push_back("-D" + std::string(abi::kMinBlocksMacro) + "=1");
    phase.emplace(profile ? *profile : unprofiled, "nvrtc without spills");
    Image freer = compile_once(api, source, name, target, one_block, keep_details);
    std::optional<RegisterReport> second = parse_ptxas_report(freer.log);
    if (second && second->stack_bytes < first->stack_bytes && second->spill_stores <= first->spill_stores) {
      freer.log += "\ntegula: the first build spilled (" + std::to_string(first->stack_bytes) +
                   " bytes of stack at " + std::to_string(first->registers) + " registers); kept a build with " +
                   std::to_string(second->registers) + " registers and " + std::to_string(second->stack_bytes) +
                   " bytes of stack\n";
      return freer;
    }
    return image;
  }
  std::optional<int> cap = register_cap_for_next_block(target.arch, occupancy_threads, first->registers);
  if (!cap) return image;
  int before = resident_blocks(target.arch, occupancy_threads, first->registers);
  int wanted = resident_blocks(target.arch, occupancy_threads, *cap);
  // __launch_bounds__'s minimum blocks (abi::kMinBlocksMacro in the
  // generated source): ptxas ignores --maxrregcount on kernels with launch bounds.
  options.push_back("-D" + std::string(abi::kMinBlocksMacro) + "=" + std::to_string(wanted));
  phase.emplace(profile ? *profile : unprofiled, "nvrtc occupancy");
  Image tuned = compile_once(api, source, name, target, options, keep_details);
  std::optional<RegisterReport> second = parse_ptxas_report(tuned.log);
  std::string note = "tegula: occupancy: " + std::to_string(first->registers) + " registers allow " +
                     std::to_string(before) + " blocks per multiprocessor; asking for " + std::to_string(wanted);
  if (!second || second->spill_stores > 0 || second->spill_loads > 0 || second->stack_bytes > first->stack_bytes ||
      resident_blocks(target.arch, occupancy_threads, second->registers) <= before) {
    image.log += "\n" + note + " spills or gains nothing: kept the first build\n";
    return image;
  }
  tuned.log += "\n" + note + " gives " + std::to_string(second->registers) + " registers, " +
               std::to_string(resident_blocks(target.arch, occupancy_threads, second->registers)) +
               " blocks, no spills: kept\n";
  return tuned;
}

}  // namespace tegula::backends::cuda
