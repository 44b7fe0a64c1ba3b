/* SPDX-License-Identifier: Apache-2.0 */
/*
** test_robust.c — robust.c's Krum distances and Bulyan coordinates, bit for
** bit: every SIMD path this CPU has (portable, AVX2, AVX-512) against a
** plain scalar reference of the documented summation order, on odd sizes and
** awkward values (NaN, infinities, denormals, signed zeros, overflow); the
** threaded whole-row distances against one thread; and rb_bulyan_block's
** eight-lane path against rb_bulyan_coord, ties included.
*/
#include <float.h>
#include <math.h>
#include <stdlib.h>

#include "codec/codec.h"
#include "math/pool.h"
#include "math/robust.h"
#include "unit.h"

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rng_next(void) { return unit_xorshift(&rng_state); }
static double rng_unit(void) { return (double)(rng_next() >> 11) * 0x1p-53; }

static int same_double(double a, double b) { return (a != a && b != b) || memcmp(&a, &b, 8) == 0; }

/* A value of the kind `mix` asks for: 0 plain, 1 small integers (ties),
** 2 with NaN/inf/denormals/zeros/huge values now and then. */
static double awkward(int mix) {
  uint64_t r = rng_next() % 64;
  if (mix == 1) return (double)(int)(rng_next() % 5) - 2;
  if (mix == 2) switch (r) {
      case 0: return NAN;
      case 1: return HUGE_VAL;
      case 2: return -HUGE_VAL;
      case 3: return 4.9406564584124654e-324 * (double)(rng_next() % 100); /* denormal */
      case 4: return -0.0;
      case 5: return 0.0;
      case 6: return (rng_next() & 1 ? 1 : -1) * 1.5e308; /* differences overflow */
      case 7: return DBL_MIN * rng_unit();
      default: break;
    }
  return (rng_unit() - 0.5) * 8;
}

/* The documented order: lanes k mod 8, a fixed tree, then the rest. */
static double ref_sqdiff(const double *a, const double *b, size_t m) {
  double acc[8] = {0, 0, 0, 0, 0, 0, 0, 0}, s = 0;
  size_t k, l;
  for (k = 0; k + 8 <= m; k += 8)
    for (l = 0; l < 8; l++) {
      volatile double d = a[k + l] - b[k + l], d2 = d * d; /* no contraction, no reordering */
      acc[l] = acc[l] + d2;
    }
  for (; k < m; k++) {
    volatile double d = a[k] - b[k], d2 = d * d;
    s = s + d2;
  }
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7])) + s;
}

TEST(robust_pair_sqdist_every_path_bit_identical) {
  static const size_t ns[] = {2, 3, 4, 5, 6, 7, 9, 13};
  static const size_t ms[] = {1, 7, 8, 9, 15, 17, 64, 333};
  size_t a, b, i, j, k, stride = 344;
  int isa, mix, paths = 0;
  double *cols = malloc(13 * stride * sizeof(double)), *dist = malloc(13 * 13 * sizeof(double)),
         *want = malloc(13 * 13 * sizeof(double));
  CHECK(cols && dist && want);
  for (mix = 0; mix < 3; mix++)
    for (a = 0; a < sizeof ns / sizeof ns[0]; a++)
      for (b = 0; b < sizeof ms / sizeof ms[0]; b++) {
        size_t n = ns[a], m = ms[b];
        for (k = 0; k < n * stride; k++) cols[k] = awkward(mix);
        for (i = 0; i < n * n; i++) want[i] = 0.25; /* added to, as a running sum */
        for (i = 0; i < n; i++)
          for (j = i + 1; j < n; j++) want[i * n + j] += ref_sqdiff(cols + i * stride, cols + j * stride, m);
        for (isa = RB_ISA_BASE; isa <= RB_ISA_AVX512; isa++) {
          if (rb_set_isa(isa) != isa) continue; /* this CPU lacks it */
          if (mix == 0 && a == 0 && b == 0) paths++;
          for (i = 0; i < n * n; i++) dist[i] = 0.25;
          CHECK(rb_pair_sqdist(cols + 0, n, stride, m, dist) == 0);
          for (i = 0; i < n; i++)
            for (j = i + 1; j < n; j++) CHECK(same_double(dist[i * n + j], want[i * n + j]));
        }
      }
  rb_set_isa(-1);
  CHECK(paths >= 1);
  free(cols);
  free(dist);
  free(want);
}

/* rb_sqdist_rows over float32 rows in two segments, small blocks so that
** there are many: one thread and two give the bits of the reference
** (blocks of every segment in order, each block's sum added to the pair's
** distance), on every path. */
TEST(robust_sqdist_rows_threads_and_paths_bit_identical) {
  enum { N = 11, E0 = 1001, E1 = 77, ROW = E0 + E1 };
  static float rows_data[N][ROW];
  static double da[ROW], db[ROW];
  const unsigned char *rows[N];
  rb_seg segs[2];
  double want[N * N], dist[N * N];
  size_t i, j, e, block = 40, m;
  int isa, th, before = pool_configure(0, 0);
  uint64_t min_before = pool_min_elements();
  for (i = 0; i < N; i++) {
    for (e = 0; e < ROW; e++) rows_data[i][e] = (float)awkward(i < 2 && e % 97 == 0 ? 2 : 0); /* rows 0, 1: awkward */
    rows[i] = (const unsigned char *)rows_data[i];
  }
  segs[0].at = 0;
  segs[0].numel = E0;
  segs[0].type = DT_FLOAT32;
  segs[1].at = E0 * sizeof(float);
  segs[1].numel = E1;
  segs[1].type = DT_FLOAT32;
  for (i = 0; i < N * N; i++) want[i] = 0;
  for (i = 0; i < N; i++)
    for (j = i + 1; j < N; j++) {
      size_t s;
      for (s = 0; s < 2; s++)
        for (e = 0; e < segs[s].numel; e += m) {
          size_t k, off = (size_t)segs[s].at / sizeof(float) + e;
          m = segs[s].numel - e < block ? (size_t)(segs[s].numel - e) : block;
          for (k = 0; k < m; k++) {
            da[k] = rows_data[i][off + k];
            db[k] = rows_data[j][off + k];
          }
          want[i * N + j] += ref_sqdiff(da, db, m);
        }
    }
  for (isa = RB_ISA_BASE; isa <= RB_ISA_AVX512; isa++) {
    if (rb_set_isa(isa) != isa) continue;
    for (th = 1; th <= 2; th++) {
      pool_configure(th, 1);
      for (i = 0; i < N * N; i++) dist[i] = 0;
      CHECK(rb_sqdist_rows(rows, N, segs, 2, block, dist) == 0);
      for (i = 0; i < N; i++)
        for (j = i + 1; j < N; j++) CHECK(same_double(dist[i * N + j], want[i * N + j]));
    }
  }
  rb_set_isa(-1);
  pool_configure(before, min_before);
}

TEST(robust_sqdist_rows_out_of_memory) {
  enum { N = 5, M = 100 };
  static float data[N][M];
  const unsigned char *rows[N];
  rb_seg seg;
  double dist[N * N];
  long k;
  int rc = 1;
  size_t i;
  for (i = 0; i < N; i++) rows[i] = (const unsigned char *)data[i];
  seg.at = 0;
  seg.numel = M;
  seg.type = DT_FLOAT32;
  for (k = 0; k < 20 && rc; k++) {
    unit_fail_alloc_after(k);
    rc = rb_sqdist_rows(rows, N, &seg, 1, 16, dist);
    unit_fail_alloc_after(-1);
    CHECK(rc == 0 || rc == CODEC_NOMEM);
  }
  CHECK(rc == 0); /* and nothing leaked on the way (the harness checks) */
}

/* rb_bulyan_block's vector paths (each this CPU has) against
** rb_bulyan_coord, bit for bit:
** odd widths (tails), theta from 3 to 70 (both networks, the general one
** and the scalar fallback), ties, signed zeros, denormals and values whose
** differences overflow; and with NaN and inf (those lanes go the scalar way). */
TEST(robust_bulyan_block_matches_coord) {
  enum { W = 37, TMAX = 70 };
  static double cols[TMAX * W], out[W], tmp[TMAX], v[TMAX];
  static const dt_type types[] = {DT_FLOAT64, DT_FLOAT32, DT_FLOAT16};
  size_t theta, f, s, j;
  int mix, t, isa;
  for (theta = 3; theta <= TMAX; theta += theta < 20 ? 1 : 7)
    for (f = 0; 2 * f + 3 <= theta && f < 4; f++)
      for (mix = 0; mix < 4; mix++)
        for (t = 0; t < 3; t++) {
          size_t beta = theta - 2 * f;
          for (s = 0; s < theta * W; s++) {
            cols[s] = awkward(mix < 2 ? mix : 2);
            if (mix >= 2 && rng_next() % 4) cols[s] = (double)(int)(rng_next() % 7) - 3; /* ties */
            if (mix == 3 && !isfinite(cols[s])) cols[s] = -0.0; /* the eight-lane path throughout */
          }
          for (isa = RB_ISA_BASE; isa <= RB_ISA_AVX512; isa++) {
            if (rb_set_isa(isa) != isa) continue; /* this CPU lacks it */
            rb_bulyan_block(cols, W, theta, beta, types[t], W, out, tmp);
            for (j = 0; j < W; j++) {
              for (s = 0; s < theta; s++) v[s] = cols[s * W + j];
              CHECK(same_double(out[j], rb_bulyan_coord(v, theta, beta, types[t])));
            }
          }
        }
  rb_set_isa(-1);
}

/* rb_combine_rows: FedAvg and Bulyan over float32 rows, one thread and two
** (split anywhere), give rb_fedavg_step's and rb_bulyan_block's bits over
** the whole segment at once. */
TEST(robust_combine_rows_threads_bit_identical) {
  enum { NS = 9, M = 5003, BLOCK = 128 };
  static float data[NS][M];
  static float fed1[M], fed2[M], fedref[M];
  static double bul1[M], bul2[M], bulref[M], cols[NS * M], tmp[4 * M];
  const unsigned char *rows[NS];
  double w[NS];
  rb_seg seg;
  size_t s, e;
  int th, before = pool_configure(0, 0);
  uint64_t min_before = pool_min_elements();
  for (s = 0; s < NS; s++) {
    for (e = 0; e < M; e++) data[s][e] = (float)awkward(e % 11 == 0 ? 2 : 0);
    rows[s] = (const unsigned char *)data[s];
    w[s] = (double)(s + 1) / 45.0;
  }
  seg.at = 0;
  seg.numel = M;
  seg.type = DT_FLOAT32;
  for (s = 0; s < NS; s++) rb_fedavg_step(DT_FLOAT32, data[s], w[s], fedref, M, s == 0, tmp);
  for (s = 0; s < NS; s++)
    for (e = 0; e < M; e++) cols[s * M + e] = data[s][e];
  rb_bulyan_block(cols, M, NS, NS - 4, DT_FLOAT32, M, bulref, tmp);
  for (th = 1; th <= 2; th++) {
    float *fed = th == 1 ? fed1 : fed2;
    double *bul = th == 1 ? bul1 : bul2;
    pool_configure(th, 1);
    CHECK(rb_combine_rows(rows, w, NS, 0, &seg, DT_FLOAT32, fed, BLOCK) == 0);
    CHECK(rb_combine_rows(rows, NULL, NS, NS - 4, &seg, DT_FLOAT64, bul, BLOCK) == 0);
    CHECK(memcmp(fed, fedref, sizeof fedref) == 0);
    for (e = 0; e < M; e++) CHECK(same_double(bul[e], bulref[e]));
  }
  pool_configure(before, min_before);
}
