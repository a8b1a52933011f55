// The compile driver end to end: source -> IR -> C++ -> .so -> launch, the
// disk cache across "processes" (dropped kernels), stages, keys and errors.
#include "runtime/compiler.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <random>
#include <set>
#include <thread>

#include "lower_test_util.h"
#include "runtime/disk_cache.h"
#include "runtime_test_util.h"

namespace tegula::runtime {
namespace {

using testing::const_int;
using testing::int_arg;
using testing::ptr_arg;
using testing::read_text;
using testing::ScopedEnv;
using testing::TempDir;
using testing::write_text;

constexpr const char* kVectorAdd =
    "def add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):\n"
    "    pid = tl.program_id(0)\n"
    "    offs = pid * BLOCK + tl.arange(0, BLOCK)\n"
    "    mask = offs < n\n"
    "    x = tl.load(x_ptr + offs, mask=mask)\n"
    "    y = tl.load(y_ptr + offs, mask=mask)\n"
    "    tl.store(out_ptr + offs, x + y, mask=mask)\n";

frontend::KernelRequest vector_add(int64_t block = 128, const std::string& text = kVectorAdd) {
  frontend::KernelRequest request;
  request.functions.push_back(testing::source("add", text, 10));
  request.args = {ptr_arg(ir::Scalar::F32), ptr_arg(ir::Scalar::F32), ptr_arg(ir::Scalar::F32),
                  int_arg(ir::Scalar::I32), const_int(block)};
  return request;
}

struct Counters {
  int64_t builds, disk_hits, frontend_runs, reused;
  static Counters now() {
    return {stats().builds.load(), stats().disk_hits.load(), stats().frontend_runs.load(), stats().reused.load()};
  }
  Counters since(const Counters& before) const {
    return {builds - before.builds, disk_hits - before.disk_hits, frontend_runs - before.frontend_runs,
            reused - before.reused};
  }
};

ArgValue pointer(const void* p) { return ArgValue{ArgValue::Kind::Pointer, reinterpret_cast<uintptr_t>(p), 0.0}; }
ArgValue integer(int64_t v) { return ArgValue{ArgValue::Kind::Int, static_cast<uint64_t>(v), 0.0}; }

// Runs the vector-add kernel on random data (with a masked tail) and checks it against x + y.
void expect_adds(const CompiledKernel& kernel, int64_t block) {
  const int64_t n = 1000;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-100.0f, 100.0f);
  std::vector<float> x(n), y(n), out(n + 16, -1.0f);
  for (int64_t i = 0; i < n; ++i) x[i] = dist(rng), y[i] = dist(rng);
  const int64_t grid[3] = {(n + block - 1) / block, 1, 1};
  kernel.launch(grid, {pointer(x.data()), pointer(y.data()), pointer(out.data()), integer(n)});
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(out[i], x[i] + y[i]) << "element " << i;
  for (int64_t i = n; i < n + 16; ++i) ASSERT_EQ(out[i], -1.0f) << "the masked tail was written at " << i;
}

class CompilerTest : public ::testing::Test {
 protected:
  CompileOptions options(bool keep_stages = false) const {
    CompileOptions o;
    o.cache_dir = tmp_ / "cache";
    o.keep_stages = keep_stages;
    return o;
  }

  TempDir tmp_;
  ScopedEnv no_dumps_{"TEGULA_DUMP_DIR", nullptr};
  // The precompiled prelude (toolchain.cpp) is a file of the whole cache, built in the
  // background: these tests count the files of one entry.
  ScopedEnv no_precompiled_prelude_{"TEGULA_CPU_PCH", "0"};
};

TEST_F(CompilerTest, VectorAddCompiledTwiceSecondIsADiskHit) {
  Counters before = Counters::now();
  std::shared_ptr<CompiledKernel> first = compile(vector_add(), options());
  Counters built = Counters::now().since(before);
  EXPECT_EQ(built.builds, 1);
  EXPECT_EQ(built.disk_hits, 0);
  EXPECT_EQ(built.frontend_runs, 1);
  EXPECT_FALSE(first->from_disk_cache);
  EXPECT_EQ(first->name, "add");
  ASSERT_EQ(first->params.size(), 4u);  // BLOCK is a constexpr, not a launch parameter
  EXPECT_EQ(first->params[0].name, "x_ptr");
  EXPECT_EQ(first->params[0].type, ir::Type::ptr(ir::Scalar::F32));
  EXPECT_EQ(first->params[3].name, "n");
  EXPECT_EQ(first->key, cache_key(vector_add(), options()));
  EXPECT_TRUE(first->stages.ir.empty());
  expect_adds(*first, 128);

  // The entry (and its lock file), the record of its build (and its lock)
  // and nothing else: no temporary file survives a build.
  std::set<std::string> files;
  std::string inputs;
  for (const auto& item : std::filesystem::directory_iterator(cache_directory(options()))) {
    files.insert(item.path().filename().string());
    if (item.path().extension() == ".build") inputs = item.path().stem().string();
  }
  EXPECT_EQ(inputs.size(), 64u);
  EXPECT_EQ(files, (std::set<std::string>{first->key + ".meta", first->key + ".so", first->key + ".lock",
                                          inputs + ".build", inputs + ".lock"}));
  std::string key = first->key;
  first.reset();  // as if this process ended

  before = Counters::now();
  std::shared_ptr<CompiledKernel> second = compile(vector_add(), options());
  Counters loaded = Counters::now().since(before);
  EXPECT_EQ(loaded.builds, 0);
  EXPECT_EQ(loaded.disk_hits, 1);
  EXPECT_EQ(loaded.frontend_runs, 0);
  EXPECT_TRUE(second->from_disk_cache);
  EXPECT_EQ(second->key, key);
  EXPECT_EQ(second->name, "add");
  ASSERT_EQ(second->params.size(), 4u);
  EXPECT_EQ(second->params[2].name, "out_ptr");
  EXPECT_EQ(second->params[2].divisibility, 16);
  expect_adds(*second, 128);
}

TEST_F(CompilerTest, AKernelStillHeldIsReturnedFromMemory) {
  std::shared_ptr<CompiledKernel> first = compile(vector_add(), options());
  Counters before = Counters::now();
  std::shared_ptr<CompiledKernel> again = compile(vector_add(), options());
  EXPECT_EQ(again.get(), first.get());
  Counters delta = Counters::now().since(before);
  EXPECT_EQ(delta.builds + delta.disk_hits + delta.frontend_runs, 0);
}

TEST_F(CompilerTest, AlwaysCompileBuildsPastMemoryAndDiskAndLaterLookupsFindTheNewBuild) {
  std::shared_ptr<CompiledKernel> first = compile(vector_add(), options());
  CompileOptions rebuild = options();
  rebuild.always_compile = true;
  EXPECT_EQ(cache_key(vector_add(), rebuild), first->key);  // the same entry, not another
  Counters before = Counters::now();
  std::shared_ptr<CompiledKernel> rebuilt = compile(vector_add(), rebuild);
  Counters delta = Counters::now().since(before);
  EXPECT_EQ(delta.builds, 1);  // neither the kernel held in memory, the entry nor the build record
  EXPECT_EQ(delta.disk_hits + delta.reused, 0);
  EXPECT_EQ(delta.frontend_runs, 1);
  EXPECT_NE(rebuilt.get(), first.get());
  EXPECT_FALSE(rebuilt->from_disk_cache);
  expect_adds(*rebuilt, 128);

  before = Counters::now();
  std::shared_ptr<CompiledKernel> found = compile(vector_add(), options());
  EXPECT_EQ(found.get(), rebuilt.get());  // the table holds the new build
  delta = Counters::now().since(before);
  EXPECT_EQ(delta.builds + delta.disk_hits + delta.frontend_runs, 0);
}

TEST_F(CompilerTest, ThreadsCompilingOneKernelBuildItOnce) {
  Counters before = Counters::now();
  std::vector<std::shared_ptr<CompiledKernel>> kernels(6);
  std::vector<std::string> errors(kernels.size());
  std::vector<std::thread> threads;
  for (size_t t = 0; t < kernels.size(); ++t)
    threads.emplace_back([&, t] {
      try {
        kernels[t] = compile(vector_add(64), options());
      } catch (const std::exception& e) {
        errors[t] = e.what();
      }
    });
  for (std::thread& t : threads) t.join();
  for (const std::string& e : errors) ASSERT_EQ(e, "");
  EXPECT_EQ(Counters::now().since(before).builds, 1);
  for (const auto& k : kernels) EXPECT_EQ(k.get(), kernels[0].get());
  expect_adds(*kernels[0], 64);
}

TEST_F(CompilerTest, SpecializationsAreSeparateKernels) {
  std::shared_ptr<CompiledKernel> small = compile(vector_add(32), options());
  std::shared_ptr<CompiledKernel> large = compile(vector_add(256), options());
  EXPECT_NE(small->key, large->key);
  expect_adds(*small, 32);
  expect_adds(*large, 256);
}

TEST_F(CompilerTest, StagesAreKeptAndServedFromDisk) {
  std::shared_ptr<CompiledKernel> built = compile(vector_add(), options(/*keep_stages=*/true));
  ASSERT_GE(built->stages.ir.size(), 2u);
  EXPECT_EQ(built->stages.ir[0].stage, "lowered");
  EXPECT_NE(built->stages.ir[0].ir.find("program_id"), std::string::npos);
  EXPECT_NE(built->stages.source.find("tegula_kernel"), std::string::npos);
  Stages expected = built->stages;
  built.reset();

  Counters before = Counters::now();
  std::shared_ptr<CompiledKernel> loaded = compile(vector_add(), options(true));
  Counters delta = Counters::now().since(before);
  EXPECT_EQ(delta.disk_hits, 1);
  EXPECT_EQ(delta.frontend_runs, 0);  // no recompilation for inspect()
  ASSERT_EQ(loaded->stages.ir.size(), expected.ir.size());
  for (size_t i = 0; i < expected.ir.size(); ++i) {
    EXPECT_EQ(loaded->stages.ir[i].stage, expected.ir[i].stage);
    EXPECT_EQ(loaded->stages.ir[i].ir, expected.ir[i].ir);
  }
  EXPECT_EQ(loaded->stages.source, expected.source);
}

TEST_F(CompilerTest, StagesMissingFromTheCacheAreRegeneratedWithoutTheCxxCompiler) {
  std::shared_ptr<CompiledKernel> plain = compile(vector_add(), options());
  EXPECT_TRUE(plain->stages.ir.empty());

  // Held in memory: a copy with stages is returned, the shared one is untouched.
  Counters before = Counters::now();
  std::shared_ptr<CompiledKernel> inspected = compile(vector_add(), options(true));
  Counters delta = Counters::now().since(before);
  EXPECT_EQ(delta.builds, 0);
  EXPECT_EQ(delta.frontend_runs, 1);
  EXPECT_EQ(inspected->loaded, plain->loaded);
  EXPECT_FALSE(inspected->stages.ir.empty());
  EXPECT_TRUE(plain->stages.ir.empty());
  plain.reset();
  inspected.reset();

  // They were stored on the way: the next inspect() reads them back.
  before = Counters::now();
  std::shared_ptr<CompiledKernel> loaded = compile(vector_add(), options(true));
  delta = Counters::now().since(before);
  EXPECT_EQ(delta.disk_hits, 1);
  EXPECT_EQ(delta.frontend_runs, 0);
  EXPECT_FALSE(loaded->stages.ir.empty());
}

TEST_F(CompilerTest, CorruptedCacheEntryIsRebuilt) {
  std::string key = compile(vector_add(), options())->key;
  DiskCache cache(cache_directory(options()));
  std::string bytes = read_text(cache.artifact_path(key, "so"));
  bytes[bytes.size() / 2] ^= 0x40;
  write_text(cache.artifact_path(key, "so"), bytes);

  Counters before = Counters::now();
  std::shared_ptr<CompiledKernel> rebuilt = compile(vector_add(), options());
  Counters delta = Counters::now().since(before);
  EXPECT_EQ(delta.builds, 1);
  EXPECT_EQ(delta.disk_hits, 0);
  EXPECT_FALSE(rebuilt->from_disk_cache);
  expect_adds(*rebuilt, 128);
  EXPECT_TRUE(cache.load(key));
}

// --- one build for one generated source (runtime/build_records.h) ---------------------------

// The vector add under other keys that generate the same C++ but for the
// comment naming the kernel: another num_warps (which the CPU code does not
// use) and another name.
frontend::KernelRequest with_warps(int num_warps) {
  frontend::KernelRequest request = vector_add();
  request.num_warps = num_warps;
  return request;
}

frontend::KernelRequest renamed() {
  std::string text = kVectorAdd;
  text.replace(text.find("def add"), 7, "def plus");
  frontend::KernelRequest request = vector_add();
  request.functions[0] = testing::source("plus", text, 10);
  return request;
}

TEST_F(CompilerTest, TheSameSourceUnderAnotherKeyIsBuiltOnce) {
  Counters before = Counters::now();
  std::shared_ptr<CompiledKernel> add = compile(vector_add(), options());
  std::shared_ptr<CompiledKernel> warps = compile(with_warps(8), options());
  std::shared_ptr<CompiledKernel> plus = compile(renamed(), options());
  Counters delta = Counters::now().since(before);
  EXPECT_EQ(delta.builds, 1);
  EXPECT_EQ(delta.reused, 2);
  EXPECT_EQ(delta.frontend_runs, 3);  // the source must be generated to be compared
  EXPECT_NE(add->key, warps->key);
  EXPECT_NE(add->key, plus->key);
  EXPECT_EQ(plus->name, "plus");
  expect_adds(*add, 128);
  expect_adds(*warps, 128);
  expect_adds(*plus, 128);

  // Copies, not links: each entry has a file of its own.
  DiskCache cache(cache_directory(options()));
  struct stat a{}, b{};
  ASSERT_EQ(::stat(cache.artifact_path(add->key, "so").c_str(), &a), 0);
  ASSERT_EQ(::stat(cache.artifact_path(plus->key, "so").c_str(), &b), 0);
  EXPECT_NE(a.st_ino, b.st_ino);
  EXPECT_EQ(a.st_nlink, 1u);
  EXPECT_EQ(read_text(cache.artifact_path(add->key, "so")), read_text(cache.artifact_path(plus->key, "so")));

  // Another source is another build.
  before = Counters::now();
  expect_adds(*compile(vector_add(64), options()), 64);
  delta = Counters::now().since(before);
  EXPECT_EQ(delta.builds, 1);
  EXPECT_EQ(delta.reused, 0);
}

TEST_F(CompilerTest, DamageIsDetectedForTheDamagedEntryOnly) {
  std::string key = compile(vector_add(), options())->key;
  std::string copy_key = compile(with_warps(8), options())->key;
  DiskCache cache(cache_directory(options()));
  std::string bytes = read_text(cache.artifact_path(key, "so"));
  bytes[bytes.size() / 2] ^= 0x40;
  write_text(cache.artifact_path(key, "so"), bytes);

  // The copy is intact; the damaged entry is refused and rebuilt, not
  // copied from itself; a new key then copies the rebuilt one.
  Counters before = Counters::now();
  expect_adds(*compile(with_warps(8), options()), 128);
  EXPECT_EQ(Counters::now().since(before).disk_hits, 1);
  before = Counters::now();
  expect_adds(*compile(vector_add(), options()), 128);
  Counters delta = Counters::now().since(before);
  EXPECT_EQ(delta.builds, 1);
  EXPECT_EQ(delta.reused, 0);
  before = Counters::now();
  expect_adds(*compile(with_warps(2), options()), 128);
  delta = Counters::now().since(before);
  EXPECT_EQ(delta.builds, 0);
  EXPECT_EQ(delta.reused, 1);

  // A damaged record is a miss: built, and recorded again.
  for (const auto& item : std::filesystem::directory_iterator(cache.directory()))
    if (item.path().extension() == ".build") write_text(item.path().string(), "tegula-build-record 1\nentry ");
  before = Counters::now();
  expect_adds(*compile(with_warps(16), options()), 128);
  delta = Counters::now().since(before);
  EXPECT_EQ(delta.builds, 1);
  EXPECT_EQ(delta.reused, 0);
  before = Counters::now();
  expect_adds(*compile(with_warps(32), options()), 128);
  delta = Counters::now().since(before);
  EXPECT_EQ(delta.builds, 0);
  EXPECT_EQ(delta.reused, 1);
  EXPECT_TRUE(cache.load(copy_key));
}

TEST_F(CompilerTest, ThreadsCompilingOneSourceUnderTwoKeysBuildItOnce) {
  // The second waits on the lock of the build's inputs, then copies.
  Counters before = Counters::now();
  std::shared_ptr<CompiledKernel> kernels[2];
  std::thread other([&] { kernels[1] = compile(with_warps(8), options()); });
  kernels[0] = compile(vector_add(), options());
  other.join();
  Counters delta = Counters::now().since(before);
  EXPECT_EQ(delta.builds, 1);
  EXPECT_EQ(delta.reused, 1);
  expect_adds(*kernels[0], 128);
  expect_adds(*kernels[1], 128);
}

TEST_F(CompilerTest, CacheKeyCoversWhatChangesTheCode) {
  CompileOptions o = options();
  std::string base = cache_key(vector_add(), o);
  EXPECT_EQ(base.size(), 64u);
  EXPECT_EQ(cache_key(vector_add(), o), base);

  CompileOptions other_place = o;
  other_place.cache_dir = tmp_ / "elsewhere";
  other_place.keep_stages = true;
  EXPECT_EQ(cache_key(vector_add(), other_place), base);

  CompileOptions debug = o;
  debug.debug = true;
  EXPECT_NE(cache_key(vector_add(), debug), base);
  frontend::KernelRequest request = vector_add();
  request.debug = true;
  EXPECT_NE(cache_key(request, o), base);

  EXPECT_NE(cache_key(vector_add(64), o), base);
  request = vector_add();
  request.args[3].divisibility = 16;
  EXPECT_NE(cache_key(request, o), base);
  request = vector_add();
  request.args[0].dtype = ir::Scalar::F16;
  EXPECT_NE(cache_key(request, o), base);
  request = vector_add();
  request.functions[0].source += "\n";
  EXPECT_NE(cache_key(request, o), base);
  request = vector_add();
  request.functions[0].first_line = 11;
  EXPECT_NE(cache_key(request, o), base);
  request = vector_add();
  request.functions[0].filename = "other.py";
  EXPECT_NE(cache_key(request, o), base);
  request = vector_add();
  request.functions[0].globals["SCALE"].kind = frontend::GlobalValue::Kind::Float;
  std::string with_global = cache_key(request, o);
  EXPECT_NE(with_global, base);
  request.functions[0].globals["SCALE"].float_value = -0.0;
  EXPECT_NE(cache_key(request, o), with_global);
}

TEST_F(CompilerTest, CompileErrorIsRenderedAgainstTheSource) {
  frontend::KernelRequest request = vector_add();
  request.functions[0].source =
      "def add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):\n"
      "    tl.store(x_ptr, undefined_value)\n";
  std::string expected = testing::lower(request).error;
  ASSERT_FALSE(expected.empty());
  ASSERT_TRUE(expected.starts_with("kernel.py:11:21: error[E0201]: ")) << expected;
  try {
    compile(request, options());
    FAIL() << "compiled a kernel with an undefined name";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Compile);
    EXPECT_EQ(std::string(e.what()), expected);
  }
  // A failed build leaves nothing behind and is retried on the next call.
  EXPECT_THROW(compile(request, options()), Error);
}

TEST_F(CompilerTest, UnknownBackendIsAValueError) {
  CompileOptions o = options();
  o.backend = "tpu";
  try {
    compile(vector_add(), o);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Value);
    EXPECT_STREQ(e.what(), "error[E0705]: backend 'tpu' is not available\nhint: use backend 'cpu' or 'cuda'\n");
  }
}

TEST_F(CompilerTest, EmptyRequestIsAValueError) {
  try {
    compile(frontend::KernelRequest{}, options());
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Value);
    EXPECT_STREQ(e.what(), "error[E0705]: the compile request has no kernel function\n");
  }
}

TEST_F(CompilerTest, UnsafeCacheDirectoryIsRefused) {
  std::string dir = tmp_ / "open";
  ASSERT_EQ(::mkdir(dir.c_str(), 0777), 0);
  ASSERT_EQ(::chmod(dir.c_str(), 0777), 0);
  CompileOptions o = options();
  o.cache_dir = dir;
  try {
    compile(vector_add(), o);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("is writable by group or others"), std::string::npos) << e.what();
  }
  testing::ScopedEnv env("TEGULA_CACHE_DIR", dir.c_str());
  EXPECT_THROW(compile(vector_add(), CompileOptions{}), Error);
}

TEST_F(CompilerTest, DumpDirectoryReceivesEveryStage) {
  std::string dumps = tmp_ / "dumps";
  ScopedEnv env("TEGULA_DUMP_DIR", dumps.c_str());
  std::shared_ptr<CompiledKernel> kernel = compile(vector_add(), options());
  std::string prefix = "add-" + kernel->key.substr(0, 8) + ".";
  EXPECT_EQ(read_text(dumps + "/" + prefix + "01-lowered.txt"), kernel->stages.ir.at(0).ir);
  EXPECT_EQ(read_text(dumps + "/" + prefix + "source.cpp"), kernel->stages.source);
  size_t files = 0;
  for (const auto& item : std::filesystem::directory_iterator(dumps)) {
    EXPECT_TRUE(item.path().filename().string().starts_with(prefix)) << item.path();
    ++files;
  }
  EXPECT_EQ(files, kernel->stages.ir.size() + 1);
}

TEST_F(CompilerTest, LaunchChecksArgumentsOfARealKernel) {
  std::shared_ptr<CompiledKernel> kernel = compile(vector_add(), options());
  const int64_t grid[3] = {1, 1, 1};
  try {
    kernel->launch(grid, {integer(1)});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Value);
    EXPECT_STREQ(e.what(),
                 "error[E0701]: kernel 'add' takes 4 runtime arguments (x_ptr: ptr<f32>, y_ptr: ptr<f32>, "
                 "out_ptr: ptr<f32>, n: i32), got 1\n");
  }
}

}  // namespace
}  // namespace tegula::runtime
