/* SPDX-License-Identifier: Apache-2.0 */
/*
** vtab_ar_objects.c — the table-valued functions ar_objects(rec) and
** rd_objects(rd): the objects Flower's object store holds for a record or a
** RecordDict, one row each (rd_objects: its records' objects too, each
** distinct object once, the RecordDict last).
**
**   CREATE TABLE ar_objects(object_id TEXT, type TEXT, children TEXT,
**     content BLOB, arg HIDDEN);
**
**   INSERT OR IGNORE INTO objects(object_id, content)
**     SELECT object_id, content FROM ar_objects(?);
**   INSERT INTO object_children(parent_id, child_id)
**     SELECT o.object_id, c.value FROM ar_objects(?) o, json_each(o.children) c;
**
** Rows come in Flower's order (get_all_nested_objects: children before their
** parent, each object once, the ArrayRecord last). type is "ArrayRecord",
** "Array" or "ArrayChunk"; children is a JSON array of the child ids in head
** order. Every id is computed in xFilter (one SHA-256 pass over the data);
** `content` is assembled only for rows that select it.
**
** The record's views point into the argument BLOB, valid during the scan for
** the reason given in vtab_array_record.c.
*/
#include "sql/sql_modules.h"
#include "sql/sql_util.h"
SQLITE_EXTENSION_INIT3

#include <string.h>

#include "codec/flower_object.h"

enum { COL_OBJECT_ID, COL_TYPE, COL_CHILDREN, COL_CONTENT, COL_REC };

typedef struct objects_cursor {
  sqlite3_vtab_cursor base;
  int rd; /* rd_objects */
  record_t rec;
  codec_span arg; /* the argument BLOB, read back by the hidden column */
  fo_tree tree;
  uint32_t row;
} objects_cursor;

static const char ar_objects_schema[] =
    "CREATE TABLE x(object_id TEXT, type TEXT, children TEXT, content BLOB, arg HIDDEN)";

static int obj_open_as(int rd, sqlite3_vtab_cursor **ppCursor) {
  objects_cursor *cur;
  int rc = sql_vtab_open(sizeof(*cur), ppCursor);
  if (rc != SQLITE_OK) return rc;
  cur = (objects_cursor *)*ppCursor;
  cur->rd = rd;
  record_init(&cur->rec);
  fo_tree_init(&cur->tree);
  return SQLITE_OK;
}

static int obj_open(sqlite3_vtab *vtab, sqlite3_vtab_cursor **ppCursor) {
  (void)vtab;
  return obj_open_as(0, ppCursor);
}

static int rd_obj_open(sqlite3_vtab *vtab, sqlite3_vtab_cursor **ppCursor) {
  (void)vtab;
  return obj_open_as(1, ppCursor);
}

static int obj_close(sqlite3_vtab_cursor *base) {
  objects_cursor *cur = (objects_cursor *)base;
  fo_tree_free(&cur->tree);
  record_clear(&cur->rec);
  sqlite3_free(cur);
  return SQLITE_OK;
}

static int obj_best_index(sqlite3_vtab *vtab, sqlite3_index_info *info) {
  (void)vtab;
  return sql_vtab_best_index(info, COL_REC);
}

static int obj_filter(sqlite3_vtab_cursor *base, int idxNum, const char *idxStr, int argc, sqlite3_value **argv) {
  objects_cursor *cur = (objects_cursor *)base;
  codec_err err;
  int rc;
  (void)idxStr;
  fo_tree_free(&cur->tree);
  cur->rec.n = 0;
  cur->row = 0;
  const char *fname = cur->rd ? "rd_objects" : "ar_objects";
  rc = sql_vtab_blob_arg(base, fname, cur->rd ? "a record dict" : "a record", idxNum, argc, argv, &cur->arg);
  if (rc != SQLITE_OK || !cur->arg.p) return rc; /* an error, or NULL: no rows */
  if (cur->rd) {
    rc = fo_deflate_rd(&cur->tree, cur->arg.p, cur->arg.n, FO_CHUNK_SIZE, &err);
  } else {
    rc = record_parse(&cur->rec, cur->arg.p, cur->arg.n, &err);
    if (rc == CODEC_OK) rc = fo_deflate(&cur->tree, &cur->rec, FO_CHUNK_SIZE, &err);
  }
  if (rc == CODEC_OK) return SQLITE_OK;
  fo_tree_free(&cur->tree);
  cur->rec.n = 0;
  return sql_vtab_error(base, fname, rc, &err);
}

static int obj_next(sqlite3_vtab_cursor *base) {
  ((objects_cursor *)base)->row++;
  return SQLITE_OK;
}

static int obj_eof(sqlite3_vtab_cursor *base) {
  objects_cursor *cur = (objects_cursor *)base;
  return cur->row >= cur->tree.n;
}

static int obj_rowid(sqlite3_vtab_cursor *base, sqlite3_int64 *rowid) {
  *rowid = ((objects_cursor *)base)->row;
  return SQLITE_OK;
}

static int obj_column(sqlite3_vtab_cursor *base, sqlite3_context *ctx, int col) {
  objects_cursor *cur = (objects_cursor *)base;
  const fo_object *o = &cur->tree.obj[cur->row];
  buf_t b;
  switch (col) {
    case COL_OBJECT_ID: {
      char hex[SHA256_HEX_SIZE];
      sqlite3_result_text(ctx, sha256_hex(o->id, hex), 64, SQLITE_TRANSIENT);
      break;
    }
    case COL_TYPE: sqlite3_result_text(ctx, fo_type_name(o->type), -1, SQLITE_STATIC); break;
    case COL_CHILDREN:
      sql_buf_init(ctx, &b);
      fo_write_children_json(&cur->tree, cur->row, &b);
      sql_result_buf(ctx, &b, 1);
      break;
    case COL_CONTENT:
      sql_buf_init(ctx, &b);
      if (buf_reserve(&b, fo_content_size(&cur->tree, cur->row)) == CODEC_OK)
        fo_write_content(&cur->tree, cur->row, &b);
      sql_result_buf(ctx, &b, 0);
      break;
    default: sql_result_blob_copy(ctx, cur->arg.p, cur->arg.n); break; /* the argument */
  }
  return SQLITE_OK;
}

/* xCreate is NULL: an eponymous-only table-valued function. */
static sqlite3_module ar_objects_module = {
    .iVersion = 0,
    .xConnect = sql_vtab_connect,
    .xBestIndex = obj_best_index,
    .xDisconnect = sql_vtab_disconnect,
    .xOpen = obj_open,
    .xClose = obj_close,
    .xFilter = obj_filter,
    .xNext = obj_next,
    .xEof = obj_eof,
    .xColumn = obj_column,
    .xRowid = obj_rowid,
};

static sqlite3_module rd_objects_module = {
    .iVersion = 0,
    .xConnect = sql_vtab_connect,
    .xBestIndex = obj_best_index,
    .xDisconnect = sql_vtab_disconnect,
    .xOpen = rd_obj_open,
    .xClose = obj_close,
    .xFilter = obj_filter,
    .xNext = obj_next,
    .xEof = obj_eof,
    .xColumn = obj_column,
    .xRowid = obj_rowid,
};

int vtab_ar_objects_register(sqlite3 *db, char **pzErrMsg) {
  int rc = sql_register_module(db, "ar_objects", &ar_objects_module, ar_objects_schema, pzErrMsg);
  if (rc == SQLITE_OK) rc = sql_register_module(db, "rd_objects", &rd_objects_module, ar_objects_schema, pzErrMsg);
  return rc;
}
