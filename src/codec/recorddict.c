/* SPDX-License-Identifier: Apache-2.0 */
/*
** recorddict.c — RecordDict protobuf reader, canonical writer and
** re-encoder (see recorddict.h).
*/
#include "codec/recorddict.h"

#include "codec/array.h"
#include "codec/keyset.h"
#include "codec/packed.h"
#include "codec/pb.h"
#include "codec/valrec.h"

#include <stdio.h>
#include <stddef.h>
#include <string.h>

#define RD_BLOB "record dict"

static const unsigned char empty_bytes[1] = {0};

static int rd_fail(const pb_ctx *ctx, const char *problem, uint64_t at) {
  char what[160];
  snprintf(what, sizeof(what), "%s %s", RD_BLOB, problem);
  return pb_error(ctx, CODEC_CORRUPT, what, at);
}

static int parse_item(recorddict_item *it, const unsigned char *blob, uint64_t start, uint64_t end, pb_ctx *ctx) {
  pb_reader r = {blob, start, end};
  int rc;
  memset(it, 0, sizeof(*it));
  it->name.p = it->record.p = empty_bytes;
  ctx->key.p = NULL;
  while (r.pos < r.end) {
    uint64_t field, at = r.pos, s, len;
    int wt;
    if ((rc = pb_tag(&r, ctx, &field, &wt)) != CODEC_OK) return rc;
    if (field >= 1 && field <= 4) {
      static const char *const names[] = {"", "Item.key", "Item.array_record", "Item.metric_record",
                                          "Item.config_record"};
      if (wt != PB_WT_LEN) return pb_wrong_type(ctx, names[field], wt, at);
      if ((rc = pb_len(&r, ctx, &s, &len)) != CODEC_OK) return rc;
      if (field == 1) {
        it->name.p = len ? blob + s : empty_bytes;
        it->name.n = len;
        if (codec_utf8_valid(it->name.p, len)) ctx->key = it->name;
      } else if (it->kind != (int)field) { /* another oneof member: it replaces the record */
        it->kind = (int)field;
        it->record.p = len ? blob + s : empty_bytes;
        it->record.n = len;
        it->record_at = s;
      } else if ((rc = pb_join(&it->record, &it->owned, blob + s, len)) != CODEC_OK) { /* the same: merged */
        return codec_nomem(ctx->err);
      } else if (it->record.p == blob + s) {
        it->record_at = s; /* the first non-empty occurrence */
      }
    } else if ((rc = pb_skip(&r, ctx, field, wt, 0, at)) != CODEC_OK) {
      return rc;
    }
  }
  if (!codec_utf8_valid(it->name.p, it->name.n)) {
    ctx->key.p = NULL;
    return rd_fail(ctx, "has a name that is not valid UTF-8", start);
  }
  ctx->key = it->name;
  if (!it->kind) return rd_fail(ctx, "has an item without a record", start);
  return CODEC_OK;
}

void recorddict_init(recorddict_t *rd) {
  rd->items = rd->small;
  rd->n = 0;
  rd->cap = (int)(sizeof(rd->small) / sizeof(rd->small[0]));
}

static void free_owned(recorddict_t *rd) {
  int i;
  for (i = 0; i < rd->n; i++) pb_owned_free(&rd->items[i].owned);
}

void recorddict_clear(recorddict_t *rd) {
  free_owned(rd);
  if (rd->items != rd->small) codec_free(rd->items);
  recorddict_init(rd);
}

static int dup_error(const recorddict_t *rd, int first, int second, codec_err *err) {
  char q[CODEC_QUOTE_MAX];
  codec_quote(q, sizeof(q), rd->items[second].name.p, rd->items[second].name.n);
  return codec_fail(err, CODEC_CORRUPT, "record dict has duplicate name '%s' (items %d and %d)", q, first, second);
}

static int check_unique(const recorddict_t *rd, codec_err *err) {
  int first, second;
  if (keyset_find_duplicate(rd->items, rd->n, sizeof(recorddict_item), offsetof(recorddict_item, name), &first,
                            &second))
    return codec_nomem(err);
  return second < 0 ? CODEC_OK : dup_error(rd, first, second, err);
}

int recorddict_parse(recorddict_t *rd, const unsigned char *blob, uint64_t n, codec_err *err) {
  pb_reader r = {blob, 0, n};
  pb_ctx ctx = {err, RD_BLOB, -1, {NULL, 0}};
  uint64_t at, s, len;
  int rc;
  free_owned(rd);
  rd->n = 0;
  while ((rc = pb_next_item(&r, &ctx, "RecordDict.items", rd->n, &at, &s, &len)) == PB_ITEM) {
    recorddict_item *it = buf_push_item(&rd->items, &rd->n, &rd->cap, rd->small, sizeof(*it));
    if (!it) return codec_nomem(err);
    if ((rc = parse_item(it, blob, s, s + len, &ctx)) != CODEC_OK) break;
    it->offset = at;
  }
  if (rc == CODEC_CORRUPT) {
    /* Another format where a RecordDict belongs: name its converter. */
    static const char *const hint[] = {NULL, "a .npy file", "a .npz archive", "a safetensors file"};
    static const char *const conv[] = {NULL, "ar('key', npy)", "ar_from_npz(blob)", "ar_from_safetensors(blob)"};
    int kind = codec_sniff(blob, n);
    if (kind == CODEC_SNIFF_PACKED) {
      char msg[sizeof(err->msg)];
      return codec_fail(err, CODEC_CORRUPT, "%s", packed_misread(msg, sizeof(msg), blob, n, PACKED_RECORDDICT));
    }
    if (kind != CODEC_SNIFF_NONE)
      return codec_fail(err, CODEC_CORRUPT,
                        "got %s, not a record dict: make a record with %s, then wrap it with rd(name, 'array', rec)",
                        hint[kind], conv[kind]);
  }
  return rc != CODEC_OK ? rc : check_unique(rd, err);
}

int recorddict_find(const recorddict_t *rd, const void *name, uint64_t n) {
  int i;
  for (i = 0; i < rd->n; i++)
    if (rd->items[i].name.n == n && memcmp(rd->items[i].name.p, name, (size_t)n) == 0) return i;
  return -1;
}

const char *recorddict_kind_name(int kind) {
  return kind == RECORDDICT_ARRAY    ? "array"
         : kind == RECORDDICT_METRIC ? "metric"
         : kind == RECORDDICT_CONFIG ? "config"
                                     : "";
}

int recorddict_kind_from_name(const void *s, uint64_t n) {
  if (n == 5 && memcmp(s, "array", 5) == 0) return RECORDDICT_ARRAY;
  if (n == 6 && memcmp(s, "metric", 6) == 0) return RECORDDICT_METRIC;
  if (n == 6 && memcmp(s, "config", 6) == 0) return RECORDDICT_CONFIG;
  return 0;
}

static uint64_t body_size(uint64_t name_len, uint64_t record_len) {
  return pb_len_field_size(name_len) + 1 + pb_varint_size(record_len) + record_len;
}

uint64_t recorddict_item_size(uint64_t name_len, uint64_t record_len) {
  uint64_t body = body_size(name_len, record_len);
  return 1 + pb_varint_size(body) + body;
}

void recorddict_write_item_head(buf_t *out, codec_span name, int kind, uint64_t record_len) {
  buf_putc(out, 0x0a);
  pb_put_varint(out, body_size(name.n, record_len));
  pb_put_len_field(out, 0x0a, name.p, name.n);
  buf_putc(out, (char)(kind << 3 | PB_WT_LEN)); /* written even when empty: a oneof member */
  pb_put_varint(out, record_len);
}

void recorddict_write_item(buf_t *out, codec_span name, int kind, codec_span record) {
  recorddict_write_item_head(out, name, kind, record.n);
  buf_append(out, record.p, record.n);
}

int recorddict_item_merged(const recorddict_item *it, const unsigned char *blob) {
  return it->record.n && it->record.p != blob + it->record_at;
}

/* A merged record read piece by piece, from its occurrences in the blob,
** so that messages count bytes from the start of the blob: the occurrences
** of the item's member after the last one of another member. The item
** parsed once already: its framing cannot fail. */
int recorddict_item_valrec(valrec_t *vr, const recorddict_item *it, const unsigned char *blob, const char *label,
                           codec_err *err) {
  pb_ctx quiet = {NULL, RD_BLOB, -1, {NULL, 0}};
  pb_reader r = {blob, it->offset, it->record_at}; /* the item's tag and length lie before its record */
  uint64_t field, s, len, from = 0;
  int wt, pass, rc, config = it->kind == RECORDDICT_CONFIG;
  if (!recorddict_item_merged(it, blob))
    return valrec_parse(vr, config, blob, it->record_at, it->record_at + it->record.n, label, err);
  valrec_clear(vr);
  vr->config = config;
  pb_varint(&r, &field);
  pb_varint(&r, &len);
  s = r.pos;
  for (pass = 0; pass < 2; pass++) { /* pass 0: where the last other member is; 1: the occurrences after it */
    r.pos = s;
    r.end = s + len;
    while (r.pos < r.end) {
      uint64_t at = r.pos, fs, flen;
      pb_tag(&r, &quiet, &field, &wt);
      if (field < 1 || field > 4) {
        pb_skip(&r, &quiet, field, wt, 0, at);
        continue;
      }
      pb_len(&r, &quiet, &fs, &flen);
      if (pass == 0 && field != 1 && (int)field != it->kind) from = r.pos;
      if (pass == 1 && at >= from && (int)field == it->kind &&
          (rc = valrec_parse_more(vr, blob, fs, fs + flen, label, err)) != CODEC_OK)
        return rc;
    }
  }
  return valrec_check_unique(vr, label, err);
}

int recorddict_item_check(const recorddict_item *it, const unsigned char *blob, codec_err *err) {
  char label[CODEC_QUOTE_MAX + 32];
  int rc, i;
  recorddict_item_label(label, sizeof(label), it->name, it->kind);
  if (it->kind == RECORDDICT_ARRAY) {
    record_t rec;
    codec_err inner;
    record_init(&rec);
    rc = record_parse(&rec, it->record.p, it->record.n, &inner);
    for (i = 0; rc == CODEC_OK && i < rec.n; i++) rc = array_validate(&rec.items[i], i, &inner);
    record_clear(&rec);
    if (rc == CODEC_CORRUPT || rc == CODEC_UNSUPPORTED)
      return codec_fail(err, rc, "%s (at byte %llu): %s", label, (unsigned long long)it->record_at, inner.msg);
    if (rc) return codec_fail_rc(err, rc);
    return CODEC_OK;
  } else {
    valrec_t vr;
    valrec_init(&vr);
    rc = recorddict_item_valrec(&vr, it, blob, label, err);
    valrec_clear(&vr);
    return rc;
  }
}

const char *recorddict_item_label(char *out, size_t cap, codec_span name, int kind) {
  char q[CODEC_QUOTE_MAX];
  snprintf(out, cap, "%s record '%s'", recorddict_kind_name(kind), codec_quote(q, sizeof(q), name.p, name.n));
  return out;
}

/* --- canonical re-encoding ---------------------------------------------------- */

void recorddict_canon_init(recorddict_canon *c, uint64_t limit) {
  c->name.p = empty_bytes;
  c->name.n = 0;
  c->kind = 0;
  record_init(&c->rec);
  buf_init(&c->vals, limit);
  c->size = 0;
}

void recorddict_canon_clear(recorddict_canon *c) {
  record_clear(&c->rec);
  buf_free(&c->vals);
  recorddict_canon_init(c, c->vals.limit);
}

/* The canonical size of the parsed ArrayRecord in c->rec. */
static int array_size(recorddict_canon *c, codec_err *err) {
  int64_t shape[RECORD_MAX_DIMS];
  record_item_spec spec;
  int i;
  c->size = 0;
  for (i = 0; i < c->rec.n; i++) {
    record_item_spec_from_item(&spec, &c->rec.items[i], shape);
    if (size_add(c->size, record_item_encoded_size(&spec), &c->size)) return codec_fail_rc(err, CODEC_TOOBIG);
  }
  return CODEC_OK;
}

int recorddict_canon_array(recorddict_canon *c, codec_span name, const unsigned char *p, uint64_t n, codec_err *err) {
  int rc;
  c->name = name;
  c->kind = RECORDDICT_ARRAY;
  if ((rc = record_parse(&c->rec, p, n, err)) != CODEC_OK) return rc;
  return array_size(c, err);
}

/* c->vals written: the size is theirs. */
static int vals_done(recorddict_canon *c, codec_err *err) {
  if (c->vals.rc) return codec_fail_rc(err, c->vals.rc);
  c->size = c->vals.n;
  return CODEC_OK;
}

int recorddict_canon_json(recorddict_canon *c, codec_span name, int config, const unsigned char *json, uint64_t n,
                          const char *what, codec_err *err) {
  int rc;
  c->name = name;
  c->kind = config ? RECORDDICT_CONFIG : RECORDDICT_METRIC;
  c->vals.n = 0;
  /* valrec_from_json writes what valrec_write_flower would write again */
  if ((rc = valrec_from_json(&c->vals, config, json, n, what, err)) != CODEC_OK) return rc;
  return vals_done(c, err);
}

int recorddict_canon_item(recorddict_canon *c, const recorddict_item *it, const unsigned char *blob, codec_err *err) {
  char label[CODEC_QUOTE_MAX + 32];
  int rc;
  recorddict_item_label(label, sizeof(label), it->name, it->kind);
  if (it->kind == RECORDDICT_ARRAY) {
    codec_err inner;
    rc = recorddict_canon_array(c, it->name, it->record.p, it->record.n, &inner);
    if (rc == CODEC_CORRUPT)
      return codec_fail(err, rc, "%s (at byte %llu): %s", label, (unsigned long long)it->record_at, inner.msg);
    if (rc) return codec_fail_rc(err, rc);
    return CODEC_OK;
  } else {
    valrec_t vr;
    c->name = it->name;
    c->kind = it->kind;
    c->vals.n = 0;
    valrec_init(&vr);
    rc = recorddict_item_valrec(&vr, it, blob, label, err);
    if (rc == CODEC_OK) valrec_write_flower(&c->vals, &vr);
    valrec_clear(&vr);
    return rc ? rc : vals_done(c, err);
  }
}

uint64_t recorddict_canon_item_size(const recorddict_canon *c) { return recorddict_item_size(c->name.n, c->size); }

void recorddict_canon_write(buf_t *out, const recorddict_canon *c) {
  int64_t shape[RECORD_MAX_DIMS];
  record_item_spec spec;
  int i;
  if (buf_reserve(out, recorddict_canon_item_size(c)) != CODEC_OK) return;
  recorddict_write_item_head(out, c->name, c->kind, c->size);
  if (c->kind != RECORDDICT_ARRAY) {
    buf_append(out, buf_at(&c->vals, 0), c->vals.n);
    return;
  }
  for (i = 0; i < c->rec.n; i++) {
    record_item_spec_from_item(&spec, &c->rec.items[i], shape);
    record_write_item(out, &spec);
  }
}

void recorddict_canon_write_all(buf_t *out, const recorddict_canon *c, int n) {
  uint64_t total = 0;
  int i;
  for (i = 0; i < n; i++) {
    if (size_add(total, recorddict_canon_item_size(&c[i]), &total)) {
      if (!out->rc) out->rc = CODEC_TOOBIG;
      return;
    }
  }
  if (buf_reserve(out, total) != CODEC_OK) return;
  for (i = 0; i < n; i++) recorddict_canon_write(out, &c[i]);
}

int recorddict_canonical(buf_t *out, const unsigned char *blob, uint64_t n, codec_err *err) {
  recorddict_t rd;
  recorddict_canon *c = NULL;
  int rc, i, ready = 0;
  recorddict_init(&rd);
  if ((rc = recorddict_parse(&rd, blob, n, err)) != CODEC_OK) goto done;
  if (!(c = codec_malloc((uint64_t)(rd.n ? rd.n : 1) * sizeof(*c)))) {
    rc = codec_nomem(err);
    goto done;
  }
  for (i = 0; i < rd.n && rc == CODEC_OK; i++, ready++) {
    recorddict_canon_init(&c[i], out->limit);
    rc = recorddict_canon_item(&c[i], &rd.items[i], blob, err);
  }
  if (rc == CODEC_OK) {
    recorddict_canon_write_all(out, c, rd.n);
    if (out->rc) rc = codec_fail_rc(err, out->rc);
  }
done:
  for (i = 0; i < ready; i++) recorddict_canon_clear(&c[i]);
  codec_free(c);
  recorddict_clear(&rd);
  return rc;
}
