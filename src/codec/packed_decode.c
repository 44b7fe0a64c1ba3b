/* SPDX-License-Identifier: Apache-2.0 */
/*
** packed_decode.c — unpacking (packed.h): the skeleton and the arrays
** written in order into the destination, each array a chunk at a time (its
** planes decompressed into a scratch area the size of a chunk, merged into
** place while it is in the cache) and hashed as it is written, so the
** check that the result is the BLOB that was packed costs no second pass.
**
** The base is looked at only where an array needs it; a different base, or
** damaged bytes, show up as arrays that do not fit or as a hash that does
** not match. Either way the base's own hash tells the two apart, and the
** error says which: "wrong base" (with both object ids) or "corrupt".
*/
#include <stdio.h>
#include <string.h>

#include "codec/flower_object.h"
#include "codec/packed.h"
#include "codec/sha256.h"
#include "codec/xxh64.h"
#include "codec/zst.h"
#include "math/planes.h"

#define PACKED_BLOB "packed record"

typedef struct decoder {
  const packed_view *v;
  const unsigned char *base;
  uint64_t base_n;
  record_t base_rec;
  ZSTD_DCtx *dctx;
  unsigned char *tmp; /* 8 planes of a chunk */
  xxh64_state hash;
  codec_err *err;
} decoder;

/* The given base is not the one packed against: CODEC_RANGE, naming both
** by object id (the given one's computed here, off the normal path). */
static int wrong_base(decoder *D) {
  const packed_head *h = &D->v->h;
  char want[SHA256_HEX_SIZE], id[SHA256_HEX_SIZE], got[SHA256_HEX_SIZE + 64];
  record_t rec;
  codec_err tmp;
  int rc;
  sha256_hex(h->base_id, want);
  want[16] = 0;
  record_init(&rec);
  rc = record_parse(&rec, D->base, D->base_n, &tmp);
  if (rc == CODEC_OK) {
    fo_tree t;
    fo_tree_init(&t);
    rc = fo_deflate(&t, &rec, FO_CHUNK_SIZE, &tmp);
    if (rc == CODEC_OK) {
      sha256_hex(t.obj[t.n - 1].id, id);
      id[16] = 0;
      snprintf(got, sizeof(got), "object %s... (%llu bytes)", id, (unsigned long long)D->base_n);
    }
    fo_tree_free(&t);
  } else if (rc == CODEC_CORRUPT) {
    snprintf(got, sizeof(got), "%llu bytes that are not a record", (unsigned long long)D->base_n);
    rc = CODEC_OK;
  }
  record_clear(&rec);
  if (rc != CODEC_OK) return codec_fail_rc(D->err, rc);
  return codec_fail(D->err, CODEC_RANGE, "wrong base: packed against object %s... (%llu bytes), got %s", want,
                    (unsigned long long)h->base_size, got);
}

/* Something does not fit: the base, when it is not the one packed against,
** else the packed bytes. */
static int misfit(decoder *D, const char *what, uint64_t at, const packed_entry *e) {
  char q[CODEC_QUOTE_MAX];
  if (D->base && (D->v->h.flags & PACKED_HAS_BASE) && xxh64(D->base, D->base_n, 0) != D->v->h.base_hash)
    return wrong_base(D);
  if (!e) return codec_fail(D->err, CODEC_CORRUPT, PACKED_BLOB " corrupt: %s", what);
  return codec_fail(D->err, CODEC_CORRUPT, PACKED_BLOB " corrupt at byte %llu (array '%s'): %s", (unsigned long long)at,
                    codec_quote(q, sizeof(q), e->key.p, e->key.n), what);
}

/* The base's payload for an entry: same key, same length. */
static int base_payload(decoder *D, const packed_entry *e, const unsigned char **p) {
  packed_payload pl;
  int i = record_find(&D->base_rec, e->key.p, e->key.n);
  if (i < 0) return misfit(D, "the base has no array of this key", e->data, e);
  packed_item_payload(&D->base_rec.items[i], &pl);
  if (pl.bytes.n != e->length) return misfit(D, "the base's array has another size", e->data, e);
  *p = pl.bytes.p;
  return CODEC_OK;
}

static void emit(decoder *D, unsigned char *dst, const unsigned char *src, uint64_t n) {
  if (n) memmove(dst, src, (size_t)n);
  xxh64_update(&D->hash, dst, n);
}

/* One entry whose planes are zstd frames, into dst (e->length bytes). */
static int unpack_planes(decoder *D, const packed_entry *e, const unsigned char *base, unsigned char *dst) {
  const packed_view *v = D->v;
  static const int bp_mode[] = {0, BP_PLAIN, BP_DIFF, BP_XOR};
  int planes = packed_entry_plane_count(e), k, rc;
  uint64_t chunk = (uint64_t)1 << v->h.chunk_log2, items = e->length / (uint64_t)e->width;
  uint64_t chunks = packed_entry_chunks(v, e), c, at = e->data + chunks * (uint64_t)planes * 4;
  unsigned char *pl[8];
  for (k = 0; k < 8; k++) pl[k] = D->tmp + (uint64_t)k * chunk;
  for (c = 0; c < chunks; c++) {
    uint64_t first = c * chunk, m = items - first < chunk ? items - first : chunk;
    unsigned char *out = dst + first * (uint64_t)e->width;
    const unsigned char *b = base ? base + first * (uint64_t)e->width : NULL;
    for (k = 0; k < planes; k++) {
      uint64_t size = packed_get32(v->blob + e->data + (c * (uint64_t)planes + (uint64_t)k) * 4);
      if ((rc = zst_decompress_exact(D->dctx, pl[k], m, v->blob + at, size, D->err)) != CODEC_OK) {
        char why[sizeof(D->err->msg)], q[CODEC_QUOTE_MAX];
        if (rc != CODEC_CORRUPT) return rc;
        memcpy(why, D->err->msg, sizeof(why));
        return codec_fail(
            D->err, CODEC_CORRUPT, PACKED_BLOB " corrupt at byte %llu (array '%s', chunk %llu, plane %d): %s",
            (unsigned long long)at, codec_quote(q, sizeof(q), e->key.p, e->key.n), (unsigned long long)c, k, why);
      }
      at += size;
    }
    if (e->mode == PACKED_LOSSY)
      bp_lossy_merge((const unsigned char *const *)pl, b, m, e->width, e->big, v->h.lossy, out);
    else
      bp_merge((const unsigned char *const *)pl, b, m, e->width, e->big, bp_mode[e->mode], out);
    xxh64_update(&D->hash, out, m * (uint64_t)e->width);
  }
  return CODEC_OK;
}

static int unpack_entry(decoder *D, const packed_entry *e, unsigned char *dst) {
  const unsigned char *base = NULL;
  int rc;
  if (e->mode != PACKED_RAW && e->mode != PACKED_PLANES && (rc = base_payload(D, e, &base)) != CODEC_OK) return rc;
  switch (e->mode) {
    case PACKED_RAW: emit(D, dst, D->v->blob + e->data, e->length); return CODEC_OK;
    case PACKED_SAME: emit(D, dst, base, e->length); return CODEC_OK;
    default: return unpack_planes(D, e, base, dst);
  }
}

int packed_decode_into(const packed_view *v, const unsigned char *base, uint64_t base_n, unsigned char *dst,
                       codec_err *err) {
  decoder D;
  uint64_t pos = 0, skel = 0;
  uint32_t i;
  int rc = CODEC_OK, chunked = 0;
  memset(&D, 0, sizeof(D));
  D.v = v;
  D.err = err;
  record_init(&D.base_rec);
  if (!(v->h.flags & PACKED_HAS_BASE)) {
    base = NULL; /* not needed: not looked at */
  } else if (!base) {
    char id[SHA256_HEX_SIZE];
    return codec_fail(err, CODEC_RANGE, "needs its base, the record of object id %s (%llu bytes)",
                      sha256_hex(v->h.base_id, id), (unsigned long long)v->h.base_size);
  }
  D.base = base;
  D.base_n = base_n;
  if (base) {
    /* the base parsed when it was packed against: one that does not is another */
    if (base_n == v->h.base_size) rc = record_parse(&D.base_rec, base, base_n, err);
    if (rc == CODEC_NOMEM) goto done;
    if (base_n != v->h.base_size || rc != CODEC_OK) {
      rc = wrong_base(&D);
      goto done;
    }
  }
  for (i = 0; i < v->h.count; i++) chunked |= packed_entry_plane_count(&v->e[i]) > 0;
  if (chunked && (!(D.dctx = zst_dctx()) || !(D.tmp = codec_malloc((uint64_t)8 << v->h.chunk_log2)))) {
    rc = codec_nomem(err);
    goto done;
  }
  xxh64_init(&D.hash, 0);
  for (i = 0; i < v->h.count && rc == CODEC_OK; i++) {
    const packed_entry *e = &v->e[i];
    emit(&D, dst + pos, v->skeleton.p + skel, e->offset - pos);
    skel += e->offset - pos;
    rc = unpack_entry(&D, e, dst + e->offset);
    pos = e->offset + e->length;
  }
  if (rc == CODEC_OK) {
    emit(&D, dst + pos, v->skeleton.p + skel, v->h.size - pos);
    if (xxh64_digest(&D.hash) != v->h.hash)
      rc = misfit(&D, "it does not unpack to the bytes it was packed from", 0, NULL);
  }
done:
  ZSTD_freeDCtx(D.dctx);
  codec_free(D.tmp);
  record_clear(&D.base_rec);
  return rc;
}

int packed_decode(buf_t *out, const unsigned char *p, uint64_t n, const unsigned char *base, uint64_t base_n,
                  codec_err *err) {
  packed_view v;
  uint64_t start = out->n, limit = out->limit > out->n ? out->limit - out->n : 0;
  unsigned char *dst;
  int rc;
  packed_view_init(&v);
  rc = packed_open(&v, p, n, limit, err);
  if (rc == CODEC_OK) {
    if (v.h.size == 0) {
      dst = (unsigned char *)buf_at(out, out->n); /* nothing to write */
    } else if (!(dst = buf_extend(out, v.h.size))) {
      rc = codec_fail_rc(err, out->rc);
    }
    if (rc == CODEC_OK) rc = packed_decode_into(&v, base, base_n, dst, err);
    if (rc != CODEC_OK) out->n = start;
  }
  packed_view_clear(&v);
  return rc;
}
