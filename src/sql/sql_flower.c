/* SPDX-License-Identifier: Apache-2.0 */
/*
** sql_flower.c — SQL functions for Flower's content-addressed objects
** (flower_object.h):
**
**   ar_object_id(rec)                 Flower's ArrayRecord.object_id
**   npy_object_id(npy)                object_id of the Array holding this .npy
**   aggregate ar_inflate(object_id, content)   the objects of one record -> rec
**   rd_object_id(rd)                  Flower's RecordDict.object_id
**   aggregate rd_inflate(object_id, content)   a RecordDict's (or a Message's)
**                                     objects -> its RecordDict
**   flower_object_type(content)       the type its head names
**   flower_object_children(content)   its head's child ids, a JSON array
**
** The table-valued ar_objects(rec) and rd_objects(rd) live in
** vtab_ar_objects.c.
*/
#include "sql/sql_modules.h"
#include "sql/sql_util.h"
SQLITE_EXTENSION_INIT3

#include <string.h>

#include "codec/array.h"
#include "codec/flower_object.h"

static void result_hex(sqlite3_context *ctx, const unsigned char *id) {
  char hex[SHA256_HEX_SIZE];
  sqlite3_result_text(ctx, sha256_hex(id, hex), 64, SQLITE_TRANSIENT);
}

/* ar_object_id(rec): deflate (hashing every chunk once) and name the root. */
static void ar_object_id_func(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  record_t rec;
  fo_tree t;
  codec_err err;
  int rc;
  (void)argc;
  record_init(&rec);
  fo_tree_init(&t);
  if (sql_arg_record(ctx, argv[0], 0, &rec) <= 0) goto done;
  if ((rc = fo_deflate(&t, &rec, FO_CHUNK_SIZE, &err)) != CODEC_OK) {
    sql_codec_error(ctx, rc, &err);
    goto done;
  }
  result_hex(ctx, t.obj[t.n - 1].id);
done:
  fo_tree_free(&t);
  record_clear(&rec);
}

/* rd_object_id(rd): the same for a RecordDict (all its records' trees). */
static void rd_object_id_func(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  const unsigned char *blob;
  uint64_t n;
  fo_tree t;
  codec_err err;
  int rc;
  (void)argc;
  if (sql_arg_blob(ctx, argv[0], 0, "a record dict", &blob, &n) <= 0) return;
  fo_tree_init(&t);
  if ((rc = fo_deflate_rd(&t, blob, n, FO_CHUNK_SIZE, &err)) != CODEC_OK)
    sql_codec_error(ctx, rc, &err);
  else
    result_hex(ctx, t.obj[t.n - 1].id);
  fo_tree_free(&t);
}

/* The head of an object content argument: 1, 0 for NULL, -1 after an error. */
static int arg_head(sqlite3_context *ctx, sqlite3_value *v, fo_entry *e, const unsigned char **content) {
  uint64_t n;
  codec_err err;
  int rc = sql_arg_blob(ctx, v, 0, "an object content", content, &n);
  if (rc <= 0) return rc;
  memset(e, 0, sizeof(*e));
  if ((rc = fo_parse_head(*content, n, e, "object", &err)) != CODEC_OK) {
    sql_codec_error(ctx, rc, &err);
    return -1;
  }
  return 1;
}

/* flower_object_type(content): the type its head names (no hashing). */
static void flower_object_type_func(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  const unsigned char *content;
  fo_entry e;
  (void)argc;
  if (arg_head(ctx, argv[0], &e, &content) <= 0) return;
  sqlite3_result_text(ctx, fo_type_name(e.type), -1, SQLITE_STATIC);
}

/* flower_object_children(content): ["<id>",...] from its head. */
static void flower_object_children_func(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  const unsigned char *content;
  fo_entry e;
  buf_t b;
  uint32_t k;
  (void)argc;
  if (arg_head(ctx, argv[0], &e, &content) <= 0) return;
  sql_buf_init(ctx, &b);
  buf_putc(&b, '[');
  for (k = 0; k < e.nchild; k++) {
    if (k) buf_putc(&b, ',');
    buf_putc(&b, '"');
    buf_append(&b, content + e.children + (uint64_t)k * 65, 64);
    buf_putc(&b, '"');
  }
  buf_putc(&b, ']');
  sql_result_buf(ctx, &b, 1);
}

/* npy_object_id(npy): the Array that ar()/ar_set store for this .npy: dtype
** str(dtype), its shape, stype "numpy.ndarray", data = the .npy file without
** any bytes after its payload (as ar() stores it). */
static void npy_object_id_func(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  codec_span bytes, no_key = {NULL, 0};
  npy_array a;
  record_item_spec spec;
  char dtname[DT_NAME_MAX];
  unsigned char id[SHA256_DIGEST_SIZE];
  codec_err err;
  int rc;
  (void)argc;
  if (sql_arg_npy_value(ctx, argv[0], 0, no_key, &a, &bytes) <= 0) return;
  array_numpy_spec(&spec, no_key, &a, bytes, dtname);
  if ((rc = fo_array_id(&spec, FO_CHUNK_SIZE, id, &err)) != CODEC_OK) {
    sql_codec_error(ctx, rc, &err);
    return;
  }
  result_hex(ctx, id);
}

/* --- ar_inflate ---------------------------------------------------------------- */

typedef struct inflate_state {
  int started;
  int failed; /* a step reported an error: the query is over */
  fo_store store;
} inflate_state;

/* Rows whose id or content is NULL are skipped (a LEFT JOIN that found no
** content then shows up as the missing child it is). */
static void ar_inflate_step(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  inflate_state *st = sqlite3_aggregate_context(ctx, sizeof(*st));
  unsigned char id[SHA256_DIGEST_SIZE];
  const unsigned char *content;
  const char *idtext;
  uint64_t n, idlen;
  codec_err err;
  int rc;
  (void)argc;
  if (!st) {
    sqlite3_result_error_nomem(ctx);
    return;
  }
  if (!st->started) {
    /* The objects of a valid tree hold its data once, plus small heads and
    ** bodies: twice the largest BLOB is ample, and bounds what a runaway
    ** query can make us keep. */
    uint64_t limit = sql_limit(ctx);
    fo_store_init(&st->store, limit > UINT64_MAX / 2 ? UINT64_MAX : limit * 2);
    st->started = 1;
  }
  if (sqlite3_value_type(argv[0]) == SQLITE_NULL || sqlite3_value_type(argv[1]) == SQLITE_NULL) return;
  st->failed = 1;
  if (sql_arg_text(ctx, argv[0], 0, "an object id", &idtext, &idlen) < 0) return;
  if (sha256_from_hex(idtext, (size_t)idlen, id)) {
    char q[CODEC_QUOTE_MAX];
    sql_error(ctx, "object id must be 64 hex digits, got '%s'", codec_quote(q, sizeof(q), idtext, idlen));
    return;
  }
  if (sql_arg_blob(ctx, argv[1], 1, "an object content", &content, &n) < 0) return;
  if ((rc = fo_store_add(&st->store, id, content, n, &err)) != CODEC_OK) {
    sql_codec_error(ctx, rc, &err);
    return;
  }
  st->failed = 0;
}

/* ar_inflate (op 0) and rd_inflate (op 1). */
static void ar_inflate_final(sqlite3_context *ctx) {
  inflate_state *st = sqlite3_aggregate_context(ctx, 0);
  codec_err err;
  buf_t out;
  int rc, has_content = 1;
  if (!st || !st->started) return;      /* no rows: NULL */
  if (st->failed || st->store.n == 0) { /* an error already, or only NULL rows */
    fo_store_free(&st->store);
    return;
  }
  sql_buf_init(ctx, &out);
  if (SQL_OP(ctx))
    rc = fo_inflate_rd(&st->store, &out, &has_content, &err);
  else
    rc = fo_inflate(&st->store, &out, &err);
  fo_store_free(&st->store);
  if (rc) {
    buf_free(&out);
    sql_codec_error(ctx, rc, &err);
    return;
  }
  if (!has_content) { /* a Message without content (an error reply): NULL */
    buf_free(&out);
    return;
  }
  sql_result_buf(ctx, &out, 0);
}

static const sql_function flower_functions[] = {
    {"ar_object_id", 1, ar_object_id_func, NULL, NULL, 0},
    {"npy_object_id", 1, npy_object_id_func, NULL, NULL, 0},
    {"ar_inflate", 2, NULL, ar_inflate_step, ar_inflate_final, 0},
    {"rd_object_id", 1, rd_object_id_func, NULL, NULL, 0},
    {"rd_inflate", 2, NULL, ar_inflate_step, ar_inflate_final, 1},
    {"flower_object_type", 1, flower_object_type_func, NULL, NULL, 0},
    {"flower_object_children", 1, flower_object_children_func, NULL, NULL, 0},
};

int sql_flower_register(sqlite3 *db, char **pzErrMsg) { return SQL_REGISTER_TABLE(db, flower_functions, pzErrMsg); }
