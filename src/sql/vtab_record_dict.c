/* SPDX-License-Identifier: Apache-2.0 */
/*
** vtab_record_dict.c — the table-valued function record_dict(rd): one row
** per item of a Flower RecordDict, in order.
**
**   CREATE TABLE record_dict(name TEXT, position INTEGER, kind TEXT,
**     nitems INTEGER, record BLOB, arg HIDDEN);
**
**   SELECT name, kind, nitems FROM replies r, record_dict(r.content);
**
** kind is 'array', 'metric' or 'config'; nitems the item count of the
** item's record; record its bytes (an ArrayRecord BLOB for ar_*, or a
** MetricRecord / ConfigRecord). Only `record` copies bytes, and only when
** selected; nitems reads the record's item headers, not its payloads. The
** views point into the argument's BLOB, valid until the next xFilter (see
** vtab_array_record.c).
*/
#include "sql/sql_modules.h"
#include "sql/sql_util.h"
SQLITE_EXTENSION_INIT3

#include <stdio.h>
#include <string.h>

#include "codec/recorddict.h"
#include "codec/valrec.h"

enum { COL_NAME, COL_POSITION, COL_KIND, COL_NITEMS, COL_RECORD, COL_ARG };

typedef struct record_dict_cursor {
  sqlite3_vtab_cursor base;
  recorddict_t rd;
  codec_span arg;
  int row;
} record_dict_cursor;

static const char record_dict_schema[] =
    "CREATE TABLE x(name TEXT, position INTEGER, kind TEXT, nitems INTEGER, record BLOB, arg HIDDEN)";

static int rdv_open(sqlite3_vtab *vtab, sqlite3_vtab_cursor **ppCursor) {
  int rc = sql_vtab_open(sizeof(record_dict_cursor), ppCursor);
  (void)vtab;
  if (rc == SQLITE_OK) recorddict_init(&((record_dict_cursor *)*ppCursor)->rd);
  return rc;
}

static int rdv_close(sqlite3_vtab_cursor *base) {
  record_dict_cursor *cur = (record_dict_cursor *)base;
  recorddict_clear(&cur->rd);
  sqlite3_free(cur);
  return SQLITE_OK;
}

static int rdv_best_index(sqlite3_vtab *vtab, sqlite3_index_info *info) {
  (void)vtab;
  return sql_vtab_best_index(info, COL_ARG);
}

static int rdv_filter(sqlite3_vtab_cursor *base, int idxNum, const char *idxStr, int argc, sqlite3_value **argv) {
  record_dict_cursor *cur = (record_dict_cursor *)base;
  codec_err err;
  int rc;
  (void)idxStr;
  recorddict_clear(&cur->rd);
  cur->row = 0;
  rc = sql_vtab_blob_arg(base, "record_dict", "a record dict", idxNum, argc, argv, &cur->arg);
  if (rc != SQLITE_OK || !cur->arg.p) return rc;
  if ((rc = recorddict_parse(&cur->rd, cur->arg.p, cur->arg.n, &err)) != CODEC_OK) {
    recorddict_clear(&cur->rd);
    return sql_vtab_error(base, "record_dict", rc, &err);
  }
  return SQLITE_OK;
}

static int rdv_next(sqlite3_vtab_cursor *base) {
  ((record_dict_cursor *)base)->row++;
  return SQLITE_OK;
}

static int rdv_eof(sqlite3_vtab_cursor *base) {
  record_dict_cursor *cur = (record_dict_cursor *)base;
  return cur->row >= cur->rd.n;
}

static int rdv_rowid(sqlite3_vtab_cursor *base, sqlite3_int64 *rowid) {
  *rowid = ((record_dict_cursor *)base)->row;
  return SQLITE_OK;
}

/* The item count of the row's record; reports a malformed record. */
static void result_nitems(sqlite3_context *ctx, const record_dict_cursor *cur, const recorddict_item *it) {
  char label[CODEC_QUOTE_MAX + 40], q[CODEC_QUOTE_MAX];
  codec_err err;
  int rc, n = 0;
  snprintf(label, sizeof(label), "%s record '%s'", recorddict_kind_name(it->kind),
           codec_quote(q, sizeof(q), it->name.p, it->name.n));
  if (it->kind == RECORDDICT_ARRAY) {
    record_t rec;
    codec_err inner;
    record_init(&rec);
    rc = record_parse(&rec, it->record.p, it->record.n, &inner);
    n = rec.n;
    record_clear(&rec);
    if (rc == CODEC_CORRUPT)
      codec_fail(&err, rc, "%s (at byte %llu): %s", label, (unsigned long long)it->record_at, inner.msg);
  } else {
    valrec_t vr;
    valrec_init(&vr);
    rc = recorddict_item_valrec(&vr, it, cur->arg.p, label, &err);
    n = vr.n;
    valrec_clear(&vr);
  }
  if (rc == CODEC_NOMEM) {
    sqlite3_result_error_nomem(ctx);
  } else if (rc) {
    char *msg = sqlite3_mprintf("record_dict: %s", err.msg);
    if (!msg) {
      sqlite3_result_error_nomem(ctx);
    } else {
      sqlite3_result_error(ctx, msg, -1);
      sqlite3_free(msg);
    }
  } else {
    sqlite3_result_int(ctx, n);
  }
}

static int rdv_column(sqlite3_vtab_cursor *base, sqlite3_context *ctx, int col) {
  record_dict_cursor *cur = (record_dict_cursor *)base;
  const recorddict_item *it = &cur->rd.items[cur->row];
  switch (col) {
    case COL_NAME:
      sqlite3_result_text64(ctx, (const char *)it->name.p, it->name.n, SQLITE_TRANSIENT, SQLITE_UTF8);
      break;
    case COL_POSITION: sqlite3_result_int(ctx, cur->row); break;
    case COL_KIND: sqlite3_result_text(ctx, recorddict_kind_name(it->kind), -1, SQLITE_STATIC); break;
    case COL_NITEMS: result_nitems(ctx, cur, it); break;
    case COL_RECORD: sql_result_blob_copy(ctx, it->record.p, it->record.n); break;
    default: sql_result_blob_copy(ctx, cur->arg.p, cur->arg.n); break;
  }
  return SQLITE_OK;
}

static sqlite3_module record_dict_module = {
    .iVersion = 0,
    .xConnect = sql_vtab_connect,
    .xBestIndex = rdv_best_index,
    .xDisconnect = sql_vtab_disconnect,
    .xOpen = rdv_open,
    .xClose = rdv_close,
    .xFilter = rdv_filter,
    .xNext = rdv_next,
    .xEof = rdv_eof,
    .xColumn = rdv_column,
    .xRowid = rdv_rowid,
};

int vtab_record_dict_register(sqlite3 *db, char **pzErrMsg) {
  return sql_register_module(db, "record_dict", &record_dict_module, record_dict_schema, pzErrMsg);
}
