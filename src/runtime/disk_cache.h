// The on-disk kernel cache: one entry per cache key (a hex SHA-256 of
// everything that affects the produced code), in one directory, the same
// for every backend:
//
//   <key>.<ext>    the artifact the backend built: a shared object (.so), a
//                  device image (.cubin); the backend says how to load it
//   <key>.stages   optional: IR after every stage + generated source, for inspect()
//   <key>.meta     the manifest, written last: format version, backend,
//                  kernel name, launch parameters, the artifact's extension
//                  and SHA-256 (and that of .stages), then the SHA-256 of
//                  those lines (an edited manifest is a miss)
//   <key>.lock     locked (flock) by the process building the entry, which
//                  writes its pid there (runtime/lock_wait.h)
//
// A cached artifact is code this process will execute, so the directory must
// be private to the user (see resolve_cache_directory), every file is written
// to a unique temporary name and rename()d into place (readers never see half
// a file), an entry is built and published only under its lock (processes
// sharing the directory build each kernel once, and the files of two builds
// never mix), and before a backend loads it the artifact must be a regular
// file of this user whose bytes match the manifest's hash. Anything that
// does not check out is a miss: the caller rebuilds and overwrites the entry.
// docs/runtime.md has the rules and what each one defends against.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backends/artifact.h"
#include "backends/backend.h"
#include "ir/ir.h"
#include "passes/debug_sites.h"
#include "runtime/compiler.h"

namespace tegula::runtime {

// Bumped whenever the entry layout or the kernel ABI changes: entries of
// another version are misses, never misread.
constexpr int kCacheFormatVersion = 3;

struct CacheManifest {
  std::string backend;  // the name of the backend that built the entry
  std::string kernel_name;
  std::vector<ir::Param> params;
  backends::LaunchShape shape;  // what the generated code was written for (zero on the CPU)
  // Per parameter: what the kernel may do to the memory behind it
  // (passes/pointer_effects.h); one entry per param.
  std::vector<passes::PointerEffects> effects;
  // Debug kernels only: the table of their checks (passes/debug_sites.h),
  // which turns an error record into a report.
  std::vector<passes::DebugSite> debug_sites;
  // The tensor maps launches encode (backends/tensor_map_param.h).
  std::vector<backends::TensorMapParam> tensor_maps;
  std::string artifact_extension;  // the artifact is <key>.<artifact_extension>
  std::string artifact_sha256;
  std::string stages_sha256;  // of <key>.stages; empty when none is stored
};

// A SHA-256 as 64 lowercase hex digits: a cache key, an artifact's hash.
bool is_hex_digest(std::string_view text);
// An artifact's file extension: it becomes part of a file name, so only a
// short run of lowercase letters and digits may.
bool is_artifact_extension(std::string_view text);

std::string serialize_manifest(const CacheManifest& manifest);
// nullopt when the text is truncated, of another format version or malformed.
std::optional<CacheManifest> parse_manifest(std::string_view text);

std::string serialize_stages(const Stages& stages);
std::optional<Stages> parse_stages(std::string_view text);

// A verified entry: its manifest and its artifact's bytes, which match the
// manifest's hash.
struct CacheEntry {
  CacheManifest manifest;
  backends::Artifact artifact;
};

// Resolves the cache directory (`configured`, else $TEGULA_CACHE_DIR, else
// $XDG_CACHE_HOME/tegula, else ~/.cache/tegula), creates it (and missing
// parents) with mode 0700, and refuses (tegula::Error) a directory that is
// not owned by the current user, is writable by group or others, or lies
// inside a directory anyone may write to without the sticky bit (whoever can
// rename the cache directory can replace it). Returns the canonical path
// (symbolic links resolved), so a link swapped later cannot redirect it.
// Implemented in cache_directory.cpp.
std::string resolve_cache_directory(const std::string& configured);

// Held by the process that builds and publishes one entry: an exclusive
// flock on <key>.lock, released by the destructor or by the process's death
// (a killed builder never blocks the others). Move-only.
class EntryLock {
 public:
  EntryLock(EntryLock&& other) noexcept;
  EntryLock& operator=(EntryLock&& other) noexcept;
  EntryLock(const EntryLock&) = delete;
  EntryLock& operator=(const EntryLock&) = delete;
  ~EntryLock();

  const std::string& key() const { return key_; }
  // False where the file system refused the lock (then builds are not
  // serialized; entries stay verified, a reader may just see more misses).
  bool held() const { return fd_ >= 0; }

 private:
  friend class DiskCache;
  EntryLock(std::string key, int fd) : key_(std::move(key)), fd_(fd) {}

  std::string key_;
  int fd_ = -1;
};

class DiskCache {
 public:
  // `directory` must come from resolve_cache_directory.
  explicit DiskCache(std::string directory) : directory_(std::move(directory)) {}

  const std::string& directory() const { return directory_; }
  std::string artifact_path(const std::string& key, std::string_view extension) const;
  std::string manifest_path(const std::string& key) const;
  std::string stages_path(const std::string& key) const;
  std::string lock_path(const std::string& key) const;
  // A fresh name in the cache directory, for building a file before rename().
  std::string temporary_path(const std::string& key, std::string_view extension) const;

  // Waits until no other process builds `key`, then holds its lock: the
  // caller loads once more (the other process may have just published it) and
  // builds and stores only on a second miss. Without a lock (no locks on
  // this file system, a holder that is stopped or gone: runtime/lock_wait.h)
  // the build simply is not serialized (EntryLock::held). Throws Error
  // (E0908) after waiting $TEGULA_CACHE_LOCK_TIMEOUT for a working holder,
  // Interrupted on the user's interrupt.
  EntryLock lock(const std::string& key) const;

  // The verified entry for `key` (manifest parsed, artifact read and its
  // bytes checked against the manifest's hash), or nullopt with the reason
  // in `*why` when it is absent ("no entry") or does not check out. Needs no
  // lock: a reader racing a writer sees the old entry, the new one, or a miss.
  std::optional<CacheEntry> load(const std::string& key, std::string* why = nullptr) const;

  // The entry's manifest as stored, not verified against the artifact; nullopt
  // (with the reason in `*why`) if absent, malformed or not a file this user
  // wrote.
  std::optional<CacheManifest> load_manifest(const std::string& key, std::string* why = nullptr) const;

  // Stored stages of an entry whose manifest is `manifest`; nullopt if none
  // were stored or they do not match the manifest's hash.
  std::optional<Stages> load_stages(const std::string& key, const CacheManifest& manifest) const;

  // Publishes the entry of `held.key()`: renames `built_artifact` (a file in
  // the cache directory, e.g. from temporary_path) to
  // <key>.<manifest.artifact_extension> (taking group and others' permissions
  // away), writes the stages if given, then the manifest. Fills in the
  // hashes of `manifest`. Also removes temporary files a killed process left
  // behind. Throws Error if the files cannot be written.
  void store(const EntryLock& held, const std::string& built_artifact, CacheManifest& manifest,
             const Stages* stages) const;

  // The bytes of `path` (a file of the cache directory) if it is one this
  // user's Tegula could have written: a regular file (not a link, FIFO or
  // device) of this user that group and others cannot write. Else nullopt,
  // with the reason in `*why` ("the <what> is missing", "... is a symbolic
  // link"...). The rule every entry file is read by.
  std::optional<std::string> read_private_file(const std::string& path, std::string_view what,
                                               std::string* why) const;

  // Writes `bytes` to a temporary name and rename()s it to `path` (a file
  // of the cache directory): readers see the old file or the new one, never
  // half of it. Throws Error if it cannot be written.
  void write_atomically(const std::string& key, const std::string& path, std::string_view bytes) const;

  // Adds stages to the existing entry `manifest` describes (rewrites its
  // manifest), under the entry's lock; does nothing if the entry was rebuilt
  // since `manifest` was read. The caller must not hold lock(key).
  void store_stages(const std::string& key, CacheManifest& manifest, const Stages& stages) const;

 private:
  void publish_rest(const std::string& key, CacheManifest& manifest, const Stages* stages) const;
  void remove_stale_temporaries() const;

  std::string directory_;
};

}  // namespace tegula::runtime
