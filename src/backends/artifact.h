// A built kernel as the disk cache keeps it: one file (a shared object, a
// device image) whose bytes the cache verified against its manifest before a
// backend loads it (runtime/disk_cache.h has the rules).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace tegula::backends {

struct Artifact {
  std::string path;   // where it lies in the cache directory
  std::string bytes;  // its contents, as verified
  uint64_t device = 0;  // which file was read: a later rename() over `path`
  uint64_t inode = 0;   // gives another (device, inode)

  // Whether `path` still names the file that was read. A backend that loads
  // by path (dlopen) asks after loading: if a writer renamed a new build over
  // it in between, what got loaded is not what was verified.
  bool still_at_path() const;
};

// Creates `path`, which must not exist yet, with mode 0600 and writes
// `bytes` to it; a failed write removes it again. Throws Error (E0902)
// naming the file.
void write_new_file(const std::string& path, std::string_view bytes);

}  // namespace tegula::backends
