// A loaded shared object (a compiled kernel), closed when the last owner
// drops it. Kernels hold it through shared_ptr so the code stays mapped while
// any CompiledKernel can still call into it.
#pragma once

#include <memory>
#include <stdexcept>
#include <string>

namespace tegula::backends::cpu {

// dlopen/dlsym failed; what() carries the loader's own message (dlerror()).
class LibraryError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class SharedLibrary {
 public:
  // Loads `path` with every symbol resolved now (a missing symbol fails here,
  // not at the first launch) and kept private to this library, so two
  // kernels both exporting `tegula_kernel` never see each other.
  // Throws LibraryError.
  static std::shared_ptr<SharedLibrary> open(const std::string& path);

  ~SharedLibrary();
  SharedLibrary(const SharedLibrary&) = delete;
  SharedLibrary& operator=(const SharedLibrary&) = delete;

  // Address of the exported symbol `name`. Throws LibraryError if absent.
  void* symbol(const std::string& name) const;
  const std::string& path() const { return path_; }

 private:
  SharedLibrary(void* handle, std::string path) : handle_(handle), path_(std::move(path)) {}

  void* handle_;  // from dlopen; never null
  std::string path_;
};

}  // namespace tegula::backends::cpu
