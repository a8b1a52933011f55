// Pointer effects: which pointer parameters' memory a kernel may read, write
// or update atomically, from the pointer provenance analysis
// (pointer_provenance.h). The compiled kernel carries them (the cache
// manifest records them), so the autotuner knows which arrays a launch may
// change without reading IR text, and a launch can refuse a read-only array
// for a parameter the kernel writes.
//
// A load reads what its pointer may point into; a store writes it; an atomic
// reads, writes and updates it atomically. A pointer of unknown provenance
// (made from an integer, read from memory) or with no parameter behind it
// may point anywhere: the access then counts for every pointer parameter.
// Flow-insensitive and conservative, as the provenance is: a parameter may
// be reported written by a store that never runs, never the reverse.
#pragma once

#include <vector>

#include "ir/ir.h"

namespace tegula::passes {

struct PointerEffects {
  bool read = false;
  bool written = false;
  bool atomic = false;

  bool operator==(const PointerEffects&) const = default;
};

// One entry per fn.params; all false for non-pointer parameters.
std::vector<PointerEffects> pointer_effects(const ir::Function& fn);

// A store or atomic through a pointer that may come from a parameter the
// kernel declared read-only (`x_ptr: tl.const`, ir::Param::read_only) is a
// user error at that access, as in Triton; so is one into the bytes of a
// parameter passed by value (a host TMA descriptor: the kernel's copy is
// constant on a device). Run on the lowered function.
void refuse_writes_to_read_only(const ir::Function& fn);

}  // namespace tegula::passes
