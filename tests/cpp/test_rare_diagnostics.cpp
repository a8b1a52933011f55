// Error codes whose situation a normal run never meets (docs/diagnostics.md):
// a cache entry that cannot be written, a build without the CUDA code
// generator. Each is built here on purpose, so that every code of the
// catalogue has a test that raises it (tests/python/test_diagnostic_codes.py
// names these tests).
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "disk_cache_test_util.h"
#include "runtime/disk_cache.h"
#include "runtime/errors.h"

namespace tegula::runtime {
namespace {

using testing::DiskCacheTest;
using testing::kKey;
using testing::sample_manifest;

// A directory where the entry's library belongs: rename() cannot replace a
// non-empty directory with a file, for any user (root included, so this works
// where a read-only directory would not), the way a full or read-only disk
// refuses the write.
TEST_F(DiskCacheTest, AnEntryThatCannotBeWrittenIsE0902) {
  DiskCache cache(directory_);
  std::filesystem::create_directories(cache.artifact_path(kKey, "so") + "/occupied");
  std::string built = cache.temporary_path(kKey, "so");
  std::filesystem::copy_file(tmp_ / "kernel.so", built);
  CacheManifest manifest = sample_manifest();
  try {
    cache.store(cache.lock(kKey), built, manifest, nullptr);
    FAIL() << "stored over a directory";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Diag::CacheWriteFailed);
    EXPECT_EQ(e.kind(), ErrorKind::Value);
    std::string text = e.what();
    EXPECT_TRUE(text.starts_with("error[E0902]: cannot write " + cache.artifact_path(kKey, "so") + ": ")) << text;
  }
  // The failed store leaves no half-written file behind.
  EXPECT_FALSE(std::filesystem::exists(built));
}

// Builds without src/backends/cuda cannot be made from this tree's test
// configuration; the error they raise is this function's.
TEST(BackendNotBuilt, IsAValueErrorCodedE0804) {
  try {
    fail_backend_not_built();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Diag::BackendNotBuilt);
    EXPECT_EQ(e.kind(), ErrorKind::Value);
    EXPECT_EQ(std::string(e.what()),
              "error[E0804]: this build of Tegula has no CUDA code generator (src/backends/cuda was not built)\n"
              "hint: use backend 'cpu'\n");
  }
}

}  // namespace
}  // namespace tegula::runtime
