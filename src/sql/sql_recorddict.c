/* SPDX-License-Identifier: Apache-2.0 */
/*
** sql_recorddict.c — SQL functions over Flower RecordDicts (`rd` = a
** RecordDict protobuf BLOB, recorddict_to_proto(rd).SerializeToString()):
**
**   rd_len(rd)  rd_keys(rd)  rd_valid(rd)  rd_error(rd)  rd_check(rd [, 'nonempty'])
**   rd_array_record(rd [, name])  rd_metrics(rd [, name])  rd_config(rd [, name])
**   rd_value(rd, name, key)
**   rd(name, kind, value, ...)  rd_set(rd, name, kind, value)  rd_delete(rd, name, ...)
**   aggregate rd_agg(name, kind, value)
**
** Readers find items without reading the other items' records; builders
** re-encode every record (recorddict_canon in recorddict.h): the bytes
** Flower's serde writes for the same content, so equal content gives equal
** bytes.
** The JSON mapping of metric and config records is valrec.h's.
*/
#include "sql/sql_modules.h"
#include "sql/sql_util.h"
SQLITE_EXTENSION_INIT3

#include <stdio.h>
#include <string.h>

#include "codec/array.h"
#include "codec/json.h"
#include "codec/keyset.h"
#include "codec/recorddict.h"
#include "codec/valrec.h"

/* A RecordDict argument, parsed: 1, 0 for NULL, -1 after an error. */
static int arg_rd(sqlite3_context *ctx, sqlite3_value *v, int argi, recorddict_t *rd, codec_span *blob) {
  codec_err err;
  int rc = sql_arg_blob(ctx, v, argi, "a record dict", &blob->p, &blob->n);
  if (rc <= 0) return rc;
  if ((rc = recorddict_parse(rd, blob->p, blob->n, &err)) != CODEC_OK) {
    sql_codec_error(ctx, rc, &err);
    return -1;
  }
  return 1;
}

/* The item an rd_array_record / rd_metrics / rd_config call means: by name
** (argument 2; absent -> *idx -1, a NULL result), or the only one of its
** kind. 1, or -1 after an error. */
static int pick_item(sqlite3_context *ctx, const recorddict_t *rd, int argc, sqlite3_value **argv, int kind, int *idx) {
  const char *kn = recorddict_kind_name(kind);
  int i, count = 0;
  *idx = -1;
  if (argc > 1) {
    codec_span name;
    char q[CODEC_QUOTE_MAX];
    if (sql_arg_key(ctx, argv[1], 1, &name.p, &name.n) <= 0) return -1;
    *idx = recorddict_find(rd, name.p, name.n);
    if (*idx >= 0 && rd->items[*idx].kind != kind) {
      int other = rd->items[*idx].kind;
      sql_error(ctx, "item '%s' is a%s %s record, not a%s %s record", codec_quote(q, sizeof(q), name.p, name.n),
                other == RECORDDICT_ARRAY ? "n" : "", recorddict_kind_name(other), kind == RECORDDICT_ARRAY ? "n" : "",
                kn);
      return -1;
    }
    return 1;
  }
  for (i = 0; i < rd->n; i++)
    if (rd->items[i].kind == kind) {
      if (!count) *idx = i;
      count++;
    }
  if (count == 1) return 1;
  if (!count) {
    sql_error(ctx, "the record dict has no %s record", kn);
  } else {
    char names[300], q[CODEC_QUOTE_MAX];
    size_t o = 0;
    names[0] = 0;
    for (i = 0; i < rd->n && o < sizeof(names) - 80; i++) {
      if (rd->items[i].kind != kind) continue;
      o += (size_t)snprintf(names + o, sizeof(names) - o, "%s'%s'", o ? ", " : "",
                            codec_quote(q, sizeof(q), rd->items[i].name.p, rd->items[i].name.n));
    }
    if (i < rd->n) snprintf(names + o, sizeof(names) - o, ", ...");
    sql_error(ctx, "the record dict has %d %s records (%s): name one", count, kn, names);
  }
  return -1;
}

/* Parse a metric/config item's record into vr (1, or -1 after an error). */
static int item_valrec(sqlite3_context *ctx, const recorddict_item *it, const unsigned char *blob, valrec_t *vr) {
  char label[CODEC_QUOTE_MAX + 32];
  codec_err err;
  int rc;
  recorddict_item_label(label, sizeof(label), it->name, it->kind);
  rc = recorddict_item_valrec(vr, it, blob, label, &err);
  if (rc) {
    sql_codec_error(ctx, rc, &err);
    return -1;
  }
  return 1;
}

/* rd_array_record / rd_metrics / rd_config (op = the kind). */
static void rd_record_func(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  recorddict_t rd;
  codec_span blob;
  int idx, kind = SQL_OP(ctx);
  recorddict_init(&rd);
  if (arg_rd(ctx, argv[0], 0, &rd, &blob) <= 0) goto done;
  if (pick_item(ctx, &rd, argc, argv, kind, &idx) <= 0 || idx < 0) goto done;
  if (kind == RECORDDICT_ARRAY) {
    sql_result_blob_copy(ctx, rd.items[idx].record.p, rd.items[idx].record.n);
  } else {
    valrec_t vr;
    buf_t b;
    valrec_init(&vr);
    if (item_valrec(ctx, &rd.items[idx], blob.p, &vr) > 0) {
      sql_buf_init(ctx, &b);
      valrec_to_json(&b, &vr);
      sql_result_buf(ctx, &b, 1);
    }
    valrec_clear(&vr);
  }
done:
  recorddict_clear(&rd);
}

/* rd_value(rd, name, key): one value as SQL. */
static void rd_value_func(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  recorddict_t rd;
  valrec_t vr;
  codec_span blob, name, key;
  const valrec_item *v;
  int idx;
  (void)argc;
  recorddict_init(&rd);
  valrec_init(&vr);
  if (arg_rd(ctx, argv[0], 0, &rd, &blob) <= 0) goto done;
  if (sql_arg_key(ctx, argv[1], 1, &name.p, &name.n) <= 0) goto done;
  if (sql_arg_key(ctx, argv[2], 2, &key.p, &key.n) <= 0) goto done;
  if ((idx = recorddict_find(&rd, name.p, name.n)) < 0) goto done; /* absent -> NULL */
  if (rd.items[idx].kind == RECORDDICT_ARRAY) {
    char q[CODEC_QUOTE_MAX];
    sql_error(ctx, "item '%s' is an array record (rd_value reads metric and config records; use rd_array_record)",
              codec_quote(q, sizeof(q), name.p, name.n));
    goto done;
  }
  if (item_valrec(ctx, &rd.items[idx], blob.p, &vr) <= 0) goto done;
  if ((idx = valrec_find(&vr, key.p, key.n)) < 0) goto done;
  v = &vr.items[idx];
  switch (v->type) {
    case VALREC_DOUBLE:
      if (v->v.d == v->v.d) sqlite3_result_double(ctx, v->v.d); /* NaN -> NULL */
      break;
    case VALREC_SINT64: sqlite3_result_int64(ctx, v->v.i); break;
    case VALREC_UINT64:
      if (v->v.u <= (uint64_t)INT64_MAX) {
        sqlite3_result_int64(ctx, (sqlite3_int64)v->v.u);
      } else { /* exact digits: an INTEGER cannot hold it, a REAL would round it */
        char text[24];
        snprintf(text, sizeof(text), "%llu", (unsigned long long)v->v.u);
        sqlite3_result_text(ctx, text, -1, SQLITE_TRANSIENT);
      }
      break;
    case VALREC_BOOL: sqlite3_result_int(ctx, (int)v->v.u); break;
    case VALREC_STRING:
      sqlite3_result_text64(ctx, (const char *)v->v.s.p, v->v.s.n, SQLITE_TRANSIENT, SQLITE_UTF8);
      break;
    case VALREC_BYTES: sql_result_blob_copy(ctx, v->v.s.p, v->v.s.n); break;
    default: {
      buf_t b;
      sql_buf_init(ctx, &b);
      valrec_value_json(&b, v);
      sql_result_buf(ctx, &b, 1);
    }
  }
done:
  valrec_clear(&vr);
  recorddict_clear(&rd);
}

enum { RD_LEN, RD_KEYS };

static void rd_whole_func(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  recorddict_t rd;
  codec_span blob;
  int i;
  (void)argc;
  recorddict_init(&rd);
  if (arg_rd(ctx, argv[0], 0, &rd, &blob) <= 0) goto done;
  if (SQL_OP(ctx) == RD_LEN) {
    sqlite3_result_int(ctx, rd.n);
  } else {
    buf_t b;
    sql_buf_init(ctx, &b);
    buf_putc(&b, '[');
    for (i = 0; i < rd.n; i++) {
      if (i) buf_putc(&b, ',');
      json_put_string(&b, rd.items[i].name.p, rd.items[i].name.n);
    }
    buf_putc(&b, ']');
    sql_result_buf(ctx, &b, 1);
  }
done:
  recorddict_clear(&rd);
}

/* Is the blob a valid ArrayRecord of at least one item? An ArrayRecord
** where a RecordDict belongs is a common slip: its items parse as
** RecordDict items, and the error would be about the wrong message. */
static int valid_record(const unsigned char *p, uint64_t n) {
  record_t rec;
  codec_err err;
  int rc, i;
  record_init(&rec);
  rc = record_parse(&rec, p, n, &err);
  for (i = 0; rc == CODEC_OK && i < rec.n; i++) rc = array_validate(&rec.items[i], i, &err);
  if (rc == CODEC_OK && rec.n == 0) rc = CODEC_CORRUPT;
  record_clear(&rec);
  return rc == CODEC_OK;
}

/* rd_valid / rd_error / rd_check: the structure and every item's record
** (rd_check raises rd_error's message). */
static void rd_check_func(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  recorddict_t rd;
  codec_err err;
  int rc = CODEC_OK, i, nonempty;
  if ((nonempty = sql_check_option(ctx, argc, argv, 1)) < 0) return;
  recorddict_init(&rd);
  if (sqlite3_value_type(argv[0]) == SQLITE_BLOB) {
    codec_span blob;
    if (sql_blob_span(argv[0], &blob) != SQLITE_OK) {
      sqlite3_result_error_nomem(ctx);
      return;
    }
    rc = recorddict_parse(&rd, blob.p, blob.n, &err);
    for (i = 0; rc == CODEC_OK && i < rd.n; i++) rc = recorddict_item_check(&rd.items[i], blob.p, &err);
    if ((rc == CODEC_CORRUPT || rc == CODEC_UNSUPPORTED) && valid_record(blob.p, blob.n))
      rc = codec_fail(&err, CODEC_CORRUPT, "got a record, not a record dict: wrap it with rd(name, 'array', rec)");
  } else {
    rc = sql_blob_type_problem(&err, argv[0], 0, "a record dict");
  }
  sql_result_check_op(ctx, SQL_OP(ctx), rc, &err, nonempty, rd.n, "record dict");
  recorddict_clear(&rd);
}

/* --- builders ----------------------------------------------------------------- */

/* Item (name, kind, value) from arguments argi+1, argi+2 into c, re-encoded.
** 1, 0 for NULL, -1 after an error. */
static int build_record(sqlite3_context *ctx, sqlite3_value **argv, int argi, codec_span name, recorddict_canon *c) {
  const unsigned char *kp;
  uint64_t kn;
  char q[CODEC_QUOTE_MAX], label[CODEC_QUOTE_MAX + 40];
  codec_err err;
  int rc, kind;
  if ((rc = sql_arg_text(ctx, argv[argi + 1], argi + 1, "a kind ('array', 'metric' or 'config')", (const char **)&kp,
                         &kn)) <= 0)
    return rc;
  if (!(kind = recorddict_kind_from_name(kp, kn))) {
    sql_error(ctx, "argument %d: kind must be 'array', 'metric' or 'config', got '%s'", argi + 2,
              codec_quote(q, sizeof(q), kp, kn));
    return -1;
  }
  codec_quote(q, sizeof(q), name.p, name.n);
  if (kind == RECORDDICT_ARRAY) {
    const unsigned char *p;
    uint64_t n;
    int i;
    if ((rc = sql_arg_blob(ctx, argv[argi + 2], argi + 2, "an ArrayRecord", &p, &n)) <= 0) return rc;
    rc = recorddict_canon_array(c, name, p, n, &err);
    for (i = 0; rc == CODEC_OK && i < c->rec.n; i++) rc = array_validate(&c->rec.items[i], i, &err);
    if (rc == CODEC_CORRUPT || rc == CODEC_UNSUPPORTED) {
      sql_error(ctx, "argument %d (array record '%s'): %s", argi + 3, q, err.msg);
      return -1;
    }
  } else {
    const char *text;
    uint64_t n;
    if ((rc = sql_arg_text(ctx, argv[argi + 2], argi + 2, "a JSON object", &text, &n)) <= 0) return rc;
    snprintf(label, sizeof(label), "argument %d (%s record '%s')", argi + 3, recorddict_kind_name(kind), q);
    rc = recorddict_canon_json(c, name, kind == RECORDDICT_CONFIG, (const unsigned char *)text, n, label, &err);
  }
  if (rc) {
    sql_codec_error(ctx, rc, &err);
    return -1;
  }
  return 1;
}

/* n items to re-encode, each initialised (NULL after reporting out of memory). */
static recorddict_canon *canons_alloc(sqlite3_context *ctx, int n) {
  recorddict_canon *c = codec_malloc((uint64_t)(n ? n : 1) * sizeof(*c));
  int i;
  if (!c) {
    sqlite3_result_error_nomem(ctx);
    return NULL;
  }
  for (i = 0; i < n; i++) recorddict_canon_init(&c[i], sql_limit(ctx));
  return c;
}

static void canons_free(recorddict_canon *c, int n) {
  int i;
  if (!c) return;
  for (i = 0; i < n; i++) recorddict_canon_clear(&c[i]);
  codec_free(c);
}

/* Item `it` of the RecordDict argument into c. 1, or -1 after an error. */
static int canon_item(sqlite3_context *ctx, recorddict_canon *c, const recorddict_item *it, codec_span blob) {
  codec_err err;
  int rc = recorddict_canon_item(c, it, blob.p, &err);
  if (rc) {
    sql_codec_error(ctx, rc, &err);
    return -1;
  }
  return 1;
}

/* The items as the result RecordDict (x'' for none). */
static void result_canons(sqlite3_context *ctx, const recorddict_canon *c, int n) {
  buf_t out;
  sql_buf_init(ctx, &out);
  recorddict_canon_write_all(&out, c, n);
  sql_result_buf(ctx, &out, 0);
}

/* rd(name, kind, value, ...): a RecordDict of these items, in order. */
static void rd_build_func(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  recorddict_canon *c;
  int i, j, n = argc / 3;
  if (argc % 3) {
    sql_error(ctx, "expects name, kind, value triples (got %d arguments)", argc);
    return;
  }
  if (!(c = canons_alloc(ctx, n))) return;
  for (i = 0; i < argc; i += 3) {
    codec_span name;
    if (sql_arg_key(ctx, argv[i], i, &name.p, &name.n) <= 0) goto done;
    for (j = 0; j < i; j += 3) {
      if ((uint64_t)sqlite3_value_bytes(argv[j]) == name.n &&
          memcmp(sqlite3_value_text(argv[j]), name.p, (size_t)name.n) == 0) {
        char q[CODEC_QUOTE_MAX];
        sql_error(ctx, "duplicate name '%s' (arguments %d and %d)", codec_quote(q, sizeof(q), name.p, name.n), j + 1,
                  i + 1);
        goto done;
      }
    }
    if (build_record(ctx, argv, i, name, &c[i / 3]) <= 0) goto done;
  }
  result_canons(ctx, c, n);
done:
  canons_free(c, n);
}

/* rd_set(rd, name, kind, value): replace in place, or append. */
static void rd_set_func(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  recorddict_t rd;
  recorddict_canon *c = NULL;
  codec_span blob, name;
  int i, idx, n = 0;
  (void)argc;
  recorddict_init(&rd);
  if (arg_rd(ctx, argv[0], 0, &rd, &blob) <= 0) goto done;
  if (sql_arg_key(ctx, argv[1], 1, &name.p, &name.n) <= 0) goto done;
  idx = recorddict_find(&rd, name.p, name.n);
  n = idx < 0 ? rd.n + 1 : rd.n;
  if (!(c = canons_alloc(ctx, n))) goto done;
  if (build_record(ctx, argv, 1, name, &c[idx < 0 ? rd.n : idx]) <= 0) goto done;
  for (i = 0; i < rd.n; i++)
    if (i != idx && canon_item(ctx, &c[i], &rd.items[i], blob) <= 0) goto done;
  result_canons(ctx, c, n);
done:
  canons_free(c, n);
  recorddict_clear(&rd);
}

/* rd_delete(rd, name, ...): without these items; absent names are ignored. */
static void rd_delete_func(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  recorddict_t rd;
  recorddict_canon *c = NULL;
  codec_span blob;
  int i, k, n = 0;
  recorddict_init(&rd);
  if (argc < 2) {
    sql_error(ctx, "expects a record dict and names");
    goto done;
  }
  if (arg_rd(ctx, argv[0], 0, &rd, &blob) <= 0) goto done;
  for (k = 1; k < argc; k++) {
    codec_span name;
    if (sql_arg_key(ctx, argv[k], k, &name.p, &name.n) <= 0) goto done;
  }
  if (!(c = canons_alloc(ctx, rd.n))) goto done;
  for (i = 0; i < rd.n; i++) {
    int drop = 0;
    for (k = 1; k < argc && !drop; k++) {
      const unsigned char *p = sqlite3_value_text(argv[k]);
      uint64_t len = (uint64_t)sqlite3_value_bytes(argv[k]);
      drop = p && len == rd.items[i].name.n && memcmp(p, rd.items[i].name.p, (size_t)len) == 0;
    }
    if (!drop && canon_item(ctx, &c[n++], &rd.items[i], blob) <= 0) goto done;
  }
  result_canons(ctx, c, n);
done:
  canons_free(c, rd.n);
  recorddict_clear(&rd);
}

/* rd_agg(name, kind, value): one item per row, in row order. */
typedef struct rd_agg_state {
  int started, rows;
  buf_t out;
  keyset_t names;
} rd_agg_state;

static void rd_agg_step(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  rd_agg_state *st = sqlite3_aggregate_context(ctx, sizeof(*st));
  recorddict_canon c;
  codec_span name;
  int first;
  (void)argc;
  if (!st) {
    sqlite3_result_error_nomem(ctx);
    return;
  }
  if (!st->started) {
    sql_buf_init(ctx, &st->out);
    keyset_init(&st->names);
    st->started = 1;
  }
  st->rows++;
  if (sql_arg_key(ctx, argv[0], 0, &name.p, &name.n) <= 0) return; /* NULL name: row skipped */
  recorddict_canon_init(&c, sql_limit(ctx));
  if (build_record(ctx, argv, 0, name, &c) <= 0) goto done;
  if ((first = keyset_get(&st->names, name.p, name.n)) >= 0) {
    char q[CODEC_QUOTE_MAX];
    sql_error(ctx, "duplicate name '%s' (rows %d and %d)", codec_quote(q, sizeof(q), name.p, name.n), first,
              st->rows - 1);
    goto done;
  }
  if (keyset_put(&st->names, name.p, name.n, st->rows - 1)) {
    sqlite3_result_error_nomem(ctx);
    goto done;
  }
  recorddict_canon_write(&st->out, &c);
  if (st->out.rc) sql_codec_error(ctx, st->out.rc, NULL);
done:
  recorddict_canon_clear(&c);
}

static void rd_agg_final(sqlite3_context *ctx) {
  rd_agg_state *st = sqlite3_aggregate_context(ctx, 0);
  if (!st || !st->started) {
    sqlite3_result_zeroblob(ctx, 0);
    return;
  }
  keyset_free(&st->names);
  sql_result_buf(ctx, &st->out, 0);
}

static const sql_function recorddict_functions[] = {
    {"rd_len", 1, rd_whole_func, NULL, NULL, RD_LEN},
    {"rd_keys", 1, rd_whole_func, NULL, NULL, RD_KEYS},
    {"rd_valid", 1, rd_check_func, NULL, NULL, SQL_CHECK_VALID},
    {"rd_error", 1, rd_check_func, NULL, NULL, SQL_CHECK_ERROR},
    {"rd_check", 1, rd_check_func, NULL, NULL, SQL_CHECK_RAISE},
    {"rd_check", 2, rd_check_func, NULL, NULL, SQL_CHECK_RAISE},
    {"rd_array_record", 1, rd_record_func, NULL, NULL, RECORDDICT_ARRAY},
    {"rd_array_record", 2, rd_record_func, NULL, NULL, RECORDDICT_ARRAY},
    {"rd_metrics", 1, rd_record_func, NULL, NULL, RECORDDICT_METRIC},
    {"rd_metrics", 2, rd_record_func, NULL, NULL, RECORDDICT_METRIC},
    {"rd_config", 1, rd_record_func, NULL, NULL, RECORDDICT_CONFIG},
    {"rd_config", 2, rd_record_func, NULL, NULL, RECORDDICT_CONFIG},
    {"rd_value", 3, rd_value_func, NULL, NULL, 0},
    {"rd", -1, rd_build_func, NULL, NULL, 0},
    {"rd_set", 4, rd_set_func, NULL, NULL, 0},
    {"rd_delete", -1, rd_delete_func, NULL, NULL, 0},
    {"rd_agg", 3, NULL, rd_agg_step, rd_agg_final, 0},
};

int sql_recorddict_register(sqlite3 *db, char **pzErrMsg) {
  return SQL_REGISTER_TABLE(db, recorddict_functions, pzErrMsg);
}
