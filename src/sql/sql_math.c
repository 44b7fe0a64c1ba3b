/* SPDX-License-Identifier: Apache-2.0 */
/*
** sql_math.c — math on single arrays (`npy` = a .npy BLOB):
**
**   reductions, to a number:
**     npy_sum(npy)  npy_mean(npy)  npy_min(npy)  npy_max(npy)  npy_std(npy)
**     npy_norm(npy [, ord])  npy_count_nonfinite(npy)
**     npy_dot(a, b)  npy_cosine(a, b)  npy_allclose(a, b [, rtol [, atol]])
**   elementwise, to a .npy (numpy.save-identical):
**     npy_add(a, b)  npy_sub(a, b)  npy_mul(a, b)  npy_scale(npy, s)
**     npy_cast(npy, dtype)  npy_reshape(npy, shape)
**
** The work is done by arraymath.c; this file checks arguments, picks the
** operation and turns results into SQL values. Also home of the helpers
** declared in sql_math.h.
*/
#include "sql/sql_math.h"
#include "sql/sql_modules.h"
SQLITE_EXTENSION_INIT3

#include <math.h>

#include "codec/json.h"

/* --- shared helpers (sql_math.h) ------------------------------------------ */

unsigned char *sql_math_scratch(sqlite3_context *ctx) {
  unsigned char *p = am_scratch();
  if (!p) sqlite3_result_error_nomem(ctx);
  return p;
}

void sql_math_stats(const npy_array *a, am_stats *st, unsigned char *scratch) {
  unsigned what = AM_SUM | AM_STD | AM_SUMSQ | AM_NONFINITE;
  if (dt_kind(a->dtype.type) != DT_KIND_COMPLEX) what |= AM_MINMAX;
  am_reduce(a, what, st, scratch);
}

void sql_result_number(sqlite3_context *ctx, double re, double im, int is_complex) {
  dt_value v;
  if (!is_complex) {
    sqlite3_result_double(ctx, re);
    return;
  }
  dt_value_double(&v, re);
  v.kind = DT_KIND_COMPLEX;
  v.im = im;
  sql_result_value(ctx, &v, DT_COMPLEX128);
}

void sql_result_minmax(sqlite3_context *ctx, const am_stats *st, int want_max) {
  dt_value v;
  switch (st->min_kind) {
    case DT_KIND_INT: dt_value_int(&v, want_max ? st->imax : st->imin); break;
    case DT_KIND_UINT: dt_value_uint(&v, want_max ? st->umax : st->umin); break;
    case DT_KIND_FLOAT: dt_value_double(&v, want_max ? st->fmax : st->fmin); break;
    default: return; /* empty or complex: NULL */
  }
  sql_result_value(ctx, &v, v.kind == DT_KIND_FLOAT ? DT_FLOAT64 : v.kind == DT_KIND_UINT ? DT_UINT64 : DT_INT64);
}

void sql_result_mean(sqlite3_context *ctx, const am_stats *st) {
  if (!st->count) return;
  sql_result_number(ctx, st->sum_re / (double)st->count, st->sum_im / (double)st->count, st->is_complex);
}

void sql_result_std(sqlite3_context *ctx, const am_stats *st) {
  if (st->count) sqlite3_result_double(ctx, sqrt(st->m2 / (double)st->count));
}

/* --- reductions ------------------------------------------------------------ */

enum { RED_SUM, RED_MEAN, RED_MIN, RED_MAX, RED_STD, RED_NONFINITE };

static int refuse_complex(sqlite3_context *ctx, const npy_array *a, const char *why) {
  char name[DT_NAME_MAX];
  if (dt_kind(a->dtype.type) != DT_KIND_COMPLEX) return 0;
  dt_name(a->dtype, name);
  sql_error(ctx, "%s (dtype %s)", why, name);
  return 1;
}

/* npy_sum, npy_mean, npy_min, npy_max, npy_std, npy_count_nonfinite */
static void npy_reduce_func(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  static const unsigned what[] = {AM_SUM, AM_SUM, AM_MIN, AM_MAX, AM_SUM | AM_STD, AM_NONFINITE};
  int op = SQL_OP(ctx);
  unsigned char *scratch;
  npy_array a;
  am_stats st;
  (void)argc;
  if (sql_arg_npy(ctx, argv[0], 0, &a) <= 0) return;
  if ((op == RED_MIN || op == RED_MAX) && refuse_complex(ctx, &a, "complex arrays have no order")) return;
  if (!(scratch = sql_math_scratch(ctx))) return;
  am_reduce(&a, what[op], &st, scratch);
  codec_free(scratch);
  switch (op) {
    case RED_SUM: sql_result_number(ctx, st.sum_re, st.sum_im, st.is_complex); break;
    case RED_MEAN: sql_result_mean(ctx, &st); break;
    case RED_MIN:
    case RED_MAX: sql_result_minmax(ctx, &st, op == RED_MAX); break;
    case RED_STD: sql_result_std(ctx, &st); break;
    default: sqlite3_result_int64(ctx, (sqlite3_int64)st.nonfinite); break;
  }
}

/* npy_norm's ord: 1, 2 or infinity ('inf' or a REAL infinity), as NumPy's
** vector norms. Returns 1 (*ord = 1, 2 or 0 for infinity) or -1
** after an error. */
static int arg_ord(sqlite3_context *ctx, sqlite3_value *v, int *ord) {
  double d = 0;
  switch (sqlite3_value_type(v)) {
    case SQLITE_TEXT: {
      const char *s = (const char *)sqlite3_value_text(v);
      if (!s) {
        sqlite3_result_error_nomem(ctx);
        return -1;
      }
      if (sqlite3_stricmp(s, "inf") == 0 || sqlite3_stricmp(s, "infinity") == 0) d = HUGE_VAL;
      break;
    }
    case SQLITE_INTEGER:
    case SQLITE_FLOAT: d = sqlite3_value_double(v); break;
    default: break;
  }
  if (d == 1 || d == 2 || d == HUGE_VAL) {
    *ord = d == HUGE_VAL ? 0 : (int)d;
    return 1;
  }
  sql_error(ctx, "ord must be 1, 2 or 'inf'");
  return -1;
}

static void npy_norm_func(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  int ord = 2, rc;
  unsigned char *scratch;
  npy_array a;
  am_stats st;
  if (sql_arg_npy(ctx, argv[0], 0, &a) <= 0) return;
  if (argc > 1 && (rc = arg_ord(ctx, argv[1], &ord)) <= 0) return;
  if (!(scratch = sql_math_scratch(ctx))) return;
  am_reduce(&a, ord == 2 ? AM_SUMSQ : ord == 1 ? AM_SUMABS : AM_MAXABS, &st, scratch);
  codec_free(scratch);
  if (ord == 2)
    sqlite3_result_double(ctx, sqrt(st.sumsq));
  else if (ord == 1)
    sqlite3_result_double(ctx, st.sumabs);
  else if (st.count)
    sqlite3_result_double(ctx, st.maxabs); /* max of nothing: NULL */
}

/* Two .npy arguments; returns 1 when both are there. */
static int two_arrays(sqlite3_context *ctx, sqlite3_value **argv, npy_array *a, npy_array *b) {
  return sql_arg_npy(ctx, argv[0], 0, a) > 0 && sql_arg_npy(ctx, argv[1], 1, b) > 0;
}

enum { DOT_PLAIN, DOT_COSINE };

/* npy_dot(a, b), npy_cosine(a, b) */
static void npy_dot_func(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  int cosine = SQL_OP(ctx) == DOT_COSINE, rc;
  unsigned char *scratch;
  npy_array a, b;
  am_dot_result r;
  codec_err err;
  (void)argc;
  if (!two_arrays(ctx, argv, &a, &b)) return;
  if (cosine && (refuse_complex(ctx, &a, "cosine similarity of complex arrays is not supported") ||
                 refuse_complex(ctx, &b, "cosine similarity of complex arrays is not supported")))
    return;
  if (!(scratch = sql_math_scratch(ctx))) return;
  rc = am_dot(&a, &b, cosine, &r, scratch, &err);
  codec_free(scratch);
  if (rc) {
    sql_codec_error(ctx, rc, &err);
  } else if (!cosine) {
    sql_result_number(ctx, r.re, r.im,
                      dt_kind(a.dtype.type) == DT_KIND_COMPLEX || dt_kind(b.dtype.type) == DT_KIND_COMPLEX);
  } else if (r.aa > 0 && r.bb > 0) {
    sqlite3_result_double(ctx, r.re / (sqrt(r.aa) * sqrt(r.bb))); /* a zero vector: NULL */
  }
}

int sql_math_tolerances(sqlite3_context *ctx, int argc, sqlite3_value **argv, int first, double *rtol, double *atol) {
  int rc;
  *rtol = 1e-05;
  *atol = 1e-08;
  if (argc > first && (rc = sql_arg_double(ctx, argv[first], first, "rtol", rtol)) <= 0) return rc;
  if (argc > first + 1 && (rc = sql_arg_double(ctx, argv[first + 1], first + 1, "atol", atol)) <= 0) return rc;
  return 1;
}

static void npy_allclose_func(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  double rtol, atol;
  int rc, close;
  unsigned char *scratch;
  npy_array a, b;
  codec_err err;
  if (!two_arrays(ctx, argv, &a, &b)) return;
  if (sql_math_tolerances(ctx, argc, argv, 2, &rtol, &atol) <= 0) return;
  if (!(scratch = sql_math_scratch(ctx))) return;
  rc = am_allclose(&a, &b, rtol, atol, &close, scratch, &err);
  codec_free(scratch);
  if (rc)
    sql_codec_error(ctx, rc, &err);
  else
    sqlite3_result_int(ctx, close);
}

/* --- elementwise ----------------------------------------------------------- */

/* Plan op, write the result .npy and hand it to SQLite. */
static void result_elementwise(sqlite3_context *ctx, const am_op *op, const npy_array *a, const npy_array *b) {
  unsigned char *scratch, *dst;
  npy_array res;
  codec_err err;
  buf_t out;
  int rc = am_plan(op, a, b, &res, &err);
  if (rc) {
    sql_codec_error(ctx, rc, &err);
    return;
  }
  if (!(scratch = sql_math_scratch(ctx))) return;
  sql_buf_init(ctx, &out);
  dst = npy_begin(&out, &res);
  if (dst && (rc = am_run(op, a, b, &res, dst, scratch, &err)) != CODEC_OK) {
    codec_free(scratch);
    buf_free(&out);
    sql_codec_error(ctx, rc, &err);
    return;
  }
  codec_free(scratch);
  sql_result_buf(ctx, &out, 0); /* reports a failed buffer */
}

/* npy_add(a, b), npy_sub(a, b), npy_mul(a, b); the op code is KN_*. */
static void npy_binary_func(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  am_op op = {AM_OP_BINARY, 0, 0, {0, 0}, 0, NULL};
  npy_array a, b;
  (void)argc;
  op.binop = SQL_OP(ctx);
  if (two_arrays(ctx, argv, &a, &b)) result_elementwise(ctx, &op, &a, &b);
}

static void npy_scale_func(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  am_op op = {AM_OP_SCALE, 0, 0, {0, 0}, 0, NULL};
  npy_array a;
  (void)argc;
  if (sql_arg_npy(ctx, argv[0], 0, &a) <= 0) return;
  if (sql_arg_double(ctx, argv[1], 1, "the factor", &op.s) <= 0) return;
  result_elementwise(ctx, &op, &a, NULL);
}

static void npy_cast_func(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  am_op op = {AM_OP_CAST, 0, 0, {0, 0}, 0, NULL};
  npy_array a;
  (void)argc;
  if (sql_arg_npy(ctx, argv[0], 0, &a) <= 0) return;
  if (sql_arg_dtype(ctx, argv[1], 1, &op.to) <= 0) return;
  result_elementwise(ctx, &op, &a, NULL);
}

/* npy_reshape(npy, shape): shape a JSON array (one entry may be -1) or an
** integer for a 1-d shape. */
static void npy_reshape_func(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  am_op op = {AM_OP_RESHAPE, 0, 0, {0, 0}, 0, NULL};
  int64_t shape[NPY_MAX_DIMS];
  const char *text;
  uint64_t len;
  codec_err err;
  npy_array a;
  (void)argc;
  if (sql_arg_npy(ctx, argv[0], 0, &a) <= 0) return;
  op.shape = shape;
  if (sqlite3_value_type(argv[1]) == SQLITE_INTEGER) {
    sqlite3_int64 dim = sqlite3_value_int64(argv[1]);
    op.ndim = 1;
    shape[0] = dim < 0 ? -1 : dim;
    if (dim < -1) {
      sql_error(ctx, "shape must be a JSON array of non-negative integers (one may be -1)");
      return;
    }
  } else {
    if (sql_arg_text(ctx, argv[1], 1, "a JSON shape", &text, &len) <= 0) return;
    if (json_parse_newshape(text, len, &op.ndim, shape, &err)) {
      sql_error(ctx, "%s", err.msg);
      return;
    }
  }
  result_elementwise(ctx, &op, &a, NULL);
}

static const sql_function math_functions[] = {
    {"npy_sum", 1, npy_reduce_func, NULL, NULL, RED_SUM},
    {"npy_mean", 1, npy_reduce_func, NULL, NULL, RED_MEAN},
    {"npy_min", 1, npy_reduce_func, NULL, NULL, RED_MIN},
    {"npy_max", 1, npy_reduce_func, NULL, NULL, RED_MAX},
    {"npy_std", 1, npy_reduce_func, NULL, NULL, RED_STD},
    {"npy_count_nonfinite", 1, npy_reduce_func, NULL, NULL, RED_NONFINITE},
    {"npy_norm", 1, npy_norm_func, NULL, NULL, 0},
    {"npy_norm", 2, npy_norm_func, NULL, NULL, 0},
    {"npy_dot", 2, npy_dot_func, NULL, NULL, DOT_PLAIN},
    {"npy_cosine", 2, npy_dot_func, NULL, NULL, DOT_COSINE},
    {"npy_allclose", 2, npy_allclose_func, NULL, NULL, 0},
    {"npy_allclose", 3, npy_allclose_func, NULL, NULL, 0},
    {"npy_allclose", 4, npy_allclose_func, NULL, NULL, 0},
    {"npy_add", 2, npy_binary_func, NULL, NULL, KN_ADD},
    {"npy_sub", 2, npy_binary_func, NULL, NULL, KN_SUB},
    {"npy_mul", 2, npy_binary_func, NULL, NULL, KN_MUL},
    {"npy_scale", 2, npy_scale_func, NULL, NULL, 0},
    {"npy_cast", 2, npy_cast_func, NULL, NULL, 0},
    {"npy_reshape", 2, npy_reshape_func, NULL, NULL, 0},
};

int sql_math_register(sqlite3 *db, char **pzErrMsg) { return SQL_REGISTER_TABLE(db, math_functions, pzErrMsg); }
