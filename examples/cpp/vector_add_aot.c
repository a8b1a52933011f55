/* examples/vector_add.py's kernel built ahead of time (`tegula aot`, run by
   this project's CMakeLists.txt) and launched from C through the header it
   wrote: no Python, no compiler, no Tegula library at run time. The grid is
   split into two ranges run one after the other, as threads would run them.
   `vector_add_aot [n]` checks every element and the masked tail. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include "add_kernel.h"

int main(int argc, char** argv) {
  int32_t n = argc > 1 ? atoi(argv[1]) : 98765;
  float* x = malloc(sizeof(float) * n);
  float* y = malloc(sizeof(float) * n);
  float* out = malloc(sizeof(float) * (n + 16));
  for (int32_t i = 0; i < n; ++i) {
    x[i] = (float)((i * 7919) % 1000) / 37.0f - 13.0f;
    y[i] = (float)((i * 104729) % 997) / 91.0f;
  }
  for (int32_t i = 0; i < n + 16; ++i) out[i] = -1.0f;

  add_kernel_kernel kernel;
  if (add_kernel_load(&kernel, ADD_KERNEL_SO) != 0) {
    fprintf(stderr, "cannot load %s: %s\n", ADD_KERNEL_SO, dlerror());
    return 1;
  }
  int32_t programs = (n + 1023) / 1024;
  add_kernel_launch_range(&kernel, programs, 1, 1, 0, programs / 2, x, y, out, n);
  add_kernel_launch_range(&kernel, programs, 1, 1, programs / 2, programs, x, y, out, n);
  add_kernel_unload(&kernel);

  for (int32_t i = 0; i < n; ++i)
    if (out[i] != x[i] + y[i]) {
      fprintf(stderr, "out[%d] = %g, expected %g\n", i, out[i], x[i] + y[i]);
      return 1;
    }
  for (int32_t i = n; i < n + 16; ++i)
    if (out[i] != -1.0f) {
      fprintf(stderr, "the masked tail was written at %d\n", i);
      return 1;
    }
  printf("vector_add_aot, n=%d: OK\n", n);
  free(x);
  free(y);
  free(out);
  return 0;
}
