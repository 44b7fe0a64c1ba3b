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
#include "math/exactsum.h"

/* Op codes (SQL_OP & AGG_OP_MASK). The ones from AGG_MEDIAN on keep rows;
** those from AGG_KRUM on are sql_robust.c's (ar_krum, ar_krum_scores,
** ar_bulyan), which use this state and its row checks. */
enum {
  AGG_SUM,
  AGG_MEAN,
  AGG_EMA,
  AGG_MIN,
  AGG_MAX,
  AGG_MEDIAN,
  AGG_TRIMMED,
  AGG_STACK,
  AGG_KRUM,
  AGG_KRUM_SCORES,
  AGG_BULYAN
};
#define AGG_OP_MASK 15
/* Flag: the per-array form (npy_agg_*): rows are .npy values, the result a .npy. */
#define AGG_NPY 16

#define KEEPS_ROWS(op) ((op) >= AGG_MEDIAN)

typedef struct agg_key {
  codec_span key;  /* into st->arena once the layout is complete */
  uint64_t key_at; /* offset of the key in st->arena */
  dt_type type;    /* element type of every row */
  dt_type out;     /* result type */
  int fortran;     /* memory order accumulated (and of the result) */
  int ndim;
  int64_t *shape; /* ndim dimensions, in st->dims */
  uint64_t numel;
  uint64_t at;    /* offset of its accumulator, or of its slice of a kept row */
  uint64_t bytes; /* size of the accumulator or slice */
} agg_key;

typedef struct agg_state {
  int started, failed, laid_out;
  int npy;                     /* the per-array form (AGG_NPY) */
  int64_t row, cur, first_row; /* rows seen; the current one; the one that fixed the layout */
  uint64_t nrows;              /* records aggregated (in the frame, for a window) */
  int nkeys;
  agg_key *keys;
  int64_t *dims;
  buf_t arena;    /* key bytes */
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
  ** on; a floating sum is then an exact expansion (math/exactsum.h): its
  ** leading components in mem as before, the XS_N - 1 others in comp,
  ** acc_bytes each; tw is the total weight's expansion */
  int win;
  unsigned char *comp;
  double tw[XS_N];
  int64_t removed;    /* rows removed from the frame (NULL ones included) */
  int64_t plain_rows; /* rows before this one were added by the plain aggregate */
  /* ar_mean: the only row so far is in the sums unweighted (agg_add) */
  int first_w_pending;
  double first_w;
} agg_state;

int agg_fail(sqlite3_context *ctx, agg_state *st, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
int agg_nomem(sqlite3_context *ctx, agg_state *st);
void agg_free(agg_state *st);

/* The state, started on first use (NULL after reporting no memory). size:
** of the aggregate context, which starts with the agg_state (sql_robust.c
** keeps more after it). */
agg_state *agg_get(sqlite3_context *ctx, size_t size);
/* The row's arrays (not NULL): parsed, each checked against the layout
** (fixing it from the first row). `row` names the row in messages. *arrays
** is allocated (codec_free it, and record_clear rec), also on failure.
** Returns 1, or 0 after reporting. */
int agg_read_row(sqlite3_context *ctx, agg_state *st, int op, sqlite3_value *v, record_t *rec, npy_array **arrays,
                 int64_t row);
/* agg_read_row in steps (a caller reads its other arguments in between):
** agg_parse parses the value and allocates *arrays; agg_open opens the
** arrays (fixing the layout from the first row); agg_match checks them
** against the layout and sets AGG_POSITIONS. Each returns 1, or 0 after
** reporting. */
int agg_parse(sqlite3_context *ctx, agg_state *st, sqlite3_value *v, record_t *rec, npy_array **arrays, int64_t row);
int agg_open(sqlite3_context *ctx, agg_state *st, int op, const record_t *rec, npy_array *arrays, int64_t row);
int agg_match(sqlite3_context *ctx, agg_state *st, const record_t *rec, npy_array *arrays, int64_t row);
/* After agg_read_row: the layout position of each item of rec. */
#define AGG_POSITIONS(rec, arrays) ((int *)(void *)((arrays) + ((rec)->n ? (rec)->n : 1)))
/* A weight, beta or alpha argument: a finite number. */
int agg_number(sqlite3_context *ctx, agg_state *st, sqlite3_value *v, const char *what, int64_t row, double *out);
/* Is key k's sum kept in doubles (floating and complex results)? */
int agg_float_acc(int op, const agg_key *k);
/* Room for the current row in the kept rows (capped at SQLITE_LIMIT_LENGTH):
** *kept, NULL when rows have no bytes. Returns 1, or 0 after reporting. */
int agg_keep_row(sqlite3_context *ctx, agg_state *st, unsigned char **kept);
/* The kept row r of the frame. */
const unsigned char *agg_kept_row(const agg_state *st, uint64_t r);

/* Results. The result array of key k (rows = the number of records, for stack). */
void agg_key_result(const agg_state *st, int op, const agg_key *k, npy_array *res);
/* The bytes of the whole result into *total; 0 when that overflows. */
int agg_result_total(const agg_state *st, int op, uint64_t *total);
/* Writes key k's floating result at dst: its doubles divided by div. */
typedef void agg_store_fn(const agg_state *st, const agg_key *k, unsigned char *dst, double div);
/* The result (a record, or a .npy for the per-array form) of the
** accumulators as they stand, into a new buffer; floating keys through
** store (NULL: the plain doubles divided by div). */
void agg_result_copy(sqlite3_context *ctx, agg_state *st, int op, agg_store_fn *store, double div);
/* The result of the kept rows (ar_median, ar_trimmed_mean, ar_stack). */
void agg_result_kept(sqlite3_context *ctx, agg_state *st, int op);

/* ar_mean: weigh the first row, held unweighted while it is the only one
** (a plain result of one row). */
void agg_weigh_first(agg_state *st, int op);

/* sql_window.c */
void agg_value(sqlite3_context *ctx);
void agg_inverse(sqlite3_context *ctx, int argc, sqlite3_value **argv);
/* Enter window mode (idempotent): ar_sum and ar_mean switch to exact
** sums; the rows before row `plain_rows` were added by the plain
** aggregate. Returns 1, or 0 after reporting. */
int agg_win_begin(sqlite3_context *ctx, agg_state *st, int op, int64_t plain_rows);
/* Fold a row into the exact sums (window mode): w * a into key k, the
** product exact, or rounded as the plain aggregate rounds it (exact 0). */
void agg_add_comp(agg_state *st, const agg_key *k, const npy_array *a, double w, int exact);
/* A kept row leaves: the frame starts one row later (the buffer is
** compacted when the rows that left fill half of it). */
void agg_drop_kept(agg_state *st);
/* The result of ar_sum / ar_mean from the exact sums (window mode). */
void agg_result_comp(sqlite3_context *ctx, agg_state *st, int op);

#endif
