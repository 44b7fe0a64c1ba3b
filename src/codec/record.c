/* SPDX-License-Identifier: Apache-2.0 */
/*
** record.c — Flower ArrayRecord protobuf reader and canonical writer
** (see record.h for the message and the rules).
*/
#include "codec/record.h"

#include "codec/keyset.h"
#include "codec/packed.h"
#include "codec/pb.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* What reader errors call the bytes. */
#define RECORD_BLOB "record blob"

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
static int pb_array(const unsigned char *blob, uint64_t start, uint64_t end, record_item *it, const pb_ctx *ctx,
                    int64_t *shape_out) {
  pb_reader r = {blob, start, end};
  int rc;
  while (r.pos < r.end) {
    uint64_t field, at = r.pos, s, len;
    int wt;
    if ((rc = pb_tag(&r, ctx, &field, &wt)) != CODEC_OK) return rc;
    if (field == 2) { /* shape */
      if (wt == PB_WT_VARINT) {
        uint64_t v, vat = r.pos;
        if ((rc = pb_varint(&r, &v)) != PB_OK) return pb_read_error(ctx, rc, &r, vat);
        if ((rc = pb_shape_value(v, ctx, vat, &it->ndim, shape_out)) != CODEC_OK) return rc;
      } else if (wt == PB_WT_LEN) {
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
      if (wt != PB_WT_LEN) {
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
static int pb_item(const unsigned char *blob, uint64_t start, uint64_t end, record_item *it, pb_ctx *ctx) {
  pb_reader r = {blob, start, end};
  int rc;
  memset(it, 0, sizeof(*it));
  it->key.p = it->dtype.p = it->stype.p = it->data.p = empty_bytes;
  it->msg.p = blob + start;
  it->msg.n = end - start;
  ctx->key.p = NULL; /* the key is not known until field 1 is read */
  while (r.pos < r.end) {
    uint64_t field, at = r.pos, s, len;
    int wt;
    if ((rc = pb_tag(&r, ctx, &field, &wt)) != CODEC_OK) return rc;
    if (field == 1 || field == 2) {
      if (wt != PB_WT_LEN) return pb_wrong_type(ctx, field == 1 ? "Item.key" : "Item.value", wt, at);
      if ((rc = pb_len(&r, ctx, &s, &len)) != CODEC_OK) return rc;
      if (field == 1) {
        it->key.p = blob + s;
        it->key.n = len;
        ctx->key = it->key;
      } else if ((rc = pb_array(blob, s, s + len, it, ctx, NULL)) != CODEC_OK) {
        return rc;
      }
    } else if ((rc = pb_skip(&r, ctx, field, wt, 0, at)) != CODEC_OK) {
      return rc;
    }
  }
  if (!codec_utf8_valid(it->key.p, it->key.n)) {
    ctx->key.p = NULL; /* the key is not printable */
    return pb_error(ctx, CODEC_CORRUPT, "record key is not valid UTF-8", start);
  }
  ctx->key = it->key;
  if (!codec_utf8_valid(it->dtype.p, it->dtype.n))
    return pb_error(ctx, CODEC_CORRUPT, "record dtype is not valid UTF-8", start);
  if (!codec_utf8_valid(it->stype.p, it->stype.n))
    return pb_error(ctx, CODEC_CORRUPT, "record stype is not valid UTF-8", start);
  return CODEC_OK;
}

int record_item_shape(const record_item *item, int64_t *shape) {
  /* Rescan the item: every `value` occurrence contributes its shape fields,
  ** in order (protobuf merge semantics). The item parsed once already. */
  pb_reader r = {item->msg.p, 0, item->msg.n};
  pb_ctx ctx = {NULL, RECORD_BLOB, -1, {NULL, 0}};
  record_item scratch;
  memset(&scratch, 0, sizeof(scratch));
  while (r.pos < r.end) {
    uint64_t field, s, len;
    int wt;
    if (pb_tag(&r, &ctx, &field, &wt) != CODEC_OK) break;
    if (field == 2 && wt == PB_WT_LEN) {
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

static int duplicate_error(const record_t *rec, int first, int second, codec_err *err) {
  char q[CODEC_QUOTE_MAX];
  codec_quote(q, sizeof(q), rec->items[second].key.p, rec->items[second].key.n);
  return codec_fail(err, CODEC_CORRUPT, "record has duplicate key '%s' (items %d and %d)", q, first, second);
}

/* Keys must be unique. */
static int check_unique_keys(const record_t *rec, codec_err *err) {
  int first, second;
  if (keyset_find_duplicate(rec->items, rec->n, sizeof(record_item), offsetof(record_item, key), &first, &second))
    return codec_nomem(err);
  return second < 0 ? CODEC_OK : duplicate_error(rec, first, second, err);
}

/* An item whose length runs past the end of the blob: find its key among
** the bytes that are there (the last complete key field, as parsing would),
** so the message can name it. Returns 1 and sets it->key when found. */
static int peek_truncated_key(const unsigned char *blob, uint64_t len_at, uint64_t n, record_item *it) {
  pb_reader r = {blob, len_at, n};
  pb_ctx quiet = {NULL, RECORD_BLOB, -1, {NULL, 0}};
  uint64_t len, field, s;
  int wt, found = 0;
  if (pb_varint(&r, &len) != PB_OK) return 0;
  while (r.pos < r.end) {
    uint64_t at = r.pos;
    if (pb_tag(&r, &quiet, &field, &wt) != CODEC_OK) break;
    if (field == 1 && wt == PB_WT_LEN) {
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
  pb_ctx ctx = {err, RECORD_BLOB, -1, {NULL, 0}};
  int rc;
  rec->n = 0;
  while (r.pos < r.end) {
    uint64_t field, at = r.pos, s, len;
    int wt;
    ctx.item = -1;
    ctx.key.p = NULL;
    if ((rc = pb_tag(&r, &ctx, &field, &wt)) != CODEC_OK) return rc;
    if (field == 1) {
      record_item *it;
      ctx.item = rec->n;
      if (wt != PB_WT_LEN) return pb_wrong_type(&ctx, "ArrayRecord.items", wt, at);
      s = r.pos;
      if ((rc = pb_len(&r, &ctx, &s, &len)) != CODEC_OK) {
        record_item partial;
        memset(&partial, 0, sizeof(partial));
        if (rc == CODEC_CORRUPT && peek_truncated_key(blob, s, n, &partial)) {
          ctx.key = partial.key;
          return pb_error(&ctx, CODEC_CORRUPT, "record blob truncated", n);
        }
        return rc;
      }
      if (!(it = buf_push_item(&rec->items, &rec->n, &rec->cap, rec->small, sizeof(*it)))) return codec_nomem(err);
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
  /* A .npy, .npz or safetensors file where a record belongs is a common
  ** slip: say so, and what converts it, not which protobuf field its magic
  ** bytes make. */
  if (rc != CODEC_CORRUPT) return rc;
  switch (codec_sniff(blob, n)) {
    case CODEC_SNIFF_NPY:
      return codec_fail(err, CODEC_CORRUPT, "got a .npy file, not a record: wrap it with ar('key', npy)");
    case CODEC_SNIFF_NPZ:
      return codec_fail(err, CODEC_CORRUPT, "got a .npz archive, not a record: convert it with ar_from_npz(blob)");
    case CODEC_SNIFF_SAFETENSORS:
      return codec_fail(err, CODEC_CORRUPT,
                        "got a safetensors file, not a record: convert it with ar_from_safetensors(blob)");
    case CODEC_SNIFF_PACKED: {
      char msg[sizeof(err->msg)];
      return codec_fail(err, CODEC_CORRUPT, "%s", packed_misread(msg, sizeof(msg), blob, n, PACKED_RECORD));
    }
    default: return rc;
  }
}

int record_looks_like(const unsigned char *blob, uint64_t n) {
  pb_reader r = {blob, 0, n};
  pb_ctx ctx = {NULL, RECORD_BLOB, -1, {NULL, 0}}; /* quiet: no message */
  int items = 0;
  if (n == 0 || blob[0] != 0x0a) return 0;
  while (r.pos < r.end) {
    uint64_t field, at = r.pos, s, len;
    int wt;
    record_item it;
    if (pb_tag(&r, &ctx, &field, &wt) != CODEC_OK) return 0;
    if (field == 1) {
      if (wt != PB_WT_LEN || pb_len(&r, &ctx, &s, &len) != CODEC_OK) return 0;
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

/* --- writing ------------------------------------------------------------------ */

static uint64_t packed_shape_size(const record_item_spec *spec) {
  uint64_t n = 0;
  int k;
  for (k = 0; k < spec->ndim; k++) n += pb_varint_size((uint64_t)spec->shape[k]);
  return n;
}

static uint64_t array_size(const record_item_spec *spec) {
  return pb_len_field_size(spec->dtype.n) + pb_len_field_size(packed_shape_size(spec)) +
         pb_len_field_size(spec->stype.n) + pb_len_field_size(spec->data_head.n + spec->data.n);
}

static uint64_t item_body_size(const record_item_spec *spec) {
  uint64_t arr = array_size(spec);
  return pb_len_field_size(spec->key.n) + 1 + pb_varint_size(arr) + arr;
}

uint64_t record_item_encoded_size(const record_item_spec *spec) {
  uint64_t body = item_body_size(spec);
  return 1 + pb_varint_size(body) + body;
}

void record_write_item_head(buf_t *out, const record_item_spec *spec) {
  uint64_t shape_len = packed_shape_size(spec), data_len = spec->data_head.n + spec->data.n;
  int k;
  buf_putc(out, 0x0a); /* ArrayRecord.items */
  pb_put_varint(out, item_body_size(spec));
  pb_put_len_field(out, 0x0a, spec->key.p, spec->key.n); /* Item.key */
  buf_putc(out, 0x12);                                   /* Item.value, always present */
  pb_put_varint(out, array_size(spec));
  pb_put_len_field(out, 0x0a, spec->dtype.p, spec->dtype.n); /* Array.dtype */
  if (shape_len) {                                           /* Array.shape, packed */
    buf_putc(out, 0x12);
    pb_put_varint(out, shape_len);
    for (k = 0; k < spec->ndim; k++) pb_put_varint(out, (uint64_t)spec->shape[k]);
  }
  pb_put_len_field(out, 0x1a, spec->stype.p, spec->stype.n); /* Array.stype */
  if (data_len) {                                            /* Array.data: tag and length; the bytes follow */
    buf_putc(out, 0x22);
    pb_put_varint(out, data_len);
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
