/* SPDX-License-Identifier: Apache-2.0 */
/*
** record.c — Flower ArrayRecord protobuf reader and canonical writer
** (see record.h for the message and the rules).
*/
#include "codec/record.h"

#include "codec/keyset.h"

#include <stdio.h>
#include <string.h>

/* protobuf wire types */
enum { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2, WT_SGROUP = 3, WT_EGROUP = 4, WT_I32 = 5 };

#define PB_MAX_GROUP_DEPTH 64

/* A bounded reader over blob[pos..end); offsets are absolute in the blob so
** messages can point at the byte. */
typedef struct pb_reader {
  const unsigned char *blob;
  uint64_t pos, end;
} pb_reader;

enum { PB_OK = 0, PB_TRUNCATED, PB_VARINT_TOO_LONG };

static int pb_varint(pb_reader *r, uint64_t *out) {
  uint64_t v = 0;
  int shift;
  for (shift = 0; shift < 70; shift += 7) {
    unsigned char b;
    if (r->pos >= r->end) return PB_TRUNCATED;
    b = r->blob[r->pos++];
    if (shift < 64) v |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) {
      *out = v;
      return PB_OK;
    }
  }
  return PB_VARINT_TOO_LONG;
}

/* Context for messages: " (item 3, key 'fc.weight')" or " (item 3)". */
typedef struct pb_ctx {
  codec_err *err;
  int item;           /* -1 outside items */
  const record_item *cur; /* the item being parsed, for its key */
} pb_ctx;

static int pb_error(const pb_ctx *ctx, int code, const char *what, uint64_t at) {
  char where[CODEC_QUOTE_MAX + 40];
  where[0] = 0;
  if (ctx->item >= 0) {
    if (ctx->cur) {
      char q[CODEC_QUOTE_MAX];
      codec_quote(q, sizeof(q), ctx->cur->key.p, ctx->cur->key.n);
      snprintf(where, sizeof(where), " (item %d, key '%s')", ctx->item, q);
    } else {
      snprintf(where, sizeof(where), " (item %d)", ctx->item);
    }
  }
  return codec_fail(ctx->err, code, "%s at byte %llu%s", what, (unsigned long long)at, where);
}

static int pb_read_error(const pb_ctx *ctx, int rc, const pb_reader *r, uint64_t start) {
  if (rc == PB_VARINT_TOO_LONG) return pb_error(ctx, CODEC_CORRUPT, "record blob has a varint longer than 10 bytes", start);
  return pb_error(ctx, CODEC_CORRUPT, "record blob truncated", r->end);
}

/* Read a field tag; field 0 and wire types 6/7 are invalid. */
static int pb_tag(pb_reader *r, const pb_ctx *ctx, uint64_t *field, int *wt) {
  uint64_t start = r->pos, tag;
  int rc = pb_varint(r, &tag);
  if (rc) return pb_read_error(ctx, rc, r, start);
  *field = tag >> 3;
  *wt = (int)(tag & 7);
  if (*field == 0 || *field > 536870911u) return pb_error(ctx, CODEC_CORRUPT, "record blob has an invalid field number", start);
  if (*wt > WT_I32) {
    char what[64];
    snprintf(what, sizeof(what), "record blob has invalid wire type %d", *wt);
    return pb_error(ctx, CODEC_CORRUPT, what, start);
  }
  return CODEC_OK;
}

/* A length-delimited payload: returns its [start, start+len) in *span. */
static int pb_len(pb_reader *r, const pb_ctx *ctx, uint64_t *start, uint64_t *len) {
  uint64_t at = r->pos;
  int rc = pb_varint(r, len);
  if (rc) return pb_read_error(ctx, rc, r, at);
  if (*len > r->end - r->pos) {
    return pb_error(ctx, CODEC_CORRUPT, "record blob truncated", r->end);
  }
  *start = r->pos;
  r->pos += *len;
  return CODEC_OK;
}

/* Skip one field of an unknown number; groups are skipped to their end.
** tag_at is where the field's tag starts, for messages. */
static int pb_skip(pb_reader *r, const pb_ctx *ctx, uint64_t field, int wt, int depth, uint64_t tag_at) {
  uint64_t at = r->pos, v, s, len;
  int rc;
  switch (wt) {
    case WT_VARINT:
      rc = pb_varint(r, &v);
      return rc ? pb_read_error(ctx, rc, r, at) : CODEC_OK;
    case WT_I64:
    case WT_I32: {
      uint64_t size = wt == WT_I64 ? 8 : 4;
      if (size > r->end - r->pos) return pb_error(ctx, CODEC_CORRUPT, "record blob truncated", r->end);
      r->pos += size;
      return CODEC_OK;
    }
    case WT_LEN:
      return pb_len(r, ctx, &s, &len);
    case WT_SGROUP:
      if (depth >= PB_MAX_GROUP_DEPTH) return pb_error(ctx, CODEC_CORRUPT, "record blob nests groups too deeply", tag_at);
      for (;;) {
        uint64_t f, inner_at = r->pos;
        int w;
        if (r->pos >= r->end) return pb_error(ctx, CODEC_CORRUPT, "record blob truncated inside a group", r->end);
        if ((rc = pb_tag(r, ctx, &f, &w)) != CODEC_OK) return rc;
        if (w == WT_EGROUP) {
          if (f != field) return pb_error(ctx, CODEC_CORRUPT, "record blob has a mismatched end-group", inner_at);
          return CODEC_OK;
        }
        if ((rc = pb_skip(r, ctx, f, w, depth + 1, inner_at)) != CODEC_OK) return rc;
      }
    default: /* WT_EGROUP without a start */
      return pb_error(ctx, CODEC_CORRUPT, "record blob has an unexpected end-group", tag_at);
  }
}

static int pb_wrong_type(const pb_ctx *ctx, const char *field, int wt, uint64_t at) {
  char what[96];
  snprintf(what, sizeof(what), "record blob has wrong wire type %d for %s", wt, field);
  return pb_error(ctx, CODEC_CORRUPT, what, at);
}

/* Shape entries: one varint (unpacked) or a packed run. Counts them into
** *ndim and, when out is non-NULL, stores them. */
static int pb_shape_value(uint64_t raw, const pb_ctx *ctx, uint64_t at, int *ndim, int64_t *out) {
  /* int32 on the wire: protobuf keeps the low 32 bits of the varint. */
  int32_t dim = (int32_t)(uint32_t)(raw & 0xffffffffu);
  if (dim < 0) {
    char what[64];
    snprintf(what, sizeof(what), "record blob has negative dimension %d", dim);
    return pb_error(ctx, CODEC_CORRUPT, what, at);
  }
  if (*ndim >= RECORD_MAX_DIMS) {
    char what[64];
    snprintf(what, sizeof(what), "record blob has a shape with more than %d dimensions", RECORD_MAX_DIMS);
    return pb_error(ctx, CODEC_CORRUPT, what, at);
  }
  if (out) out[*ndim] = dim;
  (*ndim)++;
  return CODEC_OK;
}

/* Parse one Array message (or one occurrence of it, merging into `it`). */
static int pb_array(const unsigned char *blob, uint64_t start, uint64_t end, record_item *it,
                    const pb_ctx *ctx, int64_t *shape_out) {
  pb_reader r = {blob, start, end};
  int rc;
  while (r.pos < r.end) {
    uint64_t field, at = r.pos, s, len;
    int wt;
    if ((rc = pb_tag(&r, ctx, &field, &wt)) != CODEC_OK) return rc;
    if (field == 2) { /* shape */
      if (wt == WT_VARINT) {
        uint64_t v, vat = r.pos;
        if ((rc = pb_varint(&r, &v)) != PB_OK) return pb_read_error(ctx, rc, &r, vat);
        if ((rc = pb_shape_value(v, ctx, vat, &it->ndim, shape_out)) != CODEC_OK) return rc;
      } else if (wt == WT_LEN) {
        pb_reader packed;
        if ((rc = pb_len(&r, ctx, &s, &len)) != CODEC_OK) return rc;
        packed.blob = blob;
        packed.pos = s;
        packed.end = s + len;
        while (packed.pos < packed.end) {
          uint64_t v, vat = packed.pos;
          if ((rc = pb_varint(&packed, &v)) != PB_OK) return pb_read_error(ctx, rc, &packed, vat);
          if ((rc = pb_shape_value(v, ctx, vat, &it->ndim, shape_out)) != CODEC_OK) return rc;
        }
      } else {
        return pb_wrong_type(ctx, "Array.shape", wt, at);
      }
    } else if (field == 1 || field == 3 || field == 4) {
      codec_span *dst = field == 1 ? &it->dtype : field == 3 ? &it->stype : &it->data;
      if (wt != WT_LEN) {
        return pb_wrong_type(ctx, field == 1 ? "Array.dtype" : field == 3 ? "Array.stype" : "Array.data", wt, at);
      }
      if ((rc = pb_len(&r, ctx, &s, &len)) != CODEC_OK) return rc;
      dst->p = blob + s;
      dst->n = len;
    } else {
      if ((rc = pb_skip(&r, ctx, field, wt, 0, at)) != CODEC_OK) return rc;
    }
  }
  return CODEC_OK;
}

static const unsigned char empty_bytes[1] = {0};

/* Parse one Item message at blob[start..end). */
static int pb_item(const unsigned char *blob, uint64_t start, uint64_t end, record_item *it,
                   pb_ctx *ctx) {
  pb_reader r = {blob, start, end};
  int rc;
  memset(it, 0, sizeof(*it));
  it->key.p = it->dtype.p = it->stype.p = it->data.p = empty_bytes;
  it->msg.p = blob + start;
  it->msg.n = end - start;
  ctx->cur = NULL; /* the key is not known until field 1 is read */
  while (r.pos < r.end) {
    uint64_t field, at = r.pos, s, len;
    int wt;
    if ((rc = pb_tag(&r, ctx, &field, &wt)) != CODEC_OK) return rc;
    if (field == 1 || field == 2) {
      if (wt != WT_LEN) return pb_wrong_type(ctx, field == 1 ? "Item.key" : "Item.value", wt, at);
      if ((rc = pb_len(&r, ctx, &s, &len)) != CODEC_OK) return rc;
      if (field == 1) {
        it->key.p = blob + s;
        it->key.n = len;
        ctx->cur = it;
      } else if ((rc = pb_array(blob, s, s + len, it, ctx, NULL)) != CODEC_OK) {
        return rc;
      }
    } else if ((rc = pb_skip(&r, ctx, field, wt, 0, at)) != CODEC_OK) {
      return rc;
    }
  }
  if (!codec_utf8_valid(it->key.p, it->key.n)) {
    ctx->cur = NULL; /* the key is not printable */
    return pb_error(ctx, CODEC_CORRUPT, "record key is not valid UTF-8", start);
  }
  ctx->cur = it;
  if (!codec_utf8_valid(it->dtype.p, it->dtype.n)) return pb_error(ctx, CODEC_CORRUPT, "record dtype is not valid UTF-8", start);
  if (!codec_utf8_valid(it->stype.p, it->stype.n)) return pb_error(ctx, CODEC_CORRUPT, "record stype is not valid UTF-8", start);
  return CODEC_OK;
}

int record_item_shape(const record_item *item, int64_t *shape) {
  /* Rescan the item: every `value` occurrence contributes its shape fields,
  ** in order (protobuf merge semantics). The item parsed once already. */
  pb_reader r = {item->msg.p, 0, item->msg.n};
  pb_ctx ctx = {NULL, -1, NULL};
  record_item scratch;
  memset(&scratch, 0, sizeof(scratch));
  while (r.pos < r.end) {
    uint64_t field, s, len;
    int wt;
    if (pb_tag(&r, &ctx, &field, &wt) != CODEC_OK) break;
    if (field == 2 && wt == WT_LEN) {
      if (pb_len(&r, &ctx, &s, &len) != CODEC_OK) break;
      if (pb_array(item->msg.p, s, s + len, &scratch, &ctx, shape) != CODEC_OK) break;
    } else if (pb_skip(&r, &ctx, field, wt, 0, 0) != CODEC_OK) {
      break;
    }
  }
  return scratch.ndim;
}

/* --- record ----------------------------------------------------------------- */

void record_init(record_t *rec) {
  rec->items = rec->small;
  rec->n = 0;
  rec->cap = (int)(sizeof(rec->small) / sizeof(rec->small[0]));
}

void record_clear(record_t *rec) {
  if (rec->items != rec->small) codec_free(rec->items);
  record_init(rec);
}

static record_item *record_push(record_t *rec) {
  if (rec->n == rec->cap) {
    int cap = rec->cap * 2;
    record_item *p;
    if (cap > 0x3fffffff) return NULL;
    if (rec->items == rec->small) {
      p = codec_malloc((uint64_t)cap * sizeof(record_item));
      if (p) memcpy(p, rec->small, sizeof(rec->small));
    } else {
      p = codec_realloc(rec->items, (uint64_t)cap * sizeof(record_item));
    }
    if (!p) return NULL;
    rec->items = p;
    rec->cap = cap;
  }
  return &rec->items[rec->n++];
}

static int key_eq(const record_item *a, const record_item *b) {
  return a->key.n == b->key.n && memcmp(a->key.p, b->key.p, (size_t)a->key.n) == 0;
}

static int duplicate_error(const record_t *rec, int first, int second, codec_err *err) {
  char q[CODEC_QUOTE_MAX];
  codec_quote(q, sizeof(q), rec->items[second].key.p, rec->items[second].key.n);
  return codec_fail(err, CODEC_CORRUPT, "record has duplicate key '%s' (items %d and %d)", q, first, second);
}

/* Keys must be unique: pairwise for small records, a hash set otherwise. */
static int check_unique_keys(const record_t *rec, codec_err *err) {
  keyset_t ks;
  int i, j, rc = CODEC_OK;
  if (rec->n <= 16) {
    for (i = 1; i < rec->n; i++)
      for (j = 0; j < i; j++)
        if (key_eq(&rec->items[i], &rec->items[j])) return duplicate_error(rec, j, i, err);
    return CODEC_OK;
  }
  keyset_init(&ks);
  for (i = 0; i < rec->n && rc == CODEC_OK; i++) {
    int first = keyset_get(&ks, rec->items[i].key.p, rec->items[i].key.n);
    if (first >= 0) rc = duplicate_error(rec, first, i, err);
    else if (keyset_put(&ks, rec->items[i].key.p, rec->items[i].key.n, i)) rc = codec_nomem(err);
  }
  keyset_free(&ks);
  return rc;
}

/* An item whose length runs past the end of the blob: find its key among
** the bytes that are there (the last complete key field, as parsing would),
** so the message can name it. Returns 1 and sets it->key when found. */
static int peek_truncated_key(const unsigned char *blob, uint64_t len_at, uint64_t n, record_item *it) {
  pb_reader r = {blob, len_at, n};
  pb_ctx quiet = {NULL, -1, NULL};
  uint64_t len, field, s;
  int wt, found = 0;
  if (pb_varint(&r, &len) != PB_OK) return 0;
  while (r.pos < r.end) {
    uint64_t at = r.pos;
    if (pb_tag(&r, &quiet, &field, &wt) != CODEC_OK) break;
    if (field == 1 && wt == WT_LEN) {
      if (pb_len(&r, &quiet, &s, &len) != CODEC_OK) break;
      if (!codec_utf8_valid(blob + s, len)) break;
      it->key.p = blob + s;
      it->key.n = len;
      found = 1;
    } else if (pb_skip(&r, &quiet, field, wt, 0, at) != CODEC_OK) {
      break;
    }
  }
  return found;
}

static int record_parse_items(record_t *rec, const unsigned char *blob, uint64_t n, codec_err *err) {
  pb_reader r = {blob, 0, n};
  pb_ctx ctx = {err, -1, NULL};
  int rc;
  rec->n = 0;
  while (r.pos < r.end) {
    uint64_t field, at = r.pos, s, len;
    int wt;
    ctx.item = -1;
    ctx.cur = NULL;
    if ((rc = pb_tag(&r, &ctx, &field, &wt)) != CODEC_OK) return rc;
    if (field == 1) {
      record_item *it;
      ctx.item = rec->n;
      if (wt != WT_LEN) return pb_wrong_type(&ctx, "ArrayRecord.items", wt, at);
      s = r.pos;
      if ((rc = pb_len(&r, &ctx, &s, &len)) != CODEC_OK) {
        record_item partial;
        memset(&partial, 0, sizeof(partial));
        if (rc == CODEC_CORRUPT && peek_truncated_key(blob, s, n, &partial)) {
          ctx.cur = &partial;
          return pb_error(&ctx, CODEC_CORRUPT, "record blob truncated", n);
        }
        return rc;
      }
      if (!(it = record_push(rec))) return codec_nomem(err);
      if ((rc = pb_item(blob, s, s + len, it, &ctx)) != CODEC_OK) return rc;
      it->offset = at;
    } else if ((rc = pb_skip(&r, &ctx, field, wt, 0, at)) != CODEC_OK) {
      return rc;
    }
  }
  return check_unique_keys(rec, err);
}

int record_parse(record_t *rec, const unsigned char *blob, uint64_t n, codec_err *err) {
  int rc = record_parse_items(rec, blob, n, err);
  /* A .npy where a record belongs is a common slip: say so, not which
  ** protobuf field its magic bytes make. */
  if (rc == CODEC_CORRUPT && n >= 6 && memcmp(blob, "\x93NUMPY", 6) == 0)
    return codec_fail(err, CODEC_CORRUPT, "got a .npy file, not a record: wrap it with ar('key', npy)");
  return rc;
}

int record_looks_like(const unsigned char *blob, uint64_t n) {
  pb_reader r = {blob, 0, n};
  codec_err err;
  pb_ctx ctx = {&err, -1, NULL};
  int items = 0;
  if (n == 0 || blob[0] != 0x0a) return 0;
  while (r.pos < r.end) {
    uint64_t field, at = r.pos, s, len;
    int wt;
    record_item it;
    if (pb_tag(&r, &ctx, &field, &wt) != CODEC_OK) return 0;
    if (field == 1) {
      if (wt != WT_LEN || pb_len(&r, &ctx, &s, &len) != CODEC_OK) return 0;
      if (pb_item(blob, s, s + len, &it, &ctx) != CODEC_OK) return 0;
      items++;
    } else if (pb_skip(&r, &ctx, field, wt, 0, at) != CODEC_OK) {
      return 0;
    }
  }
  return items > 0;
}

int record_find(const record_t *rec, const void *key, uint64_t klen) {
  int i;
  for (i = 0; i < rec->n; i++) {
    if (rec->items[i].key.n == klen && memcmp(rec->items[i].key.p, key, (size_t)klen) == 0) return i;
  }
  return -1;
}

int record_item_is_numpy(const record_item *item) {
  return item->stype.n == sizeof(RECORD_STYPE_NUMPY) - 1 &&
         memcmp(item->stype.p, RECORD_STYPE_NUMPY, sizeof(RECORD_STYPE_NUMPY) - 1) == 0;
}

/* --- UTF-8 ------------------------------------------------------------------- */

/* --- writing ------------------------------------------------------------------ */

static unsigned varint_size(uint64_t v) {
  unsigned n = 1;
  while (v >= 0x80) {
    v >>= 7;
    n++;
  }
  return n;
}

static void put_varint(buf_t *out, uint64_t v) {
  unsigned char tmp[10];
  unsigned n = 0;
  while (v >= 0x80) {
    tmp[n++] = (unsigned char)(v | 0x80);
    v >>= 7;
  }
  tmp[n++] = (unsigned char)v;
  buf_append(out, tmp, n);
}

/* A length-delimited field, omitted when empty (proto3 default). */
static uint64_t len_field_size(uint64_t len) { return len ? 1 + varint_size(len) + len : 0; }

static uint64_t packed_shape_size(const record_item_spec *spec) {
  uint64_t n = 0;
  int k;
  for (k = 0; k < spec->ndim; k++) n += varint_size((uint64_t)spec->shape[k]);
  return n;
}

static uint64_t array_size(const record_item_spec *spec) {
  return len_field_size(spec->dtype.n) + len_field_size(packed_shape_size(spec)) +
         len_field_size(spec->stype.n) + len_field_size(spec->data_head.n + spec->data.n);
}

static uint64_t item_body_size(const record_item_spec *spec) {
  uint64_t arr = array_size(spec);
  return len_field_size(spec->key.n) + 1 + varint_size(arr) + arr;
}

uint64_t record_item_encoded_size(const record_item_spec *spec) {
  uint64_t body = item_body_size(spec);
  return 1 + varint_size(body) + body;
}

static void put_len_field(buf_t *out, unsigned char tag, const unsigned char *p, uint64_t n) {
  if (!n) return;
  buf_putc(out, (char)tag);
  put_varint(out, n);
  buf_append(out, p, n);
}

void record_write_item_head(buf_t *out, const record_item_spec *spec) {
  uint64_t shape_len = packed_shape_size(spec), data_len = spec->data_head.n + spec->data.n;
  int k;
  buf_putc(out, 0x0a); /* ArrayRecord.items */
  put_varint(out, item_body_size(spec));
  put_len_field(out, 0x0a, spec->key.p, spec->key.n); /* Item.key */
  buf_putc(out, 0x12);                                 /* Item.value, always present */
  put_varint(out, array_size(spec));
  put_len_field(out, 0x0a, spec->dtype.p, spec->dtype.n); /* Array.dtype */
  if (shape_len) {                                         /* Array.shape, packed */
    buf_putc(out, 0x12);
    put_varint(out, shape_len);
    for (k = 0; k < spec->ndim; k++) put_varint(out, (uint64_t)spec->shape[k]);
  }
  put_len_field(out, 0x1a, spec->stype.p, spec->stype.n); /* Array.stype */
  if (data_len) { /* Array.data: tag and length; the bytes follow */
    buf_putc(out, 0x22);
    put_varint(out, data_len);
  }
}

void record_write_item(buf_t *out, const record_item_spec *spec) {
  record_write_item_head(out, spec);
  buf_append(out, spec->data_head.p, spec->data_head.n);
  buf_append(out, spec->data.p, spec->data.n);
}

void record_item_spec_from_item(record_item_spec *spec, const record_item *item, int64_t *shape) {
  memset(spec, 0, sizeof(*spec));
  spec->key = item->key;
  spec->dtype = item->dtype;
  spec->stype = item->stype;
  spec->data = item->data;
  spec->ndim = record_item_shape(item, shape);
  spec->shape = shape;
}
