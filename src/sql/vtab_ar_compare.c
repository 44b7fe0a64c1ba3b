/* SPDX-License-Identifier: Apache-2.0 */
/*
** vtab_ar_compare.c — the table-valued function ar_compare(a, b): two
** records side by side, one row per key, with how their arrays differ — a
** client update against the global model, a round against the last.
**
**   CREATE TABLE ar_compare(position INTEGER, key TEXT, dtype TEXT,
**     shape TEXT, numel INTEGER, b_position INTEGER, b_dtype TEXT,
**     b_shape TEXT, b_numel INTEGER, match TEXT, note TEXT, norm_a REAL,
**     norm_b REAL, dot REAL, cosine REAL, norm_diff REAL, max_abs_diff REAL,
**     mean_diff REAL, rel_change REAL, changed INTEGER, nonfinite_a INTEGER,
**     nonfinite_b INTEGER, arg_a HIDDEN, arg_b HIDDEN, arg_base HIDDEN,
**     norm_a_base REAL HIDDEN, norm_b_base REAL HIDDEN, dot_base REAL HIDDEN,
**     cosine_base REAL HIDDEN);
**
**   SELECT key, match, rel_change, cosine FROM ar_compare(:update, :global)
**    WHERE match <> 'same' OR rel_change > 0.5;
**
** Rows: every key of a in a's order, then the keys only b has, in b's order.
** match says how the pair stands:
**   'same'         both have the key, same dtype and shape;
**   'dtype'        same shape, other dtypes: compared by value;
**   'shape'        shapes differ: only norm_a, norm_b and the counts of
**                  nonfinite elements; the difference columns are NULL;
**   'a_only'       b lacks the key: b's columns and the differences NULL;
**   'b_only'       a lacks the key: a's columns and the differences NULL;
**   'not_numeric'  either array has no NumPy dtype (a safetensors BF16
**                  item, say): that side's numbers and the differences NULL.
** note is NULL for 'same' and a sentence for the others. A record that does
** not parse, or an array whose bytes are broken, is an error instead (as in
** ar_stats): that is a bad record, not a difference.
**
** ar_compare(a, b, base): a third record, the model both started from (a
** client update and the new global model against the old one), fills four
** more columns, hidden (SELECT * does not show them):
**   norm_a_base REAL, norm_b_base REAL  -- |a - base|, |b - base|
**   dot_base REAL, cosine_base REAL     -- (a - base).(b - base), its cosine
** each NULL where base lacks the row's key, the arrays' shapes differ or one
** is not numeric (dot_base and cosine_base also when one is complex, or
** NULL because a side is missing); keys only base has make no row. A NULL
** base gives NULL there and the rows of ar_compare(a, b). When a, b and base
** are float32 (or float64) arrays of one shape, the row's numbers all come
** from one pass over the three.
**
** The numbers come from one pass over each pair (am_compare): elements as
** doubles, differences a - b rounded to double, sums pairwise. dot, cosine
** and mean_diff are NULL when either array is complex; cosine is NULL when
** a norm is 0, rel_change (= norm_diff / norm_b) when norm_b is; NaN reads
** as NULL, as everywhere. Both records' item tables are parsed once per
** xFilter; the payloads are read only when a number of the row is, and then
** once. The records' views stay valid during the scan for the reason given
** in vtab_array_record.c.
*/
#include "sql/sql_math.h"
#include "sql/sql_modules.h"
SQLITE_EXTENSION_INIT3

#include <math.h>
#include <string.h>

#include "codec/array.h"
#include "codec/keyset.h"

enum {
  COL_POSITION,
  COL_KEY,
  COL_DTYPE,
  COL_SHAPE,
  COL_NUMEL,
  COL_B_POSITION,
  COL_B_DTYPE,
  COL_B_SHAPE,
  COL_B_NUMEL,
  COL_MATCH,
  COL_NOTE,
  COL_NORM_A, /* the numbers: computed on first read */
  COL_NORM_B,
  COL_DOT,
  COL_COSINE,
  COL_NORM_DIFF,
  COL_MAX_ABS_DIFF,
  COL_MEAN_DIFF,
  COL_REL_CHANGE,
  COL_CHANGED,
  COL_NONFINITE_A,
  COL_NONFINITE_B,
  COL_ARG_A, /* hidden arguments */
  COL_ARG_B,
  COL_ARG_BASE,
  COL_NORM_A_BASE, /* hidden: against the base */
  COL_NORM_B_BASE,
  COL_DOT_BASE,
  COL_COSINE_BASE
};

static const char ar_compare_schema[] =
    "CREATE TABLE x(position INTEGER, key TEXT, dtype TEXT, shape TEXT, numel INTEGER, b_position INTEGER,"
    " b_dtype TEXT, b_shape TEXT, b_numel INTEGER, match TEXT, note TEXT, norm_a REAL, norm_b REAL, dot REAL,"
    " cosine REAL, norm_diff REAL, max_abs_diff REAL, mean_diff REAL, rel_change REAL, changed INTEGER,"
    " nonfinite_a INTEGER, nonfinite_b INTEGER, arg_a HIDDEN, arg_b HIDDEN, arg_base HIDDEN,"
    " norm_a_base REAL HIDDEN, norm_b_base REAL HIDDEN, dot_base REAL HIDDEN, cosine_base REAL HIDDEN)";

enum { M_SAME, M_DTYPE, M_SHAPE, M_A_ONLY, M_B_ONLY, M_NOT_NUMERIC };
static const char *const match_names[] = {"same", "dtype", "shape", "a_only", "b_only", "not_numeric"};

/* One side of the current row. */
typedef struct side {
  const record_item *item; /* NULL when the record lacks the key */
  int index;
  int numeric; /* x holds the array */
  npy_array x;
  am_stats st;   /* its own reduction, when not compared with the other side */
  codec_err why; /* why it is not numeric */
} side;

typedef struct compare_cursor {
  sqlite3_vtab_cursor base;
  record_t a, b, c;                  /* c: the base (c.n 0 without one) */
  codec_span arg_a, arg_b, arg_base; /* the argument BLOBs, read back by the hidden columns */
  int has_base;                      /* a base record was given (not NULL) */
  keyset_t base_keys;                /* the base's keys, when it is not in a's order */
  int *map;                          /* map[i]: the index in b of a's item i, or -1 */
  int *b_only;                       /* b's items that a lacks, in b's order */
  int n_b_only;
  int row;
  int opened, computed; /* the row's arrays are open; its numbers are known */
  side sa, sb, sc;      /* sc: the base's array of the row's key */
  int match;
  /* the numbers against the base: usable (1), or NULL (0) */
  int base_a, base_b, base_dot;
  double sq_a_base, sq_b_base, dot_base;
  char note[sizeof(((codec_err *)0)->msg) + 48];
  am_compare_result cmp; /* when both sides are numeric with one shape */
  unsigned char *scratch;
} compare_cursor;

static void compare_reset(compare_cursor *cur) {
  record_clear(&cur->a);
  record_clear(&cur->b);
  record_clear(&cur->c);
  keyset_free(&cur->base_keys);
  keyset_init(&cur->base_keys);
  cur->has_base = 0;
  codec_free(cur->map);
  codec_free(cur->b_only);
  cur->map = cur->b_only = NULL;
  cur->n_b_only = cur->row = 0;
  cur->opened = cur->computed = 0;
}

static int compare_open(sqlite3_vtab *vtab, sqlite3_vtab_cursor **ppCursor) {
  int rc = sql_vtab_open(sizeof(compare_cursor), ppCursor);
  (void)vtab;
  if (rc == SQLITE_OK) {
    compare_cursor *cur = (compare_cursor *)*ppCursor;
    record_init(&cur->a);
    record_init(&cur->b);
    record_init(&cur->c);
    keyset_init(&cur->base_keys);
  }
  return rc;
}

static int compare_close(sqlite3_vtab_cursor *base) {
  compare_cursor *cur = (compare_cursor *)base;
  compare_reset(cur);
  codec_free(cur->scratch);
  sqlite3_free(cur);
  return SQLITE_OK;
}

/* The hidden arguments by equality (idxNum bit 0 for a, bit 1 for b, bit 2
** for base): a and b are needed, base is optional. */
static int compare_best_index(sqlite3_vtab *vtab, sqlite3_index_info *info) {
  int rc = sql_vtab_best_index_args(info, COL_ARG_A, 3);
  (void)vtab;
  if (rc != SQLITE_OK) return rc;
  info->estimatedCost = (info->idxNum & 3) == 3 ? 10 : 1e12;
  info->estimatedRows = 10;
  return SQLITE_OK;
}

/* Argument argi: its BLOB (p NULL for a NULL argument), or an error. */
static int compare_arg(sqlite3_vtab_cursor *base, sqlite3_value *v, int argi, codec_span *arg) {
  codec_err err;
  arg->p = NULL;
  arg->n = 0;
  if (sqlite3_value_type(v) == SQLITE_NULL) return SQLITE_OK;
  if (sqlite3_value_type(v) != SQLITE_BLOB) {
    sql_blob_type_problem(&err, v, argi, "a record");
    return sql_vtab_error(base, "ar_compare", CODEC_CORRUPT, &err);
  }
  return sql_blob_span(v, arg);
}

static int compare_parse(sqlite3_vtab_cursor *base, record_t *rec, codec_span arg, int argi) {
  codec_err err;
  int rc = record_parse(rec, arg.p, arg.n, &err);
  if (rc == CODEC_OK) return SQLITE_OK;
  rec->n = 0;
  if (rc == CODEC_CORRUPT || rc == CODEC_UNSUPPORTED) {
    char msg[sizeof(err.msg)];
    memcpy(msg, err.msg, sizeof(msg));
    codec_fail(&err, rc, "argument %d: %s", argi + 1, msg);
  }
  return sql_vtab_error(base, "ar_compare", rc, &err);
}

/* Pair the items by key: map for a's, b_only for the rest of b's. */
static int compare_pair(compare_cursor *cur) {
  keyset_t ks;
  unsigned char *taken;
  int i, rc = SQLITE_OK;
  cur->map = codec_malloc((uint64_t)(cur->a.n ? cur->a.n : 1) * sizeof(int));
  cur->b_only = codec_malloc((uint64_t)(cur->b.n ? cur->b.n : 1) * sizeof(int));
  taken = codec_malloc((uint64_t)(cur->b.n ? cur->b.n : 1));
  keyset_init(&ks);
  if (!cur->map || !cur->b_only || !taken) {
    rc = SQLITE_NOMEM;
    goto done;
  }
  memset(taken, 0, (size_t)(cur->b.n ? cur->b.n : 1));
  for (i = 0; i < cur->a.n; i++) {
    const record_item *it = &cur->a.items[i];
    int j = -1;
    if (i < cur->b.n && it->key.n == cur->b.items[i].key.n &&
        memcmp(it->key.p, cur->b.items[i].key.p, (size_t)it->key.n) == 0) {
      j = i; /* the usual case: the same keys in the same order */
    } else {
      if (!ks.cap) {
        int k;
        for (k = 0; k < cur->b.n; k++) {
          if (keyset_put(&ks, cur->b.items[k].key.p, cur->b.items[k].key.n, k)) {
            rc = SQLITE_NOMEM;
            goto done;
          }
        }
      }
      j = keyset_get(&ks, it->key.p, it->key.n);
    }
    cur->map[i] = j;
    if (j >= 0) taken[j] = 1;
  }
  for (i = 0; i < cur->b.n; i++)
    if (!taken[i]) cur->b_only[cur->n_b_only++] = i;
done:
  keyset_free(&ks);
  codec_free(taken);
  return rc;
}

static int compare_filter(sqlite3_vtab_cursor *base, int idxNum, const char *idxStr, int argc, sqlite3_value **argv) {
  compare_cursor *cur = (compare_cursor *)base;
  codec_err err;
  int rc;
  (void)idxStr;
  compare_reset(cur);
  cur->arg_a.p = cur->arg_b.p = cur->arg_base.p = NULL;
  cur->arg_base.n = 0;
  if ((idxNum & 3) != 3 || argc != (idxNum & 4 ? 3 : 2)) {
    codec_fail(&err, CODEC_CORRUPT, "missing argument (two record BLOBs: ar_compare(a, b))");
    return sql_vtab_error(base, "ar_compare", CODEC_CORRUPT, &err);
  }
  if ((rc = compare_arg(base, argv[0], 0, &cur->arg_a)) != SQLITE_OK) return rc;
  if ((rc = compare_arg(base, argv[1], 1, &cur->arg_b)) != SQLITE_OK) return rc;
  if (argc == 3 && (rc = compare_arg(base, argv[2], 2, &cur->arg_base)) != SQLITE_OK) return rc;
  if (!cur->arg_a.p || !cur->arg_b.p) return SQLITE_OK; /* NULL: no rows */
  if ((rc = compare_parse(base, &cur->a, cur->arg_a, 0)) != SQLITE_OK) return rc;
  if ((rc = compare_parse(base, &cur->b, cur->arg_b, 1)) != SQLITE_OK) {
    cur->a.n = 0;
    return rc;
  }
  if (cur->arg_base.p) {
    cur->has_base = 1;
    if ((rc = compare_parse(base, &cur->c, cur->arg_base, 2)) != SQLITE_OK) {
      cur->a.n = cur->b.n = 0;
      return rc;
    }
  }
  if ((rc = compare_pair(cur)) != SQLITE_OK) {
    cur->a.n = cur->b.n = cur->n_b_only = 0;
    return rc;
  }
  return SQLITE_OK;
}

static int compare_next(sqlite3_vtab_cursor *base) {
  compare_cursor *cur = (compare_cursor *)base;
  cur->row++;
  cur->opened = cur->computed = 0;
  return SQLITE_OK;
}

static int compare_eof(sqlite3_vtab_cursor *base) {
  compare_cursor *cur = (compare_cursor *)base;
  return cur->row >= cur->a.n + cur->n_b_only;
}

static int compare_rowid(sqlite3_vtab_cursor *base, sqlite3_int64 *rowid) {
  *rowid = ((compare_cursor *)base)->row;
  return SQLITE_OK;
}

/* The current row's items: index in a and in b, -1 for a missing side. */
static void row_items(const compare_cursor *cur, int *ia, int *ib) {
  if (cur->row < cur->a.n) {
    *ia = cur->row;
    *ib = cur->map[cur->row];
  } else {
    *ia = -1;
    *ib = cur->b_only[cur->row - cur->a.n];
  }
}

/* A column's error: "ar_compare: argument N: problem". */
static int column_error(sqlite3_context *ctx, int rc, const codec_err *err, int argi) {
  static const char *const names[] = {"ar_compare: argument 1", "ar_compare: argument 2", "ar_compare: argument 3"};
  return sql_vtab_column_error(ctx, names[argi], rc, err);
}

/* The base's item of a key: the same position in the usual case (the same
** keys in the same order), else through a key set built on first need. -1
** when the base lacks it (or there is no base). */
static int base_index(compare_cursor *cur, const record_item *it, int at, int *index) {
  int k;
  *index = -1;
  if (!cur->has_base) return SQLITE_OK;
  if (at < cur->c.n && it->key.n == cur->c.items[at].key.n &&
      memcmp(it->key.p, cur->c.items[at].key.p, (size_t)it->key.n) == 0) {
    *index = at;
    return SQLITE_OK;
  }
  if (!cur->base_keys.cap) {
    for (k = 0; k < cur->c.n; k++)
      if (keyset_put(&cur->base_keys, cur->c.items[k].key.p, cur->c.items[k].key.n, k)) return SQLITE_NOMEM;
  }
  *index = keyset_get(&cur->base_keys, it->key.p, it->key.n);
  return SQLITE_OK;
}

/* Open one side's array: numeric, not numeric (no NumPy dtype), or an error. */
static int open_side(sqlite3_context *ctx, const record_t *rec, int index, side *s, int argi) {
  int rc;
  memset(s, 0, sizeof(*s));
  s->index = index;
  if (index < 0) return 1;
  s->item = &rec->items[index];
  rc = array_open(s->item, index, &s->x, &s->why);
  if (rc == CODEC_OK) {
    s->numeric = 1;
    return 1;
  }
  return rc == CODEC_UNSUPPORTED ? 1 : column_error(ctx, rc, &s->why, argi);
}

static int same_shape(const npy_array *x, const npy_array *y) {
  return x->ndim == y->ndim && memcmp(x->shape, y->shape, sizeof(int64_t) * (size_t)x->ndim) == 0;
}

/* Open the current row's arrays and say how they match. */
static int compare_load(compare_cursor *cur, sqlite3_context *ctx) {
  int ia, ib;
  char na[DT_NAME_MAX], nb[DT_NAME_MAX], sa[64], sb[64];
  if (cur->opened) return 1;
  row_items(cur, &ia, &ib);
  if (!open_side(ctx, &cur->a, ia, &cur->sa, 0) || !open_side(ctx, &cur->b, ib, &cur->sb, 1)) return 0;
  {
    int ic;
    if (base_index(cur, ia >= 0 ? &cur->a.items[ia] : &cur->b.items[ib], ia >= 0 ? ia : ib, &ic) != SQLITE_OK) {
      sqlite3_result_error_nomem(ctx);
      return 0;
    }
    if (!open_side(ctx, &cur->c, ic, &cur->sc, 2)) return 0;
  }
  cur->note[0] = 0;
  if (ia < 0 || ib < 0) {
    const side *there = ia < 0 ? &cur->sb : &cur->sa;
    cur->match = ia < 0 ? M_B_ONLY : M_A_ONLY;
    /* and why the side that is there has no numbers, if it has none */
    sqlite3_snprintf(sizeof(cur->note), cur->note, "argument %d has no such key%s%s", ia < 0 ? 1 : 2,
                     there->numeric ? "" : "; not numeric: ", there->numeric ? "" : there->why.msg);
  } else if (!cur->sa.numeric || !cur->sb.numeric) {
    cur->match = M_NOT_NUMERIC;
    sqlite3_snprintf(sizeof(cur->note), cur->note, "argument %d: %s", cur->sa.numeric ? 2 : 1,
                     cur->sa.numeric ? cur->sb.why.msg : cur->sa.why.msg);
  } else if (!same_shape(&cur->sa.x, &cur->sb.x)) {
    cur->match = M_SHAPE;
    sqlite3_snprintf(sizeof(cur->note), cur->note, "shapes %s and %s differ",
                     am_shape_str(sa, sizeof(sa), cur->sa.x.ndim, cur->sa.x.shape),
                     am_shape_str(sb, sizeof(sb), cur->sb.x.ndim, cur->sb.x.shape));
  } else {
    dt_name(cur->sa.x.dtype, na);
    dt_name(cur->sb.x.dtype, nb);
    cur->match = strcmp(na, nb) == 0 ? M_SAME : M_DTYPE;
    if (cur->match == M_DTYPE)
      sqlite3_snprintf(sizeof(cur->note), cur->note, "dtypes %s and %s differ: compared by value", na, nb);
  }
  cur->opened = 1;
  return 1;
}

/* Can side s be compared with the base's array (both numeric, one shape)? */
static int with_base(const compare_cursor *cur, const side *s) {
  return s->numeric && cur->sc.numeric && same_shape(&s->x, &cur->sc.x);
}

/* |s - base|^2 into *sq for a side the pass over the pair did not cover. */
static int side_base(compare_cursor *cur, const side *s, double *sq) {
  am_compare_result r;
  if (!with_base(cur, s)) return 0;
  am_compare(&s->x, &cur->sc.x, NULL, &r, cur->scratch);
  *sq = r.sumsq_diff;
  return 1;
}

/* The row's numbers: one pass over the pair (and the base, when the three
** arrays have one shape), or each side on its own. */
static int compare_compute(compare_cursor *cur, sqlite3_context *ctx) {
  if (!compare_load(cur, ctx)) return 0;
  if (cur->computed) return 1;
  if (!cur->scratch && !(cur->scratch = sql_math_scratch(ctx))) return 0;
  cur->base_a = cur->base_b = cur->base_dot = 0;
  if (cur->match == M_SAME || cur->match == M_DTYPE) {
    int three = with_base(cur, &cur->sa); /* then the base has b's shape too */
    am_compare(&cur->sa.x, &cur->sb.x, three ? &cur->sc.x : NULL, &cur->cmp, cur->scratch);
    cur->sa.st.sumsq = cur->cmp.sumsq_a;
    cur->sb.st.sumsq = cur->cmp.sumsq_b;
    cur->sa.st.nonfinite = cur->cmp.nonfinite_a;
    cur->sb.st.nonfinite = cur->cmp.nonfinite_b;
    if (three) {
      cur->base_a = cur->base_b = 1;
      cur->base_dot = !cur->cmp.base_complex;
      cur->sq_a_base = cur->cmp.sumsq_a_base;
      cur->sq_b_base = cur->cmp.sumsq_b_base;
      cur->dot_base = cur->cmp.dot_base;
    }
  } else {
    if (cur->sa.numeric) am_reduce(&cur->sa.x, AM_SUMSQ | AM_NONFINITE, &cur->sa.st, cur->scratch);
    if (cur->sb.numeric) am_reduce(&cur->sb.x, AM_SUMSQ | AM_NONFINITE, &cur->sb.st, cur->scratch);
  }
  if (!cur->base_a) cur->base_a = side_base(cur, &cur->sa, &cur->sq_a_base);
  if (!cur->base_b) cur->base_b = side_base(cur, &cur->sb, &cur->sq_b_base);
  cur->computed = 1;
  return 1;
}

/* The numbers against the base (hidden columns): NULL where there are none. */
static void result_base(compare_cursor *cur, sqlite3_context *ctx, int col) {
  double na = sqrt(cur->sq_a_base), nb = sqrt(cur->sq_b_base);
  switch (col) {
    case COL_NORM_A_BASE:
      if (cur->base_a) sqlite3_result_double(ctx, na);
      break;
    case COL_NORM_B_BASE:
      if (cur->base_b) sqlite3_result_double(ctx, nb);
      break;
    case COL_DOT_BASE:
      if (cur->base_dot) sqlite3_result_double(ctx, cur->dot_base);
      break;
    default: /* COL_COSINE_BASE */
      if (cur->base_dot && na > 0 && nb > 0) sqlite3_result_double(ctx, cur->dot_base / (na * nb));
      break;
  }
}

/* dtype, shape or numel of one side: the array's when it is numeric, the
** Array message's otherwise (NULL for a missing side). */
static void result_side(sqlite3_context *ctx, const side *s, int what) {
  int64_t shape[RECORD_MAX_DIMS];
  char name[DT_NAME_MAX];
  uint64_t numel;
  int ndim;
  if (!s->item) return;
  if (what == COL_DTYPE) {
    if (s->numeric) {
      dt_name(s->x.dtype, name);
      sqlite3_result_text(ctx, name, -1, SQLITE_TRANSIENT);
    } else {
      sqlite3_result_text64(ctx, (const char *)s->item->dtype.p, s->item->dtype.n, SQLITE_TRANSIENT, SQLITE_UTF8);
    }
    return;
  }
  if (s->numeric) {
    if (what == COL_SHAPE)
      sql_result_shape(ctx, s->x.ndim, s->x.shape);
    else
      sqlite3_result_int64(ctx, (sqlite3_int64)s->x.numel);
    return;
  }
  ndim = record_item_shape(s->item, shape);
  if (what == COL_SHAPE)
    sql_result_shape(ctx, ndim, shape);
  else if (npy_shape_numel(ndim, shape, &numel, NULL) == CODEC_OK && numel <= (uint64_t)INT64_MAX)
    sqlite3_result_int64(ctx, (sqlite3_int64)numel);
}

static void result_nonzero_ratio(sqlite3_context *ctx, double num, double den) {
  if (den != 0) sqlite3_result_double(ctx, num / den);
}

/* The numbers of the row: NULL where the row has none (see the header). */
static void result_number(compare_cursor *cur, sqlite3_context *ctx, int col) {
  const am_compare_result *c = &cur->cmp;
  int paired = cur->match == M_SAME || cur->match == M_DTYPE;
  double na = sqrt(cur->sa.st.sumsq), nb = sqrt(cur->sb.st.sumsq);
  switch (col) {
    case COL_NORM_A:
      if (cur->sa.numeric) sqlite3_result_double(ctx, na);
      return;
    case COL_NORM_B:
      if (cur->sb.numeric) sqlite3_result_double(ctx, nb);
      return;
    case COL_NONFINITE_A:
      if (cur->sa.numeric) sqlite3_result_int64(ctx, (sqlite3_int64)cur->sa.st.nonfinite);
      return;
    case COL_NONFINITE_B:
      if (cur->sb.numeric) sqlite3_result_int64(ctx, (sqlite3_int64)cur->sb.st.nonfinite);
      return;
    default: break;
  }
  if (!paired) return;
  switch (col) {
    case COL_DOT:
      if (!c->is_complex) sqlite3_result_double(ctx, c->dot);
      break;
    case COL_COSINE:
      if (!c->is_complex && na > 0 && nb > 0) sqlite3_result_double(ctx, c->dot / (na * nb));
      break;
    case COL_NORM_DIFF: sqlite3_result_double(ctx, sqrt(c->sumsq_diff)); break;
    case COL_MAX_ABS_DIFF:
      if (cur->sa.x.numel > 0 && !c->maxabs_nan) sqlite3_result_double(ctx, c->maxabs_diff);
      break;
    case COL_MEAN_DIFF:
      if (!c->is_complex && cur->sa.x.numel > 0) sqlite3_result_double(ctx, c->sum_diff / (double)cur->sa.x.numel);
      break;
    case COL_REL_CHANGE: result_nonzero_ratio(ctx, sqrt(c->sumsq_diff), nb); break;
    default: sqlite3_result_int64(ctx, (sqlite3_int64)c->changed); break; /* COL_CHANGED */
  }
}

static int compare_column(sqlite3_vtab_cursor *base, sqlite3_context *ctx, int col) {
  compare_cursor *cur = (compare_cursor *)base;
  int ia, ib;
  row_items(cur, &ia, &ib);
  switch (col) {
    case COL_POSITION:
      if (ia >= 0) sqlite3_result_int(ctx, ia);
      return SQLITE_OK;
    case COL_B_POSITION:
      if (ib >= 0) sqlite3_result_int(ctx, ib);
      return SQLITE_OK;
    case COL_KEY: {
      const record_item *it = ia >= 0 ? &cur->a.items[ia] : &cur->b.items[ib];
      sqlite3_result_text64(ctx, (const char *)it->key.p, it->key.n, SQLITE_TRANSIENT, SQLITE_UTF8);
      return SQLITE_OK;
    }
    case COL_ARG_A:
    case COL_ARG_B:
    case COL_ARG_BASE: {
      const codec_span *arg = col == COL_ARG_A ? &cur->arg_a : col == COL_ARG_B ? &cur->arg_b : &cur->arg_base;
      if (arg->p) sql_result_blob_copy(ctx, arg->p, arg->n);
      return SQLITE_OK;
    }
    case COL_NORM_A_BASE:
    case COL_NORM_B_BASE:
    case COL_DOT_BASE:
    case COL_COSINE_BASE:
      if (compare_compute(cur, ctx)) result_base(cur, ctx, col);
      return SQLITE_OK;
    default: break;
  }
  if (col < COL_NORM_A) {
    if (!compare_load(cur, ctx)) return SQLITE_OK;
    switch (col) {
      case COL_DTYPE:
      case COL_SHAPE:
      case COL_NUMEL: result_side(ctx, &cur->sa, col); break;
      case COL_B_DTYPE: result_side(ctx, &cur->sb, COL_DTYPE); break;
      case COL_B_SHAPE: result_side(ctx, &cur->sb, COL_SHAPE); break;
      case COL_B_NUMEL: result_side(ctx, &cur->sb, COL_NUMEL); break;
      case COL_MATCH: sqlite3_result_text(ctx, match_names[cur->match], -1, SQLITE_STATIC); break;
      default:
        if (cur->note[0]) sqlite3_result_text(ctx, cur->note, -1, SQLITE_TRANSIENT);
        break;
    }
    return SQLITE_OK;
  }
  if (compare_compute(cur, ctx)) result_number(cur, ctx, col);
  return SQLITE_OK;
}

/* xCreate is NULL: an eponymous-only table-valued function. */
static sqlite3_module ar_compare_module = {
    .iVersion = 0,
    .xConnect = sql_vtab_connect,
    .xBestIndex = compare_best_index,
    .xDisconnect = sql_vtab_disconnect,
    .xOpen = compare_open,
    .xClose = compare_close,
    .xFilter = compare_filter,
    .xNext = compare_next,
    .xEof = compare_eof,
    .xColumn = compare_column,
    .xRowid = compare_rowid,
};

int vtab_ar_compare_register(sqlite3 *db, char **pzErrMsg) {
  return sql_register_module(db, "ar_compare", &ar_compare_module, ar_compare_schema, pzErrMsg);
}
