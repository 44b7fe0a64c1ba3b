/* SPDX-License-Identifier: Apache-2.0 */
/*
** test_arraymath.c — whole-array operations: the block iterator over byte
** orders and memory orders, NumPy's promotion, result layout (order, shape,
** dtype) and error messages, reductions, and results written as record items.
** The values of every operation are cross-checked against NumPy in
** tests/python/test_math_*.py; these tests pin the machinery underneath.
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "codec/array.h"
#include "math/arraymath.h"
#include "math/kernels.h"
#include "math/pool.h"
#include "unit.h"

/* A parsed .npy made from a payload given in storage order. */
typedef struct test_array {
  buf_t file;
  npy_array a;
} test_array;

static int make_array(test_array *t, dt_dtype d, int ndim, const int64_t *shape, int fortran, const void *payload,
                      uint64_t nbytes) {
  codec_err err;
  buf_init(&t->file, UINT64_MAX);
  npy_write_header(&t->file, d, ndim, shape, fortran);
  buf_append(&t->file, payload, nbytes);
  return t->file.rc == CODEC_OK && npy_parse(t->file.p, t->file.n, &t->a, &err) == CODEC_OK;
}

static dt_dtype big(dt_type t) {
  dt_dtype d = dt_native(t);
  d.big = (unsigned char)!dt_host_big();
  return d;
}

TEST(arraymath_iter_gathers_fortran_in_c_order) {
  /* A 2x3x4 int16 array stored in Fortran order: element (i,j,k) holds its
  ** C-order index 12i + 4j + k. Read in C order, the walk must count up. */
  int64_t shape[3] = {2, 3, 4};
  int16_t f[24];
  unsigned char *scratch = am_scratch();
  test_array t;
  am_iter it;
  int i, j, k, pos = 0, block;
  CHECK(scratch != NULL);
  for (i = 0; i < 2; i++)
    for (j = 0; j < 3; j++)
      for (k = 0; k < 4; k++) f[i + 2 * j + 6 * k] = (int16_t)(12 * i + 4 * j + k);
  CHECK(make_array(&t, dt_native(DT_INT16), 3, shape, 1, f, sizeof(f)));
  CHECK(am_is_fortran(&t.a));
  /* blocks of odd sizes cross rows and planes */
  for (block = 1; block <= 24; block += 6) {
    am_iter_init(&it, &t.a, 0, 1);
    CHECK(!it.direct);
    for (pos = 0; pos < 24; pos += block) {
      int m = 24 - pos < block ? 24 - pos : block, e;
      const unsigned char *p = am_iter_next(&it, (size_t)m, scratch);
      for (e = 0; e < m; e++) {
        int16_t v;
        memcpy(&v, p + 2 * e, 2);
        CHECK(v == pos + e);
      }
    }
  }
  /* In its own order the walk is a view: no copy. */
  am_iter_init(&it, &t.a, 1, 1);
  CHECK(it.direct && am_iter_next(&it, 24, scratch) == t.a.data);
  buf_free(&t.file);
  codec_free(scratch);
}

TEST(arraymath_iter_c_array_in_fortran_order_swapped) {
  /* A big-endian 3x2 float32 C array walked in Fortran order: column by
  ** column, converted to native byte order. */
  int64_t shape[2] = {3, 2};
  float c[6] = {0, 1, 2, 3, 4, 5}, want[6] = {0, 2, 4, 1, 3, 5}, got[6];
  unsigned char *scratch = am_scratch();
  test_array t;
  am_iter it;
  CHECK(scratch != NULL);
  dt_byteswap((unsigned char *)c, 6, big(DT_FLOAT32));
  CHECK(make_array(&t, big(DT_FLOAT32), 2, shape, 0, c, sizeof(c)));
  am_iter_init(&it, &t.a, 1, 1);
  memcpy(got, am_iter_next(&it, 6, scratch), sizeof(got));
  CHECK(memcmp(got, want, sizeof(got)) == 0);
  /* and without conversion the bytes stay big-endian */
  am_iter_init(&it, &t.a, 0, 0);
  CHECK(am_iter_next(&it, 6, scratch) == t.a.data);
  buf_free(&t.file);
  codec_free(scratch);
}

TEST(arraymath_fortran_flag_is_about_layout) {
  /* np.save writes fortran_order only when F-contiguous and not C-contiguous */
  int64_t s1[2] = {3, 1}, s2[2] = {2, 2}, s0[2] = {0, 5};
  double z[4] = {0, 0, 0, 0};
  test_array t;
  CHECK(make_array(&t, dt_native(DT_FLOAT64), 2, s1, 1, z, 24));
  CHECK(!am_is_fortran(&t.a));
  buf_free(&t.file);
  CHECK(make_array(&t, dt_native(DT_FLOAT64), 2, s2, 1, z, 32));
  CHECK(am_is_fortran(&t.a));
  buf_free(&t.file);
  CHECK(make_array(&t, dt_native(DT_FLOAT64), 2, s0, 1, z, 0));
  CHECK(!am_is_fortran(&t.a));
  buf_free(&t.file);
}

TEST(arraymath_promotion_table_samples) {
  /* np.promote_types for a sample of pairs (the full table is checked
  ** against NumPy in tests/python/test_math_npy.py). */
  CHECK(am_promote(DT_BOOL, DT_BOOL) == DT_BOOL);
  CHECK(am_promote(DT_BOOL, DT_INT8) == DT_INT8);
  CHECK(am_promote(DT_UINT8, DT_INT8) == DT_INT16);
  CHECK(am_promote(DT_UINT32, DT_INT64) == DT_INT64);
  CHECK(am_promote(DT_UINT64, DT_INT8) == DT_FLOAT64);
  CHECK(am_promote(DT_INT16, DT_FLOAT16) == DT_FLOAT32);
  CHECK(am_promote(DT_INT32, DT_FLOAT32) == DT_FLOAT64);
  CHECK(am_promote(DT_UINT8, DT_FLOAT16) == DT_FLOAT16);
  CHECK(am_promote(DT_FLOAT64, DT_COMPLEX64) == DT_COMPLEX128);
  CHECK(am_promote(DT_FLOAT32, DT_COMPLEX64) == DT_COMPLEX64);
  CHECK(am_promote(DT_INT32, DT_COMPLEX64) == DT_COMPLEX128);
}

TEST(arraymath_binary_plan_layout_and_errors) {
  int64_t s23[2] = {2, 3}, s32[2] = {3, 2};
  double d[6] = {0};
  test_array a, b, s;
  npy_array res;
  codec_err err;
  CHECK(make_array(&a, dt_native(DT_FLOAT32), 2, s23, 1, d, 24));
  CHECK(make_array(&b, big(DT_INT16), 2, s23, 1, d, 12));
  CHECK(make_array(&s, dt_native(DT_FLOAT64), 0, s23, 0, d, 8));
  CHECK(am_binary_plan(KN_ADD, &a.a, &b.a, &res, &err) == CODEC_OK);
  CHECK(res.dtype.type == DT_FLOAT32 && !dt_swapped(res.dtype) && res.fortran_order && res.nbytes == 24);
  CHECK(am_binary_plan(KN_MUL, &s.a, &b.a, &res, &err) == CODEC_OK); /* scalar () broadcasts */
  CHECK(res.dtype.type == DT_FLOAT64 && res.ndim == 2 && res.fortran_order);
  buf_free(&b.file);
  CHECK(make_array(&b, dt_native(DT_BOOL), 2, s32, 0, d, 6));
  CHECK(am_binary_plan(KN_ADD, &a.a, &b.a, &res, &err) == CODEC_RANGE);
  CHECK_STR(err.msg,
            "shapes [2,3] and [3,2] differ (arrays combine when their shapes are equal or one is a () scalar)");
  CHECK(am_binary_plan(KN_SUB, &b.a, &b.a, &res, &err) == CODEC_RANGE);
  CHECK_STR(err.msg, "boolean subtract is not supported, as in NumPy (cast to an integer type first)");
  buf_free(&a.file);
  buf_free(&b.file);
  buf_free(&s.file);
}

TEST(arraymath_reshape_rules) {
  int64_t s23[2] = {2, 3}, want1[3] = {3, -1, 1}, bad[2] = {4, -1}, two[2] = {-1, -1}, z[2] = {-1, 0};
  int64_t same[3] = {2, 1, 3};
  float d[6] = {0};
  test_array a;
  npy_array res;
  codec_err err;
  CHECK(make_array(&a, dt_native(DT_FLOAT32), 2, s23, 1, d, 24));
  CHECK(am_reshape_plan(&a.a, 3, want1, &res, &err) == CODEC_OK);
  CHECK(res.shape[1] == 2 && !res.fortran_order); /* a copy into C order */
  CHECK(am_reshape_plan(&a.a, 3, same, &res, &err) == CODEC_OK);
  CHECK(res.fortran_order); /* NumPy keeps the Fortran view when only unit dims change */
  CHECK(am_reshape_plan(&a.a, 2, bad, &res, &err) == CODEC_RANGE);
  CHECK_STR(err.msg, "cannot reshape an array of 6 elements into shape [4,-1]");
  CHECK(am_reshape_plan(&a.a, 2, two, &res, &err) == CODEC_RANGE);
  CHECK_STR(err.msg, "only one dimension can be -1");
  CHECK(am_reshape_plan(&a.a, 2, z, &res, &err) == CODEC_RANGE);
  buf_free(&a.file);
}

TEST(arraymath_cast_error_names_the_c_index) {
  /* Fortran 2x2 [[1, 2], [nan, 4]]: the NaN is element 2 in C order though
  ** it is stored second. */
  int64_t s22[2] = {2, 2};
  double f[4] = {1, NAN, 2, 4};
  unsigned char *scratch = am_scratch(), out[4];
  test_array a;
  npy_array res;
  codec_err err;
  CHECK(scratch != NULL);
  CHECK(make_array(&a, dt_native(DT_FLOAT64), 2, s22, 1, f, sizeof(f)));
  am_cast_plan(&a.a, dt_native(DT_INT8), &res);
  CHECK(res.fortran_order && res.nbytes == 4);
  CHECK(am_cast_run(&a.a, &res, out, scratch, &err) == CODEC_RANGE);
  CHECK_STR(err.msg, "cannot cast nan to int8 (element 2)");
  buf_free(&a.file);
  codec_free(scratch);
}

TEST(arraymath_reduce_integers_exactly) {
  int64_t shape[1] = {4};
  int64_t v[4] = {INT64_MIN, 5, INT64_MAX, -7};
  uint64_t u[2] = {UINT64_MAX, 3};
  unsigned char *scratch = am_scratch();
  test_array a;
  am_stats st;
  CHECK(scratch != NULL);
  CHECK(make_array(&a, dt_native(DT_INT64), 1, shape, 0, v, sizeof(v)));
  am_reduce(&a.a, AM_MINMAX | AM_SUM, &st, scratch);
  CHECK(st.min_kind == DT_KIND_INT && st.imin == INT64_MIN && st.imax == INT64_MAX);
  buf_free(&a.file);
  shape[0] = 2;
  CHECK(make_array(&a, dt_native(DT_UINT64), 1, shape, 0, u, sizeof(u)));
  am_reduce(&a.a, AM_MINMAX, &st, scratch);
  CHECK(st.min_kind == DT_KIND_UINT && st.umin == 3 && st.umax == UINT64_MAX);
  buf_free(&a.file);
  shape[0] = 0;
  CHECK(make_array(&a, dt_native(DT_FLOAT32), 1, shape, 0, u, 0));
  am_reduce(&a.a, AM_MINMAX | AM_SUM | AM_STD, &st, scratch);
  CHECK(st.min_kind == 0 && st.count == 0 && st.sum_re == 0);
  buf_free(&a.file);
  codec_free(scratch);
}

/* am_compare: its norms are am_reduce's bit for bit, its dot am_dot's, and
** a Fortran array compared with the same values in C order differs nowhere. */
TEST(arraymath_compare_one_pass) {
  enum { N = 5 * 615 }; /* three blocks and a part */
  int64_t shape[2] = {N / 5, 5}, c_shape[2];
  float *x = codec_malloc(N * sizeof(float)), *xf = codec_malloc(N * sizeof(float));
  double *y = codec_malloc(N * sizeof(double)), ref = 0;
  unsigned char *scratch = am_scratch();
  test_array a, b, f;
  am_compare_result r;
  am_dot_result d;
  am_stats sa, sb;
  codec_err err;
  uint64_t state = 88172645463325252ull, i, k;
  CHECK(x && xf && y && scratch);
  for (i = 0; i < N; i++) {
    state ^= state << 13, state ^= state >> 7, state ^= state << 17;
    x[i] = (float)((double)(state >> 11) / 9007199254740992.0 - 0.5);
    y[i] = i % 7 ? (double)x[i] : (double)x[i] + 0.25;
    ref = fmax(ref, fabs((double)x[i] - y[i]));
  }
  CHECK(make_array(&a, dt_native(DT_FLOAT32), 2, shape, 0, x, N * sizeof(float)));
  CHECK(make_array(&b, dt_native(DT_FLOAT64), 2, shape, 0, y, N * sizeof(double)));
  am_compare(&a.a, &b.a, NULL, &r, scratch);
  am_reduce(&a.a, AM_SUMSQ, &sa, scratch);
  am_reduce(&b.a, AM_SUMSQ, &sb, scratch);
  CHECK(am_dot(&a.a, &b.a, 0, &d, scratch, &err) == CODEC_OK);
  CHECK(r.sumsq_a == sa.sumsq && r.sumsq_b == sb.sumsq && r.dot == d.re);
  CHECK(r.changed == (N + 6) / 7 && r.maxabs_diff == ref && !r.maxabs_nan && !r.is_complex);
  CHECK(fabs(r.sum_diff + 0.25 * (double)r.changed) < 1e-9);
  CHECK(fabs(r.sumsq_diff - 0.0625 * (double)r.changed) < 1e-9);
  /* the same values stored in Fortran order */
  c_shape[0] = shape[0], c_shape[1] = shape[1];
  for (i = 0; i < (uint64_t)shape[0]; i++)
    for (k = 0; k < (uint64_t)shape[1]; k++) xf[k * (uint64_t)shape[0] + i] = x[i * (uint64_t)shape[1] + k];
  CHECK(make_array(&f, dt_native(DT_FLOAT32), 2, c_shape, 1, xf, N * sizeof(float)));
  am_compare(&f.a, &a.a, NULL, &r, scratch);
  CHECK(r.changed == 0 && r.sumsq_diff == 0 && r.maxabs_diff == 0 && r.sumsq_a == r.sumsq_b);
  buf_free(&a.file);
  buf_free(&b.file);
  buf_free(&f.file);
  codec_free(x);
  codec_free(xf);
  codec_free(y);
  codec_free(scratch);
}

TEST(arraymath_results_as_record_items) {
  /* A computed array written as an item parses back as a valid record whose
  ** array is the .npy numpy.save would write. */
  int64_t shape[2] = {2, 2};
  float f[4] = {1, 2, 3, 4};
  unsigned char *scratch = am_scratch(), *dst;
  codec_span key = {(const unsigned char *)"fc.w", 4};
  test_array a;
  npy_array res, back;
  record_t rec;
  buf_t out;
  codec_err err;
  CHECK(scratch != NULL);
  CHECK(make_array(&a, dt_native(DT_FLOAT32), 2, shape, 0, f, sizeof(f)));
  am_scale_plan(&a.a, &res);
  buf_init(&out, UINT64_MAX);
  CHECK(array_result_size(key, &res) > res.nbytes);
  dst = array_begin_result(&out, key, &res);
  CHECK(dst != NULL);
  am_scale_run(&a.a, 0.5, &res, dst, scratch);
  CHECK(out.n == array_result_size(key, &res));
  record_init(&rec);
  CHECK(record_parse(&rec, out.p, out.n, &err) == CODEC_OK && rec.n == 1);
  CHECK(npy_parse(rec.items[0].data.p, rec.items[0].data.n, &back, &err) == CODEC_OK);
  CHECK(back.dtype.type == DT_FLOAT32 && back.numel == 4);
  {
    float g[4];
    memcpy(g, back.data, 16);
    CHECK(g[0] == 0.5f && g[3] == 2.0f);
  }
  CHECK(rec.items[0].dtype.n == 7 && memcmp(rec.items[0].dtype.p, "float32", 7) == 0);
  record_clear(&rec);
  buf_free(&out);
  buf_free(&a.file);
  codec_free(scratch);
}

TEST(arraymath_scratch_allocation_failure) {
  unit_fail_alloc_after(0);
  CHECK(am_scratch() == NULL);
  CHECK(unit_alloc_failed());
}

/* am_rows_mean against ar_mean's own steps over whole arrays (sql_aggregate.c:
** the first row kept, weighted when the second comes as keep * acc + w * x,
** then acc + w * x, a single row weighted at the end; then kn_div_store), on
** values of many magnitudes with NaN and infinities, float32 and float64,
** 1 to 5 rows, lengths around the block size, one and two threads. */
TEST(arraymath_rows_mean_is_ar_means_arithmetic) {
  enum { ROWS = 5, LEN = 3 * KN_BLOCK + 7 };
  static double x64[ROWS][LEN], acc[LEN];
  static float x32[ROWS][LEN];
  static unsigned char got[LEN * 8], want[LEN * 8];
  const unsigned char *rows[ROWS];
  double w[ROWS] = {3, 0.1, -2.5, 7.25, 1e-3}, total;
  unsigned char *scratch = am_scratch();
  int before = pool_configure(0, 0), th, f, nrows, r, lens[] = {1, KN_BLOCK - 1, KN_BLOCK, LEN};
  uint64_t min_before = pool_min_elements(), e;
  size_t li;
  unsigned seed = 12345;
  int made = 1, same = 1; /* checked after the cleanup: CHECK returns */
  CHECK(scratch != NULL);
  for (r = 0; r < ROWS; r++)
    for (e = 0; e < LEN; e++) {
      seed = seed * 1103515245u + 12345u;
      x64[r][e] = ((double)(seed >> 8) / 16777216.0 - 0.5) * pow(10.0, (double)((int)(seed % 61) - 30));
      if (e == 17 && r == 1) x64[r][e] = NAN;
      if (e == 40 && r == 2) x64[r][e] = INFINITY;
      x32[r][e] = (float)x64[r][e];
    }
  for (th = 1; th <= 2; th++) {
    pool_configure(th, 1);
    for (f = 0; f < 2; f++) {
      dt_type t = f ? DT_FLOAT64 : DT_FLOAT32;
      size_t size = f ? 8 : 4;
      for (nrows = 1; nrows <= ROWS; nrows++)
        for (li = 0; li < sizeof(lens) / sizeof(lens[0]); li++) {
          int64_t shape[1];
          test_array ta;
          uint64_t n = (uint64_t)lens[li];
          shape[0] = (int64_t)n;
          total = 0;
          for (r = 0; r < nrows; r++) {
            rows[r] = f ? (const unsigned char *)x64[r] : (const unsigned char *)x32[r];
            made &= make_array(&ta, dt_native(t), 1, shape, 0, rows[r], n * size);
            if (r == 0)
              am_axpy_keep(&ta.a, 0, 1.0, KN_ACC_SET, 1.0, acc, scratch);
            else if (r == 1)
              am_axpy_keep(&ta.a, 0, w[1], KN_ACC_KEEP, w[0], acc, scratch);
            else
              am_axpy(&ta.a, 0, w[r], acc, 0, scratch);
            buf_free(&ta.file);
            total += w[r];
          }
          if (nrows == 1)
            for (e = 0; e < n; e++) acc[e] = w[0] * acc[e];
          kn_div_store(t, acc, 0, total, want, (size_t)n);
          am_rows_mean(t, rows, w, (size_t)nrows, total, t, got, n, scratch);
          same &= memcmp(got, want, (size_t)n * size) == 0;
        }
    }
  }
  pool_configure(before, min_before);
  codec_free(scratch);
  CHECK(made);
  CHECK(same);
}
