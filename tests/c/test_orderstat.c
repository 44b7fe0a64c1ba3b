/* SPDX-License-Identifier: Apache-2.0 */
/*
** test_orderstat.c — the per-element median and trimmed mean of
** orderstat.c against a sort of each element's values (every n from 1 to
** 300 and a few past OS_NET_MAX, where each element is selected on its own;
** many ties, both zeros, infinities and NaN; every key width), the same
** bytes on one thread and two, out-of-memory failures, and npselect.c's
** arrangement against the partition property np.partition guarantees.
** Bit-for-bit agreement with NumPy itself is tests/python/test_orderstat.py's.
*/
#include <math.h>
#include <stdlib.h>

#include "math/npselect.h"
#include "math/orderstat.h"
#include "math/pool.h"
#include "unit.h"

static uint64_t rng_state = 0x2545f4914f6cdd1dull;
static uint64_t rng_next(void) { return unit_xorshift(&rng_state); }

/* NaN last, -0.0 and 0.0 equal: np.sort's order. */
static int cmp_double(const void *pa, const void *pb) {
  double a = *(const double *)pa, b = *(const double *)pb;
  if (a != a) return b != b ? 0 : 1;
  if (b != b) return -1;
  return a < b ? -1 : a > b;
}

/* The reference: element e's values sorted, then the median in the type's
** arithmetic (float32 for float32, double otherwise) or the trimmed mean. */
static double reference(const double *vals, size_t n, int op, size_t cut, int f32) {
  double *v = malloc(n * sizeof(double)), r = 0;
  size_t i;
  memcpy(v, vals, n * sizeof(double));
  qsort(v, n, sizeof(double), cmp_double);
  if (op == OS_MEDIAN) {
    if (v[n - 1] != v[n - 1])
      r = NAN; /* np.median: NaN when any value is */
    else if (n % 2)
      r = v[n / 2];
    else if (f32)
      r = (double)(((float)v[n / 2 - 1] + (float)v[n / 2]) / 2.0f);
    else
      r = (v[n / 2 - 1] + v[n / 2]) / 2.0;
  } else {
    for (i = cut; i < n - cut; i++) r += v[i];
    r /= (double)(n - 2 * cut);
  }
  free(v);
  return r;
}

/* n rows of `numel` values of type t, from a pool of small integers (ties),
** zeros of both signs, infinities and (when nan) NaN. */
static unsigned char *make_rows(dt_type t, size_t n, size_t numel, int nan, double *vals) {
  size_t size = dt_size(t), r, e;
  unsigned char *rows = malloc(n * numel * size + 1);
  for (r = 0; r < n; r++)
    for (e = 0; e < numel; e++) {
      uint64_t x = rng_next() % 40;
      double v = (double)(int)(x % 17) - 8;
      unsigned char *p = rows + (r * numel + e) * size;
      if (dt_kind(t) == DT_KIND_FLOAT) {
        if (x == 17) v = -0.0;
        if (x == 18) v = INFINITY;
        if (x == 19) v = -INFINITY;
        if (x == 20 && nan) v = NAN;
        if (x > 30) v = v / 4; /* fractions */
      } else if (dt_kind(t) == DT_KIND_UINT || t == DT_BOOL) {
        v = t == DT_BOOL ? (double)(x % 2) : (double)(x % 17);
      }
      vals[e * n + r] = v;
      switch (t) {
        case DT_FLOAT32: {
          float f = (float)v;
          memcpy(p, &f, 4);
          break;
        }
        case DT_FLOAT64: memcpy(p, &v, 8); break;
        case DT_FLOAT16: {
          uint16_t h = dt_double_to_half(v);
          memcpy(p, &h, 2);
          break;
        }
        case DT_INT64: {
          int64_t i = (int64_t)v;
          memcpy(p, &i, 8);
          break;
        }
        case DT_UINT32: {
          uint32_t i = (uint32_t)v + 0x7ffffff0u; /* across the sign bit of the key */
          vals[e * n + r] = (double)i;
          memcpy(p, &i, 4);
          break;
        }
        case DT_INT16: {
          int16_t i = (int16_t)v;
          memcpy(p, &i, 2);
          break;
        }
        default: { /* DT_BOOL, DT_UINT8 */
          uint8_t i = (uint8_t)v;
          memcpy(p, &i, 1);
          break;
        }
      }
    }
  return rows;
}

static double out_value(dt_type out, const unsigned char *p) {
  if (out == DT_FLOAT32) {
    float f;
    memcpy(&f, p, 4);
    return f;
  }
  if (out == DT_FLOAT16) {
    uint16_t h;
    memcpy(&h, p, 2);
    return dt_half_to_double(h);
  }
  {
    double d;
    memcpy(&d, p, 8);
    return d;
  }
}

/* Run op over n rows and check every element against the reference. */
static int check_case(dt_type t, size_t n, size_t numel, int op, size_t cut) {
  dt_type out = dt_kind(t) == DT_KIND_FLOAT ? t : DT_FLOAT64;
  double *vals = malloc(n * numel * sizeof(double));
  unsigned char *rows = make_rows(t, n, numel, 1, vals), *dst = malloc(numel * 8);
  const unsigned char **ptr = malloc(n * sizeof(*ptr));
  os_plan *plan = os_plan_new(n, op, cut);
  size_t r, e;
  int ok = plan != NULL;
  for (r = 0; r < n; r++) ptr[r] = rows + r * numel * dt_size(t);
  if (ok) ok = os_run(plan, t, ptr, numel, out, dst) == CODEC_OK;
  for (e = 0; ok && e < numel; e++) {
    double want = reference(vals + e * n, n, op, cut, t == DT_FLOAT32 || t == DT_FLOAT16);
    double got = out_value(out, dst + e * dt_size(out));
    if (out == DT_FLOAT16) want = dt_half_to_double(dt_double_to_half(want));
    if (out == DT_FLOAT32) want = (double)(float)want;
    if (op == OS_TRIMMED && want == want && isfinite(want))
      ok = fabs(got - want) <= 1e-12 * (1 + fabs(want)) ||
           (out != DT_FLOAT64 && fabs(got - want) <= 1e-3 * (1 + fabs(want)));
    else
      ok = (got != got && want != want) || got == want;
    if (!ok)
      printf("    type %d n %zu op %d cut %zu element %zu: got %.17g want %.17g\n", (int)t, n, op, cut, e, got, want);
  }
  os_plan_free(plan);
  free((void *)ptr);
  free(rows);
  free(dst);
  free(vals);
  return ok;
}

TEST(orderstat_every_n_to_300) {
  static const dt_type types[] = {DT_FLOAT32, DT_FLOAT64, DT_FLOAT16, DT_INT64, DT_UINT32, DT_INT16, DT_UINT8, DT_BOOL};
  size_t n, ti;
  for (n = 1; n <= 300; n += n < 140 ? 1 : 23)
    for (ti = 0; ti < sizeof(types) / sizeof(types[0]); ti++) {
      dt_type t = types[ti];
      size_t numel = 1 + rng_next() % 70, cut = (size_t)floor((double)(rng_next() % 50) / 100.0 * (double)n);
      if (ti > 2 && n % 7) continue; /* every n for the float types, some for the rest */
      CHECK(check_case(t, n, numel, OS_MEDIAN, 0));
      CHECK(check_case(t, n, numel, OS_TRIMMED, cut));
      CHECK(check_case(t, n, numel, OS_TRIMMED, 0));
    }
}

TEST(orderstat_many_rows_select_per_element) {
  CHECK(check_case(DT_FLOAT32, OS_NET_MAX + 1, 5, OS_MEDIAN, 0));
  CHECK(check_case(DT_FLOAT32, OS_NET_MAX + 2, 5, OS_MEDIAN, 0));
  CHECK(check_case(DT_FLOAT64, OS_NET_MAX + 7, 3, OS_TRIMMED, 500));
  CHECK(check_case(DT_INT64, 2 * OS_NET_MAX + 1, 3, OS_MEDIAN, 0));
  {
    os_plan *p = os_plan_new(OS_NET_MAX + 1, OS_MEDIAN, 0), *q = os_plan_new(100, OS_MEDIAN, 0);
    CHECK(p && q);
    CHECK(os_plan_comparators(p) == 0);
    CHECK(os_plan_comparators(q) > 0 && os_plan_comparators(q) < 1104); /* pruned from Batcher's 1104 */
    os_plan_free(p);
    os_plan_free(q);
  }
}

/* Elements e of float32 rows where NumPy's arrangement decides the bits. */
TEST(orderstat_zero_signs_and_nan_bits) {
  /* 4 rows: -0, 0, -0, 1 -> sorted -0 0 -0 1 (zeros equal): NumPy's
  ** partition decides which zeros are in the middle. Here the answer is a
  ** zero either way; its sign must be one NumPy can give, and the same on
  ** every run. NaNs of two payloads: the result is a NaN of the input. */
  float rows[4][3] = {{-0.0f, NAN, 1}, {0.0f, 2, 5}, {-0.0f, 3, 2}, {1, -NAN, 3}};
  const unsigned char *ptr[4];
  float out[3], again[3];
  os_plan *p = os_plan_new(4, OS_MEDIAN, 0);
  int r;
  CHECK(p);
  for (r = 0; r < 4; r++) ptr[r] = (const unsigned char *)rows[r];
  CHECK(os_run(p, DT_FLOAT32, ptr, 3, DT_FLOAT32, out) == CODEC_OK);
  CHECK(os_run(p, DT_FLOAT32, ptr, 3, DT_FLOAT32, again) == CODEC_OK);
  CHECK(memcmp(out, again, sizeof out) == 0);
  CHECK(out[0] == 0);
  CHECK(out[1] != out[1] && out[2] == 2.5f);
  os_plan_free(p);
}

TEST(orderstat_same_bytes_one_thread_and_two) {
  int before = pool_configure(0, 0), th;
  uint64_t min_before = pool_min_elements();
  size_t n = 37, numel = 5000, r;
  double *vals = malloc(n * numel * sizeof(double));
  unsigned char *rows = make_rows(DT_FLOAT32, n, numel, 1, vals), *out[2];
  const unsigned char *ptr[37];
  os_plan *med = os_plan_new(n, OS_MEDIAN, 0), *trim = os_plan_new(n, OS_TRIMMED, 7);
  for (r = 0; r < n; r++) ptr[r] = rows + r * numel * 4;
  out[0] = malloc(numel * 8);
  out[1] = malloc(numel * 8);
  for (th = 1; th <= 2; th++) {
    pool_configure(th, 1);
    CHECK(os_run(med, DT_FLOAT32, ptr, numel, DT_FLOAT32, out[th - 1]) == CODEC_OK);
    CHECK(os_run(trim, DT_FLOAT32, ptr, numel, DT_FLOAT32, out[th - 1] + numel * 4) == CODEC_OK);
  }
  pool_configure(before, min_before);
  CHECK(memcmp(out[0], out[1], numel * 8) == 0);
  os_plan_free(med);
  os_plan_free(trim);
  free(out[0]);
  free(out[1]);
  free(rows);
  free(vals);
}

TEST(orderstat_out_of_memory) {
  size_t n = 50, numel = 40, r;
  long k;
  double *vals = malloc(n * numel * sizeof(double));
  unsigned char *rows = make_rows(DT_FLOAT32, n, numel, 0, vals), *dst = malloc(numel * 4);
  const unsigned char *ptr[50];
  for (r = 0; r < n; r++) ptr[r] = rows + r * numel * 4;
  for (k = 0; k < 8; k++) {
    os_plan *p;
    long live = unit_live_allocs();
    unit_fail_alloc_after(k);
    p = os_plan_new(n, OS_MEDIAN, 0);
    if (p) {
      int rc = os_run(p, DT_FLOAT32, ptr, numel, DT_FLOAT32, dst);
      CHECK(rc == CODEC_OK || rc == CODEC_NOMEM);
      os_plan_free(p);
    }
    unit_fail_alloc_after(-1);
    CHECK(unit_live_allocs() == live);
  }
  free(rows);
  free(dst);
  free(vals);
}

/* np.partition's promise for every kth: the value there is the one of that
** rank, none before it is larger, none after it smaller (NaN last). */
TEST(npselect_partition_property) {
  int trial;
  for (trial = 0; trial < 2000; trial++) {
    size_t n = 1 + rng_next() % 200, kth[3], nk = 0, i, j;
    nps_item v[200];
    double sorted[200];
    for (i = 0; i < n; i++) {
      uint64_t x = rng_next() % 23;
      v[i].v = x == 0 ? NAN : x == 1 ? -0.0 : (double)(x % 9) - 4;
      v[i].row = (uint32_t)i;
      sorted[i] = v[i].v;
    }
    if (trial % 3 == 0) /* adversarial: descending input */
      for (i = 0; i < n; i++) v[i].v = sorted[i] = (double)(n - i);
    qsort(sorted, n, sizeof(double), cmp_double);
    if (n > 1) kth[nk++] = n / 2 - 1 + (n % 2);
    kth[nk++] = n / 2 < n ? n / 2 : n - 1;
    kth[nk++] = n - 1;
    if (nk == 3 && kth[0] == kth[1]) kth[1] = kth[2], nk = 2;
    nps_partition(v, n, kth, nk, trial % 2);
    for (j = 0; j < nk; j++) {
      size_t k = kth[j];
      CHECK(cmp_double(&v[k].v, &sorted[k]) == 0);
      for (i = 0; i < k; i++) CHECK(cmp_double(&v[i].v, &v[k].v) <= 0);
      for (i = k + 1; i < n; i++) CHECK(cmp_double(&v[i].v, &v[k].v) >= 0);
    }
    {
      /* a permutation of the rows */
      unsigned char seen[200];
      memset(seen, 0, sizeof seen);
      for (i = 0; i < n; i++) seen[v[i].row]++;
      for (i = 0; i < n; i++) CHECK(seen[i] == 1);
    }
  }
}
