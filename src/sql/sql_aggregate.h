/* SPDX-License-Identifier: Apache-2.0 */
/*
** sql_aggregate.h — internal to the aggregates: the state every record
** aggregate keeps (sql_aggregate.c steps and finishes it; sql_window.c adds
** what a window function needs: the current frame's value and removing the
** oldest row) and the helpers both files share.
*/
#ifndef AR_SQL_AGGREGATE_H
#define AR_SQL_AGGREGATE_H

#include "sql/sql_util.h"

#include "codec/keyset.h"

/* Op codes (SQL_OP & AGG_OP_MASK). The ones from AGG_MEDIAN on keep rows. */
enum { AGG_SUM, AGG_MEAN, AGG_EMA, AGG_MIN, AGG_MAX, AGG_MEDIAN, AGG_TRIMMED, AGG_STACK };
#define AGG_OP_MASK 15
/* Flag: the per-array form (npy_agg_*): rows are .npy values, the result a .npy. */
#define AGG_NPY 16

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
  int started, failed, laid_out;
  int npy;                     /* the per-array form (AGG_NPY) */
  int64_t row, cur, first_row; /* rows seen; the current one; the one that fixed the layout */
  uint64_t nrows;         /* records aggregated (in the frame, for a window) */
  int nkeys;
  agg_key *keys;
  int64_t *dims;
  buf_t arena; /* key bytes */
  keyset_t index; /* key -> position, built when a row has another order */
  unsigned char *scratch;
  double total_weight, beta;
  /* accumulating aggregates: [gap | accumulators], see sql_aggregate.c;
  ** a result buffer, so the result can be handed to SQLite as it is */
  buf_t mem;
  uint64_t gap, result_size, acc_bytes;
  /* aggregates keeping rows: every row's arrays, one row after another;
  ** the first `dropped` rows have left the window frame */
  buf_t kept;
  uint64_t row_bytes, dropped;
  /* window functions (sql_window.c): set from the first value or removal
  ** on; comp holds the compensation terms of the floating sums, c then c2,
  ** acc_bytes each, and tw_c, tw_c2 those of the total weight */
  int win;
  unsigned char *comp;
  double tw_c, tw_c2;
  int64_t removed; /* rows removed from the frame (NULL ones included) */
} agg_state;

int agg_fail(sqlite3_context *ctx, agg_state *st, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
int agg_nomem(sqlite3_context *ctx, agg_state *st);
void agg_free(agg_state *st);

/* The state, started on first use (NULL after reporting no memory). */
agg_state *agg_get(sqlite3_context *ctx);
/* The row's arrays (not NULL): parsed, each checked against the layout
** (fixing it from the first row). `row` names the row in messages. *arrays
** is allocated (codec_free it, and record_clear rec), also on failure.
** Returns 1, or 0 after reporting. */
int agg_read_row(sqlite3_context *ctx, agg_state *st, int op, sqlite3_value *v, record_t *rec,
                 npy_array **arrays, int64_t row);
/* After agg_read_row: the layout position of each item of rec. */
#define AGG_POSITIONS(rec, arrays) ((int *)(void *)((arrays) + ((rec)->n ? (rec)->n : 1)))
/* A weight, beta or alpha argument: a finite number. */
int agg_number(sqlite3_context *ctx, agg_state *st, sqlite3_value *v, const char *what, int64_t row, double *out);
/* Is key k's sum kept in doubles (floating and complex results)? */
int agg_float_acc(int op, const agg_key *k);

/* Results. The result (a record, or a .npy for the per-array form) of the
** accumulators as they stand, into a new buffer: each key's doubles (from
** `acc`, the accumulators unless given) divided by div. */
void agg_result_copy(sqlite3_context *ctx, agg_state *st, int op, const double *const *acc, double div);
/* The result of the kept rows (ar_median, ar_trimmed_mean, ar_stack). */
void agg_result_kept(sqlite3_context *ctx, agg_state *st, int op);

/* sql_window.c */
void agg_value(sqlite3_context *ctx);
void agg_inverse(sqlite3_context *ctx, int argc, sqlite3_value **argv);
/* Enter window mode (idempotent): ar_sum and ar_mean switch to compensated
** sums. Returns 1, or 0 after reporting. */
int agg_win_begin(sqlite3_context *ctx, agg_state *st, int op);
/* Fold a row into the compensated sums (window mode): w * a into key k. */
void agg_add_comp(agg_state *st, const agg_key *k, const npy_array *a, double w);
/* The compensated result of ar_sum / ar_mean (window mode). */
void agg_result_comp(sqlite3_context *ctx, agg_state *st, int op);

#endif
