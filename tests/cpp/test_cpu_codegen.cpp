// CPU backend: kernels built by hand with ir::Builder, emitted as C++,
// compiled with the system compiler, loaded and run against references.
#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <random>
#include <thread>

#include <pthread.h>

#include "cpu_test_support.h"
#include "backends/kernel_abi.h"
#include "support/diagnostic.h"

namespace tegula::cpu_test {
namespace {

using backends::cpu::CodegenOptions;

constexpr int64_t kBlock = 64;

// The vector add of docs: out[i] = x[i] + y[i] for i < n, BLOCK = 64.
ir::Function vector_add() {
  KernelBuilder k("add");
  ValueId x = k.param("x", Type::ptr(Scalar::F32), 16);
  ValueId y = k.param("y", Type::ptr(Scalar::F32), 16);
  ValueId out = k.param("out", Type::ptr(Scalar::F32), 16);
  ValueId n = k.param("n", Type::of(Scalar::I32));
  k.at(2, 11);
  ValueId pid = k.op(OpKind::ProgramId, {}, Type::of(Scalar::I32), {{"axis", Attr{int64_t{0}}}});
  ValueId start = k.binary(OpKind::Mul, pid, k.i32(kBlock));
  k.at(3, 23);
  ValueId offs = k.binary(OpKind::Add, k.splat(start, {kBlock}), k.arange(kBlock));
  k.at(4, 12);
  ValueId mask = k.cmp("lt", offs, k.splat(n, {kBlock}));
  k.at(5, 9);
  ValueId xv = k.load(k.pointers(x, offs), mask);
  k.at(6, 9);
  ValueId yv = k.load(k.pointers(y, offs), mask);
  k.at(7, 5);
  k.store(k.pointers(out, offs), k.binary(OpKind::Add, xv, yv), mask);
  k.ret();
  return std::move(k.fn);
}

TEST(CpuCodegen, VectorAddWithMaskedTail) {
  CompiledKernel kernel(vector_add());
  const int n = 1000;  // 16 programs, the last one partly masked
  GuardedBuffer xb(n * 4), yb(n * 4), ob(n * 4);
  auto* x = reinterpret_cast<float*>(xb.data());
  auto* y = reinterpret_cast<float*>(yb.data());
  auto* o = reinterpret_cast<float*>(ob.data());
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> dist(-100, 100);
  for (int i = 0; i < n; ++i) x[i] = dist(rng), y[i] = dist(rng), o[i] = -1;
  Args args;
  args.ptr(x).ptr(y).ptr(o).i32(n);
  kernel.run(args.get(), (n + kBlock - 1) / kBlock);
  for (int i = 0; i < n; ++i) ASSERT_EQ(o[i], x[i] + y[i]) << i;
}

TEST(CpuCodegen, EntryRunsOnlyItsIdRangeAndIsThreadSafe) {
  CompiledKernel kernel(vector_add());
  const int n = 64 * 64;
  std::vector<float> x(n, 1.0f), y(n), o(n, 0.0f);
  for (int i = 0; i < n; ++i) y[i] = static_cast<float>(i);
  Args args;
  args.ptr(x.data()).ptr(y.data()).ptr(o.data()).i32(n);
  const int32_t grid[3] = {64, 1, 1};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] { kernel.run_range(args.get(), grid, t * 8, t * 8 + 8); });
  for (std::thread& t : threads) t.join();
  for (int i = 0; i < n; ++i) ASSERT_EQ(o[i], i < 32 * 64 ? 1.0f + i : 0.0f) << i;
}

// --- elementwise ops over every dtype -------------------------------------------------

constexpr Scalar kAllScalars[] = {Scalar::I1,  Scalar::I8,  Scalar::I16, Scalar::I32, Scalar::I64,
                                  Scalar::U8,  Scalar::U16, Scalar::U32, Scalar::U64, Scalar::F16,
                                  Scalar::BF16, Scalar::F32, Scalar::F64};
constexpr int kValid = 61;  // of kBlock: the tail is masked off

int element_size(Scalar s) { return ir::byte_size(s); }

// Raw integer bits of an element, zero-extended.
uint64_t int_bits(Scalar s, const void* p) {
  uint64_t v = 0;
  std::memcpy(&v, p, static_cast<size_t>(element_size(s)));
  return v;
}
uint64_t width_mask(Scalar s) {
  int w = ir::bit_width(s);
  return w == 64 ? ~uint64_t{0} : (uint64_t{1} << w) - 1;
}
// Sign-extended value of integer bits.
int64_t signed_value(Scalar s, uint64_t bits) {
  int w = ir::bit_width(s);
  if (!ir::is_signed(s) || w == 64) return static_cast<int64_t>(bits);
  uint64_t sign = uint64_t{1} << (w - 1);
  return static_cast<int64_t>((bits ^ sign) - sign);
}

// Random test values: edge cases first, then random ones, written in the
// storage format of `s`.
std::vector<unsigned char> random_values(Scalar s, std::mt19937_64& rng, int count, bool small_ints = false) {
  std::vector<unsigned char> out(static_cast<size_t>(count * element_size(s)));
  int w = ir::bit_width(s);
  for (int i = 0; i < count; ++i) {
    void* p = out.data() + i * element_size(s);
    if (ir::is_integer(s)) {
      uint64_t bits;
      uint64_t mask = width_mask(s);
      static const int64_t kEdges[] = {0, 1, -1, 2, -2, 7};
      if (i < 6) {
        bits = static_cast<uint64_t>(kEdges[i]) & mask;
      } else if (i < 10) {
        uint64_t top = w == 1 ? 1 : uint64_t{1} << (w - 1);
        uint64_t picks[] = {top, top - 1, top + 1, mask};  // MIN, MAX, MIN+1, all ones
        bits = picks[i - 6] & mask;
      } else if (small_ints && i % 2 == 0) {
        bits = static_cast<uint64_t>(static_cast<int64_t>(rng() % static_cast<uint64_t>(w + 5)) - 2) & mask;
      } else {
        bits = (rng() >> (rng() % 64)) & mask;
        if (rng() % 2 && ir::is_signed(s)) bits = (0 - bits) & mask;
      }
      std::memcpy(p, &bits, static_cast<size_t>(element_size(s)));
    } else {
      static const long double kSpecials[] = {0.0L, -0.0L, 1.0L, -1.5L, INFINITY, -INFINITY, NAN, 0.5L, 1e-7L, -3e4L};
      long double v;
      if (i < 10) {
        v = kSpecials[i];
      } else {
        std::uniform_real_distribution<double> dist(-8, 8);
        v = dist(rng);
        if (i % 5 == 0) v = std::ldexp(v, static_cast<int>(rng() % 20) - 10);
      }
      encode_float(s, round_to(v, s), p);
    }
  }
  return out;
}

struct EwCase {
  OpKind kind;
  int arity;
  bool on_float, on_int;
  int ulps;              // 0: the result must be exact
  bool signed_zero_free;  // min/max may return either zero
};

const EwCase kEwCases[] = {
    {OpKind::Add, 2, true, true, 0, false},    {OpKind::Sub, 2, true, true, 0, false},
    {OpKind::Mul, 2, true, true, 0, false},    {OpKind::Div, 2, true, true, 0, false},
    {OpKind::Rem, 2, true, true, 0, false},    {OpKind::And, 2, false, true, 0, false},
    {OpKind::Or, 2, false, true, 0, false},    {OpKind::Xor, 2, false, true, 0, false},
    {OpKind::Shl, 2, false, true, 0, false},   {OpKind::Shr, 2, false, true, 0, false},
    {OpKind::Min, 2, true, true, 0, true},     {OpKind::Max, 2, true, true, 0, true},
    {OpKind::UMulHi, 2, false, true, 0, false}, {OpKind::Pow, 2, true, true, 2, false},
    {OpKind::Fma, 3, true, true, 1, false},    {OpKind::Neg, 1, true, true, 0, false},
    {OpKind::Not, 1, false, true, 0, false},   {OpKind::Abs, 1, true, true, 0, false},
    {OpKind::Exp, 1, true, false, 2, false},   {OpKind::Exp2, 1, true, false, 2, false},
    {OpKind::Log, 1, true, false, 2, false},   {OpKind::Log2, 1, true, false, 2, false},
    {OpKind::Sqrt, 1, true, false, 0, false},  {OpKind::Rsqrt, 1, true, false, 2, false},
    {OpKind::Sin, 1, true, false, 2, false},   {OpKind::Cos, 1, true, false, 2, false},
    {OpKind::Tanh, 1, true, false, 2, false},  {OpKind::Erf, 1, true, false, 2, false},
    {OpKind::Floor, 1, true, false, 0, false}, {OpKind::Ceil, 1, true, false, 0, false},
};

// Integer semantics as docs/backend-cpu.md defines them, on zero-extended bits.
uint64_t int_reference(OpKind kind, Scalar s, uint64_t a, uint64_t b, uint64_t c) {
  int w = ir::bit_width(s);
  bool sgn = ir::is_signed(s);
  uint64_t mask = width_mask(s);
  int64_t sa = signed_value(s, a), sb = signed_value(s, b);
  uint64_t min_bits = sgn ? (uint64_t{1} << (w - 1)) : 0;
  auto lt = [&](uint64_t x, uint64_t y) { return sgn ? signed_value(s, x) < signed_value(s, y) : x < y; };
  uint64_t r = 0;
  switch (kind) {
    case OpKind::Add: r = a + b; break;
    case OpKind::Sub: r = a - b; break;
    case OpKind::Mul: r = a * b; break;
    case OpKind::Div:
      if (b == 0) r = 0;
      else if (sgn && sb == -1) r = 0 - a;
      else r = sgn ? static_cast<uint64_t>(sa / sb) : a / b;
      break;
    case OpKind::Rem:
      if (b == 0) r = a;
      else if (sgn && sb == -1) r = 0;
      else r = sgn ? static_cast<uint64_t>(sa % sb) : a % b;
      break;
    case OpKind::And: r = a & b; break;
    case OpKind::Or: r = a | b; break;
    case OpKind::Xor: r = a ^ b; break;
    case OpKind::Shl: r = b >= static_cast<uint64_t>(w) ? 0 : a << b; break;
    case OpKind::Shr:
      if (b >= static_cast<uint64_t>(w)) r = sgn && sa < 0 ? mask : 0;
      else r = sgn ? static_cast<uint64_t>(sa >> b) : a >> b;
      break;
    case OpKind::Min: r = lt(a, b) ? a : b; break;
    case OpKind::Max: r = lt(a, b) ? b : a; break;
    case OpKind::UMulHi: r = static_cast<uint64_t>((static_cast<unsigned __int128>(a) * b) >> w); break;
    case OpKind::Pow: {
      if (sgn && sb < 0) {
        r = sa == 1 ? 1 : sa == -1 ? ((sb & 1) ? mask : 1) : 0;
        break;
      }
      r = 1;
      for (uint64_t e = b, base = a; e != 0; e >>= 1, base = (base * base) & mask)
        if (e & 1) r = (r * base) & mask;
      break;
    }
    case OpKind::Fma: r = a * b + c; break;
    case OpKind::Neg: r = 0 - a; break;
    case OpKind::Not: r = ~a; break;
    case OpKind::Abs: r = sgn && sa < 0 ? 0 - a : a; break;
    default: ADD_FAILURE() << "no integer reference for " << ir::name(kind);
  }
  (void)min_bits;
  return r & mask;
}

long double float_reference(OpKind kind, Scalar s, long double a, long double b, long double c) {
  if (s == Scalar::F64) {
    // Exact ops in double itself (long double would round twice).
    double x = static_cast<double>(a), y = static_cast<double>(b);
    switch (kind) {
      case OpKind::Add: return x + y;
      case OpKind::Sub: return x - y;
      case OpKind::Mul: return x * y;
      case OpKind::Div: return x / y;
      case OpKind::Sqrt: return std::sqrt(x);
      case OpKind::Fma: return std::fma(x, y, static_cast<double>(c));
      default: break;
    }
  }
  long double r = 0;
  switch (kind) {
    case OpKind::Add: r = a + b; break;
    case OpKind::Sub: r = a - b; break;
    case OpKind::Mul: r = a * b; break;
    case OpKind::Div: r = a / b; break;
    case OpKind::Rem: r = std::fmod(a, b); break;
    case OpKind::Min: r = std::fmin(a, b); break;
    case OpKind::Max: r = std::fmax(a, b); break;
    case OpKind::Pow: r = std::pow(a, b); break;
    case OpKind::Fma: r = std::fma(a, b, c); break;
    case OpKind::Neg: r = -a; break;
    case OpKind::Abs: r = std::fabs(a); break;
    case OpKind::Exp: r = std::exp(a); break;
    case OpKind::Exp2: r = std::exp2(a); break;
    case OpKind::Log: r = std::log(a); break;
    case OpKind::Log2: r = std::log2(a); break;
    case OpKind::Sqrt: r = std::sqrt(a); break;
    case OpKind::Rsqrt: r = 1 / std::sqrt(a); break;
    case OpKind::Sin: r = std::sin(a); break;
    case OpKind::Cos: r = std::cos(a); break;
    case OpKind::Tanh: r = std::tanh(a); break;
    case OpKind::Erf: r = std::erf(a); break;
    case OpKind::Floor: r = std::floor(a); break;
    case OpKind::Ceil: r = std::ceil(a); break;
    default: ADD_FAILURE() << "no float reference for " << ir::name(kind);
  }
  return round_to(r, s);
}

// Whether `got` matches `want` in format s: NaN matches NaN; exact results
// match bit for bit (zero signs included), others within `ulps`.
bool float_matches(long double got, long double want, Scalar s, int ulps, bool any_zero_sign) {
  if (std::isnan(want) || std::isnan(got)) return std::isnan(want) && std::isnan(got);
  if (ulps == 0 || std::isinf(want) || std::isinf(got))
    return got == want && (any_zero_sign || std::signbit(got) == std::signbit(want));
  return std::fabs(got - want) <= ulps * ulp_of(want, format_of(s));
}

class ElementwiseTest : public ::testing::TestWithParam<Scalar> {};

TEST_P(ElementwiseTest, EveryOpMatchesReference) {
  Scalar s = GetParam();
  bool is_float = ir::is_float(s);
  KernelBuilder k(std::string("ew_") + ir::to_string(s));
  ValueId a = k.param("a", Type::ptr(s)), b = k.param("b", Type::ptr(s)), c = k.param("c", Type::ptr(s));
  ValueId out = k.param("out", Type::ptr(s)), outb = k.param("outb", Type::ptr(Scalar::I1));
  ValueId n = k.param("n", Type::of(Scalar::I32));
  ValueId offs = k.arange(kBlock);
  ValueId mask = k.cmp("lt", offs, k.splat(n, {kBlock}));
  ValueId x = k.load(k.pointers(a, offs), mask), y = k.load(k.pointers(b, offs), mask),
          z = k.load(k.pointers(c, offs), mask);
  auto slot = [&](ValueId base, int index) {
    return k.pointers(base, k.binary(OpKind::Add, k.splat(k.i32(index * kBlock), {kBlock}), offs));
  };
  std::vector<const EwCase*> cases;
  for (const EwCase& e : kEwCases) {
    if (is_float ? !e.on_float : !e.on_int) continue;
    std::vector<ValueId> operands = {x, y, z};
    operands.resize(static_cast<size_t>(e.arity));
    k.store(slot(out, static_cast<int>(cases.size())), k.op(e.kind, operands, k.type(x)), mask);
    cases.push_back(&e);
  }
  const char* preds[] = {"eq", "ne", "lt", "le", "gt", "ge"};
  for (int p = 0; p < 6; ++p) k.store(slot(outb, p), k.cmp(preds[p], x, y), mask);
  int select_slot = static_cast<int>(cases.size());
  k.store(slot(out, select_slot), k.op(OpKind::Select, {k.cmp("lt", x, y), x, z}, k.type(x)), mask);
  k.ret();
  CompiledKernel kernel(k.fn);

  std::mt19937_64 rng(static_cast<uint64_t>(s) + 11);
  int es = element_size(s);
  std::vector<unsigned char> av = random_values(s, rng, kValid), bv = random_values(s, rng, kValid, true),
                             cv = random_values(s, rng, kValid);
  std::shuffle(bv.begin() + 10 * es, bv.end(), rng);  // not only edge against edge
  GuardedBuffer ab(av.size()), bb(bv.size()), cb(cv.size());
  std::memcpy(ab.data(), av.data(), av.size());
  std::memcpy(bb.data(), bv.data(), bv.size());
  std::memcpy(cb.data(), cv.data(), cv.size());
  std::vector<unsigned char> outv(static_cast<size_t>((select_slot + 1) * kBlock * es), 0xCD);
  std::vector<unsigned char> outbv(static_cast<size_t>(6 * kBlock), 0xCD);
  Args args;
  args.ptr(ab.data()).ptr(bb.data()).ptr(cb.data()).ptr(outv.data()).ptr(outbv.data()).i32(kValid);
  kernel.run(args.get());

  auto in = [&](const std::vector<unsigned char>& v, int i) { return v.data() + i * es; };
  auto result = [&](int slot_index, int i) { return outv.data() + (slot_index * kBlock + i) * es; };
  for (size_t ci = 0; ci < cases.size(); ++ci) {
    const EwCase& e = *cases[ci];
    for (int i = 0; i < kValid; ++i) {
      if (is_float) {
        long double want = float_reference(e.kind, s, decode(s, in(av, i)), decode(s, in(bv, i)), decode(s, in(cv, i)));
        long double got = decode(s, result(static_cast<int>(ci), i));
        ASSERT_TRUE(float_matches(got, want, s, e.ulps, e.signed_zero_free))
            << ir::name(e.kind) << " " << ir::to_string(s) << " element " << i << ": " << (double)decode(s, in(av, i))
            << ", " << (double)decode(s, in(bv, i)) << " gave " << (double)got << ", want " << (double)want;
      } else {
        uint64_t want = int_reference(e.kind, s, int_bits(s, in(av, i)), int_bits(s, in(bv, i)), int_bits(s, in(cv, i)));
        uint64_t got = int_bits(s, result(static_cast<int>(ci), i));
        ASSERT_EQ(got, want) << ir::name(e.kind) << " " << ir::to_string(s) << " element " << i << ": "
                             << int_bits(s, in(av, i)) << ", " << int_bits(s, in(bv, i));
      }
    }
    for (int i = kValid; i < kBlock; ++i)
      for (int byte = 0; byte < es; ++byte) ASSERT_EQ(result(static_cast<int>(ci), i)[byte], 0xCD) << "masked store wrote";
  }
  for (int p = 0; p < 6; ++p) {
    for (int i = 0; i < kValid; ++i) {
      long double x0, y0;
      if (is_float) {
        x0 = decode(s, in(av, i)), y0 = decode(s, in(bv, i));
      } else {
        // Compare as the type's own values (long double holds every 64-bit integer).
        uint64_t xa = int_bits(s, in(av, i)), yb = int_bits(s, in(bv, i));
        x0 = ir::is_signed(s) ? (long double)signed_value(s, xa) : (long double)xa;
        y0 = ir::is_signed(s) ? (long double)signed_value(s, yb) : (long double)yb;
      }
      bool want = p == 0 ? x0 == y0 : p == 1 ? x0 != y0 : p == 2 ? x0 < y0 : p == 3 ? x0 <= y0 : p == 4 ? x0 > y0 : x0 >= y0;
      ASSERT_EQ(outbv[static_cast<size_t>(p * kBlock + i)], want ? 1 : 0) << preds[p] << " element " << i;
    }
  }
  for (int i = 0; i < kValid; ++i) {
    long double x0 = decode(s, in(av, i)), y0 = decode(s, in(bv, i));
    if (!is_float) {
      uint64_t xa = int_bits(s, in(av, i)), yb = int_bits(s, in(bv, i));
      x0 = ir::is_signed(s) ? (long double)signed_value(s, xa) : (long double)xa;
      y0 = ir::is_signed(s) ? (long double)signed_value(s, yb) : (long double)yb;
    }
    const unsigned char* want = x0 < y0 ? in(av, i) : in(cv, i);
    ASSERT_EQ(std::memcmp(result(select_slot, i), want, static_cast<size_t>(es)), 0) << "select element " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(AllDtypes, ElementwiseTest, ::testing::ValuesIn(kAllScalars),
                         [](const ::testing::TestParamInfo<Scalar>& info) { return std::string(ir::to_string(info.param)); });

// --- casts ----------------------------------------------------------------------------------

// The conversion docs/backend-cpu.md defines, from the exact source value.
void cast_reference(Scalar from, Scalar to, const void* src, void* dst) {
  long double v;
  if (ir::is_integer(from)) {
    uint64_t bits = int_bits(from, src);
    v = ir::is_signed(from) ? (long double)signed_value(from, bits) : (long double)bits;
  } else {
    v = decode(from, src);
  }
  if (to == Scalar::I1) {
    *static_cast<uint8_t*>(dst) = v != 0 || std::isnan(v) ? 1 : 0;
    return;
  }
  if (ir::is_integer(to)) {
    uint64_t out;
    if (ir::is_integer(from)) {
      out = int_bits(from, src);
      if (ir::is_signed(from)) out = static_cast<uint64_t>(signed_value(from, out));
    } else if (std::isnan(v)) {
      out = 0;
    } else {
      int w = ir::bit_width(to);
      long double lo = ir::is_signed(to) ? -std::ldexp(1.0L, w - 1) : 0;
      long double hi = ir::is_signed(to) ? std::ldexp(1.0L, w - 1) - 1 : std::ldexp(1.0L, w) - 1;
      long double t = std::trunc(v);
      t = std::max(lo, std::min(hi, t));
      out = t < 0 ? static_cast<uint64_t>(static_cast<int64_t>(t)) : static_cast<uint64_t>(t);
    }
    out &= width_mask(to);
    std::memcpy(dst, &out, static_cast<size_t>(element_size(to)));
    return;
  }
  encode_float(to, round_to(v, to), dst);
}

std::vector<unsigned char> cast_inputs(Scalar s, std::mt19937_64& rng) {
  std::vector<unsigned char> out = random_values(s, rng, kValid);
  int es = element_size(s);
  if (ir::is_float(s)) {
    // Rounding ties and overflow edges of the narrow formats, ints' ranges.
    const long double kEdges[] = {1 + std::ldexp(1.0L, -11), 1 + 3 * std::ldexp(1.0L, -11), 2049, 65519, 65520,
                                  65536, 1 + std::ldexp(1.0L, -8), 1 + 3 * std::ldexp(1.0L, -8), 2.5L, -2.5L,
                                  3e9L, -3e9L, 1e19L, -1e19L, 3e-8L, 6e-8L, 1e-40L, 300, -129, 1e300L};
    for (size_t i = 0; i < std::size(kEdges); ++i)
      encode_float(s, round_to(kEdges[i], s), out.data() + (10 + i) * static_cast<size_t>(es));
  } else if (ir::bit_width(s) == 64) {
    const uint64_t kEdges[] = {(uint64_t{1} << 60) + (uint64_t{1} << 52) + 1, (uint64_t{1} << 24) + 1, 65520, 65519,
                               2049, (uint64_t{1} << 40) + (uint64_t{1} << 32) + 5};
    for (size_t i = 0; i < std::size(kEdges); ++i)
      std::memcpy(out.data() + (10 + i) * static_cast<size_t>(es), &kEdges[i], 8);
  }
  return out;
}

TEST(CpuCodegen, CastsBetweenEveryPairOfDtypes) {
  KernelBuilder k("casts");
  std::vector<ValueId> ins, outs;
  for (Scalar s : kAllScalars) ins.push_back(k.param(std::string("in_") + ir::to_string(s), Type::ptr(s)));
  for (Scalar s : kAllScalars) outs.push_back(k.param(std::string("out_") + ir::to_string(s), Type::ptr(s)));
  ValueId n = k.param("n", Type::of(Scalar::I32));
  ValueId offs = k.arange(kBlock);
  ValueId mask = k.cmp("lt", offs, k.splat(n, {kBlock}));
  size_t count = std::size(kAllScalars);
  for (size_t from = 0; from < count; ++from) {
    ValueId v = k.load(k.pointers(ins[from], offs), mask);
    for (size_t to = 0; to < count; ++to) {
      ValueId dst = k.binary(OpKind::Add, k.splat(k.i32(static_cast<int64_t>(from) * kBlock), {kBlock}), offs);
      k.store(k.pointers(outs[to], dst), k.cast(v, kAllScalars[to]), mask);
    }
  }
  k.ret();
  CompiledKernel kernel(k.fn);

  std::mt19937_64 rng(5);
  std::vector<std::vector<unsigned char>> inputs, outputs;
  Args args;
  for (Scalar s : kAllScalars) inputs.push_back(cast_inputs(s, rng));
  for (Scalar s : kAllScalars) outputs.emplace_back(count * kBlock * static_cast<size_t>(element_size(s)), 0);
  for (auto& v : inputs) args.ptr(v.data());
  for (auto& v : outputs) args.ptr(v.data());
  args.i32(kValid);
  kernel.run(args.get());

  for (size_t from = 0; from < count; ++from) {
    Scalar fs = kAllScalars[from];
    for (size_t to = 0; to < count; ++to) {
      Scalar ts = kAllScalars[to];
      for (int i = 0; i < kValid; ++i) {
        const unsigned char* src = inputs[from].data() + i * element_size(fs);
        const unsigned char* got = outputs[to].data() + (static_cast<int>(from) * kBlock + i) * element_size(ts);
        unsigned char want[8] = {};
        cast_reference(fs, ts, src, want);
        bool same = std::memcmp(got, want, static_cast<size_t>(element_size(ts))) == 0;
        if (!same && ir::is_float(ts)) same = std::isnan(decode(ts, got)) && std::isnan(decode(ts, want));
        ASSERT_TRUE(same) << ir::to_string(fs) << " -> " << ir::to_string(ts) << " element " << i << ": "
                          << (double)decode(fs, src) << " gave " << (double)decode(ts, got) << ", want "
                          << (double)decode(ts, want);
      }
    }
  }
}

// --- shapes ----------------------------------------------------------------------------------

// Row-major offsets of a [rows, cols] tile: expand_dims + broadcast + add.
ValueId offsets_2d(KernelBuilder& k, int64_t rows, int64_t cols) {
  ValueId r = k.op(OpKind::ExpandDims, {k.arange(rows)}, Type::tile(Scalar::I32, {rows, 1}), {{"axis", Attr{int64_t{1}}}});
  ValueId c = k.op(OpKind::ExpandDims, {k.arange(cols)}, Type::tile(Scalar::I32, {1, cols}), {{"axis", Attr{int64_t{0}}}});
  ValueId rb = k.op(OpKind::Broadcast, {k.binary(OpKind::Mul, r, k.op(OpKind::Splat, {k.i32(cols)}, Type::tile(Scalar::I32, {rows, 1})))},
                    Type::tile(Scalar::I32, {rows, cols}));
  ValueId cb = k.op(OpKind::Broadcast, {c}, Type::tile(Scalar::I32, {rows, cols}));
  return k.binary(OpKind::Add, rb, cb);
}

TEST(CpuCodegen, BroadcastTransReshapeJoinSplit) {
  const int64_t M = 8, N = 16;
  KernelBuilder k("shapes");
  ValueId xp = k.param("x", Type::ptr(Scalar::F32)), yp = k.param("y", Type::ptr(Scalar::F32));
  ValueId outer = k.param("outer", Type::ptr(Scalar::F32)), transposed = k.param("transposed", Type::ptr(Scalar::F32));
  ValueId flat = k.param("flat", Type::ptr(Scalar::F32)), joined = k.param("joined", Type::ptr(Scalar::F32));
  ValueId halves = k.param("halves", Type::ptr(Scalar::F32));
  ValueId x = k.load(k.pointers(xp, k.arange(M)));
  ValueId y = k.load(k.pointers(yp, k.arange(N)));
  // outer[m, n] = x[m] * y[n]
  ValueId xe = k.op(OpKind::ExpandDims, {x}, Type::tile(Scalar::F32, {M, 1}), {{"axis", Attr{int64_t{1}}}});
  ValueId ye = k.op(OpKind::ExpandDims, {y}, Type::tile(Scalar::F32, {1, N}), {{"axis", Attr{int64_t{0}}}});
  Type mn = Type::tile(Scalar::F32, {M, N});
  ValueId prod = k.binary(OpKind::Mul, k.op(OpKind::Broadcast, {xe}, mn), k.op(OpKind::Broadcast, {ye}, mn));
  k.store(k.pointers(outer, offsets_2d(k, M, N)), prod);
  ValueId t = k.op(OpKind::Trans, {prod}, Type::tile(Scalar::F32, {N, M}), {{"perm", Attr{std::vector<int64_t>{1, 0}}}});
  k.store(k.pointers(transposed, offsets_2d(k, N, M)), t);
  ValueId r = k.op(OpKind::Reshape, {t}, Type::tile(Scalar::F32, {M * N}));
  k.store(k.pointers(flat, k.arange(M * N)), r);
  // join(x, -x) -> [M, 2]; split it back and store the halves swapped.
  ValueId j = k.op(OpKind::Join, {x, k.unary(OpKind::Neg, x)}, Type::tile(Scalar::F32, {M, 2}));
  k.store(k.pointers(joined, offsets_2d(k, M, 2)), j);
  ir::OpId split = k.b.create(OpKind::Split, {j}, {Type::tile(Scalar::F32, {M}), Type::tile(Scalar::F32, {M})});
  ValueId lo = k.fn.op(split).results[0], hi = k.fn.op(split).results[1];
  k.store(k.pointers(halves, k.arange(M)), hi);
  k.store(k.pointers(halves, k.binary(OpKind::Add, k.arange(M), k.splat(k.i32(M), {M}))), lo);
  k.ret();
  CompiledKernel kernel(k.fn);
  // Row-contiguous pointers (axis info) take the row-base fast path.
  EXPECT_NE(kernel.source.find("for (int r = 0; r < 8; ++r)"), std::string::npos);

  std::vector<float> xs(M), ys(N), o(M * N), tr(M * N), fl(M * N), jo(2 * M), ha(2 * M);
  for (int i = 0; i < M; ++i) xs[i] = 1.5f * i - 3;
  for (int i = 0; i < N; ++i) ys[i] = 0.25f * i + 1;
  Args args;
  args.ptr(xs.data()).ptr(ys.data()).ptr(o.data()).ptr(tr.data()).ptr(fl.data()).ptr(jo.data()).ptr(ha.data());
  kernel.run(args.get());
  for (int m = 0; m < M; ++m) {
    for (int n = 0; n < N; ++n) {
      ASSERT_EQ(o[m * N + n], xs[m] * ys[n]);
      ASSERT_EQ(tr[n * M + m], xs[m] * ys[n]);
      ASSERT_EQ(fl[n * M + m], xs[m] * ys[n]);
    }
    ASSERT_EQ(jo[2 * m], xs[m]);
    ASSERT_EQ(jo[2 * m + 1], -xs[m]);
    ASSERT_EQ(ha[m], -xs[m]);
    ASSERT_EQ(ha[M + m], xs[m]);
  }
}

// --- reduce -------------------------------------------------------------------------------------

// reduce(operands..., axis) with a combiner built by `combine(args) -> yields`.
template <class Combine>
std::vector<ValueId> reduce(KernelBuilder& k, std::vector<ValueId> operands, int64_t axis, Combine combine) {
  std::vector<Type> result_types;
  for (ValueId v : operands) {
    Type t = k.type(v);
    std::vector<int64_t> shape = t.shape;
    shape.erase(shape.begin() + axis);
    result_types.push_back(t.with_shape(shape));
  }
  ir::BlockId outer = k.b.insertion_block();
  ir::OpId op = k.b.create(OpKind::Reduce, operands, result_types, {{"axis", Attr{axis}}});
  ir::BlockId region = k.region(op);
  std::vector<ValueId> args;
  for (int twice = 0; twice < 2; ++twice)
    for (ValueId v : operands) args.push_back(k.fn.add_block_arg(region, k.type(v).element()));
  k.yield(combine(args));
  k.resume(outer);
  return k.fn.op(op).results;
}

ValueId sum_of(KernelBuilder& k, ValueId v, int64_t axis) {
  return reduce(k, {v}, axis, [&](const std::vector<ValueId>& a) {
    return std::vector<ValueId>{k.binary(OpKind::Add, a[0], a[1])};
  })[0];
}

TEST(CpuCodegen, ReduceOverEachAxis) {
  KernelBuilder k("reduce");
  ValueId in = k.param("in", Type::ptr(Scalar::F32)), out = k.param("out", Type::ptr(Scalar::F32));
  ValueId iin = k.param("iin", Type::ptr(Scalar::I32)), iout = k.param("iout", Type::ptr(Scalar::I32));
  ValueId hin = k.param("hin", Type::ptr(Scalar::F16)), hout = k.param("hout", Type::ptr(Scalar::F16));
  const int64_t R = 8, C = 16;
  ValueId offs = offsets_2d(k, R, C);
  ValueId x = k.load(k.pointers(in, offs));
  auto at = [&](ValueId base, int64_t offset, int64_t n) {
    return k.pointers(base, k.binary(OpKind::Add, k.splat(k.i32(offset), {n}), k.arange(n)));
  };
  k.store(at(out, 0, C), sum_of(k, x, 0));   // [C]
  k.store(at(out, C, R), sum_of(k, x, 1));   // [R]
  // 3-D [4, 8, 4] over the middle axis -> [4, 4], via reshape.
  ValueId x3 = k.op(OpKind::Reshape, {x}, Type::tile(Scalar::F32, {4, 8, 4}));
  ValueId s3 = k.op(OpKind::Reshape, {sum_of(k, x3, 1)}, Type::tile(Scalar::F32, {16}));
  k.store(at(out, C + R, 16), s3);
  // 1-D -> scalar, stored through a scalar pointer.
  ValueId flat = k.op(OpKind::Reshape, {x}, Type::tile(Scalar::F32, {R * C}));
  ValueId total = sum_of(k, flat, 0);
  k.store(k.op(OpKind::AddPtr, {out, k.i32(C + R + 16)}, Type::ptr(Scalar::F32)), total);
  // argmax: (value, index) pairs, ties to the lower index.
  ValueId idx = k.arange(R * C);
  std::vector<ValueId> am = reduce(k, {flat, idx}, 0, [&](const std::vector<ValueId>& a) {
    ValueId gt = k.cmp("gt", a[0], a[2]);
    ValueId eq = k.cmp("eq", a[0], a[2]);
    ValueId lower = k.cmp("lt", a[1], a[3]);
    ValueId take_left = k.binary(OpKind::Or, gt, k.binary(OpKind::And, eq, lower));
    return std::vector<ValueId>{k.op(OpKind::Select, {take_left, a[0], a[2]}, k.type(a[0])),
                                k.op(OpKind::Select, {take_left, a[1], a[3]}, k.type(a[1]))};
  });
  k.store(k.op(OpKind::AddPtr, {out, k.i32(C + R + 17)}, Type::ptr(Scalar::F32)), am[0]);
  k.store(k.op(OpKind::AddPtr, {iout, k.i32(R + C)}, Type::ptr(Scalar::I32)), am[1]);
  // Integer sums wrap.
  ValueId xi = k.load(k.pointers(iin, offs));
  k.store(at(iout, 0, C), sum_of(k, xi, 0));
  k.store(at(iout, C, R), sum_of(k, xi, 1));
  // f16 max along rows, with the NaN-ignoring float max.
  ValueId xh = k.load(k.pointers(hin, offs));
  ValueId mh = reduce(k, {xh}, 1, [&](const std::vector<ValueId>& a) {
    return std::vector<ValueId>{k.binary(OpKind::Max, a[0], a[1])};
  })[0];
  k.store(at(hout, 0, R), mh);
  k.ret();
  CompiledKernel kernel(k.fn);

  std::mt19937_64 rng(3);
  std::uniform_real_distribution<float> dist(-1, 1);
  std::vector<float> xs(R * C), o(C + R + 18);
  std::vector<int32_t> is(R * C), io(R + C + 1);
  std::vector<uint16_t> hs(R * C), ho(R);
  for (int i = 0; i < R * C; ++i) {
    xs[i] = dist(rng);
    is[i] = static_cast<int32_t>(rng());
    encode_float(Scalar::F16, round_to(dist(rng) * 100, Scalar::F16), &hs[i]);
  }
  xs[77] = 5.0f, xs[99] = 5.0f;  // the argmax tie
  encode_float(Scalar::F16, NAN, &hs[3]);
  Args args;
  args.ptr(xs.data()).ptr(o.data()).ptr(is.data()).ptr(io.data()).ptr(hs.data()).ptr(ho.data());
  kernel.run(args.get());

  auto near = [](double got, double want) { return std::fabs(got - want) <= 1e-5 * (1 + std::fabs(want)); };
  for (int c = 0; c < C; ++c) {
    double want = 0;
    uint32_t iwant = 0;
    for (int r = 0; r < R; ++r) want += xs[r * C + c], iwant += static_cast<uint32_t>(is[r * C + c]);
    ASSERT_TRUE(near(o[c], want)) << "axis 0, column " << c;
    ASSERT_EQ(static_cast<uint32_t>(io[c]), iwant);
  }
  for (int r = 0; r < R; ++r) {
    double want = 0;
    uint32_t iwant = 0;
    long double hmax = -INFINITY;
    for (int c = 0; c < C; ++c) {
      want += xs[r * C + c], iwant += static_cast<uint32_t>(is[r * C + c]);
      long double h = decode(Scalar::F16, &hs[r * C + c]);
      if (!std::isnan(h)) hmax = std::max(hmax, h);
    }
    ASSERT_TRUE(near(o[C + r], want)) << "axis 1, row " << r;
    ASSERT_EQ(static_cast<uint32_t>(io[C + r]), iwant);
    ASSERT_EQ(decode(Scalar::F16, &ho[r]), hmax) << "f16 max, row " << r;
  }
  for (int a = 0; a < 4; ++a) {
    for (int c = 0; c < 4; ++c) {
      double want = 0;
      for (int m = 0; m < 8; ++m) want += xs[a * 32 + m * 4 + c];
      ASSERT_TRUE(near(o[C + R + a * 4 + c], want)) << "3-D, " << a << "," << c;
    }
  }
  double everything = 0;
  for (float v : xs) everything += v;
  EXPECT_TRUE(near(o[C + R + 16], everything));
  EXPECT_EQ(o[C + R + 17], 5.0f);
  EXPECT_EQ(io[R + C], 77);
}

// x rounded toward zero in the float format s (scaling by a power of two is
// exact, trunc drops the fraction); finite values saturate at the largest
// finite value.
long double truncate_to(long double x, Scalar s) {
  if (std::isnan(x) || std::isinf(x) || x == 0) return x;
  FloatFormat f = format_of(s);
  long double ulp = ulp_of(x, f);
  long double r = std::trunc(x / ulp) * ulp;
  long double max_finite = std::ldexp(2.0L - std::ldexp(1.0L, 1 - f.mantissa_bits), f.max_exponent);
  return std::fabs(r) > max_finite ? std::copysign(max_finite, x) : r;
}

// cast with rounding = "rtz" (tl.cast(..., fp_downcast_rounding="rtz")):
// f32 -> f16/bf16 and f64 -> f32/f16/bf16 truncate toward zero.
TEST(CpuCodegen, CastsRoundingTowardZero) {
  const std::pair<Scalar, Scalar> kCasts[] = {{Scalar::F32, Scalar::F16}, {Scalar::F32, Scalar::BF16},
                                              {Scalar::F64, Scalar::F32}, {Scalar::F64, Scalar::F16},
                                              {Scalar::F64, Scalar::BF16}};
  const long double kValues[] = {1 + 0.75L * std::ldexp(1.0L, -10), -(1 + 0.75L * std::ldexp(1.0L, -10)),
                                 1 + 0.75L * std::ldexp(1.0L, -7), 70000, -70000, 65519.9L, 65536, 3,
                                 1e-6L, -3e-7L, 1e-40L, 1e39L, -1e300L, INFINITY, -INFINITY, NAN,
                                 1 + std::ldexp(1.0L, -30), 0.1L, -0.0L, 2.5L};
  const int n = static_cast<int>(std::size(kValues));
  KernelBuilder k("rtz");
  std::vector<ValueId> ins, outs;
  for (const auto& [from, to] : kCasts) {
    ins.push_back(k.param("in", Type::ptr(from)));
    outs.push_back(k.param("out", Type::ptr(to)));
  }
  ValueId offs = k.arange(32);
  ValueId mask = k.cmp("lt", offs, k.splat(k.i32(n), {32}));
  for (size_t c = 0; c < std::size(kCasts); ++c) {
    ValueId v = k.load(k.pointers(ins[c], offs), mask);
    ValueId cast = k.op(OpKind::Cast, {v}, Type{kCasts[c].second, false, {32}}, {{"rounding", Attr{std::string("rtz")}}});
    k.store(k.pointers(outs[c], offs), cast, mask);
  }
  k.ret();
  CompiledKernel kernel(k.fn);

  std::vector<std::vector<unsigned char>> inputs, outputs;
  Args args;
  for (const auto& [from, to] : kCasts) {
    inputs.emplace_back(n * element_size(from));
    outputs.emplace_back(n * element_size(to));
    for (int i = 0; i < n; ++i) encode_float(from, round_to(kValues[i], from), inputs.back().data() + i * element_size(from));
  }
  for (size_t c = 0; c < std::size(kCasts); ++c) args.ptr(inputs[c].data()).ptr(outputs[c].data());
  kernel.run(args.get());
  for (size_t c = 0; c < std::size(kCasts); ++c) {
    auto [from, to] = kCasts[c];
    for (int i = 0; i < n; ++i) {
      long double x = decode(from, inputs[c].data() + i * element_size(from));
      long double got = decode(to, outputs[c].data() + i * element_size(to)), want = truncate_to(x, to);
      if (std::isnan(want)) {
        EXPECT_TRUE(std::isnan(got)) << i;
        continue;
      }
      EXPECT_EQ(got, want) << ir::to_string(from) << " -> " << ir::to_string(to) << " of " << (double)x;
      EXPECT_EQ(std::signbit(got), std::signbit(want)) << ir::to_string(from) << " -> " << ir::to_string(to) << " of "
                                                       << (double)x;
    }
  }
}

// --- dot -------------------------------------------------------------------------------------------

struct DotCase {
  Scalar in, out;
  std::vector<int64_t> a_shape, b_shape;
};

class DotTest : public ::testing::TestWithParam<DotCase> {};

TEST_P(DotTest, MatchesReference) {
  const DotCase& dc = GetParam();
  std::vector<int64_t> o_shape = dc.a_shape;
  o_shape.back() = dc.b_shape.back();
  Type ta = Type::tile(dc.in, dc.a_shape), tb = Type::tile(dc.in, dc.b_shape), to = Type::tile(dc.out, o_shape);
  KernelBuilder k("dot");
  ValueId a = k.param("a", Type::ptr(dc.in)), b = k.param("b", Type::ptr(dc.in));
  ValueId c = k.param("c", Type::ptr(dc.out)), out = k.param("out", Type::ptr(dc.out));
  auto flat = [&](ValueId base, const Type& t) {
    ValueId p = k.pointers(base, k.arange(t.numel()));
    return p;
  };
  ValueId av = k.op(OpKind::Reshape, {k.load(flat(a, ta))}, ta);
  ValueId bv = k.op(OpKind::Reshape, {k.load(flat(b, tb))}, tb);
  ValueId cv = k.op(OpKind::Reshape, {k.load(flat(c, to))}, to);
  ValueId d = k.op(OpKind::Dot, {av, bv, cv}, to, {{"precision", Attr{std::string("tf32")}}});
  k.store(flat(out, to), k.op(OpKind::Reshape, {d}, Type::tile(dc.out, {to.numel()})));
  k.ret();
  CompiledKernel kernel(k.fn);

  std::mt19937_64 rng(9);
  auto fill = [&](Scalar s, int64_t n) {
    std::vector<unsigned char> v(static_cast<size_t>(n * element_size(s)));
    std::uniform_real_distribution<double> dist(-2, 2);
    for (int64_t i = 0; i < n; ++i) {
      void* p = v.data() + i * element_size(s);
      if (ir::is_float(s)) {
        encode_float(s, round_to(dist(rng), s), p);
      } else {
        uint64_t bits = rng() & width_mask(s);
        std::memcpy(p, &bits, static_cast<size_t>(element_size(s)));
      }
    }
    return v;
  };
  std::vector<unsigned char> A = fill(dc.in, ta.numel()), B = fill(dc.in, tb.numel()), Cv = fill(dc.out, to.numel());
  std::vector<unsigned char> O(Cv.size());
  Args args;
  args.ptr(A.data()).ptr(B.data()).ptr(Cv.data()).ptr(O.data());
  kernel.run(args.get());

  size_t r = o_shape.size();
  int64_t batch = r == 3 ? o_shape[0] : 1, M = o_shape[r - 2], N = o_shape[r - 1], K = dc.a_shape[r - 1];
  auto value = [&](Scalar s, const std::vector<unsigned char>& v, int64_t i) -> long double {
    const void* p = v.data() + i * element_size(s);
    if (ir::is_float(s)) return decode(s, p);
    return (long double)signed_value(s, int_bits(s, p));
  };
  for (int64_t bt = 0; bt < batch; ++bt) {
    for (int64_t m = 0; m < M; ++m) {
      for (int64_t n = 0; n < N; ++n) {
        int64_t oi = bt * M * N + m * N + n;
        if (ir::is_float(dc.out)) {
          long double want = value(dc.out, Cv, oi), mag = std::fabs(want);
          for (int64_t kk = 0; kk < K; ++kk) {
            long double p = value(dc.in, A, bt * M * K + m * K + kk) * value(dc.in, B, bt * K * N + kk * N + n);
            want += p, mag += std::fabs(p);
          }
          long double got = value(dc.out, O, oi);
          long double tol = ulp_of(mag, format_of(dc.out)) * 2 + mag * 1e-6L;
          ASSERT_LE(std::fabs(got - want), tol) << m << "," << n;
        } else {
          uint32_t want = static_cast<uint32_t>(static_cast<int64_t>(value(dc.out, Cv, oi)));
          for (int64_t kk = 0; kk < K; ++kk)
            want += static_cast<uint32_t>(static_cast<int64_t>(value(dc.in, A, bt * M * K + m * K + kk) *
                                                               value(dc.in, B, bt * K * N + kk * N + n)));
          ASSERT_EQ(static_cast<uint32_t>(int_bits(dc.out, O.data() + oi * 4)), want) << m << "," << n;
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Dtypes, DotTest,
    ::testing::Values(DotCase{Scalar::F32, Scalar::F32, {16, 8}, {8, 32}}, DotCase{Scalar::F16, Scalar::F32, {16, 32}, {32, 8}},
                      DotCase{Scalar::BF16, Scalar::BF16, {8, 16}, {16, 16}}, DotCase{Scalar::I8, Scalar::I32, {4, 64}, {64, 4}},
                      DotCase{Scalar::F64, Scalar::F64, {2, 4, 8}, {2, 8, 4}}),
    [](const ::testing::TestParamInfo<DotCase>& info) {
      return std::string(ir::to_string(info.param.in)) + "_" + ir::to_string(info.param.out) + "_rank" +
             std::to_string(info.param.a_shape.size());
    });

// --- control flow -----------------------------------------------------------------------------------

// for iv in range(lb, ub, step) with iter args; `body(iv, args) -> yields`.
template <class Body>
std::vector<ValueId> for_loop(KernelBuilder& k, ValueId lb, ValueId ub, ValueId step, std::vector<ValueId> inits, Body body) {
  std::vector<ValueId> operands = {lb, ub, step};
  std::vector<Type> types;
  for (ValueId v : inits) operands.push_back(v), types.push_back(k.type(v));
  ir::BlockId outer = k.b.insertion_block();
  ir::OpId op = k.b.create(OpKind::For, operands, types);
  ir::BlockId region = k.region(op);
  ValueId iv = k.fn.add_block_arg(region, k.type(lb));
  std::vector<ValueId> args;
  for (ValueId v : inits) args.push_back(k.fn.add_block_arg(region, k.type(v)));
  k.yield(body(iv, args));
  k.resume(outer);
  return k.fn.op(op).results;
}

TEST(CpuCodegen, ForLoopsCarrySwappedValues) {
  KernelBuilder k("loops");
  ValueId xp = k.param("x", Type::ptr(Scalar::F32)), yp = k.param("y", Type::ptr(Scalar::F32));
  ValueId out = k.param("out", Type::ptr(Scalar::F32)), counts = k.param("counts", Type::ptr(Scalar::I64));
  const int64_t N = 16;
  ValueId x = k.load(k.pointers(xp, k.arange(N))), y = k.load(k.pointers(yp, k.arange(N)));
  ValueId zero = k.fconstant(0.0, Type::tile(Scalar::F32, {N}));
  // for i in range(0, 5): acc += a * i; a, b = b, a
  std::vector<ValueId> r = for_loop(k, k.i32(0), k.i32(5), k.i32(1), {zero, x, y}, [&](ValueId iv, std::vector<ValueId> a) {
    ValueId fi = k.splat(k.cast(iv, Scalar::F32), {N});
    ValueId acc = k.binary(OpKind::Add, a[0], k.binary(OpKind::Mul, a[1], fi));
    return std::vector<ValueId>{acc, a[2], a[1]};
  });
  k.store(k.pointers(out, k.arange(N)), r[0]);
  k.store(k.pointers(out, k.binary(OpKind::Add, k.arange(N), k.splat(k.i32(N), {N}))), r[1]);
  // Scalar trip counters: range(10, 0, -3) runs 4 times, range(5, 5) never,
  // an i64 range near the top of int64 does not overflow.
  auto count = [&](ValueId lb, ValueId ub, ValueId step) {
    ValueId one = k.constant(1, Type::of(Scalar::I64));
    return for_loop(k, lb, ub, step, {k.constant(0, Type::of(Scalar::I64))}, [&](ValueId, std::vector<ValueId> a) {
      return std::vector<ValueId>{k.binary(OpKind::Add, a[0], one)};
    })[0];
  };
  Type i64 = Type::of(Scalar::I64);
  ValueId c0 = count(k.i32(10), k.i32(0), k.i32(-3));
  ValueId c1 = count(k.i32(5), k.i32(5), k.i32(1));
  ValueId c2 = count(k.constant(INT64_MAX - 10, i64), k.constant(INT64_MAX, i64), k.constant(4, i64));
  ValueId c3 = count(k.i32(0), k.i32(7), k.i32(0));
  k.store(counts, c0);
  k.store(k.op(OpKind::AddPtr, {counts, k.i32(1)}, Type::ptr(Scalar::I64)), c1);
  k.store(k.op(OpKind::AddPtr, {counts, k.i32(2)}, Type::ptr(Scalar::I64)), c2);
  k.store(k.op(OpKind::AddPtr, {counts, k.i32(3)}, Type::ptr(Scalar::I64)), c3);
  k.ret();
  CompiledKernel kernel(k.fn);

  std::vector<float> xs(N), ys(N), o(2 * N);
  std::vector<int64_t> cs(4, -1);
  for (int i = 0; i < N; ++i) xs[i] = 1.0f + i, ys[i] = 100.0f + i;
  Args args;
  args.ptr(xs.data()).ptr(ys.data()).ptr(o.data()).ptr(cs.data());
  kernel.run(args.get());
  for (int i = 0; i < N; ++i) {
    float acc = 0, a = xs[i], b = ys[i];
    for (int it = 0; it < 5; ++it) {
      acc = acc + a * static_cast<float>(it);
      std::swap(a, b);
    }
    ASSERT_EQ(o[i], acc) << i;
    ASSERT_EQ(o[N + i], a) << i;
  }
  EXPECT_EQ(cs[0], 4);
  EXPECT_EQ(cs[1], 0);
  EXPECT_EQ(cs[2], 3);
  EXPECT_EQ(cs[3], 0);  // zero step: no iterations
}

TEST(CpuCodegen, IfAndWhileWithResults) {
  KernelBuilder k("branches");
  ValueId xp = k.param("x", Type::ptr(Scalar::F32)), out = k.param("out", Type::ptr(Scalar::F32));
  ValueId sp = k.param("scalars", Type::ptr(Scalar::I32)), n = k.param("n", Type::of(Scalar::I32));
  const int64_t N = 8;
  ValueId x = k.load(k.pointers(xp, k.arange(N)));
  // r = x + 1 if n > 3 else x * 2 (a tile result), plus a scalar result.
  ir::BlockId body = k.b.insertion_block();
  ir::OpId iff = k.b.create(OpKind::If, {k.cmp("gt", n, k.i32(3))}, {k.type(x), Type::of(Scalar::I32)});
  k.region(iff);
  k.yield({k.binary(OpKind::Add, x, k.fconstant(1.0, k.type(x))), k.i32(10)});
  k.region(iff);
  k.yield({k.binary(OpKind::Mul, x, k.fconstant(2.0, k.type(x))), k.i32(20)});
  k.resume(body);
  k.store(k.pointers(out, k.arange(N)), k.fn.op(iff).results[0]);
  k.store(sp, k.fn.op(iff).results[1]);
  // s, c = n, 0; while s < 1000: s, c = s * 2 + 1, c + 1
  ir::OpId wh = k.b.create(OpKind::While, {n, k.i32(0)}, {Type::of(Scalar::I32), Type::of(Scalar::I32)});
  ir::BlockId before = k.region(wh);
  ValueId bs = k.fn.add_block_arg(before, Type::of(Scalar::I32)), bc = k.fn.add_block_arg(before, Type::of(Scalar::I32));
  k.b.create(OpKind::Condition, {k.cmp("lt", bs, k.i32(1000)), bs, bc}, {});
  ir::BlockId after = k.region(wh);
  ValueId as = k.fn.add_block_arg(after, Type::of(Scalar::I32)), ac = k.fn.add_block_arg(after, Type::of(Scalar::I32));
  k.yield({k.binary(OpKind::Add, k.binary(OpKind::Mul, as, k.i32(2)), k.i32(1)), k.binary(OpKind::Add, ac, k.i32(1))});
  k.resume(body);
  k.store(k.op(OpKind::AddPtr, {sp, k.i32(1)}, Type::ptr(Scalar::I32)), k.fn.op(wh).results[0]);
  k.store(k.op(OpKind::AddPtr, {sp, k.i32(2)}, Type::ptr(Scalar::I32)), k.fn.op(wh).results[1]);
  k.ret();
  CompiledKernel kernel(k.fn);

  for (int32_t nv : {2, 7, 5000}) {
    std::vector<float> xs(N), o(N);
    std::vector<int32_t> sc(3);
    for (int i = 0; i < N; ++i) xs[i] = 0.5f * i;
    Args args;
    args.ptr(xs.data()).ptr(o.data()).ptr(sc.data()).i32(nv);
    kernel.run(args.get());
    for (int i = 0; i < N; ++i) ASSERT_EQ(o[i], nv > 3 ? xs[i] + 1 : xs[i] * 2);
    EXPECT_EQ(sc[0], nv > 3 ? 10 : 20);
    int32_t s = nv, c = 0;
    while (s < 1000) s = s * 2 + 1, ++c;
    EXPECT_EQ(sc[1], s);
    EXPECT_EQ(sc[2], c);
  }
}

// A program stuck in `while s < n: pass` returns once the launch's StopPoll
// says stop, and the entry starts no further program (backends/kernel_abi.h).
TEST(CpuCodegen, StopPollEndsAProgramThatNeverEnds) {
  KernelBuilder k("stuck");
  ValueId out = k.param("out", Type::ptr(Scalar::I32)), n = k.param("n", Type::of(Scalar::I32));
  ValueId pid = k.op(OpKind::ProgramId, {}, Type::of(Scalar::I32), {{"axis", Attr{int64_t{0}}}});
  ValueId mine = k.op(OpKind::AddPtr, {out, pid}, Type::ptr(Scalar::I32));
  k.store(mine, k.i32(1));  // started
  ir::BlockId body = k.b.insertion_block();
  ir::OpId wh = k.b.create(OpKind::While, {k.i32(0)}, {Type::of(Scalar::I32)});
  ir::BlockId before = k.region(wh);
  ValueId bs = k.fn.add_block_arg(before, Type::of(Scalar::I32));
  k.b.create(OpKind::Condition, {k.cmp("lt", bs, n), bs}, {});
  ir::BlockId after = k.region(wh);
  ValueId as = k.fn.add_block_arg(after, Type::of(Scalar::I32));
  k.yield({as});
  k.resume(body);
  k.store(mine, k.i32(2));  // finished (never)
  k.ret();
  CompiledKernel kernel(k.fn);

  struct CountingStop : backends::abi::StopPoll {
    int calls = 0;
  } stop;
  stop.poll = [](backends::abi::StopPoll* self) -> int32_t { return ++static_cast<CountingStop*>(self)->calls >= 3; };
  std::vector<int32_t> marks(8, 0);
  Args args;
  args.ptr(marks.data()).i32(1);
  const int32_t grid[3] = {8, 1, 1};
  kernel.run_range(args.get(), grid, 0, 8, &stop);
  // Stopped on the third poll, 3 * 256 iterations in; no further program ran.
  EXPECT_EQ(stop.calls, 3);
  EXPECT_EQ(marks, (std::vector<int32_t>{1, 0, 0, 0, 0, 0, 0, 0}));
  // A loop that ends runs to its end with a poll that never stops.
  std::vector<int32_t> done(8, 0);
  Args finite;
  finite.ptr(done.data()).i32(0);
  kernel.run(finite.get(), 8);
  EXPECT_EQ(done, std::vector<int32_t>(8, 2));
}

// --- memory ------------------------------------------------------------------------------------------

TEST(CpuCodegen, MaskedLoadTakesOtherAndNeverTouchesMaskedMemory) {
  KernelBuilder k("load_other");
  ValueId xp = k.param("x", Type::ptr(Scalar::F16)), out = k.param("out", Type::ptr(Scalar::F16));
  ValueId bp = k.param("flags", Type::ptr(Scalar::I1)), bout = k.param("flags_out", Type::ptr(Scalar::I1));
  ValueId n = k.param("n", Type::of(Scalar::I32));
  ValueId offs = k.arange(kBlock);
  ValueId mask = k.cmp("lt", offs, k.splat(n, {kBlock}));
  ValueId other = k.fconstant(-7.5, Type::tile(Scalar::F16, {kBlock}));
  k.store(k.pointers(out, offs), k.load(k.pointers(xp, offs), mask, other));
  ValueId flags = k.load(k.pointers(bp, offs), mask, k.constant(1, Type::tile(Scalar::I1, {kBlock})));
  k.store(k.pointers(bout, offs), k.unary(OpKind::Not, flags));
  // A scalar masked load: x[n] exists only when n < 10 (it never does here).
  ValueId scalar_mask = k.cmp("lt", n, k.i32(10));
  ValueId far = k.op(OpKind::AddPtr, {xp, n}, Type::ptr(Scalar::F16));
  ValueId sv = k.op(OpKind::Load, {far, scalar_mask, k.fconstant(3.0, Type::of(Scalar::F16))}, Type::of(Scalar::F16));
  k.store(k.op(OpKind::AddPtr, {out, k.i32(kBlock)}, Type::ptr(Scalar::F16)), sv);
  k.ret();
  CompiledKernel kernel(k.fn);

  const int valid = 40;
  GuardedBuffer xb(valid * 2), fb(valid);
  auto* x = reinterpret_cast<uint16_t*>(xb.data());
  for (int i = 0; i < valid; ++i) {
    encode_float(Scalar::F16, i * 0.5L, &x[i]);
    fb.data()[i] = i % 3 == 0 ? 1 : 0;
  }
  std::vector<uint16_t> o(kBlock + 1);
  std::vector<uint8_t> fo(kBlock);
  Args args;
  args.ptr(x).ptr(o.data()).ptr(fb.data()).ptr(fo.data()).i32(valid);
  kernel.run(args.get());
  for (int i = 0; i < kBlock; ++i) {
    ASSERT_EQ(decode(Scalar::F16, &o[i]), i < valid ? i * 0.5L : -7.5L) << i;
    ASSERT_EQ(fo[i], i < valid ? (i % 3 == 0 ? 0 : 1) : 0) << i;
  }
  EXPECT_EQ(decode(Scalar::F16, &o[kBlock]), 3.0L);
}

// 2^20 f32 elements (4 MiB) per tile: kept off the stack, so a worker with a
// small stack runs it.
TEST(CpuCodegen, LargeTilesLiveInScratchMemory) {
  const int64_t N = int64_t{1} << 20;
  KernelBuilder k("large");
  ValueId xp = k.param("x", Type::ptr(Scalar::F32)), out = k.param("out", Type::ptr(Scalar::F32));
  ValueId n = k.param("n", Type::of(Scalar::I32));
  ValueId offs = k.arange(N);
  ValueId mask = k.cmp("lt", offs, k.splat(n, {N}));
  ValueId x = k.load(k.pointers(xp, offs), mask);
  ValueId y = k.binary(OpKind::Add, k.binary(OpKind::Mul, x, k.fconstant(2.0, k.type(x))), k.fconstant(1.0, k.type(x)));
  k.store(k.pointers(out, offs), y, mask);
  k.store(k.op(OpKind::AddPtr, {out, n}, Type::ptr(Scalar::F32)), sum_of(k, x, 0));
  k.ret();
  CompiledKernel kernel(k.fn);
  EXPECT_NE(kernel.source.find("tg_scratch("), std::string::npos);

  const int32_t valid = static_cast<int32_t>(N - 3);
  std::vector<float> xs(N), o(N, -1);
  for (int64_t i = 0; i < N; ++i) xs[i] = static_cast<float>(i % 7) - 3;
  Args args;
  args.ptr(xs.data()).ptr(o.data()).i32(valid);
  // Run on a thread with a 256 KiB stack.
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 256 * 1024);
  struct Job {
    const CompiledKernel* kernel;
    const Args* args;
  } job{&kernel, &args};
  pthread_t thread;
  ASSERT_EQ(pthread_create(&thread, &attr, [](void* p) -> void* {
    auto* j = static_cast<Job*>(p);
    j->kernel->run(j->args->get());
    return nullptr;
  }, &job), 0);
  pthread_join(thread, nullptr);
  pthread_attr_destroy(&attr);
  double total = 0;
  for (int64_t i = 0; i < valid; ++i) {
    ASSERT_EQ(o[i], xs[i] * 2 + 1) << i;
    total += xs[i];
  }
  EXPECT_EQ(o[valid], total);  // small integers: every order of summation is exact
  EXPECT_EQ(o[valid + 1], -1);
}

// --- print and assert -----------------------------------------------------------------------------------

// A tile prints as one block, as Triton's CPU backend prints it; the prefix
// (the front end's, " name: ") verbatim, a '%' in it printed, not a format.
TEST(CpuCodegen, PrintWritesATileAsOneBlockWithProgramId) {
  KernelBuilder k("printer");
  ValueId xp = k.param("x", Type::ptr(Scalar::I32));
  ValueId x = k.load(k.pointers(xp, offsets_2d(k, 2, 2)));
  k.b.create(OpKind::Print, {x}, {}, {{"prefix", Attr{std::string(" x 100%s: ")}}});
  k.b.create(OpKind::Print, {k.fconstant(0.5, Type::of(Scalar::F32))}, {}, {{"prefix", Attr{std::string(" half: ")}}});
  k.ret();
  CompiledKernel kernel(k.fn);
  std::vector<int32_t> xs = {5, -6, 7, 8};
  Args args;
  args.ptr(xs.data());
  ::testing::internal::CaptureStdout();
  kernel.run(args.get(), 1, 2);
  std::string printed = ::testing::internal::GetCapturedStdout();
  EXPECT_EQ(printed,
            "(0, 0, 0) x 100%s: [[ 5, -6],\n"
            "                    [ 7,  8]]\n"
            "(0, 0, 0) half: 0.500000\n"
            "(0, 1, 0) x 100%s: [[ 5, -6],\n"
            "                    [ 7,  8]]\n"
            "(0, 1, 0) half: 0.500000\n");
}

ir::Function assert_kernel() {
  KernelBuilder k("checks");
  ValueId n = k.param("n", Type::of(Scalar::I32));
  k.at(12, 5);
  ValueId pid = k.op(OpKind::ProgramId, {}, Type::of(Scalar::I32), {{"axis", Attr{int64_t{0}}}});
  ValueId ok = k.cmp("lt", k.splat(pid, {4}), k.splat(n, {4}));
  k.b.create(OpKind::Assert, {ok}, {}, {{"message", Attr{std::string("pid < n \"quoted\" 50%")}}});
  k.ret();
  return std::move(k.fn);
}

TEST(CpuCodegen, FailingAssertIsRecordedWithProgramAndElement) {
  CodegenOptions debug;
  debug.debug = true;
  CompiledKernel kernel(assert_kernel(), debug);
  backends::abi::DebugRecord record;
  Args args;
  args.i32(2).ptr(&record);  // n, then the debug slots: no pointer parameters, the record
  kernel.run(args.get(), 4);
  EXPECT_EQ(record.reported, 1);
  EXPECT_EQ(record.program, 2);  // programs 2 and 3 fail: the smallest id is kept
  EXPECT_EQ(record.site, 0);
  EXPECT_EQ(record.param, -1);
  EXPECT_EQ(record.index, 0);
  EXPECT_EQ(record.pid[0], 2);
}

// Debug mode checks every access against its array: a kernel reading 64
// elements of a 40-element buffer that ends at an inaccessible page records
// the first element past the end instead of faulting, and stores nothing
// once it failed.
TEST(CpuCodegen, DebugModeSkipsAndRecordsOutOfBoundsAccesses) {
  KernelBuilder k("reader");
  ValueId xp = k.param("x", Type::ptr(Scalar::F32));
  ValueId op = k.param("out", Type::ptr(Scalar::F32));
  k.at(7, 9);
  ValueId x = k.load(k.pointers(xp, k.arange(64)));
  k.at(8, 5);
  k.store(k.pointers(op, k.arange(64)), x);
  k.ret();
  CodegenOptions debug;
  debug.debug = true;
  CompiledKernel kernel(k.fn, debug);
  GuardedBuffer in(40 * sizeof(float));
  std::vector<float> out(64, -1.0f);
  for (int i = 0; i < 40; ++i) reinterpret_cast<float*>(in.data())[i] = static_cast<float>(i);
  backends::abi::DebugRecord record;
  Args args;
  args.ptr(in.data()).ptr(out.data());
  args.i64(static_cast<int64_t>(reinterpret_cast<uintptr_t>(in.data()))).i64(40 * sizeof(float));
  args.i64(static_cast<int64_t>(reinterpret_cast<uintptr_t>(out.data()))).i64(64 * sizeof(float));
  args.ptr(&record);
  kernel.run(args.get());
  EXPECT_EQ(record.reported, 1);
  EXPECT_EQ(record.site, 0);
  EXPECT_EQ(record.param, 0);
  EXPECT_EQ(record.offset, 40);
  EXPECT_EQ(record.size, 40);
  // Element by element in one loop: elements before the failing one were stored.
  for (int i = 0; i < 40; ++i) EXPECT_EQ(out[i], static_cast<float>(i)) << i;
  for (int i = 40; i < 64; ++i) EXPECT_EQ(out[i], -1.0f) << i;
}

TEST(CpuCodegen, DebugModeLeavesCodeWithoutItUnchanged) {
  KernelBuilder k("copy");
  ValueId xp = k.param("x", Type::ptr(Scalar::F32));
  k.store(k.pointers(xp, k.arange(16)), k.load(k.pointers(xp, k.arange(16))));
  k.ret();
  std::string plain = backends::cpu::emit_cpp(k.fn);
  for (const char* text : {"tg_access", "TgDebug", "tg_debug", "tg_extents", "tg_record", "tg_print"})
    EXPECT_EQ(plain.find(text), std::string::npos) << text;
  CodegenOptions debug;
  debug.debug = true;
  EXPECT_NE(backends::cpu::emit_cpp(k.fn, debug).find("tg_access<0>(tg_dbg"), std::string::npos);
}

TEST(CpuCodegen, AssertIsCompiledOnlyInDebugMode) {
  std::string source = backends::cpu::emit_cpp(assert_kernel());
  EXPECT_EQ(source.find("tg_debug_assert"), std::string::npos);
  CodegenOptions debug;
  debug.debug = true;
  EXPECT_NE(backends::cpu::emit_cpp(assert_kernel(), debug).find("tg_debug_assert"), std::string::npos);
}

// --- toolchain --------------------------------------------------------------------------------------------

TEST(CpuToolchain, DetectsCompilerWithIeeeFlags) {
  const backends::cpu::Toolchain& tc = backends::cpu::toolchain();
  EXPECT_EQ(tc.compiler.front(), '/');
  EXPECT_FALSE(tc.identity.empty());
  EXPECT_NE(tc.flags.find("-O3"), std::string::npos);
  EXPECT_EQ(tc.flags.find("fast-math"), std::string::npos);
  EXPECT_EQ(&tc, &backends::cpu::toolchain());
}

// -march=native code is only valid on CPUs like this one: the key names the CPU.
TEST(CpuToolchain, NamesTheHostCpuForTheCacheKey) {
  const backends::cpu::Toolchain& tc = backends::cpu::toolchain();
  if (!std::filesystem::exists("/proc/cpuinfo")) {
    EXPECT_EQ(tc.host, "unknown");
    return;
  }
  ASSERT_EQ(tc.host.size(), 16u) << tc.host;
  EXPECT_EQ(tc.host.find_first_not_of("0123456789abcdef"), std::string::npos) << tc.host;
}

TEST(CpuToolchain, CompileErrorCarriesCompilerOutputAndLeavesNoFiles) {
  TempDir dir;
  std::string so = dir.path() + "/broken.so";
  try {
    backends::cpu::compile_shared_object("int f() { return undeclared_name; }\n", so);
    FAIL() << "expected a compile error";
  } catch (const InternalError& e) {
    EXPECT_NE(std::string(e.what()).find("undeclared_name"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
}

TEST(CpuToolchain, CompilesIntoPlace) {
  TempDir dir;
  std::string so = dir.path() + "/ok.so";
  backends::cpu::compile_shared_object("extern \"C\" int answer() { return 42; }\n", so);
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    EXPECT_EQ(entry.path().filename(), "ok.so");
    ++files;
  }
  EXPECT_EQ(files, 1);
  void* handle = ::dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr);
  auto answer = reinterpret_cast<int (*)()>(::dlsym(handle, "answer"));
  ASSERT_NE(answer, nullptr);
  EXPECT_EQ(answer(), 42);
  ::dlclose(handle);
}

}  // namespace
}  // namespace tegula::cpu_test
