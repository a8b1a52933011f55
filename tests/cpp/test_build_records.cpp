#include "runtime/build_records.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "backends/cpu/toolchain.h"
#include "disk_cache_test_util.h"
#include "runtime_test_util.h"
#include "support/sha256.h"

// Build records (runtime/build_records.h): their text, and finding the
// artifact one names only while it is the artifact that was recorded. The
// compile driver's use of them is in test_compiler.cpp.

namespace tegula::runtime {
namespace {

using testing::DiskCacheTest;
using testing::kKey;
using testing::mode_of;
using testing::read_text;
using testing::write_text;

const std::string kInputs = sha256_hex("some build inputs");

TEST(BuildRecord, RoundTripsExactly) {
  BuildRecord record{kKey, "so", sha256_hex("library")};
  std::string text = serialize_build_record(record);
  EXPECT_EQ(text, "tegula-build-record 1\nentry " + kKey + " so " + record.sha256 + "\nend\n");
  std::optional<BuildRecord> back = parse_build_record(text);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->key, kKey);
  EXPECT_EQ(back->extension, "so");
  EXPECT_EQ(back->sha256, record.sha256);
}

TEST(BuildRecord, AnythingButWhatTheWriterMakesIsRefused) {
  std::string sha = sha256_hex("library");
  std::string good = serialize_build_record({kKey, "so", sha});
  for (const std::string& text : {
           good.substr(0, good.size() - 4),                                     // truncated
           std::string(""),                                                     // empty
           "tegula-build-record 2\nentry " + kKey + " so " + sha + "\nend\n",   // another version
           "tegula-build-record 1\nentry " + kKey + " so " + sha + " x\nend\n", // a fourth field
           "tegula-build-record 1\nentry " + kKey + " so\nend\n",               // a missing one
           "tegula-build-record 1\nentry " + kKey + "  so " + sha + "\nend\n",  // two spaces
           "tegula-build-record 1\nentry ../" + kKey.substr(3) + " so " + sha + "\nend\n",  // a path
           "tegula-build-record 1\nentry " + kKey + " s/o " + sha + "\nend\n",  // not an extension
           "tegula-build-record 1\nentry " + kKey + " so " + sha.substr(1) + "A\nend\n",  // not lowercase hex
           "tegula-build-record 1\nentry " + kKey + " so " + sha + "\nentry " + kKey + " so " + sha + "\nend\n",
       })
    EXPECT_FALSE(parse_build_record(text)) << text;
}

class BuildRecordsTest : public DiskCacheTest {};

TEST_F(BuildRecordsTest, FindsTheRecordedArtifactWhileItIsUnchanged) {
  DiskCache cache(directory_);
  BuildRecords records(cache);
  std::string why;
  EXPECT_FALSE(records.find(kInputs, &why));
  EXPECT_EQ(why, "no record");

  publish(cache);
  std::optional<CacheManifest> manifest = cache.load_manifest(kKey);
  ASSERT_TRUE(manifest);
  records.record(kInputs, {kKey, "so", manifest->artifact_sha256});
  EXPECT_EQ(mode_of(records.record_path(kInputs)), 0600);
  std::optional<std::string> bytes = records.find(kInputs, &why);
  ASSERT_TRUE(bytes) << why;
  EXPECT_EQ(*bytes, read_text(cache.artifact_path(kKey, "so")));

  // The entry rebuilt (another build differs byte for byte), damaged or gone: a miss.
  std::string library = read_text(cache.artifact_path(kKey, "so"));
  std::string altered = library;
  altered[altered.size() / 2] ^= 0x20;
  write_text(cache.artifact_path(kKey, "so"), altered);
  EXPECT_FALSE(records.find(kInputs, &why));
  EXPECT_EQ(why, "the recorded artifact was rebuilt or altered");
  std::filesystem::remove(cache.artifact_path(kKey, "so"));
  EXPECT_FALSE(records.find(kInputs, &why));
  EXPECT_EQ(why, "the recorded artifact is missing");
}

TEST_F(BuildRecordsTest, ARecordThatIsNotOursIsAMiss) {
  DiskCache cache(directory_);
  BuildRecords records(cache);
  publish(cache);
  std::string sha = cache.load_manifest(kKey)->artifact_sha256;
  std::string why;

  write_text(records.record_path(kInputs), serialize_build_record({kKey, "so", sha}).substr(0, 40));
  EXPECT_FALSE(records.find(kInputs, &why));
  EXPECT_EQ(why, "the build record is truncated or malformed");

  // A link to a good record, or a record others may write, is not read.
  std::string elsewhere = tmp_ / "record";
  write_text(elsewhere, serialize_build_record({kKey, "so", sha}));
  std::filesystem::remove(records.record_path(kInputs));
  std::filesystem::create_symlink(elsewhere, records.record_path(kInputs));
  EXPECT_FALSE(records.find(kInputs, &why));
  EXPECT_EQ(why, "the build record is a symbolic link");
  std::filesystem::remove(records.record_path(kInputs));
  write_text(records.record_path(kInputs), serialize_build_record({kKey, "so", sha}));
  ASSERT_EQ(::chmod(records.record_path(kInputs).c_str(), 0622), 0);
  EXPECT_FALSE(records.find(kInputs, &why));
  EXPECT_EQ(why, "the build record is writable by group or others");

  // Rewritten (renamed over), it is found again.
  records.record(kInputs, {kKey, "so", sha});
  EXPECT_TRUE(records.find(kInputs, &why)) << why;
}

// --- what the CPU backend hashes of its source --------------------------------------------

TEST(CompiledText, BlanksLinesThatAreOnlyComments) {
  using backends::cpu::compiled_text;
  EXPECT_EQ(compiled_text("// Generated by Tegula: CPU code for kernel @add.\nint x;\n"), "\nint x;\n");
  EXPECT_EQ(compiled_text("// kernel @other.\nint x;\n  // v4 = add(v1, v2)  a.py:3:7\nint y;  // kept\n// end"),
            "\nint x;\n\nint y;  // kept\n");
  // A line splice (or the trigraph of one) pulls the next line into the comment or a string.
  EXPECT_EQ(compiled_text("// kernel \\\nint x;\n"), "// kernel \\\nint x;\n");
  EXPECT_EQ(compiled_text("// kernel ?\?/\nint x;\n"), "// kernel ?\?/\nint x;\n");
  EXPECT_EQ(compiled_text("const char* s = \"a\\\n// b\";\n"), "const char* s = \"a\\\n// b\";\n");
  EXPECT_EQ(compiled_text("int x; ?\?/\n// b\n"), "int x; ?\?/\n// b\n");
  EXPECT_EQ(compiled_text("const char* s = \"a\\  \n// b\";\n"), "const char* s = \"a\\  \n// b\";\n");
  // Inside a block comment, a line that ends it is not a line comment.
  EXPECT_EQ(compiled_text("/* a\n// b */ int x;\n// c\n"), "/* a\n// b */ int x;\n\n");
  // A raw string may hold anything: the text is kept whole.
  EXPECT_EQ(compiled_text("auto s = R\"(\n// not a comment\n)\";\n"), "auto s = R\"(\n// not a comment\n)\";\n");
  EXPECT_EQ(compiled_text("// kernel\r\nint x;\n"), "// kernel\r\nint x;\n");
  EXPECT_EQ(compiled_text("/* a block */\nint x;\n"), "/* a block */\nint x;\n");
  EXPECT_EQ(compiled_text(""), "");
}

}  // namespace
}  // namespace tegula::runtime
