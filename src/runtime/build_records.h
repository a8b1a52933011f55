// Reusing a built artifact under another cache key. A cache key hashes what
// a compile was asked (the kernel's text, its specialization, the options),
// and many different requests generate the same source: a specialization
// the generated code does not use (an integer's divisibility, num_warps on
// the CPU), the same kernel defined by two files. Building that source again
// would make the same code, so after a miss has generated its source the
// driver hashes the inputs of the build (the backend says what they are:
// Target::add_build_fields) and looks for a build record:
//
//   <inputs>.build   which entry holds the artifact built from those inputs:
//                    "tegula-build-record 1", "entry <key> <ext> <sha256>", "end"
//   <inputs>.lock    locked while a process builds from those inputs
//
// A record found whose entry's artifact is still a private file of this
// user hashing to the recorded SHA-256 is reused: its bytes are copied (never
// linked: each entry keeps its own file and hash) to the new entry's
// artifact, which is then published like a build's. Anything else (no
// record, a truncated or foreign record, an entry since rebuilt, damaged or
// removed) is a miss: the backend builds, and the record is rewritten to
// point at the new entry. The record is read and written under the inputs'
// lock, so processes building the same source from different requests build
// it once.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "runtime/disk_cache.h"

namespace tegula::runtime {

// Which entry's artifact was built from one set of build inputs.
struct BuildRecord {
  std::string key;        // the entry that holds it
  std::string extension;  // its artifact is <key>.<extension>
  std::string sha256;     // of the artifact as built
};

std::string serialize_build_record(const BuildRecord& record);
// nullopt when the text is truncated, of another version or malformed.
std::optional<BuildRecord> parse_build_record(std::string_view text);

class BuildRecords {
 public:
  explicit BuildRecords(const DiskCache& cache) : cache_(cache) {}

  std::string record_path(const std::string& inputs) const;

  // The bytes of the artifact recorded for `inputs` (a hex digest), verified
  // against the record's hash; nullopt with the reason in `*why` ("no
  // record" when there is none).
  std::optional<std::string> find(const std::string& inputs, std::string* why = nullptr) const;

  // Records that `record` holds the artifact built from `inputs`; the
  // caller holds lock(inputs) while it builds, publishes and records, where
  // the file system has locks. Throws Error if the record cannot be written.
  void record(const std::string& inputs, const BuildRecord& record) const;

 private:
  const DiskCache& cache_;
};

}  // namespace tegula::runtime
