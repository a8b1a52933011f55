#include "runtime/disk_cache.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "disk_cache_test_util.h"
#include "backends/cpu/shared_library.h"
#include "runtime_test_util.h"
#include "support/sha256.h"

// The cache's file formats, directory rules and basic entry life cycle; what
// it does against files it did not write and concurrent writers is in
// test_disk_cache_safety.cpp.

namespace tegula::runtime {
namespace {

using backends::cpu::LibraryError;
using backends::cpu::SharedLibrary;

using testing::build_shared_object;
using testing::DiskCacheTest;
using testing::kKey;
using testing::load_cpu_entry;
using testing::LoadedEntry;
using testing::mode_of;
using testing::read_text;
using testing::sample_manifest;
using testing::ScopedEnv;
using testing::TempDir;
using testing::write_text;

// --- manifest and stages text --------------------------------------------------------

TEST(Manifest, RoundTripsExactly) {
  CacheManifest m = sample_manifest();
  m.artifact_sha256 = sha256_hex("library");
  std::string text = serialize_manifest(m);
  std::string body =
      "tegula-kernel-cache 3\n"
      "backend cpu\n"
      "kernel add\n"
      "param x_ptr ptr<f32> 16\n"
      "param out ptr<bf16> 1\n"
      "param n i32 16\n"
      "param flag i1 1\n"
      "artifact so " + m.artifact_sha256 + "\n"
      "stages -\n";
  EXPECT_EQ(text, body + "sum " + sha256_hex(body) + "\nend\n");
  std::optional<CacheManifest> back = parse_manifest(text);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->backend, "cpu");
  EXPECT_EQ(back->kernel_name, "add");
  EXPECT_EQ(back->artifact_extension, "so");
  ASSERT_EQ(back->params.size(), 4u);
  EXPECT_EQ(back->params[0].name, "x_ptr");
  EXPECT_EQ(back->params[0].type, ir::Type::ptr(ir::Scalar::F32));
  EXPECT_EQ(back->params[0].divisibility, 16);
  EXPECT_EQ(back->params[1].type, ir::Type::ptr(ir::Scalar::BF16));
  EXPECT_EQ(back->params[2].type, ir::Type::of(ir::Scalar::I32));
  EXPECT_EQ(back->params[3].type, ir::Type::of(ir::Scalar::I1));
  EXPECT_EQ(back->artifact_sha256, m.artifact_sha256);
  EXPECT_TRUE(back->stages_sha256.empty());

  m.stages_sha256 = sha256_hex("stages");
  back = parse_manifest(serialize_manifest(m));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->stages_sha256, m.stages_sha256);
}

// A host descriptor's parameter keeps its by-value size; the word appears only on such parameters, and
// only on pointers.
TEST(Manifest, KeepsParametersPassedByValue) {
  CacheManifest m = sample_manifest();
  m.artifact_sha256 = sha256_hex("library");
  m.params[1].by_value_bytes = 128;
  std::string text = serialize_manifest(m);
  EXPECT_NE(text.find("\nparam out ptr<bf16> 1 by_value=128\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\nparam x_ptr ptr<f32> 16\n"), std::string::npos) << text;
  std::optional<CacheManifest> back = parse_manifest(text);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->params[0].by_value_bytes, 0);
  EXPECT_EQ(back->params[1].by_value_bytes, 128);

  m.params[1].by_value_bytes = 0;
  m.params[2].by_value_bytes = 4;  // an int passed by value: no manifest may say so
  EXPECT_FALSE(parse_manifest(serialize_manifest(m)));
}

TEST(Manifest, NonAsciiNamesAreEscapedAndReadBack) {
  CacheManifest m = sample_manifest();
  m.artifact_sha256 = sha256_hex("library");
  m.kernel_name = "k\xc3\xa9rnel_\xc3\xb1";  // kérnel_ñ
  m.params[0].name = "\xc3\xb1";                // ñ
  m.effects.resize(m.params.size());
  m.effects[0] = passes::PointerEffects{true, true, false};
  std::string text = serialize_manifest(m);
  EXPECT_NE(text.find("kernel k%c3%a9rnel_%c3%b1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("param %c3%b1 ptr<f32> 16\n"), std::string::npos) << text;
  EXPECT_NE(text.find("effect %c3%b1 rw-\n"), std::string::npos) << text;
  std::optional<CacheManifest> back = parse_manifest(text);
  ASSERT_TRUE(back) << text;
  EXPECT_EQ(back->kernel_name, m.kernel_name);
  EXPECT_EQ(back->params[0].name, m.params[0].name);
  EXPECT_TRUE(back->effects[0].written);

  // Only what the encoder writes reads back: ASCII escaped, a cut or
  // malformed escape, a leading digit are refused.
  auto replaced = [&](const std::string& from, const std::string& to) { return testing::edited(text, from, to); };
  EXPECT_FALSE(parse_manifest(replaced("kernel k%c3", "kernel k%41")));
  EXPECT_FALSE(parse_manifest(replaced("kernel k%c3%a9rnel_%c3%b1", "kernel k%c")));
  EXPECT_FALSE(parse_manifest(replaced("kernel k%c3", "kernel k%zz")));
  EXPECT_FALSE(parse_manifest(replaced("kernel k%c3", "kernel 9%c3")));
  EXPECT_FALSE(parse_manifest(replaced("kernel k%c3", "kernel k-%c3")));
}

TEST(Manifest, KeepsTheDebugSitesOfDebugKernels) {
  CacheManifest m = sample_manifest();
  m.artifact_sha256 = sha256_hex("library");
  passes::DebugSite load;
  load.file = "k.py";
  load.line = 12;
  load.col = 5;
  load.element = ir::Scalar::F32;
  load.params = {0, 1};
  passes::DebugSite check;
  check.kind = passes::DebugSite::Kind::Assert;
  check.message = "x > 0";
  check.shape = {128};
  m.debug_sites = {load, check};
  std::string text = serialize_manifest(m);
  EXPECT_NE(text.find("\nsite load 12 5 f32 0,1 - 6b2e7079 -\nsite assert 0 0 i8 - 128 - 78203e2030\nartifact so "),
            std::string::npos)
      << text;
  std::optional<CacheManifest> back = parse_manifest(text);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->debug_sites, m.debug_sites);
  for (size_t length = 0; length < text.size(); ++length)
    EXPECT_FALSE(parse_manifest(text.substr(0, length))) << "accepted a prefix of " << length << " bytes";
  size_t site = text.find("site load");
  EXPECT_FALSE(parse_manifest(text.substr(0, site) + "site load 12" + text.substr(text.find('\n', site))));
}

TEST(Manifest, KeepsThePointerEffects) {
  CacheManifest m = sample_manifest();
  m.artifact_sha256 = sha256_hex("library");
  m.effects = {{true, false, false}, {true, true, true}, {}, {}};  // x_ptr read; out updated atomically
  std::string text = serialize_manifest(m);
  EXPECT_NE(text.find("\neffect x_ptr r--\neffect out rwa\nartifact so "), std::string::npos) << text;
  std::optional<CacheManifest> back = parse_manifest(text);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->effects, m.effects);
  auto replaced = [&](const std::string& from, const std::string& to) { return testing::edited(text, from, to); };
  EXPECT_FALSE(parse_manifest(replaced("effect x_ptr r--", "effect n r--")));      // not a pointer
  EXPECT_FALSE(parse_manifest(replaced("effect x_ptr r--", "effect y_ptr r--")));  // not a parameter
  EXPECT_FALSE(parse_manifest(replaced("effect x_ptr r--", "effect x_ptr rx-")));
  EXPECT_FALSE(parse_manifest(replaced("effect x_ptr r--", "effect x_ptr ---")));
  EXPECT_FALSE(parse_manifest(replaced("effect out rwa", "effect x_ptr rwa")));   // twice
  // A kernel without effects writes no effect line, and reads back as none.
  m.effects.clear();
  back = parse_manifest(serialize_manifest(m));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->effects, std::vector<passes::PointerEffects>(4));
}

TEST(Manifest, KeepsTheTensorMaps) {
  CacheManifest m = sample_manifest();
  m.artifact_sha256 = sha256_hex("library");
  backends::TensorMapParam map;
  map.base = 0;
  map.shape = {{2, 0}, {-1, 48}};
  map.strides = {{-1, 48}, {-1, 1}};
  map.box = {16, 16};
  map.nan_fill = true;
  m.tensor_maps = {map};
  std::string text = serialize_manifest(m);
  EXPECT_NE(text.find("\ntmap base=0 shape=p2,48 strides=48,1 box=16,16 swizzle=0 fill=nan\n"), std::string::npos)
      << text;
  std::optional<CacheManifest> back = parse_manifest(text);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->tensor_maps, m.tensor_maps);
  auto replaced = [&](const std::string& from, const std::string& to) { return testing::edited(text, from, to); };
  EXPECT_FALSE(parse_manifest(replaced("base=0", "base=9")));          // past the parameters
  EXPECT_FALSE(parse_manifest(replaced("base=0", "base=2")));          // not a pointer
  EXPECT_FALSE(parse_manifest(replaced("shape=p2", "shape=p7")));
  EXPECT_FALSE(parse_manifest(replaced("box=16,16", "box=16")));       // one block size per dim
  EXPECT_FALSE(parse_manifest(replaced("fill=nan", "fill=one")));
  EXPECT_FALSE(parse_manifest(replaced("swizzle=0", "swizzle=4")));
  EXPECT_FALSE(parse_manifest(replaced("shape=p2", "shape=q2")));
  EXPECT_FALSE(parse_manifest(replaced(" fill=nan", "")));
}

TEST(Manifest, EveryTruncationIsRejected) {
  CacheManifest m = sample_manifest();
  m.artifact_sha256 = sha256_hex("library");
  std::string text = serialize_manifest(m);
  for (size_t length = 0; length < text.size(); ++length)
    EXPECT_FALSE(parse_manifest(text.substr(0, length))) << "accepted a prefix of " << length << " bytes";
}

TEST(Manifest, AnyEditAfterWritingIsRejected) {
  CacheManifest m = sample_manifest();
  m.artifact_sha256 = sha256_hex("library");
  m.effects.resize(m.params.size());
  m.effects[1] = passes::PointerEffects{true, true, false};
  std::string text = serialize_manifest(m);
  ASSERT_TRUE(parse_manifest(text));
  // Edits that would parse as a valid manifest, each changing what the
  // launcher trusts: which pointer is written, a parameter's type or
  // divisibility, the parameters' order, the kernel's name.
  auto unsigned_edit = [&](const std::string& from, const std::string& to) {
    std::string changed = text;
    changed.replace(changed.find(from), from.size(), to);
    EXPECT_TRUE(parse_manifest(testing::resigned(changed))) << "the edit itself should be well-formed: " << to;
    return changed;
  };
  EXPECT_FALSE(parse_manifest(unsigned_edit("effect out rw-\n", "")));
  EXPECT_FALSE(parse_manifest(unsigned_edit("effect out rw-", "effect out r--")));
  EXPECT_FALSE(parse_manifest(unsigned_edit("param n i32 16", "param n i64 16")));
  EXPECT_FALSE(parse_manifest(unsigned_edit("param n i32 16", "param n i32 1")));
  EXPECT_FALSE(parse_manifest(unsigned_edit("param n i32 16\nparam flag i1 1", "param flag i1 1\nparam n i32 16")));
  EXPECT_FALSE(parse_manifest(unsigned_edit("kernel add", "kernel sub")));
  // The sum line itself: missing, damaged, or not the last before `end`.
  size_t sum = text.rfind("sum ");
  std::string without = text.substr(0, sum) + "end\n";
  EXPECT_FALSE(parse_manifest(without));
  std::string damaged = text;
  damaged[sum + 4] = damaged[sum + 4] == '0' ? '1' : '0';
  EXPECT_FALSE(parse_manifest(damaged));
}

TEST(Manifest, MalformedOrOtherVersionIsRejected) {
  CacheManifest m = sample_manifest();
  m.artifact_sha256 = sha256_hex("library");
  std::string good = serialize_manifest(m);
  auto replaced = [&](const std::string& from, const std::string& to) { return testing::edited(good, from, to); };
  // Entries of the format before the Backend interface (`library <sha>`, no
  // backend line) are refused, never misread.
  EXPECT_FALSE(parse_manifest(replaced("tegula-kernel-cache 3", "tegula-kernel-cache 2")));
  EXPECT_FALSE(parse_manifest(replaced("tegula-kernel-cache 3", "tegula-kernel-cache 0")));
  EXPECT_FALSE(parse_manifest(replaced("backend cpu\n", "")));
  EXPECT_FALSE(parse_manifest(replaced("backend cpu", "backend ../cpu")));
  EXPECT_FALSE(parse_manifest(replaced("artifact so", "artifact ../so")));
  EXPECT_FALSE(parse_manifest(replaced("artifact so", "artifact SO")));
  EXPECT_FALSE(parse_manifest(replaced("artifact so " + m.artifact_sha256, "library " + m.artifact_sha256)));
  EXPECT_FALSE(parse_manifest(replaced("ptr<f32>", "ptr<f33>")));
  EXPECT_FALSE(parse_manifest(replaced("i32 16", "i32 0")));
  EXPECT_FALSE(parse_manifest(replaced("i32 16", "i32 sixteen")));
  EXPECT_FALSE(parse_manifest(replaced("kernel add", "kernel ../add")));
  EXPECT_FALSE(parse_manifest(replaced("artifact so " + m.artifact_sha256, "artifact so abc")));
  EXPECT_FALSE(parse_manifest(replaced("stages -\n", "")));
  EXPECT_FALSE(parse_manifest(good + "more\n"));
}

TEST(Stages, RoundTripTextThatLooksLikeTheFormat) {
  Stages stages;
  stages.ir = {{"lowered", "kernel @k() {\n  return\n}\n"},
               {"canonicalize", "end\nsource 3\n"},
               {"two words", ""}};
  stages.source = "extern \"C\" void tegula_kernel() {}\nend\n";
  std::string text = serialize_stages(stages);
  std::optional<Stages> back = parse_stages(text);
  ASSERT_TRUE(back);
  ASSERT_EQ(back->ir.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(back->ir[i].stage, stages.ir[i].stage);
    EXPECT_EQ(back->ir[i].ir, stages.ir[i].ir);
  }
  EXPECT_EQ(back->source, stages.source);
  for (size_t length = 0; length < text.size(); ++length)
    EXPECT_FALSE(parse_stages(text.substr(0, length))) << "accepted a prefix of " << length << " bytes";
}

// --- the directory -------------------------------------------------------------------------

TEST(CacheDirectory, CreatesMissingParentsPrivately) {
  TempDir tmp;
  std::string dir = tmp / "a/b/cache";
  EXPECT_EQ(resolve_cache_directory(dir), dir);
  EXPECT_EQ(mode_of(tmp / "a"), 0700);
  EXPECT_EQ(mode_of(tmp / "a/b"), 0700);
  EXPECT_EQ(mode_of(dir), 0700);
  // Trailing slashes and dot segments name the same directory.
  EXPECT_EQ(resolve_cache_directory(dir + "/./"), dir);
}

TEST(CacheDirectory, RefusesAGroupWritableDirectory) {
  TempDir tmp;
  std::string dir = tmp / "shared";
  ASSERT_EQ(::mkdir(dir.c_str(), 0700), 0);
  ASSERT_EQ(::chmod(dir.c_str(), 0777), 0);
  try {
    resolve_cache_directory(dir);
    FAIL() << "accepted a world-writable cache directory";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Value);
    EXPECT_EQ(std::string(e.what()),
              "error[E0901]: the cache directory " + dir +
                  " is writable by group or others; cached kernels are code Tegula executes, so it must be "
                  "private\n"
                  "hint: run `chmod 700 " + dir + "`, or set TEGULA_CACHE_DIR to a private directory\n");
  }
  ASSERT_EQ(::chmod(dir.c_str(), 0720), 0);  // group-writable only: refused too
  EXPECT_THROW(resolve_cache_directory(dir), Error);
  ASSERT_EQ(::chmod(dir.c_str(), 0755), 0);  // readable by others is fine
  EXPECT_EQ(resolve_cache_directory(dir), dir);
}
TEST(CacheDirectory, RefusesAFile) {
  TempDir tmp;
  write_text(tmp / "file", "x");
  EXPECT_THROW(resolve_cache_directory(tmp / "file"), Error);
}

TEST(CacheDirectory, EnvironmentOrder) {
  TempDir tmp;
  {
    ScopedEnv cache("TEGULA_CACHE_DIR", (tmp / "from-env").c_str());
    ScopedEnv xdg("XDG_CACHE_HOME", (tmp / "xdg").c_str());
    EXPECT_EQ(resolve_cache_directory(tmp / "explicit"), tmp / "explicit");
    EXPECT_EQ(resolve_cache_directory(""), tmp / "from-env");
  }
  {
    ScopedEnv cache("TEGULA_CACHE_DIR", nullptr);
    ScopedEnv xdg("XDG_CACHE_HOME", (tmp / "xdg").c_str());
    EXPECT_EQ(resolve_cache_directory(""), tmp / "xdg/tegula");
  }
  {
    ScopedEnv cache("TEGULA_CACHE_DIR", nullptr);
    ScopedEnv xdg("XDG_CACHE_HOME", "relative/ignored");
    ScopedEnv home("HOME", (tmp / "home").c_str());
    EXPECT_EQ(resolve_cache_directory(""), tmp / "home/.cache/tegula");
  }
}

// --- entries ---------------------------------------------------------------------------------

TEST_F(DiskCacheTest, EntryFilesAreNamedByKey) {
  DiskCache cache(directory_);
  EXPECT_EQ(cache.artifact_path(kKey, "so"), directory_ + "/" + kKey + ".so");
  EXPECT_EQ(cache.manifest_path(kKey), directory_ + "/" + kKey + ".meta");
  EXPECT_EQ(cache.stages_path(kKey), directory_ + "/" + kKey + ".stages");
  EXPECT_NE(cache.temporary_path(kKey, "so"), cache.temporary_path(kKey, "so"));
  EXPECT_THROW(cache.load("../../etc/passwd"), InternalError);
}

TEST_F(DiskCacheTest, MissThenStoreThenVerifiedHit) {
  DiskCache cache(directory_);
  std::string why;
  EXPECT_FALSE(load_cpu_entry(cache, kKey, &why));
  EXPECT_EQ(why, "no entry");

  publish(cache);
  std::optional<LoadedEntry> hit = load_cpu_entry(cache, kKey, &why);
  ASSERT_TRUE(hit) << why;
  EXPECT_EQ(hit->manifest.kernel_name, "add");
  EXPECT_EQ(hit->manifest.params.size(), 4u);
  EXPECT_EQ(hit->manifest.artifact_sha256, sha256_hex(read_text(cache.artifact_path(kKey, "so"))));
  EXPECT_EQ(run_entry(*hit), 309);
  EXPECT_FALSE(cache.load_stages(kKey, hit->manifest));
  // Nothing but the entry and its lock file is left behind.
  std::set<std::string> files;
  for (const auto& item : std::filesystem::directory_iterator(directory_)) files.insert(item.path().string());
  EXPECT_EQ(files, (std::set<std::string>{cache.artifact_path(kKey, "so"), cache.manifest_path(kKey), cache.lock_path(kKey)}));
}

TEST_F(DiskCacheTest, StagesAreStoredAndVerified) {
  DiskCache cache(directory_);
  Stages stages;
  stages.ir = {{"lowered", "kernel @add() {\n}\n"}, {"dce", "kernel @add() {}\n"}};
  stages.source = "// generated\n";
  publish(cache, &stages);
  std::optional<LoadedEntry> hit = load_cpu_entry(cache, kKey);
  ASSERT_TRUE(hit);
  std::optional<Stages> back = cache.load_stages(kKey, hit->manifest);
  ASSERT_TRUE(back);
  ASSERT_EQ(back->ir.size(), 2u);
  EXPECT_EQ(back->ir[1].stage, "dce");
  EXPECT_EQ(back->source, "// generated\n");

  write_text(cache.stages_path(kKey), read_text(cache.stages_path(kKey)) + " ");
  EXPECT_FALSE(cache.load_stages(kKey, hit->manifest));
}

TEST_F(DiskCacheTest, StagesCanBeAddedToAnEntryLater) {
  DiskCache cache(directory_);
  publish(cache);
  CacheManifest manifest = *cache.load_manifest(kKey);
  Stages stages;
  stages.source = "int x;\n";
  cache.store_stages(kKey, manifest, stages);
  std::optional<LoadedEntry> hit = load_cpu_entry(cache, kKey);
  ASSERT_TRUE(hit);
  ASSERT_TRUE(cache.load_stages(kKey, hit->manifest));
  EXPECT_EQ(cache.load_stages(kKey, hit->manifest)->source, "int x;\n");
}

TEST_F(DiskCacheTest, FlippedByteInTheLibraryIsAMissAndARebuildRepairs) {
  DiskCache cache(directory_);
  publish(cache);
  std::string bytes = read_text(cache.artifact_path(kKey, "so"));
  bytes[bytes.size() / 2] ^= 0x01;
  write_text(cache.artifact_path(kKey, "so"), bytes);

  std::string why;
  EXPECT_FALSE(load_cpu_entry(cache, kKey, &why));
  EXPECT_EQ(why, "the artifact does not match the manifest's hash");

  publish(cache);  // the driver rebuilds and overwrites
  std::optional<LoadedEntry> hit = load_cpu_entry(cache, kKey, &why);
  ASSERT_TRUE(hit) << why;
  EXPECT_EQ(run_entry(*hit), 309);
}

TEST_F(DiskCacheTest, TruncatedManifestIsAMiss) {
  DiskCache cache(directory_);
  publish(cache);
  std::string manifest = read_text(cache.manifest_path(kKey));
  write_text(cache.manifest_path(kKey), manifest.substr(0, manifest.size() - 5));
  std::string why;
  EXPECT_FALSE(load_cpu_entry(cache, kKey, &why));
  EXPECT_EQ(why, "the manifest is truncated or malformed");
}

TEST_F(DiskCacheTest, TruncatedOrMissingLibraryIsAMiss) {
  DiskCache cache(directory_);
  publish(cache);
  std::string bytes = read_text(cache.artifact_path(kKey, "so"));
  write_text(cache.artifact_path(kKey, "so"), bytes.substr(0, bytes.size() / 3));
  std::string why;
  EXPECT_FALSE(load_cpu_entry(cache, kKey, &why));
  EXPECT_EQ(why, "the artifact does not match the manifest's hash");
  std::filesystem::remove(cache.artifact_path(kKey, "so"));
  EXPECT_FALSE(load_cpu_entry(cache, kKey, &why));
  EXPECT_EQ(why, "the artifact is missing");
}

TEST_F(DiskCacheTest, LibraryThatDoesNotLoadIsAMiss) {
  DiskCache cache(directory_);
  // Hash-consistent but not a shared object: verification passes, dlopen fails.
  std::string built = cache.temporary_path(kKey, "so");
  write_text(built, "not an ELF file");
  CacheManifest m = sample_manifest();
  cache.store(cache.lock(kKey), built, m, nullptr);
  std::string why;
  EXPECT_FALSE(load_cpu_entry(cache, kKey, &why));
  EXPECT_NE(why.find("cannot load " + cache.artifact_path(kKey, "so")), std::string::npos) << why;
}

TEST_F(DiskCacheTest, LibraryWithoutTheEntryPointIsAMiss) {
  DiskCache cache(directory_);
  build_shared_object("extern \"C\" int something_else() { return 1; }\n", tmp_ / "other.so");
  std::string built = cache.temporary_path(kKey, "so");
  std::filesystem::copy_file(tmp_ / "other.so", built);
  CacheManifest m = sample_manifest();
  cache.store(cache.lock(kKey), built, m, nullptr);
  std::string why;
  EXPECT_FALSE(load_cpu_entry(cache, kKey, &why));
  EXPECT_NE(why.find("symbol 'tegula_kernel' not found"), std::string::npos) << why;
}

// --- shared libraries -----------------------------------------------------------------------

TEST_F(DiskCacheTest, SharedLibraryLooksUpSymbolsWithClearErrors) {
  std::shared_ptr<SharedLibrary> library = SharedLibrary::open(tmp_ / "kernel.so");
  EXPECT_EQ(library->path(), tmp_ / "kernel.so");
  auto marker = reinterpret_cast<int (*)()>(library->symbol("tegula_test_marker"));
  EXPECT_EQ(marker(), 7);
  try {
    library->symbol("no_such_symbol");
    FAIL();
  } catch (const LibraryError& e) {
    EXPECT_NE(std::string(e.what()).find("symbol 'no_such_symbol' not found in " + tmp_ / "kernel.so"),
              std::string::npos)
        << e.what();
  }
  try {
    SharedLibrary::open(tmp_ / "missing.so");
    FAIL();
  } catch (const LibraryError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot load " + tmp_ / "missing.so" + ": "), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("No such file"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tegula::runtime
