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
** then on every floating sum is an exact expansion (math/exactsum.h), as is
** the total weight, and a row leaves by adding -w * x. A slide is O(model)
** and removing a row restores the sums exactly, so nothing drifts however
** large the values that came and went; a result is the exact frame sum
** (or mean: expansion over expansion) rounded about once. Rows stepped
** before the first value (frames reaching FOLLOWING rows) were added
** plainly: their sum is what a plain ar_sum gives, rounded once as it
** stood. Such a row leaves as it came (w * x rounded as the plain
** aggregate rounds it), so trailing frames (... PRECEDING AND CURRENT ROW:
** one plain row) stay exact. Integer sums stay exact int64 (a row leaves by wrapping
** subtraction).
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

/* Key k's expansions: piece 0 in the accumulators (st->mem), pieces 1 ..
** XS_N - 1 in comp's slices, acc_bytes each. */
static void key_pieces(const agg_state *st, const agg_key *k, double **comp) {
  int j;
  comp[0] = (double *)(void *)(st->mem.p + st->gap + k->at);
  for (j = 1; j < XS_N; j++) comp[j] = (double *)(void *)(st->comp + (size_t)(j - 1) * (size_t)st->acc_bytes + k->at);
}

int agg_win_begin(sqlite3_context *ctx, agg_state *st, int op, int64_t plain_rows) {
  uint64_t bytes;
  int j;
  if (!st->win) st->plain_rows = plain_rows;
  st->win = 1;
  if ((op != AGG_SUM && op != AGG_MEAN) || !st->laid_out || st->comp || !st->acc_bytes) return 1;
  /* the plain sums so far become the leading components, the rest zero */
  if (size_mul(st->acc_bytes, XS_N - 1, &bytes) || bytes > SIZE_MAX || !(st->comp = codec_malloc((size_t)bytes)))
    return agg_nomem(ctx, st);
  memset(st->comp, 0, (size_t)bytes);
  st->tw[0] = st->total_weight;
  for (j = 1; j < XS_N; j++) st->tw[j] = 0;
  if (st->first_w_pending) { /* one row, unweighted (agg_add): weigh it exactly */
    int i;
    st->first_w_pending = 0;
    st->plain_rows = st->first_row;
    for (i = 0; i < st->nkeys; i++) {
      const agg_key *k = &st->keys[i];
      double *comp[XS_N], v[XS_N];
      uint64_t e, n = k->bytes / 8;
      if (!agg_float_acc(op, k)) continue;
      key_pieces(st, k, comp);
      for (e = 0; e < n; e++) {
        memset(v, 0, sizeof v);
        xs_add_product(v, st->first_w, comp[0][e]);
        for (j = 0; j < XS_N; j++) comp[j][e] = v[j];
      }
    }
  }
  return 1;
}

void agg_add_comp(agg_state *st, const agg_key *k, const npy_array *a, double w, int exact) {
  double *comp[XS_N];
  int j;
  if (!st->mem.p || !k->bytes) return; /* empty arrays */
  key_pieces(st, k, comp);
  if (!st->nrows) /* an empty frame starts again from zero */
    for (j = 0; j < XS_N; j++) memset(comp[j], 0, (size_t)k->bytes);
  xs_axpy(a, k->fortran, w, exact, comp, st->scratch);
}

/* acc = -acc in wrapping int64 arithmetic. */
static void negate_i64(int64_t *acc, uint64_t n) {
  uint64_t j;
  for (j = 0; j < n; j++) acc[j] = (int64_t)(0 - (uint64_t)acc[j]);
}

/* Are the sums of a block single doubles (their second pieces, c1, zero)? */
static int one_piece(const double *c1, uint64_t n) {
  uint64_t i;
  int zero = 1;
  for (i = 0; i < n; i++) zero &= c1[i] == 0;
  return zero;
}

/* agg_result_copy's store in window mode: the exact sums, block by block,
** divided by the total weight's expansion (mean) or rounded (sum). */
static void store_comp(const agg_state *st, const agg_key *k, unsigned char *dst, double div) {
  double *comp[XS_N];
  int pairs = dt_kind(k->out) == DT_KIND_COMPLEX, j, mean = div != 1; /* a total weight of 1 divides nothing */
  size_t out_size = dt_size(k->out);
  double block[2 * KN_BLOCK], v[XS_N];
  uint64_t e, i, m;
  key_pieces(st, k, comp);
  for (e = 0; e < k->numel; e += m) {
    uint64_t at = pairs ? 2 * e : e, n;
    m = k->numel - e < KN_BLOCK ? k->numel - e : KN_BLOCK;
    n = pairs ? 2 * m : m;
    if (one_piece(comp[1] + at, n) && (!mean || st->tw[1] == 0)) { /* one rounding, as the plain aggregate */
      kn_div_store(k->out, comp[0] + at, pairs, mean ? st->tw[0] : 1.0, dst + e * out_size, (size_t)m);
      continue;
    }
    for (i = 0; i < n; i++) {
      for (j = 0; j < XS_N; j++) v[j] = comp[j][at + i];
      block[i] = mean ? xs_div(v, st->tw) : xs_value(v);
    }
    kn_div_store(k->out, block, pairs, 1.0, dst + e * out_size, (size_t)m);
  }
}

void agg_result_comp(sqlite3_context *ctx, agg_state *st, int op) {
  double div = 1;
  if (op == AGG_MEAN) {
    div = xs_value(st->tw);
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
  if (!agg_win_begin(ctx, st, op, st->row)) return;
  if (KEEPS_ROWS(op))
    agg_result_kept(ctx, st, op);
  else if (op == AGG_EMA)
    agg_result_copy(ctx, st, op, NULL, 1.0);
  else
    agg_result_comp(ctx, st, op);
}

void agg_drop_kept(agg_state *st) {
  st->dropped++;
  st->nrows--;
  if (!st->nrows) {
    st->dropped = 0;
    st->kept.n = 0;
  } else if (st->dropped >= st->nrows) { /* the rows that left fill half the buffer */
    /* Rows of no bytes (records of no or empty arrays) have no buffer. */
    if (st->row_bytes)
      memmove(st->kept.p, st->kept.p + st->dropped * st->row_bytes, (size_t)(st->nrows * st->row_bytes));
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
  if (!agg_win_begin(ctx, st, op, st->row)) return;
  if (KEEPS_ROWS(op)) { /* the row was checked when it came */
    agg_drop_kept(st);
    return;
  }
  record_init(&rec);
  if (!agg_read_row(ctx, st, op, argv[0], &rec, &arrays, row)) goto done;
  if (op == AGG_MEAN && argc > 1 && !agg_number(ctx, st, argv[1], "weight", row, &w)) goto done;
  pos = AGG_POSITIONS(&rec, arrays);
  for (i = 0; i < rec.n; i++) {
    const agg_key *k = &st->keys[pos[i]];
    if (agg_float_acc(op, k)) {
      /* a row the plain aggregate added leaves as it came: w * x rounded */
      agg_add_comp(st, k, &arrays[i], -w, row >= st->plain_rows);
    } else if (st->mem.p && k->bytes) { /* integer sum: acc = -(-acc + x) */
      int64_t *acc = (int64_t *)(void *)(st->mem.p + st->gap + k->at);
      negate_i64(acc, k->numel);
      am_add_int(&arrays[i], k->fortran, acc, 0, st->scratch);
      negate_i64(acc, k->numel);
    }
  }
  xs_add(st->tw, -w);
  st->nrows--;
done:
  codec_free(arrays);
  record_clear(&rec);
}
