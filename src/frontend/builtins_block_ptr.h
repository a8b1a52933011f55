// Structured memory access: block pointers (tl.make_block_ptr, tl.advance)
// and tensor descriptors (tl.make_tensor_descriptor, desc.load/store, host
// TensorDescriptor arguments), in builtins_block_ptr.cpp.
//
// Neither is an IR type. Both are front-end symbols (Symbol::Kind::BlockPointer
// and TensorDescriptor) holding IR scalars — the base pointer, the parent
// tensor's shape and strides, and for block pointers the block's offsets — and
// the compile-time block shape. A load or store through a block pointer
// expands into the ordinary pointer tile, mask and `other` a hand-written
// kernel would use (ir/block_access.h). A descriptor's load, store or atomic
// becomes one desc_load / desc_store / desc_atomic op (ir/descriptor.h),
// which passes/lower_descriptors.h expands the same way for targets that do
// not copy (or reduce) blocks whole. The expansion, for a block of shape B at offsets o in a tensor
// of shape s and strides t:
//
//   start = addptr base, sum_d(i64(o_d) * i64(t_d))                  scalar
//   ptrs  = addptr splat(start), sum_d(expand(arange(0, B_d)) * t_d)   tile
//   mask  = and_d((o_d + expand(arange(0, B_d)) >= 0) & (... < s_d))   checked dims only
//   load ptrs, mask, other = padding (0 or NaN)
//
// where expand() puts the range along dimension d of the block. Products are
// int64 (as in Triton) unless the stride is a constant small enough for
// int32; the per-element offsets o_d + arange are int32, like Triton's offsets.
#pragma once

#include <string>
#include <vector>

#include "frontend/lowering.h"

namespace tegula::frontend {

// The handlers builtins.cpp's registry names: make_block_ptr, advance,
// make_tensor_descriptor, load_tensor_descriptor and store_tensor_descriptor
// (also desc.load, desc.store), and the descriptor methods desc.atomic_add
// ..., which take the descriptor first.
Symbol lower_make_block_ptr(Lowerer& l, const CallArgs& c, const std::string& name);
Symbol lower_advance(Lowerer& l, const CallArgs& c, const std::string& name);
Symbol lower_make_tensor_descriptor(Lowerer& l, const CallArgs& c, const std::string& name);
Symbol lower_descriptor_load(Lowerer& l, const CallArgs& c, const std::string& name);
Symbol lower_descriptor_store(Lowerer& l, const CallArgs& c, const std::string& name);
Symbol lower_descriptor_atomic(Lowerer& l, const CallArgs& c, const std::string& name);
Symbol lower_descriptor_gather(Lowerer& l, const CallArgs& c, const std::string& name);
Symbol lower_descriptor_scatter(Lowerer& l, const CallArgs& c, const std::string& name);

// A block pointer or a tensor descriptor.
bool is_block_access(const Symbol& s);

// tl.load / tl.store whose `pointer` argument is_block_access; `attrs` are the
// cache and eviction hints already validated by tl.load / tl.store.
Symbol lower_block_load(Lowerer& l, const BoundArgs& a, const SourceLoc& loc, std::vector<ir::NamedAttr> attrs);
Symbol lower_block_store(Lowerer& l, const BoundArgs& a, const SourceLoc& loc, std::vector<ir::NamedAttr> attrs);

// `p.advance`, `desc.load`, `desc.shape` ...
Symbol block_access_attribute(Lowerer& l, const Symbol& base, const std::string& attr, const SourceLoc& loc);
// "a block pointer to 64x32 fp16 blocks" (for Lowerer::describe).
std::string describe_block_access(const Lowerer& l, const Symbol& s);

// A kernel parameter bound to a host TensorDescriptor (ArgSpec::Kind::
// TensorDescriptor): adds its kernel parameters and returns the descriptor.
Symbol bind_descriptor_param(Lowerer& l, const std::string& name, const ArgSpec& spec, const SourceLoc& loc);

}  // namespace tegula::frontend
