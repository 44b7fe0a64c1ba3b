/* SPDX-License-Identifier: Apache-2.0 */
/*
** sql_pack.c — packed records (codec/packed.h) in SQL:
**
**   ar_pack(rec [, base [, options]])     an ArrayRecord -> packed BLOB
**   rd_pack(rd [, base [, options]])      a RecordDict -> packed BLOB
**   ar_unpack(packed [, base])            -> the ArrayRecord, bit for bit
**   rd_unpack(packed [, base])            -> the RecordDict, bit for bit
**   ar_pack_base(packed)                  the base's object id (hex), or NULL
**   ar_pack_info(packed)                  everything about it, as JSON
**
** ar_unpack and rd_unpack keep the last records they unpacked, per
** connection (codec/packed_cache.h): a view that unpacks one base for every
** row unpacks it once, and hands the same bytes to SQLite without a copy.
**
** base is an ArrayRecord (for a RecordDict too: each of its ArrayRecords is
** packed against it key by key); a NULL base means none, so that
** ar_pack(rec, (SELECT ... previous round ...)) packs a first round without
** one, and ar_unpack(packed, NULL) unpacks a BLOB packed without one.
** options is a JSON object: {"level": 3, "lossy": "float16", "chunk": 65536}
** (zstd level, lossy updates as float16 or bfloat16, items per chunk: a
** power of two from 2^10 to 2^22); NULL means the defaults.
*/
#include "sql/sql_modules.h"
#include "sql/sql_util.h"
SQLITE_EXTENSION_INIT3

#include <stdlib.h>
#include <string.h>

#include "codec/json.h"
#include "codec/json_read.h"
#include "codec/packed.h"
#include "codec/packed_cache.h"
#include "codec/recorddict.h"
#include "codec/sha256.h"
#include "codec/zst.h"

/* The option's value must be an integer from lo to hi: *v, or an error
** (CODEC_RANGE) that names the range. */
static int option_int(json_reader *r, const char *name, long lo, long hi, long *v, codec_err *err) {
  char text[24];
  uint64_t start;
  int integral, negative, rc, c = json_peek(r);
  start = r->pos;
  if (c != '-' && (c < '0' || c > '9')) return codec_fail(err, CODEC_RANGE, "option '%s' must be an integer", name);
  if ((rc = json_number(r, &integral, &negative)) != CODEC_OK) return rc;
  if (!integral) return codec_fail(err, CODEC_RANGE, "option '%s' must be an integer", name);
  /* 11 characters hold every value in range; longer ones are out of it */
  if (r->pos - start > 11)
    *v = negative ? lo - 1 : hi + 1;
  else {
    memcpy(text, r->s + start, (size_t)(r->pos - start));
    text[r->pos - start] = 0;
    *v = strtol(text, NULL, 10);
  }
  if (*v < lo || *v > hi) {
    char q[CODEC_QUOTE_MAX];
    return codec_fail(err, CODEC_RANGE, "option '%s' must be from %ld to %ld, got %s", name, lo, hi,
                      codec_quote(q, sizeof(q), r->s + start, r->pos - start));
  }
  return CODEC_OK;
}

/* The options JSON object into o (defaults first). */
static int read_options(const char *json, uint64_t n, packed_options *o, codec_err *err) {
  json_reader r;
  json_str key;
  int more, rc;
  long v;
  if ((rc = json_reader_init(&r, json, n, 0, "options", err)) != CODEC_OK) return rc;
  if (json_peek(&r) != '{') return codec_fail(err, CODEC_RANGE, "options must be a JSON object");
  if ((rc = json_begin(&r, '{')) != CODEC_OK) return rc;
  while ((rc = json_next_key(&r, &more, &key)) == CODEC_OK && more) {
    if (json_str_eq(&key, "level")) {
      if ((rc = option_int(&r, "level", zst_min_level(), zst_max_level(), &v, err)) != CODEC_OK) return rc;
      o->level = (int)v;
    } else if (json_str_eq(&key, "chunk")) {
      int k;
      rc = option_int(&r, "chunk", 1L << PACKED_CHUNK_LOG2_MIN, 1L << PACKED_CHUNK_LOG2_MAX, &v, err);
      if (rc != CODEC_OK) return rc;
      for (k = PACKED_CHUNK_LOG2_MIN; v != 1L << k; k++)
        if (k == PACKED_CHUNK_LOG2_MAX)
          return codec_fail(err, CODEC_RANGE, "option 'chunk' must be a power of two, got %ld", v);
      o->chunk_log2 = k;
    } else if (json_str_eq(&key, "lossy")) {
      json_str s;
      int c = json_peek(&r);
      if (c == 'n') { /* null: lossless */
        if ((rc = json_skip(&r)) != CODEC_OK) return rc;
        o->lossy = PACKED_LOSSLESS;
        continue;
      }
      if (c == '"' && (rc = json_string(&r, &s)) != CODEC_OK) return rc;
      if (c != '"' || s.escaped || (o->lossy = packed_lossy_from_name(s.p, s.n)) < 0)
        return codec_fail(err, CODEC_RANGE, "option 'lossy' must be \"float16\", \"bfloat16\" or null");
    } else {
      char q[CODEC_QUOTE_MAX];
      return codec_fail(err, CODEC_RANGE, "unknown option '%s' (options: level, lossy, chunk)",
                        codec_quote(q, sizeof(q), key.p, key.n));
    }
  }
  if (rc != CODEC_OK) return rc;
  return json_end(&r);
}

/* Does p[0..n) read as a record of this kind? For messages, after it
** failed as the other. */
static int reads_as(const unsigned char *p, uint64_t n, int kind) {
  codec_err err;
  int rc;
  if (kind == PACKED_RECORD) {
    record_t rec;
    record_init(&rec);
    rc = record_parse(&rec, p, n, &err);
    record_clear(&rec);
  } else {
    recorddict_t rd;
    recorddict_init(&rd);
    rc = recorddict_parse(&rd, p, n, &err);
    recorddict_clear(&rd);
  }
  return rc == CODEC_OK;
}

/* The optional base (argument 2): NULL, absent or NULL, or its bytes; -1
** after an error. */
static int arg_base(sqlite3_context *ctx, int argc, sqlite3_value **argv, const unsigned char **p, uint64_t *n) {
  if (argc < 2 || sqlite3_value_type(argv[1]) == SQLITE_NULL) return 0;
  return sql_arg_blob(ctx, argv[1], 1, "a base record", p, n) > 0 ? 1 : -1;
}

/* ar_pack(rec [, base [, options]]), rd_pack(rd [, base [, options]]) */
static void pack_func(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  int kind = SQL_OP(ctx), rc;
  const unsigned char *p, *base = NULL;
  uint64_t n, base_n = 0;
  packed_options o;
  codec_err err;
  buf_t out;
  packed_options_init(&o);
  if (sql_arg_blob(ctx, argv[0], 0, kind == PACKED_RECORD ? "a record" : "a record dict", &p, &n) <= 0) return;
  if (arg_base(ctx, argc, argv, &base, &base_n) < 0) return;
  if (argc > 2 && sqlite3_value_type(argv[2]) != SQLITE_NULL) {
    const char *json;
    uint64_t jlen;
    if (sql_arg_text(ctx, argv[2], 2, "an options JSON object", &json, &jlen) <= 0) return;
    if ((rc = read_options(json, jlen, &o, &err)) != CODEC_OK) {
      sql_codec_error(ctx, rc, &err);
      return;
    }
  }
  sql_buf_init(ctx, &out);
  if ((rc = packed_encode(&out, kind, p, n, base, base_n, &o, &err)) != CODEC_OK) {
    buf_free(&out);
    /* the other kind of record where one belongs: say so */
    if (rc == CODEC_CORRUPT && strncmp(err.msg, "base: ", 6) == 0 && reads_as(base, base_n, PACKED_RECORDDICT))
      sql_error(ctx, "the base must be an ArrayRecord, got a record dict: take one out with rd_array_record(rd)");
    else if (rc == CODEC_CORRUPT && strncmp(err.msg, "base: ", 6) != 0 && reads_as(p, n, 3 - kind))
      sql_error(ctx, "got %s: pack it with %s", kind == PACKED_RECORD ? "a record dict" : "an ArrayRecord",
                kind == PACKED_RECORD ? "rd_pack" : "ar_pack");
    else
      sql_codec_error(ctx, rc, &err);
    return;
  }
  sql_result_buf(ctx, &out, 0);
}

/* The packed BLOB argument: bytes, or an error that says what it is. */
static int arg_packed(sqlite3_context *ctx, sqlite3_value *v, const unsigned char **p, uint64_t *n) {
  int rc = sql_arg_blob(ctx, v, 0, "a packed", p, n);
  if (rc <= 0) return rc;
  if (!packed_is(*p, *n)) {
    record_t rec;
    codec_err err;
    record_init(&rec);
    rc = record_parse(&rec, *p, *n, &err);
    record_clear(&rec);
    if (rc == CODEC_NOMEM) {
      sqlite3_result_error_nomem(ctx);
      return -1;
    }
    sql_error(ctx, rc == CODEC_OK ? "argument 1 is not packed: it reads as a record already"
                                  : "argument 1 is not a packed record (it does not start with the magic)");
    return -1;
  }
  return 1;
}

/* ar_unpack and rd_unpack of one connection: their entries and the cache
** of unpacked records they share (codec/packed_cache.h), freed with the
** connection. */
#define UNPACK_FUNCTIONS 4
typedef struct unpack_fn {
  sql_function f; /* first: the user data is read as an sql_function too */
  struct unpack_conn *conn;
} unpack_fn;
typedef struct unpack_conn {
  unpack_fn fns[UNPACK_FUNCTIONS];
  packed_cache *cache;
  int refs; /* functions still registered */
} unpack_conn;

static void unpack_conn_release(unpack_conn *conn, int by) {
  conn->refs -= by;
  if (conn->refs > 0) return;
  packed_cache_free(conn->cache);
  codec_free(conn);
}

static void unpack_destroy(void *p) { unpack_conn_release(((unpack_fn *)p)->conn, 1); }

/* ar_unpack(packed [, base]), rd_unpack(packed [, base]) */
static void unpack_func(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  packed_cache *cache = ((unpack_fn *)sqlite3_user_data(ctx))->conn->cache;
  int kind = SQL_OP(ctx), rc, keep;
  const unsigned char *p, *base = NULL;
  unsigned char *rec;
  uint64_t n, base_n = 0, size;
  packed_head h;
  packed_view v;
  codec_err err;
  if (arg_packed(ctx, argv[0], &p, &n) <= 0) return;
  if (arg_base(ctx, argc, argv, &base, &base_n) < 0) return;
  if (base && packed_is(base, base_n)) {
    sql_error(ctx, "the base is packed itself: unpack it first with ar_unpack");
    return;
  }
  if (packed_head_parse(p, n, &h, &err) == CODEC_OK && h.kind != kind) {
    char hint[PACKED_HINT_MAX];
    int k;
    sql_error(ctx, "got %s: unpack it with %s", packed_hint(hint, sizeof(hint), p, n, &k),
              kind == PACKED_RECORD ? "rd_unpack" : "ar_unpack");
    return;
  }
  /* unpacked before by this connection: the same bytes, shared */
  if ((rec = packed_cache_get(cache, p, n, base, base_n, &size)) != NULL) {
    if (size <= sql_limit(ctx)) {
      sqlite3_result_blob64(ctx, rec, size, shared_release);
      return;
    }
    shared_release(rec); /* the limit came down since: unpacking says so */
  }
  packed_view_init(&v);
  rc = packed_open(&v, p, n, sql_limit(ctx), &err);
  rec = NULL;
  if (rc == CODEC_OK && !(rec = shared_alloc(v.h.size))) rc = codec_nomem(&err);
  if (rc == CODEC_OK) rc = packed_decode_into(&v, base, base_n, rec, &err);
  size = v.h.size;
  keep = !(v.h.flags & PACKED_HAS_BASE);
  packed_view_clear(&v);
  if (rc != CODEC_OK) {
    shared_release(rec);
    sql_codec_error(ctx, rc, &err);
    return;
  }
  /* Kept: what is unpacked without a base, the bases of the packed store
  ** (global models), read again for every reply packed against them. A
  ** record unpacked against a base (a reply) is read once per query, and
  ** keeping it would cost a copy of its packed bytes (the cache's key). */
  if (keep) packed_cache_put(cache, p, n, rec, size);
  sqlite3_result_blob64(ctx, rec, size, shared_release);
}

/* ar_pack_base(packed) */
static void base_func(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  const unsigned char *p;
  uint64_t n;
  packed_head h;
  codec_err err;
  char id[SHA256_HEX_SIZE];
  int rc;
  (void)argc;
  if (arg_packed(ctx, argv[0], &p, &n) <= 0) return;
  if ((rc = packed_head_parse(p, n, &h, &err)) != CODEC_OK) {
    sql_codec_error(ctx, rc, &err);
    return;
  }
  if (!(h.flags & PACKED_HAS_BASE)) return; /* none: NULL */
  sqlite3_result_text(ctx, sha256_hex(h.base_id, id), -1, SQLITE_TRANSIENT);
}

/* ar_pack_info(packed) */
static void info_func(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  const unsigned char *p;
  uint64_t n, planes[8];
  packed_view v;
  codec_err err;
  buf_t b;
  uint32_t i;
  int rc, k, np;
  (void)argc;
  if (arg_packed(ctx, argv[0], &p, &n) <= 0) return;
  packed_view_init(&v);
  if ((rc = packed_open(&v, p, n, UINT64_MAX, &err)) != CODEC_OK) {
    packed_view_clear(&v);
    sql_codec_error(ctx, rc, &err);
    return;
  }
  sql_buf_init(ctx, &b);
  buf_printf(&b, "{\"kind\":\"%s\",\"version\":%d,\"size\":%llu,\"packed\":%llu,\"base\":", packed_kind_name(v.h.kind),
             v.h.version, (unsigned long long)v.h.size, (unsigned long long)n);
  if (v.h.flags & PACKED_HAS_BASE) {
    char id[SHA256_HEX_SIZE];
    buf_printf(&b, "\"%s\",\"base_size\":%llu", sha256_hex(v.h.base_id, id), (unsigned long long)v.h.base_size);
  } else {
    buf_puts(&b, "null,\"base_size\":null");
  }
  buf_puts(&b, ",\"lossy\":");
  if (v.h.lossy)
    buf_printf(&b, "\"%s\"", packed_lossy_name(v.h.lossy));
  else
    buf_puts(&b, "null");
  buf_puts(&b, ",\"max_error\":");
  json_put_float(&b, v.h.max_error, 64);
  buf_printf(&b, ",\"chunk\":%llu,\"meta\":%llu,\"count\":%u,\"arrays\":[", 1ull << v.h.chunk_log2,
             (unsigned long long)v.h.meta_stored, (unsigned)v.h.count);
  for (i = 0; i < v.h.count; i++) {
    const packed_entry *e = &v.e[i];
    if (i) buf_putc(&b, ',');
    buf_puts(&b, "{\"key\":");
    json_put_string(&b, e->key.p, e->key.n);
    buf_printf(&b, ",\"mode\":\"%s\",\"width\":%d,\"nbytes\":%llu,\"stored\":%llu,\"planes\":[",
               packed_mode_name(e->mode), e->width, (unsigned long long)e->length, (unsigned long long)e->stored);
    np = packed_entry_planes(&v, e, planes);
    for (k = 0; k < np; k++) buf_printf(&b, "%s%llu", k ? "," : "", (unsigned long long)planes[k]);
    buf_puts(&b, "],\"max_error\":");
    json_put_float(&b, e->max_error, 64);
    buf_putc(&b, '}');
  }
  buf_puts(&b, "]}");
  packed_view_clear(&v);
  sql_result_buf(ctx, &b, 1);
}

static const sql_function pack_functions[] = {
    {"ar_pack", 1, pack_func, NULL, NULL, PACKED_RECORD},
    {"ar_pack", 2, pack_func, NULL, NULL, PACKED_RECORD},
    {"ar_pack", 3, pack_func, NULL, NULL, PACKED_RECORD},
    {"rd_pack", 1, pack_func, NULL, NULL, PACKED_RECORDDICT},
    {"rd_pack", 2, pack_func, NULL, NULL, PACKED_RECORDDICT},
    {"rd_pack", 3, pack_func, NULL, NULL, PACKED_RECORDDICT},
    {"ar_pack_base", 1, base_func, NULL, NULL, 0},
    {"ar_pack_info", 1, info_func, NULL, NULL, 0},
};

static const sql_function unpack_functions[UNPACK_FUNCTIONS] = {
    {"ar_unpack", 1, unpack_func, NULL, NULL, PACKED_RECORD},
    {"ar_unpack", 2, unpack_func, NULL, NULL, PACKED_RECORD},
    {"rd_unpack", 1, unpack_func, NULL, NULL, PACKED_RECORDDICT},
    {"rd_unpack", 2, unpack_func, NULL, NULL, PACKED_RECORDDICT},
};

int sql_pack_register(sqlite3 *db, char **pzErrMsg) {
  unpack_conn *conn;
  int rc, i;
  rc = sql_register_optional(db, pack_functions, (int)(sizeof(pack_functions) / sizeof(pack_functions[0])), pzErrMsg);
  if (rc != SQLITE_OK) return rc;
  if ((conn = codec_malloc(sizeof(*conn))) != NULL) {
    memset(conn, 0, sizeof(*conn));
    if (!(conn->cache = packed_cache_new())) codec_free(conn), conn = NULL;
  }
  if (!conn) { /* SQLite reports a failed init with the message: say why */
    if (pzErrMsg) *pzErrMsg = sqlite3_mprintf("arrayrecord: cannot register ar_unpack (out of memory)");
    return SQLITE_NOMEM;
  }
  conn->refs = UNPACK_FUNCTIONS;
  for (i = 0; i < UNPACK_FUNCTIONS; i++) {
    conn->fns[i].f = unpack_functions[i];
    conn->fns[i].conn = conn;
    if ((rc = sql_register_owned(db, &conn->fns[i].f, 1, unpack_destroy, pzErrMsg)) != SQLITE_OK) {
      int j;
      /* SQLite destroyed this one; the ones after it were never registered.
      ** A failed load unloads the library, so the ones before it go now,
      ** while their destructor is still there to call (SQLite calls it when
      ** a function is deleted). */
      unpack_conn_release(conn, UNPACK_FUNCTIONS - 1 - i);
      for (j = i - 1; j >= 0; j--)
        sqlite3_create_function_v2(db, unpack_functions[j].name, unpack_functions[j].nargs, SQL_PURE, NULL, NULL, NULL,
                                   NULL, NULL);
      return rc;
    }
  }
  return SQLITE_OK;
}
