/* SPDX-License-Identifier: Apache-2.0 */
/*
** sql_aggregate.c — aggregates over rows of records, key by key and element
** by element (Flower's server-side strategies in one SQL statement):
**
**   ar_sum(rec)                 ar_mean(rec [, weight])   -- FedAvg
**   ar_min(rec)  ar_max(rec)    ar_median(rec)            -- FedMedian
**   ar_trimmed_mean(rec, beta)  -- FedTrimmedAvg
**   ar_stack(rec)               -- each key stacked along a new axis 0
**
** The first non-NULL record fixes the layout: its keys (and their order in
** the result), each key's dtype and shape. Every later record must have the
** same keys (in any order), dtypes (byte order may differ) and shapes, or the
** aggregate fails naming the key and the rows. NULL records are skipped;
** no records at all give NULL. Rows are counted from 0, NULL ones included.
**
** Memory. ar_sum, ar_mean, ar_min and ar_max hold one model's worth of
** accumulators (double, or (re, im) doubles, or int64, or the array's own
** type for min/max) and never keep a row: each record is accumulated in one
** pass over its bytes while SQLite holds it. The accumulators are allocated
** behind a gap as long as the result's item and .npy headers, so the result
** record is written over them in place, block by block behind the reads,
** without a second model-sized allocation. ar_median, ar_trimmed_mean and
** ar_stack need every value: they keep each row's arrays (native byte order,
** C order) until the end, at most SQLITE_LIMIT_LENGTH bytes of them.
*/
#include "sql/sql_modules.h"
#include "sql/sql_util.h"
SQLITE_EXTENSION_INIT3

#include <math.h>
#include <stdarg.h>
#include <string.h>

#include "codec/array.h"
#include "codec/keyset.h"
#include "math/arraymath.h"

enum { AGG_SUM, AGG_MEAN, AGG_MIN, AGG_MAX, AGG_MEDIAN, AGG_TRIMMED, AGG_STACK };

/* Keeps every row (the order statistics and stack) rather than accumulating. */
#define KEEPS_ROWS(op) ((op) >= AGG_MEDIAN)

typedef struct agg_key {
  codec_span key;     /* into st->arena once the layout is complete */
  uint64_t key_at; /* offset of the key in st->arena */
  dt_type type;    /* element type of every row */
  dt_type out;     /* result type */
  int fortran;     /* memory order accumulated (and of the result) */
  int ndim;
  int64_t *shape;  /* ndim dimensions, in st->dims */
  uint64_t numel;
  uint64_t at;     /* offset of its accumulator, or of its slice of a kept row */
  uint64_t bytes;  /* size of the accumulator or slice */
} agg_key;

typedef struct agg_state {
  int started, failed;
  int64_t row, cur, first_row; /* rows seen; the current one; the one that fixed the layout */
  uint64_t nrows;         /* records aggregated */
  int nkeys;
  agg_key *keys;
  int64_t *dims;
  buf_t arena; /* key bytes */
  keyset_t index; /* key -> position, built when a row has another order */
  unsigned char *scratch;
  double total_weight, beta;
  /* accumulating aggregates: [gap | accumulators], see the file comment;
  ** a result buffer, so the result can be handed to SQLite as it is */
  buf_t mem;
  uint64_t gap, result_size;
  /* aggregates keeping rows: every row's arrays, one row after another */
  buf_t kept;
  uint64_t row_bytes;
} agg_state;

static void agg_free(agg_state *st) {
  codec_free(st->keys);
  codec_free(st->dims);
  buf_free(&st->arena);
  keyset_free(&st->index);
  codec_free(st->scratch);
  buf_free(&st->mem);
  buf_free(&st->kept);
  st->keys = NULL;
  st->dims = NULL;
  st->scratch = NULL;
}

/* One convention for failure inside the aggregates: the helper that meets an
** error reports it at once through agg_fail or agg_nomem, which remember it
** (later steps do nothing, xFinal only cleans up) and return 0; a helper
** returns 1 when it worked. */
static int agg_fail(sqlite3_context *ctx, agg_state *st, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static int agg_fail(sqlite3_context *ctx, agg_state *st, const char *fmt, ...) {
  char msg[400];
  va_list ap;
  va_start(ap, fmt);
  sqlite3_vsnprintf(sizeof(msg), msg, fmt, ap);
  va_end(ap);
  st->failed = 1;
  sql_error(ctx, "%s", msg);
  return 0;
}

static int agg_nomem(sqlite3_context *ctx, agg_state *st) {
  st->failed = 1;
  sqlite3_result_error_nomem(ctx);
  return 0;
}

static const char *quote(char *q, codec_span key) { return codec_quote(q, CODEC_QUOTE_MAX, key.p, key.n); }

/* --- the layout ---------------------------------------------------------- */

/* The result type of a key for op, or -1 when op refuses its type. */
static int result_type(int op, dt_type t) {
  char kind = dt_kind(t);
  switch (op) {
    case AGG_SUM: /* np.sum promotes integers to the 64-bit type of their sign */
      return kind == DT_KIND_UINT ? DT_UINT64 : kind == DT_KIND_INT || kind == DT_KIND_BOOL ? DT_INT64 : (int)t;
    case AGG_MEAN: return kind == DT_KIND_FLOAT || kind == DT_KIND_COMPLEX ? (int)t : DT_FLOAT64;
    case AGG_MIN:
    case AGG_MAX: return kind == DT_KIND_COMPLEX ? -1 : (int)t;
    case AGG_MEDIAN:
    case AGG_TRIMMED: return kind == DT_KIND_COMPLEX ? -1 : kind == DT_KIND_FLOAT ? (int)t : DT_FLOAT64;
    default: return (int)t;
  }
}

/* Bytes of accumulator per element. */
static size_t acc_size(int op, dt_type t) {
  if (op == AGG_MIN || op == AGG_MAX || KEEPS_ROWS(op)) return dt_size(t);
  return dt_kind(t) == DT_KIND_COMPLEX ? 16 : 8;
}

/* The result array of key k (rows = the number of records, for stack). */
static void key_result(const agg_state *st, int op, const agg_key *k, npy_array *res) {
  memset(res, 0, sizeof(*res));
  res->dtype = dt_native(k->out);
  res->fortran_order = k->fortran;
  if (op == AGG_STACK) {
    res->ndim = k->ndim + 1;
    res->shape[0] = (int64_t)st->nrows;
    memcpy(res->shape + 1, k->shape, sizeof(int64_t) * (size_t)k->ndim);
    res->numel = k->numel * st->nrows;
  } else {
    res->ndim = k->ndim;
    memcpy(res->shape, k->shape, sizeof(int64_t) * (size_t)k->ndim);
    res->numel = k->numel;
  }
  res->nbytes = res->numel * dt_size(k->out); /* bounded by memory already held */
}

/* Fix the layout from the first record (its arrays are valid: opened).
** Returns 1, or 0 after reporting the error. */
static int agg_layout(sqlite3_context *ctx, agg_state *st, int op, const record_t *rec, const npy_array *arrays) {
  uint64_t total = 0, ndims = 0, acc = 0;
  int i;
  char q[CODEC_QUOTE_MAX], name[DT_NAME_MAX];
  st->nkeys = rec->n;
  for (i = 0; i < rec->n; i++) ndims += (uint64_t)arrays[i].ndim;
  st->keys = codec_malloc((uint64_t)(rec->n ? rec->n : 1) * sizeof(agg_key));
  st->dims = codec_malloc((ndims ? ndims : 1) * sizeof(int64_t));
  st->scratch = am_scratch();
  if (!st->keys || !st->dims || !st->scratch) return agg_nomem(ctx, st);
  ndims = 0;
  for (i = 0; i < rec->n; i++) {
    agg_key *k = &st->keys[i];
    const npy_array *a = &arrays[i];
    int out = result_type(op, (dt_type)a->dtype.type);
    k->key = rec->items[i].key;
    if (out < 0) {
      dt_name(a->dtype, name);
      return agg_fail(ctx, st, "key '%s': complex arrays have no order (dtype %s)", quote(q, k->key), name);
    }
    k->key_at = st->arena.n;
    buf_append(&st->arena, k->key.p, k->key.n);
    k->type = (dt_type)a->dtype.type;
    k->out = (dt_type)out;
    k->fortran = KEEPS_ROWS(op) ? 0 : am_is_fortran(a);
    k->ndim = a->ndim;
    k->shape = st->dims + ndims;
    memcpy(k->shape, a->shape, sizeof(int64_t) * (size_t)a->ndim);
    ndims += (uint64_t)a->ndim;
    k->numel = a->numel;
    k->at = acc;
    if (size_mul(a->numel, acc_size(op, k->type), &k->bytes) || size_add(acc, k->bytes, &acc)) goto toobig;
    if (!KEEPS_ROWS(op)) {
      npy_array res;
      uint64_t size;
      key_result(st, op, k, &res);
      size = array_result_size(k->key, &res);
      if (size_add(total, size, &total) || size_add(st->gap, size - res.nbytes, &st->gap)) goto toobig;
      /* gap: the items' framing and .npy headers */
    }
  }
  if (st->arena.rc) return agg_nomem(ctx, st);
  if (KEEPS_ROWS(op)) {
    /* The rows kept are capped at SQLITE_LIMIT_LENGTH, the one bound on a
    ** statement's values the application sets. For ar_stack they are the
    ** result's payload, which must fit that limit anyway, so the cap only
    ** makes a doomed aggregate fail early; ar_median and ar_trimmed_mean
    ** get the same rule (a larger round needs a larger limit). The buffer
    ** never grows past its limit, so this also bounds the memory held. */
    st->row_bytes = acc;
    buf_init(&st->kept, sql_limit(ctx));
    return 1;
  }
  if (total > sql_limit(ctx)) goto toobig;
  st->result_size = total;
  st->gap = (st->gap + 63) & ~(uint64_t)63; /* keeps the accumulators aligned (gap <= total: no overflow) */
  buf_init_result(&st->mem, UINT64_MAX); /* checked against SQLite's limit above */
  if (size_add(st->gap, acc, &total)) goto toobig;
  return buf_reserve(&st->mem, total ? total : 1) == CODEC_OK ? 1 : agg_nomem(ctx, st);
toobig:
  st->failed = 1;
  sqlite3_result_error_toobig(ctx);
  return 0;
}

/* After the arena stops moving, point the keys at their copies. */
static void agg_keys_home(agg_state *st) {
  int i;
  /* Only empty keys leave the arena without storage (no arithmetic on NULL). */
  for (i = 0; i < st->nkeys; i++)
    st->keys[i].key.p = st->arena.p ? st->arena.p + st->keys[i].key_at : (const unsigned char *)"";
}

/* --- one row --------------------------------------------------------------- */

/* The layout position of item `it` (at position i of its record) into *pos,
** -1 when the layout has no such key. */
static int key_position(sqlite3_context *ctx, agg_state *st, const record_item *it, int i, int *pos) {
  int k;
  if (i < st->nkeys && st->keys[i].key.n == it->key.n && memcmp(st->keys[i].key.p, it->key.p, (size_t)it->key.n) == 0) {
    *pos = i;
    return 1;
  }
  if (!st->index.cap) {
    for (k = 0; k < st->nkeys; k++)
      if (keyset_put(&st->index, st->keys[k].key.p, st->keys[k].key.n, k)) return agg_nomem(ctx, st);
  }
  *pos = keyset_get(&st->index, it->key.p, it->key.n);
  return 1;
}

static void shape_mismatch(sqlite3_context *ctx, agg_state *st, const agg_key *k, const npy_array *a) {
  char q[CODEC_QUOTE_MAX], s1[80], s2[80];
  agg_fail(ctx, st, "key '%s' has shape %s in row %lld but %s in row %lld", quote(q, k->key),
           am_shape_str(s1, sizeof(s1), a->ndim, a->shape), (long long)st->cur,
           am_shape_str(s2, sizeof(s2), k->ndim, k->shape), (long long)st->first_row);
}

static void dtype_mismatch(sqlite3_context *ctx, agg_state *st, const agg_key *k, const npy_array *a) {
  char q[CODEC_QUOTE_MAX], n1[DT_NAME_MAX], n2[DT_NAME_MAX];
  dt_name(a->dtype, n1);
  strcpy(n2, dt_type_name(k->type));
  agg_fail(ctx, st, "key '%s' has dtype %s in row %lld but %s in row %lld", quote(q, k->key), n1, (long long)st->cur,
           n2, (long long)st->first_row);
}

/* Fold one array into key k's accumulator (or kept slice at `kept`). */
static void agg_add(agg_state *st, int op, const agg_key *k, const npy_array *a, double w, unsigned char *kept) {
  int first = st->nrows == 0;
  /* Rows kept: no accumulators; every array empty: no memory at all (and
  ** no arithmetic on NULL). */
  unsigned char *acc = KEEPS_ROWS(op) || !st->mem.p ? NULL : st->mem.p + st->gap + k->at;
  switch (op) {
    case AGG_SUM:
      if (dt_kind(k->out) == DT_KIND_INT || dt_kind(k->out) == DT_KIND_UINT) {
        am_add_int(a, k->fortran, (int64_t *)(void *)acc, first, st->scratch);
        break;
      }
      am_axpy(a, k->fortran, 1.0, (double *)(void *)acc, first, st->scratch);
      break;
    case AGG_MEAN: am_axpy(a, k->fortran, w, (double *)(void *)acc, first, st->scratch); break;
    case AGG_MIN:
    case AGG_MAX: am_elem_minmax(a, k->fortran, acc, op == AGG_MAX, first, st->scratch); break;
    default:
      if (kept) am_copy_native(a, 0, kept + k->at, st->scratch); /* no kept bytes: every array empty */
      break;
  }
}

/* A weight or beta argument: a finite number. */
static int agg_number(sqlite3_context *ctx, agg_state *st, sqlite3_value *v, const char *what, double *out) {
  int t = sqlite3_value_type(v);
  if (t != SQLITE_INTEGER && t != SQLITE_FLOAT) {
    return agg_fail(ctx, st, t == SQLITE_NULL ? "%s is NULL in row %lld" : "%s must be a number (row %lld)", what,
                    (long long)st->cur);
  }
  *out = sqlite3_value_double(v);
  if (!isfinite(*out)) return agg_fail(ctx, st, "%s must be finite (row %lld)", what, (long long)st->cur);
  return 1;
}

/* The row's record (not NULL), as sql_arg_record reads it but with errors
** naming the row. */
static int agg_record(sqlite3_context *ctx, agg_state *st, sqlite3_value *v, record_t *rec) {
  codec_span blob;
  codec_err err;
  int rc;
  if (sqlite3_value_type(v) != SQLITE_BLOB) {
    sql_blob_type_problem(&err, v, 0, "a record");
    return agg_fail(ctx, st, "row %lld: %s", (long long)st->cur, err.msg);
  }
  if (sql_blob_span(v, &blob) != SQLITE_OK) return agg_nomem(ctx, st);
  if ((rc = record_parse(rec, blob.p, blob.n, &err)) != CODEC_OK) {
    if (rc == CODEC_NOMEM) return agg_nomem(ctx, st);
    return agg_fail(ctx, st, "row %lld: %s", (long long)st->cur, err.msg);
  }
  return 1;
}

static void agg_step(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  agg_state *st = sqlite3_aggregate_context(ctx, sizeof(*st));
  int op = SQL_OP(ctx), i, rc;
  npy_array *arrays = NULL;
  unsigned char *kept = NULL;
  double w = 1;
  record_t rec;
  codec_err err;
  char q[CODEC_QUOTE_MAX];
  if (!st) {
    sqlite3_result_error_nomem(ctx);
    return;
  }
  if (!st->started) {
    st->started = 1;
    buf_init(&st->arena, UINT64_MAX);
    keyset_init(&st->index);
    buf_init(&st->kept, UINT64_MAX);
  }
  st->cur = st->row++;
  if (st->failed || sqlite3_value_type(argv[0]) == SQLITE_NULL) return; /* NULL record: skipped */
  record_init(&rec);
  if (!agg_record(ctx, st, argv[0], &rec)) goto fail;
  if (op == AGG_MEAN && argc > 1 && !agg_number(ctx, st, argv[1], "weight", &w)) goto fail;
  if (op == AGG_TRIMMED) {
    double beta;
    if (!agg_number(ctx, st, argv[1], "beta", &beta)) goto fail;
    if (!(beta >= 0 && beta < 0.5)) {
      agg_fail(ctx, st, "beta must be in [0, 0.5), got %g (row %lld)", beta, (long long)st->cur);
      goto fail;
    }
    if (st->nrows && beta != st->beta) {
      agg_fail(ctx, st, "beta must be the same in every row (%g in row %lld, %g before)", beta, (long long)st->cur,
               st->beta);
      goto fail;
    }
    st->beta = beta;
  }
  if (!(arrays = codec_malloc((uint64_t)(rec.n ? rec.n : 1) * sizeof(npy_array)))) goto nomem;
  for (i = 0; i < rec.n; i++) {
    if ((rc = array_open(&rec.items[i], i, &arrays[i], &err)) != CODEC_OK) {
      if (rc == CODEC_NOMEM) goto nomem;
      agg_fail(ctx, st, "row %lld: %s", (long long)st->cur, err.msg);
      goto fail;
    }
  }
  if (!st->nrows) {
    st->first_row = st->cur;
    if (!agg_layout(ctx, st, op, &rec, arrays)) goto fail;
    agg_keys_home(st);
  }
  if (KEEPS_ROWS(op)) {
    if (st->nrows >= (uint64_t)INT32_MAX) { /* Flower's shapes are int32 */
      agg_fail(ctx, st, "more than %d rows", INT32_MAX);
      goto fail;
    }
    if (st->row_bytes && !(kept = buf_extend(&st->kept, st->row_bytes))) {
      if (st->kept.rc != CODEC_TOOBIG) goto nomem;
      agg_fail(ctx, st, "the rows kept would exceed SQLITE_LIMIT_LENGTH (%llu bytes) at row %lld",
               (unsigned long long)st->kept.limit, (long long)st->cur);
      goto fail;
    }
  }
  for (i = 0; i < rec.n; i++) {
    const record_item *it = &rec.items[i];
    const npy_array *a = &arrays[i];
    int k;
    if (!key_position(ctx, st, it, i, &k)) goto fail;
    if (k < 0) {
      agg_fail(ctx, st, "key '%s' is in row %lld but not in row %lld", quote(q, it->key), (long long)st->cur,
               (long long)st->first_row);
      goto fail;
    }
    if (a->dtype.type != st->keys[k].type) {
      dtype_mismatch(ctx, st, &st->keys[k], a);
      goto fail;
    }
    if (a->ndim != st->keys[k].ndim || memcmp(a->shape, st->keys[k].shape, sizeof(int64_t) * (size_t)a->ndim)) {
      shape_mismatch(ctx, st, &st->keys[k], a);
      goto fail;
    }
    agg_add(st, op, &st->keys[k], a, w, kept);
  }
  if (rec.n != st->nkeys) {
    /* Every key of this row is known, so one of the layout's is missing. */
    for (i = 0; i < st->nkeys; i++) {
      if (record_find(&rec, st->keys[i].key.p, st->keys[i].key.n) < 0) {
        agg_fail(ctx, st, "key '%s' is missing from row %lld", quote(q, st->keys[i].key), (long long)st->cur);
        goto fail;
      }
    }
  }
  st->total_weight += w;
  st->nrows++;
  codec_free(arrays);
  record_clear(&rec);
  return;
nomem:
  agg_nomem(ctx, st);
fail:
  st->failed = 1;
  codec_free(arrays);
  record_clear(&rec);
}

/* --- results --------------------------------------------------------------- */

/* ar_sum, ar_mean, ar_min, ar_max: write the result over the accumulators
** (see the file comment) and hand that memory to SQLite. */
static void finish_in_place(sqlite3_context *ctx, agg_state *st, int op) {
  buf_t out;
  int i;
  if (op == AGG_MEAN && !(st->total_weight > 0)) {
    sql_error(ctx, "total weight is %g; the weights must sum to a positive number", st->total_weight);
    return;
  }
  if (!st->result_size) {
    sqlite3_result_zeroblob(ctx, 0); /* records without arrays */
    return;
  }
  out = st->mem; /* the result is written over the accumulators */
  buf_init(&st->mem, 0);
  for (i = 0; i < st->nkeys; i++) {
    const agg_key *k = &st->keys[i];
    const unsigned char *acc = out.p + st->gap + k->at;
    npy_array res;
    unsigned char *dst;
    key_result(st, op, k, &res);
    dst = array_begin_result(&out, k->key, &res); /* never reallocates: the result fits */
    if (op == AGG_MIN || op == AGG_MAX || dt_kind(k->out) == DT_KIND_INT || dt_kind(k->out) == DT_KIND_UINT) {
      if (res.nbytes) memmove(dst, acc, (size_t)res.nbytes); /* same size, dst <= acc */
    } else {
      kn_div_store(k->out, (const double *)(const void *)acc, dt_kind(k->out) == DT_KIND_COMPLEX,
                   op == AGG_MEAN ? st->total_weight : 1.0, dst, (size_t)k->numel);
    }
  }
  sql_result_buf(ctx, &out, 0);
}

/* ar_median, ar_trimmed_mean: for blocks of elements, gather each element's
** values across the kept rows and reduce them. */
static int finish_order_stat(agg_state *st, int op, buf_t *out) {
  uint64_t n = st->nrows, cut = op == AGG_TRIMMED ? (uint64_t)floor(st->beta * (double)n) : 0;
  size_t block = (size_t)(32768 / n), j, m;
  double *cols, *vals, *res_block;
  int i;
  if (block < 1) block = 1;
  if (block > KN_BLOCK) block = KN_BLOCK;
  cols = codec_malloc((n * block + n + block) * sizeof(double));
  if (!cols) return CODEC_NOMEM;
  vals = cols + n * block;
  res_block = vals + n;
  for (i = 0; i < st->nkeys; i++) {
    const agg_key *k = &st->keys[i];
    size_t size = dt_size(k->type);
    uint64_t e, r;
    npy_array res;
    unsigned char *dst;
    key_result(st, op, k, &res);
    if (!(dst = array_begin_result(out, k->key, &res))) break;
    for (e = 0; e < k->numel; e += m) {
      m = k->numel - e < block ? (size_t)(k->numel - e) : block;
      for (r = 0; r < n; r++) kn_to_f64(k->type, st->kept.p + r * st->row_bytes + k->at + e * size, cols + r * block, m);
      for (j = 0; j < m; j++) {
        for (r = 0; r < n; r++) vals[r] = cols[r * block + j];
        res_block[j] = op == AGG_MEDIAN ? kn_median(vals, (size_t)n) : kn_trimmed_mean(vals, (size_t)n, (size_t)cut);
      }
      kn_from_f64(k->out, res_block, dst + e * dt_size(k->out), m);
    }
  }
  codec_free(cols);
  return out->rc;
}

static void finish_stack(agg_state *st, buf_t *out) {
  int i;
  uint64_t r;
  for (i = 0; i < st->nkeys; i++) {
    const agg_key *k = &st->keys[i];
    npy_array res;
    unsigned char *dst;
    key_result(st, AGG_STACK, k, &res);
    if (!(dst = array_begin_result(out, k->key, &res))) return;
    if (!k->bytes) continue; /* an empty array: nothing kept, nothing to copy */
    for (r = 0; r < st->nrows; r++) memcpy(dst + r * k->bytes, st->kept.p + r * st->row_bytes + k->at, (size_t)k->bytes);
  }
}

static void agg_final(sqlite3_context *ctx) {
  agg_state *st = sqlite3_aggregate_context(ctx, 0);
  int op = SQL_OP(ctx), i, rc;
  buf_t out;
  if (!st) return; /* no rows: NULL */
  if (st->failed || !st->nrows) goto done;
  if (!KEEPS_ROWS(op)) {
    finish_in_place(ctx, st, op);
    goto done;
  }
  /* Rows are kept: the result is a new buffer, sized first. */
  {
    uint64_t total = 0;
    for (i = 0; i < st->nkeys; i++) {
      npy_array res;
      key_result(st, op, &st->keys[i], &res);
      if (size_add(total, array_result_size(st->keys[i].key, &res), &total)) {
        sqlite3_result_error_toobig(ctx);
        goto done;
      }
    }
    sql_buf_init(ctx, &out);
    if (buf_reserve(&out, total) == CODEC_OK) {
      if (op == AGG_STACK) {
        finish_stack(st, &out);
      } else if ((rc = finish_order_stat(st, op, &out)) == CODEC_NOMEM) {
        out.rc = CODEC_NOMEM;
      }
    }
    sql_result_buf(ctx, &out, 0);
  }
done:
  agg_free(st);
}

static const sql_function aggregate_functions[] = {
    {"ar_sum", 1, NULL, agg_step, agg_final, AGG_SUM},
    {"ar_mean", 1, NULL, agg_step, agg_final, AGG_MEAN},
    {"ar_mean", 2, NULL, agg_step, agg_final, AGG_MEAN},
    {"ar_min", 1, NULL, agg_step, agg_final, AGG_MIN},
    {"ar_max", 1, NULL, agg_step, agg_final, AGG_MAX},
    {"ar_median", 1, NULL, agg_step, agg_final, AGG_MEDIAN},
    {"ar_trimmed_mean", 2, NULL, agg_step, agg_final, AGG_TRIMMED},
    {"ar_stack", 1, NULL, agg_step, agg_final, AGG_STACK},
};

int sql_aggregate_register(sqlite3 *db, char **pzErrMsg) {
  return SQL_REGISTER_TABLE(db, aggregate_functions, pzErrMsg);
}
