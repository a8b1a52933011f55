// The on-disk kernel cache: one entry per cache key (a hex SHA-256 of
// everything that affects the produced code), in one directory:
//
//   <key>.so       the compiled kernel (CPU)
//   <key>.cubin    the device image (CUDA: a cubin, or PTX for a device newer than NVRTC)
//   <key>.stages   optional: IR after every stage + generated source, for inspect()
//   <key>.meta     the manifest, written last: format version, kernel name,
//                  launch parameters, SHA-256 of the .so (and of .stages)
//
// A cached .so is code this process will execute, so the directory must be
// private to the user (see resolve_cache_directory), every file is written to
// a unique temporary name and rename()d into place (readers never see half a
// file; concurrent writers of one key simply replace each other), and the .so
// bytes are checked against the manifest's hash before dlopen. Anything that
// does not check out is a miss: the caller rebuilds and overwrites the entry.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/ir.h"
#include "runtime/compiler.h"

namespace tegula::runtime {

class SharedLibrary;

// Bumped whenever the entry layout or the kernel ABI changes.
constexpr int kCacheFormatVersion = 1;

struct CacheManifest {
  std::string kernel_name;
  std::vector<ir::Param> params;
  std::string library_sha256;  // of <key>.so
  std::string stages_sha256;   // of <key>.stages; empty when none is stored
  // CUDA entries only (library_sha256 is then the image's): the block size and
  // dynamic shared memory the generated code was written for. 0 for CPU entries.
  int cuda_threads = 0;
  int cuda_shared_bytes = 0;
};

std::string serialize_manifest(const CacheManifest& manifest);
// nullopt when the text is truncated, of another format version or malformed.
std::optional<CacheManifest> parse_manifest(std::string_view text);

std::string serialize_stages(const Stages& stages);
std::optional<Stages> parse_stages(std::string_view text);

// A verified entry, loaded.
struct CachedKernel {
  CacheManifest manifest;
  std::shared_ptr<SharedLibrary> library;
  void* entry = nullptr;  // the library's `tegula_kernel`
};

// A verified CUDA entry: the device image as NVRTC made it.
struct CachedImage {
  CacheManifest manifest;
  std::string image;
};

// Resolves the cache directory (`configured`, else $TEGULA_CACHE_DIR, else
// $XDG_CACHE_HOME/tegula, else ~/.cache/tegula), creates it (and missing
// parents) with mode 0700, and refuses (runtime::Error) a directory that is
// not owned by the current user or is writable by group or others.
std::string resolve_cache_directory(const std::string& configured);

class DiskCache {
 public:
  // `directory` must come from resolve_cache_directory.
  explicit DiskCache(std::string directory) : directory_(std::move(directory)) {}

  const std::string& directory() const { return directory_; }
  std::string library_path(const std::string& key) const;
  std::string manifest_path(const std::string& key) const;
  std::string stages_path(const std::string& key) const;
  std::string image_path(const std::string& key) const;
  // A fresh name in the cache directory, for building a file before rename().
  std::string temporary_path(const std::string& key, std::string_view extension) const;

  // The verified, loaded entry for `key`, or nullopt (with the reason in
  // `*why` when given) if it is absent or does not check out.
  std::optional<CachedKernel> load(const std::string& key, std::string* why = nullptr) const;

  // The verified CUDA entry for `key` (image bytes checked against the
  // manifest), or nullopt with the reason in `*why`.
  std::optional<CachedImage> load_image(const std::string& key, std::string* why = nullptr) const;

  // The entry's manifest as stored, not verified against the .so.
  std::optional<CacheManifest> load_manifest(const std::string& key) const;

  // Stored stages of an entry whose manifest is `manifest`; nullopt if none
  // were stored or they do not match the manifest's hash.
  std::optional<Stages> load_stages(const std::string& key, const CacheManifest& manifest) const;

  // Publishes an entry: renames `built_library` (a file in the cache
  // directory, e.g. from temporary_path) to <key>.so, writes the stages if
  // given, then the manifest. Fills in the hashes of `manifest`. Throws
  // runtime::Error if the files cannot be written.
  void store(const std::string& key, const std::string& built_library, CacheManifest& manifest,
             const Stages* stages) const;

  // Publishes a CUDA entry: the image, the stages if given, then the manifest
  // (whose cuda_* fields the caller fills). Throws runtime::Error like store().
  void store_image(const std::string& key, std::string_view image, CacheManifest& manifest,
                   const Stages* stages) const;

  // Adds stages to an existing entry (rewrites its manifest).
  void store_stages(const std::string& key, CacheManifest& manifest, const Stages& stages) const;

 private:
  void write_atomically(const std::string& key, const std::string& path, std::string_view bytes) const;

  std::string directory_;
};

}  // namespace tegula::runtime
