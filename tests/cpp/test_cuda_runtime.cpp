// The CUDA runtime: finding and loading libcuda/libnvrtc, NVRTC compilation,
// the disk cache of device images, the compile driver's cuda backend, and
// launching on a GPU.
//
// Tests that need NVRTC skip without it; tests that need a GPU skip without
// one (GTEST_SKIP), so the suite passes on a CPU-only machine while still
// checking every search and error path that needs no GPU (with fake
// libraries built from a few lines of C++).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <filesystem>
#include <random>

#include "lower_test_util.h"
#include "runtime/compiler.h"
#include "backends/cuda/driver_api.h"
#include "backends/cuda/nvrtc.h"
#include "backends/cpu/kernel.h"
#include "backends/cuda/backend.h"
#include "backends/cuda/module.h"
#include "disk_cache_test_util.h"
#include "runtime/disk_cache.h"
#include "runtime_test_util.h"

namespace tegula::runtime {
namespace {

namespace cuda = backends::cuda;

using testing::ScopedEnv;
using testing::TempDir;

// Empty when a GPU can run kernels, else why not.
std::string no_gpu() {
  std::string why;
  return cuda::driver_available(&why) ? std::string() : why;
}

std::string no_nvrtc() {
  try {
    cuda::nvrtc();
    return {};
  } catch (const Error& e) {
    return e.what();
  }
}

#define SKIP_WITHOUT(reason_fn)                               \
  do {                                                        \
    if (std::string why = reason_fn(); !why.empty())          \
      GTEST_SKIP() << #reason_fn << ": " << why;              \
  } while (0)

std::string message_of(const std::function<void()>& action) {
  try {
    action();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no exception)";
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// A shared object exporting `symbols` as C functions that return 0, plus `extra` source.
std::string fake_library(const TempDir& dir, const std::string& name, const std::vector<std::string>& symbols,
                         const std::string& extra = {}) {
  std::string source = extra;
  for (const std::string& symbol : symbols) source += "extern \"C\" int " + symbol + "() { return 0; }\n";
  std::string path = dir / name;
  testing::build_shared_object(source, path);
  return path;
}

const std::vector<std::string> kDriverSymbols = {
    "cuDriverGetVersion", "cuGetErrorName", "cuGetErrorString", "cuDeviceGetCount", "cuDeviceGet",
    "cuDeviceGetAttribute", "cuDevicePrimaryCtxRetain", "cuCtxGetCurrent", "cuCtxPushCurrent_v2",
    "cuCtxPopCurrent_v2", "cuCtxSynchronize", "cuModuleLoadData", "cuModuleUnload", "cuModuleGetFunction",
    "cuFuncGetAttribute", "cuFuncSetAttribute", "cuLaunchKernel", "cuStreamSynchronize", "cuStreamIsCapturing",
    "cuThreadExchangeStreamCaptureMode", "cuPointerGetAttribute",
    "cuMemAlloc_v2", "cuMemFree_v2", "cuMemcpyHtoD_v2", "cuMemcpyDtoH_v2"};

const std::vector<std::string> kNvrtcSymbols = {
    "nvrtcGetErrorString", "nvrtcGetNumSupportedArchs", "nvrtcGetSupportedArchs", "nvrtcCreateProgram",
    "nvrtcDestroyProgram", "nvrtcCompileProgram", "nvrtcGetProgramLogSize", "nvrtcGetProgramLog",
    "nvrtcGetPTXSize", "nvrtcGetPTX", "nvrtcGetCUBINSize", "nvrtcGetCUBIN"};

std::string fake_nvrtc(const TempDir& dir, const std::string& name, int major, int minor) {
  return fake_library(dir, name, kNvrtcSymbols,
                      "extern \"C\" int nvrtcVersion(int* a, int* b) { *a = " + std::to_string(major) +
                          "; *b = " + std::to_string(minor) + "; return 0; }\n");
}

// --- where the libraries are looked for ------------------------------------------------------

TEST(CudaLibrarySearch, DriverOverrideIsTheOnlyCandidate) {
  ScopedEnv env("TEGULA_LIBCUDA", "/opt/driver/libcuda.so.1");
  EXPECT_EQ(cuda::driver_candidates(), std::vector<std::string>{"/opt/driver/libcuda.so.1"});
}

TEST(CudaLibrarySearch, DriverComesFromTheLoaderFirstAndNeverFromTheToolkitStubs) {
  ScopedEnv env("TEGULA_LIBCUDA", nullptr);
  std::vector<std::string> candidates = cuda::driver_candidates();
  ASSERT_FALSE(candidates.empty());
  EXPECT_EQ(candidates.front(), "libcuda.so.1");
  for (const std::string& c : candidates) EXPECT_FALSE(contains(c, "stubs")) << c;
}

TEST(CudaLibrarySearch, NvrtcOrderIsToolkitThenWheelsThenLoader) {
  TempDir tmp;
  std::filesystem::create_directories(tmp / "toolkit/lib64");
  std::filesystem::create_directories(tmp / "site/nvidia/cu13/lib");
  std::filesystem::create_directories(tmp / "site2/nvidia/cuda_nvrtc/lib");
  testing::write_text(tmp / "toolkit/lib64/libnvrtc.so.12", "");
  testing::write_text(tmp / "site/nvidia/cu13/lib/libnvrtc.so.13", "");
  testing::write_text(tmp / "site2/nvidia/cuda_nvrtc/lib/libnvrtc.so.12", "");
  ScopedEnv no_override("TEGULA_LIBNVRTC", nullptr);
  ScopedEnv home("CUDA_HOME", (tmp / "toolkit").c_str());
  ScopedEnv no_path("CUDA_PATH", nullptr);
  std::string search = (tmp / "site") + ":" + (tmp / "missing") + "::" + (tmp / "site2");
  ScopedEnv sites("TEGULA_NVRTC_SEARCH", search.c_str());

  std::vector<std::string> c = cuda::nvrtc_candidates();
  auto at = [&](const std::string& path) { return std::find(c.begin(), c.end(), path) - c.begin(); };
  ASSERT_GE(c.size(), 6u);
  EXPECT_EQ(c.front(), tmp / "toolkit/lib64/libnvrtc.so.12");
  EXPECT_LT(at(tmp / "site/nvidia/cu13/lib/libnvrtc.so.13"), at(tmp / "site2/nvidia/cuda_nvrtc/lib/libnvrtc.so.12"));
  EXPECT_LT(at(tmp / "site2/nvidia/cuda_nvrtc/lib/libnvrtc.so.12"), at("libnvrtc.so.13"));
  EXPECT_EQ(std::vector<std::string>(c.end() - 3, c.end()),
            (std::vector<std::string>{"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"}));
  for (const std::string& path : c) EXPECT_FALSE(contains(path, "missing")) << path;
}

TEST(CudaLibrarySearch, NvrtcOverrideIsTheOnlyCandidate) {
  ScopedEnv env("TEGULA_LIBNVRTC", "/somewhere/libnvrtc.so.13");
  EXPECT_EQ(cuda::nvrtc_candidates(), std::vector<std::string>{"/somewhere/libnvrtc.so.13"});
}

// --- loading and its errors ---------------------------------------------------------------------

TEST(CudaLibraryLoad, AbsentDriverListsWhatWasTriedAndHowToFixIt) {
  ScopedEnv env("TEGULA_LIBCUDA", nullptr);
  std::string text = message_of([] { cuda::load_driver({"/nonexistent/libcuda.so.1"}); });
  EXPECT_TRUE(text.starts_with("error[E0905]: cannot load the CUDA driver (libcuda.so.1); tried:\n"
                               "  /nonexistent/libcuda.so.1: "))
      << text;
  EXPECT_TRUE(text.ends_with("hint: install the NVIDIA driver, or set TEGULA_LIBCUDA to the path of "
                             "libcuda.so.1\n"))
      << text;
}

TEST(CudaLibraryLoad, BadOverrideNamesTheVariable) {
  ScopedEnv env("TEGULA_LIBCUDA", "/nonexistent/libcuda.so.1");
  std::string text = message_of([] { cuda::load_driver(cuda::driver_candidates()); });
  EXPECT_TRUE(
      text.ends_with("hint: TEGULA_LIBCUDA is set: point it at the driver's libcuda.so.1, or unset it\n"))
      << text;
}

TEST(CudaLibraryLoad, LibraryMissingAFunctionIsSkipped) {
  TempDir tmp;
  std::string partial = fake_library(tmp, "libpartial.so", {"cuInit"});
  std::string text = message_of([&] { cuda::load_driver({partial}); });
  EXPECT_TRUE(contains(text, "  " + partial + ": it does not export cuDriverGetVersion\n")) << text;
}

TEST(CudaLibraryLoad, DriverThatCannotInitializeIsTheAnswerNotASkip) {
  TempDir tmp;
  std::string no_device = fake_library(tmp, "libnodevice.so", kDriverSymbols,
                                       "extern \"C\" int cuInit(unsigned) { return 100; }\n");
  std::string working = fake_library(tmp, "libworking.so", kDriverSymbols,
                                     "extern \"C\" int cuInit(unsigned) { return 0; }\n");
  std::string text = message_of([&] { cuda::load_driver({no_device, working}); });
  EXPECT_EQ(text, "error[E0905]: the CUDA driver " + no_device +
                      " cannot be initialized: CUDA_ERROR_NO_DEVICE (no CUDA-capable device is detected)\n"
                      "hint: no NVIDIA GPU is visible to this process (check CUDA_VISIBLE_DEVICES)\n");
  std::unique_ptr<cuda::DriverApi> api = cuda::load_driver({"/nonexistent/libcuda.so.1", working});
  EXPECT_EQ(api->path, working);
}

TEST(CudaLibraryLoad, StubDriverIsSkipped) {
  const std::string stub = "/usr/local/cuda/lib64/stubs/libcuda.so";
  if (!std::filesystem::exists(stub)) GTEST_SKIP() << "no toolkit stub at " << stub;
  std::string text = message_of([&] { cuda::load_driver({stub}); });
  EXPECT_TRUE(contains(text, "  " + stub + ": a stub library (CUDA_ERROR_STUB_LIBRARY")) << text;
}

TEST(CudaLibraryLoad, NvrtcNewerThanTheDriverIsTheLastResort) {
  TempDir tmp;
  std::string newer = fake_nvrtc(tmp, "libnvrtc-new.so", 99, 1);
  std::string older = fake_nvrtc(tmp, "libnvrtc-old.so", 12, 4);
  EXPECT_EQ(cuda::load_nvrtc({newer, older}, 12080)->path, older);
  EXPECT_EQ(cuda::load_nvrtc({newer, older}, 0)->path, newer);  // no driver: nothing to compare with
  std::unique_ptr<cuda::NvrtcApi> only = cuda::load_nvrtc({newer}, 12080);
  EXPECT_EQ(only->path, newer);
  EXPECT_EQ(only->version_text(), "99.1");
}

TEST(CudaLibraryLoad, AbsentNvrtcSaysWhatToInstall) {
  ScopedEnv env("TEGULA_LIBNVRTC", nullptr);
  std::string text = message_of([] { cuda::load_nvrtc({"/nonexistent/libnvrtc.so.13"}); });
  EXPECT_TRUE(text.starts_with("error[E0905]: cannot load NVRTC (libnvrtc), the CUDA compiler Tegula needs for GPU "
                               "kernels; tried:\n  /nonexistent/libnvrtc.so.13: "))
      << text;
  EXPECT_TRUE(contains(text, "hint: install the CUDA toolkit or the nvidia-cuda-nvrtc wheel")) << text;
}

TEST(CudaLibraryLoad, ResultsAreNamedEvenWithoutADriver) {
  EXPECT_TRUE(cuda::describe_result(700).starts_with("CUDA_ERROR_ILLEGAL_ADDRESS")) << cuda::describe_result(700);
  EXPECT_TRUE(cuda::describe_result(123456).starts_with("CUresult 123456") ||
              cuda::describe_result(123456).starts_with("CUDA_ERROR_UNKNOWN"))
      << cuda::describe_result(123456);
  std::string text = message_of([] { cuda::check(1, "cuLaunchKernel"); });
  EXPECT_TRUE(text.starts_with("error[E0906]: cuLaunchKernel: CUDA_ERROR_INVALID_VALUE")) << text;
}

// --- choosing the architecture -----------------------------------------------------------------

TEST(CudaTarget, ArchitectureChoice) {
  const std::vector<int> nvrtc13 = {75, 80, 86, 87, 88, 89, 90, 100, 103, 110, 120, 121};
  int chosen = 0;
  EXPECT_EQ(cuda::choose_gpu_architecture(90, nvrtc13, &chosen), "sm_90a");
  EXPECT_EQ(chosen, 90);
  EXPECT_EQ(cuda::choose_gpu_architecture(80, nvrtc13, &chosen), "sm_80");
  EXPECT_EQ(cuda::choose_gpu_architecture(100, nvrtc13, &chosen), "sm_100a");
  // An 8.9 device with an NVRTC that stops at 8.6: SASS for 8.6 runs on 8.9.
  EXPECT_EQ(cuda::choose_gpu_architecture(89, {75, 80, 86}, &chosen), "sm_86");
  EXPECT_EQ(chosen, 86);
  // A device newer than NVRTC: PTX the driver compiles.
  EXPECT_EQ(cuda::choose_gpu_architecture(130, nvrtc13, &chosen), "compute_121");
  EXPECT_EQ(chosen, 121);
}

// --- NVRTC ----------------------------------------------------------------------------------------

constexpr const char* kAddSource = R"(
extern "C" __global__ void __launch_bounds__(128) tegula_kernel(const float* x, const float* y, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = x[i] + y[i];
}
)";

TEST(CudaCompile, HandWrittenKernelBecomesACubinForTheRequestedArchitecture) {
  SKIP_WITHOUT(no_nvrtc);
  cuda::NvrtcTarget target = cuda::resolve_target(0, 90);
  EXPECT_EQ(target.gpu_architecture, "sm_90a");
  EXPECT_EQ(target.nvrtc_version, cuda::nvrtc().version_text());
  cuda::Image image = cuda::compile_to_image(kAddSource, "add", target, /*debug=*/false, /*keep_details=*/true);
  ASSERT_GE(image.binary.size(), 4u);
  EXPECT_EQ(image.binary.substr(0, 4), "\x7f" "ELF");
  EXPECT_TRUE(contains(image.ptx, ".entry tegula_kernel")) << image.ptx;
  EXPECT_TRUE(contains(image.ptx, ".target sm_90a")) << image.ptx;
  EXPECT_TRUE(contains(image.log, "registers")) << image.log;

  cuda::Image plain = cuda::compile_to_image(kAddSource, "add", target, false, /*keep_details=*/false);
  EXPECT_TRUE(plain.ptx.empty());
  EXPECT_FALSE(contains(plain.log, "registers")) << plain.log;
}

// NVRTC 12.9+ caches compiled programs (under ~/.nv) and a hit skips ptxas,
// and with it the report. The same source compiled again, as a second
// process would, must still come with its register report.
TEST(CudaCompile, RegisterReportSurvivesNvrtcsOwnCache) {
  SKIP_WITHOUT(no_nvrtc);
  cuda::NvrtcTarget target = cuda::resolve_target(0, 90);
  for (int round = 0; round < 3; ++round) {
    cuda::Image image = cuda::compile_to_image(kAddSource, "add", target, false, /*keep_details=*/true);
    EXPECT_TRUE(contains(image.log, "ptxas info")) << "round " << round << ":\n" << image.log;
  }
}

TEST(CudaCompile, PtxTargetYieldsPtxTheDriverCanLoad) {
  SKIP_WITHOUT(no_nvrtc);
  cuda::NvrtcTarget target{80, "compute_80", cuda::nvrtc().version_text()};
  cuda::Image image = cuda::compile_to_image(kAddSource, "add", target, false, false);
  EXPECT_TRUE(contains(image.binary, ".entry tegula_kernel"));
  EXPECT_EQ(std::strlen(image.binary.c_str()), image.binary.size()) << "PTX must be one NUL-terminated text";
}

TEST(CudaCompile, RejectedSourceIsAnInternalErrorWithNvrtcsLog) {
  SKIP_WITHOUT(no_nvrtc);
  cuda::NvrtcTarget target = cuda::resolve_target(0, 80);
  try {
    cuda::compile_to_image("extern \"C\" __global__ void tegula_kernel() { undefined_thing(); }\n", "broken", target,
                           false, false);
    FAIL() << "NVRTC accepted broken source";
  } catch (const InternalError& e) {
    std::string text = e.what();
    EXPECT_TRUE(contains(text, "rejected the generated CUDA source of 'broken' (options: --gpu-architecture=sm_80 "
                               "-std=c++17 --fmad=true):\n"))
        << text;
    EXPECT_TRUE(contains(text, "undefined_thing")) << text;
  }
}

// --- the disk cache of device images ------------------------------------------------------------

TEST(CudaDiskCache, ImageEntryRoundTripsAndIsVerified) {
  TempDir tmp;
  DiskCache cache(resolve_cache_directory(tmp / "cache"));
  const std::string key(64, 'c');
  CacheManifest manifest;
  manifest.backend = "cuda";
  manifest.kernel_name = "add";
  manifest.params = {ir::Param{"x_ptr", ir::Type::ptr(ir::Scalar::F32), 16}};
  manifest.shape = {256, 65536};
  manifest.artifact_extension = "cubin";
  Stages stages;
  stages.ir.push_back({"lowered", "kernel @add() {}\n"});
  stages.layouts = "%3: blocked<[4], [32], [8], [0]>\n";
  stages.ptx = ".version 9.0\n";
  stages.compile_log = "ptxas info    : Used 12 registers\n";
  stages.source = "extern \"C\" __global__ void tegula_kernel() {}\n";
  std::string image("\x7f" "ELF\0\1\2binary", 12);
  std::string built = cache.temporary_path(key, "cubin");
  backends::write_new_file(built, image);
  cache.store(cache.lock(key), built, manifest, &stages);

  std::optional<CacheEntry> hit = cache.load(key);
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->artifact.bytes, image);
  EXPECT_EQ(hit->manifest.shape.threads, 256);
  EXPECT_EQ(hit->manifest.shape.shared_bytes, 65536);
  std::optional<Stages> loaded = cache.load_stages(key, hit->manifest);
  ASSERT_TRUE(loaded);
  EXPECT_EQ(loaded->layouts, stages.layouts);
  EXPECT_EQ(loaded->ptx, stages.ptx);
  EXPECT_EQ(loaded->compile_log, stages.compile_log);
  EXPECT_EQ(loaded->source, stages.source);
  ASSERT_EQ(loaded->ir.size(), 1u);

  // The manifest names the backend: the driver hands a CUDA entry to the CUDA
  // backend only, never dlopens a cubin.
  EXPECT_EQ(hit->manifest.backend, "cuda");
  testing::write_text(cache.artifact_path(key, "cubin"), "tampered");
  std::string why;
  EXPECT_FALSE(cache.load(key, &why));
  EXPECT_EQ(why, "the artifact does not match the manifest's hash");
}

TEST(CudaDiskCache, ManifestLaunchLineRoundTrips) {
  CacheManifest manifest;
  manifest.backend = "cuda";
  manifest.kernel_name = "k";
  manifest.shape = {128, 0};
  manifest.artifact_extension = "cubin";
  manifest.artifact_sha256 = std::string(64, 'a');
  std::string text = serialize_manifest(manifest);
  EXPECT_TRUE(contains(text, "\nlaunch 128 0\nartifact cubin ")) << text;
  std::optional<CacheManifest> back = parse_manifest(text);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->shape.threads, 128);
  EXPECT_EQ(back->backend, "cuda");
  CacheManifest cpu = manifest;
  cpu.backend = "cpu";
  cpu.shape = {};
  EXPECT_FALSE(contains(serialize_manifest(cpu), "launch"));
  EXPECT_FALSE(parse_manifest(testing::edited(text, "launch 128", "launch 0")));
}

// --- the compile driver's cuda backend ---------------------------------------------------------

constexpr const char* kVectorAdd =
    "def add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):\n"
    "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n"
    "    mask = offs < n\n"
    "    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)\n";

frontend::KernelRequest vector_add() {
  frontend::KernelRequest request;
  request.functions.push_back(testing::source("add", kVectorAdd, 1));
  request.args = {testing::ptr_arg(ir::Scalar::F32), testing::ptr_arg(ir::Scalar::F32),
                  testing::ptr_arg(ir::Scalar::F32), testing::int_arg(ir::Scalar::I32), testing::const_int(1024)};
  return request;
}

class CudaCompilerTest : public ::testing::Test {
 protected:
  CompileOptions cuda_options(int arch = 90, int num_warps = 4) const {
    CompileOptions o;
    o.backend = "cuda";
    o.cache_dir = tmp_ / "cache";
    o.cuda_arch = arch;
    o.num_warps = num_warps;
    return o;
  }
  TempDir tmp_;
  ScopedEnv no_dumps_{"TEGULA_DUMP_DIR", nullptr};
};

TEST_F(CudaCompilerTest, KeyHoldsArchitectureNvrtcAndWarpsButCpuKeysIgnoreWarps) {
  SKIP_WITHOUT(no_nvrtc);
  std::string base = cache_key(vector_add(), cuda_options());
  EXPECT_NE(base, cache_key(vector_add(), cuda_options(80)));
  EXPECT_NE(base, cache_key(vector_add(), cuda_options(90, 8)));
  EXPECT_EQ(base, cache_key(vector_add(), cuda_options()));
  CompileOptions cpu = cuda_options();
  cpu.backend = "cpu";
  std::string cpu_key = cache_key(vector_add(), cpu);
  EXPECT_NE(cpu_key, base);
  cpu.num_warps = 8;
  EXPECT_EQ(cache_key(vector_add(), cpu), cpu_key);
}

TEST_F(CudaCompilerTest, BadNumWarpsAndBackendAreValueErrors) {
  std::string text = message_of([&] { cache_key(vector_add(), cuda_options(90, 3)); });
  EXPECT_EQ(text, "error[E0705]: num_warps must be a power of two, got 3\n");
  text = message_of([&] { cache_key(vector_add(), cuda_options(90, 64)); });
  EXPECT_EQ(text, "error[E0705]: num_warps must be at most 32 (1024 threads per block), got 64\n");
  CompileOptions rocm = cuda_options();
  rocm.backend = "rocm";
  text = message_of([&] { cache_key(vector_add(), rocm); });
  EXPECT_EQ(text, "error[E0705]: backend 'rocm' is not available\nhint: use backend 'cpu' or 'cuda'\n");
}

TEST_F(CudaCompilerTest, CompilesToACachedCubinWithEveryStage) {
  SKIP_WITHOUT(no_nvrtc);
  CompileOptions options = cuda_options();
  options.keep_stages = true;
  std::shared_ptr<CompiledKernel> kernel;
  try {
    kernel = compile(vector_add(), options);
  } catch (const Error& e) {
    if (contains(e.what(), "no CUDA code generator")) GTEST_SKIP() << "the CUDA code generator is not built";
    throw;
  }
  EXPECT_EQ(kernel->backend, &cuda::backend());
  const auto* module = dynamic_cast<const cuda::Module*>(kernel->loaded.get());
  ASSERT_TRUE(module);
  EXPECT_EQ(module->image().substr(0, 4), "\x7f" "ELF");
  EXPECT_GE(module->num_threads(), 32);
  EXPECT_FALSE(kernel->stages.layouts.empty());
  EXPECT_TRUE(contains(kernel->stages.ptx, ".entry tegula_kernel"));
  EXPECT_TRUE(contains(kernel->stages.source, "tegula_kernel"));
  std::string key = kernel->key;
  kernel.reset();

  int64_t hits = stats().disk_hits.load();
  std::shared_ptr<CompiledKernel> again = compile(vector_add(), options);
  EXPECT_EQ(stats().disk_hits.load(), hits + 1);
  EXPECT_TRUE(again->from_disk_cache);
  EXPECT_EQ(again->key, key);
  EXPECT_TRUE(contains(again->stages.ptx, ".entry tegula_kernel"));

  // A CUDA kernel cannot run on the CPU launcher, and the reverse.
  const int64_t grid[3] = {1, 1, 1};
  EXPECT_EQ(message_of([&] { again->launch(grid, {}); }),
            "error[E0706]: kernel 'add' was compiled for CUDA; launch it on a device and stream\n");
}

TEST(CudaLaunch, CpuKernelRefusesADevice) {
  TempDir tmp;
  testing::build_shared_object(
      "#include <cstdint>\nextern \"C\" void tegula_kernel(void* const*, const int32_t*, int64_t, int64_t) {}\n",
      tmp / "k.so");
  CompiledKernel cpu;
  cpu.name = "k";
  cpu.loaded = backends::cpu::CpuKernel::open(tmp / "k.so");
  const int64_t grid[3] = {1, 1, 1};
  EXPECT_EQ(message_of([&] { cpu.launch(grid, {}, backends::Stream{0, 0}); }),
            "error[E0706]: kernel 'k' was compiled for the cpu backend; it cannot be launched on a CUDA device\n");
}

// --- on a GPU -------------------------------------------------------------------------------------

// Device memory for a test, freed at scope exit.
class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t bytes) : bytes_(bytes) {
    cuda::ScopedContext context(0);
    cuda::check(cuda::driver().cuMemAlloc(&address_, bytes), "cuMemAlloc");
  }
  ~DeviceBuffer() {
    cuda::ScopedContext context(0);
    cuda::driver().cuMemFree(address_);
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void upload(const void* data) {
    cuda::ScopedContext context(0);
    cuda::check(cuda::driver().cuMemcpyHtoD(address_, data, bytes_), "cuMemcpyHtoD");
  }
  void download(void* data) const {
    cuda::ScopedContext context(0);
    cuda::check(cuda::driver().cuMemcpyDtoH(data, address_, bytes_), "cuMemcpyDtoH");
  }
  ArgValue arg() const { return ArgValue{ArgValue::Kind::Pointer, address_, 0.0}; }

 private:
  size_t bytes_;
  cuda::CUdeviceptr address_ = 0;
};

void synchronize() {
  cuda::ScopedContext context(0);
  cuda::check(cuda::driver().cuCtxSynchronize(), "cuCtxSynchronize");
}

// A CompiledKernel around a hand-written CUDA kernel, as the driver would make it.
CompiledKernel hand_written(const std::string& source, const std::string& name, std::vector<ir::Param> params,
                            int threads, int shared_bytes, bool synchronize = false) {
  cuda::NvrtcTarget target = cuda::resolve_target(0, 0);
  cuda::Image image = cuda::compile_to_image(source, name, target, false, false);
  CompiledKernel kernel;
  kernel.name = name;
  kernel.backend = &cuda::backend();
  kernel.params = std::move(params);
  kernel.shape = {threads, shared_bytes};
  kernel.loaded = std::make_shared<cuda::Module>(name, image.binary, threads, shared_bytes, synchronize);
  return kernel;
}

const cuda::Module& module_of(const CompiledKernel& kernel) {
  return dynamic_cast<const cuda::Module&>(*kernel.loaded);
}

// The caller's stream on `device`: the legacy default stream.
backends::Stream default_stream(int device = 0) { return backends::Stream{0, device}; }

std::vector<ir::Param> add_params() {
  auto f32p = ir::Type::ptr(ir::Scalar::F32);
  return {{"x", f32p, 16}, {"y", f32p, 16}, {"out", f32p, 16}, {"n", ir::Type::of(ir::Scalar::I32), 1}};
}

TEST(CudaLaunch, HandWrittenVectorAddMatchesTheHost) {
  SKIP_WITHOUT(no_gpu);
  CompiledKernel kernel = hand_written(kAddSource, "add", add_params(), 128, 0);
  const int n = 100003;  // not a multiple of the block: the tail is masked
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-10.0f, 10.0f);
  std::vector<float> x(n), y(n), out(n, 0.0f);
  for (int i = 0; i < n; ++i) x[i] = dist(rng), y[i] = dist(rng);
  DeviceBuffer dx(n * 4), dy(n * 4), dout(n * 4);
  dx.upload(x.data());
  dy.upload(y.data());
  const int64_t grid[3] = {(n + 127) / 128, 1, 1};
  kernel.launch(grid, {dx.arg(), dy.arg(), dout.arg(), ArgValue{ArgValue::Kind::Int, n, 0.0}}, default_stream());
  synchronize();
  dout.download(out.data());
  for (int i = 0; i < n; ++i) ASSERT_EQ(out[i], x[i] + y[i]) << "element " << i;

  cuda::Resources used = module_of(kernel).usage(0);
  EXPECT_GT(used.registers, 0);
  EXPECT_GE(used.max_threads, 128);
  EXPECT_EQ(used.local_bytes, 0);
}

TEST(CudaLaunch, DynamicSharedMemoryAbove48KiBIsUnlocked) {
  SKIP_WITHOUT(no_gpu);
  const char* source = R"(
extern "C" __global__ void tegula_kernel(float* out) {
  extern __shared__ float staged[];
  const int count = 100 * 1024 / 4;
  for (int i = threadIdx.x; i < count; i += blockDim.x) staged[i] = float(i);
  __syncthreads();
  if (threadIdx.x == 0) out[0] = staged[count - 1];
}
)";
  CompiledKernel kernel =
      hand_written(source, "staged", {{"out", ir::Type::ptr(ir::Scalar::F32), 16}}, 256, 100 * 1024);
  DeviceBuffer out(4);
  const int64_t grid[3] = {1, 1, 1};
  kernel.launch(grid, {out.arg()}, default_stream());
  synchronize();
  float value = 0;
  out.download(&value);
  EXPECT_EQ(value, float(100 * 1024 / 4 - 1));
  EXPECT_EQ(module_of(kernel).usage(0).dynamic_shared_bytes, 100 * 1024);
}

TEST(CudaLaunch, TooMuchSharedMemoryNamesTheKernel) {
  SKIP_WITHOUT(no_gpu);
  CompiledKernel kernel = hand_written(kAddSource, "greedy", add_params(), 128, 64 << 20);
  DeviceBuffer buffer(16);
  const int64_t grid[3] = {1, 1, 1};
  std::string text = message_of([&] {
    kernel.launch(grid, {buffer.arg(), buffer.arg(), buffer.arg(), ArgValue{ArgValue::Kind::Int, 4, 0.0}}, default_stream());
  });
  EXPECT_TRUE(text.starts_with("error[E0803]: CUDA kernel 'greedy' on device 0 needs 67108864 bytes of shared memory per "
                               "block; the device allows "))
      << text;
}

TEST(CudaLaunch, DriverRefusalNamesKernelAndResult) {
  SKIP_WITHOUT(no_gpu);
  // 2048 threads per block is beyond every GPU: the launch itself fails, the context stays usable.
  CompiledKernel kernel = hand_written(kAddSource, "wide", add_params(), 2048, 0);
  DeviceBuffer buffer(16);
  const int64_t grid[3] = {1, 1, 1};
  std::string text = message_of([&] {
    kernel.launch(grid, {buffer.arg(), buffer.arg(), buffer.arg(), ArgValue{ArgValue::Kind::Int, 4, 0.0}}, default_stream());
  });
  EXPECT_TRUE(text.starts_with("error[E0906]: cannot launch CUDA kernel 'wide' (grid (1, 1, 1), 2048 threads, 0 bytes of "
                               "dynamic shared memory) on device 0: CUDA_ERROR_"))
      << text;
}

TEST(CudaLaunch, GridAndDeviceOutOfRangeAreValueErrors) {
  SKIP_WITHOUT(no_gpu);
  CompiledKernel kernel = hand_written(kAddSource, "add", add_params(), 128, 0);
  DeviceBuffer buffer(16);
  std::vector<ArgValue> args = {buffer.arg(), buffer.arg(), buffer.arg(), ArgValue{ArgValue::Kind::Int, 0, 0.0}};
  const int64_t tall[3] = {1, 70000, 1};
  std::string text = message_of([&] { kernel.launch(tall, args, default_stream()); });
  EXPECT_EQ(text,
            "error[E0704]: the grid (1, 70000, 1) of CUDA kernel 'add' is out of range: dimension 1 must be between 0 and "
            "65535\nhint: put the largest dimension first: program_id(0) may go up to 2^31 - 1\n");
  const int64_t grid[3] = {1, 1, 1};
  text = message_of([&] { kernel.launch(grid, args, default_stream(4096)); });
  EXPECT_TRUE(text.starts_with("error[E0905]: CUDA device 4096 does not exist (this machine has ")) << text;
  const int64_t empty[3] = {0, 1, 1};
  EXPECT_NO_THROW(kernel.launch(empty, args, default_stream()));
}

TEST_F(CudaCompilerTest, CompiledVectorAddRunsOnTheDevice) {
  SKIP_WITHOUT(no_gpu);
  std::shared_ptr<CompiledKernel> kernel;
  try {
    kernel = compile(vector_add(), cuda_options(0));
  } catch (const Error& e) {
    if (contains(e.what(), "no CUDA code generator")) GTEST_SKIP() << "the CUDA code generator is not built";
    throw;
  }
  const int n = 5000;
  std::vector<float> x(n), y(n), out(n, -1.0f);
  for (int i = 0; i < n; ++i) x[i] = 0.5f * i, y[i] = 1.0f - i;
  DeviceBuffer dx(n * 4), dy(n * 4), dout(n * 4);
  dx.upload(x.data());
  dy.upload(y.data());
  const int64_t grid[3] = {(n + 1023) / 1024, 1, 1};
  kernel->launch(grid, {dx.arg(), dy.arg(), dout.arg(), ArgValue{ArgValue::Kind::Int, n, 0.0}}, default_stream());
  synchronize();
  dout.download(out.data());
  for (int i = 0; i < n; ++i) ASSERT_EQ(out[i], x[i] + y[i]) << "element " << i;
}

// Host time per launch, printed for the record (tools/launch_profile.py puts
// the Python side beside it): the driver's own cuLaunchKernel, Module::enqueue
// and CompiledKernel::launch, 256 launches per round before one synchronize.
// Asserts only that every path ran the kernel.
TEST(CudaLaunchCost, HostTimePerLaunchIsPrinted) {
  SKIP_WITHOUT(no_gpu);
  CompiledKernel kernel = hand_written(kAddSource, "add", add_params(), 128, 0);
  DeviceBuffer dx(16), dy(16), dout(16);
  const float one[4] = {1, 1, 1, 1}, two[4] = {2, 2, 2, 2};
  dx.upload(one);
  dy.upload(two);
  std::vector<ArgValue> args = {dx.arg(), dy.arg(), dout.arg(), ArgValue{ArgValue::Kind::Int, 4, 0.0}};
  const int64_t grid[3] = {1, 1, 1};
  kernel.launch(grid, args, default_stream());  // loads the module
  synchronize();

  cuda::ScopedContext context(0);  // as under torch: the context is already current
  const cuda::DriverApi& api = cuda::driver();
  cuda::CUmodule module = nullptr;
  cuda::check(api.cuModuleLoadData(&module, module_of(kernel).image().c_str()), "cuModuleLoadData");
  cuda::CUfunction function = nullptr;
  cuda::check(api.cuModuleGetFunction(&function, module, "tegula_kernel"), "cuModuleGetFunction");
  uint64_t x = dx.arg().bits, y = dy.arg().bits, out = dout.arg().bits;
  int n = 4;
  void* params[] = {&x, &y, &out, &n};

  auto per_launch_us = [&](const std::function<void()>& launch) {
    constexpr int kLaunches = 256, kRounds = 21;
    std::vector<double> samples;
    for (int round = 0; round < kRounds; ++round) {
      synchronize();
      auto start = std::chrono::steady_clock::now();
      for (int i = 0; i < kLaunches; ++i) launch();
      samples.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() /
                        kLaunches);
    }
    synchronize();
    std::sort(samples.begin(), samples.end());
    return samples[samples.size() / 2];
  };
  double raw = per_launch_us([&] {
    cuda::check(api.cuLaunchKernel(function, 1, 1, 1, 128, 1, 1, 0, nullptr, params, nullptr), "cuLaunchKernel");
  });
  double module_launch = per_launch_us([&] { module_of(kernel).enqueue(grid, params, 0, 0); });
  double compiled_launch = per_launch_us([&] { kernel.launch(grid, args, default_stream()); });
  std::printf("host time per launch: cuLaunchKernel %.3f us, Module::enqueue %.3f us, CompiledKernel::launch %.3f us\n",
              raw, module_launch, compiled_launch);
  api.cuModuleUnload(module);
  std::vector<float> got(4);
  dout.download(got.data());
  EXPECT_EQ(got[0], 3.0f);
  EXPECT_EQ(got[3], 3.0f);
}

}  // namespace
}  // namespace tegula::runtime
