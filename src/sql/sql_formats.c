/* SPDX-License-Identifier: Apache-2.0 */
/*
** sql_formats.c — SQL functions converting records to and from the file
** formats other tools write:
**
**   ar_from_safetensors(blob)            ar_to_safetensors(rec [, metadata_json])
**   ar_safetensors_metadata(blob)
**   ar_from_npz(blob)                    ar_to_npz(rec [, compress])
**
** The formats themselves live in safetensors.c and npz.c. Without the
** optional argument there is no metadata / the members are stored; a NULL
** argument gives NULL, as everywhere.
*/
#include "sql/sql_modules.h"
#include "sql/sql_util.h"
SQLITE_EXTENSION_INIT3

#include "codec/npz.h"
#include "codec/safetensors.h"

enum { FMT_SAFETENSORS, FMT_ST_METADATA, FMT_NPZ };

/* The codec's result: the buffer, or its error. */
static void result_or_error(sqlite3_context *ctx, int rc, const codec_err *err, buf_t *out, int text) {
  if (rc) {
    buf_free(out);
    sql_codec_error(ctx, rc, err);
  } else {
    sql_result_buf(ctx, out, text);
  }
}

/* ar_from_safetensors(blob), ar_safetensors_metadata(blob), ar_from_npz(blob) */
static void read_func(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  const unsigned char *p;
  uint64_t n;
  st_file f;
  codec_err err;
  buf_t out;
  int rc, op = SQL_OP(ctx);
  (void)argc;
  if (sql_arg_blob(ctx, argv[0], 0, op == FMT_NPZ ? "an .npz" : "a safetensors", &p, &n) <= 0) return;
  sql_buf_init(ctx, &out);
  if (op == FMT_NPZ) {
    result_or_error(ctx, npz_to_record(p, n, sql_limit(ctx), &out, &err), &err, &out, 0);
    return;
  }
  st_file_init(&f);
  rc = st_parse(&f, p, n, &err);
  if (rc == CODEC_OK && op == FMT_ST_METADATA && !f.has_metadata) {
    st_file_free(&f); /* no metadata: NULL */
    return;
  }
  if (rc == CODEC_OK) rc = op == FMT_SAFETENSORS ? st_to_record(&f, &out, &err) : st_metadata_json(&f, &out, &err);
  result_or_error(ctx, rc, &err, &out, op == FMT_ST_METADATA);
  st_file_free(&f);
}

/* ar_to_safetensors(rec [, metadata_json]) and ar_to_npz(rec [, compress]) */
static void write_func(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  record_t rec;
  const char *meta = NULL;
  uint64_t meta_len = 0;
  codec_err err;
  buf_t out;
  int compress = 0;
  record_init(&rec);
  if (sql_arg_record(ctx, argv[0], 0, &rec) <= 0) goto done;
  if (argc > 1 && SQL_OP(ctx) == FMT_SAFETENSORS) {
    if (sql_arg_text(ctx, argv[1], 1, "metadata JSON", &meta, &meta_len) < 0) goto done;
  } else if (argc > 1) {
    /* Only 0 and 1: any other value may mean something else some day. */
    sqlite3_int64 c = sqlite3_value_int64(argv[1]);
    if (sqlite3_value_type(argv[1]) != SQLITE_INTEGER || (c != 0 && c != 1)) {
      sql_error(ctx, "argument 2 must be 0 (stored) or 1 (deflate)");
      goto done;
    }
    compress = (int)c;
  }
  sql_buf_init(ctx, &out);
  result_or_error(ctx,
                  SQL_OP(ctx) == FMT_SAFETENSORS ? st_from_record(&rec, meta, meta_len, &out, &err)
                                                 : npz_from_record(&rec, compress, &out, &err),
                  &err, &out, 0);
done:
  record_clear(&rec);
}

static const sql_function format_functions[] = {
    {"ar_from_safetensors", 1, read_func, NULL, NULL, FMT_SAFETENSORS},
    {"ar_safetensors_metadata", 1, read_func, NULL, NULL, FMT_ST_METADATA},
    {"ar_from_npz", 1, read_func, NULL, NULL, FMT_NPZ},
    {"ar_to_safetensors", 1, write_func, NULL, NULL, FMT_SAFETENSORS},
    {"ar_to_safetensors", 2, write_func, NULL, NULL, FMT_SAFETENSORS},
    {"ar_to_npz", 1, write_func, NULL, NULL, FMT_NPZ},
    {"ar_to_npz", 2, write_func, NULL, NULL, FMT_NPZ},
};

int sql_formats_register(sqlite3 *db, char **pzErrMsg) { return SQL_REGISTER_TABLE(db, format_functions, pzErrMsg); }
