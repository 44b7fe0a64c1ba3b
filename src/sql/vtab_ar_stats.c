/* SPDX-License-Identifier: Apache-2.0 */
/*
** vtab_ar_stats.c — the table-valued function ar_stats(rec): one row per
** array of a record with its summary statistics, the table to look at to spot
** a diverging layer or a poisoned update.
**
**   CREATE TABLE ar_stats(key TEXT, dtype TEXT, shape TEXT, numel INTEGER,
**     min ANY, max ANY, mean ANY, std REAL, l2 REAL, nonfinite INTEGER,
**     arg HIDDEN);
**
**   SELECT key, l2, nonfinite FROM ar_stats(readfile('model.pb'));
**   SELECT u.client, s.key, s.l2 FROM updates u, ar_stats(u.rec) s
**    WHERE s.nonfinite > 0 OR s.l2 > 100;
**
** dtype and shape describe the array as NumPy sees it (str(dtype), shape);
** numel is its element count. min and max are INTEGER for bool and integer
** arrays, REAL for floats, NULL for complex arrays (no order) and empty
** ones; mean is REAL ("[re,im]" text for complex); std is the population
** standard deviation (np.std); l2 the Euclidean norm; nonfinite counts NaN
** and infinite elements. A NaN statistic reads as NULL (SQLite has no NaN).
**
** The statistics of a row are computed the first time one of those columns
** is read — one pass over the array, plus one more for std — so a query of
** key, dtype, shape and numel never touches the payloads. The record's views
** stay valid during the scan for the reason given in vtab_array_record.c.
*/
#include "sql/sql_math.h"
#include "sql/sql_modules.h"
SQLITE_EXTENSION_INIT3

#include <math.h>
#include <string.h>

#include "codec/array.h"

enum {
  COL_KEY,
  COL_DTYPE,
  COL_SHAPE,
  COL_NUMEL,
  COL_MIN,
  COL_MAX,
  COL_MEAN,
  COL_STD,
  COL_L2,
  COL_NONFINITE,
  COL_REC /* hidden argument */
};

typedef struct stats_cursor {
  sqlite3_vtab_cursor base;
  record_t rec;
  codec_span arg; /* the argument BLOB, read back by the hidden column */
  int row;
  int opened;   /* `a` holds the current row's array */
  int computed; /* `st` holds its statistics */
  npy_array a;
  am_stats st;
  unsigned char *scratch;
} stats_cursor;

static const char ar_stats_schema[] =
    "CREATE TABLE x(key TEXT, dtype TEXT, shape TEXT, numel INTEGER, min ANY, max ANY,"
    " mean ANY, std REAL, l2 REAL, nonfinite INTEGER, arg HIDDEN)";

static int stats_open(sqlite3_vtab *vtab, sqlite3_vtab_cursor **ppCursor) {
  int rc = sql_vtab_open(sizeof(stats_cursor), ppCursor);
  (void)vtab;
  if (rc == SQLITE_OK) record_init(&((stats_cursor *)*ppCursor)->rec);
  return rc;
}

static int stats_close(sqlite3_vtab_cursor *base) {
  stats_cursor *cur = (stats_cursor *)base;
  record_clear(&cur->rec);
  codec_free(cur->scratch);
  sqlite3_free(cur);
  return SQLITE_OK;
}

static int stats_best_index(sqlite3_vtab *vtab, sqlite3_index_info *info) {
  (void)vtab;
  return sql_vtab_best_index(info, COL_REC);
}

static int stats_filter(sqlite3_vtab_cursor *base, int idxNum, const char *idxStr, int argc, sqlite3_value **argv) {
  stats_cursor *cur = (stats_cursor *)base;
  codec_err err;
  int rc;
  (void)idxStr;
  cur->rec.n = 0;
  cur->row = 0;
  cur->opened = cur->computed = 0;
  rc = sql_vtab_blob_arg(base, "ar_stats", "a record", idxNum, argc, argv, &cur->arg);
  if (rc != SQLITE_OK || !cur->arg.p) return rc; /* an error, or NULL: no rows */
  rc = record_parse(&cur->rec, cur->arg.p, cur->arg.n, &err);
  if (rc) {
    cur->rec.n = 0;
    return sql_vtab_error(base, "ar_stats", rc, &err);
  }
  return SQLITE_OK;
}

static int stats_next(sqlite3_vtab_cursor *base) {
  stats_cursor *cur = (stats_cursor *)base;
  cur->row++;
  cur->opened = cur->computed = 0;
  return SQLITE_OK;
}

static int stats_eof(sqlite3_vtab_cursor *base) {
  stats_cursor *cur = (stats_cursor *)base;
  return cur->row >= cur->rec.n;
}

static int stats_rowid(sqlite3_vtab_cursor *base, sqlite3_int64 *rowid) {
  *rowid = ((stats_cursor *)base)->row;
  return SQLITE_OK;
}

/* Open the current array (and compute its statistics when `stats`); on
** failure the error is the column's result. */
static int stats_load(stats_cursor *cur, sqlite3_context *ctx, int stats) {
  codec_err err;
  int rc;
  if (!cur->opened) {
    if ((rc = array_open(&cur->rec.items[cur->row], cur->row, &cur->a, &err)) != CODEC_OK)
      return sql_vtab_column_error(ctx, "ar_stats", rc, &err);
    cur->opened = 1;
  }
  if (stats && !cur->computed) {
    if (!cur->scratch && !(cur->scratch = sql_math_scratch(ctx))) return 0;
    sql_math_stats(&cur->a, &cur->st, cur->scratch);
    cur->computed = 1;
  }
  return 1;
}

static int stats_column(sqlite3_vtab_cursor *base, sqlite3_context *ctx, int col) {
  stats_cursor *cur = (stats_cursor *)base;
  const record_item *it = &cur->rec.items[cur->row];
  char name[DT_NAME_MAX];
  if (col == COL_KEY) {
    sqlite3_result_text64(ctx, (const char *)it->key.p, it->key.n, SQLITE_TRANSIENT, SQLITE_UTF8);
    return SQLITE_OK;
  }
  if (col == COL_REC) {
    sql_result_blob_copy(ctx, cur->arg.p, cur->arg.n); /* the argument */
    return SQLITE_OK;
  }
  if (!stats_load(cur, ctx, col >= COL_MIN)) return SQLITE_OK;
  switch (col) {
    case COL_DTYPE:
      dt_name(cur->a.dtype, name);
      sqlite3_result_text(ctx, name, -1, SQLITE_TRANSIENT);
      break;
    case COL_SHAPE: sql_result_shape(ctx, cur->a.ndim, cur->a.shape); break;
    case COL_NUMEL: sqlite3_result_int64(ctx, (sqlite3_int64)cur->a.numel); break;
    case COL_MIN:
    case COL_MAX: sql_result_minmax(ctx, &cur->st, col == COL_MAX); break;
    case COL_MEAN: sql_result_mean(ctx, &cur->st); break;
    case COL_STD: sql_result_std(ctx, &cur->st); break;
    case COL_L2: sqlite3_result_double(ctx, sqrt(cur->st.sumsq)); break;
    default: sqlite3_result_int64(ctx, (sqlite3_int64)cur->st.nonfinite); break;
  }
  return SQLITE_OK;
}

/* xCreate is NULL: an eponymous-only table-valued function. */
static sqlite3_module ar_stats_module = {
    .iVersion = 0,
    .xConnect = sql_vtab_connect,
    .xBestIndex = stats_best_index,
    .xDisconnect = sql_vtab_disconnect,
    .xOpen = stats_open,
    .xClose = stats_close,
    .xFilter = stats_filter,
    .xNext = stats_next,
    .xEof = stats_eof,
    .xColumn = stats_column,
    .xRowid = stats_rowid,
};

int vtab_ar_stats_register(sqlite3 *db, char **pzErrMsg) {
  return sql_register_module(db, "ar_stats", &ar_stats_module, ar_stats_schema, pzErrMsg);
}
