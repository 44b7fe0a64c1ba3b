/* SPDX-License-Identifier: Apache-2.0 */
/*
** sql_robust.c — Byzantine-robust aggregation and differential privacy, as
** Flower's strategies do them:
**
**   ar_krum(rec, weight, f [, k])   -- Krum (k = 1), MultiKrum (k > 1)
**   ar_krum_scores(rec, f)          -- every row's Krum score, as JSON
**   ar_bulyan(rec, f)               -- Bulyan
**   ar_clip_norm(update, clip)      -- DP fixed clipping of one update
**   ar_add_noise(rec, stddev [, seed])  -- DP Gaussian noise
**
** The aggregates follow sql_aggregate.c's rules: the first non-NULL record
** fixes the keys, dtypes and shapes; later ones must match (errors name the
** key and rows); NULL records are skipped; rows are counted from 0, NULL
** ones included. They need every row at the end (the distances are over all
** pairs), so they keep each row's arrays (native byte order, C order), at
** most SQLITE_LIMIT_LENGTH bytes of them.
**
** Distances are computed block by block: a block of every row's elements is
** converted to double once, and all pairwise partial sums are taken while it
** is in cache, so each row is read once per block, not once per pair.
*/
#include "sql/sql_math.h"
#include "sql/sql_modules.h"
SQLITE_EXTENSION_INIT3

#include <math.h>
#include <stdarg.h>
#include <string.h>

#include "codec/array.h"
#include "codec/json.h"
#include "codec/keyset.h"
#include "math/robust.h"

enum { RB_KRUM, RB_SCORES, RB_BULYAN };

typedef struct rb_key {
  codec_span key;
  uint64_t key_at; /* offset of the key in st->arena */
  dt_type type;
  int ndim;
  int64_t shape[NPY_MAX_DIMS];
  uint64_t numel, at; /* at: offset of its slice in a kept row */
} rb_key;

typedef struct rb_state {
  int started, failed;
  int64_t row, cur, first_row;
  uint64_t nrows;
  int nkeys;
  rb_key *keys;
  buf_t arena; /* key bytes */
  keyset_t index;
  unsigned char *scratch;
  buf_t kept;    /* every row's arrays, one row after another */
  buf_t weights; /* one double per kept row */
  uint64_t row_bytes;
  sqlite3_int64 f, k;
} rb_state;

static void rb_free(rb_state *st) {
  codec_free(st->keys);
  buf_free(&st->arena);
  keyset_free(&st->index);
  codec_free(st->scratch);
  buf_free(&st->kept);
  buf_free(&st->weights);
  st->keys = NULL;
  st->scratch = NULL;
}

/* Report an error once; later steps do nothing (as agg_fail in
** sql_aggregate.c). Returns 0. */
static int rb_fail(sqlite3_context *ctx, rb_state *st, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static int rb_fail(sqlite3_context *ctx, rb_state *st, const char *fmt, ...) {
  char msg[400];
  va_list ap;
  va_start(ap, fmt);
  sqlite3_vsnprintf(sizeof(msg), msg, fmt, ap);
  va_end(ap);
  st->failed = 1;
  sql_error(ctx, "%s", msg);
  return 0;
}

static int rb_nomem(sqlite3_context *ctx, rb_state *st) {
  st->failed = 1;
  sqlite3_result_error_nomem(ctx);
  return 0;
}

static const char *quote(char *q, codec_span key) { return codec_quote(q, CODEC_QUOTE_MAX, key.p, key.n); }

/* An INTEGER argument that must be the same in every row. */
static int rb_int_arg(sqlite3_context *ctx, rb_state *st, sqlite3_value *v, const char *what, sqlite3_int64 *slot) {
  sqlite3_int64 x;
  int t = sqlite3_value_type(v);
  if (t != SQLITE_INTEGER)
    return rb_fail(ctx, st, t == SQLITE_NULL ? "%s is NULL in row %lld" : "%s must be an integer (row %lld)", what,
                   (long long)st->cur);
  x = sqlite3_value_int64(v);
  if (st->nrows && x != *slot)
    return rb_fail(ctx, st, "%s must be the same in every row (%lld in row %lld, %lld before)", what, (long long)x,
                   (long long)st->cur, (long long)*slot);
  *slot = x;
  return 1;
}

static int rb_record(sqlite3_context *ctx, rb_state *st, sqlite3_value *v, record_t *rec) {
  codec_span blob;
  codec_err err;
  int rc;
  if (sqlite3_value_type(v) != SQLITE_BLOB) {
    sql_blob_type_problem(&err, v, 0, "a record");
    return rb_fail(ctx, st, "row %lld: %s", (long long)st->cur, err.msg);
  }
  if (sql_blob_span(v, &blob) != SQLITE_OK) return rb_nomem(ctx, st);
  if ((rc = record_parse(rec, blob.p, blob.n, &err)) != CODEC_OK) {
    if (rc == CODEC_NOMEM) return rb_nomem(ctx, st);
    return rb_fail(ctx, st, "row %lld: %s", (long long)st->cur, err.msg);
  }
  return 1;
}

/* The first record fixes the layout. */
static int rb_layout(sqlite3_context *ctx, rb_state *st, const record_t *rec, const npy_array *arrays) {
  uint64_t at = 0, bytes;
  int i;
  char q[CODEC_QUOTE_MAX], name[DT_NAME_MAX];
  st->nkeys = rec->n;
  st->keys = codec_malloc((uint64_t)(rec->n ? rec->n : 1) * sizeof(rb_key));
  st->scratch = am_scratch();
  if (!st->keys || !st->scratch) return rb_nomem(ctx, st);
  for (i = 0; i < rec->n; i++) {
    rb_key *k = &st->keys[i];
    const npy_array *a = &arrays[i];
    k->key = rec->items[i].key;
    if (dt_kind((dt_type)a->dtype.type) == DT_KIND_COMPLEX) {
      dt_name(a->dtype, name);
      return rb_fail(ctx, st, "key '%s': complex arrays are not supported (dtype %s)", quote(q, k->key), name);
    }
    k->key_at = st->arena.n;
    buf_append(&st->arena, k->key.p, k->key.n);
    k->type = (dt_type)a->dtype.type;
    k->ndim = a->ndim;
    memcpy(k->shape, a->shape, sizeof(int64_t) * (size_t)a->ndim);
    k->numel = a->numel;
    k->at = at;
    if (size_mul(a->numel, dt_size(k->type), &bytes) || size_add(at, bytes, &at)) {
      st->failed = 1;
      sqlite3_result_error_toobig(ctx);
      return 0;
    }
  }
  if (st->arena.rc) return rb_nomem(ctx, st);
  for (i = 0; i < st->nkeys; i++)
    st->keys[i].key.p = st->arena.p ? st->arena.p + st->keys[i].key_at : (const unsigned char *)"";
  st->row_bytes = at;
  buf_init(&st->kept, sql_limit(ctx)); /* the rows kept are capped like ar_median's */
  return 1;
}

static int rb_key_position(sqlite3_context *ctx, rb_state *st, const record_item *it, int i, int *pos) {
  int k;
  if (i < st->nkeys && st->keys[i].key.n == it->key.n && memcmp(st->keys[i].key.p, it->key.p, (size_t)it->key.n) == 0) {
    *pos = i;
    return 1;
  }
  if (!st->index.cap) {
    for (k = 0; k < st->nkeys; k++)
      if (keyset_put(&st->index, st->keys[k].key.p, st->keys[k].key.n, k)) return rb_nomem(ctx, st);
  }
  *pos = keyset_get(&st->index, it->key.p, it->key.n);
  return 1;
}

static void rb_step(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  rb_state *st = sqlite3_aggregate_context(ctx, sizeof(*st));
  int op = SQL_OP(ctx), i, rc;
  npy_array *arrays = NULL;
  unsigned char *kept = NULL;
  double w = 1;
  record_t rec;
  codec_err err;
  char q[CODEC_QUOTE_MAX], s1[80], s2[80], n1[DT_NAME_MAX];
  if (!st) {
    sqlite3_result_error_nomem(ctx);
    return;
  }
  if (!st->started) {
    st->started = 1;
    buf_init(&st->arena, UINT64_MAX);
    keyset_init(&st->index);
    buf_init(&st->kept, UINT64_MAX);
    buf_init(&st->weights, UINT64_MAX);
  }
  st->cur = st->row++;
  if (st->failed || sqlite3_value_type(argv[0]) == SQLITE_NULL) return;
  record_init(&rec);
  if (!rb_record(ctx, st, argv[0], &rec)) goto fail;
  if (op == RB_KRUM) {
    int t = sqlite3_value_type(argv[1]);
    if (t != SQLITE_INTEGER && t != SQLITE_FLOAT) {
      rb_fail(ctx, st, t == SQLITE_NULL ? "weight is NULL in row %lld" : "weight must be a number (row %lld)",
              (long long)st->cur);
      goto fail;
    }
    w = sqlite3_value_double(argv[1]);
    if (!isfinite(w)) {
      rb_fail(ctx, st, "weight must be finite (row %lld)", (long long)st->cur);
      goto fail;
    }
  }
  if (!rb_int_arg(ctx, st, argv[op == RB_KRUM ? 2 : 1], "f", &st->f)) goto fail;
  if (st->f < 0) {
    rb_fail(ctx, st, "f (the number of malicious clients) must be >= 0, got %lld", (long long)st->f);
    goto fail;
  }
  if (op == RB_KRUM) {
    if (argc > 3 && !rb_int_arg(ctx, st, argv[3], "k", &st->k)) goto fail;
    if (argc <= 3) st->k = 1;
    if (st->k < 1) {
      rb_fail(ctx, st, "k (the number of rows to select) must be >= 1, got %lld", (long long)st->k);
      goto fail;
    }
  }
  if (!(arrays = codec_malloc((uint64_t)(rec.n ? rec.n : 1) * sizeof(npy_array)))) goto nomem;
  for (i = 0; i < rec.n; i++) {
    if ((rc = array_open(&rec.items[i], i, &arrays[i], &err)) != CODEC_OK) {
      if (rc == CODEC_NOMEM) goto nomem;
      rb_fail(ctx, st, "row %lld: %s", (long long)st->cur, err.msg);
      goto fail;
    }
  }
  if (!st->nrows) {
    st->first_row = st->cur;
    if (!rb_layout(ctx, st, &rec, arrays)) goto fail;
  }
  if (st->nrows >= (uint64_t)INT32_MAX) {
    rb_fail(ctx, st, "more than %d rows", INT32_MAX);
    goto fail;
  }
  if (st->row_bytes && !(kept = buf_extend(&st->kept, st->row_bytes))) {
    if (st->kept.rc != CODEC_TOOBIG) goto nomem;
    rb_fail(ctx, st, "the rows kept would exceed SQLITE_LIMIT_LENGTH (%llu bytes) at row %lld",
            (unsigned long long)st->kept.limit, (long long)st->cur);
    goto fail;
  }
  for (i = 0; i < rec.n; i++) {
    const record_item *it = &rec.items[i];
    const npy_array *a = &arrays[i];
    const rb_key *key;
    int k;
    if (!rb_key_position(ctx, st, it, i, &k)) goto fail;
    if (k < 0) {
      rb_fail(ctx, st, "key '%s' is in row %lld but not in row %lld", quote(q, it->key), (long long)st->cur,
              (long long)st->first_row);
      goto fail;
    }
    key = &st->keys[k];
    if (a->dtype.type != key->type) {
      dt_name(a->dtype, n1);
      rb_fail(ctx, st, "key '%s' has dtype %s in row %lld but %s in row %lld", quote(q, key->key), n1,
              (long long)st->cur, dt_type_name(key->type), (long long)st->first_row);
      goto fail;
    }
    if (a->ndim != key->ndim || memcmp(a->shape, key->shape, sizeof(int64_t) * (size_t)a->ndim)) {
      rb_fail(ctx, st, "key '%s' has shape %s in row %lld but %s in row %lld", quote(q, key->key),
              am_shape_str(s1, sizeof(s1), a->ndim, a->shape), (long long)st->cur,
              am_shape_str(s2, sizeof(s2), key->ndim, key->shape), (long long)st->first_row);
      goto fail;
    }
    if (kept) am_copy_native(a, 0, kept + key->at, st->scratch);
  }
  if (rec.n != st->nkeys) {
    for (i = 0; i < st->nkeys; i++) {
      if (record_find(&rec, st->keys[i].key.p, st->keys[i].key.n) < 0) {
        rb_fail(ctx, st, "key '%s' is missing from row %lld", quote(q, st->keys[i].key), (long long)st->cur);
        goto fail;
      }
    }
  }
  if (buf_append(&st->weights, &w, sizeof(w)), st->weights.rc) goto nomem;
  st->nrows++;
  codec_free(arrays);
  record_clear(&rec);
  return;
nomem:
  rb_nomem(ctx, st);
fail:
  st->failed = 1;
  codec_free(arrays);
  record_clear(&rec);
}

/* --- results --------------------------------------------------------------- */

/* Rows per distance block: every row's block of doubles stays in L2. */
static size_t block_len(uint64_t n) {
  size_t b = (size_t)(65536 / (n ? n : 1));
  if (b < 8) b = 8;
  return b > KN_BLOCK ? KN_BLOCK : b;
}

/* Krum scores of every kept row into scores[n]. CODEC_OK or CODEC_NOMEM. */
static int rb_scores(rb_state *st, double *scores) {
  uint64_t n = st->nrows, cells, e, r;
  size_t block = block_len(n), m;
  double *dist, *cols;
  int i;
  if (size_mul(n, n, &cells) || size_mul(cells, sizeof(double), &cells)) return CODEC_NOMEM;
  dist = codec_malloc(cells ? cells : 1);
  cols = codec_malloc((uint64_t)block * n * sizeof(double) + n * sizeof(double));
  if (!dist || !cols) {
    codec_free(dist);
    codec_free(cols);
    return CODEC_NOMEM;
  }
  memset(dist, 0, (size_t)cells);
  for (i = 0; i < st->nkeys; i++) {
    const rb_key *k = &st->keys[i];
    size_t size = dt_size(k->type);
    for (e = 0; e < k->numel; e += m) {
      m = k->numel - e < block ? (size_t)(k->numel - e) : block;
      for (r = 0; r < n; r++) kn_to_f64(k->type, st->kept.p + r * st->row_bytes + k->at + e * size, cols + r * block, m);
      rb_pair_sqdist(cols, (size_t)n, block, m, dist);
    }
  }
  rb_krum_scores(dist, (size_t)n, (size_t)st->f, scores, cols);
  codec_free(dist);
  codec_free(cols);
  return CODEC_OK;
}

/* The result array of key k in type out. */
static void key_result(const rb_key *k, dt_type out, npy_array *res) {
  memset(res, 0, sizeof(*res));
  res->dtype = dt_native(out);
  res->ndim = k->ndim;
  memcpy(res->shape, k->shape, sizeof(int64_t) * (size_t)k->ndim);
  res->numel = k->numel;
  res->nbytes = k->numel * dt_size(out); /* bounded by memory already held, at most 8x */
}

static dt_type bulyan_type(dt_type t) { return dt_kind(t) == DT_KIND_FLOAT ? t : DT_FLOAT64; }

/* The selected rows (sel[0..ns), in score order) combined into out: FedAvg
** with weights w / total (Krum), or Bulyan's rule (beta). */
static int rb_combine(rb_state *st, int op, const size_t *sel, size_t ns, double total, size_t beta, buf_t *out) {
  const double *w = (const double *)(const void *)st->weights.p;
  size_t block = block_len(ns), m, j;
  uint64_t e, s;
  double *tmp = codec_malloc((uint64_t)block * (ns + 4) * sizeof(double) + ns * sizeof(double));
  int i;
  if (!tmp) return CODEC_NOMEM;
  for (i = 0; i < st->nkeys && !out->rc; i++) {
    const rb_key *k = &st->keys[i];
    dt_type ot = op == RB_KRUM ? rb_fedavg_type(k->type) : bulyan_type(k->type);
    size_t size = dt_size(k->type), osize = dt_size(ot);
    npy_array res;
    unsigned char *dst;
    key_result(k, ot, &res);
    if (!(dst = array_begin_result(out, k->key, &res))) break;
    for (e = 0; e < k->numel; e += m) {
      if (op == RB_KRUM) {
        m = k->numel - e < block ? (size_t)(k->numel - e) : block;
        /* Flower's aggregate_arrayrecords: rows in the order selected. */
        for (s = 0; s < ns; s++)
          rb_fedavg_step(k->type, st->kept.p + sel[s] * st->row_bytes + k->at + e * size, w[sel[s]] / total,
                         dst + e * osize, m, s == 0, tmp);
      } else {
        double *cols = tmp, *vals = tmp + (size_t)block * ns, *resb = vals + ns;
        m = k->numel - e < block ? (size_t)(k->numel - e) : block;
        for (s = 0; s < ns; s++) kn_to_f64(k->type, st->kept.p + sel[s] * st->row_bytes + k->at + e * size, cols + s * block, m);
        for (j = 0; j < m; j++) {
          for (s = 0; s < ns; s++) vals[s] = cols[s * block + j];
          resb[j] = rb_bulyan_coord(vals, ns, beta, k->type);
        }
        kn_from_f64(ot, resb, dst + e * osize, m);
      }
    }
  }
  codec_free(tmp);
  return out->rc;
}

static uint64_t result_size(const rb_state *st, int op) {
  uint64_t total = 0;
  int i;
  for (i = 0; i < st->nkeys; i++) {
    npy_array res;
    const rb_key *k = &st->keys[i];
    key_result(k, op == RB_KRUM ? rb_fedavg_type(k->type) : bulyan_type(k->type), &res);
    if (size_add(total, array_result_size(k->key, &res), &total)) return UINT64_MAX;
  }
  return total;
}

static void rb_final(sqlite3_context *ctx) {
  rb_state *st = sqlite3_aggregate_context(ctx, 0);
  int op = SQL_OP(ctx);
  double *scores = NULL;
  size_t *order = NULL, ns, beta = 0, s;
  uint64_t n;
  double total = 0;
  buf_t out;
  buf_init(&out, 0);
  if (!st) return;
  if (st->failed || !st->nrows) goto done;
  n = st->nrows;
  if ((uint64_t)st->f >= n) {
    sql_error(ctx, "f = %lld malicious clients needs more than %lld rows", (long long)st->f, (long long)n);
    goto done;
  }
  if (op == RB_KRUM && (uint64_t)st->k > n) {
    sql_error(ctx, "k = %lld rows to select, but only %lld rows", (long long)st->k, (long long)n);
    goto done;
  }
  if (op == RB_BULYAN && n < 4 * (uint64_t)st->f + 3) {
    sql_error(ctx, "Bulyan needs at least 4f + 3 = %lld rows for f = %lld, got %lld", (long long)(4 * st->f + 3),
              (long long)st->f, (long long)n);
    goto done;
  }
  scores = codec_malloc(n * sizeof(double));
  order = codec_malloc(n * sizeof(size_t));
  if (!scores || !order || rb_scores(st, scores) != CODEC_OK) {
    sqlite3_result_error_nomem(ctx);
    goto done;
  }
  if (op == RB_SCORES) {
    sql_buf_init(ctx, &out);
    buf_append(&out, "[", 1);
    for (s = 0; s < n; s++) {
      if (s) buf_append(&out, ",", 1);
      if (isfinite(scores[s])) json_put_float(&out, scores[s], 64);
      else buf_append(&out, "null", 4);
    }
    buf_append(&out, "]", 1);
    sql_result_buf(ctx, &out, 1);
    goto done;
  }
  rb_argsort(scores, (size_t)n, order);
  if (op == RB_KRUM) {
    const double *w = (const double *)(const void *)st->weights.p;
    ns = (size_t)st->k;
    for (s = 0; s < ns; s++) total += w[order[s]]; /* Python's sum, in the order selected */
    if (!(total > 0)) {
      sql_error(ctx, "total weight of the %zu selected rows is %g; it must be positive", ns, total);
      goto done;
    }
  } else {
    ns = (size_t)(n - 2 * (uint64_t)st->f); /* theta */
    beta = ns - 2 * (size_t)st->f;
  }
  {
    uint64_t size = result_size(st, op);
    if (size > sql_limit(ctx)) {
      sqlite3_result_error_toobig(ctx);
      goto done;
    }
    if (!size) {
      sqlite3_result_zeroblob(ctx, 0); /* records without arrays */
      goto done;
    }
    sql_buf_init(ctx, &out);
    if (buf_reserve(&out, size) == CODEC_OK && rb_combine(st, op, order, ns, total, beta, &out) == CODEC_NOMEM)
      out.rc = CODEC_NOMEM;
    sql_result_buf(ctx, &out, 0);
  }
done:
  buf_free(&out);
  codec_free(scores);
  codec_free(order);
  rb_free(st);
}

/* --- differential privacy --------------------------------------------------- */

/* A number argument that must be finite and >= 0 (> 0 when `positive`). */
static int dp_arg(sqlite3_context *ctx, sqlite3_value *v, int argi, const char *what, int positive, double *out) {
  int rc = sql_arg_double(ctx, v, argi, what, out);
  if (rc <= 0) return rc;
  if (!isfinite(*out) || *out < 0 || (positive && *out == 0)) {
    sql_error(ctx, "%s must be a finite number %s 0, got %g", what, positive ? ">" : ">=", *out);
    return -1;
  }
  return 1;
}

/* Every array of rec rewritten key by key: scaled by `factor` (ar_clip_norm,
** as ar_scale) or with noise added from rng (ar_add_noise). */
static void dp_rewrite(sqlite3_context *ctx, const record_t *rec, double factor, rb_rng *rng,
                       unsigned char *scratch) {
  npy_array *a = codec_malloc((uint64_t)(rec->n ? rec->n : 1) * 2 * sizeof(npy_array));
  uint64_t total = 0;
  codec_err err;
  buf_t out;
  int i, rc;
  buf_init(&out, 0);
  if (!a) {
    sqlite3_result_error_nomem(ctx);
    return;
  }
  for (i = 0; i < rec->n; i++) {
    npy_array *res = &a[rec->n + i];
    if ((rc = array_open(&rec->items[i], i, &a[i], &err)) != CODEC_OK) {
      sql_codec_error(ctx, rc, &err);
      goto done;
    }
    if (rng) { /* same dtype and memory order, native bytes */
      *res = a[i];
      res->dtype = dt_native((dt_type)a[i].dtype.type);
      res->fortran_order = am_is_fortran(&a[i]);
    } else {
      am_scale_plan(&a[i], res);
    }
    if (size_add(total, array_result_size(rec->items[i].key, res), &total)) {
      sqlite3_result_error_toobig(ctx);
      goto done;
    }
  }
  sql_buf_init(ctx, &out);
  if (buf_reserve(&out, total) == CODEC_OK) {
    for (i = 0; i < rec->n && !out.rc; i++) {
      npy_array *res = &a[rec->n + i];
      unsigned char *dst = array_begin_result(&out, rec->items[i].key, res);
      if (!dst) break;
      if (!rng) {
        am_scale_run(&a[i], factor, res, dst, scratch);
      } else {
        am_copy_native(&a[i], res->fortran_order, dst, scratch);
        rb_add_noise((dt_type)res->dtype.type, dst, (size_t)res->numel, factor, rng);
      }
    }
  }
  sql_result_buf(ctx, &out, 0);
done:
  buf_free(&out);
  codec_free(a);
}

/* ar_clip_norm(update, clip): Flower's clip_inputs_inplace. */
static void ar_clip_norm_func(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  unsigned char *scratch = NULL;
  kn_cascade sum;
  record_t rec;
  double clip, norm, factor;
  int i, rc;
  (void)argc;
  record_init(&rec);
  kn_cascade_init(&sum);
  if (sql_arg_record(ctx, argv[0], 0, &rec) <= 0 || dp_arg(ctx, argv[1], 1, "clip", 1, &clip) <= 0 ||
      !(scratch = sql_math_scratch(ctx)))
    goto done;
  for (i = 0; i < rec.n; i++) {
    npy_array a;
    am_stats st;
    codec_err err;
    if ((rc = array_open(&rec.items[i], i, &a, &err)) != CODEC_OK) {
      sql_codec_error(ctx, rc, &err);
      goto done;
    }
    if (dt_kind((dt_type)a.dtype.type) == DT_KIND_COMPLEX) {
      char q[CODEC_QUOTE_MAX];
      sql_error(ctx, "key '%s': complex arrays are not supported", quote(q, rec.items[i].key));
      goto done;
    }
    am_reduce(&a, AM_SUMSQ, &st, scratch);
    kn_cascade_add(&sum, st.sumsq);
  }
  norm = sqrt(kn_cascade_sum(&sum));
  if (isnan(norm)) {
    sql_error(ctx, "the update's norm is NaN");
    goto done;
  }
  /* min(1, clip / norm); a zero update is left as it is (Flower divides by zero). */
  factor = norm > clip ? clip / norm : 1.0;
  dp_rewrite(ctx, &rec, factor, NULL, scratch);
done:
  codec_free(scratch);
  record_clear(&rec);
}

/* ar_add_noise(rec, stddev [, seed]). */
static void ar_add_noise_func(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  unsigned char *scratch = NULL;
  record_t rec;
  double stddev;
  rb_rng rng;
  uint64_t seed;
  record_init(&rec);
  if (sql_arg_record(ctx, argv[0], 0, &rec) <= 0 || dp_arg(ctx, argv[1], 1, "stddev", 0, &stddev) <= 0) goto done;
  if (argc > 2) {
    sqlite3_int64 s;
    if (sql_arg_int64(ctx, argv[2], 2, "the seed", &s) <= 0) goto done;
    seed = (uint64_t)s;
  } else {
    sqlite3_randomness(sizeof(seed), &seed);
  }
  rb_rng_seed(&rng, seed);
  if (!(scratch = sql_math_scratch(ctx))) goto done;
  dp_rewrite(ctx, &rec, stddev, &rng, scratch);
done:
  codec_free(scratch);
  record_clear(&rec);
}

static const sql_function robust_functions[] = {
    {"ar_krum", 3, NULL, rb_step, rb_final, RB_KRUM},
    {"ar_krum", 4, NULL, rb_step, rb_final, RB_KRUM},
    {"ar_krum_scores", 2, NULL, rb_step, rb_final, RB_SCORES},
    {"ar_bulyan", 2, NULL, rb_step, rb_final, RB_BULYAN},
    {"ar_clip_norm", 2, ar_clip_norm_func, NULL, NULL, 0},
    {"ar_add_noise", 3, ar_add_noise_func, NULL, NULL, 0},
};

/* Without a seed the noise differs on every call: not deterministic. */
static const sql_function random_functions[] = {
    {"ar_add_noise", 2, ar_add_noise_func, NULL, NULL, 0},
};

int sql_robust_register(sqlite3 *db, char **pzErrMsg) {
  int rc = SQL_REGISTER_TABLE(db, robust_functions, pzErrMsg);
  if (rc == SQLITE_OK)
    rc = sql_register_flags(db, random_functions, (int)(sizeof(random_functions) / sizeof(random_functions[0])),
                            SQL_VOLATILE, pzErrMsg);
  return rc;
}
