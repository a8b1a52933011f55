#include "backends/cpu/shared_library.h"

#include <dlfcn.h>

namespace tegula::backends::cpu {

namespace {

std::string last_loader_error(const std::string& fallback) {
  // dlerror() is thread-local in glibc and musl, so this reads our own failure.
  const char* message = dlerror();
  return message ? std::string(message) : fallback;
}

}  // namespace

std::shared_ptr<SharedLibrary> SharedLibrary::open(const std::string& path) {
  dlerror();  // clear a stale message
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) throw LibraryError("cannot load " + path + ": " + last_loader_error("unknown dlopen error"));
  return std::shared_ptr<SharedLibrary>(new SharedLibrary(handle, path));
}

SharedLibrary::~SharedLibrary() { dlclose(handle_); }

void* SharedLibrary::symbol(const std::string& name) const {
  dlerror();
  void* address = dlsym(handle_, name.c_str());
  if (!address)
    throw LibraryError("symbol '" + name + "' not found in " + path_ + ": " +
                       last_loader_error("the symbol is null"));
  return address;
}

}  // namespace tegula::backends::cpu
