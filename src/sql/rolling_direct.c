/* SPDX-License-Identifier: Apache-2.0 */
/*
** rolling_direct.c — ar_rolling_mean's direct path (see rolling_direct.h).
**
** Stepping ar_mean over a frame of k rows adds each row into an accumulator
** of doubles twice the model's size, so every frame sends that accumulator
** through memory k times, and the result is then copied once more by SQLite
** into the table's column. Here the frame's rows are read at once, a block
** of elements at a time (am_rows_mean: the block's accumulator stays in L1),
** and the result is written once, straight into the BLOB handed to SQLite.
** The operations on each element are ar_mean's, in its order (w1 * x1, then
** + w * x row by row, then / the sum of the weights summed in row order,
** rounded once), so the bits are ar_mean's; tests/sql/ar_rolling.sql and
** tests/python/test_rolling.py compare the two on every frame.
**
** Anything else (a malformed or mismatched record, a weight ar_mean refuses,
** float16, integers, complex, big-endian or Fortran-ordered arrays, empty
** arrays) is declined before anything is written, and ar_mean itself runs,
** with its messages. Running out of memory here declines too: ar_mean then
** tries with its own allocations and reports as it does.
*/
#include "sql/rolling_direct.h"
SQLITE_EXTENSION_INIT3

#include <math.h>
#include <string.h>

#include "codec/array.h"
#include "codec/record.h"
#include "math/arraymath.h"

typedef struct direct_frame {
  record_t first;             /* the first non-NULL record: the keys and their order */
  npy_array *arrays;          /* its arrays */
  const unsigned char **ptrs; /* ptrs[k * nr + r]: key k's payload in row r */
  double *w, total;           /* weights of the non-NULL rows, their sum in row order */
  int nr, nk;
} direct_frame;

static void frame_free(direct_frame *f) {
  record_clear(&f->first);
  codec_free(f->arrays);
  codec_free(f->ptrs);
  codec_free(f->w);
}

/* An array the direct path computes as ar_mean does. */
static int plain_float(const npy_array *a) {
  return (a->dtype.type == DT_FLOAT32 || a->dtype.type == DT_FLOAT64) && !a->dtype.big && !am_is_fortran(a) &&
         a->numel > 0;
}

/* Row r's record (in bytes p[0..n), r >= 1) matches the first record: same
** keys in the same order, arrays of the same dtype and shape; its payloads go
** to ptrs. 1 when it does. */
static int frame_row(direct_frame *f, int r, const unsigned char *p, uint64_t n) {
  record_t rec;
  codec_err err;
  npy_array a;
  int k, ok = 0;
  record_init(&rec);
  if (record_parse(&rec, p, n, &err) != CODEC_OK || rec.n != f->nk) goto done;
  for (k = 0; k < f->nk; k++) {
    const codec_span *key = &f->first.items[k].key, *got = &rec.items[k].key;
    const npy_array *want = &f->arrays[k];
    if (got->n != key->n || (key->n && memcmp(got->p, key->p, (size_t)key->n)) ||
        array_open(&rec.items[k], k, &a, &err) != CODEC_OK || !plain_float(&a) || a.dtype.type != want->dtype.type ||
        a.ndim != want->ndim || memcmp(a.shape, want->shape, sizeof(int64_t) * (size_t)a.ndim))
      goto done;
    f->ptrs[(size_t)k * (size_t)f->nr + (size_t)r] = a.data;
  }
  ok = 1;
done:
  record_clear(&rec);
  return ok;
}

/* Read the frame's rows into f; 1 when the direct path can take it. */
static int frame_read(direct_frame *f, const rolling_in *in, int n) {
  codec_err err;
  int i, k, r;
  for (i = 0; i < n; i++) {
    if (in[i].rec_type == SQLITE_NULL) continue; /* ar_mean skips it, weight and all */
    if (in[i].rec_type != SQLITE_BLOB) return 0;
    if ((in[i].w_type != SQLITE_INTEGER && in[i].w_type != SQLITE_FLOAT) || !isfinite(in[i].w)) return 0;
    f->nr++;
  }
  if (!f->nr || !(f->w = codec_malloc((uint64_t)f->nr * sizeof(double)))) return 0;
  for (i = 0, r = 0; i < n; i++) {
    if (in[i].rec_type == SQLITE_NULL) continue;
    f->w[r++] = in[i].w;
    f->total += in[i].w; /* ar_mean's total_weight, summed in the same order */
    if (r == 1 && record_parse(&f->first, in[i].p, in[i].n, &err) != CODEC_OK) return 0;
  }
  if (!(f->total > 0) || (f->nk = f->first.n) == 0) return 0;
  f->arrays = codec_malloc((uint64_t)f->nk * sizeof(npy_array));
  f->ptrs = codec_malloc((uint64_t)f->nk * (uint64_t)f->nr * sizeof(*f->ptrs));
  if (!f->arrays || !f->ptrs) return 0;
  for (k = 0; k < f->nk; k++) {
    if (array_open(&f->first.items[k], k, &f->arrays[k], &err) != CODEC_OK || !plain_float(&f->arrays[k])) return 0;
    f->ptrs[(size_t)k * (size_t)f->nr] = f->arrays[k].data; /* row 0 is the first record */
  }
  for (i = 0, r = 0; i < n; i++) {
    if (in[i].rec_type == SQLITE_NULL) continue;
    if (r > 0 && !frame_row(f, r, in[i].p, in[i].n)) return 0;
    r++;
  }
  return 1;
}

/* Key k's result array: the rows' dtype and shape, native, C order. */
static void frame_result(const direct_frame *f, int k, npy_array *res) {
  const npy_array *a = &f->arrays[k];
  memset(res, 0, sizeof(*res));
  res->dtype = dt_native((dt_type)a->dtype.type);
  res->ndim = a->ndim;
  memcpy(res->shape, a->shape, sizeof(int64_t) * (size_t)a->ndim);
  res->numel = a->numel;
  res->nbytes = a->nbytes;
}

int rolling_direct_mean(sqlite3_context *ctx, const rolling_in *in, int n) {
  direct_frame f;
  unsigned char *scratch = NULL;
  uint64_t total = 0;
  buf_t out;
  npy_array res;
  int k, taken = 0;
  memset(&f, 0, sizeof f);
  record_init(&f.first);
  buf_init(&out, 0);
  if (!frame_read(&f, in, n)) goto done;
  for (k = 0; k < f.nk; k++) {
    frame_result(&f, k, &res);
    if (size_add(total, array_result_size(f.first.items[k].key, &res), &total)) goto done;
  }
  if (total > sql_limit(ctx)) goto done; /* ar_mean reports it */
  sql_buf_init(ctx, &out);
  if (buf_reserve(&out, total) != CODEC_OK || !(scratch = am_scratch())) goto done;
  for (k = 0; k < f.nk; k++) {
    unsigned char *dst;
    frame_result(&f, k, &res);
    dst = array_begin_result(&out, f.first.items[k].key, &res); /* reserved above */
    am_rows_mean((dt_type)res.dtype.type, f.ptrs + (size_t)k * (size_t)f.nr, f.w, (size_t)f.nr, f.total,
                 (dt_type)res.dtype.type, dst, res.numel, scratch);
  }
  sql_result_buf(ctx, &out, 0);
  taken = 1;
done:
  if (!taken) buf_free(&out);
  codec_free(scratch);
  frame_free(&f);
  return taken;
}
