/* SPDX-License-Identifier: Apache-2.0 */
/*
** sql_record_math.c — math on whole records, key by key (`rec` = a Flower
** ArrayRecord BLOB):
**
**   to a record:  ar_add(a, b)  ar_sub(a, b)  ar_scale(rec, s)
**                 ar_cast(rec, dtype [, 'float' | 'all'])  ar_cast_like(rec, template)
**   to a number:  ar_norm(rec)  ar_dot(a, b)  ar_cosine(a, b)
**                 ar_allclose(a, b [, rtol [, atol]])  ar_numel(rec)
**
** Two-record functions pair arrays by key; the key sets must be equal (order
** may differ) or the error names a key found on one side only. Results keep
** the first record's key order and are canonical Flower bytes; every
** computed array is a numpy.save-identical .npy (see arraymath.h for dtypes
** and memory order). Items an operation leaves alone (ar_cast of non-float
** arrays) are copied as they are.
*/
#include "sql/sql_math.h"
#include "sql/sql_modules.h"
SQLITE_EXTENSION_INIT3

#include <math.h>
#include <string.h>

#include "codec/array.h"
#include "codec/keyset.h"

/* Report err for one item: "key 'w': problem" (allocation and size
** failures as themselves). */
static void item_error(sqlite3_context *ctx, int rc, const codec_err *err, const record_item *it) {
  char q[CODEC_QUOTE_MAX];
  if (rc == CODEC_NOMEM || rc == CODEC_TOOBIG)
    sql_codec_error(ctx, rc, err);
  else
    sql_error(ctx, "key '%s': %s", codec_quote(q, sizeof(q), it->key.p, it->key.n), err->msg);
}

static int same_key(const record_item *x, const record_item *y) {
  return x->key.n == y->key.n && memcmp(x->key.p, y->key.p, (size_t)x->key.n) == 0;
}

/* map[i] = the index in b of a's item i. Returns 1, or -1 after reporting a
** key that only one side has. */
static int match_keys(sqlite3_context *ctx, const record_t *a, const record_t *b, int *map) {
  keyset_t ks;
  char q[CODEC_QUOTE_MAX];
  int i, rc = 1;
  keyset_init(&ks);
  for (i = 0; i < a->n && rc > 0; i++) {
    const record_item *it = &a->items[i];
    if (i < b->n && same_key(it, &b->items[i])) {
      map[i] = i; /* the usual case: same order */
      continue;
    }
    if (!ks.cap) {
      int j;
      for (j = 0; j < b->n; j++) {
        if (keyset_put(&ks, b->items[j].key.p, b->items[j].key.n, j)) {
          sqlite3_result_error_nomem(ctx);
          rc = -1;
          break;
        }
      }
      if (rc < 0) break;
    }
    map[i] = keyset_get(&ks, it->key.p, it->key.n);
    if (map[i] < 0) {
      sql_error(ctx, "key '%s' is missing from argument 2", codec_quote(q, sizeof(q), it->key.p, it->key.n));
      rc = -1;
    }
  }
  keyset_free(&ks);
  if (rc > 0 && b->n != a->n) {
    /* Every key of a is in b and keys are unique, so b has more. */
    for (i = 0; i < b->n; i++) {
      const record_item *it = &b->items[i];
      if (record_find(a, it->key.p, it->key.n) < 0) {
        sql_error(ctx, "key '%s' of argument 2 is missing from argument 1",
                  codec_quote(q, sizeof(q), it->key.p, it->key.n));
        return -1;
      }
    }
  }
  return rc;
}

/* The records of a call: one or two, parsed, with the key map. */
typedef struct rec_args {
  record_t a, b;
  int two;
  int *map;
} rec_args;

/* Returns 1 when the records are there (NULL in -> 0, errors -> -1). */
static int rec_args_open(sqlite3_context *ctx, sqlite3_value **argv, int two, rec_args *r) {
  int rc;
  r->two = two;
  r->map = NULL;
  if ((rc = sql_arg_record(ctx, argv[0], 0, &r->a)) <= 0) return rc;
  if (!two) return 1;
  if ((rc = sql_arg_record(ctx, argv[1], 1, &r->b)) <= 0) return rc;
  if (!(r->map = codec_malloc((uint64_t)(r->a.n ? r->a.n : 1) * sizeof(int)))) {
    sqlite3_result_error_nomem(ctx);
    return -1;
  }
  return match_keys(ctx, &r->a, &r->b, r->map);
}

static void rec_args_init(rec_args *r) {
  record_init(&r->a);
  record_init(&r->b);
  r->map = NULL;
}

static void rec_args_clear(rec_args *r) {
  codec_free(r->map);
  record_clear(&r->a);
  record_clear(&r->b);
}

/* Open item i of a (and its partner in b) as arrays. */
static int open_pair(sqlite3_context *ctx, const rec_args *r, int i, npy_array *a, npy_array *b) {
  codec_err err;
  int rc = array_open(&r->a.items[i], i, a, &err);
  if (!rc && r->two) rc = array_open(&r->b.items[r->map[i]], r->map[i], b, &err);
  if (rc) sql_codec_error(ctx, rc, &err); /* the message names the item and key */
  return rc == CODEC_OK;
}

/* --- record results -------------------------------------------------------- */

typedef struct keyed {
  npy_array a, b, res;
  am_op op;
  int keep; /* copy the item as it is */
} keyed;

/* The template of ar_cast_like: its items, found by key. */
typedef struct cast_template {
  record_t rec;
  keyset_t keys;
} cast_template;

static int same_span(codec_span x, codec_span y) { return x.n == y.n && memcmp(x.p, y.p, (size_t)x.n) == 0; }

/* ar_cast_like: does the item stay as it is without being read — its key
** absent from the template, or both raw items (no .npy) described alike (a
** safetensors BF16 tensor has no NumPy dtype to cast to, and needs none)?
** *j is the template's item, or -1. */
static int like_keeps(const cast_template *like, const record_item *it, int *j) {
  int64_t sa[RECORD_MAX_DIMS], st[RECORD_MAX_DIMS];
  const record_item *t;
  int nd;
  if ((*j = keyset_get(&like->keys, it->key.p, it->key.n)) < 0) return 1;
  t = &like->rec.items[*j];
  if (record_item_is_numpy(it) || record_item_is_numpy(t) || !same_span(it->dtype, t->dtype) ||
      !same_span(it->stype, t->stype))
    return 0;
  nd = record_item_shape(it, sa);
  return nd == record_item_shape(t, st) && memcmp(sa, st, sizeof(int64_t) * (size_t)nd) == 0;
}

/* ar_cast_like: cast the item to the dtype of the template's item j; keep
** it when it already has that dtype. Returns 1, or 0 after reporting an
** error. */
static int plan_like(sqlite3_context *ctx, const cast_template *like, int j, const record_item *it, keyed *k) {
  char q[CODEC_QUOTE_MAX], sa[64], st[64];
  codec_err err;
  npy_array t;
  int rc;
  if ((rc = array_open(&like->rec.items[j], j, &t, &err)) != CODEC_OK) {
    if (rc == CODEC_NOMEM)
      sqlite3_result_error_nomem(ctx);
    else
      sql_error(ctx, "argument 2: %s", err.msg);
    return 0;
  }
  if (t.ndim != k->a.ndim || memcmp(t.shape, k->a.shape, sizeof(int64_t) * (size_t)t.ndim) != 0) {
    sql_error(ctx, "key '%s': shape %s differs from the template's %s", codec_quote(q, sizeof(q), it->key.p, it->key.n),
              am_shape_str(sa, sizeof(sa), k->a.ndim, k->a.shape), am_shape_str(st, sizeof(st), t.ndim, t.shape));
    return 0;
  }
  k->keep = t.dtype.type == k->a.dtype.type && t.dtype.big == k->a.dtype.big;
  k->op.to = t.dtype;
  return 1;
}

/* Apply op key by key; with only_float, non-floating arrays are kept; with
** a template (ar_cast_like), each array is cast to its key's dtype there. */
static void result_keywise(sqlite3_context *ctx, const am_op *op, const rec_args *r, int only_float,
                           const cast_template *like) {
  int n = r->a.n, i, rc = CODEC_OK;
  keyed *k = codec_malloc((uint64_t)(n ? n : 1) * sizeof(keyed));
  unsigned char *scratch = NULL;
  int64_t shape[RECORD_MAX_DIMS];
  uint64_t total = 0;
  record_item_spec spec;
  codec_err err;
  buf_t out;
  buf_init(&out, 0);
  if (!k) {
    sqlite3_result_error_nomem(ctx);
    return;
  }
  for (i = 0; i < n; i++) {
    const record_item *it = &r->a.items[i];
    uint64_t size;
    int j = -1;
    k[i].op = *op;
    k[i].keep = like && like_keeps(like, it, &j);
    if (!k[i].keep) {
      if (!open_pair(ctx, r, i, &k[i].a, &k[i].b)) goto done;
      k[i].keep = only_float && dt_kind(k[i].a.dtype.type) != DT_KIND_FLOAT;
      if (like && !plan_like(ctx, like, j, it, &k[i])) goto done;
    }
    if (k[i].keep) {
      record_item_spec_from_item(&spec, it, shape);
      size = record_item_encoded_size(&spec);
    } else if ((rc = am_plan(&k[i].op, &k[i].a, &k[i].b, &k[i].res, &err)) != CODEC_OK) {
      item_error(ctx, rc, &err, it);
      goto done;
    } else {
      size = array_result_size(it->key, &k[i].res);
    }
    if (size_add(total, size, &total)) {
      sqlite3_result_error_toobig(ctx);
      goto done;
    }
  }
  if (!(scratch = sql_math_scratch(ctx))) goto done;
  sql_buf_init(ctx, &out);
  if (buf_reserve(&out, total) == CODEC_OK) {
    for (i = 0; i < n && !out.rc; i++) {
      const record_item *it = &r->a.items[i];
      unsigned char *dst;
      if (k[i].keep) {
        record_item_spec_from_item(&spec, it, shape);
        record_write_item(&out, &spec);
      } else if ((dst = array_begin_result(&out, it->key, &k[i].res)) != NULL &&
                 (rc = am_run(&k[i].op, &k[i].a, &k[i].b, &k[i].res, dst, scratch, &err)) != CODEC_OK) {
        item_error(ctx, rc, &err, it);
        goto done;
      }
    }
  }
  sql_result_buf(ctx, &out, 0);
done:
  buf_free(&out);
  codec_free(scratch);
  codec_free(k);
}

/* ar_add(a, b), ar_sub(a, b); op code KN_ADD / KN_SUB. */
static void ar_binary_func(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  am_op op = {AM_OP_BINARY, 0, 0, {0, 0}, 0, NULL};
  rec_args r;
  (void)argc;
  op.binop = SQL_OP(ctx);
  rec_args_init(&r);
  if (rec_args_open(ctx, argv, 1, &r) > 0) result_keywise(ctx, &op, &r, 0, NULL);
  rec_args_clear(&r);
}

static void ar_scale_func(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  am_op op = {AM_OP_SCALE, 0, 0, {0, 0}, 0, NULL};
  rec_args r;
  (void)argc;
  rec_args_init(&r);
  if (rec_args_open(ctx, argv, 0, &r) > 0 && sql_arg_double(ctx, argv[1], 1, "the factor", &op.s) > 0) {
    result_keywise(ctx, &op, &r, 0, NULL);
  }
  rec_args_clear(&r);
}

/* ar_cast(rec, dtype [, which]): which 'float' (the default: floating arrays
** only, e.g. float32 -> float16 for storage) or 'all'. */
static void ar_cast_func(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  am_op op = {AM_OP_CAST, 0, 0, {0, 0}, 0, NULL};
  int only_float = 1;
  rec_args r;
  rec_args_init(&r);
  if (rec_args_open(ctx, argv, 0, &r) <= 0 || sql_arg_dtype(ctx, argv[1], 1, &op.to) <= 0) goto done;
  if (argc > 2) {
    const char *which;
    uint64_t len;
    if (sql_arg_text(ctx, argv[2], 2, "'float' or 'all'", &which, &len) <= 0) goto done;
    if (sqlite3_stricmp(which, "all") == 0) {
      only_float = 0;
    } else if (sqlite3_stricmp(which, "float") != 0) {
      sql_error(ctx, "argument 3 must be 'float' or 'all'");
      goto done;
    }
  }
  result_keywise(ctx, &op, &r, only_float, NULL);
done:
  rec_args_clear(&r);
}

/* ar_cast_like(rec, template): each array cast to the dtype of the same key
** in template (FedAvg's float64 num_batches_tracked back to int64); keys
** the template lacks are kept; shapes must agree. */
static void ar_cast_like_func(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  am_op op = {AM_OP_CAST, 0, 0, {0, 0}, 0, NULL};
  cast_template like;
  rec_args r;
  int j;
  (void)argc;
  rec_args_init(&r);
  record_init(&like.rec);
  keyset_init(&like.keys);
  if (rec_args_open(ctx, argv, 0, &r) <= 0 || sql_arg_record(ctx, argv[1], 1, &like.rec) <= 0) goto done;
  for (j = 0; j < like.rec.n; j++) {
    if (keyset_put(&like.keys, like.rec.items[j].key.p, like.rec.items[j].key.n, j)) {
      sqlite3_result_error_nomem(ctx);
      goto done;
    }
  }
  result_keywise(ctx, &op, &r, 0, &like);
done:
  keyset_free(&like.keys);
  record_clear(&like.rec);
  rec_args_clear(&r);
}

/* --- numbers ------------------------------------------------------------------ */

/* ar_norm(rec): the L2 norm of all arrays together (as for clipping). */
static void ar_norm_func(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  unsigned char *scratch = NULL;
  kn_cascade sum;
  rec_args r;
  int i;
  (void)argc;
  rec_args_init(&r);
  kn_cascade_init(&sum);
  if (rec_args_open(ctx, argv, 0, &r) <= 0 || !(scratch = sql_math_scratch(ctx))) goto done;
  for (i = 0; i < r.a.n; i++) {
    npy_array a;
    am_stats st;
    if (!open_pair(ctx, &r, i, &a, NULL)) goto done;
    am_reduce(&a, AM_SUMSQ, &st, scratch);
    kn_cascade_add(&sum, st.sumsq);
  }
  sqlite3_result_double(ctx, sqrt(kn_cascade_sum(&sum)));
done:
  codec_free(scratch);
  rec_args_clear(&r);
}

enum { DOT_PLAIN, DOT_COSINE };

/* ar_dot(a, b), ar_cosine(a, b): over all arrays, paired by key. */
static void ar_dot_func(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  int cosine = SQL_OP(ctx) == DOT_COSINE, cplx = 0, i, rc;
  unsigned char *scratch = NULL;
  kn_cascade re, im, aa, bb;
  rec_args r;
  (void)argc;
  rec_args_init(&r);
  kn_cascade_init(&re);
  kn_cascade_init(&im);
  kn_cascade_init(&aa);
  kn_cascade_init(&bb);
  if (rec_args_open(ctx, argv, 1, &r) <= 0 || !(scratch = sql_math_scratch(ctx))) goto done;
  for (i = 0; i < r.a.n; i++) {
    npy_array a, b;
    am_dot_result d;
    codec_err err;
    if (!open_pair(ctx, &r, i, &a, &b)) goto done;
    cplx |= dt_kind(a.dtype.type) == DT_KIND_COMPLEX || dt_kind(b.dtype.type) == DT_KIND_COMPLEX;
    if (cosine && cplx) {
      item_error(ctx, codec_fail(&err, CODEC_RANGE, "cosine similarity of complex arrays is not supported"), &err,
                 &r.a.items[i]);
      goto done;
    }
    if ((rc = am_dot(&a, &b, cosine, &d, scratch, &err)) != CODEC_OK) {
      item_error(ctx, rc, &err, &r.a.items[i]);
      goto done;
    }
    kn_cascade_add(&re, d.re);
    kn_cascade_add(&im, d.im);
    kn_cascade_add(&aa, d.aa);
    kn_cascade_add(&bb, d.bb);
  }
  if (!cosine) {
    sql_result_number(ctx, kn_cascade_sum(&re), kn_cascade_sum(&im), cplx);
  } else if (kn_cascade_sum(&aa) > 0 && kn_cascade_sum(&bb) > 0) {
    sqlite3_result_double(ctx, kn_cascade_sum(&re) / (sqrt(kn_cascade_sum(&aa)) * sqrt(kn_cascade_sum(&bb))));
  }
done:
  codec_free(scratch);
  rec_args_clear(&r);
}

/* ar_allclose(a, b [, rtol [, atol]]): 1 when every pair of arrays is close. */
static void ar_allclose_func(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  unsigned char *scratch = NULL;
  double rtol, atol;
  int i, rc, close = 1;
  rec_args r;
  rec_args_init(&r);
  if (rec_args_open(ctx, argv, 1, &r) <= 0 || sql_math_tolerances(ctx, argc, argv, 2, &rtol, &atol) <= 0 ||
      !(scratch = sql_math_scratch(ctx)))
    goto done;
  /* Every pair must be comparable, even after one is found not close. */
  for (i = 0; i < r.a.n; i++) {
    npy_array a, b;
    codec_err err;
    if (!open_pair(ctx, &r, i, &a, &b)) goto done;
    rc = close ? am_allclose(&a, &b, rtol, atol, &close, scratch, &err) : am_allclose_shapes(&a, &b, &err);
    if (rc) {
      item_error(ctx, rc, &err, &r.a.items[i]);
      goto done;
    }
  }
  sqlite3_result_int(ctx, close);
done:
  codec_free(scratch);
  rec_args_clear(&r);
}

/* ar_numel(rec): total elements, from the shapes alone (no payload is read). */
static void ar_numel_func(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  int64_t shape[RECORD_MAX_DIMS];
  uint64_t total = 0, numel;
  record_t rec;
  int i;
  (void)argc;
  record_init(&rec);
  if (sql_arg_record(ctx, argv[0], 0, &rec) <= 0) goto done;
  for (i = 0; i < rec.n; i++) {
    if (npy_shape_numel(record_item_shape(&rec.items[i], shape), shape, &numel, NULL) ||
        size_add(total, numel, &total) || total > (uint64_t)INT64_MAX) {
      sql_error(ctx, "the total number of elements does not fit in 64 bits");
      goto done;
    }
  }
  sqlite3_result_int64(ctx, (sqlite3_int64)total);
done:
  record_clear(&rec);
}

static const sql_function record_math_functions[] = {
    {"ar_add", 2, ar_binary_func, NULL, NULL, KN_ADD},     {"ar_sub", 2, ar_binary_func, NULL, NULL, KN_SUB},
    {"ar_scale", 2, ar_scale_func, NULL, NULL, 0},         {"ar_cast", 2, ar_cast_func, NULL, NULL, 0},
    {"ar_cast", 3, ar_cast_func, NULL, NULL, 0},           {"ar_cast_like", 2, ar_cast_like_func, NULL, NULL, 0},
    {"ar_norm", 1, ar_norm_func, NULL, NULL, 0},           {"ar_dot", 2, ar_dot_func, NULL, NULL, DOT_PLAIN},
    {"ar_cosine", 2, ar_dot_func, NULL, NULL, DOT_COSINE}, {"ar_allclose", 2, ar_allclose_func, NULL, NULL, 0},
    {"ar_allclose", 3, ar_allclose_func, NULL, NULL, 0},   {"ar_allclose", 4, ar_allclose_func, NULL, NULL, 0},
    {"ar_numel", 1, ar_numel_func, NULL, NULL, 0},
};

int sql_record_math_register(sqlite3 *db, char **pzErrMsg) {
  return SQL_REGISTER_TABLE(db, record_math_functions, pzErrMsg);
}
