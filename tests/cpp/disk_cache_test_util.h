// What the disk cache tests share: a stand-in kernel library, a sample
// manifest and a fixture with a private cache directory.
#pragma once

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdint>
#include <filesystem>
#include <string>

#include "backends/cpu/backend.h"
#include "backends/cpu/kernel.h"
#include "runtime/disk_cache.h"
#include "runtime_test_util.h"
#include "support/sha256.h"

namespace tegula::testing {

using runtime::CacheManifest;
using runtime::DiskCache;
using runtime::Stages;

inline const std::string kKey = sha256_hex("a kernel");

// A stand-in for a compiled kernel: records its launch range.
inline constexpr const char* kKernelSource = R"(
#include <cstdint>
extern "C" void tegula_kernel(void* const* args, const int32_t* grid, int64_t first, int64_t last) {
  int64_t* out = *static_cast<int64_t* const*>(args[0]);
  out[0] = first;
  out[1] = last;
}
extern "C" int tegula_test_marker() { return 7; }
)";

// A manifest's text with its `sum` line made to match its other lines again,
// as the writer would have signed it: an edit that the parser must refuse
// for what it says, not only for the broken sum.
inline std::string resigned(std::string text) {
  size_t sum = text.rfind("\nsum ");
  if (sum == std::string::npos) return text;
  text.resize(sum + 1);
  text += "sum " + sha256_hex(text) + "\nend\n";
  return text;
}

// `text` with the first `from` replaced by `to`, re-signed.
inline std::string edited(const std::string& text, const std::string& from, const std::string& to) {
  std::string changed = text;
  size_t at = changed.find(from);
  EXPECT_NE(at, std::string::npos) << "no '" << from << "' in\n" << text;
  if (at != std::string::npos) changed.replace(at, from.size(), to);
  return resigned(std::move(changed));
}

inline CacheManifest sample_manifest() {
  CacheManifest m;
  m.backend = "cpu";
  m.artifact_extension = "so";
  m.kernel_name = "add";
  m.params = {{"x_ptr", ir::Type::ptr(ir::Scalar::F32), 16},
              {"out", ir::Type::ptr(ir::Scalar::BF16), 1},
              {"n", ir::Type::of(ir::Scalar::I32), 16},
              {"flag", ir::Type::of(ir::Scalar::I1), 1}};
  return m;
}

// A verified entry, loaded by the CPU backend as the compile driver would.
struct LoadedEntry {
  CacheManifest manifest;
  std::shared_ptr<const backends::cpu::CpuKernel> kernel;
};

inline std::optional<LoadedEntry> load_cpu_entry(const DiskCache& cache, const std::string& key,
                                                 std::string* why = nullptr) {
  std::string reason;
  std::optional<runtime::CacheEntry> entry = cache.load(key, &reason);
  std::shared_ptr<const backends::LoadedKernel> loaded;
  if (entry) loaded = backends::cpu::backend().load(entry->artifact, backends::KernelInfo{}, &reason);
  if (!loaded) {
    if (why) *why = reason;
    return std::nullopt;
  }
  return LoadedEntry{std::move(entry->manifest), std::dynamic_pointer_cast<const backends::cpu::CpuKernel>(loaded)};
}

inline int mode_of(const std::string& path) {
  struct stat info{};
  EXPECT_EQ(::stat(path.c_str(), &info), 0) << path;
  return info.st_mode & 0777;
}

// A private cache directory and the stand-in kernel built next to it.
class DiskCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    directory_ = runtime::resolve_cache_directory(tmp_ / "cache");
    build_shared_object(kKernelSource, tmp_ / "kernel.so");
  }

  // What the driver does after a build: a fresh library in the cache dir, published.
  void publish(const DiskCache& cache, const Stages* stages = nullptr) {
    std::string built = cache.temporary_path(kKey, "so");
    std::filesystem::copy_file(tmp_ / "kernel.so", built);
    CacheManifest m = sample_manifest();
    cache.store(cache.lock(kKey), built, m, stages);
    EXPECT_FALSE(std::filesystem::exists(built));
  }

  static int64_t run_entry(const LoadedEntry& hit) {
    int64_t out[2] = {-1, -1};
    int64_t* out_ptr = out;
    void* args[] = {&out_ptr};
    int32_t grid[3] = {1, 1, 1};
    hit.kernel->entry()(args, grid, 3, 9);
    return out[0] * 100 + out[1];
  }

  TempDir tmp_;
  std::string directory_;
};

}  // namespace tegula::testing
