/* SPDX-License-Identifier: Apache-2.0 */
/*
** recorddict.c — RecordDict protobuf reader and canonical writer (see
** recorddict.h).
*/
#include "codec/recorddict.h"

#include "codec/keyset.h"
#include "codec/pb.h"

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
      } else { /* the last member set wins */
        it->kind = (int)field;
        it->record.p = len ? blob + s : empty_bytes;
        it->record.n = len;
        it->record_at = s;
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

void recorddict_clear(recorddict_t *rd) {
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
  rd->n = 0;
  while ((rc = pb_next_item(&r, &ctx, "RecordDict.items", rd->n, &at, &s, &len)) == PB_ITEM) {
    recorddict_item *it = buf_push_item(&rd->items, &rd->n, &rd->cap, rd->small, sizeof(*it));
    if (!it) return codec_nomem(err);
    if ((rc = parse_item(it, blob, s, s + len, &ctx)) != CODEC_OK) return rc;
    it->offset = at;
  }
  if (rc == CODEC_CORRUPT) {
    /* Another format where a RecordDict belongs: name its converter. */
    static const char *const hint[] = {NULL, "a .npy file", "a .npz archive", "a safetensors file"};
    static const char *const conv[] = {NULL, "ar('key', npy)", "ar_from_npz(blob)", "ar_from_safetensors(blob)"};
    int kind = codec_sniff(blob, n);
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

void recorddict_write_item(buf_t *out, codec_span name, int kind, codec_span record) {
  buf_putc(out, 0x0a);
  pb_put_varint(out, body_size(name.n, record.n));
  pb_put_len_field(out, 0x0a, name.p, name.n);
  buf_putc(out, (char)(kind << 3 | PB_WT_LEN)); /* written even when empty: a oneof member */
  pb_put_varint(out, record.n);
  buf_append(out, record.p, record.n);
}
