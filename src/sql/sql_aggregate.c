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
#include "sql/sql_aggregate.h"
#include "sql/sql_modules.h"
SQLITE_EXTENSION_INIT3

#include <math.h>
#include <stdarg.h>
#include <string.h>

#include "codec/array.h"
#include "codec/keyset.h"
#include "math/arraymath.h"
#include "math/orderstat.h"

void agg_free(agg_state *st) {
  codec_free(st->keys);
  codec_free(st->dims);
  buf_free(&st->arena);
  keyset_free(&st->index);
  codec_free(st->scratch);
  buf_free(&st->mem);
  buf_free(&st->kept);
  codec_free(st->comp);
  st->keys = NULL;
  st->dims = NULL;
  st->scratch = NULL;
  st->comp = NULL;
}

/* One convention for failure inside the aggregates: the helper that meets an
** error reports it at once through agg_fail or agg_nomem, which remember it
** (later steps do nothing, xFinal only cleans up) and return 0; a helper
** returns 1 when it worked. */
int agg_fail(sqlite3_context *ctx, agg_state *st, const char *fmt, ...) {
  char msg[400];
  va_list ap;
  va_start(ap, fmt);
  sqlite3_vsnprintf(sizeof(msg), msg, fmt, ap);
  va_end(ap);
  st->failed = 1;
  sql_error(ctx, "%s", msg);
  return 0;
}

int agg_nomem(sqlite3_context *ctx, agg_state *st) {
  st->failed = 1;
  sqlite3_result_error_nomem(ctx);
  return 0;
}

static const char *quote(char *q, codec_span key) { return codec_quote(q, CODEC_QUOTE_MAX, key.p, key.n); }

/* "key 'w'" in messages, or "the array" for the per-array form. */
static const char *key_name(char *q, const agg_state *st, codec_span key) {
  char k[CODEC_QUOTE_MAX];
  if (st->npy) return "the array";
  sqlite3_snprintf(CODEC_QUOTE_MAX + 8, q, "key '%s'", quote(k, key));
  return q;
}

/* --- the layout ---------------------------------------------------------- */

/* The result type of a key for op, or -1 when op refuses its type. */
static int result_type(int op, dt_type t) {
  char kind = dt_kind(t);
  switch (op) {
    case AGG_SUM: /* np.sum promotes integers to the 64-bit type of their sign */
      return kind == DT_KIND_UINT ? DT_UINT64 : kind == DT_KIND_INT || kind == DT_KIND_BOOL ? DT_INT64 : (int)t;
    case AGG_MEAN:
    case AGG_EMA: return kind == DT_KIND_FLOAT || kind == DT_KIND_COMPLEX ? (int)t : DT_FLOAT64;
    case AGG_MIN:
    case AGG_MAX: return kind == DT_KIND_COMPLEX ? -1 : (int)t;
    case AGG_MEDIAN:
    case AGG_TRIMMED:
    case AGG_KRUM: /* sql_robust.c: FedAvg's and Bulyan's result types */
    case AGG_KRUM_SCORES:
    case AGG_BULYAN: return kind == DT_KIND_COMPLEX ? -1 : kind == DT_KIND_FLOAT ? (int)t : DT_FLOAT64;
    default: return (int)t;
  }
}

/* Bytes of accumulator per element. */
static size_t acc_size(int op, dt_type t) {
  if (op == AGG_MIN || op == AGG_MAX || KEEPS_ROWS(op)) return dt_size(t);
  return dt_kind(t) == DT_KIND_COMPLEX ? 16 : 8;
}

int agg_float_acc(int op, const agg_key *k) {
  char kind = dt_kind(k->out);
  return (op == AGG_SUM || op == AGG_MEAN || op == AGG_EMA) && kind != DT_KIND_INT && kind != DT_KIND_UINT;
}

void agg_key_result(const agg_state *st, int op, const agg_key *k, npy_array *res) {
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

/* The bytes key k's result adds to the result: a record item, or the whole
** .npy file for the per-array form. */
static uint64_t out_size(const agg_state *st, codec_span key, const npy_array *res) {
  if (st->npy) return npy_header_size(res->dtype, res->ndim, res->shape, res->fortran_order) + res->nbytes;
  return array_result_size(key, res);
}

/* Write key k's framing and header; returns where its payload goes. */
static unsigned char *out_begin(const agg_state *st, buf_t *out, codec_span key, const npy_array *res) {
  return st->npy ? npy_begin(out, res) : array_begin_result(out, key, res);
}

/* Fix the layout from the first record (its arrays are valid: opened).
** Returns 1, or 0 after reporting the error. */
static int agg_layout(sqlite3_context *ctx, agg_state *st, int op, const record_t *rec, const npy_array *arrays) {
  uint64_t total = 0, ndims = 0, acc = 0;
  int i;
  char q[CODEC_QUOTE_MAX + 8], name[DT_NAME_MAX];
  st->nkeys = rec->n;
  for (i = 0; i < rec->n; i++) ndims += (uint64_t)arrays[i].ndim;
  st->keys = codec_malloc((uint64_t)(rec->n ? rec->n : 1) * sizeof(agg_key));
  st->dims = codec_malloc((ndims ? ndims : 1) * sizeof(int64_t));
  st->scratch = am_scratch();
  if (!st->keys || !st->dims || !st->scratch) return agg_nomem(ctx, st);
  st->laid_out = 1;
  ndims = 0;
  for (i = 0; i < rec->n; i++) {
    agg_key *k = &st->keys[i];
    const npy_array *a = &arrays[i];
    int out = result_type(op, (dt_type)a->dtype.type);
    k->key = rec->items[i].key;
    if (out < 0) {
      dt_name(a->dtype, name);
      return agg_fail(ctx, st, "%s: complex arrays %s (dtype %s)", key_name(q, st, k->key),
                      op >= AGG_KRUM ? "are not supported" : "have no order", name);
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
      agg_key_result(st, op, k, &res);
      size = out_size(st, k->key, &res);
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
  st->acc_bytes = acc;
  st->gap = (st->gap + 63) & ~(uint64_t)63; /* keeps the accumulators aligned (gap <= total: no overflow) */
  buf_init_result(&st->mem, UINT64_MAX);    /* checked against SQLite's limit above */
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

agg_state *agg_get(sqlite3_context *ctx, size_t size) {
  agg_state *st = sqlite3_aggregate_context(ctx, (int)size);
  if (!st) {
    sqlite3_result_error_nomem(ctx);
    return NULL;
  }
  if (!st->started) {
    st->started = 1;
    st->npy = (SQL_OP(ctx) & AGG_NPY) != 0;
    buf_init(&st->arena, UINT64_MAX);
    keyset_init(&st->index);
    buf_init(&st->kept, UINT64_MAX);
  }
  return st;
}

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

static int shape_mismatch(sqlite3_context *ctx, agg_state *st, const agg_key *k, const npy_array *a, int64_t row) {
  char q[CODEC_QUOTE_MAX + 8], s1[80], s2[80];
  return agg_fail(ctx, st, "%s has shape %s in row %lld but %s in row %lld", key_name(q, st, k->key),
                  am_shape_str(s1, sizeof(s1), a->ndim, a->shape), (long long)row,
                  am_shape_str(s2, sizeof(s2), k->ndim, k->shape), (long long)st->first_row);
}

static int dtype_mismatch(sqlite3_context *ctx, agg_state *st, const agg_key *k, const npy_array *a, int64_t row) {
  char q[CODEC_QUOTE_MAX + 8], n1[DT_NAME_MAX], n2[DT_NAME_MAX];
  dt_name(a->dtype, n1);
  strcpy(n2, dt_type_name(k->type));
  return agg_fail(ctx, st, "%s has dtype %s in row %lld but %s in row %lld", key_name(q, st, k->key), n1,
                  (long long)row, n2, (long long)st->first_row);
}

void agg_weigh_first(agg_state *st, int op) {
  int i;
  if (!st->first_w_pending || !st->mem.p) return;
  st->first_w_pending = 0;
  for (i = 0; i < st->nkeys; i++) {
    const agg_key *k = &st->keys[i];
    double *acc = (double *)(void *)(st->mem.p + st->gap + k->at);
    uint64_t j, n = k->bytes / 8;
    if (!agg_float_acc(op, k)) continue;
    for (j = 0; j < n; j++) acc[j] = st->first_w * acc[j];
  }
}

/* Fold one array into key k's accumulator (or kept slice at `kept`). */
static void agg_add(agg_state *st, int op, const agg_key *k, const npy_array *a, double w, unsigned char *kept) {
  int first = st->nrows == 0;
  /* Rows kept: no accumulators; every array empty: no memory at all (and
  ** no arithmetic on NULL). */
  unsigned char *acc = KEEPS_ROWS(op) || !st->mem.p ? NULL : st->mem.p + st->gap + k->at;
  if (st->win && op != AGG_EMA && agg_float_acc(op, k)) { /* exact sums (sql_window.c) */
    agg_add_comp(st, k, a, w, 1);
    return;
  }
  switch (op) {
    case AGG_SUM:
      if (dt_kind(k->out) == DT_KIND_INT || dt_kind(k->out) == DT_KIND_UINT) {
        am_add_int(a, k->fortran, (int64_t *)(void *)acc, first, st->scratch);
        break;
      }
      am_axpy(a, k->fortran, 1.0, (double *)(void *)acc, first, st->scratch);
      break;
    case AGG_MEAN:
      /* The first row is kept unweighted (its weight in first_w) and
      ** weighted as the second comes: w1 * x1 + w2 * x2, each product
      ** rounded as before, so the plain result keeps its bits, and a window
      ** starting after one row can weigh that row exactly (sql_window.c). */
      if (first)
        am_axpy_keep(a, k->fortran, 1.0, KN_ACC_SET, 1.0, (double *)(void *)acc, st->scratch);
      else if (st->first_w_pending)
        am_axpy_keep(a, k->fortran, w, KN_ACC_KEEP, st->first_w, (double *)(void *)acc, st->scratch);
      else
        am_axpy(a, k->fortran, w, (double *)(void *)acc, 0, st->scratch);
      break;
    case AGG_EMA: /* w is alpha: ema = alpha * x + (1 - alpha) * ema */
      am_axpy_keep(a, k->fortran, first ? 1.0 : w, first ? KN_ACC_SET : KN_ACC_KEEP, 1.0 - w, (double *)(void *)acc,
                   st->scratch);
      break;
    case AGG_MIN:
    case AGG_MAX: am_elem_minmax(a, k->fortran, acc, op == AGG_MAX, first, st->scratch); break;
    default:
      if (kept) am_copy_native(a, 0, kept + k->at, st->scratch); /* no kept bytes: every array empty */
      break;
  }
}

int agg_number(sqlite3_context *ctx, agg_state *st, sqlite3_value *v, const char *what, int64_t row, double *out) {
  int t = sqlite3_value_type(v);
  if (t != SQLITE_INTEGER && t != SQLITE_FLOAT) {
    return agg_fail(ctx, st, t == SQLITE_NULL ? "%s is NULL in row %lld" : "%s must be a number (row %lld)", what,
                    (long long)row);
  }
  *out = sqlite3_value_double(v);
  if (!isfinite(*out)) return agg_fail(ctx, st, "%s must be finite (row %lld)", what, (long long)row);
  return 1;
}

/* The row's value (not NULL) parsed, as sql_arg_record (or sql_arg_npy for
** the per-array form) reads it but with errors naming the row; *arrays is
** allocated for its items, followed by an int per item for agg_positions.
** For the per-array form rec holds one item with an empty key and
** arrays[0] is the array. */
int agg_parse(sqlite3_context *ctx, agg_state *st, sqlite3_value *v, record_t *rec, npy_array **arrays, int64_t row) {
  codec_span blob;
  codec_err err;
  int rc, n;
  if (sqlite3_value_type(v) != SQLITE_BLOB) {
    sql_blob_type_problem(&err, v, 0, st->npy ? "a .npy" : "a record");
    return agg_fail(ctx, st, "row %lld: %s", (long long)row, err.msg);
  }
  if (sql_blob_span(v, &blob) != SQLITE_OK) return agg_nomem(ctx, st);
  if (st->npy) {
    rec->n = 1;
    memset(&rec->items[0], 0, sizeof(rec->items[0]));
    rec->items[0].key.p = (const unsigned char *)"";
  } else if ((rc = record_parse(rec, blob.p, blob.n, &err)) != CODEC_OK) {
    if (rc == CODEC_NOMEM) return agg_nomem(ctx, st);
    return agg_fail(ctx, st, "row %lld: %s", (long long)row, err.msg);
  }
  n = rec->n ? rec->n : 1;
  if (!(*arrays = codec_malloc((uint64_t)n * (sizeof(npy_array) + sizeof(int))))) return agg_nomem(ctx, st);
  if (st->npy && (rc = sql_npy_parse(blob.p, blob.n, &(*arrays)[0], &err)) != CODEC_OK) {
    if (rc == CODEC_NOMEM) return agg_nomem(ctx, st);
    return agg_fail(ctx, st, "row %lld: %s", (long long)row, err.msg);
  }
  return 1;
}

int agg_open(sqlite3_context *ctx, agg_state *st, int op, const record_t *rec, npy_array *arrays, int64_t row) {
  int i, rc;
  codec_err err;
  for (i = 0; !st->npy && i < rec->n; i++) {
    if ((rc = array_open(&rec->items[i], i, &arrays[i], &err)) != CODEC_OK) {
      if (rc == CODEC_NOMEM) return agg_nomem(ctx, st);
      return agg_fail(ctx, st, "row %lld: %s", (long long)row, err.msg);
    }
  }
  if (!st->laid_out) {
    st->first_row = row;
    if (!agg_layout(ctx, st, op, rec, arrays)) return 0;
    agg_keys_home(st);
  }
  return 1;
}

int agg_match(sqlite3_context *ctx, agg_state *st, const record_t *rec, npy_array *arrays, int64_t row) {
  int *pos = AGG_POSITIONS(rec, arrays), i;
  char q[CODEC_QUOTE_MAX];
  for (i = 0; i < rec->n; i++) {
    const npy_array *a = &arrays[i];
    const agg_key *k;
    if (!key_position(ctx, st, &rec->items[i], i, &pos[i])) return 0;
    if (pos[i] < 0) {
      return agg_fail(ctx, st, "key '%s' is in row %lld but not in row %lld", quote(q, rec->items[i].key),
                      (long long)row, (long long)st->first_row);
    }
    k = &st->keys[pos[i]];
    if (a->dtype.type != k->type) return dtype_mismatch(ctx, st, k, a, row);
    if (a->ndim != k->ndim || memcmp(a->shape, k->shape, sizeof(int64_t) * (size_t)a->ndim))
      return shape_mismatch(ctx, st, k, a, row);
  }
  if (rec->n != st->nkeys) {
    /* Every key of this row is known, so one of the layout's is missing. */
    for (i = 0; i < st->nkeys; i++) {
      if (record_find(rec, st->keys[i].key.p, st->keys[i].key.n) < 0)
        return agg_fail(ctx, st, "key '%s' is missing from row %lld", quote(q, st->keys[i].key), (long long)row);
    }
  }
  return 1;
}

int agg_read_row(sqlite3_context *ctx, agg_state *st, int op, sqlite3_value *v, record_t *rec, npy_array **arrays,
                 int64_t row) {
  return agg_parse(ctx, st, v, rec, arrays, row) && agg_open(ctx, st, op, rec, *arrays, row) &&
         agg_match(ctx, st, rec, *arrays, row);
}

int agg_keep_row(sqlite3_context *ctx, agg_state *st, unsigned char **kept) {
  *kept = NULL;
  if (st->nrows >= (uint64_t)INT32_MAX) /* Flower's shapes are int32 */
    return agg_fail(ctx, st, "more than %d rows", INT32_MAX);
  if (st->row_bytes && !(*kept = buf_extend(&st->kept, st->row_bytes))) {
    if (st->kept.rc != CODEC_TOOBIG) return agg_nomem(ctx, st);
    return agg_fail(ctx, st, "the rows kept would exceed SQLITE_LIMIT_LENGTH (%llu bytes) at row %lld",
                    (unsigned long long)st->kept.limit, (long long)st->cur);
  }
  return 1;
}

/* The per-row number of ar_mean (weight), ar_trimmed_mean (beta) and
** ar_ema (alpha) into *w (1 when there is none). */
static int agg_row_number(sqlite3_context *ctx, agg_state *st, int op, int argc, sqlite3_value **argv, double *w) {
  double x;
  *w = 1;
  if (op == AGG_MEAN && argc > 1) return agg_number(ctx, st, argv[1], "weight", st->cur, w);
  if (op == AGG_EMA) {
    if (!agg_number(ctx, st, argv[1], "alpha", st->cur, w)) return 0;
    if (!(*w > 0 && *w <= 1))
      return agg_fail(ctx, st, "alpha must be in (0, 1], got %g (row %lld)", *w, (long long)st->cur);
    return 1;
  }
  if (op != AGG_TRIMMED) return 1;
  if (!agg_number(ctx, st, argv[1], "beta", st->cur, &x)) return 0;
  if (!(x >= 0 && x < 0.5))
    return agg_fail(ctx, st, "beta must be in [0, 0.5), got %g (row %lld)", x, (long long)st->cur);
  if (st->nrows && x != st->beta) {
    return agg_fail(ctx, st, "beta must be the same in every row (%g in row %lld, %g before)", x, (long long)st->cur,
                    st->beta);
  }
  st->beta = x;
  return 1;
}

static void agg_step(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  agg_state *st = agg_get(ctx, sizeof(agg_state));
  int op = SQL_OP(ctx) & AGG_OP_MASK, i, *pos;
  npy_array *arrays = NULL;
  unsigned char *kept = NULL;
  double w;
  record_t rec;
  if (!st) return;
  st->cur = st->row++;
  if (st->failed || sqlite3_value_type(argv[0]) == SQLITE_NULL) return; /* NULL record: skipped */
  record_init(&rec);
  if (!agg_parse(ctx, st, argv[0], &rec, &arrays, st->cur) || !agg_row_number(ctx, st, op, argc, argv, &w) ||
      !agg_open(ctx, st, op, &rec, arrays, st->cur) || !agg_match(ctx, st, &rec, arrays, st->cur))
    goto done;
  pos = AGG_POSITIONS(&rec, arrays);
  if (st->win && !agg_win_begin(ctx, st, op, st->cur)) goto done;
  if (KEEPS_ROWS(op) && !agg_keep_row(ctx, st, &kept)) goto done;
  for (i = 0; i < rec.n; i++) agg_add(st, op, &st->keys[pos[i]], &arrays[i], w, kept);
  if (st->win) {
    if (!st->nrows) memset(st->tw, 0, sizeof st->tw); /* the frame was empty */
    xs_add(st->tw, w);
  } else {
    st->total_weight += w;
    if (op == AGG_MEAN) { /* see agg_add */
      st->first_w_pending = !st->nrows;
      st->first_w = w;
    }
  }
  st->nrows++;
done:
  codec_free(arrays);
  record_clear(&rec);
}

/* --- results --------------------------------------------------------------- */

/* ar_sum, ar_mean, ar_ema, ar_min, ar_max: write the result over the
** accumulators (see the file comment) and hand that memory to SQLite. */
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
    agg_key_result(st, op, k, &res);
    dst = out_begin(st, &out, k->key, &res); /* never reallocates: the result fits */
    if (!agg_float_acc(op, k)) {
      if (res.nbytes) memmove(dst, acc, (size_t)res.nbytes); /* same size, dst <= acc */
    } else {
      kn_div_store(k->out, (const double *)(const void *)acc, dt_kind(k->out) == DT_KIND_COMPLEX,
                   op == AGG_MEAN ? st->total_weight : 1.0, dst, (size_t)k->numel);
    }
  }
  sql_result_buf(ctx, &out, 0);
}

/* The plain store of agg_result_copy: key k's doubles divided by div. */
static void store_plain(const agg_state *st, const agg_key *k, unsigned char *dst, double div) {
  kn_div_store(k->out, (const double *)(const void *)(st->mem.p + st->gap + k->at), dt_kind(k->out) == DT_KIND_COMPLEX,
               div, dst, (size_t)k->numel);
}

void agg_result_copy(sqlite3_context *ctx, agg_state *st, int op, agg_store_fn *store, double div) {
  buf_t out;
  int i;
  if (!st->result_size) {
    sqlite3_result_zeroblob(ctx, 0);
    return;
  }
  sql_buf_init(ctx, &out);
  if (buf_reserve(&out, st->result_size) != CODEC_OK) {
    sql_result_buf(ctx, &out, 0);
    return;
  }
  for (i = 0; i < st->nkeys; i++) {
    const agg_key *k = &st->keys[i];
    npy_array res;
    unsigned char *dst;
    agg_key_result(st, op, k, &res);
    dst = out_begin(st, &out, k->key, &res); /* reserved above */
    if (!res.nbytes) continue;               /* (and st->mem.p may be NULL) */
    if (!agg_float_acc(op, k))
      memcpy(dst, st->mem.p + st->gap + k->at, (size_t)res.nbytes);
    else
      (store ? store : store_plain)(st, k, dst, div);
  }
  sql_result_buf(ctx, &out, 0);
}

const unsigned char *agg_kept_row(const agg_state *st, uint64_t r) {
  /* Rows of no bytes (empty records, zero-length arrays) keep no buffer: a
  ** row is then an empty one, never an offset from NULL. */
  static const unsigned char no_bytes[1];
  if (!st->kept.p) return no_bytes;
  return st->kept.p + (st->dropped + r) * st->row_bytes;
}

/* ar_median, ar_trimmed_mean: each key's order statistic across the kept
** rows (math/orderstat.h: selection over tiles of elements x rows, shared
** among the pool's threads). */
static int finish_order_stat(agg_state *st, int op, buf_t *out) {
  uint64_t n = st->nrows, cut = op == AGG_TRIMMED ? (uint64_t)floor(st->beta * (double)n) : 0;
  const unsigned char **rows = codec_malloc(n * sizeof(*rows));
  os_plan *plan = os_plan_new((size_t)n, op == AGG_MEDIAN ? OS_MEDIAN : OS_TRIMMED, (size_t)cut);
  int i, rc = CODEC_OK;
  if (!rows || !plan) rc = CODEC_NOMEM;
  for (i = 0; i < st->nkeys && rc == CODEC_OK; i++) {
    const agg_key *k = &st->keys[i];
    uint64_t r;
    npy_array res;
    unsigned char *dst;
    agg_key_result(st, op, k, &res);
    if (!(dst = out_begin(st, out, k->key, &res))) break;
    for (r = 0; r < n; r++) rows[r] = agg_kept_row(st, r) + k->at;
    rc = os_run(plan, k->type, rows, k->numel, k->out, dst);
  }
  os_plan_free(plan);
  codec_free((void *)rows);
  return rc != CODEC_OK ? rc : out->rc;
}

static void finish_stack(agg_state *st, buf_t *out) {
  int i;
  uint64_t r;
  for (i = 0; i < st->nkeys; i++) {
    const agg_key *k = &st->keys[i];
    npy_array res;
    unsigned char *dst;
    agg_key_result(st, AGG_STACK, k, &res);
    if (!(dst = out_begin(st, out, k->key, &res))) return;
    if (!k->bytes) continue; /* an empty array: nothing kept, nothing to copy */
    for (r = 0; r < st->nrows; r++) memcpy(dst + r * k->bytes, agg_kept_row(st, r) + k->at, (size_t)k->bytes);
  }
}

int agg_result_total(const agg_state *st, int op, uint64_t *total) {
  int i;
  *total = 0;
  for (i = 0; i < st->nkeys; i++) {
    npy_array res;
    agg_key_result(st, op, &st->keys[i], &res);
    if (size_add(*total, out_size(st, st->keys[i].key, &res), total)) return 0;
  }
  return 1;
}

void agg_result_kept(sqlite3_context *ctx, agg_state *st, int op) {
  uint64_t total;
  buf_t out;
  /* The result is a new buffer, sized first. */
  if (!agg_result_total(st, op, &total)) {
    sqlite3_result_error_toobig(ctx);
    return;
  }
  sql_buf_init(ctx, &out);
  if (buf_reserve(&out, total) == CODEC_OK) {
    if (op == AGG_STACK)
      finish_stack(st, &out);
    else if (finish_order_stat(st, op, &out) == CODEC_NOMEM)
      out.rc = CODEC_NOMEM;
  }
  sql_result_buf(ctx, &out, 0);
}

static void agg_final(sqlite3_context *ctx) {
  agg_state *st = sqlite3_aggregate_context(ctx, 0);
  int op = SQL_OP(ctx) & AGG_OP_MASK;
  if (!st) return; /* no rows: NULL */
  if (st->failed || !st->nrows) goto done;
  if (KEEPS_ROWS(op))
    agg_result_kept(ctx, st, op);
  else if (st->win && op != AGG_EMA)
    agg_result_comp(ctx, st, op); /* a window's last value */
  else {
    agg_weigh_first(st, op);
    finish_in_place(ctx, st, op);
  }
done:
  agg_free(st);
}

/* ar_min and ar_max have no window form: a row cannot leave a running
** minimum. The others do (sql_window.c); their npy_agg_* forms take one
** .npy per row (an array_record value) and give a .npy. */
static const sql_function aggregate_functions[] = {
    {"ar_min", 1, NULL, agg_step, agg_final, AGG_MIN},
    {"ar_max", 1, NULL, agg_step, agg_final, AGG_MAX},
    {"npy_agg_min", 1, NULL, agg_step, agg_final, AGG_MIN | AGG_NPY},
    {"npy_agg_max", 1, NULL, agg_step, agg_final, AGG_MAX | AGG_NPY},
};

static const sql_window_function window_functions[] = {
    {{"ar_sum", 1, NULL, agg_step, agg_final, AGG_SUM}, agg_value, agg_inverse},
    {{"ar_mean", 1, NULL, agg_step, agg_final, AGG_MEAN}, agg_value, agg_inverse},
    {{"ar_mean", 2, NULL, agg_step, agg_final, AGG_MEAN}, agg_value, agg_inverse},
    {{"ar_ema", 2, NULL, agg_step, agg_final, AGG_EMA}, agg_value, agg_inverse},
    {{"ar_median", 1, NULL, agg_step, agg_final, AGG_MEDIAN}, agg_value, agg_inverse},
    {{"ar_trimmed_mean", 2, NULL, agg_step, agg_final, AGG_TRIMMED}, agg_value, agg_inverse},
    {{"ar_stack", 1, NULL, agg_step, agg_final, AGG_STACK}, agg_value, agg_inverse},
    {{"npy_agg_sum", 1, NULL, agg_step, agg_final, AGG_SUM | AGG_NPY}, agg_value, agg_inverse},
    {{"npy_agg_mean", 1, NULL, agg_step, agg_final, AGG_MEAN | AGG_NPY}, agg_value, agg_inverse},
    {{"npy_agg_mean", 2, NULL, agg_step, agg_final, AGG_MEAN | AGG_NPY}, agg_value, agg_inverse},
    {{"npy_agg_ema", 2, NULL, agg_step, agg_final, AGG_EMA | AGG_NPY}, agg_value, agg_inverse},
    {{"npy_agg_median", 1, NULL, agg_step, agg_final, AGG_MEDIAN | AGG_NPY}, agg_value, agg_inverse},
    {{"npy_agg_trimmed_mean", 2, NULL, agg_step, agg_final, AGG_TRIMMED | AGG_NPY}, agg_value, agg_inverse},
    {{"npy_agg_stack", 1, NULL, agg_step, agg_final, AGG_STACK | AGG_NPY}, agg_value, agg_inverse},
};

int sql_aggregate_register(sqlite3 *db, char **pzErrMsg) {
  int rc = SQL_REGISTER_TABLE(db, aggregate_functions, pzErrMsg);
  return rc == SQLITE_OK ? SQL_REGISTER_WINDOW_TABLE(db, window_functions, pzErrMsg) : rc;
}
