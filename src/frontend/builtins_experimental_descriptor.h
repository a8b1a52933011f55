// Triton 3.2/3.3's experimental descriptor API, which Triton removed in April
// 2025 (#6488) but which kernels of that era still call (PyTorch 2.6/2.7
// Inductor's persistent TMA matmul, torchtitan's and FBGEMM's grouped GEMMs):
//
//   tl._experimental_descriptor_load(desc_ptr, offsets, shape, dtype)
//   tl._experimental_descriptor_store(desc_ptr, value, offsets)
//   tl.extra.cuda.experimental_device_tensormap_create1d / _create2d(desc_ptr, global_address,
//                                                                    load_size, global_size, element_ty)
//   tl.extra.cuda.experimental_tensormap_fenceproxy_acquire(desc_ptr)
//
// In Triton `desc_ptr` points at a 128-byte CUtensorMap, which only the TMA
// unit reads. Here it points at 128 bytes in Tegula's own layout (below),
// written by the host helpers (python/tegula/experimental_descriptor.py) or
// by the in-kernel creates, and read back by the loads and stores at run
// time: a load or store rebuilds a tl.make_tensor_descriptor from the words
// and goes through it, so bounds (zero fill, dropped stores) are those of
// ordinary descriptors on every backend. The block shape and dtype stay
// static, as the API requires. The layout is in legacy_descriptor_layout.h.
#pragma once

#include <cstdint>
#include <string>

#include "frontend/legacy_descriptor_layout.h"
#include "frontend/lowering.h"

namespace tegula::frontend {

Symbol lower_experimental_descriptor_load(Lowerer& l, const CallArgs& c, const std::string& name);
Symbol lower_experimental_descriptor_store(Lowerer& l, const CallArgs& c, const std::string& name);
// experimental_device_tensormap_create1d and _create2d (the name says which).
Symbol lower_experimental_tensormap_create(Lowerer& l, const CallArgs& c, const std::string& name);
Symbol lower_experimental_tensormap_fence(Lowerer& l, const CallArgs& c, const std::string& name);

}  // namespace tegula::frontend
