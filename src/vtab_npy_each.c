/*
** vtab_npy_each.c — the table-valued function npy_each(npy): one row per
** element, in C order, like json_each.
**
**   CREATE TABLE npy_each(i INTEGER, idx TEXT, value ANY, npy HIDDEN);
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
#include "sql_modules.h"
#include "sql_util.h"
SQLITE_EXTENSION_INIT3

#include <string.h>

enum { COL_I, COL_IDX, COL_VALUE, COL_NPY };

typedef struct each_cursor {
  sqlite3_vtab_cursor base;
  npy_array a;
  int have; /* a parsed array is present */
  uint64_t i;
} each_cursor;

/* The table's schema, handed to sql_vtab_connect as the module's client data. */
static const char npy_each_schema[] =
    "CREATE TABLE x(i INTEGER, idx TEXT, value ANY, npy HIDDEN)";

static int each_open(sqlite3_vtab *vtab, sqlite3_vtab_cursor **ppCursor) {
  each_cursor *cur = sqlite3_malloc(sizeof(*cur));
  (void)vtab;
  if (!cur) return SQLITE_NOMEM;
  memset(cur, 0, sizeof(*cur));
  *ppCursor = &cur->base;
  return SQLITE_OK;
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
  const unsigned char *p;
  uint64_t n;
  codec_err err;
  int rc;
  (void)idxStr;
  cur->have = 0;
  cur->i = 0;
  if (idxNum != 1 || argc != 1) return sql_vtab_error(base->pVtab, "npy_each: missing argument (a .npy BLOB)");
  if (sqlite3_value_type(argv[0]) == SQLITE_NULL) return SQLITE_OK;
  if (sqlite3_value_type(argv[0]) != SQLITE_BLOB) return sql_vtab_error(base->pVtab, "npy_each: argument must be a .npy BLOB");
  p = sqlite3_value_blob(argv[0]);
  n = (uint64_t)sqlite3_value_bytes(argv[0]);
  if (!p && n) return SQLITE_NOMEM;
  rc = npy_parse(p ? p : (const unsigned char *)"", n, &cur->a, &err);
  if (rc == CODEC_NOMEM) return SQLITE_NOMEM;
  if (rc) return sql_vtab_error(base->pVtab, "npy_each: %s", err.msg);
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
    default: break;
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

int vtab_npy_each_register(sqlite3 *db) {
  return sqlite3_create_module(db, "npy_each", &npy_each_module, (void *)npy_each_schema);
}
