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
** They are window functions too: a row leaving the frame leaves the kept
** rows (and its weight), and each value is computed from the frame's rows as
** the aggregate would be. A frame with too few rows for f (or k) gives NULL
** rather than an error, so frames may grow from a run's first round.
**
** Distances are computed block by block: a block of every row's elements is
** converted to double once, and all pairwise partial sums are taken while it
** is in cache, so each row is read once per block, not once per pair.
*/
#include "sql/sql_aggregate.h"
#include "sql/sql_math.h"
#include "sql/sql_modules.h"
SQLITE_EXTENSION_INIT3

#include <math.h>
#include <string.h>

#include "codec/array.h"
#include "codec/json.h"
#include "codec/keyset.h"
#include "math/robust.h"

/* The state: sql_aggregate.c's (keys, layout, kept rows, failure), then
** what Krum adds. Op codes AGG_KRUM, AGG_KRUM_SCORES, AGG_BULYAN. */
typedef struct rb_state {
  agg_state agg;
  buf_t weights; /* one double per kept row */
  sqlite3_int64 f, k;
} rb_state;

/* An INTEGER argument that must be the same in every row. */
static int rb_int_arg(sqlite3_context *ctx, rb_state *st, sqlite3_value *v, const char *what, sqlite3_int64 *slot) {
  sqlite3_int64 x;
  int t = sqlite3_value_type(v);
  if (t != SQLITE_INTEGER)
    return agg_fail(ctx, &st->agg, t == SQLITE_NULL ? "%s is NULL in row %lld" : "%s must be an integer (row %lld)",
                    what, (long long)st->agg.cur);
  x = sqlite3_value_int64(v);
  if (st->agg.nrows && x != *slot)
    return agg_fail(ctx, &st->agg, "%s must be the same in every row (%lld in row %lld, %lld before)", what,
                    (long long)x, (long long)st->agg.cur, (long long)*slot);
  *slot = x;
  return 1;
}

/* The per-row arguments: Krum's weight into *w, f, and Krum's k. */
static int rb_args(sqlite3_context *ctx, rb_state *st, int op, int argc, sqlite3_value **argv, double *w) {
  agg_state *a = &st->agg;
  *w = 1;
  if (op == AGG_KRUM && !agg_number(ctx, a, argv[1], "weight", a->cur, w)) return 0;
  if (!rb_int_arg(ctx, st, argv[op == AGG_KRUM ? 2 : 1], "f", &st->f)) return 0;
  if (st->f < 0)
    return agg_fail(ctx, a, "f (the number of malicious clients) must be >= 0, got %lld", (long long)st->f);
  if (op != AGG_KRUM) return 1;
  if (argc > 3 && !rb_int_arg(ctx, st, argv[3], "k", &st->k)) return 0;
  if (argc <= 3) st->k = 1;
  if (st->k < 1) return agg_fail(ctx, a, "k (the number of rows to select) must be >= 1, got %lld", (long long)st->k);
  return 1;
}

/* A row is checked as sql_aggregate.c checks it, but the rows kept are
** capped before its keys are matched. */
static void rb_step(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  rb_state *st = (rb_state *)(void *)agg_get(ctx, sizeof(rb_state));
  agg_state *a;
  int op = SQL_OP(ctx), i, *pos;
  npy_array *arrays = NULL;
  unsigned char *kept = NULL;
  double w;
  record_t rec;
  if (!st) return;
  a = &st->agg;
  if (!st->weights.limit) buf_init(&st->weights, UINT64_MAX); /* the first row */
  a->cur = a->row++;
  if (a->failed || sqlite3_value_type(argv[0]) == SQLITE_NULL) return;
  record_init(&rec);
  if (!agg_parse(ctx, a, argv[0], &rec, &arrays, a->cur) || !rb_args(ctx, st, op, argc, argv, &w) ||
      !agg_open(ctx, a, op, &rec, arrays, a->cur) || !agg_keep_row(ctx, a, &kept) ||
      !agg_match(ctx, a, &rec, arrays, a->cur))
    goto done;
  pos = AGG_POSITIONS(&rec, arrays);
  for (i = 0; kept && i < rec.n; i++) am_copy_native(&arrays[i], 0, kept + a->keys[pos[i]].at, a->scratch);
  if (buf_append(&st->weights, &w, sizeof(w)), st->weights.rc) {
    agg_nomem(ctx, a);
    goto done;
  }
  a->nrows++;
done:
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
static int rb_scores(const rb_state *rb, double *scores) {
  const agg_state *st = &rb->agg;
  uint64_t n = st->nrows, cells, r;
  const unsigned char **rows;
  rb_seg *segs;
  double *dist;
  int i, rc;
  if (size_mul(n, n, &cells) || size_mul(cells, sizeof(double), &cells)) return CODEC_NOMEM;
  dist = codec_malloc(cells ? cells : 1);
  rows = codec_malloc(n * sizeof(*rows) + n * sizeof(double));
  segs = codec_malloc((uint64_t)(st->nkeys ? st->nkeys : 1) * sizeof(*segs));
  if (!dist || !rows || !segs) {
    rc = CODEC_NOMEM;
    goto done;
  }
  memset(dist, 0, (size_t)cells);
  for (r = 0; r < n; r++) rows[r] = agg_kept_row(st, r);
  for (i = 0; i < st->nkeys; i++) {
    segs[i].at = st->keys[i].at;
    segs[i].numel = st->keys[i].numel;
    segs[i].type = st->keys[i].type;
  }
  rc = rb_sqdist_rows(rows, (size_t)n, segs, (size_t)st->nkeys, block_len(n), dist);
  if (rc == CODEC_OK) rb_krum_scores(dist, (size_t)n, (size_t)rb->f, scores, (double *)(void *)(rows + n));
done:
  codec_free(dist);
  codec_free(rows);
  codec_free(segs);
  return rc;
}

/* The selected rows (sel[0..ns), in score order) combined into out: FedAvg
** with weights w / total (Krum), or Bulyan's rule (beta). Each key's result
** type (k->out) is FedAvg's or Bulyan's (see sql_aggregate.c). */
static int rb_combine(const rb_state *rb, int op, const size_t *sel, size_t ns, double total, size_t beta, buf_t *out) {
  const agg_state *st = &rb->agg;
  const double *w = (const double *)(const void *)rb->weights.p;
  const unsigned char **rows = codec_malloc((uint64_t)ns * (sizeof(*rows) + sizeof(double)) + 1);
  double *wsel;
  size_t s;
  int i, rc = CODEC_OK;
  if (!rows) return CODEC_NOMEM;
  wsel = (double *)(void *)(rows + ns);
  for (s = 0; s < ns; s++) {
    rows[s] = agg_kept_row(st, sel[s]);
    wsel[s] = w[sel[s]] / total;
  }
  for (i = 0; i < st->nkeys && !out->rc && rc == CODEC_OK; i++) {
    const agg_key *k = &st->keys[i];
    npy_array res;
    unsigned char *dst;
    rb_seg seg;
    agg_key_result(st, op, k, &res);
    if (!(dst = array_begin_result(out, k->key, &res))) break;
    seg.at = k->at;
    seg.numel = k->numel;
    seg.type = k->type;
    /* Krum: Flower's aggregate_arrayrecords, rows in the order selected. */
    rc = rb_combine_rows(rows, op == AGG_KRUM ? wsel : NULL, ns, beta, &seg, k->out, dst, block_len(ns));
  }
  codec_free(rows);
  return rc != CODEC_OK ? rc : out->rc;
}

/* Is the frame too small for f (and k)? A window's value is then NULL. */
static int rb_too_few(const rb_state *rb, int op, uint64_t n) {
  return (uint64_t)rb->f >= n || (op == AGG_KRUM && (uint64_t)rb->k > n) ||
         (op == AGG_BULYAN && n < 4 * (uint64_t)rb->f + 3);
}

/* The result over the rows kept (the state stays as it is). */
static void rb_result(sqlite3_context *ctx, rb_state *rb, int op) {
  agg_state *st = &rb->agg;
  double *scores = NULL;
  size_t *order = NULL, ns, beta = 0, s;
  uint64_t n = st->nrows;
  double total = 0;
  buf_t out;
  buf_init(&out, 0);
  if (st->win && rb_too_few(rb, op, n)) return; /* NULL */
  if ((uint64_t)rb->f >= n) {
    sql_error(ctx, "f = %lld malicious clients needs more than %lld rows", (long long)rb->f, (long long)n);
    goto done;
  }
  if (op == AGG_KRUM && (uint64_t)rb->k > n) {
    sql_error(ctx, "k = %lld rows to select, but only %lld rows", (long long)rb->k, (long long)n);
    goto done;
  }
  if (op == AGG_BULYAN && n < 4 * (uint64_t)rb->f + 3) {
    sql_error(ctx, "Bulyan needs at least 4f + 3 = %lld rows for f = %lld, got %lld", (long long)(4 * rb->f + 3),
              (long long)rb->f, (long long)n);
    goto done;
  }
  scores = codec_malloc(n * sizeof(double));
  order = codec_malloc(n * sizeof(size_t));
  if (!scores || !order || rb_scores(rb, scores) != CODEC_OK) {
    sqlite3_result_error_nomem(ctx);
    goto done;
  }
  if (op == AGG_KRUM_SCORES) {
    sql_buf_init(ctx, &out);
    buf_append(&out, "[", 1);
    for (s = 0; s < n; s++) {
      if (s) buf_append(&out, ",", 1);
      if (isfinite(scores[s]))
        json_put_float(&out, scores[s], 64);
      else
        buf_append(&out, "null", 4);
    }
    buf_append(&out, "]", 1);
    sql_result_buf(ctx, &out, 1);
    goto done;
  }
  rb_argsort(scores, (size_t)n, order);
  if (op == AGG_KRUM) {
    const double *w = (const double *)(const void *)rb->weights.p;
    ns = (size_t)rb->k;
    for (s = 0; s < ns; s++) total += w[order[s]]; /* Python's sum, in the order selected */
    if (!(total > 0)) {
      sql_error(ctx, "total weight of the %zu selected rows is %g; it must be positive", ns, total);
      goto done;
    }
  } else {
    ns = (size_t)(n - 2 * (uint64_t)rb->f); /* theta */
    beta = ns - 2 * (size_t)rb->f;
  }
  {
    uint64_t size;
    if (!agg_result_total(st, op, &size) || size > sql_limit(ctx)) {
      sqlite3_result_error_toobig(ctx);
      goto done;
    }
    if (!size) {
      sqlite3_result_zeroblob(ctx, 0); /* records without arrays */
      goto done;
    }
    sql_buf_init(ctx, &out);
    if (buf_reserve(&out, size) == CODEC_OK && rb_combine(rb, op, order, ns, total, beta, &out) == CODEC_NOMEM)
      out.rc = CODEC_NOMEM;
    sql_result_buf(ctx, &out, 0);
  }
done:
  buf_free(&out);
  codec_free(scores);
  codec_free(order);
}

static void rb_final(sqlite3_context *ctx) {
  rb_state *rb = sqlite3_aggregate_context(ctx, 0);
  if (!rb) return;
  if (!rb->agg.failed && rb->agg.nrows) rb_result(ctx, rb, SQL_OP(ctx));
  agg_free(&rb->agg);
  buf_free(&rb->weights);
}

/* Window forms: the current frame's value; a row leaving the frame. */
static void rb_value(sqlite3_context *ctx) {
  rb_state *rb = sqlite3_aggregate_context(ctx, 0);
  if (!rb) return;
  rb->agg.win = 1;
  if (!rb->agg.failed && rb->agg.nrows) rb_result(ctx, rb, SQL_OP(ctx));
}

static void rb_inverse(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  rb_state *rb = (rb_state *)(void *)agg_get(ctx, sizeof(rb_state));
  (void)argc;
  if (!rb) return;
  rb->agg.win = 1;
  rb->agg.removed++;
  if (rb->agg.failed || sqlite3_value_type(argv[0]) == SQLITE_NULL) return; /* a NULL row was skipped */
  agg_drop_kept(&rb->agg);
  rb->weights.n -= sizeof(double); /* the rows leave in the order they came */
  memmove(rb->weights.p, rb->weights.p + sizeof(double), (size_t)rb->weights.n);
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
static void dp_rewrite(sqlite3_context *ctx, const record_t *rec, double factor, rb_rng *rng, unsigned char *scratch) {
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
      codec_span key = rec.items[i].key;
      sql_error(ctx, "key '%s': complex arrays are not supported", codec_quote(q, sizeof(q), key.p, key.n));
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

static const sql_window_function robust_aggregates[] = {
    {{"ar_krum", 3, NULL, rb_step, rb_final, AGG_KRUM}, rb_value, rb_inverse},
    {{"ar_krum", 4, NULL, rb_step, rb_final, AGG_KRUM}, rb_value, rb_inverse},
    {{"ar_krum_scores", 2, NULL, rb_step, rb_final, AGG_KRUM_SCORES}, rb_value, rb_inverse},
    {{"ar_bulyan", 2, NULL, rb_step, rb_final, AGG_BULYAN}, rb_value, rb_inverse},
};

static const sql_function robust_functions[] = {
    {"ar_clip_norm", 2, ar_clip_norm_func, NULL, NULL, 0},
    {"ar_add_noise", 3, ar_add_noise_func, NULL, NULL, 0},
};

/* Without a seed the noise differs on every call: not deterministic. */
static const sql_function random_functions[] = {
    {"ar_add_noise", 2, ar_add_noise_func, NULL, NULL, 0},
};

int sql_robust_register(sqlite3 *db, char **pzErrMsg) {
  int rc = SQL_REGISTER_WINDOW_TABLE(db, robust_aggregates, pzErrMsg);
  if (rc == SQLITE_OK) rc = SQL_REGISTER_TABLE(db, robust_functions, pzErrMsg);
  if (rc == SQLITE_OK)
    rc = sql_register_flags(db, random_functions, (int)(sizeof(random_functions) / sizeof(random_functions[0])),
                            SQL_VOLATILE, pzErrMsg);
  return rc;
}
