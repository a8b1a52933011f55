// Internal to the CUDA backend: staging a whole tile in shared memory, for
// the ops that read elements other threads hold at data-dependent places
// (sort, gather; codegen_sort.cpp, codegen_gather.cpp). Element e of a tile
// sits at buffer[e] (its row-major linear index).
#pragma once

#include <string>

#include "backends/cuda/codegen_context.h"

namespace tegula::backends::cuda {

// `T* const name = (T*)tg_smem;` for `elements` elements of `t`'s element
// type, after whatever barrier the previous use of the buffer needs.
inline std::string declare_staging_buffer(CudaContext& ctx, const ir::Type& t, int64_t elements) {
  std::string buffer = ctx.fresh("s");
  std::string type = c_element(t.element());
  ctx.out.line(type + "* const " + buffer + " = reinterpret_cast<" + type + "*>(" +
               ctx.shared_scratch(elements * element_bytes(t.element())) + ");");
  return buffer;
}

// One owner of each element of `src` (distribution `d`) writes it.
inline void stage_tile(CudaContext& ctx, const std::string& buffer, const std::string& src, const Distribution& d) {
  std::string own = ctx.owner(d);
  if (!own.empty()) ctx.out.open("if (" + own + ")");
  std::string i = ctx.open_unrolled(d.registers());
  ctx.out.line(buffer + "[" + ctx.element_index(d, i) + "] = " + src + "[" + i + "];");
  ctx.out.close();
  if (!own.empty()) ctx.out.close();
}

// Every thread reads the elements it holds in distribution `d`.
inline void unstage_tile(CudaContext& ctx, const std::string& dest, const std::string& buffer, const Distribution& d) {
  std::string i = ctx.open_unrolled(d.registers());
  ctx.out.line(dest + "[" + i + "] = " + buffer + "[" + ctx.element_index(d, i) + "];");
  ctx.out.close();
}

}  // namespace tegula::backends::cuda
