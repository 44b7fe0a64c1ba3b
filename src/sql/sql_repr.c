/* SPDX-License-Identifier: Apache-2.0 */
/*
** sql_repr.c — NumPy-style printouts (src/codec/repr.c):
**
**   npy_repr(npy [, max_items [, numpy_version]])
**       repr(ndarray): "array([1., 2.], dtype=float32)"
**   ar_repr(rec [, max_items [, numpy_version]])
**       the record as a dict of those, one key a line:
**       "{'w': array(...),\n 'b': array(...)}"
**
** Arrays of more than max_items elements (default 1000, NumPy's threshold)
** are summarised with "..." (3 items at each end of every axis).
** numpy_version ('1.24' by default, '2.4', '2', ...) names the NumPy whose
** printing is followed (repr.h).
*/
#include "sql/sql_modules.h"
#include "sql/sql_util.h"
SQLITE_EXTENSION_INIT3

#include "codec/array.h"
#include "codec/repr.h"

/* The optional max_items argument (argument index argi). 1 when usable. */
static int arg_threshold(sqlite3_context *ctx, int argc, sqlite3_value **argv, int argi, uint64_t *out) {
  sqlite3_int64 n;
  int rc;
  *out = REPR_THRESHOLD;
  if (argc <= argi) return 1;
  if ((rc = sql_arg_int64(ctx, argv[argi], argi, "max_items", &n)) <= 0) return rc;
  if (n < 0) {
    sql_error(ctx, "max_items must be 0 or more, got %lld", (long long)n);
    return -1;
  }
  *out = (uint64_t)n;
  return 1;
}

/* The optional numpy_version argument: "MAJOR" or "MAJOR.MINOR" text (or a
** number), major 1 or 2; "2" alone is the latest NumPy 2 printing. */
static int arg_version(sqlite3_context *ctx, int argc, sqlite3_value **argv, int argi, int *out) {
  const unsigned char *s;
  int major = 0, minor = 0, digits = 0, n, i = 0;
  char q[CODEC_QUOTE_MAX];
  *out = REPR_NUMPY_1_24;
  if (argc <= argi) return 1;
  if (sqlite3_value_type(argv[argi]) == SQLITE_BLOB) {
    sql_error(ctx, "numpy_version must be a NumPy version such as '1.24' or '2.4', got a blob");
    return -1;
  }
  s = sqlite3_value_text(argv[argi]);
  if (!s) {
    if (sqlite3_value_type(argv[argi]) == SQLITE_NULL) return 0; /* a NULL argument, a NULL result */
    sqlite3_result_error_nomem(ctx);
    return -1;
  }
  n = sqlite3_value_bytes(argv[argi]);
  for (; i < n && s[i] >= '0' && s[i] <= '9' && digits < 3; i++, digits++) major = major * 10 + (s[i] - '0');
  if (!digits) goto bad;
  if (i < n && s[i] == '.') {
    for (i++, digits = 0; i < n && s[i] >= '0' && s[i] <= '9' && digits < 3; i++, digits++)
      minor = minor * 10 + (s[i] - '0');
    if (!digits) goto bad;
  } else {
    minor = 99;
  }
  if (i != n || major < 1 || major > 2) goto bad;
  *out = major * 100 + (minor > 99 ? 99 : minor);
  return 1;
bad:
  sql_error(ctx, "numpy_version must be a NumPy version such as '1.24' or '2.4', got '%s'",
            codec_quote(q, sizeof(q), s, (uint64_t)n));
  return -1;
}

static void npy_repr_func(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  npy_array a;
  uint64_t threshold;
  int version;
  buf_t b;
  if (sql_arg_npy(ctx, argv[0], 0, &a) <= 0) return;
  if (arg_threshold(ctx, argc, argv, 1, &threshold) <= 0) return;
  if (arg_version(ctx, argc, argv, 2, &version) <= 0) return;
  sql_buf_init(ctx, &b);
  repr_array(&b, &a, threshold, version);
  sql_result_buf(ctx, &b, 1);
}

static void ar_repr_func(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  record_t rec;
  uint64_t threshold;
  buf_t b;
  int i, version;
  record_init(&rec);
  if (sql_arg_record(ctx, argv[0], 0, &rec) <= 0) goto done;
  if (arg_threshold(ctx, argc, argv, 1, &threshold) <= 0) goto done;
  if (arg_version(ctx, argc, argv, 2, &version) <= 0) goto done;
  sql_buf_init(ctx, &b);
  buf_putc(&b, '{');
  for (i = 0; i < rec.n; i++) {
    npy_array a;
    codec_err err;
    int rc = array_open(&rec.items[i], i, &a, &err);
    if (rc) {
      buf_free(&b);
      sql_codec_error(ctx, rc, &err);
      goto done;
    }
    if (i) buf_puts(&b, ",\n ");
    repr_key(&b, rec.items[i].key.p, rec.items[i].key.n);
    buf_puts(&b, ": ");
    repr_array(&b, &a, threshold, version);
  }
  buf_putc(&b, '}');
  sql_result_buf(ctx, &b, 1);
done:
  record_clear(&rec);
}

static const sql_function repr_functions[] = {
    {"npy_repr", 1, npy_repr_func, NULL, NULL, 0}, {"npy_repr", 2, npy_repr_func, NULL, NULL, 0},
    {"npy_repr", 3, npy_repr_func, NULL, NULL, 0}, {"ar_repr", 1, ar_repr_func, NULL, NULL, 0},
    {"ar_repr", 2, ar_repr_func, NULL, NULL, 0},   {"ar_repr", 3, ar_repr_func, NULL, NULL, 0},
};

int sql_repr_register(sqlite3 *db, char **pzErrMsg) { return SQL_REGISTER_TABLE(db, repr_functions, pzErrMsg); }
