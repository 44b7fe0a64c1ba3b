/* SPDX-License-Identifier: Apache-2.0 */
/*
** vtab_array_record.c — the table-valued function array_record(rec): one row
** per array of a record, in order.
**
**   CREATE TABLE array_record(key TEXT, position INTEGER, dtype TEXT,
**     shape TEXT, ndim INTEGER, numel INTEGER, stype TEXT, nbytes INTEGER,
**     data BLOB, arg HIDDEN);
**
**   SELECT key, dtype, shape FROM array_record(readfile('model.pb'));
**   SELECT u.client, a.key, a.shape FROM updates u, array_record(u.rec) a;
**
** dtype, shape and stype are the message's fields (what Flower's Array
** holds); nbytes is the length of the stored data; numel is the product of
** the shape. Only `data` copies bytes, and only when it is selected.
**
** The record is parsed once per xFilter into views pointing into the
** argument's BLOB. That memory belongs to the register SQLite filled for the
** constraint; SQLite never reuses those registers while the table is being
** scanned (see the comment after OP_VFilter in where.c/wherecode.c), so the
** views stay valid until the next xFilter.
*/
#include "sql/sql_modules.h"
#include "sql/sql_util.h"
SQLITE_EXTENSION_INIT3

#include <string.h>

enum {
  COL_KEY,
  COL_POSITION,
  COL_DTYPE,
  COL_SHAPE,
  COL_NDIM,
  COL_NUMEL,
  COL_STYPE,
  COL_NBYTES,
  COL_DATA,
  COL_REC /* hidden argument */
};

typedef struct array_record_cursor {
  sqlite3_vtab_cursor base;
  record_t rec;
  codec_span arg; /* the argument BLOB, read back by the hidden column */
  int row;
} array_record_cursor;

static const char array_record_schema[] =
    "CREATE TABLE x(key TEXT, position INTEGER, dtype TEXT, shape TEXT, ndim INTEGER,"
    " numel INTEGER, stype TEXT, nbytes INTEGER, data BLOB, arg HIDDEN)";

static int arv_open(sqlite3_vtab *vtab, sqlite3_vtab_cursor **ppCursor) {
  int rc = sql_vtab_open(sizeof(array_record_cursor), ppCursor);
  (void)vtab;
  if (rc == SQLITE_OK) record_init(&((array_record_cursor *)*ppCursor)->rec);
  return rc;
}

static int arv_close(sqlite3_vtab_cursor *base) {
  array_record_cursor *cur = (array_record_cursor *)base;
  record_clear(&cur->rec);
  sqlite3_free(cur);
  return SQLITE_OK;
}

static int arv_best_index(sqlite3_vtab *vtab, sqlite3_index_info *info) {
  (void)vtab;
  return sql_vtab_best_index(info, COL_REC);
}

static int arv_filter(sqlite3_vtab_cursor *base, int idxNum, const char *idxStr, int argc, sqlite3_value **argv) {
  array_record_cursor *cur = (array_record_cursor *)base;
  codec_err err;
  int rc;
  (void)idxStr;
  cur->rec.n = 0;
  cur->row = 0;
  rc = sql_vtab_blob_arg(base, "array_record", "a record", idxNum, argc, argv, &cur->arg);
  if (rc != SQLITE_OK || !cur->arg.p) return rc; /* an error, or NULL: no rows */
  rc = record_parse(&cur->rec, cur->arg.p, cur->arg.n, &err);
  if (rc) {
    cur->rec.n = 0;
    return sql_vtab_error(base, "array_record", rc, &err);
  }
  return SQLITE_OK;
}

static int arv_next(sqlite3_vtab_cursor *base) {
  ((array_record_cursor *)base)->row++;
  return SQLITE_OK;
}

static int arv_eof(sqlite3_vtab_cursor *base) {
  array_record_cursor *cur = (array_record_cursor *)base;
  return cur->row >= cur->rec.n;
}

static int arv_rowid(sqlite3_vtab_cursor *base, sqlite3_int64 *rowid) {
  *rowid = ((array_record_cursor *)base)->row;
  return SQLITE_OK;
}

static int arv_column(sqlite3_vtab_cursor *base, sqlite3_context *ctx, int col) {
  array_record_cursor *cur = (array_record_cursor *)base;
  const record_item *it = &cur->rec.items[cur->row];
  int64_t shape[RECORD_MAX_DIMS];
  int ndim;
  switch (col) {
    case COL_KEY: sqlite3_result_text64(ctx, (const char *)it->key.p, it->key.n, SQLITE_TRANSIENT, SQLITE_UTF8); break;
    case COL_POSITION: sqlite3_result_int(ctx, cur->row); break;
    case COL_DTYPE:
      sqlite3_result_text64(ctx, (const char *)it->dtype.p, it->dtype.n, SQLITE_TRANSIENT, SQLITE_UTF8);
      break;
    case COL_STYPE:
      sqlite3_result_text64(ctx, (const char *)it->stype.p, it->stype.n, SQLITE_TRANSIENT, SQLITE_UTF8);
      break;
    case COL_NBYTES: sqlite3_result_int64(ctx, (sqlite3_int64)it->data.n); break;
    case COL_DATA: sql_result_blob_copy(ctx, it->data.p, it->data.n); break;
    case COL_NDIM: sqlite3_result_int(ctx, it->ndim); break;
    case COL_SHAPE: sql_result_shape(ctx, record_item_shape(it, shape), shape); break;
    case COL_NUMEL: {
      uint64_t numel;
      ndim = record_item_shape(it, shape);
      if (npy_shape_numel(ndim, shape, &numel, NULL) == CODEC_OK && numel <= (uint64_t)INT64_MAX)
        sqlite3_result_int64(ctx, (sqlite3_int64)numel);
      break; /* NULL when the product does not fit */
    }
    default: sql_result_blob_copy(ctx, cur->arg.p, cur->arg.n); break; /* the argument */
  }
  return SQLITE_OK;
}

/* xCreate is NULL: an eponymous-only table-valued function. */
static sqlite3_module array_record_module = {
    .iVersion = 0,
    .xConnect = sql_vtab_connect,
    .xBestIndex = arv_best_index,
    .xDisconnect = sql_vtab_disconnect,
    .xOpen = arv_open,
    .xClose = arv_close,
    .xFilter = arv_filter,
    .xNext = arv_next,
    .xEof = arv_eof,
    .xColumn = arv_column,
    .xRowid = arv_rowid,
};

int vtab_array_record_register(sqlite3 *db, char **pzErrMsg) {
  return sql_register_module(db, "array_record", &array_record_module, array_record_schema, pzErrMsg);
}
