// examples/vector_add.py's kernel, compiled and launched from C++ with no
// Python: `vector_add [n] [cpu|cuda]`. Every element is checked against the
// sum computed here, the masked tail against its sentinel, and a wrong
// launch must come back as an error with its code. On CUDA the arrays live
// in device memory, allocated through the driver (reached with dlopen, as
// Tegula reaches it: no CUDA toolkit needed to build this).
#include <tegula/tegula.hpp>

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

// The few driver calls a CUDA run needs, in device 0's primary context
// (the one Tegula's runtime launches in).
struct Driver {
  int (*init)(unsigned) = nullptr;
  int (*device_get)(int*, int) = nullptr;
  int (*retain)(void**, int) = nullptr;
  int (*set_current)(void*) = nullptr;
  int (*alloc)(uint64_t*, size_t) = nullptr;
  int (*release)(uint64_t) = nullptr;
  int (*to_device)(uint64_t, const void*, size_t) = nullptr;
  int (*to_host)(void*, uint64_t, size_t) = nullptr;
  int (*sync)() = nullptr;

  bool open() {
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return false;
    auto sym = [&](auto& fn, const char* name) { *reinterpret_cast<void**>(&fn) = dlsym(lib, name); return fn != nullptr; };
    if (!(sym(init, "cuInit") && sym(device_get, "cuDeviceGet") && sym(retain, "cuDevicePrimaryCtxRetain") &&
          sym(set_current, "cuCtxSetCurrent") && sym(alloc, "cuMemAlloc_v2") && sym(release, "cuMemFree_v2") &&
          sym(to_device, "cuMemcpyHtoD_v2") && sym(to_host, "cuMemcpyDtoH_v2") && sym(sync, "cuCtxSynchronize")))
      return false;
    int device = 0;
    void* context = nullptr;
    return init(0) == 0 && device_get(&device, 0) == 0 && retain(&context, device) == 0 && set_current(context) == 0;
  }
};

// An array where the kernel reads it: the host vector itself, or a device copy.
struct Placed {
  std::vector<float>& host;
  Driver* driver;
  uint64_t device = 0;

  Placed(std::vector<float>& h, Driver* d) : host(h), driver(d) {
    if (driver && (driver->alloc(&device, host.size() * sizeof(float)) != 0 ||
                   driver->to_device(device, host.data(), host.size() * sizeof(float)) != 0))
      throw std::runtime_error("device memory failed");
  }
  ~Placed() {
    if (driver && device) driver->release(device);
  }
  const void* address() const { return driver ? reinterpret_cast<const void*>(device) : host.data(); }
  void fetch() {
    if (driver && (driver->sync() != 0 || driver->to_host(host.data(), device, host.size() * sizeof(float)) != 0))
      throw std::runtime_error("copy back failed");
  }
};

}  // namespace

int main(int argc, char** argv) {
  int32_t n = argc > 1 ? std::atoi(argv[1]) : 98765;  // not a multiple of the block: the tail is masked
  std::string backend = argc > 2 ? argv[2] : "cpu";
  Driver driver;
  if (backend == "cuda" && !driver.open()) {
    std::fprintf(stderr, "no usable CUDA driver\n");
    return 1;
  }
  std::vector<float> x(n), y(n), out(n + 16, -1.0f);
  std::mt19937 rng(42);
  std::normal_distribution<float> normal;
  for (int32_t i = 0; i < n; ++i) x[i] = normal(rng), y[i] = normal(rng);

  try {
    Driver* on_device = backend == "cuda" ? &driver : nullptr;
    Placed px(x, on_device), py(y, on_device), pout(out, on_device);
    tegula::Options options;
    options.backend = backend;
    options.signature = "*fp32:16, *fp32:16, *fp32:16, i32, 1024";  // x, y, out, n, BLOCK
    tegula::Kernel add = tegula::Kernel::compile(TEGULA_EXAMPLE_KERNEL, options);
    add.launch({(n + 1023) / 1024, 1, 1}, {tegula::Arg::pointer(px.address()), tegula::Arg::pointer(py.address()),
                                          tegula::Arg::pointer(pout.address()), tegula::Arg::i32(n)});
    pout.fetch();
    // A launch mistake is an error value with its code, not a crash.
    try {
      add.launch({1, 1, 1}, {tegula::Arg::pointer(px.address())});
      std::fprintf(stderr, "a launch with one argument was accepted\n");
      return 1;
    } catch (const tegula::KernelError& e) {
      std::printf("wrong launch refused: %s\n", e.code().c_str());
    }
  } catch (const tegula::KernelError& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  for (int32_t i = 0; i < n; ++i)
    if (out[i] != x[i] + y[i]) {
      std::fprintf(stderr, "out[%d] = %g, expected %g\n", i, out[i], x[i] + y[i]);
      return 1;
    }
  for (int32_t i = n; i < n + 16; ++i)
    if (out[i] != -1.0f) {
      std::fprintf(stderr, "the masked tail was written at %d\n", i);
      return 1;
    }
  std::printf("vector_add on %s, n=%d: OK (tegula %s)\n", backend.c_str(), n, tegula::version());
  return 0;
}
