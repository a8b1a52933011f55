// examples/vector_add.py's kernel, compiled and launched from C++ with no
// Python: `vector_add [n]`, on the CPU backend (a CUDA launch takes device
// pointers and a stream the same way; this example has no device allocator).
// Every element is checked against the sum computed here, the masked tail
// against its sentinel, and a wrong launch must come back as an error.
#include <tegula/tegula.hpp>

#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  const std::string backend = "cpu";
  int32_t n = argc > 1 ? std::atoi(argv[1]) : 98765;  // not a multiple of the block: the tail is masked
  std::vector<float> x(n), y(n), out(n + 16, -1.0f);
  std::mt19937 rng(42);
  std::normal_distribution<float> normal;
  for (int32_t i = 0; i < n; ++i) x[i] = normal(rng), y[i] = normal(rng);

  try {
    tegula::Options options;
    options.backend = backend;
    options.signature = "*fp32:16, *fp32:16, *fp32:16, i32, 1024";  // x, y, out, n, BLOCK
    tegula::Kernel add = tegula::Kernel::compile(TEGULA_EXAMPLE_KERNEL, options);
    add.launch({(n + 1023) / 1024, 1, 1}, {tegula::Arg::pointer(x.data()), tegula::Arg::pointer(y.data()),
                                          tegula::Arg::pointer(out.data()), tegula::Arg::i32(n)});
    // A launch mistake is an error value with its code, not a crash.
    try {
      add.launch({1, 1, 1}, {tegula::Arg::pointer(x.data())});
      std::fprintf(stderr, "a launch with one argument was accepted\n");
      return 1;
    } catch (const tegula::KernelError& e) {
      std::printf("wrong launch refused: %s\n", e.code().c_str());
    }
  } catch (const tegula::KernelError& e) {
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
