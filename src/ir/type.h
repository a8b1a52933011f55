// Types of tile IR values.
//
// A value is a scalar, a pointer to a scalar in memory, or a tile (a dense
// N-d block, N >= 1) of scalars or pointers. Tile dimensions are
// compile-time constants and powers of two (checked by the front end); the
// total element count is bounded by kMaxTileElements.
//
//   i1            bool (stored as one byte in memory)
//   i8..i64       signed integers, two's complement, wrapping arithmetic
//   u8..u64       unsigned integers
//   f16 bf16 f32 f64
//   f8e4m3        fp8 E4M3 "fn" (tl.float8e4nv): bias 7, no infinities, NaN = S.1111.111, max 448
//   f8e5m2        fp8 E5M2 (tl.float8e5): bias 15, IEEE-style infinities and NaNs, max 57344
//   f8e4b15       fp8 E4M3 with bias 15 (tl.float8e4b15): no infinities, no NaN, max 1.875
//                 (conversions saturate at 1.75 and round ties away from zero)
//   f8e4b8        fp8 E4M3 "fnuz" (tl.float8e4b8): bias 8, no infinities, no -0, NaN = 0x80, max 240
//   f8e5b16       fp8 E5M2 "fnuz" (tl.float8e5b16): bias 16, no infinities, no -0, NaN = 0x80, max 57344
//                 All five are storage types: arithmetic converts to f32 and rounds back
//                 (to nearest, saturating; ir/fp8.h, docs/ir.md).
//   ptr<f32>      address of an f32 in global memory
//   tile<64x32xf32>, tile<128xptr<f16>>
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tegula::ir {

// One enumerator per row of scalar_types.def, in its order.
enum class Scalar : uint8_t {
#define SCALAR(name, ...) name,
#include "ir/scalar_types.def"
#undef SCALAR
};

inline constexpr int kNumScalars = 0
#define SCALAR(name, ...) +1
#include "ir/scalar_types.def"
#undef SCALAR
    ;

enum class ScalarKind : uint8_t { Bool, Signed, Unsigned, Float };
// What a float's top exponent holds (scalar_types.def).
enum class FloatSpecials : uint8_t { Ieee, TopNan, None, Fnuz };
// How a conversion to a float rounds a value halfway between two.
enum class FloatTies : uint8_t { Even, Away };

// A row of scalar_types.def (its C++ spellings are backends/c_family's).
struct ScalarInfo {
  const char* name;        // "f32"
  int bits;                // i1 -> 1
  ScalarKind kind;
  int mantissa;            // explicit mantissa bits of a float (ir/float_format.h)
  int bias;                // a float's exponent bias
  FloatSpecials specials;  // Ieee: the top exponent holds inf and NaN (scalar_types.def has the others)
  FloatTies ties;          // Even, or Away (f8e4b15)
  const char* tl_name;     // "float32": tl.float32
  const char* short_name;  // "fp32": Triton's printed and signature name
  int digits;              // significant decimal digits that tell values apart; 0 for integers
};
const ScalarInfo& scalar_info(Scalar s);

constexpr int64_t kMaxTileElements = int64_t{1} << 20;

bool is_float(Scalar s);
bool is_narrow_float(Scalar s);  // f16, bf16, fp8: stored narrower than f32, computed in f32
bool is_fp8(Scalar s);      // f8e4m3, f8e5m2, f8e4b15, f8e4b8 or f8e5b16
bool is_integer(Scalar s);  // includes i1
bool is_signed(Scalar s);   // signed integers (i1 counts as unsigned)
int bit_width(Scalar s);    // i1 -> 1
int byte_size(Scalar s);    // i1 -> 1
const char* to_string(Scalar s);            // "f32"
bool parse_scalar(const std::string& s, Scalar* out);

struct Type {
  Scalar scalar = Scalar::I32;  // element kind; for pointers, the pointee
  bool pointer = false;         // elements are ptr<scalar>
  std::vector<int64_t> shape;   // empty: not a tile

  static Type of(Scalar s) { return Type{s, false, {}}; }
  static Type ptr(Scalar s) { return Type{s, true, {}}; }
  static Type tile(Scalar s, std::vector<int64_t> shape) { return Type{s, false, std::move(shape)}; }

  bool is_tile() const { return !shape.empty(); }
  bool is_pointer() const { return pointer; }     // scalar pointer or tile of pointers
  int rank() const { return static_cast<int>(shape.size()); }
  int64_t numel() const;                          // 1 for non-tiles
  Type element() const { return Type{scalar, pointer, {}}; }
  Type with_shape(std::vector<int64_t> s) const { return Type{scalar, pointer, std::move(s)}; }
  Type with_scalar(Scalar s) const { return Type{s, false, shape}; }  // drops pointer-ness

  bool operator==(const Type& o) const = default;
};

// "i32", "ptr<f16>", "tile<64x32xf32>", "tile<128xptr<f32>>"
std::string to_string(const Type& t);

}  // namespace tegula::ir
