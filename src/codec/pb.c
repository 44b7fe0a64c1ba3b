/* SPDX-License-Identifier: Apache-2.0 */
/*
** pb.c — protobuf wire-format reading and writing helpers (see pb.h).
*/
#include "codec/pb.h"

#include <stdio.h>
#include <string.h>

int pb_varint(pb_reader *r, uint64_t *out) {
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

int pb_error(const pb_ctx *ctx, int code, const char *what, uint64_t at) {
  char where[CODEC_QUOTE_MAX + 40];
  where[0] = 0;
  if (ctx->item >= 0) {
    if (ctx->key.p) {
      char q[CODEC_QUOTE_MAX];
      codec_quote(q, sizeof(q), ctx->key.p, ctx->key.n);
      snprintf(where, sizeof(where), " (item %d, key '%s')", ctx->item, q);
    } else {
      snprintf(where, sizeof(where), " (item %d)", ctx->item);
    }
  }
  return codec_fail(ctx->err, code, "%s at byte %llu%s", what, (unsigned long long)at, where);
}

/* "<blob> <problem>" at byte `at`. */
static int blob_error(const pb_ctx *ctx, const char *problem, uint64_t at) {
  char what[160];
  snprintf(what, sizeof(what), "%s %s", ctx->blob, problem);
  return pb_error(ctx, CODEC_CORRUPT, what, at);
}

int pb_read_error(const pb_ctx *ctx, int rc, const pb_reader *r, uint64_t start) {
  if (rc == PB_VARINT_TOO_LONG) return blob_error(ctx, "has a varint longer than 10 bytes", start);
  return blob_error(ctx, "truncated", r->end);
}

/* As protobuf (upb) reads tags: a varint of at most 5 bytes, field numbers
** 1 to 2^29 - 1, wire types 0 to 5. */
int pb_tag(pb_reader *r, const pb_ctx *ctx, uint64_t *field, int *wt) {
  uint64_t start = r->pos, tag = 0;
  int k;
  for (k = 0;; k++) {
    unsigned char b;
    if (k == PB_MAX_TAG_BYTES) return blob_error(ctx, "has a tag longer than 5 bytes", start);
    if (r->pos >= r->end) return blob_error(ctx, "truncated", r->end);
    b = r->blob[r->pos++];
    tag |= (uint64_t)(b & 0x7f) << (7 * k);
    if (!(b & 0x80)) break;
  }
  *field = tag >> 3;
  *wt = (int)(tag & 7);
  if (*field == 0 || *field > 536870911u) return blob_error(ctx, "has an invalid field number", start);
  if (*wt > PB_WT_I32) {
    char what[64];
    snprintf(what, sizeof(what), "has invalid wire type %d", *wt);
    return blob_error(ctx, what, start);
  }
  return CODEC_OK;
}

int pb_len(pb_reader *r, const pb_ctx *ctx, uint64_t *start, uint64_t *len) {
  uint64_t at = r->pos;
  int rc = pb_varint(r, len);
  if (rc) return pb_read_error(ctx, rc, r, at);
  if (*len > r->end - r->pos) return blob_error(ctx, "truncated", r->end);
  *start = r->pos;
  r->pos += *len;
  return CODEC_OK;
}

int pb_skip(pb_reader *r, const pb_ctx *ctx, uint64_t field, int wt, int depth, uint64_t tag_at) {
  uint64_t at = r->pos, v, s, len;
  int rc;
  switch (wt) {
    case PB_WT_VARINT: rc = pb_varint(r, &v); return rc ? pb_read_error(ctx, rc, r, at) : CODEC_OK;
    case PB_WT_I64:
    case PB_WT_I32: {
      uint64_t size = wt == PB_WT_I64 ? 8 : 4;
      if (size > r->end - r->pos) return blob_error(ctx, "truncated", r->end);
      r->pos += size;
      return CODEC_OK;
    }
    case PB_WT_LEN: return pb_len(r, ctx, &s, &len);
    case PB_WT_SGROUP:
      if (depth >= PB_MAX_GROUP_DEPTH) return blob_error(ctx, "nests groups too deeply", tag_at);
      for (;;) {
        uint64_t f, inner_at = r->pos;
        int w;
        if (r->pos >= r->end) return blob_error(ctx, "truncated inside a group", r->end);
        if ((rc = pb_tag(r, ctx, &f, &w)) != CODEC_OK) return rc;
        if (w == PB_WT_EGROUP) {
          if (f != field) return blob_error(ctx, "has a mismatched end-group", inner_at);
          return CODEC_OK;
        }
        if ((rc = pb_skip(r, ctx, f, w, depth + 1, inner_at)) != CODEC_OK) return rc;
      }
    default: /* PB_WT_EGROUP without a start */ return blob_error(ctx, "has an unexpected end-group", tag_at);
  }
}

int pb_wrong_type(const pb_ctx *ctx, const char *field, int wt, uint64_t at) {
  char what[96];
  snprintf(what, sizeof(what), "has wrong wire type %d for %s", wt, field);
  return blob_error(ctx, what, at);
}

int pb_next_item(pb_reader *r, pb_ctx *ctx, const char *field, int item, uint64_t *at, uint64_t *start, uint64_t *len) {
  int rc;
  while (r->pos < r->end) {
    uint64_t f;
    int wt;
    *at = r->pos;
    ctx->item = -1;
    ctx->key.p = NULL;
    if ((rc = pb_tag(r, ctx, &f, &wt)) != CODEC_OK) return rc;
    if (f == 1) {
      ctx->item = item;
      if (wt != PB_WT_LEN) return pb_wrong_type(ctx, field, wt, *at);
      return (rc = pb_len(r, ctx, start, len)) != CODEC_OK ? rc : PB_ITEM;
    }
    if ((rc = pb_skip(r, ctx, f, wt, 0, *at)) != CODEC_OK) return rc;
  }
  return CODEC_OK;
}

int pb_join(codec_span *dst, pb_owned *own, const unsigned char *p, uint64_t n) {
  if (!n) return CODEC_OK;
  if (!dst->n) {
    dst->p = p;
    dst->n = n;
    return CODEC_OK;
  }
  if (dst->p != own->p || dst->n + n > own->cap) {
    uint64_t cap = 2 * (dst->n + n);
    unsigned char *q;
    if (dst->p == own->p) {
      if (!(q = codec_realloc(own->p, cap))) return CODEC_NOMEM;
    } else {
      if (cap > own->cap || !own->p) {
        if (!(q = codec_malloc(cap))) return CODEC_NOMEM;
        codec_free(own->p);
      } else {
        q = own->p;
        cap = own->cap;
      }
      memcpy(q, dst->p, (size_t)dst->n);
    }
    own->p = q;
    own->cap = cap;
    dst->p = q;
  }
  memcpy(own->p + dst->n, p, (size_t)n);
  dst->n += n;
  return CODEC_OK;
}

void pb_owned_free(pb_owned *own) {
  codec_free(own->p);
  own->p = NULL;
  own->cap = 0;
}

unsigned pb_varint_size(uint64_t v) {
  unsigned n = 1;
  while (v >= 0x80) {
    v >>= 7;
    n++;
  }
  return n;
}

void pb_put_varint(buf_t *out, uint64_t v) {
  unsigned char tmp[10];
  unsigned n = 0;
  while (v >= 0x80) {
    tmp[n++] = (unsigned char)(v | 0x80);
    v >>= 7;
  }
  tmp[n++] = (unsigned char)v;
  buf_append(out, tmp, n);
}

uint64_t pb_len_field_size(uint64_t len) { return len ? 1 + pb_varint_size(len) + len : 0; }

void pb_put_len_field(buf_t *out, unsigned char tag, const unsigned char *p, uint64_t n) {
  if (!n) return;
  buf_putc(out, (char)tag);
  pb_put_varint(out, n);
  buf_append(out, p, n);
}
