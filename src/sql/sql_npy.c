/* SPDX-License-Identifier: Apache-2.0 */
/*
** sql_npy.c — SQL functions on single arrays (`npy` = a .npy BLOB):
**
**   npy_dtype(npy)  npy_descr(npy)  npy_shape(npy)  npy_ndim(npy)
**   npy_numel(npy)  npy_nbytes(npy) npy_fortran(npy) npy_version(npy)
**   npy(raw, dtype, shape)   npy_raw(npy)
**   npy_to_json(npy)         npy_from_json(json [, dtype])
**   npy_item(npy, flat_index)
**   npy_valid(npy)  npy_error(npy)
**
** Metadata functions parse the header only and never copy the payload.
*/
#include "sql/sql_modules.h"
#include "sql/sql_util.h"
SQLITE_EXTENSION_INIT3

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "codec/json.h"

enum { META_DTYPE, META_DESCR, META_SHAPE, META_NDIM, META_NUMEL, META_NBYTES, META_FORTRAN, META_VERSION };

static void npy_meta_func(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  npy_array a;
  char name[DT_NAME_MAX];
  (void)argc;
  if (sql_arg_npy(ctx, argv[0], 0, &a) <= 0) return;
  switch (SQL_OP(ctx)) {
    case META_DTYPE:
      dt_name(a.dtype, name);
      sqlite3_result_text(ctx, name, -1, SQLITE_TRANSIENT);
      break;
    case META_DESCR:
      dt_descr(a.dtype, name);
      sqlite3_result_text(ctx, name, -1, SQLITE_TRANSIENT);
      break;
    case META_SHAPE: sql_result_shape(ctx, a.ndim, a.shape); break;
    case META_NDIM: sqlite3_result_int(ctx, a.ndim); break;
    case META_NUMEL: sqlite3_result_int64(ctx, (sqlite3_int64)a.numel); break;
    case META_NBYTES: sqlite3_result_int64(ctx, (sqlite3_int64)a.nbytes); break;
    case META_FORTRAN: sqlite3_result_int(ctx, a.fortran_order); break;
    default: sqlite3_result_int(ctx, a.version); break;
  }
}

/* npy(raw BLOB, dtype TEXT, shape JSON) -> .npy */
static void npy_build_func(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  const unsigned char *raw;
  const char *shape_text;
  uint64_t raw_len, shape_len, numel, nbytes;
  dt_dtype d;
  int ndim, rc;
  int64_t shape[NPY_MAX_DIMS];
  codec_err err;
  buf_t b;
  (void)argc;
  if ((rc = sql_arg_blob(ctx, argv[0], 0, "a raw", &raw, &raw_len)) <= 0) return;
  if ((rc = sql_arg_dtype(ctx, argv[1], 1, &d)) <= 0) return;
  if (sqlite3_value_type(argv[2]) == SQLITE_INTEGER) {
    sqlite3_int64 dim = sqlite3_value_int64(argv[2]);
    /* The JSON form's message: an integer is the shape [dim]. */
    if (dim < 0) {
      sql_error(ctx, "shape must be a JSON array of non-negative integers");
      return;
    }
    ndim = 1;
    shape[0] = dim;
  } else {
    if ((rc = sql_arg_text(ctx, argv[2], 2, "a JSON shape", &shape_text, &shape_len)) <= 0) return;
    if (json_parse_shape(shape_text, shape_len, &ndim, shape, &err)) {
      sql_error(ctx, "%s", err.msg);
      return;
    }
  }
  if ((rc = npy_shape_numel(ndim, shape, &numel, &err)) != CODEC_OK) {
    sql_error(ctx, "%s", err.msg);
    return;
  }
  if (size_mul(numel, dt_size(d.type), &nbytes)) {
    sql_error(ctx, "shape has more bytes than fit in 64 bits");
    return;
  }
  if (nbytes != raw_len) {
    char name[DT_NAME_MAX];
    dt_name(d, name);
    {
      sql_error(ctx, "raw has %llu bytes, %s with that shape needs %llu", (unsigned long long)raw_len, name,
                (unsigned long long)nbytes);
      return;
    }
  }
  sql_buf_init(ctx, &b);
  npy_write(&b, d, ndim, shape, raw, raw_len);
  sql_result_buf(ctx, &b, 0);
}

/* npy_raw(npy): the payload in C order, in the file's byte order. */
static void npy_raw_func(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  npy_array a;
  unsigned char *owned;
  const unsigned char *c;
  (void)argc;
  if (sql_arg_npy(ctx, argv[0], 0, &a) <= 0) return;
  if (a.nbytes > sql_limit(ctx)) {
    sqlite3_result_error_toobig(ctx);
    return;
  }
  c = npy_c_payload(&a, &owned);
  if (!c) {
    sqlite3_result_error_nomem(ctx);
    return;
  }
  if (owned)
    sqlite3_result_blob64(ctx, owned, a.nbytes, codec_free);
  else
    sql_result_blob_copy(ctx, c, a.nbytes);
}

static void npy_to_json_func(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  npy_array a;
  unsigned char *owned;
  const unsigned char *c;
  buf_t b;
  (void)argc;
  if (sql_arg_npy(ctx, argv[0], 0, &a) <= 0) return;
  c = npy_c_payload(&a, &owned);
  if (!c) {
    sqlite3_result_error_nomem(ctx);
    return;
  }
  sql_buf_init(ctx, &b);
  json_put_array(&b, c, a.dtype, a.ndim, a.shape);
  codec_free(owned);
  sql_result_buf(ctx, &b, 1);
}

/* npy_from_json(json [, dtype]) */
static void npy_from_json_func(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  const char *text;
  uint64_t len;
  dt_dtype d = dt_native(DT_FLOAT64);
  int has_dtype = 0, ndim, rc;
  int64_t shape[NPY_MAX_DIMS];
  buf_t payload, b;
  codec_err err;
  char number[32];
  if (sqlite3_value_type(argv[0]) == SQLITE_INTEGER || sqlite3_value_type(argv[0]) == SQLITE_FLOAT) {
    /* A SQL number is a scalar (0-d) array; format it without losing bits.
    ** A REAL may be infinite (9e999): spelled as npy_to_json writes it. */
    double v = sqlite3_value_double(argv[0]);
    if (sqlite3_value_type(argv[0]) == SQLITE_INTEGER)
      snprintf(number, sizeof(number), "%lld", (long long)sqlite3_value_int64(argv[0]));
    else if (isfinite(v))
      json_format_float(number, v, 64);
    else
      strcpy(number, v != v ? "\"NaN\"" : v > 0 ? "\"Infinity\"" : "\"-Infinity\"");
    text = number;
    len = strlen(number);
  } else if ((rc = sql_arg_text(ctx, argv[0], 0, "JSON", &text, &len)) <= 0) {
    return;
  }
  if (argc > 1) {
    if (sql_arg_dtype(ctx, argv[1], 1, &d) <= 0) return;
    has_dtype = 1;
  }
  sql_buf_init(ctx, &payload);
  rc = json_parse_array(text, len, has_dtype, &d, &ndim, shape, &payload, &err);
  if (rc) {
    buf_free(&payload);
    if (rc == CODEC_NOMEM || rc == CODEC_TOOBIG) {
      sql_codec_error(ctx, rc, &err);
      return;
    }
    {
      sql_error(ctx, "%s", err.msg);
      return;
    }
  }
  sql_buf_init(ctx, &b);
  npy_write(&b, d, ndim, shape, payload.p, payload.n);
  buf_free(&payload);
  sql_result_buf(ctx, &b, 0);
}

/* npy_item(npy, i): element i in C order; negative i counts from the end. */
static void npy_item_func(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  npy_array a;
  sqlite3_int64 i;
  dt_value v;
  (void)argc;
  if (sql_arg_npy(ctx, argv[0], 0, &a) <= 0) return;
  if (sql_arg_int64(ctx, argv[1], 1, "an index", &i) <= 0) return;
  if (i < 0) i += (sqlite3_int64)a.numel;
  if (i < 0 || (uint64_t)i >= a.numel) {
    {
      sql_error(ctx, "index %lld out of range for %llu elements", (long long)sqlite3_value_int64(argv[1]),
                (unsigned long long)a.numel);
      return;
    }
  }
  dt_load(a.data + npy_element_offset(&a, (uint64_t)i), a.dtype, &v);
  sql_result_value(ctx, &v, (dt_type)a.dtype.type);
}

/* npy_valid / npy_error: never raise for bad input (a table scan must not
** abort); they report it. NULL in, NULL out. */
static void npy_check_func(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  npy_array a;
  codec_err err;
  int rc = CODEC_OK;
  int want_error = SQL_OP(ctx);
  (void)argc;
  switch (sqlite3_value_type(argv[0])) { /* never NULL: sql_dispatch gave NULL */
    case SQLITE_BLOB: {
      codec_span blob;
      if (sql_blob_span(argv[0], &blob) != SQLITE_OK) {
        sqlite3_result_error_nomem(ctx);
        return;
      }
      rc = sql_npy_parse(blob.p, blob.n, &a, &err);
      break;
    }
    default:
      rc = sql_blob_type_problem(&err, argv[0], 0, "a .npy"); /* the text npy_dtype etc. raise */
      break;
  }
  sql_result_check(ctx, rc, &err, want_error);
}

static const sql_function npy_functions[] = {
    {"npy_dtype", 1, npy_meta_func, NULL, NULL, META_DTYPE},
    {"npy_descr", 1, npy_meta_func, NULL, NULL, META_DESCR},
    {"npy_shape", 1, npy_meta_func, NULL, NULL, META_SHAPE},
    {"npy_ndim", 1, npy_meta_func, NULL, NULL, META_NDIM},
    {"npy_numel", 1, npy_meta_func, NULL, NULL, META_NUMEL},
    {"npy_nbytes", 1, npy_meta_func, NULL, NULL, META_NBYTES},
    {"npy_fortran", 1, npy_meta_func, NULL, NULL, META_FORTRAN},
    {"npy_version", 1, npy_meta_func, NULL, NULL, META_VERSION},
    {"npy", 3, npy_build_func, NULL, NULL, 0},
    {"npy_raw", 1, npy_raw_func, NULL, NULL, 0},
    {"npy_to_json", 1, npy_to_json_func, NULL, NULL, 0},
    {"npy_from_json", 1, npy_from_json_func, NULL, NULL, 0},
    {"npy_from_json", 2, npy_from_json_func, NULL, NULL, 0},
    {"npy_item", 2, npy_item_func, NULL, NULL, 0},
    {"npy_valid", 1, npy_check_func, NULL, NULL, 0},
    {"npy_error", 1, npy_check_func, NULL, NULL, 1},
};

int sql_npy_register(sqlite3 *db, char **pzErrMsg) { return SQL_REGISTER_TABLE(db, npy_functions, pzErrMsg); }
