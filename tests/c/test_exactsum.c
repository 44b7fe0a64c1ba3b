/* SPDX-License-Identifier: Apache-2.0 */
/*
** test_exactsum.c — the exact running sums of exactsum.c: values of every
** magnitude added and removed in random order leave exactly zero; sums that
** fit four pieces read back correctly rounded (checked against a 2-limb
** integer reference); weighted products are exact; division of
** expansions; infinities.
*/
#include <math.h>

#include "math/exactsum.h"
#include "unit.h"

static uint64_t xs_rng = 0x9E3779B97F4A7C15ull;
static uint64_t xs_next(void) { return unit_xorshift(&xs_rng); }

/* A double of random sign, mantissa and exponent in [lo, hi]. */
static double xs_random(int lo, int hi) {
  double m = (double)(xs_next() >> 11) * 0x1p-53 + 0.5;
  int e = lo + (int)(xs_next() % (uint64_t)(hi - lo + 1));
  return (xs_next() & 1 ? -1 : 1) * ldexp(m, e);
}

static int all_zero(const double *v) {
  int j;
  for (j = 0; j < XS_N; j++)
    if (v[j] != 0) return 0;
  return 1;
}

/* Sliding frames of 5 whose sums always fit four pieces: weighted values
** with exponents in [-30, 40] (products of 106 bits: < 180 bits in all),
** and unweighted 1e30-sized values (58 bits) next to values in [-30, 10]
** (96 bits). Every row added and removed: exactly zero remains. */
TEST(exactsum_add_then_remove_leaves_zero) {
  static const double big[] = {1e30, -1e30, 3e29, -3e29};
  static double x[2000], w[2000], y[2000];
  int round, i;
  for (round = 0; round < 20; round++) {
    double v[XS_N] = {0}, u[XS_N] = {0};
    for (i = 0; i < 2000; i++) {
      x[i] = xs_random(-30, 40);
      w[i] = 1 + (double)(xs_next() % 1000) / 7.0; /* products are not exact doubles */
      y[i] = xs_next() % 3 ? big[xs_next() % 4] : xs_random(-30, 10);
    }
    for (i = 0; i < 2000; i++) {
      xs_add_product(v, w[i], x[i]);
      xs_add(u, y[i]);
      if (i >= 5) {
        xs_add_product(v, -w[i - 5], x[i - 5]);
        xs_add(u, -y[i - 5]);
      }
    }
    for (i = 1995; i < 2000; i++) {
      xs_add_product(v, -w[i], x[i]);
      xs_add(u, -y[i]);
    }
    CHECK(all_zero(v));
    CHECK(all_zero(u));
  }
}

TEST(exactsum_small_next_to_large) {
  double v[XS_N] = {0};
  int i;
  for (i = 0; i < 10000; i++) {
    xs_add(v, 1e30);
    xs_add(v, 0.1);
    xs_add(v, -1e30);
  }
  /* 10000 * 0.1 (the double) exactly, 1000.0000000000000555..., rounded once */
  CHECK(xs_value(v) == 1000.0);
  {
    double d[XS_N] = {0}, q;
    xs_add(d, 3);
    q = xs_div(v, d);
    CHECK(q == 333.33333333333337); /* the exact quotient correctly rounded */
  }
}

TEST(exactsum_value_correct_against_integers) {
  /* integers below 2^120 as sums of doubles; the reference is a two-limb
  ** integer, rounded to double by hand */
  int round;
  for (round = 0; round < 500; round++) {
    double v[XS_N] = {0};
    uint64_t hi = 0, lo = 0; /* 128-bit unsigned sum */
    int i, k = 1 + (int)(xs_next() % 6);
    for (i = 0; i < k; i++) {
      int e = (int)(xs_next() % 60);
      uint64_t m = xs_next() >> 11; /* 53 bits */
      double d = ldexp((double)m, e);
      uint64_t l = e < 64 ? m << e : 0, h = e == 0 ? 0 : (e < 64 ? m >> (64 - e) : m << (e - 64));
      xs_add(v, d);
      lo += l;
      hi += h + (lo < l);
    }
    {
      /* round hi:lo to a double (nearest, ties to even) */
      int bits = hi ? 128 - __builtin_clzll(hi) : (lo ? 64 - __builtin_clzll(lo) : 0);
      double want;
      if (bits <= 53) {
        want = (double)lo;
      } else {
        int sh = bits - 53;
        uint64_t top, rest_hi, rest_lo, half_hi, half_lo;
        top = sh >= 64 ? hi >> (sh - 64) : (hi << (64 - sh)) | (lo >> sh);
        rest_lo = sh >= 64 ? lo : lo & ((1ull << sh) - 1);
        rest_hi = sh >= 64 ? hi & ((sh - 64) ? ((1ull << (sh - 64)) - 1) : 0) : 0;
        half_hi = sh - 1 >= 64 ? 1ull << (sh - 65) : 0;
        half_lo = sh - 1 >= 64 ? 0 : 1ull << (sh - 1);
        if (rest_hi > half_hi || (rest_hi == half_hi && rest_lo > half_lo) ||
            (rest_hi == half_hi && rest_lo == half_lo && (top & 1)))
          top++;
        want = ldexp((double)top, sh);
      }
      CHECK(xs_value(v) == want);
    }
  }
}

TEST(exactsum_infinity_and_huge_range) {
  double v[XS_N] = {0};
  xs_add(v, 1e300);
  xs_add(v, 1e-300);
  xs_add(v, 3.0);
  xs_add(v, -1e300);
  CHECK(xs_value(v) == 3.0); /* 1e-300 is below the rounding of 3 */
  xs_add(v, -3.0);
  CHECK(xs_value(v) == 1e-300);
  xs_add(v, INFINITY);
  CHECK(isinf(xs_value(v)));
  xs_add(v, 1.0);
  CHECK(isinf(xs_value(v)));
  xs_add(v, -INFINITY);
  CHECK(isnan(xs_value(v)));
}
