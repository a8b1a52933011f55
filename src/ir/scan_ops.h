// The ops of the tile IR that work along one axis of a tile as a sequence, or
// index a tile by data values: `scan`, `sort`, `gather` and `histogram`. Here
// are their verifier rules and the accessors of their attributes, shared by
// the front end, the verifier and both backends.
//
// Semantics (docs/ir.md has the long form):
//  * scan: N tiles of one shape; result i has operand i's type. Along `axis`,
//    element k of the results is the combiner folded over elements 0..k of
//    the operands, in order: r[0] = x[0], r[k] = combine(r[k-1], x[k]).
//    With `reverse` = 1 the sequence runs from the last element down:
//    r[n-1] = x[n-1], r[k] = combine(r[k+1], x[k]). The combiner must be
//    associative (backends regroup it, e.g. as a tree); it need not be
//    commutative: its first argument always covers the elements that come
//    first in the scan's direction.
//  * sort: the elements along `axis` in ascending order (`descending` = 1:
//    descending). Floats sort NaN above +inf (last ascending, first
//    descending); -0.0 and +0.0 are equal, so their relative order is
//    unspecified. Only values are sorted (no stability question arises).
//  * gather: result[i] = src[i with its `axis` coordinate replaced by
//    index[i]]; index has src's rank and src's sizes except along `axis`.
//    An index outside [0, n) (n = src's size along `axis`) reads the element
//    at index mod n (its low bits; n is a power of two): never out of the
//    tile. The front end adds a located check in debug mode.
//  * histogram: result[b] = how many elements of `input` (where `mask` is
//    true) equal b, for b in [0, BINS); other values are not counted.
#pragma once

#include <string>

#include "ir/ir.h"

namespace tegula::ir {

// "" when `op` (a scan, sort, gather or histogram) is well formed, else what
// is wrong, for the verifier to report.
std::string scan_family_problem(const Function& fn, const Op& op);

// Attribute accessors with their defaults (absent means 0).
bool scan_reverse(const Op& scan);
bool sort_descending(const Op& sort);

}  // namespace tegula::ir
