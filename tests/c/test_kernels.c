/* SPDX-License-Identifier: Apache-2.0 */
/*
** test_kernels.c — the typed loops of kernels.c: conversions (every float16
** bit pattern), pairwise summation accuracy and order, NaN handling of min/max,
** integer wrapping, checked float-to-int casts and the in-place result store
** (the order statistics: test_orderstat.c).
*/
#include <math.h>
#include <stdlib.h>

#include "math/kernels.h"
#include "unit.h"

/* A deterministic generator (xorshift64*), so failures reproduce. */
static uint64_t rng_state = 88172645463325252ull;
static uint64_t rng_next(void) { return unit_xorshift(&rng_state); }
static double rng_unit(void) { return (double)(rng_next() >> 11) * 0x1p-53; }

static int same_double(double a, double b) { return (a != a && b != b) || memcmp(&a, &b, 8) == 0; }

TEST(kernels_half_to_double_every_pattern) {
  /* The vectorizable float16 load must agree with dtype.c's reference
  ** conversion on all 65536 patterns (NaN payloads included). */
  static uint16_t h[65536];
  static double d[65536];
  uint32_t i;
  for (i = 0; i < 65536; i++) h[i] = (uint16_t)i;
  kn_to_f64(DT_FLOAT16, h, d, 65536);
  for (i = 0; i < 65536; i++) {
    double ref = dt_half_to_double((uint16_t)i);
    CHECK(same_double(d[i], ref) || (d[i] != d[i] && ref != ref));
    if (ref == ref) CHECK(memcmp(&d[i], &ref, 8) == 0);
  }
}

TEST(kernels_to_f64_every_integer_type) {
  unsigned char buf[64];
  double d[4];
  int64_t q[4];
  int8_t i8[4] = {-128, -1, 0, 127};
  uint16_t u16[4] = {0, 1, 65535, 40000};
  int64_t i64[4] = {INT64_MIN, -1, (int64_t)1 << 53, INT64_MAX};
  uint64_t u64[4] = {0, UINT64_MAX, 1, (uint64_t)1 << 63};
  unsigned char b[4] = {0, 1, 2, 255};
  memcpy(buf, i8, 4);
  kn_to_f64(DT_INT8, buf, d, 4);
  CHECK(d[0] == -128 && d[1] == -1 && d[2] == 0 && d[3] == 127);
  memcpy(buf, u16, 8);
  kn_to_f64(DT_UINT16, buf, d, 4);
  CHECK(d[2] == 65535 && d[3] == 40000);
  memcpy(buf, i64, 32);
  kn_to_f64(DT_INT64, buf, d, 4);
  CHECK(d[0] == -9223372036854775808.0 && d[2] == 9007199254740992.0);
  memcpy(buf, u64, 32);
  kn_to_f64(DT_UINT64, buf, d, 4);
  CHECK(d[1] == 18446744073709551616.0 && d[3] == 9223372036854775808.0);
  kn_to_i64(DT_UINT64, buf, q, 4);
  CHECK((uint64_t)q[1] == UINT64_MAX);
  /* NumPy's bool is "non-zero": a stray byte 2 or 255 is True, i.e. 1 */
  kn_to_f64(DT_BOOL, b, d, 4);
  CHECK(d[0] == 0 && d[1] == 1 && d[2] == 1 && d[3] == 1);
  kn_to_i64(DT_BOOL, b, q, 4);
  CHECK(q[2] == 1 && q[3] == 1);
}

TEST(kernels_unaligned_pointers) {
  /* Arrays inside a record start at any byte offset. */
  unsigned char raw[8 * 9 + 1];
  double src[9], out[9], back[9];
  size_t i;
  for (i = 0; i < 9; i++) src[i] = (double)i * 1.5 - 3;
  memcpy(raw + 1, src, sizeof(src));
  kn_to_f64(DT_FLOAT64, raw + 1, out, 9);
  for (i = 0; i < 9; i++) CHECK(out[i] == src[i]);
  CHECK(kn_sum(raw + 1, 9) == 27); /* 1.5 * 36 - 27, exact */
  kn_from_f64(DT_FLOAT64, src, raw + 1, 9);
  memcpy(back, raw + 1, sizeof(back));
  for (i = 0; i < 9; i++) CHECK(back[i] == src[i]);
}

TEST(kernels_pairwise_sum_is_accurate) {
  /* A large value then many small ones: a pairwise tree keeps the error to
  ** a few ulps. The reference is Neumaier-compensated (not long double, which
  ** valgrind runs as double). */
  enum { N = 100003 };
  double *x = malloc(N * sizeof(double));
  double ref = 0, comp = 0;
  kn_cascade c;
  size_t i, pos;
  double got;
  CHECK(x != NULL);
  for (i = 0; i < N; i++) {
    double t;
    x[i] = i == 0 ? 1e8 : rng_unit();
    t = ref + x[i];
    comp += fabs(ref) >= fabs(x[i]) ? (ref - t) + x[i] : (x[i] - t) + ref;
    ref = t;
  }
  ref += comp;
  kn_cascade_init(&c);
  for (pos = 0; pos < N; pos += KN_BLOCK) kn_cascade_add(&c, kn_sum(x + pos, N - pos < KN_BLOCK ? N - pos : KN_BLOCK));
  got = kn_cascade_sum(&c);
  free(x);
  CHECK(fabs(got - ref) / ref < 1e-15);
}

TEST(kernels_cascade_matches_single_tree) {
  /* Sums of equal values are exact in any order; the cascade must count
  ** every block once, for any number of blocks. */
  kn_cascade c;
  int n;
  for (n = 0; n < 70; n++) {
    int k;
    kn_cascade_init(&c);
    for (k = 0; k < n; k++) kn_cascade_add(&c, 3.0);
    CHECK(kn_cascade_sum(&c) == 3.0 * n);
  }
}

TEST(kernels_transformed_sums) {
  double x[300], y[300], z[600];
  double s2 = 0, s1 = 0, sd = 0, sp = 0, zc = 0, zd = 0;
  size_t i;
  for (i = 0; i < 300; i++) {
    x[i] = (double)(i % 17) - 8;
    y[i] = (double)(i % 5);
    z[2 * i] = x[i];
    z[2 * i + 1] = y[i];
    s2 += x[i] * x[i];
    s1 += fabs(x[i]);
    sd += (x[i] - 0.5) * (x[i] - 0.5);
    sp += x[i] * y[i];
    zc += x[i] * x[i] + y[i] * y[i];
    zd += (x[i] - 1) * (x[i] - 1) + (y[i] - 2) * (y[i] - 2);
  }
  /* small integers: every sum is exact */
  CHECK(kn_sum_sq(x, 300) == s2);
  CHECK(kn_sum_abs(x, 300) == s1);
  CHECK(kn_sum_sqdev(x, 0.5, 300) == sd);
  CHECK(kn_sum_prod(x, y, 300) == sp);
  CHECK(kn_sum_sq_c(z, 300) == zc);
  CHECK(kn_sum_sqdev_c(z, 1, 2, 300) == zd);
  CHECK(kn_sum(x, 0) == 0);
}

/* NumPy's pairwise_sum written plainly: the order every kn_sum* must keep
** exactly, whatever lanes or vectors they use. */
static double ref_pairwise(const double *x, size_t n) {
  if (n < 8) {
    double res = 0;
    size_t i;
    for (i = 0; i < n; i++) res += x[i];
    return res;
  } else if (n <= 128) {
    double r[8], res;
    size_t i, j;
    for (j = 0; j < 8; j++) r[j] = x[j];
    for (i = 8; i + 8 <= n; i += 8)
      for (j = 0; j < 8; j++) r[j] += x[i + j];
    res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; i < n; i++) res += x[i];
    return res;
  } else {
    size_t half = n / 2;
    half -= half % 8;
    return ref_pairwise(x, half) + ref_pairwise(x + half, n - half);
  }
}

TEST(kernels_pairwise_order_is_numpys) {
  /* Values over many magnitudes, so any other order of additions rounds
  ** differently; every length up to a few blocks, at an odd address. */
  enum { N = 2200 };
  double *x = malloc(N * sizeof(double)), *t = malloc(N * sizeof(double));
  float *f = malloc((2 * N + 1) * sizeof(float)), *g = f + 1, *h = g + N;
  size_t i, n;
  CHECK(x && t && f);
  for (i = 0; i < N; i++) {
    g[i] = (float)((rng_unit() - 0.5) * ldexp(1.0, (int)(rng_next() % 40) - 20));
    h[i] = (float)(rng_unit() - 0.5);
    x[i] = (double)g[i] * (1 + rng_unit());
  }
  for (n = 0; n <= N; n += n < 300 ? 1 : 37) {
    CHECK(same_double(kn_sum(x, n), ref_pairwise(x, n)));
    for (i = 0; i < n; i++) t[i] = g[i];
    CHECK(same_double(kn_sum_f32(g, n), ref_pairwise(t, n)));
    for (i = 0; i < n; i++) t[i] = (double)g[i] * (double)g[i];
    CHECK(same_double(kn_sum_sq_f32(g, n), ref_pairwise(t, n)));
    for (i = 0; i < n; i++) t[i] = fabs((double)g[i]);
    CHECK(same_double(kn_sum_abs_f32(g, n), ref_pairwise(t, n)));
    for (i = 0; i < n; i++) t[i] = ((double)g[i] - 0.25) * ((double)g[i] - 0.25);
    CHECK(same_double(kn_sum_sqdev_f32(g, 0.25, n), ref_pairwise(t, n)));
    for (i = 0; i < n; i++) t[i] = (double)g[i] * (double)h[i];
    CHECK(same_double(kn_sum_prod_f32(g, h, n), ref_pairwise(t, n)));
    for (i = 0; i < n; i++) t[i] = x[i] * x[i];
    CHECK(same_double(kn_sum_sq(x, n), ref_pairwise(t, n)));
  }
  free(x);
  free(t);
  free(f);
}

TEST(kernels_minmax_nan_and_tails) {
  double x[37], mn, mx;
  size_t i, n;
  for (n = 1; n <= 37; n++) {
    for (i = 0; i < n; i++) x[i] = (double)((i + n / 2) % n) - 3; /* a rotation of -3 .. n-4 */
    mn = mx = x[0];
    CHECK(kn_minmax(x, n, &mn, &mx) == 0);
    CHECK(mn == -3 && mx == (double)n - 4);
    /* a NaN anywhere, including the scalar tail, is reported */
    x[n - 1] = NAN;
    mn = mx = x[0];
    CHECK(kn_minmax(x, n, &mn, &mx) == 1);
  }
  x[0] = NAN;
  mn = mx = 1;
  CHECK(kn_minmax(x, 1, &mn, &mx) == 1);
  {
    double z[4] = {3, 4, -6, 8};
    mx = 0;
    CHECK(kn_max_abs(z, 2, 1, &mx) == 0 && mx == 10);
    mx = 0;
    CHECK(kn_max_abs(z, 4, 0, &mx) == 0 && mx == 8);
  }
}

TEST(kernels_min_or_max_alone) {
  /* Asking for one bound gives what asking for both does, NaNs included. */
  double x[300], lo, hi, lo1, hi1;
  float f[300], flo, fhi, flo1, fhi1;
  size_t i, n;
  for (i = 0; i < 300; i++) x[i] = f[i] = (float)((rng_unit() - 0.5) * 1e6);
  for (n = 1; n <= 300; n += 7) {
    int nan, k;
    for (k = 0; k < 2; k++) {
      if (k) x[n / 2] = f[n / 2] = NAN;
      lo = hi = lo1 = hi1 = x[0];
      nan = kn_minmax(x, n, &lo, &hi);
      CHECK(kn_minmax(x, n, &lo1, NULL) == nan && kn_minmax(x, n, NULL, &hi1) == nan);
      CHECK(nan == k);
      flo = fhi = flo1 = fhi1 = f[0];
      CHECK(kn_minmax_f32(f, n, &flo, &fhi) == nan);
      CHECK(kn_minmax_f32(f, n, &flo1, NULL) == nan && kn_minmax_f32(f, n, NULL, &fhi1) == nan);
      if (!nan) { /* with a NaN the bounds are NaN whatever these hold */
        CHECK(same_double(lo, lo1) && same_double(hi, hi1));
        CHECK(flo == flo1 && fhi == fhi1 && (double)flo == lo && (double)fhi == hi);
      }
      x[n / 2] = f[n / 2] = 1;
    }
  }
}

TEST(kernels_nonfinite_and_allclose) {
  double x[6] = {1, NAN, INFINITY, -INFINITY, 0, -0.0};
  double a[5] = {1, 1e10, INFINITY, NAN, 0};
  double b[5] = {1 + 1e-6, 1.00001e10, INFINITY, 0, 1e-9};
  CHECK(kn_count_nonfinite(x, 6, 0) == 3);
  CHECK(kn_count_nonfinite(x, 3, 1) == 2); /* pairs (1,nan) (inf,-inf) (0,-0) */
  CHECK(kn_allclose(a, b, 3, 0, 1e-5, 1e-8) == 1);
  CHECK(kn_allclose(a, b, 4, 0, 1e-5, 1e-8) == 0); /* NaN is never close */
  CHECK(kn_allclose(a + 4, b + 4, 1, 0, 1e-5, 1e-8) == 1);
  CHECK(kn_allclose(a + 4, b + 4, 1, 0, 0, 0) == 0);
  {
    double inf_a[1] = {INFINITY}, inf_b[1] = {-INFINITY};
    CHECK(kn_allclose(inf_a, inf_b, 1, 0, 1e-5, 1e-8) == 0);
  }
}

TEST(kernels_count_ne_as_numpy) {
  /* NaN differs from everything (itself too), inf equals inf, -0.0 equals 0.0 */
  double a[6] = {1, NAN, INFINITY, -0.0, 2, NAN};
  double b[6] = {1, NAN, INFINITY, 0.0, 3, 1};
  CHECK(kn_count_ne(a, b, 6, 0) == 3);
  CHECK(kn_count_ne(a, b, 0, 0) == 0);
  CHECK(kn_count_ne(a, b, 3, 1) == 2); /* pairs (1,nan) (inf,-0) (2,nan): only the middle one is equal */
}

TEST(kernels_integer_arithmetic_wraps) {
  int64_t a[3] = {INT64_MAX, INT64_MIN, -5}, b[3] = {1, -1, 7}, o[3];
  unsigned char out8[3];
  kn_binary_i64(KN_ADD, a, b, o, 3);
  CHECK(o[0] == INT64_MIN && o[1] == INT64_MAX && o[2] == 2);
  kn_binary_i64(KN_MUL, a, b, o, 3);
  CHECK(o[0] == INT64_MAX && o[1] == INT64_MIN && o[2] == -35);
  /* narrowing keeps the low bits, as NumPy's int8 arithmetic does */
  {
    int64_t w[3] = {200, -129, 256};
    kn_from_i64(DT_INT8, w, out8, 3);
    CHECK((int8_t)out8[0] == -56 && (int8_t)out8[1] == 127 && out8[2] == 0);
    kn_from_i64(DT_BOOL, w, out8, 3);
    CHECK(out8[0] == 1 && out8[1] == 1 && out8[2] == 1);
  }
}

TEST(kernels_float_to_int_is_checked) {
  double v[6] = {-1.9, 127.9, -128.5, 3, 0, 0};
  unsigned char o[8 * 6];
  int8_t i8[6];
  CHECK(kn_f64_to_int(DT_INT8, v, o, 4) == 4);
  memcpy(i8, o, 4);
  CHECK(i8[0] == -1 && i8[1] == 127 && i8[2] == -128 && i8[3] == 3);
  v[4] = 128.0;
  CHECK(kn_f64_to_int(DT_INT8, v, o, 5) == 4);
  v[4] = NAN;
  CHECK(kn_f64_to_int(DT_INT64, v, o, 5) == 4);
  v[4] = 9223372036854775808.0; /* 2^63 does not fit int64 */
  CHECK(kn_f64_to_int(DT_INT64, v, o, 5) == 4);
  v[4] = -9223372036854775808.0;
  CHECK(kn_f64_to_int(DT_INT64, v, o, 5) == 5);
  v[0] = -0.5; /* truncates to 0: fits uint8 */
  CHECK(kn_f64_to_int(DT_UINT8, v, o, 1) == 1 && o[0] == 0);
  v[0] = -1;
  CHECK(kn_f64_to_int(DT_UINT8, v, o, 1) == 0);
  v[0] = 18446744073709551615.0; /* rounds to 2^64 */
  CHECK(kn_f64_to_int(DT_UINT64, v, o, 1) == 0);
}

TEST(kernels_complex_product_textbook) {
  /* (1+2i)(3-4i) = 11+2i; inf*0 in a part gives NaN, as NumPy. */
  double a[4] = {1, 2, INFINITY, 0}, b[4] = {3, -4, 0, 1}, o[4];
  float af[2] = {1, 2}, bf[2] = {3, -4}, of[2];
  kn_binary_c128(KN_MUL, a, b, o, 2);
  CHECK(o[0] == 11 && o[1] == 2);
  CHECK(o[2] != o[2] && o[3] == INFINITY);
  kn_binary_c64(KN_MUL, af, bf, of, 1);
  CHECK(of[0] == 11 && of[1] == 2);
  kn_scale_c128(a + 2, 2.0, o, 1); /* (inf + 0i) * (2 + 0i) = inf + nan i */
  CHECK(o[0] == INFINITY && o[1] != o[1]);
}

TEST(kernels_axpy_and_in_place_store) {
  /* Accumulate two float32 rows, then store the mean as float32 over the
  ** accumulator itself, starting 8 bytes earlier: the documented overlap. */
  enum { N = 700 };
  static double mem[N + 1];
  float x[N], y[N], out[N];
  size_t i;
  for (i = 0; i < N; i++) {
    x[i] = (float)i * 0.25f;
    y[i] = (float)i * -0.5f + 1;
  }
  kn_axpy(DT_FLOAT32, x, 3.0, mem + 1, N, KN_ACC_SET, 0);
  kn_axpy(DT_FLOAT32, y, 1.0, mem + 1, N, KN_ACC_ADD, 0);
  kn_div_store(DT_FLOAT32, mem + 1, 0, 4.0, mem, N);
  memcpy(out, mem, sizeof(out));
  for (i = 0; i < N; i++) CHECK(out[i] == (float)((3.0 * x[i] + y[i]) / 4.0));
}

TEST(kernels_axpy_other_types) {
  int16_t x[5] = {-3, 0, 7, 32767, -32768};
  uint16_t h[2] = {0x3c00, 0xc000}; /* 1.0, -2.0 */
  float c[4] = {1, 2, 3, 4};
  double acc[10];
  kn_axpy(DT_INT16, x, 0.5, acc, 5, KN_ACC_SET, 0);
  CHECK(acc[0] == -1.5 && acc[3] == 16383.5 && acc[4] == -16384);
  kn_axpy(DT_FLOAT16, h, 2, acc, 2, KN_ACC_ADD, 0);
  CHECK(acc[0] == 0.5 && acc[1] == -4);
  kn_axpy_c(DT_COMPLEX64, c, 2, acc, 2, KN_ACC_SET, 0);
  CHECK(acc[0] == 2 && acc[1] == 4 && acc[2] == 6 && acc[3] == 8);
}

TEST(kernels_elementwise_minmax) {
  float a[4] = {1, NAN, 3, -2}, b[4] = {0, 5, NAN, -2};
  int32_t ia[3] = {-5, 5, 0}, ib[3] = {4, -4, 0};
  uint16_t ha[2] = {0x3c00, 0x7e00}, hb[2] = {0x4000, 0x3c00}; /* [1, nan], [2, 1] */
  kn_elem_minmax(DT_FLOAT32, a, b, 4, 0);
  CHECK(a[0] == 0 && a[1] != a[1] && a[2] != a[2] && a[3] == -2);
  kn_elem_minmax(DT_INT32, ia, ib, 3, 1);
  CHECK(ia[0] == 4 && ia[1] == 5 && ia[2] == 0);
  kn_elem_minmax(DT_FLOAT16, ha, hb, 2, 1);
  CHECK(ha[0] == 0x4000 && ha[1] == 0x7e00);
}

TEST(kernels_integer_sums_are_exact) {
  int64_t x[4] = {INT64_MIN, INT64_MAX, -1, 5}, y[2] = {INT64_MIN, INT64_MIN};
  uint64_t u[2] = {UINT64_MAX, 2}, acc[2] = {0, 0};
  kn_sum_int(x, 4, 0, acc);
  CHECK(kn_int128_to_double(acc) == 3); /* in double the first two would cancel to 0 */
  acc[0] = acc[1] = 0;
  kn_sum_int((const int64_t *)u, 2, 1, acc);
  CHECK(acc[1] == 1 && acc[0] == 1 && kn_int128_to_double(acc) == 18446744073709551617.0);
  acc[0] = acc[1] = 0;
  kn_sum_int(y, 2, 0, acc);
  CHECK(kn_int128_to_double(acc) == -18446744073709551616.0);
  kn_sum_int(x, 0, 0, acc); /* nothing added */
  CHECK(kn_int128_to_double(acc) == -18446744073709551616.0);
  /* Rounded once: 2^65 + 2^60 + 4097 is nearer 2^65 + 2^60 + 2^13 than
  ** 2^65 + 2^60; converting lo alone (2^60 + 4097 -> 2^60 + 4096) first
  ** would make it a tie, which goes down to even. */
  acc[1] = 2;
  acc[0] = ((uint64_t)1 << 60) + 4097;
  CHECK(kn_int128_to_double(acc) == 38046409652025958400.0);
  acc[1] = ~(uint64_t)2; /* the negation, in two's complement */
  acc[0] = ~(((uint64_t)1 << 60) + 4097) + 1;
  CHECK(kn_int128_to_double(acc) == -38046409652025958400.0);
  /* The sum of twelve int64 a fuzzer found: 44236101865807008214. */
  acc[1] = 2;
  acc[0] = 7342613718387904982u;
  CHECK(kn_int128_to_double(acc) == 44236101865807011840.0);
  acc[1] = UINT64_MAX >> 1; /* the largest magnitudes keep all 64 top bits */
  acc[0] = UINT64_MAX;
  CHECK(kn_int128_to_double(acc) == ldexp(1.0, 127));
  acc[1] = (uint64_t)1 << 63; /* -2^127 */
  acc[0] = 0;
  CHECK(kn_int128_to_double(acc) == -ldexp(1.0, 127));
}

/* The branch-free float -> half store must round exactly as dt_double_to_half
** (for NaNs: NumPy's rule, the payload's top 10 bits, 0x7c01 when zero; a
** double conversion would quiet signalling NaNs): a stride through all 2^32
** patterns, and every pattern near the subnormal boundary and near the
** largest half (65504) where ties go to infinity. */
static uint16_t half_reference(float f) {
  uint32_t b;
  memcpy(&b, &f, 4);
  if ((b & 0x7fffffffu) > 0x7f800000u) {
    uint16_t h = (uint16_t)(0x7c00u + ((b & 0x7fffffu) >> 13));
    return (uint16_t)(((b >> 16) & 0x8000u) | (h == 0x7c00u ? 0x7c01u : h));
  }
  return dt_double_to_half((double)f);
}

static int half_matches(uint32_t first, uint32_t last, uint32_t stride) {
  enum { B = 4096 };
  static float f[B];
  static uint16_t h[B];
  uint64_t u = first;
  while (u <= last) {
    size_t n = 0, i;
    for (; n < B && u <= last; n++, u += stride) {
      uint32_t bits = (uint32_t)u;
      memcpy(&f[n], &bits, 4);
    }
    kn_from_f32(DT_FLOAT16, f, h, n);
    for (i = 0; i < n; i++) {
      if (h[i] != half_reference(f[i])) return 0;
    }
  }
  return 1;
}

TEST(kernels_float_to_half_rounds_like_reference) {
  CHECK(half_matches(0, 0xffffffffu, 251));
  CHECK(half_matches(0x33000000u, 0x38900000u, 3)); /* subnormal halves and the boundary */
  CHECK(half_matches(0xb8700000u, 0xb8900000u, 1)); /* negative, at 2^-14 */
  CHECK(half_matches(0x477f0000u, 0x47810000u, 1)); /* 65504 .. 65536 */
  CHECK(half_matches(0x7f800000u, 0x7f800400u, 1)); /* inf and NaN payloads */
  CHECK(half_matches(0xff800000u, 0xff800400u, 1));
}

/* kn_compare_block's one pass gives the bits of the separate sums and
** counts it replaces (am_compare's block loop before it). */
TEST(kernels_compare_block_is_the_separate_sums) {
  static const size_t lens[] = {0, 1, 7, 8, 9, 64, 127, 128, 129, 300, 1000, 1024};
  static float fa[1024], fb[1024];
  static double da[1024], db[1024], d[1024];
  size_t li, i;
  int f64, isa;
  for (isa = KN_ISA_BASE; isa <= KN_ISA_AVX512; isa++) /* every SIMD path this CPU has: the same bits */
    for (f64 = 0; f64 < 2 && kn_set_isa(isa) == isa; f64++)
      for (li = 0; li < sizeof(lens) / sizeof(lens[0]); li++) {
        size_t m = lens[li];
        kn_cmp_block r;
        double mx = 0;
        uint64_t ne = 0;
        for (i = 0; i < m; i++) {
          fa[i] = (float)((rng_unit() - 0.5) * 100);
          fb[i] = i % 5 ? fa[i] + (float)(rng_unit() - 0.5) : fa[i];
          if (i == 3) fb[i] = NAN;
          if (i == 11) fa[i] = INFINITY;
          da[i] = f64 ? (rng_unit() - 0.5) * 1e6 : fa[i];
          db[i] = f64 ? da[i] + rng_unit() : fb[i];
          d[i] = da[i] - db[i];
        }
        kn_compare_block(f64, f64 ? (const void *)da : (const void *)fa, f64 ? (const void *)db : (const void *)fb,
                         NULL, m, &r);
        CHECK(same_double(r.sa, kn_sum_sq(da, m)) && same_double(r.sb, kn_sum_sq(db, m)));
        CHECK(same_double(r.dot, kn_sum_prod(da, db, m)));
        CHECK(same_double(r.sd, kn_sum_sq(d, m)) && same_double(r.sdiff, kn_sum(d, m)));
        CHECK(r.nan == kn_max_abs(d, m, 0, &mx) && r.maxabs == mx);
        for (i = 0; i < m; i++) ne += da[i] != db[i];
        CHECK(r.changed == ne);
        CHECK(r.nf_a == kn_count_nonfinite(da, m, 0) && r.nf_b == kn_count_nonfinite(db, m, 0));
      }
  kn_set_isa(-1);
}
