/* The CUDA build of examples/vector_add.py's kernel, made ahead of time by
   `tegula aot --backend cuda --arch CC` (this project's CMakeLists.txt, with
   -DTEGULA_EXAMPLE_CUDA_ARCH=CC) and launched from C through its header.
   Device memory comes from the driver API, reached through dlopen like the
   header does: the program needs no CUDA toolkit, no Python and no compiler.
   `vector_add_aot_cuda [n]` checks every element and the masked tail. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include "add_kernel_cuda.h"

typedef int (*alloc_fn)(uint64_t*, size_t);
typedef int (*free_fn)(uint64_t);
typedef int (*to_device_fn)(uint64_t, const void*, size_t);
typedef int (*to_host_fn)(void*, uint64_t, size_t);
typedef int (*sync_fn)(void);

int main(int argc, char** argv) {
  int32_t n = argc > 1 ? atoi(argv[1]) : 98765;
  size_t bytes = sizeof(float) * (size_t)n, out_bytes = sizeof(float) * ((size_t)n + 16);
  float* x = malloc(bytes);
  float* y = malloc(bytes);
  float* out = malloc(out_bytes);
  for (int32_t i = 0; i < n; ++i) {
    x[i] = (float)((i * 7919) % 1000) / 37.0f - 13.0f;
    y[i] = (float)((i * 104729) % 997) / 91.0f;
  }
  for (int32_t i = 0; i < n + 16; ++i) out[i] = -1.0f;

  add_kernel_cuda_kernel kernel;
  int status = add_kernel_cuda_load(&kernel, ADD_KERNEL_CUBIN);
  if (status != 0) {
    fprintf(stderr, "cannot load %s: status %d\n", ADD_KERNEL_CUBIN, status);
    return 1;
  }
  void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  alloc_fn alloc;
  free_fn release;
  to_device_fn to_device;
  to_host_fn to_host;
  sync_fn sync;
  *(void**)&alloc = dlsym(driver, "cuMemAlloc_v2");
  *(void**)&release = dlsym(driver, "cuMemFree_v2");
  *(void**)&to_device = dlsym(driver, "cuMemcpyHtoD_v2");
  *(void**)&to_host = dlsym(driver, "cuMemcpyDtoH_v2");
  *(void**)&sync = dlsym(driver, "cuCtxSynchronize");
  uint64_t dx = 0, dy = 0, dout = 0;
  if (alloc(&dx, bytes) || alloc(&dy, bytes) || alloc(&dout, out_bytes) || to_device(dx, x, bytes) ||
      to_device(dy, y, bytes) || to_device(dout, out, out_bytes)) {
    fprintf(stderr, "device memory failed\n");
    return 1;
  }
  status = add_kernel_cuda_launch(&kernel, (uint32_t)((n + 1023) / 1024), 1, 1, 0, (float*)(uintptr_t)dx,
                                  (float*)(uintptr_t)dy, (float*)(uintptr_t)dout, n);
  if (status != 0 || sync() != 0 || to_host(out, dout, out_bytes) != 0) {
    fprintf(stderr, "launch failed: status %d\n", status);
    return 1;
  }
  release(dx);
  release(dy);
  release(dout);
  add_kernel_cuda_unload(&kernel);

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
  printf("vector_add_aot_cuda, n=%d: OK\n", n);
  free(x);
  free(y);
  free(out);
  return 0;
}
