// The disk cache against what it did not write (symbolic links, FIFOs,
// other users' or group-writable files, tampered and truncated device
// images, directories others can swap) and against concurrent writers from
// several threads and processes (the entry lock).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <ctime>
#include <filesystem>
#include <thread>
#include <vector>

#include "disk_cache_test_util.h"
#include "backends/cuda/backend.h"
#include "runtime/disk_cache.h"
#include "backends/cpu/shared_library.h"
#include "runtime_test_util.h"
#include "support/sha256.h"

namespace tegula::runtime {
namespace {

using backends::cpu::LibraryError;
using backends::cpu::SharedLibrary;

using testing::DiskCacheTest;
using testing::kKey;
using testing::load_cpu_entry;
using testing::LoadedEntry;
using testing::mode_of;
using testing::read_text;
using testing::sample_manifest;
using testing::TempDir;
using testing::write_text;

// --- the directory --------------------------------------------------------------------------

// A link is followed once, to the real directory, which must pass the checks
// itself; the real path is what every later open uses.
TEST(CacheDirectory, ALinkIsResolvedAndItsTargetChecked) {
  TempDir tmp;
  std::string open_dir = tmp / "open";
  ASSERT_EQ(::mkdir(open_dir.c_str(), 0700), 0);
  ASSERT_EQ(::chmod(open_dir.c_str(), 0777), 0);
  std::filesystem::create_symlink(open_dir, tmp / "link");
  try {
    resolve_cache_directory(tmp / "link");
    FAIL() << "accepted a link to a world-writable directory";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "error[E0901]: the cache directory " + tmp / "link" + " (a link to " + open_dir +
                  ") is writable by group or others; cached kernels are code Tegula executes, so it must be "
                  "private\n"
                  "hint: run `chmod 700 " + open_dir + "`, or set TEGULA_CACHE_DIR to a private directory\n");
  }
  std::string private_dir = tmp / "private";
  ASSERT_EQ(::mkdir(private_dir.c_str(), 0700), 0);
  std::filesystem::create_symlink(private_dir, tmp / "good-link");
  EXPECT_EQ(resolve_cache_directory(tmp / "good-link"), private_dir);
}

// Whoever can write to a parent without the sticky bit can swap the cache
// directory for their own; a sticky parent (like /tmp) is fine.
TEST(CacheDirectory, RefusesAParentAnyoneCanWriteTo) {
  TempDir tmp;
  std::string parent = tmp / "public";
  ASSERT_EQ(::mkdir(parent.c_str(), 0700), 0);
  ASSERT_EQ(::chmod(parent.c_str(), 0777), 0);
  std::string dir = parent + "/cache";
  try {
    resolve_cache_directory(dir);
    FAIL() << "accepted a cache directory inside a world-writable one";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "error[E0901]: the cache directory " + dir + " is inside " + parent +
                  ", which anyone can write to: another user could replace the cache with their own code\n"
                  "hint: set TEGULA_CACHE_DIR to a private directory elsewhere, or run `chmod o-w " + parent +
                  "`\n");
  }
  EXPECT_EQ(mode_of(dir), 0700);  // created before the check refused it
  ASSERT_EQ(::chmod(parent.c_str(), 01777), 0);
  EXPECT_EQ(resolve_cache_directory(dir), dir);
  ASSERT_EQ(::chmod(parent.c_str(), 0770), 0);  // group-writable parents are allowed
  EXPECT_EQ(resolve_cache_directory(dir), dir);
}

TEST(CacheDirectory, RefusesADirectoryOfAnotherUser) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to give a directory away";
  TempDir tmp;
  std::string dir = tmp / "theirs";
  ASSERT_EQ(::mkdir(dir.c_str(), 0700), 0);
  ASSERT_EQ(::chown(dir.c_str(), 65534, 65534), 0);
  try {
    resolve_cache_directory(dir);
    FAIL() << "accepted another user's directory";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "error[E0901]: the cache directory " + dir +
                  " is owned by another user (uid 65534); cached kernels are code Tegula executes, so it must "
                  "be your own\n"
                  "hint: set TEGULA_CACHE_DIR to a directory you own\n");
  }
}

// --- files the cache did not write ------------------------------------------------------

// Entry files must be regular files of this user that nobody else may write:
// anything else is refused before its bytes are even hashed, and a rebuild
// (a rename() over the name) replaces it.
TEST_F(DiskCacheTest, SymbolicLinksAreRefusedEvenToAMatchingFile) {
  DiskCache cache(directory_);
  publish(cache);
  std::string real = tmp_ / "elsewhere.so";
  std::filesystem::rename(cache.artifact_path(kKey, "so"), real);  // same bytes, hash still matches
  std::filesystem::create_symlink(real, cache.artifact_path(kKey, "so"));
  std::string why;
  EXPECT_FALSE(load_cpu_entry(cache, kKey, &why));
  EXPECT_EQ(why, "the artifact is a symbolic link");

  publish(cache);
  EXPECT_FALSE(std::filesystem::is_symlink(cache.artifact_path(kKey, "so")));
  EXPECT_TRUE(std::filesystem::exists(real));  // the link was replaced, not followed
  ASSERT_TRUE(load_cpu_entry(cache, kKey, &why)) << why;

  std::string manifest = tmp_ / "elsewhere.meta";
  std::filesystem::rename(cache.manifest_path(kKey), manifest);
  std::filesystem::create_symlink(manifest, cache.manifest_path(kKey));
  EXPECT_FALSE(load_cpu_entry(cache, kKey, &why));
  EXPECT_EQ(why, "the manifest is a symbolic link");
  EXPECT_FALSE(cache.load_manifest(kKey));
}

TEST_F(DiskCacheTest, FilesWritableByOthersAreRefused) {
  DiskCache cache(directory_);
  publish(cache);
  ASSERT_EQ(::chmod(cache.artifact_path(kKey, "so").c_str(), 0722), 0);
  std::string why;
  EXPECT_FALSE(load_cpu_entry(cache, kKey, &why));
  EXPECT_EQ(why, "the artifact is writable by group or others");
  ASSERT_EQ(::chmod(cache.artifact_path(kKey, "so").c_str(), 0700), 0);
  ASSERT_EQ(::chmod(cache.manifest_path(kKey).c_str(), 0666), 0);
  EXPECT_FALSE(load_cpu_entry(cache, kKey, &why));
  EXPECT_EQ(why, "the manifest is writable by group or others");
}

// Only root can put another user's file into a private directory; it still is
// not loaded.
TEST_F(DiskCacheTest, FilesOwnedByAnotherUserAreRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to give a file away";
  DiskCache cache(directory_);
  publish(cache);
  ASSERT_EQ(::chown(cache.artifact_path(kKey, "so").c_str(), 65534, 65534), 0);
  std::string why;
  EXPECT_FALSE(load_cpu_entry(cache, kKey, &why));
  EXPECT_EQ(why, "the artifact is owned by another user (uid 65534)");
  publish(cache);
  EXPECT_TRUE(load_cpu_entry(cache, kKey, &why)) << why;
}

TEST_F(DiskCacheTest, AFifoInPlaceOfAFileIsRefusedWithoutHanging) {
  DiskCache cache(directory_);
  ASSERT_EQ(::mkfifo(cache.manifest_path(kKey).c_str(), 0600), 0);
  std::string why;
  EXPECT_FALSE(load_cpu_entry(cache, kKey, &why));
  EXPECT_EQ(why, "the manifest is not a regular file");
  std::filesystem::remove(cache.manifest_path(kKey));
  publish(cache);
  std::filesystem::remove(cache.artifact_path(kKey, "so"));
  ASSERT_EQ(::mkfifo(cache.artifact_path(kKey, "so").c_str(), 0600), 0);
  EXPECT_FALSE(load_cpu_entry(cache, kKey, &why));
  EXPECT_EQ(why, "the artifact is not a regular file");
}

// Whatever the umask gave the built file, the published library is private.
TEST_F(DiskCacheTest, StoreMakesTheLibraryPrivate) {
  DiskCache cache(directory_);
  std::string built = cache.temporary_path(kKey, "so");
  std::filesystem::copy_file(tmp_ / "kernel.so", built);
  ASSERT_EQ(::chmod(built.c_str(), 0777), 0);
  CacheManifest m = sample_manifest();
  cache.store(cache.lock(kKey), built, m, nullptr);
  EXPECT_EQ(mode_of(cache.artifact_path(kKey, "so")), 0700);
  EXPECT_EQ(mode_of(cache.manifest_path(kKey)), 0600);
  EXPECT_EQ(mode_of(cache.lock_path(kKey)), 0600);
  EXPECT_TRUE(load_cpu_entry(cache, kKey));
}

// A process killed between writing a temporary file and renaming it leaves
// the file behind; the next build removes it once it is an hour old, and
// leaves younger ones (a concurrent writer's) alone.
TEST_F(DiskCacheTest, StaleTemporaryFilesAreRemovedByTheNextBuild) {
  DiskCache cache(directory_);
  std::string stale = cache.temporary_path(sha256_hex("another kernel"), "so");
  std::string stale_source = directory_ + "/.tegula-a1B2c3.cpp";  // the C++ toolchain's
  std::string fresh = cache.temporary_path(sha256_hex("another kernel"), "part");
  write_text(stale, "half a library");
  write_text(stale_source, "int half_a_kernel");
  write_text(fresh, "being written");
  struct timespec two_hours_ago[2] = {{::time(nullptr) - 7200, 0}, {::time(nullptr) - 7200, 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, stale.c_str(), two_hours_ago, 0), 0);
  ASSERT_EQ(::utimensat(AT_FDCWD, stale_source.c_str(), two_hours_ago, 0), 0);
  EXPECT_FALSE(load_cpu_entry(cache, kKey));  // loading never deletes anything
  EXPECT_TRUE(std::filesystem::exists(stale));
  publish(cache);
  EXPECT_FALSE(std::filesystem::exists(stale));
  EXPECT_FALSE(std::filesystem::exists(stale_source));
  EXPECT_TRUE(std::filesystem::exists(fresh));
}

// CUDA entries: the device image goes through the same checks, and the
// CUDA backend loads only what the manifest describes as its own.
TEST_F(DiskCacheTest, DeviceImagesAreVerifiedLikeLibraries) {
  DiskCache cache(directory_);
  CacheManifest m = sample_manifest();
  m.backend = "cuda";
  m.artifact_extension = "cubin";
  m.shape = {128, 1024};
  std::string image = "//\n// Generated by NVIDIA NVVM Compiler\n.version 8.0\n.target sm_90a\n";
  auto store_image = [&] {
    std::string built = cache.temporary_path(kKey, "cubin");
    backends::write_new_file(built, image);  // as the CUDA backend's build writes it
    cache.store(cache.lock(kKey), built, m, nullptr);
  };
  store_image();
  std::string image_path = cache.artifact_path(kKey, "cubin");
  std::string why;
  std::optional<CacheEntry> hit = cache.load(kKey, &why);
  ASSERT_TRUE(hit) << why;
  EXPECT_EQ(hit->artifact.bytes, image);
  EXPECT_EQ(hit->artifact.path, image_path);
  EXPECT_EQ(hit->manifest.backend, "cuda");
  EXPECT_EQ(hit->manifest.shape.threads, 128);
  EXPECT_EQ(hit->manifest.shape.shared_bytes, 1024);
  EXPECT_EQ(mode_of(image_path), 0600);

  std::string tampered = image;
  tampered[tampered.size() / 2] ^= 0x20;
  write_text(image_path, tampered);
  EXPECT_FALSE(cache.load(kKey, &why));
  EXPECT_EQ(why, "the artifact does not match the manifest's hash");
  write_text(image_path, image.substr(0, 10));
  EXPECT_FALSE(cache.load(kKey, &why));
  EXPECT_EQ(why, "the artifact does not match the manifest's hash");
  std::filesystem::remove(image_path);
  std::filesystem::create_symlink(tmp_ / "image", image_path);
  write_text(tmp_ / "image", image);
  EXPECT_FALSE(cache.load(kKey, &why));
  EXPECT_EQ(why, "the artifact is a symbolic link");

  store_image();  // the rebuild repairs it
  ASSERT_TRUE(cache.load(kKey, &why)) << why;

  std::string manifest = read_text(cache.manifest_path(kKey));
  write_text(cache.manifest_path(kKey), manifest.substr(0, manifest.size() - 4));
  EXPECT_FALSE(cache.load(kKey, &why));
  EXPECT_EQ(why, "the manifest is truncated or malformed");

  publish(cache);  // a CPU entry under the key: its manifest says so, and it has no block size
  hit = cache.load(kKey, &why);
  ASSERT_TRUE(hit) << why;
  EXPECT_EQ(hit->manifest.backend, "cpu");
  backends::KernelInfo info;
  info.name = hit->manifest.kernel_name;
  info.shape = hit->manifest.shape;
  EXPECT_FALSE(backends::cuda::backend().load(hit->artifact, info, &why));
  EXPECT_EQ(why, "the manifest gives the kernel no block size");
}

// --- concurrency ----------------------------------------------------------------------------

// A build of the stand-in kernel that differs from every other build byte
// for byte (as two real compiles of one kernel do: the temporary source name
// lands in the symbol table), published the way the driver does.
void publish_unique_build(const DiskCache& cache, const std::string& library, const std::string& tag) {
  EntryLock held = cache.lock(kKey);
  std::string built = cache.temporary_path(kKey, "so");
  write_text(built, read_text(library) + tag);  // trailing bytes after the ELF image still load
  CacheManifest m = sample_manifest();
  cache.store(held, built, m, nullptr);
}

// What the driver does to get a kernel: load without the lock; on a miss,
// take the lock (waiting for a writer) and load again.
std::optional<LoadedEntry> load_like_the_driver(const DiskCache& cache, std::string* why) {
  if (std::optional<LoadedEntry> hit = load_cpu_entry(cache, kKey, why)) return hit;
  EntryLock held = cache.lock(kKey);
  return load_cpu_entry(cache, kKey, why);
}

// Several processes rebuild and publish the same key at once (each build
// different) while reading it back like the driver: every read after the lock
// finds a verified entry, and the entry left at the end is consistent. Without
// the lock, two writers interleaving could leave one's .so with the other's
// manifest for good.
TEST_F(DiskCacheTest, ConcurrentWritersFromSeveralProcesses) {
  DiskCache cache(directory_);
  constexpr int kWriters = 6;
  constexpr int kRounds = 15;
  std::vector<pid_t> children;
  for (int w = 0; w < kWriters; ++w) {
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      int status = 0;
      try {
        for (int round = 0; round < kRounds; ++round) {
          publish_unique_build(cache, tmp_ / "kernel.so", "w" + std::to_string(w) + "r" + std::to_string(round));
          std::string why;
          std::optional<LoadedEntry> hit = load_like_the_driver(cache, &why);
          if (!hit || run_entry(*hit) != 309) status = 2;
        }
      } catch (...) {
        status = 3;
      }
      ::_exit(status);
    }
    children.push_back(pid);
  }
  int readers_failed = 0;
  for (int i = 0; i < 40; ++i) {
    std::string why;
    if (!load_like_the_driver(cache, &why) && why != "no entry") ++readers_failed;
  }
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0);
  }
  EXPECT_EQ(readers_failed, 0);
  std::string why;
  std::optional<LoadedEntry> hit = load_cpu_entry(cache, kKey, &why);  // no lock: nothing is being written
  ASSERT_TRUE(hit) << why;
  EXPECT_EQ(run_entry(*hit), 309);
  // No temporary file is left behind.
  for (const auto& item : std::filesystem::directory_iterator(directory_))
    EXPECT_FALSE(item.path().filename().string().starts_with(".tmp-")) << item.path();
}

TEST_F(DiskCacheTest, ConcurrentWritersFromSeveralThreads) {
  DiskCache cache(directory_);
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int round = 0; round < 10; ++round) {
        publish_unique_build(cache, tmp_ / "kernel.so", "t" + std::to_string(t) + "r" + std::to_string(round));
        std::string why;
        if (!load_like_the_driver(cache, &why)) ++failures;
      }
    });
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_TRUE(load_cpu_entry(cache, kKey));
}

// The lock makes a second process wait for the build in progress and then
// find the entry: each kernel is built once however many processes want it.
TEST_F(DiskCacheTest, TheLockMakesOthersWaitForTheBuildInProgress) {
  DiskCache cache(directory_);
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    EntryLock held = cache.lock(kKey);
    char byte = 1;
    (void)!::write(ready[1], &byte, 1);
    ::usleep(300 * 1000);  // "building"
    std::string built = cache.temporary_path(kKey, "so");
    std::filesystem::copy_file(tmp_ / "kernel.so", built);
    CacheManifest m = sample_manifest();
    cache.store(held, built, m, nullptr);
    ::_exit(0);
  }
  char byte = 0;
  ASSERT_EQ(::read(ready[0], &byte, 1), 1);
  EXPECT_FALSE(load_cpu_entry(cache, kKey));  // still building
  {
    EntryLock held = cache.lock(kKey);  // blocks until the child has published
    EXPECT_TRUE(held.held());
    std::string why;
    std::optional<LoadedEntry> hit = load_cpu_entry(cache, kKey, &why);
    ASSERT_TRUE(hit) << why;
    EXPECT_EQ(run_entry(*hit), 309);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  ::close(ready[0]);
  ::close(ready[1]);
}

// A builder killed while holding the lock does not block anyone: the kernel
// drops a dead process's flocks.
TEST_F(DiskCacheTest, ALockDiesWithItsProcess) {
  DiskCache cache(directory_);
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    EntryLock held = cache.lock(kKey);
    char byte = 1;
    (void)!::write(ready[1], &byte, 1);
    for (;;) ::pause();
  }
  char byte = 0;
  ASSERT_EQ(::read(ready[0], &byte, 1), 1);
  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(cache.lock(kKey).held());
  ::close(ready[0]);
  ::close(ready[1]);
}

// Stages requested for an entry that another process has rebuilt since its
// manifest was read are dropped, not paired with the new library.
TEST_F(DiskCacheTest, StagesForARebuiltEntryAreDropped) {
  DiskCache cache(directory_);
  publish_unique_build(cache, tmp_ / "kernel.so", "first");
  CacheManifest old_manifest = *cache.load_manifest(kKey);
  publish_unique_build(cache, tmp_ / "kernel.so", "second");
  Stages stages;
  stages.source = "int x;\n";
  cache.store_stages(kKey, old_manifest, stages);
  std::string why;
  std::optional<LoadedEntry> hit = load_cpu_entry(cache, kKey, &why);
  ASSERT_TRUE(hit) << why;
  EXPECT_EQ(hit->manifest.artifact_sha256, sha256_hex(read_text(cache.artifact_path(kKey, "so"))));
  EXPECT_FALSE(cache.load_stages(kKey, hit->manifest));
}

}  // namespace
}  // namespace tegula::runtime
