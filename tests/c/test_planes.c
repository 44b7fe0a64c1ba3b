/* SPDX-License-Identifier: Apache-2.0 */
/*
** test_planes.c — byte planes and their transforms (math/planes.h): the
** layout of a known item in each mode and byte order, bit-for-bit round
** trips over every width, both byte orders and every mode on items that
** include NaN payloads, -0.0, subnormals and infinities, lengths that are
** not a multiple of any vector width, the lossy updates (their error, their
** refusals) and the estimates that choose a mode.
*/
#include <math.h>
#include <stdlib.h>

#include "math/planes.h"
#include "unit.h"

static uint64_t rng_state = 88172645463325252u;
static uint64_t rnd(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return rng_state;
}

/* Items of width w whose bit patterns mix the special ones in. */
static void fill_items(unsigned char *p, size_t n, int w) {
  static const uint64_t special[] = {
      0x7ff8000000000001u, /* a NaN with a payload (float64) */
      0x8000000000000000u, /* -0.0 */
      0x0000000000000001u, /* the smallest subnormal */
      0x7ff0000000000000u, /* +inf */
      0xfff0000000000000u, /* -inf */
      0x7fc00123u,         /* a float32 NaN with a payload */
      0x80000000u,         /* float32 -0.0 */
      0x00000001u,         /* float32 subnormal */
      0x7f800000u,         /* float32 inf */
      0xffffffffffffffffu,
  };
  size_t i;
  int k;
  for (i = 0; i < n; i++) {
    uint64_t v = i % 7 == 0 ? special[(i / 7) % (sizeof(special) / sizeof(special[0]))] : rnd();
    for (k = 0; k < w; k++) p[i * (size_t)w + (size_t)k] = (unsigned char)(v >> (8 * k));
  }
}

TEST(planes_layout_of_one_item) {
  unsigned char p[8][1], *pl[8], out[4];
  const unsigned char le[4] = {0x44, 0x33, 0x22, 0x11}, be[4] = {0x11, 0x22, 0x33, 0x44};
  const unsigned char base_le[4] = {0x43, 0x33, 0x22, 0x11}, base_be[4] = {0x11, 0x22, 0x33, 0x45};
  int k;
  for (k = 0; k < 8; k++) pl[k] = p[k];
  /* most significant byte first, whatever the stored order */
  bp_split(le, NULL, 1, 4, 0, BP_PLAIN, pl);
  CHECK(p[0][0] == 0x11 && p[1][0] == 0x22 && p[2][0] == 0x33 && p[3][0] == 0x44);
  bp_split(be, NULL, 1, 4, 1, BP_PLAIN, pl);
  CHECK(p[0][0] == 0x11 && p[1][0] == 0x22 && p[2][0] == 0x33 && p[3][0] == 0x44);
  /* x - b = +1: zigzag 2; x - b = -1: zigzag 1 */
  bp_split(le, base_le, 1, 4, 0, BP_DIFF, pl);
  CHECK(p[0][0] == 0 && p[1][0] == 0 && p[2][0] == 0 && p[3][0] == 2);
  bp_split(be, base_be, 1, 4, 1, BP_DIFF, pl);
  CHECK(p[0][0] == 0 && p[1][0] == 0 && p[2][0] == 0 && p[3][0] == 1);
  bp_split(le, base_le, 1, 4, 0, BP_XOR, pl);
  CHECK(p[0][0] == 0 && p[1][0] == 0 && p[2][0] == 0 && p[3][0] == 0x07);
  bp_merge((const unsigned char *const *)pl, base_le, 1, 4, 0, BP_XOR, out);
  CHECK(memcmp(out, le, 4) == 0);
  /* the largest difference wraps: 0 - 0x80000000 */
  {
    const unsigned char zero[4] = {0, 0, 0, 0}, top[4] = {0, 0, 0, 0x80};
    bp_split(zero, top, 1, 4, 0, BP_DIFF, pl);
    CHECK(p[0][0] == 0xff && p[1][0] == 0xff && p[2][0] == 0xff && p[3][0] == 0xff);
    bp_merge((const unsigned char *const *)pl, top, 1, 4, 0, BP_DIFF, out);
    CHECK(memcmp(out, zero, 4) == 0);
  }
}

TEST(planes_round_trip_every_width_order_and_mode) {
  static const size_t lengths[] = {0, 1, 3, 15, 16, 17, 31, 33, 64, 1000, 4097};
  static const int widths[] = {1, 2, 4, 8};
  static unsigned char src[4097 * 8], base[4097 * 8], out[4097 * 8 + 1], planes[8][4097];
  unsigned char *pl[8];
  size_t li;
  int wi, big, mode, k;
  for (k = 0; k < 8; k++) pl[k] = planes[k];
  for (wi = 0; wi < 4; wi++)
    for (li = 0; li < sizeof(lengths) / sizeof(lengths[0]); li++)
      for (big = 0; big < 2; big++)
        for (mode = BP_PLAIN; mode <= BP_XOR; mode++) {
          int w = widths[wi];
          size_t n = lengths[li];
          fill_items(src, n, w);
          fill_items(base, n, w);
          memset(out, 0xa5, sizeof(out));
          bp_split(src, mode == BP_PLAIN ? NULL : base, n, w, big, mode, pl);
          bp_merge((const unsigned char *const *)pl, mode == BP_PLAIN ? NULL : base, n, w, big, mode, out);
          CHECK(memcmp(out, src, n * (size_t)w) == 0);
          CHECK(out[n * (size_t)w] == 0xa5); /* nothing written past the end */
        }
}

TEST(planes_diff_of_close_floats_has_empty_high_planes) {
  float x[256], b[256];
  unsigned char planes[4][256], *pl[4];
  int i, k;
  for (k = 0; k < 4; k++) pl[k] = planes[k];
  for (i = 0; i < 256; i++) {
    b[i] = 0.5f + (float)i / 1024.0f;
    x[i] = nextafterf(b[i], i % 2 ? 1.0f : 0.0f);
  }
  bp_split((const unsigned char *)x, (const unsigned char *)b, 256, 4, 0, BP_DIFF, pl);
  for (i = 0; i < 256; i++) CHECK(planes[0][i] == 0 && planes[1][i] == 0 && planes[2][i] == 0 && planes[3][i] <= 2);
}

TEST(planes_estimate_ranks_the_candidates) {
  static float x[100000], b[100000];
  uint64_t plain, diff, same;
  int i;
  for (i = 0; i < 100000; i++) {
    b[i] = (float)((double)rnd() / 18446744073709551616.0 - 0.5);
    x[i] = b[i] + (float)((double)(rnd() % 1000) * 1e-9);
  }
  plain = bp_estimate((const unsigned char *)x, NULL, 100000, 4, 0, BP_PLAIN);
  diff = bp_estimate((const unsigned char *)x, (const unsigned char *)b, 100000, 4, 0, BP_DIFF);
  same = bp_estimate((const unsigned char *)b, (const unsigned char *)b, 100000, 4, 0, BP_XOR);
  CHECK(plain > 300000 && plain <= 400001);
  CHECK(diff < plain / 2);
  CHECK(same <= 1);
  CHECK(bp_estimate((const unsigned char *)x, NULL, 0, 4, 0, BP_PLAIN) == 0);
  CHECK(bp_entropy((const unsigned char *)"aaaa", 4) == 0);
  CHECK(fabs(bp_entropy((const unsigned char *)"abab", 4) - 0.5) < 1e-12); /* 1 bit per byte */
}

static void swap8(double *v) {
  unsigned char *p = (unsigned char *)v, t;
  int k;
  for (k = 0; k < 4; k++) t = p[k], p[k] = p[7 - k], p[7 - k] = t;
}

TEST(planes_lossy_error_is_what_merging_gives) {
  float x[1000], b[1000], y[1000];
  double d[1000], e[1000], z[1000], max_err = 0, seen = 0;
  unsigned char planes[2][1000], *pl[2] = {planes[0], planes[1]};
  int i, fmt;
  for (fmt = BP_HALF; fmt <= BP_BFLOAT16; fmt++) {
    for (i = 0; i < 1000; i++) {
      b[i] = (float)((double)rnd() / 18446744073709551616.0 - 0.5);
      x[i] = b[i] + (float)(((double)(rnd() % 2001) - 1000.0) * 1e-6);
    }
    x[0] = b[0];               /* no update: exact */
    x[1] = -0.0f, b[1] = 0.0f; /* a sign the update cannot carry: error 0 */
    max_err = 0;
    CHECK(bp_lossy_split((const unsigned char *)x, (const unsigned char *)b, 1000, 4, 0, fmt, pl, &max_err) == 0);
    bp_lossy_merge((const unsigned char *const *)pl, (const unsigned char *)b, 1000, 4, 0, fmt, (unsigned char *)y);
    seen = 0;
    for (i = 0; i < 1000; i++)
      if (fabs((double)y[i] - (double)x[i]) > seen) seen = fabs((double)y[i] - (double)x[i]);
    CHECK(y[0] == x[0] && seen == max_err && max_err > 0);
    CHECK(max_err < (fmt == BP_HALF ? 1e-6 : 1e-5)); /* updates up to 1e-3 */
  }
  for (i = 0; i < 1000; i++) {
    e[i] = (double)i;
    d[i] = e[i] + 0.25;
  }
  max_err = 0;
  CHECK(bp_lossy_split((const unsigned char *)d, (const unsigned char *)e, 1000, 8, 0, BP_HALF, pl, &max_err) == 0);
  bp_lossy_merge((const unsigned char *const *)pl, (const unsigned char *)e, 1000, 8, 0, BP_HALF, (unsigned char *)z);
  CHECK(max_err == 0 && memcmp(z, d, sizeof(d)) == 0); /* 0.25 is exact in float16 */
  /* the same items stored big-endian */
  for (i = 0; i < 1000; i++) {
    swap8(&d[i]);
    swap8(&e[i]);
  }
  CHECK(bp_lossy_split((const unsigned char *)d, (const unsigned char *)e, 1000, 8, 1, BP_HALF, pl, &max_err) == 0);
  bp_lossy_merge((const unsigned char *const *)pl, (const unsigned char *)e, 1000, 8, 1, BP_HALF, (unsigned char *)z);
  CHECK(max_err == 0 && memcmp(z, d, sizeof(d)) == 0);
}

TEST(planes_lossy_refuses_what_it_cannot_carry) {
  float x[4] = {1, 2, 3, 4}, b[4] = {1, 2, 3, 4};
  unsigned char planes[2][4], *pl[2] = {planes[0], planes[1]};
  double max_err = 0;
  x[2] = NAN;
  CHECK(bp_lossy_split((const unsigned char *)x, (const unsigned char *)b, 4, 4, 0, BP_HALF, pl, &max_err) == 1);
  x[2] = 3;
  b[3] = INFINITY;
  CHECK(bp_lossy_split((const unsigned char *)x, (const unsigned char *)b, 4, 4, 0, BP_HALF, pl, &max_err) == 1);
  b[3] = 4;
  x[3] = 1e6f; /* an update past float16's 65504 */
  CHECK(bp_lossy_split((const unsigned char *)x, (const unsigned char *)b, 4, 4, 0, BP_HALF, pl, &max_err) == 1);
  CHECK(bp_lossy_split((const unsigned char *)x, (const unsigned char *)b, 4, 4, 0, BP_BFLOAT16, pl, &max_err) == 0);
}
