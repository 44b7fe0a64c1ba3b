/* SPDX-License-Identifier: Apache-2.0 */
/*
** sql_inspect.c — ar_describe(blob [, max_items]): a short JSON summary of a
** .npy, an ArrayRecord or a RecordDict, read from its headers alone (a
** viewer's cell: what the BLOB is, how big, its first few items), or NULL
** for anything else; and the detection ar_inspect shares (sql_inspect.h).
**
**   {"kind":"npy","dtype":"float32","shape":[3,4],"numel":12,"nbytes":48}
**   {"kind":"arrayrecord","count":2,"numel":30,"nbytes":120,
**    "items":[{"key":"w","dtype":"float32","shape":[3,4]},...]}
**   {"kind":"recorddict","count":3,"items":[
**    {"name":"arrays","kind":"array_record","count":2,"nbytes":120},
**    {"name":"metrics","kind":"metric_record","values":{"loss":0.25}},
**    {"name":"config","kind":"config_record","values":{"lr":0.1}}]}
**   {"kind":"packed","of":"arrayrecord","size":240799,"packed":135309,
**    "base":"86bb...","lossy":null,"max_error":0.0,"count":4,
**    "items":[{"key":"w","mode":"diff","nbytes":240000,"stored":134831},...]}
**
** nbytes counts array data (numel times the item size, the .npy headers
** left out); items lists at most max_items entries (3 by default). A packed
** BLOB (codec/packed.h) is described from its header and meta section:
** size is what it unpacks to, packed its own length. The
** values of metric and config records are rd_metrics' / rd_config's JSON.
** A BLOB that fits no rule of sql_inspect_detect, and any value that is no
** BLOB, gives NULL: a cell renderer falls back on its own display.
*/
#include "sql/sql_inspect.h"
#include "sql/sql_modules.h"
SQLITE_EXTENSION_INIT3

#include <string.h>

#include "codec/array.h"
#include "codec/json.h"
#include "codec/packed.h"
#include "codec/recorddict.h"
#include "codec/sha256.h"
#include "codec/valrec.h"

static const char npy_magic[] = "\x93NUMPY";

int sql_inspect_detect(const unsigned char *p, uint64_t n, int *kind) {
  recorddict_t rd;
  record_t rec;
  npy_array a;
  codec_err err;
  int rc, i, items;
  *kind = INSPECT_NONE;
  if (n >= 6 && memcmp(p, npy_magic, 6) == 0 && npy_parse(p, n, &a, &err) == CODEC_OK) {
    *kind = INSPECT_NPY;
    return CODEC_OK;
  }
  recorddict_init(&rd);
  rc = recorddict_parse(&rd, p, n, &err);
  for (i = 0; rc == CODEC_OK && i < rd.n; i++) rc = recorddict_item_check(&rd.items[i], p, &err);
  items = rd.n;
  recorddict_clear(&rd);
  if (rc == CODEC_NOMEM) return rc;
  if (rc == CODEC_OK && items > 0) {
    *kind = INSPECT_RECORDDICT;
    return CODEC_OK;
  }
  record_init(&rec);
  rc = record_parse(&rec, p, n, &err);
  for (i = 0; rc == CODEC_OK && i < rec.n; i++) {
    if ((rc = array_validate(&rec.items[i], i, &err)) == CODEC_OK) rc = array_open(&rec.items[i], i, &a, &err);
  }
  items = rec.n;
  record_clear(&rec);
  if (rc == CODEC_NOMEM) return rc;
  if (rc == CODEC_OK && items > 0) *kind = INSPECT_RECORD;
  return CODEC_OK;
}

static const char *const kind_names[] = {"", "npy", "arrayrecord", "recorddict"};

const char *sql_inspect_kind_name(int kind) { return kind_names[kind]; }

int sql_inspect_kind_from_name(const unsigned char *s, uint64_t n) {
  int k;
  for (k = INSPECT_NPY; k <= INSPECT_RECORDDICT; k++)
    if (n == strlen(kind_names[k]) && memcmp(s, kind_names[k], (size_t)n) == 0) return k;
  return INSPECT_NONE;
}

/* "dtype":...,"shape":[...] of an open array. */
static void put_dtype_shape(buf_t *b, const npy_array *a) {
  char name[DT_NAME_MAX];
  dt_name(a->dtype, name);
  buf_puts(b, "\"dtype\":\"");
  buf_puts(b, name);
  buf_puts(b, "\",\"shape\":");
  npy_shape_json(b, a->ndim, a->shape);
}

static void describe_npy(buf_t *b, const unsigned char *p, uint64_t n) {
  npy_array a;
  codec_err err;
  npy_parse(p, n, &a, &err); /* detected: it parses */
  buf_puts(b, "{\"kind\":\"npy\",");
  put_dtype_shape(b, &a);
  buf_printf(b, ",\"numel\":%llu,\"nbytes\":%llu}", (unsigned long long)a.numel, (unsigned long long)a.nbytes);
}

/* An ArrayRecord's arrays, counted: numel and nbytes summed (an array of no
** NumPy dtype, which a RecordDict may hold, adds its data's bytes). */
static void record_totals(const record_t *rec, uint64_t *numel, uint64_t *nbytes) {
  npy_array a;
  codec_err err;
  int i;
  *numel = *nbytes = 0;
  for (i = 0; i < rec->n; i++) {
    if (array_open(&rec->items[i], i, &a, &err) == CODEC_OK) {
      *numel += a.numel;
      *nbytes += a.nbytes;
    } else {
      *nbytes += rec->items[i].data.n;
    }
  }
}

static int describe_record(buf_t *b, const unsigned char *p, uint64_t n, sqlite3_int64 max_items) {
  record_t rec;
  npy_array a;
  codec_err err;
  uint64_t numel, nbytes;
  int i, rc;
  record_init(&rec);
  if ((rc = record_parse(&rec, p, n, &err)) != CODEC_OK) goto done; /* only NOMEM: it was detected */
  record_totals(&rec, &numel, &nbytes);
  buf_printf(b, "{\"kind\":\"arrayrecord\",\"count\":%d,\"numel\":%llu,\"nbytes\":%llu,\"items\":[", rec.n,
             (unsigned long long)numel, (unsigned long long)nbytes);
  for (i = 0; i < rec.n && i < max_items; i++) {
    array_open(&rec.items[i], i, &a, &err); /* detected: every array opens */
    if (i) buf_putc(b, ',');
    buf_puts(b, "{\"key\":");
    json_put_string(b, rec.items[i].key.p, rec.items[i].key.n);
    buf_putc(b, ',');
    put_dtype_shape(b, &a);
    buf_putc(b, '}');
  }
  buf_puts(b, "]}");
done:
  record_clear(&rec);
  return rc;
}

static int describe_recorddict(buf_t *b, const unsigned char *p, uint64_t n, sqlite3_int64 max_items) {
  static const char *const kinds[] = {"array_record", "metric_record", "config_record"};
  recorddict_t rd;
  codec_err err;
  int i, rc;
  recorddict_init(&rd);
  if ((rc = recorddict_parse(&rd, p, n, &err)) != CODEC_OK) goto done; /* only NOMEM */
  buf_printf(b, "{\"kind\":\"recorddict\",\"count\":%d,\"items\":[", rd.n);
  for (i = 0; i < rd.n && i < max_items; i++) {
    const recorddict_item *it = &rd.items[i];
    if (i) buf_putc(b, ',');
    buf_puts(b, "{\"name\":");
    json_put_string(b, it->name.p, it->name.n);
    buf_printf(b, ",\"kind\":\"%s\",", kinds[it->kind - RECORDDICT_ARRAY]);
    if (it->kind == RECORDDICT_ARRAY) {
      record_t rec;
      uint64_t numel, nbytes;
      record_init(&rec);
      rc = record_parse(&rec, it->record.p, it->record.n, &err);
      if (rc == CODEC_OK) {
        record_totals(&rec, &numel, &nbytes);
        buf_printf(b, "\"count\":%d,\"nbytes\":%llu}", rec.n, (unsigned long long)nbytes);
      }
      record_clear(&rec);
    } else {
      char label[CODEC_QUOTE_MAX + 32];
      valrec_t vr;
      valrec_init(&vr);
      recorddict_item_label(label, sizeof(label), it->name, it->kind);
      rc = recorddict_item_valrec(&vr, it, p, label, &err);
      if (rc == CODEC_OK) {
        buf_puts(b, "\"values\":");
        valrec_to_json(b, &vr);
        buf_putc(b, '}');
      }
      valrec_clear(&vr);
    }
    if (rc != CODEC_OK) goto done;
  }
  buf_puts(b, "]}");
done:
  recorddict_clear(&rd);
  return rc;
}

/* A packed record or record dict: what its header and meta section say
** (nothing is unpacked); a damaged one is described as nothing (NULL). */
static int describe_packed(buf_t *b, const unsigned char *p, uint64_t n, sqlite3_int64 max_items) {
  packed_view v;
  codec_err err;
  uint32_t i;
  int rc;
  packed_view_init(&v);
  if ((rc = packed_open(&v, p, n, UINT64_MAX, &err)) != CODEC_OK) goto done;
  buf_printf(b,
             "{\"kind\":\"packed\",\"of\":\"%s\",\"size\":%llu,\"packed\":%llu,\"base\":", packed_kind_name(v.h.kind),
             (unsigned long long)v.h.size, (unsigned long long)n);
  if (v.h.flags & PACKED_HAS_BASE) {
    char id[SHA256_HEX_SIZE];
    buf_printf(b, "\"%s\"", sha256_hex(v.h.base_id, id));
  } else {
    buf_puts(b, "null");
  }
  buf_puts(b, ",\"lossy\":");
  if (v.h.lossy)
    buf_printf(b, "\"%s\"", packed_lossy_name(v.h.lossy));
  else
    buf_puts(b, "null");
  buf_puts(b, ",\"max_error\":");
  json_put_float(b, v.h.max_error, 64);
  buf_printf(b, ",\"count\":%u,\"items\":[", (unsigned)v.h.count);
  for (i = 0; i < v.h.count && (sqlite3_int64)i < max_items; i++) {
    if (i) buf_putc(b, ',');
    buf_puts(b, "{\"key\":");
    json_put_string(b, v.e[i].key.p, v.e[i].key.n);
    buf_printf(b, ",\"mode\":\"%s\",\"nbytes\":%llu,\"stored\":%llu}", packed_mode_name(v.e[i].mode),
               (unsigned long long)v.e[i].length, (unsigned long long)v.e[i].stored);
  }
  buf_puts(b, "]}");
done:
  packed_view_clear(&v);
  return rc;
}

/* ar_describe(blob [, max_items]) */
static void ar_describe_func(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  sqlite3_int64 max_items = 3;
  codec_span blob;
  buf_t b;
  int kind, rc;
  if (argc > 1) {
    if (sql_arg_int64(ctx, argv[1], 1, "max_items", &max_items) <= 0) return;
    if (max_items < 0) {
      sql_error(ctx, "argument 2 (max_items) must be 0 or more, got %lld", (long long)max_items);
      return;
    }
  }
  if (sqlite3_value_type(argv[0]) != SQLITE_BLOB) return; /* not ours: NULL */
  if (sql_blob_span(argv[0], &blob) != SQLITE_OK) {
    sqlite3_result_error_nomem(ctx);
    return;
  }
  if (packed_is(blob.p, blob.n)) {
    sql_buf_init(ctx, &b);
    rc = describe_packed(&b, blob.p, blob.n, max_items);
    if (rc == CODEC_NOMEM) {
      buf_free(&b);
      sqlite3_result_error_nomem(ctx);
    } else if (rc != CODEC_OK) {
      buf_free(&b); /* damaged: NULL */
    } else {
      sql_result_buf(ctx, &b, 1);
    }
    return;
  }
  if (sql_inspect_detect(blob.p, blob.n, &kind) != CODEC_OK) {
    sqlite3_result_error_nomem(ctx);
    return;
  }
  if (kind == INSPECT_NONE) return;
  sql_buf_init(ctx, &b);
  if (kind == INSPECT_NPY) {
    describe_npy(&b, blob.p, blob.n);
    rc = CODEC_OK;
  } else if (kind == INSPECT_RECORD) {
    rc = describe_record(&b, blob.p, blob.n, max_items);
  } else {
    rc = describe_recorddict(&b, blob.p, blob.n, max_items);
  }
  if (rc != CODEC_OK) {
    buf_free(&b);
    sqlite3_result_error_nomem(ctx);
    return;
  }
  sql_result_buf(ctx, &b, 1);
}

static const sql_function inspect_functions[] = {
    {"ar_describe", 1, ar_describe_func, NULL, NULL, 0},
    {"ar_describe", 2, ar_describe_func, NULL, NULL, 0},
};

int sql_inspect_register(sqlite3 *db, char **pzErrMsg) { return SQL_REGISTER_TABLE(db, inspect_functions, pzErrMsg); }
