/* SPDX-License-Identifier: Apache-2.0 */
/*
** sql_record.c — SQL functions that read records (`rec` = a Flower
** ArrayRecord protobuf BLOB):
**
**   ar_len(rec)  ar_keys(rec)  ar_count_bytes(rec)  ar_json(rec)
**   ar_has(rec, key)  ar_get(rec, key)  ar_data(rec, key)
**   ar_dtype(rec, key)  ar_shape(rec, key)  ar_stype(rec, key)  ar_nbytes(rec, key)
**   ar_valid(rec)  ar_error(rec)  ar_check(rec [, 'nonempty'])
**
** A missing key gives NULL (ar_has tells the difference). Metadata
** functions read the protobuf structure only; array payloads are neither
** parsed nor copied. ar_get and ar_valid/ar_error check the array data too.
*/
#include "sql/sql_modules.h"
#include "sql/sql_util.h"
SQLITE_EXTENSION_INIT3

#include <string.h>

#include "codec/array.h"
#include "codec/json.h"

enum { REC_LEN, REC_KEYS, REC_COUNT_BYTES, REC_JSON };

static void put_item_summary(buf_t *b, const record_item *it) {
  int64_t shape[RECORD_MAX_DIMS];
  int ndim = record_item_shape(it, shape);
  buf_puts(b, "{\"dtype\":");
  json_put_string(b, it->dtype.p, it->dtype.n);
  buf_puts(b, ",\"shape\":");
  npy_shape_json(b, ndim, shape);
  buf_puts(b, ",\"stype\":");
  json_put_string(b, it->stype.p, it->stype.n);
  buf_printf(b, ",\"nbytes\":%llu}", (unsigned long long)it->data.n);
}

/* Whole-record readers: ar_len, ar_keys, ar_count_bytes, ar_json. */
static void ar_record_func(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  record_t rec;
  buf_t b;
  uint64_t total = 0;
  int i;
  (void)argc;
  record_init(&rec);
  if (sql_arg_record(ctx, argv[0], 0, &rec) <= 0) goto done;
  switch (SQL_OP(ctx)) {
    case REC_LEN: sqlite3_result_int(ctx, rec.n); break;
    case REC_COUNT_BYTES:
      /* Flower's count_bytes(): len(data) + len(key) in characters. */
      for (i = 0; i < rec.n; i++)
        total += rec.items[i].data.n + codec_utf8_length(rec.items[i].key.p, rec.items[i].key.n);
      sqlite3_result_int64(ctx, (sqlite3_int64)total);
      break;
    default:
      sql_buf_init(ctx, &b);
      buf_putc(&b, SQL_OP(ctx) == REC_KEYS ? '[' : '{');
      for (i = 0; i < rec.n; i++) {
        if (i) buf_putc(&b, ',');
        json_put_string(&b, rec.items[i].key.p, rec.items[i].key.n);
        if (SQL_OP(ctx) == REC_JSON) {
          buf_putc(&b, ':');
          put_item_summary(&b, &rec.items[i]);
        }
      }
      buf_putc(&b, SQL_OP(ctx) == REC_KEYS ? ']' : '}');
      sql_result_buf(ctx, &b, 1);
  }
done:
  record_clear(&rec);
}

enum { KEY_HAS, KEY_GET, KEY_DATA, KEY_DTYPE, KEY_SHAPE, KEY_STYPE, KEY_NBYTES };

/* Per-key readers: ar_has, ar_get, ar_data, ar_dtype, ar_shape, ar_stype, ar_nbytes. */
static void ar_key_func(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  record_t rec;
  const unsigned char *key;
  uint64_t klen;
  const record_item *it;
  int idx, op = SQL_OP(ctx);
  (void)argc;
  record_init(&rec);
  if (sql_arg_record(ctx, argv[0], 0, &rec) <= 0) goto done;
  if (sql_arg_key(ctx, argv[1], 1, &key, &klen) <= 0) goto done;
  idx = record_find(&rec, key, klen);
  if (op == KEY_HAS) {
    sqlite3_result_int(ctx, idx >= 0);
    goto done;
  }
  if (idx < 0) goto done; /* missing key -> NULL */
  it = &rec.items[idx];
  switch (op) {
    case KEY_GET: {
      npy_array a;
      codec_err err;
      int rc = array_open(it, idx, &a, &err);
      buf_t b;
      if (rc) {
        sql_codec_error(ctx, rc, &err);
        break;
      }
      if (record_item_is_numpy(it)) {
        sql_result_blob_copy(ctx, it->data.p, it->data.n);
        break;
      }
      sql_buf_init(ctx, &b);
      array_write_npy(&b, it, &a);
      sql_result_buf(ctx, &b, 0);
      break;
    }
    case KEY_DATA: sql_result_blob_copy(ctx, it->data.p, it->data.n); break;
    case KEY_DTYPE:
      sqlite3_result_text64(ctx, (const char *)it->dtype.p, it->dtype.n, SQLITE_TRANSIENT, SQLITE_UTF8);
      break;
    case KEY_STYPE:
      sqlite3_result_text64(ctx, (const char *)it->stype.p, it->stype.n, SQLITE_TRANSIENT, SQLITE_UTF8);
      break;
    case KEY_NBYTES: sqlite3_result_int64(ctx, (sqlite3_int64)it->data.n); break;
    default: {
      int64_t shape[RECORD_MAX_DIMS];
      sql_result_shape(ctx, record_item_shape(it, shape), shape);
    }
  }
done:
  record_clear(&rec);
}

/* ar_valid / ar_error / ar_check: the record structure and every array in
** it. ar_valid and ar_error never raise for bad input; ar_check raises
** ar_error's message (for CHECK constraints). NULL in, NULL out. */
static void ar_check_func(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  record_t rec;
  codec_err err;
  int rc = CODEC_OK, i, nonempty;
  if ((nonempty = sql_check_option(ctx, argc, argv, 1)) < 0) return;
  record_init(&rec);
  switch (sqlite3_value_type(argv[0])) { /* never NULL: sql_dispatch gave NULL */
    case SQLITE_BLOB: {
      codec_span blob;
      if (sql_blob_span(argv[0], &blob) != SQLITE_OK) {
        sqlite3_result_error_nomem(ctx);
        return;
      }
      rc = record_parse(&rec, blob.p, blob.n, &err);
      for (i = 0; rc == CODEC_OK && i < rec.n; i++) rc = array_validate(&rec.items[i], i, &err);
      break;
    }
    default: rc = sql_blob_type_problem(&err, argv[0], 0, "a record"); break; /* as ar_len etc. raise */
  }
  sql_result_check_op(ctx, SQL_OP(ctx), rc, &err, nonempty, rec.n, "record");
  record_clear(&rec);
}

static const sql_function record_functions[] = {
    {"ar_len", 1, ar_record_func, NULL, NULL, REC_LEN},
    {"ar_keys", 1, ar_record_func, NULL, NULL, REC_KEYS},
    {"ar_count_bytes", 1, ar_record_func, NULL, NULL, REC_COUNT_BYTES},
    {"ar_json", 1, ar_record_func, NULL, NULL, REC_JSON},
    {"ar_has", 2, ar_key_func, NULL, NULL, KEY_HAS},
    {"ar_get", 2, ar_key_func, NULL, NULL, KEY_GET},
    {"ar_data", 2, ar_key_func, NULL, NULL, KEY_DATA},
    {"ar_dtype", 2, ar_key_func, NULL, NULL, KEY_DTYPE},
    {"ar_shape", 2, ar_key_func, NULL, NULL, KEY_SHAPE},
    {"ar_stype", 2, ar_key_func, NULL, NULL, KEY_STYPE},
    {"ar_nbytes", 2, ar_key_func, NULL, NULL, KEY_NBYTES},
    {"ar_valid", 1, ar_check_func, NULL, NULL, SQL_CHECK_VALID},
    {"ar_error", 1, ar_check_func, NULL, NULL, SQL_CHECK_ERROR},
    {"ar_check", 1, ar_check_func, NULL, NULL, SQL_CHECK_RAISE},
    {"ar_check", 2, ar_check_func, NULL, NULL, SQL_CHECK_RAISE},
};

int sql_record_register(sqlite3 *db, char **pzErrMsg) { return SQL_REGISTER_TABLE(db, record_functions, pzErrMsg); }
