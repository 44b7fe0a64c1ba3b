/* SPDX-License-Identifier: Apache-2.0 */
/*
** sql_message.c — SQL functions over Flower Messages and Contexts (the
** bytes of flwr.common.serde.message_to_proto(msg) / context_to_proto(ctx)
** .SerializeToString(), as the SuperLink stores them):
**
**   rd_from_message(msg)  flower_message_metadata(msg)
**   rd_from_context(ctx)  flower_context_config(ctx)
**
** The RecordDicts come out as BLOBs for the rd_* functions, re-encoded as
** the rd_* builders write them (Flower's serde bytes: equal content, equal
** bytes); metadata and configs as JSON (message.h).
*/
#include "sql/sql_modules.h"
#include "sql/sql_util.h"
SQLITE_EXTENSION_INIT3

#include "codec/message.h"

enum { MSG_CONTENT, MSG_METADATA };

/* rd_from_message / flower_message_metadata. */
static void message_func(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  message_t m;
  codec_span blob;
  codec_err err;
  buf_t b;
  int rc;
  (void)argc;
  if (sql_arg_blob(ctx, argv[0], 0, "a Flower message", &blob.p, &blob.n) <= 0) return;
  if ((rc = message_parse(&m, blob.p, blob.n, &err)) != CODEC_OK) {
    sql_codec_error(ctx, rc, &err);
    return;
  }
  sql_buf_init(ctx, &b);
  if (SQL_OP(ctx) == MSG_METADATA) {
    message_metadata_json(&b, &m);
    sql_result_buf(ctx, &b, 1);
    return;
  }
  if (!m.ncontent) { /* an error reply has none: NULL */
    buf_free(&b);
    return;
  }
  if ((rc = message_content(&m, blob.p, blob.n, &b, &err)) != CODEC_OK) {
    sql_codec_error(ctx, rc, &err);
    buf_free(&b);
  } else {
    sql_result_buf(ctx, &b, 0);
  }
}

/* rd_from_context / flower_context_config. */
static void context_func(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  message_context_t c;
  codec_span blob;
  codec_err err;
  buf_t b;
  int rc;
  (void)argc;
  if (sql_arg_blob(ctx, argv[0], 0, "a Flower context", &blob.p, &blob.n) <= 0) return;
  message_context_init(&c);
  if ((rc = message_context_parse(&c, blob.p, blob.n, &err)) != CODEC_OK) {
    sql_codec_error(ctx, rc, &err);
    goto done;
  }
  sql_buf_init(ctx, &b);
  if (SQL_OP(ctx) == MSG_METADATA) {
    message_context_json(&b, &c);
    sql_result_buf(ctx, &b, 1);
  } else if ((rc = message_context_state(&c, blob.p, blob.n, &b, &err)) != CODEC_OK) {
    sql_codec_error(ctx, rc, &err);
    buf_free(&b);
  } else { /* absent reads as the empty RecordDict (proto3): x'' */
    sql_result_buf(ctx, &b, 0);
  }
done:
  message_context_clear(&c);
}

static const sql_function message_functions[] = {
    {"rd_from_message", 1, message_func, NULL, NULL, MSG_CONTENT},
    {"flower_message_metadata", 1, message_func, NULL, NULL, MSG_METADATA},
    {"rd_from_context", 1, context_func, NULL, NULL, MSG_CONTENT},
    {"flower_context_config", 1, context_func, NULL, NULL, MSG_METADATA},
};

int sql_message_register(sqlite3 *db, char **pzErrMsg) { return SQL_REGISTER_TABLE(db, message_functions, pzErrMsg); }
