// Evidence for a division by a row's divisor without vdivps (docs/backend-cpu.md,
// "Memory-bound rows": built, measured, not shipped): r = RN(1/d),
// q = RN(x r), e = fma(-q, d, x), q' = RN(q + e r) against IEEE x / d, for
// every mantissa of x in [1, 2) (so x / d covers both binades of the
// quotient) and DIVISORS mantissas of d (160 chosen: the 64 largest, the
// 64 smallest, 32 around 1.5; the rest random from SEED). Operands away
// from overflow and underflow give the same result at any exponent, so
// mantissas are what there is to test. Also counts how often q is more
// than 1 ulp from the quotient (Markstein's theorem assumes it never is).
//   g++ -O2 -march=native markstein_check.cpp -o markstein_check   (AVX-512)
//   ./markstein_check DIVISORS SEED
#include <immintrin.h>
#include <cstdio>
#include <cstdint>
#include <cstring>
#include <cstdlib>
#include <random>
static float bitsf(uint32_t b){float f; memcpy(&f,&b,4); return f;}
int main(int argc, char** argv) {
  if (argc < 3) return std::fprintf(stderr, "usage: %s DIVISORS SEED\n", argv[0]), 2;
  int nd = atoi(argv[1]); unsigned seed = atoi(argv[2]);
  std::mt19937 g(seed);
  long long bad = 0, far = 0, total = 0;
  for (int k = 0; k < nd; ++k) {
    uint32_t m;
    if (k < 64) m = (1u<<23) - 1 - k;            // mantissas all ones and below
    else if (k < 128) m = k - 64;                // 1 + small
    else if (k < 160) m = (1u<<22) + (k-128) - 16; // around 1.5
    else m = g() & 0x7fffff;
    float d = bitsf(0x3f800000u | m);
    float r = 1.0f / d;
    __m512 vd = _mm512_set1_ps(d), vr = _mm512_set1_ps(r);
    __m512i base = _mm512_set1_epi32(0x3f800000), lane = _mm512_setr_epi32(0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15);
    for (uint32_t xm = 0; xm < (1u<<23); xm += 16) {
      __m512 x = _mm512_castsi512_ps(_mm512_add_epi32(_mm512_add_epi32(base, _mm512_set1_epi32(xm)), lane));
      __m512 q = _mm512_mul_ps(x, vr);
      __m512 e = _mm512_fnmadd_ps(q, vd, x);
      __m512 q2 = _mm512_fmadd_ps(e, vr, q);
      __m512 t = _mm512_div_ps(x, vd);
      __mmask16 ne = _mm512_cmp_epi32_mask(_mm512_castps_si512(q2), _mm512_castps_si512(t), _MM_CMPINT_NE);
      __mmask16 ne0 = _mm512_cmp_epi32_mask(_mm512_castps_si512(q), _mm512_castps_si512(t), _MM_CMPINT_NE);
      // how far q is from t in ulps (diagnostic: >1 ulp off)
      __m512i diff = _mm512_abs_epi32(_mm512_sub_epi32(_mm512_castps_si512(q), _mm512_castps_si512(t)));
      __mmask16 f = _mm512_cmp_epi32_mask(diff, _mm512_set1_epi32(1), _MM_CMPINT_GT);
      bad += __builtin_popcount(ne); far += __builtin_popcount(f); (void)ne0;
      if (ne) { alignas(64) float xs[16]; _mm512_store_ps(xs, x); for (int l=0;l<16;++l) if (ne>>l&1) { if (bad < 10) printf("MISMATCH x=%a d=%a\n", xs[l], d);} }
    }
    total += 1u<<23;
  }
  printf("d values %d, pairs %lld, mismatches %lld, q0 more than 1 ulp off %lld\n", nd, total, bad, far);
}
