/* SPDX-License-Identifier: Apache-2.0 */
/*
** sql_util.c — argument, error and result helpers for the SQL bindings
** (see sql_util.h).
*/
#include "sql/sql_util.h"
#include "sql/alloc_pool.h"
SQLITE_EXTENSION_INIT3

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "codec/array.h"
#include "codec/json.h"
#include "codec/packed.h"

/* Scalar functions go through here: a NULL argument gives a NULL result
** before anything else is looked at (so `f(bad, NULL)` is NULL, not an
** error), then the entry's own xFunc runs. */
static void sql_dispatch(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  int i;
  for (i = 0; i < argc; i++) {
    if (sqlite3_value_type(argv[i]) == SQLITE_NULL) return;
  }
  SQL_ENTRY(ctx)->xFunc(ctx, argc, argv);
}

/* The same for functions whose later arguments may be NULL on purpose
** (documented): only a NULL first argument gives NULL at once. */
static void sql_dispatch_first(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  if (argc > 0 && sqlite3_value_type(argv[0]) == SQLITE_NULL) return;
  SQL_ENTRY(ctx)->xFunc(ctx, argc, argv);
}

static int register_each(sqlite3 *db, const sql_function *fns, int count, int flags,
                         void (*dispatch)(sqlite3_context *, int, sqlite3_value **), char **pzErrMsg) {
  int i, rc;
  for (i = 0; i < count; i++) {
    rc = sqlite3_create_function_v2(db, fns[i].name, fns[i].nargs, flags, (void *)&fns[i],
                                    fns[i].xFunc ? dispatch : NULL, fns[i].xStep, fns[i].xFinal, NULL);
    if (rc != SQLITE_OK) {
      if (pzErrMsg)
        *pzErrMsg = sqlite3_mprintf("arrayrecord: cannot register %s (%s)", fns[i].name, sqlite3_errstr(rc));
      return rc;
    }
  }
  return SQLITE_OK;
}

int sql_register_owned(sqlite3 *db, const sql_function *entry, int optional, void (*destroy)(void *), char **pzErrMsg) {
  int rc = sqlite3_create_function_v2(db, entry->name, entry->nargs, SQL_PURE, (void *)entry,
                                      optional ? sql_dispatch_first : sql_dispatch, NULL, NULL, destroy);
  if (rc != SQLITE_OK && pzErrMsg)
    *pzErrMsg = sqlite3_mprintf("arrayrecord: cannot register %s (%s)", entry->name, sqlite3_errstr(rc));
  return rc;
}

int sql_register_optional(sqlite3 *db, const sql_function *fns, int count, char **pzErrMsg) {
  return register_each(db, fns, count, SQL_PURE, sql_dispatch_first, pzErrMsg);
}

int sql_register(sqlite3 *db, const sql_function *fns, int count, char **pzErrMsg) {
  return sql_register_flags(db, fns, count, SQL_PURE, pzErrMsg);
}

int sql_register_flags(sqlite3 *db, const sql_function *fns, int count, int flags, char **pzErrMsg) {
  return register_each(db, fns, count, flags, sql_dispatch, pzErrMsg);
}

int sql_register_window(sqlite3 *db, const sql_window_function *fns, int count, char **pzErrMsg) {
  int i, rc;
  for (i = 0; i < count; i++) {
    const sql_function *f = &fns[i].f;
    rc = sqlite3_create_window_function(db, f->name, f->nargs, SQL_PURE, (void *)f, f->xStep, f->xFinal, fns[i].xValue,
                                        fns[i].xInverse, NULL);
    if (rc != SQLITE_OK) {
      if (pzErrMsg) *pzErrMsg = sqlite3_mprintf("arrayrecord: cannot register %s (%s)", f->name, sqlite3_errstr(rc));
      return rc;
    }
  }
  return SQLITE_OK;
}

int sql_register_module(sqlite3 *db, const char *name, const sqlite3_module *module, const char *schema,
                        char **pzErrMsg) {
  int rc = sqlite3_create_module(db, name, module, (void *)schema);
  if (rc != SQLITE_OK && pzErrMsg)
    *pzErrMsg = sqlite3_mprintf("arrayrecord: cannot register %s (%s)", name, sqlite3_errstr(rc));
  return rc;
}

void sql_error(sqlite3_context *ctx, const char *fmt, ...) {
  char msg[512];
  int n;
  va_list ap;
  n = snprintf(msg, sizeof(msg), "%s: ", SQL_FNAME(ctx));
  va_start(ap, fmt);
  vsnprintf(msg + n, sizeof(msg) - (size_t)n, fmt, ap);
  va_end(ap);
  sqlite3_result_error(ctx, msg, -1);
}

void sql_codec_error(sqlite3_context *ctx, int rc, const codec_err *err) {
  if (rc == CODEC_NOMEM)
    sqlite3_result_error_nomem(ctx);
  else if (rc == CODEC_TOOBIG)
    sqlite3_result_error_toobig(ctx);
  else
    sql_error(ctx, "%s", err->msg);
}

uint64_t sql_limit(sqlite3_context *ctx) {
  int limit = sqlite3_limit(sqlite3_context_db_handle(ctx), SQLITE_LIMIT_LENGTH, -1);
  return limit < 0 ? 0 : (uint64_t)limit;
}

void sql_buf_init(sqlite3_context *ctx, buf_t *b) { buf_init_result(b, sql_limit(ctx)); }

void sql_result_blob_copy(sqlite3_context *ctx, const void *p, uint64_t n) {
  void *q;
  if (n < APOOL_MIN || n > sql_limit(ctx)) { /* small, or too big: SQLite's copy, or its error */
    sqlite3_result_blob64(ctx, p, n, SQLITE_TRANSIENT);
    return;
  }
  if (!(q = codec_malloc(n))) {
    sqlite3_result_error_nomem(ctx);
    return;
  }
  memcpy(q, p, (size_t)n);
  sqlite3_result_blob64(ctx, q, n, codec_free);
}

void sql_result_buf(sqlite3_context *ctx, buf_t *b, int text) {
  void (*release)(void *) = b->result ? buf_release : codec_free;
  uint64_t n;
  unsigned char *p;
  if (b->rc == CODEC_NOMEM) {
    buf_free(b);
    sqlite3_result_error_nomem(ctx);
    return;
  }
  if (b->rc) {
    buf_free(b);
    sqlite3_result_error_toobig(ctx);
    return;
  }
  p = buf_detach(b, &n);
  if (text) {
    /* sqlite3_result_text64 needs no terminator when given the length. */
    if (!p)
      sqlite3_result_text(ctx, "", 0, SQLITE_STATIC);
    else
      sqlite3_result_text64(ctx, (const char *)p, n, release, SQLITE_UTF8);
  } else {
    if (!p)
      sqlite3_result_zeroblob(ctx, 0);
    else
      sqlite3_result_blob64(ctx, p, n, release);
  }
}

void sql_result_shape(sqlite3_context *ctx, int ndim, const int64_t *shape) {
  char text[NPY_SHAPE_JSON_MAX]; /* copied by SQLite into its own value: no allocation per row */
  sqlite3_result_text(ctx, text, (int)npy_shape_format(text, ndim, shape), SQLITE_TRANSIENT);
}

static const char *type_name(int t) {
  switch (t) {
    case SQLITE_INTEGER: return "an integer";
    case SQLITE_FLOAT: return "a real";
    case SQLITE_TEXT: return "text";
    case SQLITE_BLOB: return "a blob";
    default: return "NULL";
  }
}

static const unsigned char empty_blob[1] = {0};

int sql_blob_span(sqlite3_value *v, codec_span *out) {
  out->p = sqlite3_value_blob(v);
  out->n = (uint64_t)sqlite3_value_bytes(v);
  if (!out->p) {
    /* A zero-length BLOB has a NULL pointer; a longer one only on OOM. */
    if (out->n) return SQLITE_NOMEM;
    out->p = empty_blob; /* a zero-length BLOB is still a value */
  }
  return SQLITE_OK;
}

int sql_blob_type_problem(codec_err *err, sqlite3_value *v, int argi, const char *what) {
  return codec_fail(err, CODEC_CORRUPT, "argument %d must be %s BLOB, got %s", argi + 1, what,
                    type_name(sqlite3_value_type(v)));
}

int sql_arg_blob(sqlite3_context *ctx, sqlite3_value *v, int argi, const char *what, const unsigned char **p,
                 uint64_t *n) {
  int t = sqlite3_value_type(v);
  if (t == SQLITE_NULL) return 0;
  if (t != SQLITE_BLOB) {
    codec_err err;
    sql_blob_type_problem(&err, v, argi, what);
    sql_error(ctx, "%s", err.msg);
    return -1;
  }
  {
    codec_span s;
    if (sql_blob_span(v, &s) != SQLITE_OK) {
      sqlite3_result_error_nomem(ctx);
      return -1;
    }
    *p = s.p;
    *n = s.n;
  }
  return 1;
}

int sql_arg_text(sqlite3_context *ctx, sqlite3_value *v, int argi, const char *what, const char **p, uint64_t *n) {
  int t = sqlite3_value_type(v);
  if (t == SQLITE_NULL) return 0;
  if (t != SQLITE_TEXT) {
    sql_error(ctx, "argument %d must be %s (text), got %s", argi + 1, what, type_name(t));
    return -1;
  }
  *p = (const char *)sqlite3_value_text(v);
  *n = (uint64_t)sqlite3_value_bytes(v);
  if (!*p) {
    sqlite3_result_error_nomem(ctx);
    return -1;
  }
  return 1;
}

int sql_npy_parse(const unsigned char *p, uint64_t n, npy_array *a, codec_err *err) {
  int rc = npy_parse(p, n, a, err);
  if (rc != CODEC_CORRUPT || !npy_bad_magic(p, n)) return rc;
  /* Say what a likely mistake looks like (off the success path): a record
  ** where an array belongs, or a 4- or 8-byte BLOB, most likely a NumPy
  ** scalar (np.float32(1.5)) that the driver bound as its raw bytes. */
  if (record_looks_like(p, n))
    return codec_fail(err, CODEC_CORRUPT, "got a record, not a .npy file: take an array out with ar_get(rec, key)");
  switch (codec_sniff(p, n)) {
    case CODEC_SNIFF_NPZ:
      return codec_fail(err, CODEC_CORRUPT,
                        "got a .npz archive, not a .npy file: convert it with ar_from_npz(blob), then take an array "
                        "out with ar_get(rec, key)");
    case CODEC_SNIFF_SAFETENSORS:
      return codec_fail(err, CODEC_CORRUPT,
                        "got a safetensors file, not a .npy file: convert it with ar_from_safetensors(blob), then "
                        "take an array out with ar_get(rec, key)");
    case CODEC_SNIFF_PACKED: {
      char msg[sizeof(err->msg)];
      return codec_fail(err, CODEC_CORRUPT, "%s", packed_misread(msg, sizeof(msg), p, n, 0));
    }
    default: break;
  }
  if (n == 4 || n == 8)
    return codec_fail(err, CODEC_CORRUPT,
                      "got %s %d-byte BLOB, not a .npy file: a NumPy scalar bound as bytes? pass a number or "
                      "np.save bytes",
                      n == 8 ? "an" : "a", (int)n);
  return rc;
}

int sql_arg_npy(sqlite3_context *ctx, sqlite3_value *v, int argi, npy_array *a) {
  const unsigned char *p;
  uint64_t n;
  codec_err err;
  int rc = sql_arg_blob(ctx, v, argi, "a .npy", &p, &n);
  if (rc <= 0) return rc;
  rc = sql_npy_parse(p, n, a, &err);
  if (rc) {
    sql_codec_error(ctx, rc, &err);
    return -1;
  }
  return 1;
}

int sql_arg_record(sqlite3_context *ctx, sqlite3_value *v, int argi, record_t *rec) {
  const unsigned char *p;
  uint64_t n;
  codec_err err;
  int rc = sql_arg_blob(ctx, v, argi, "a record", &p, &n);
  if (rc <= 0) return rc;
  rc = record_parse(rec, p, n, &err);
  if (rc) {
    sql_codec_error(ctx, rc, &err);
    return -1;
  }
  return 1;
}

int sql_arg_npy_value(sqlite3_context *ctx, sqlite3_value *v, int argi, codec_span key, npy_array *a,
                      codec_span *bytes) {
  codec_err err;
  char q[CODEC_QUOTE_MAX];
  int rc = sql_arg_blob(ctx, v, argi, "a .npy", &bytes->p, &bytes->n), big;
  if (rc <= 0) return rc;
  if (key.p) codec_quote(q, sizeof(q), key.p, key.n);
  if ((rc = sql_npy_parse(bytes->p, bytes->n, a, &err)) != CODEC_OK) {
    if (rc == CODEC_NOMEM || !key.p)
      sql_codec_error(ctx, rc, &err);
    else
      sql_error(ctx, "%s (argument %d, key '%s')", err.msg, argi + 1, q);
    return -1;
  }
  if ((big = array_dim_over_int32(a->ndim, a->shape)) >= 0) {
    if (!key.p)
      sql_error(ctx, "dimension %lld does not fit Flower's int32 shape", (long long)a->shape[big]);
    else
      sql_error(ctx, "dimension %lld does not fit Flower's int32 shape (argument %d, key '%s')",
                (long long)a->shape[big], argi + 1, q);
    return -1;
  }
  bytes->n = a->header_len + a->nbytes;
  return 1;
}

/* A key argument: text (integers are accepted as their text, so keys of
** ArrayRecord(list) can be written ar_get(rec, 0)). */
int sql_arg_key(sqlite3_context *ctx, sqlite3_value *v, int argi, const unsigned char **p, uint64_t *n) {
  int t = sqlite3_value_type(v);
  if (t == SQLITE_NULL) return 0;
  if (t == SQLITE_BLOB || t == SQLITE_FLOAT) {
    sql_error(ctx, "argument %d must be a key (text)", argi + 1);
    return -1;
  }
  *p = sqlite3_value_text(v);
  *n = (uint64_t)sqlite3_value_bytes(v);
  if (!*p) {
    sqlite3_result_error_nomem(ctx);
    return -1;
  }
  /* Record keys are protobuf strings: a key that is not UTF-8 would make a
  ** record that neither we nor Flower can read back. */
  if (!codec_utf8_valid(*p, *n)) {
    sql_error(ctx, "argument %d is not valid UTF-8 text", argi + 1);
    return -1;
  }
  return 1;
}

int sql_arg_int64(sqlite3_context *ctx, sqlite3_value *v, int argi, const char *what, sqlite3_int64 *out) {
  int t = sqlite3_value_type(v);
  if (t == SQLITE_NULL) return 0;
  if (t != SQLITE_INTEGER) {
    sql_error(ctx, "argument %d must be %s (an integer), got %s", argi + 1, what, type_name(t));
    return -1;
  }
  *out = sqlite3_value_int64(v);
  return 1;
}

int sql_arg_double(sqlite3_context *ctx, sqlite3_value *v, int argi, const char *what, double *out) {
  int t = sqlite3_value_type(v);
  if (t == SQLITE_NULL) return 0;
  if (t != SQLITE_INTEGER && t != SQLITE_FLOAT) {
    sql_error(ctx, "argument %d must be %s (a number), got %s", argi + 1, what, type_name(t));
    return -1;
  }
  *out = sqlite3_value_double(v);
  return 1;
}

int sql_arg_dtype(sqlite3_context *ctx, sqlite3_value *v, int argi, dt_dtype *d) {
  const char *s;
  uint64_t n;
  codec_err err;
  int rc = sql_arg_text(ctx, v, argi, "a dtype name", &s, &n);
  if (rc <= 0) return rc;
  if (dt_parse(s, n, d, &err)) {
    sql_error(ctx, "%s", err.msg);
    return -1;
  }
  return 1;
}

void sql_result_check(sqlite3_context *ctx, int rc, const codec_err *err, int want_error) {
  if (rc == CODEC_NOMEM)
    sqlite3_result_error_nomem(ctx);
  else if (!want_error)
    sqlite3_result_int(ctx, rc == CODEC_OK);
  else if (rc)
    sqlite3_result_text(ctx, err->msg, -1, SQLITE_TRANSIENT);
}

int sql_check_option(sqlite3_context *ctx, int argc, sqlite3_value **argv, int argi) {
  const char *opt;
  uint64_t n;
  int rc;
  if (argc <= argi) return 0;
  if ((rc = sql_arg_text(ctx, argv[argi], argi, "'nonempty'", &opt, &n)) <= 0) return rc;
  if (sqlite3_stricmp(opt, "nonempty") != 0) {
    sql_error(ctx, "argument %d must be 'nonempty'", argi + 1);
    return -1;
  }
  return 1;
}

void sql_result_check_op(sqlite3_context *ctx, int op, int rc, const codec_err *err, int nonempty, int items,
                         const char *what) {
  codec_err empty;
  if (rc == CODEC_OK && nonempty && items == 0) {
    rc = codec_fail(&empty, CODEC_CORRUPT, "the %s is empty (x'' holds no items)", what);
    err = &empty;
  }
  if (op != SQL_CHECK_RAISE)
    sql_result_check(ctx, rc, err, op == SQL_CHECK_ERROR);
  else if (rc)
    sql_codec_error(ctx, rc, err);
  else
    sqlite3_result_int(ctx, 1);
}

void sql_result_value(sqlite3_context *ctx, const dt_value *v, dt_type t) {
  switch (v->kind) {
    case DT_KIND_BOOL:
    case DT_KIND_INT: sqlite3_result_int64(ctx, v->i); break;
    case DT_KIND_UINT:
      if (v->u <= (uint64_t)INT64_MAX)
        sqlite3_result_int64(ctx, (sqlite3_int64)v->u);
      else
        sqlite3_result_double(ctx, (double)v->u);
      break;
    case DT_KIND_FLOAT: sqlite3_result_double(ctx, v->re); break;
    default: {
      buf_t b;
      sql_buf_init(ctx, &b);
      json_put_value(&b, v, t);
      sql_result_buf(ctx, &b, 1);
    }
  }
}

int sql_vtab_connect_size(sqlite3 *db, const char *schema, size_t size, int innocuous, sqlite3_vtab **ppVtab) {
  sqlite3_vtab *vtab;
  int rc = sqlite3_declare_vtab(db, schema);
  if (rc != SQLITE_OK) return rc;
  vtab = sqlite3_malloc64(size);
  if (!vtab) return SQLITE_NOMEM;
  memset(vtab, 0, size);
  if (innocuous) sqlite3_vtab_config(db, SQLITE_VTAB_INNOCUOUS);
  *ppVtab = vtab;
  return SQLITE_OK;
}

int sql_vtab_connect(sqlite3 *db, void *schema, int argc, const char *const *argv, sqlite3_vtab **ppVtab,
                     char **pzErr) {
  (void)argc;
  (void)argv;
  (void)pzErr;
  return sql_vtab_connect_size(db, (const char *)schema, sizeof(sqlite3_vtab), 1, ppVtab);
}

int sql_vtab_disconnect(sqlite3_vtab *vtab) {
  sqlite3_free(vtab);
  return SQLITE_OK;
}

int sql_vtab_open(size_t size, sqlite3_vtab_cursor **ppCursor) {
  sqlite3_vtab_cursor *cur = sqlite3_malloc64(size);
  if (!cur) return SQLITE_NOMEM;
  memset(cur, 0, size);
  *ppCursor = cur;
  return SQLITE_OK;
}

int sql_vtab_error(sqlite3_vtab_cursor *base, const char *fname, int rc, const codec_err *err) {
  if (rc == CODEC_NOMEM) return SQLITE_NOMEM;
  if (rc == CODEC_TOOBIG) return SQLITE_TOOBIG;
  sqlite3_free(base->pVtab->zErrMsg);
  base->pVtab->zErrMsg = sqlite3_mprintf("%s: %s", fname, err->msg);
  return base->pVtab->zErrMsg ? SQLITE_ERROR : SQLITE_NOMEM;
}

int sql_vtab_column_error(sqlite3_context *ctx, const char *who, int rc, const codec_err *err) {
  char *msg;
  if (rc == CODEC_NOMEM) {
    sqlite3_result_error_nomem(ctx);
    return 0;
  }
  msg = sqlite3_mprintf("%s: %s", who, err->msg);
  if (msg)
    sqlite3_result_error(ctx, msg, -1);
  else
    sqlite3_result_error_nomem(ctx);
  sqlite3_free(msg);
  return 0;
}

int sql_vtab_blob_arg(sqlite3_vtab_cursor *base, const char *fname, const char *what, int idxNum, int argc,
                      sqlite3_value **argv, codec_span *arg) {
  codec_err err;
  arg->p = NULL;
  arg->n = 0;
  if (idxNum != 1 || argc != 1) {
    codec_fail(&err, CODEC_CORRUPT, "missing argument (%s BLOB)", what);
    return sql_vtab_error(base, fname, CODEC_CORRUPT, &err);
  }
  if (sqlite3_value_type(argv[0]) == SQLITE_NULL) return SQLITE_OK;
  if (sqlite3_value_type(argv[0]) != SQLITE_BLOB) {
    sql_blob_type_problem(&err, argv[0], 0, what); /* as the scalar functions say it */
    return sql_vtab_error(base, fname, CODEC_CORRUPT, &err);
  }
  return sql_blob_span(argv[0], arg);
}

int sql_vtab_best_index(sqlite3_index_info *info, int arg_col) {
  int i, seen = 0;
  for (i = 0; i < info->nConstraint; i++) {
    const struct sqlite3_index_constraint *c = &info->aConstraint[i];
    /* Only "arg = value" passes the argument; other comparisons on the
    ** hidden column are left to SQLite (xFilter then reports the missing
    ** argument by name, where refusing the plan gave "no query solution"). */
    if (c->iColumn != arg_col || c->op != SQLITE_INDEX_CONSTRAINT_EQ) continue;
    seen = 1;
    if (!c->usable) continue;
    info->aConstraintUsage[i].argvIndex = 1;
    info->aConstraintUsage[i].omit = 1;
    info->idxNum = 1;
    info->estimatedCost = 10;
    info->estimatedRows = 10;
    return SQLITE_OK;
  }
  /* The argument is there but cannot be used in this plan order: tell the
  ** planner this plan is unusable so it picks one where it can. */
  if (seen) return SQLITE_CONSTRAINT;
  info->idxNum = 0;
  info->estimatedCost = 1e12;
  return SQLITE_OK;
}

int sql_vtab_best_index_args(sqlite3_index_info *info, int first_col, int nargs) {
  int i, k, seen = 0, at[8], used = 0;
  for (k = 0; k < nargs; k++) at[k] = -1;
  for (i = 0; i < info->nConstraint; i++) {
    const struct sqlite3_index_constraint *c = &info->aConstraint[i];
    k = c->iColumn - first_col;
    if (k < 0 || k >= nargs || c->op != SQLITE_INDEX_CONSTRAINT_EQ) continue;
    seen |= 1 << k;
    if (c->usable) at[k] = i;
  }
  for (k = 0; k < nargs; k++) /* an argument there but not usable in this order: another plan */
    if ((seen & (1 << k)) && at[k] < 0) return SQLITE_CONSTRAINT;
  info->idxNum = 0;
  for (k = 0; k < nargs; k++) {
    if (at[k] < 0) continue;
    info->aConstraintUsage[at[k]].argvIndex = ++used;
    info->aConstraintUsage[at[k]].omit = 1;
    info->idxNum |= 1 << k;
  }
  return SQLITE_OK;
}
