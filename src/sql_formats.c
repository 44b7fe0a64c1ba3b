/*
** sql_formats.c — SQL functions converting records to and from the file
** formats other tools write:
**
**   ar_from_safetensors(blob)            ar_to_safetensors(rec [, metadata_json])
**   ar_safetensors_metadata(blob)
**   ar_from_npz(blob)                    ar_to_npz(rec [, compress])
**
** The formats themselves live in safetensors.c and npz.c. A NULL metadata
** or compress argument means the default (none / stored).
*/
#include "sql_modules.h"
#include "sql_util.h"
SQLITE_EXTENSION_INIT3

#include "npz.h"
#include "safetensors.h"

enum { FMT_ST_RECORD, FMT_ST_METADATA };

/* ar_from_safetensors(blob) and ar_safetensors_metadata(blob) */
static void st_read_func(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  const unsigned char *p;
  uint64_t n;
  st_file f;
  codec_err err;
  ar_buf out;
  int rc, op = SQL_OP(ctx);
  (void)argc;
  if (sql_arg_blob(ctx, argv[0], 0, "a safetensors", &p, &n) <= 0) return;
  st_file_init(&f);
  sql_buf_init(ctx, &out);
  rc = st_parse(&f, p, n, &err);
  if (rc == CODEC_OK) {
    if (op == FMT_ST_METADATA && !f.has_metadata) goto done; /* NULL */
    rc = op == FMT_ST_RECORD ? st_to_record(&f, &out, &err) : st_metadata_json(&f, &out, &err);
  }
  if (rc) {
    sql_codec_error(ctx, rc, &err);
    goto done;
  }
  sql_result_buf(ctx, &out, op == FMT_ST_METADATA);
done:
  buf_free(&out);
  st_file_free(&f);
}

/* ar_to_safetensors(rec [, metadata_json]) */
static void st_write_func(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  ar_record rec;
  const char *meta = NULL;
  uint64_t meta_len = 0;
  codec_err err;
  ar_buf out;
  int rc;
  ar_record_init(&rec);
  sql_buf_init(ctx, &out);
  if (sql_arg_record(ctx, argv[0], 0, &rec) <= 0) goto done;
  if (argc > 1 && sql_arg_text(ctx, argv[1], 1, "metadata JSON", &meta, &meta_len) < 0) goto done;
  if ((rc = st_from_record(&rec, meta, meta_len, &out, &err)) != CODEC_OK) {
    sql_codec_error(ctx, rc, &err);
    goto done;
  }
  sql_result_buf(ctx, &out, 0);
done:
  buf_free(&out);
  ar_record_clear(&rec);
}

/* ar_from_npz(blob) */
static void npz_read_func(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  const unsigned char *p;
  uint64_t n;
  codec_err err;
  ar_buf out;
  int rc;
  (void)argc;
  if (sql_arg_blob(ctx, argv[0], 0, "an .npz", &p, &n) <= 0) return;
  sql_buf_init(ctx, &out);
  if ((rc = npz_to_record(p, n, sql_limit(ctx), &out, &err)) != CODEC_OK) {
    buf_free(&out);
    sql_codec_error(ctx, rc, &err);
    return;
  }
  sql_result_buf(ctx, &out, 0);
}

/* ar_to_npz(rec [, compress]) */
static void npz_write_func(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  ar_record rec;
  codec_err err;
  ar_buf out;
  int rc, compress = 0;
  ar_record_init(&rec);
  sql_buf_init(ctx, &out);
  if (sql_arg_record(ctx, argv[0], 0, &rec) <= 0) goto done;
  if (argc > 1) {
    int t = sqlite3_value_type(argv[1]);
    if (t != SQLITE_NULL && t != SQLITE_INTEGER) {
      sql_error(ctx, "argument 2 must be 0 (stored) or 1 (deflate)");
      goto done;
    }
    compress = t == SQLITE_INTEGER && sqlite3_value_int64(argv[1]) != 0;
  }
  if ((rc = npz_from_record(&rec, compress, &out, &err)) != CODEC_OK) {
    sql_codec_error(ctx, rc, &err);
    goto done;
  }
  sql_result_buf(ctx, &out, 0);
done:
  buf_free(&out);
  ar_record_clear(&rec);
}

static const sql_function format_functions[] = {
    {"ar_from_safetensors", 1, st_read_func, NULL, NULL, FMT_ST_RECORD},
    {"ar_safetensors_metadata", 1, st_read_func, NULL, NULL, FMT_ST_METADATA},
    {"ar_to_safetensors", 1, st_write_func, NULL, NULL, 0},
    {"ar_to_safetensors", 2, st_write_func, NULL, NULL, 0},
    {"ar_from_npz", 1, npz_read_func, NULL, NULL, 0},
    {"ar_to_npz", 1, npz_write_func, NULL, NULL, 0},
    {"ar_to_npz", 2, npz_write_func, NULL, NULL, 0},
};

int sql_formats_register(sqlite3 *db, char **pzErrMsg) {
  return sql_register(db, format_functions, (int)(sizeof(format_functions) / sizeof(format_functions[0])), pzErrMsg);
}
