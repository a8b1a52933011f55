// CPU backend: kernels built by hand with ir::Builder, emitted as C++,
// compiled with the system compiler, loaded and run against references.
#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <random>
#include <thread>

#include "cpu_test_support.h"
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

const char* const kGoldenVectorAdd = R"CPP()CPP";

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

// The emitted source below the prelude, exactly: unintended codegen changes
// show up here. Update it only for intended changes.
TEST(CpuCodegen, GoldenVectorAddSource) {
  std::string source = backends::cpu::emit_cpp(vector_add());
  std::string marker = "// ---- kernel ----\n";
  size_t at = source.find(marker);
  ASSERT_NE(at, std::string::npos);
  EXPECT_EQ(source.substr(at + marker.size()), kGoldenVectorAdd) << source.substr(at + marker.size());
}

}  // namespace
}  // namespace tegula::cpu_test
