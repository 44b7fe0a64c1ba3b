/* SPDX-License-Identifier: Apache-2.0 */
/*
** vtab_npy_each.c — the table-valued function npy_each(npy): one row per
** element, in C order, like json_each.
**
**   CREATE TABLE npy_each(i INTEGER, idx TEXT, value ANY, arg HIDDEN);
**
**   SELECT i, value FROM npy_each(ar_get(rec, 'fc.bias')) WHERE value > 1;
**
** i is the flat C-order index, idx the multi-index as a JSON array ("[1,2]";
** "[]" for a scalar), value the element as npy_item returns it (INTEGER for
** bool and integers, REAL for floats, "[re,im]" text for complex). Fortran
** files are read in C order without being copied.
**
** The view into the argument BLOB stays valid during the scan for the reason
** given in vtab_array_record.c.
*/
#include "sql/sql_modules.h"
#include "sql/sql_util.h"
SQLITE_EXTENSION_INIT3

#include <string.h>

enum { COL_I, COL_IDX, COL_VALUE, COL_NPY };

typedef struct each_cursor {
  sqlite3_vtab_cursor base;
  npy_array a;
  codec_span arg; /* the argument BLOB, read back by the hidden column */
  int have;       /* a parsed array is present */
  uint64_t i;
} each_cursor;

static const char npy_each_schema[] = "CREATE TABLE x(i INTEGER, idx TEXT, value ANY, arg HIDDEN)";

static int each_open(sqlite3_vtab *vtab, sqlite3_vtab_cursor **ppCursor) {
  (void)vtab;
  return sql_vtab_open(sizeof(each_cursor), ppCursor);
}

static int each_close(sqlite3_vtab_cursor *base) {
  sqlite3_free(base);
  return SQLITE_OK;
}

static int each_best_index(sqlite3_vtab *vtab, sqlite3_index_info *info) {
  (void)vtab;
  return sql_vtab_best_index(info, COL_NPY);
}

static int each_filter(sqlite3_vtab_cursor *base, int idxNum, const char *idxStr, int argc, sqlite3_value **argv) {
  each_cursor *cur = (each_cursor *)base;
  codec_err err;
  int rc;
  (void)idxStr;
  cur->have = 0;
  cur->i = 0;
  rc = sql_vtab_blob_arg(base, "npy_each", "a .npy", idxNum, argc, argv, &cur->arg);
  if (rc != SQLITE_OK || !cur->arg.p) return rc; /* an error, or NULL: no rows */
  rc = sql_npy_parse(cur->arg.p, cur->arg.n, &cur->a, &err);
  if (rc) return sql_vtab_error(base, "npy_each", rc, &err);
  cur->have = 1;
  return SQLITE_OK;
}

static int each_next(sqlite3_vtab_cursor *base) {
  ((each_cursor *)base)->i++;
  return SQLITE_OK;
}

static int each_eof(sqlite3_vtab_cursor *base) {
  each_cursor *cur = (each_cursor *)base;
  return !cur->have || cur->i >= cur->a.numel;
}

static int each_rowid(sqlite3_vtab_cursor *base, sqlite3_int64 *rowid) {
  *rowid = (sqlite3_int64)((each_cursor *)base)->i;
  return SQLITE_OK;
}

static int each_column(sqlite3_vtab_cursor *base, sqlite3_context *ctx, int col) {
  each_cursor *cur = (each_cursor *)base;
  const npy_array *a = &cur->a;
  switch (col) {
    case COL_I: sqlite3_result_int64(ctx, (sqlite3_int64)cur->i); break;
    case COL_VALUE: {
      dt_value v;
      dt_load(a->data + npy_element_offset(a, cur->i), a->dtype, &v);
      sql_result_value(ctx, &v, (dt_type)a->dtype.type);
      break;
    }
    case COL_IDX: {
      int64_t idx[NPY_MAX_DIMS];
      uint64_t rest = cur->i;
      int k;
      for (k = a->ndim - 1; k >= 0; k--) {
        idx[k] = (int64_t)(rest % (uint64_t)a->shape[k]);
        rest /= (uint64_t)a->shape[k];
      }
      sql_result_shape(ctx, a->ndim, idx); /* same JSON form as a shape */
      break;
    }
    default: sql_result_blob_copy(ctx, cur->arg.p, cur->arg.n); break; /* the argument */
  }
  return SQLITE_OK;
}

/* xCreate is NULL: an eponymous-only table-valued function. */
static sqlite3_module npy_each_module = {
    .iVersion = 0,
    .xConnect = sql_vtab_connect,
    .xBestIndex = each_best_index,
    .xDisconnect = sql_vtab_disconnect,
    .xOpen = each_open,
    .xClose = each_close,
    .xFilter = each_filter,
    .xNext = each_next,
    .xEof = each_eof,
    .xColumn = each_column,
    .xRowid = each_rowid,
};

int vtab_npy_each_register(sqlite3 *db, char **pzErrMsg) {
  return sql_register_module(db, "npy_each", &npy_each_module, npy_each_schema, pzErrMsg);
}
