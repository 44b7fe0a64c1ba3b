/* SPDX-License-Identifier: Apache-2.0 */
/*
** sql_build.c — SQL functions that build records:
**
**   ar(key1, npy1, key2, npy2, ...)      ar_from_list(npy0, npy1, ...)
**   ar_set(rec, key, npy)                ar_delete(rec, key, ...)
**   ar_rename(rec, old, new)             ar_merge(rec1, rec2, ...)
**   ar_select(rec, glob, ...)           ar_exclude(rec, glob, ...)
**   aggregates ar_agg(key, npy) and ar_agg_list(npy)
**
** Every record written is canonical Flower serde bytes (record.h): the same
** logical record always gives the same BLOB, whatever produced its inputs.
** A new value must be a valid .npy; its Array gets dtype = str(dtype),
** shape = its shape, stype "numpy.ndarray", data = the .npy bytes, exactly as
** Flower's Array(ndarray) would. Scalar builders return NULL when any
** argument is NULL; the aggregates skip rows whose key or value is NULL.
*/
#include "sql/sql_modules.h"
#include "sql/sql_util.h"
SQLITE_EXTENSION_INIT3

#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "codec/array.h"
#include "codec/keyset.h"

/* One item of the record being built: an existing item re-encoded, or a
** new .npy value. */
typedef struct entry {
  codec_span key;
  const record_item *item;
  const npy_array *npy;
  codec_span npy_bytes;
} entry;

static void entry_spec(const entry *e, record_item_spec *spec, int64_t *shape, char *dtname) {
  if (e->item) {
    record_item_spec_from_item(spec, e->item, shape);
    spec->key = e->key;
  } else {
    array_numpy_spec(spec, e->key, e->npy, e->npy_bytes, dtname);
  }
}

/* Write the entries as the result record: size first, one allocation. */
static void result_entries(sqlite3_context *ctx, const entry *entries, int n) {
  int64_t shape[RECORD_MAX_DIMS];
  char dtname[DT_NAME_MAX];
  record_item_spec spec;
  uint64_t total = 0;
  buf_t b;
  int i;
  for (i = 0; i < n; i++) {
    entry_spec(&entries[i], &spec, shape, dtname);
    if (size_add(total, record_item_encoded_size(&spec), &total)) {
      sqlite3_result_error_toobig(ctx);
      return;
    }
  }
  sql_buf_init(ctx, &b);
  if (buf_reserve(&b, total) == CODEC_OK) {
    for (i = 0; i < n; i++) {
      entry_spec(&entries[i], &spec, shape, dtname);
      record_write_item(&b, &spec);
    }
  }
  sql_result_buf(ctx, &b, 0);
}

static void duplicate_key_error(sqlite3_context *ctx, codec_span key, const char *what, int first, int second) {
  char q[CODEC_QUOTE_MAX];
  sql_error(ctx, "duplicate key '%s' (%s %d and %d)", codec_quote(q, sizeof(q), key.p, key.n), what, first, second);
}

/* Allocation for n entries and n parsed .npy views. */
static entry *entries_alloc(sqlite3_context *ctx, int n, npy_array **arrays) {
  entry *e = codec_malloc((uint64_t)(n ? n : 1) * (sizeof(entry) + (arrays ? sizeof(npy_array) : 0)));
  if (!e) {
    sqlite3_result_error_nomem(ctx);
    return NULL;
  }
  if (arrays) *arrays = (npy_array *)(e + (n ? n : 1));
  return e;
}

/* ar(key1, npy1, key2, npy2, ...) and ar_from_list(npy0, npy1, ...) */
static void ar_build_func(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  int listing = SQL_OP(ctx), n = listing ? argc : argc / 2, i, j, rc;
  npy_array *arrays = NULL;
  entry *entries;
  char(*names)[24] = NULL;
  if (!listing && argc % 2) {
    sql_error(ctx, "expects key, npy pairs (got %d arguments)", argc);
    return;
  }
  if (!(entries = entries_alloc(ctx, n, &arrays))) return;
  if (listing && !(names = codec_malloc((uint64_t)(n ? n : 1) * sizeof(*names)))) {
    sqlite3_result_error_nomem(ctx);
    goto done;
  }
  for (i = 0; i < n; i++) {
    entry *e = &entries[i];
    int vi = listing ? i : 2 * i + 1;
    e->item = NULL;
    e->npy = &arrays[i];
    if (listing) {
      /* ArrayRecord(list) keys: "0", "1", ... */
      e->key.n = (uint64_t)snprintf(names[i], sizeof(names[i]), "%d", i);
      e->key.p = (const unsigned char *)names[i];
    } else if ((rc = sql_arg_key(ctx, argv[2 * i], 2 * i, &e->key.p, &e->key.n)) <= 0) {
      goto done;
    }
    if ((rc = sql_arg_npy_value(ctx, argv[vi], vi, e->key, &arrays[i], &e->npy_bytes)) <= 0) goto done;
    if (!listing) {
      for (j = 0; j < i; j++) {
        if (entries[j].key.n == e->key.n && memcmp(entries[j].key.p, e->key.p, (size_t)e->key.n) == 0) {
          duplicate_key_error(ctx, e->key, "arguments", 2 * j + 1, 2 * i + 1);
          goto done;
        }
      }
    }
  }
  result_entries(ctx, entries, n);
done:
  codec_free(names);
  codec_free(entries);
}

/* Entries for every item of a parsed record (n+extra slots). */
static entry *entries_from_record(sqlite3_context *ctx, const record_t *rec, int extra) {
  entry *e = entries_alloc(ctx, rec->n + extra, NULL);
  int i;
  if (!e) return NULL;
  for (i = 0; i < rec->n; i++) {
    e[i].key = rec->items[i].key;
    e[i].item = &rec->items[i];
    e[i].npy = NULL;
  }
  return e;
}

/* ar_set(rec, key, npy): replace the key's array in place, or append it. */
static void ar_set_func(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  record_t rec;
  npy_array a;
  entry *entries = NULL;
  codec_span key, bytes;
  int idx, n;
  (void)argc;
  record_init(&rec);
  if (sql_arg_record(ctx, argv[0], 0, &rec) <= 0) goto done;
  if (sql_arg_key(ctx, argv[1], 1, &key.p, &key.n) <= 0) goto done;
  if (sql_arg_npy_value(ctx, argv[2], 2, key, &a, &bytes) <= 0) goto done;
  if (!(entries = entries_from_record(ctx, &rec, 1))) goto done;
  idx = record_find(&rec, key.p, key.n);
  n = rec.n;
  if (idx < 0) idx = n++;
  entries[idx].key = key;
  entries[idx].item = NULL;
  entries[idx].npy = &a;
  entries[idx].npy_bytes = bytes;
  result_entries(ctx, entries, n);
done:
  codec_free(entries);
  record_clear(&rec);
}

/* ar_delete(rec, key, ...): drop the named keys; absent keys are ignored. */
static void ar_delete_func(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  record_t rec;
  entry *entries = NULL;
  int i, k, n = 0;
  record_init(&rec);
  if (argc < 1) {
    sql_error(ctx, "expects a record and keys");
    return;
  }
  if (sql_arg_record(ctx, argv[0], 0, &rec) <= 0) goto done;
  for (k = 1; k < argc; k++) {
    const unsigned char *p;
    uint64_t len;
    if (sql_arg_key(ctx, argv[k], k, &p, &len) <= 0) goto done; /* NULL key -> NULL */
  }
  if (!(entries = entries_from_record(ctx, &rec, 0))) goto done;
  for (i = 0; i < rec.n; i++) {
    int drop = 0;
    for (k = 1; k < argc && !drop; k++) {
      const unsigned char *p = sqlite3_value_text(argv[k]);
      uint64_t len = (uint64_t)sqlite3_value_bytes(argv[k]);
      drop = p && len == rec.items[i].key.n && memcmp(p, rec.items[i].key.p, (size_t)len) == 0;
    }
    if (!drop) entries[n++] = entries[i];
  }
  result_entries(ctx, entries, n);
done:
  codec_free(entries);
  record_clear(&rec);
}

/* ar_rename(rec, old, new): rename a key in place; absent old -> unchanged. */
static void ar_rename_func(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  record_t rec;
  entry *entries = NULL;
  codec_span from, to;
  int idx, clash;
  (void)argc;
  record_init(&rec);
  if (sql_arg_record(ctx, argv[0], 0, &rec) <= 0) goto done;
  if (sql_arg_key(ctx, argv[1], 1, &from.p, &from.n) <= 0) goto done;
  if (sql_arg_key(ctx, argv[2], 2, &to.p, &to.n) <= 0) goto done;
  if (!(entries = entries_from_record(ctx, &rec, 0))) goto done;
  idx = record_find(&rec, from.p, from.n);
  clash = record_find(&rec, to.p, to.n);
  if (idx >= 0 && clash >= 0 && clash != idx) {
    char q[CODEC_QUOTE_MAX];
    sql_error(ctx, "key '%s' already exists (item %d)", codec_quote(q, sizeof(q), to.p, to.n), clash);
    goto done;
  }
  if (idx >= 0) entries[idx].key = to;
  result_entries(ctx, entries, rec.n);
done:
  codec_free(entries);
  record_clear(&rec);
}

/* ar_merge(rec1, rec2, ...): dict.update in argument order — a key keeps
** its first position and takes its last value; new keys are appended. */
static void ar_merge_func(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  record_t *recs;
  entry *entries = NULL;
  keyset_t ks;
  int r, i, n = 0, total = 0;
  if (argc < 1) {
    sql_error(ctx, "expects at least one record");
    return;
  }
  recs = codec_malloc((uint64_t)argc * sizeof(record_t));
  if (!recs) {
    sqlite3_result_error_nomem(ctx);
    return;
  }
  keyset_init(&ks);
  for (r = 0; r < argc; r++) record_init(&recs[r]);
  for (r = 0; r < argc; r++) {
    if (sql_arg_record(ctx, argv[r], r, &recs[r]) <= 0) goto done;
    /* The same huge record may be passed many times: keep the sum an int. */
    if (recs[r].n > INT_MAX - total) {
      sqlite3_result_error_toobig(ctx);
      goto done;
    }
    total += recs[r].n;
  }
  if (!(entries = entries_alloc(ctx, total, NULL))) goto done;
  for (r = 0; r < argc; r++) {
    for (i = 0; i < recs[r].n; i++) {
      const record_item *it = &recs[r].items[i];
      int at = keyset_get(&ks, it->key.p, it->key.n);
      if (at < 0) {
        at = n++;
        if (keyset_put(&ks, it->key.p, it->key.n, at)) {
          sqlite3_result_error_nomem(ctx);
          goto done;
        }
      }
      entries[at].key = it->key;
      entries[at].item = it;
      entries[at].npy = NULL;
    }
  }
  result_entries(ctx, entries, n);
done:
  for (r = 0; r < argc; r++) record_clear(&recs[r]);
  codec_free(recs);
  codec_free(entries);
  keyset_free(&ks);
}

/* Does the key match any of the GLOB patterns argv[1..argc)? key holds it
** NUL-terminated (sqlite3_strglob wants that). */
static int key_matches(const record_item *it, const buf_t *key, int argc, sqlite3_value **argv) {
  int k;
  /* sqlite3_strglob reads a key up to its first NUL: a key holding one
  ** would match on its prefix alone, so it never matches. */
  if (it->key.n && memchr(it->key.p, 0, (size_t)it->key.n)) return 0;
  for (k = 1; k < argc; k++)
    if (sqlite3_strglob((const char *)sqlite3_value_text(argv[k]), (const char *)key->p) == 0) return 1;
  return 0;
}

/* ar_select(rec, glob, ...): the items whose key matches one of the GLOB
** patterns; ar_exclude(rec, glob, ...) (op 1): the others. */
static void ar_select_func(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  record_t rec;
  entry *entries = NULL;
  const char *pattern;
  uint64_t plen;
  buf_t key;
  int i, k, n = 0, exclude = SQL_OP(ctx);
  record_init(&rec);
  buf_init(&key, UINT64_MAX);
  if (argc < 2) {
    sql_error(ctx, "expects a record and at least one GLOB pattern");
    goto done;
  }
  if (sql_arg_record(ctx, argv[0], 0, &rec) <= 0) goto done;
  for (k = 1; k < argc; k++)
    if (sql_arg_text(ctx, argv[k], k, "a GLOB pattern", &pattern, &plen) <= 0) goto done;
  if (!(entries = entries_from_record(ctx, &rec, 0))) goto done;
  for (i = 0; i < rec.n; i++) {
    const record_item *it = &rec.items[i];
    key.n = 0;
    buf_append(&key, it->key.p, it->key.n);
    buf_putc(&key, 0);
    if (key.rc) {
      sqlite3_result_error_nomem(ctx);
      goto done;
    }
    if (key_matches(it, &key, argc, argv) != exclude) entries[n++] = entries[i];
  }
  result_entries(ctx, entries, n);
done:
  buf_free(&key);
  codec_free(entries);
  record_clear(&rec);
}

/* --- aggregates ------------------------------------------------------------ */

/* ar_agg / ar_agg_list: the result record, written as rows arrive. */
typedef struct build_state {
  int started;
  int count; /* items written */
  int rows;  /* rows seen, NULL ones included (for messages) */
  buf_t out;
  keyset_t keys;
} build_state;

/* ar_agg(key, npy) / ar_agg_list(npy): append one item per row, in row
** order, straight into the result buffer (one copy of each value). */
static void ar_agg_step(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  build_state *st = sqlite3_aggregate_context(ctx, sizeof(*st));
  int listing = SQL_OP(ctx), first;
  npy_array a;
  codec_span key, bytes;
  record_item_spec spec;
  char dtname[DT_NAME_MAX], name[24];
  (void)argc;
  if (!st) {
    sqlite3_result_error_nomem(ctx);
    return;
  }
  if (!st->started) {
    sql_buf_init(ctx, &st->out);
    keyset_init(&st->keys);
    st->started = 1;
  }
  st->rows++;
  if (listing) {
    key.n = (uint64_t)snprintf(name, sizeof(name), "%d", st->count);
    key.p = (const unsigned char *)name;
  } else if (sql_arg_key(ctx, argv[0], 0, &key.p, &key.n) <= 0) {
    return; /* NULL key: row skipped */
  }
  if (sql_arg_npy_value(ctx, argv[listing ? 0 : 1], listing ? 0 : 1, key, &a, &bytes) <= 0) return;
  if (!listing) {
    if ((first = keyset_get(&st->keys, key.p, key.n)) >= 0) {
      duplicate_key_error(ctx, key, "rows", first, st->rows - 1);
      return;
    }
    if (keyset_put(&st->keys, key.p, key.n, st->rows - 1)) {
      sqlite3_result_error_nomem(ctx);
      return;
    }
  }
  array_numpy_spec(&spec, key, &a, bytes, dtname);
  record_write_item(&st->out, &spec);
  if (st->out.rc) {
    sql_codec_error(ctx, st->out.rc, NULL);
    return;
  }
  st->count++;
}

static void ar_agg_final(sqlite3_context *ctx) {
  build_state *st = sqlite3_aggregate_context(ctx, 0);
  if (!st || !st->started) {
    sqlite3_result_zeroblob(ctx, 0); /* no rows: the empty record */
    return;
  }
  keyset_free(&st->keys);
  sql_result_buf(ctx, &st->out, 0);
}

static const sql_function build_functions[] = {
    {"ar", -1, ar_build_func, NULL, NULL, 0},          {"ar_from_list", -1, ar_build_func, NULL, NULL, 1},
    {"ar_set", 3, ar_set_func, NULL, NULL, 0},         {"ar_delete", -1, ar_delete_func, NULL, NULL, 0},
    {"ar_rename", 3, ar_rename_func, NULL, NULL, 0},   {"ar_merge", -1, ar_merge_func, NULL, NULL, 0},
    {"ar_select", -1, ar_select_func, NULL, NULL, 0},  {"ar_exclude", -1, ar_select_func, NULL, NULL, 1},
    {"ar_agg", 2, NULL, ar_agg_step, ar_agg_final, 0}, {"ar_agg_list", 1, NULL, ar_agg_step, ar_agg_final, 1},
};

int sql_build_register(sqlite3 *db, char **pzErrMsg) { return SQL_REGISTER_TABLE(db, build_functions, pzErrMsg); }
