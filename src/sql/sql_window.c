/* SPDX-License-Identifier: Apache-2.0 */
/*
** sql_window.c — the record aggregates as window functions (OVER ...):
** xValue (the current frame's result, the aggregate going on) and xInverse
** (the frame's oldest row leaves: SQLite removes rows in the order it added
** them). Registered with the aggregates in sql_aggregate.c.
**
** ar_sum, ar_mean: SQLite gives no sign in xStep of a window, so a state
** starts as the plain aggregate (one double per element, the plain result
** bit for bit) and turns into a window at its first value or removal: from
** then on every floating sum is a compensated triple (am_axpy_comp), as is
** the total weight, and a row leaves by adding -w * x. That keeps a slide
** O(model) and free of drift: the frame's sum is exact up to far below an
** ulp however large the values that came and went. Integer sums stay exact
** int64 (a row leaves by wrapping subtraction).
**
** ar_median, ar_trimmed_mean, ar_stack keep rows: a row leaves by moving
** the start of the kept rows; the buffer is compacted when the rows that
** left fill half of it, so a slide is O(model) amortised.
**
** ar_ema cannot forget a row: its frames must start at UNBOUNDED PRECEDING
** (the default frame), and a removal fails saying so.
*/
#include "sql/sql_aggregate.h"
SQLITE_EXTENSION_INIT3

#include <string.h>

#include "codec/array.h"
#include "math/arraymath.h"

int agg_win_begin(sqlite3_context *ctx, agg_state *st, int op) {
  st->win = 1;
  if ((op != AGG_SUM && op != AGG_MEAN) || !st->laid_out || st->comp || !st->acc_bytes) return 1;
  /* c then c2, zero: the plain sums so far are exact as they stand */
  if (!(st->comp = codec_malloc(2 * st->acc_bytes))) return agg_nomem(ctx, st); /* acc_bytes fits memory */
  memset(st->comp, 0, (size_t)(2 * st->acc_bytes));
  st->tw_c = st->tw_c2 = 0;
  return 1;
}

void agg_add_comp(agg_state *st, const agg_key *k, const npy_array *a, double w) {
  double *s, *c, *c2;
  if (!st->mem.p || !k->bytes) return; /* empty arrays */
  s = (double *)(void *)(st->mem.p + st->gap + k->at);
  c = (double *)(void *)(st->comp + k->at);
  c2 = (double *)(void *)(st->comp + st->acc_bytes + k->at);
  if (!st->nrows) { /* an empty frame starts again from zero */
    memset(s, 0, (size_t)k->bytes);
    memset(c, 0, (size_t)k->bytes);
    memset(c2, 0, (size_t)k->bytes);
  }
  am_axpy_comp(a, k->fortran, w, s, c, c2, st->scratch);
}

/* acc = -acc in wrapping int64 arithmetic. */
static void negate_i64(int64_t *acc, uint64_t n) {
  uint64_t j;
  for (j = 0; j < n; j++) acc[j] = (int64_t)(0 - (uint64_t)acc[j]);
}

/* agg_result_copy's store in window mode: the compensated sums, block by
** block, divided by div. */
static void store_comp(const agg_state *st, const agg_key *k, unsigned char *dst, double div) {
  const double *s = (const double *)(const void *)(st->mem.p + st->gap + k->at),
               *c = (const double *)(const void *)(st->comp + k->at),
               *c2 = (const double *)(const void *)(st->comp + st->acc_bytes + k->at);
  int pairs = dt_kind(k->out) == DT_KIND_COMPLEX;
  size_t out_size = dt_size(k->out);
  double block[2 * KN_BLOCK];
  uint64_t e, j, m;
  for (e = 0; e < k->numel; e += m) {
    uint64_t at = pairs ? 2 * e : e, n;
    m = k->numel - e < KN_BLOCK ? k->numel - e : KN_BLOCK;
    n = pairs ? 2 * m : m;
    for (j = 0; j < n; j++) block[j] = am_comp_value(s[at + j], c[at + j], c2[at + j]);
    kn_div_store(k->out, block, pairs, div, dst + e * out_size, (size_t)m);
  }
}

void agg_result_comp(sqlite3_context *ctx, agg_state *st, int op) {
  double div = 1;
  if (op == AGG_MEAN) {
    div = am_comp_value(st->total_weight, st->tw_c, st->tw_c2);
    if (!(div > 0)) {
      sql_error(ctx, "total weight is %g; the weights must sum to a positive number", div);
      return;
    }
  }
  agg_result_copy(ctx, st, op, store_comp, div);
}

void agg_value(sqlite3_context *ctx) {
  agg_state *st = sqlite3_aggregate_context(ctx, 0);
  int op = SQL_OP(ctx) & AGG_OP_MASK;
  if (!st || st->failed || !st->nrows) return; /* an empty frame: NULL */
  if (!agg_win_begin(ctx, st, op)) return;
  if (KEEPS_ROWS(op)) agg_result_kept(ctx, st, op);
  else if (op == AGG_EMA) agg_result_copy(ctx, st, op, NULL, 1.0);
  else agg_result_comp(ctx, st, op);
}

/* A kept row leaves: the frame starts one row later. */
static void drop_kept(agg_state *st) {
  st->dropped++;
  st->nrows--;
  if (!st->nrows) {
    st->dropped = 0;
    st->kept.n = 0;
  } else if (st->dropped >= st->nrows) { /* the rows that left fill half the buffer */
    /* Rows of no bytes (records of no or empty arrays) have no buffer. */
    if (st->row_bytes) memmove(st->kept.p, st->kept.p + st->dropped * st->row_bytes, (size_t)(st->nrows * st->row_bytes));
    st->kept.n = st->nrows * st->row_bytes;
    st->dropped = 0;
  }
}

void agg_inverse(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  agg_state *st = agg_get(ctx, sizeof(agg_state));
  int op = SQL_OP(ctx) & AGG_OP_MASK, i, *pos;
  int64_t row;
  npy_array *arrays = NULL;
  record_t rec;
  double w = 1;
  if (!st) return;
  row = st->removed++;
  if (st->failed || sqlite3_value_type(argv[0]) == SQLITE_NULL) return; /* a NULL row was skipped */
  if (op == AGG_EMA) {
    agg_fail(ctx, st,
             "the window frame must start at UNBOUNDED PRECEDING (an EMA cannot forget row %lld); "
             "use the default frame, e.g. OVER (ORDER BY round)",
             (long long)row);
    return;
  }
  if (!agg_win_begin(ctx, st, op)) return;
  if (KEEPS_ROWS(op)) { /* the row was checked when it came */
    drop_kept(st);
    return;
  }
  record_init(&rec);
  if (!agg_read_row(ctx, st, op, argv[0], &rec, &arrays, row)) goto done;
  if (op == AGG_MEAN && argc > 1 && !agg_number(ctx, st, argv[1], "weight", row, &w)) goto done;
  pos = AGG_POSITIONS(&rec, arrays);
  for (i = 0; i < rec.n; i++) {
    const agg_key *k = &st->keys[pos[i]];
    if (agg_float_acc(op, k)) {
      agg_add_comp(st, k, &arrays[i], -w);
    } else if (st->mem.p && k->bytes) { /* integer sum: acc = -(-acc + x) */
      int64_t *acc = (int64_t *)(void *)(st->mem.p + st->gap + k->at);
      negate_i64(acc, k->numel);
      am_add_int(&arrays[i], k->fortran, acc, 0, st->scratch);
      negate_i64(acc, k->numel);
    }
  }
  am_comp_add(&st->total_weight, &st->tw_c, &st->tw_c2, -w);
  st->nrows--;
done:
  codec_free(arrays);
  record_clear(&rec);
}
