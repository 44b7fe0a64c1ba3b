/* SPDX-License-Identifier: Apache-2.0 */
/*
** packed_decode.c — unpacking (packed.h): the skeleton and the arrays
** stored as they are (or equal to the base's) written in order into the
** destination; then every chunk of every array stored as planes, each on
** its own (its planes decompressed into a scratch area the size of a chunk,
** merged into place while it is in the cache), the chunks shared among the
** pool's threads (math/pool.h: the output's bytes do not depend on the
** split); then the check that the result is the BLOB that was packed, one
** XXH64 pass over it.
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
#include "math/pool.h"

#define PACKED_BLOB "packed record"

typedef struct decoder {
  const packed_view *v;
  const unsigned char *base;
  uint64_t base_n;
  record_t base_rec;
  ZSTD_DCtx *dctx;
  codec_err *err;
} decoder;

/* One chunk of an array stored as planes: where its frames start (`at`),
** where its items go, and its base's items (NULL: none). */
typedef struct chunk_job {
  const packed_entry *e;
  uint64_t c, at;
  unsigned char *out;
  const unsigned char *base;
} chunk_job;

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

static void emit(unsigned char *dst, const unsigned char *src, uint64_t n) {
  if (n) memmove(dst, src, (size_t)n);
}

/* One chunk: its planes decompressed into tmp (8 planes of a chunk) with
** dctx, merged into place. err gets the reason of a failure. */
static int unpack_chunk(const packed_view *v, const chunk_job *J, ZSTD_DCtx *dctx, unsigned char *tmp, codec_err *err) {
  static const int bp_mode[] = {0, BP_PLAIN, BP_DIFF, BP_XOR};
  const packed_entry *e = J->e;
  int planes = packed_entry_plane_count(e), k, rc;
  uint64_t chunk = (uint64_t)1 << v->h.chunk_log2, items = e->length / (uint64_t)e->width;
  uint64_t first = J->c * chunk, m = items - first < chunk ? items - first : chunk, at = J->at;
  unsigned char *pl[8];
  for (k = 0; k < 8; k++) pl[k] = tmp + (uint64_t)k * chunk;
  for (k = 0; k < planes; k++) {
    uint64_t size = packed_get32(v->blob + e->data + (J->c * (uint64_t)planes + (uint64_t)k) * 4);
    if ((rc = zst_decompress_exact(dctx, pl[k], m, v->blob + at, size, err)) != CODEC_OK) {
      char why[sizeof(err->msg)], q[CODEC_QUOTE_MAX];
      if (rc != CODEC_CORRUPT) return rc;
      memcpy(why, err->msg, sizeof(why));
      return codec_fail(err, CODEC_CORRUPT, PACKED_BLOB " corrupt at byte %llu (array '%s', chunk %llu, plane %d): %s",
                        (unsigned long long)at, codec_quote(q, sizeof(q), e->key.p, e->key.n), (unsigned long long)J->c,
                        k, why);
    }
    at += size;
  }
  if (e->mode == PACKED_LOSSY)
    bp_lossy_merge((const unsigned char *const *)pl, J->base, m, e->width, e->big, v->h.lossy, J->out);
  else
    bp_merge((const unsigned char *const *)pl, J->base, m, e->width, e->big, bp_mode[e->mode], J->out);
  return CODEC_OK;
}

/* The chunks, among the pool's threads: job j is the range [j * slot,
** (j + 1) * slot) of the pool's elements, so that parts hold whole jobs and
** a record of a few chunks stays on the caller. A part that fails marks its
** job and stops; the first failed job is then run again on its own, for
** the error every split gives. */
typedef struct chunk_work {
  const packed_view *v;
  const chunk_job *jobs;
  uint64_t slot;
  int *rc; /* per job: CODEC_OK, or its failure */
} chunk_work;

static void chunk_part(void *ctx, uint64_t begin, uint64_t end, unsigned char *scratch) {
  chunk_work *W = (chunk_work *)ctx;
  uint64_t j = begin / W->slot, last = end / W->slot;
  ZSTD_DCtx *dctx = zst_dctx();
  unsigned char *tmp = codec_malloc((uint64_t)8 << W->v->h.chunk_log2);
  codec_err err;
  (void)scratch;
  if (!dctx || !tmp) {
    W->rc[j] = CODEC_NOMEM;
  } else {
    for (; j < last; j++)
      if ((W->rc[j] = unpack_chunk(W->v, &W->jobs[j], dctx, tmp, &err)) != CODEC_OK) break;
  }
  ZSTD_freeDCtx(dctx);
  codec_free(tmp);
}

/* Every job, then the error of the first that failed (CODEC_OK: none). */
static int unpack_chunks(decoder *D, const chunk_job *jobs, uint64_t n) {
  chunk_work W;
  uint64_t j, slot = (uint64_t)1 << D->v->h.chunk_log2, total;
  int rc = CODEC_OK;
  if (n == 0) return CODEC_OK;
  if (size_mul(n, slot, &total) || !(W.rc = codec_malloc(n * sizeof(int)))) return codec_nomem(D->err);
  for (j = 0; j < n; j++) W.rc[j] = CODEC_OK;
  W.v = D->v;
  W.jobs = jobs;
  W.slot = slot;
  pool_run(total, slot, chunk_part, &W, NULL);
  for (j = 0; j < n && rc == CODEC_OK; j++) {
    if (W.rc[j] == CODEC_OK) continue;
    if (W.rc[j] == CODEC_NOMEM) {
      rc = codec_nomem(D->err);
    } else {
      ZSTD_DCtx *dctx = zst_dctx();
      unsigned char *tmp = codec_malloc((uint64_t)8 << D->v->h.chunk_log2);
      rc = dctx && tmp ? unpack_chunk(D->v, &jobs[j], dctx, tmp, D->err) : codec_nomem(D->err);
      ZSTD_freeDCtx(dctx);
      codec_free(tmp);
      if (rc == CODEC_OK) rc = codec_fail(D->err, CODEC_CORRUPT, PACKED_BLOB " corrupt"); /* cannot happen */
    }
  }
  codec_free(W.rc);
  return rc;
}

/* An entry into dst: stored as is or equal to the base's, now; stored as
** planes, its chunks appended to jobs (*n of them so far). */
static int unpack_entry(decoder *D, const packed_entry *e, unsigned char *dst, chunk_job *jobs, uint64_t *n) {
  const packed_view *v = D->v;
  const unsigned char *base = NULL;
  uint64_t chunks, c, at, chunk = (uint64_t)1 << v->h.chunk_log2;
  int planes, rc, k;
  if (e->mode != PACKED_RAW && e->mode != PACKED_PLANES && (rc = base_payload(D, e, &base)) != CODEC_OK) return rc;
  switch (e->mode) {
    case PACKED_RAW: emit(dst, v->blob + e->data, e->length); return CODEC_OK;
    case PACKED_SAME: emit(dst, base, e->length); return CODEC_OK;
    default: break;
  }
  planes = packed_entry_plane_count(e);
  chunks = packed_entry_chunks(v, e);
  at = e->data + chunks * (uint64_t)planes * 4;
  for (c = 0; c < chunks; c++) {
    chunk_job *J = &jobs[(*n)++];
    uint64_t first = c * chunk * (uint64_t)e->width;
    J->e = e;
    J->c = c;
    J->at = at;
    J->out = dst + first;
    J->base = base ? base + first : NULL;
    for (k = 0; k < planes; k++) at += packed_get32(v->blob + e->data + (c * (uint64_t)planes + (uint64_t)k) * 4);
  }
  return CODEC_OK;
}

int packed_decode_into(const packed_view *v, const unsigned char *base, uint64_t base_n, unsigned char *dst,
                       codec_err *err) {
  decoder D;
  chunk_job *jobs = NULL;
  uint64_t pos = 0, skel = 0, njobs = 0, n = 0;
  uint32_t i;
  int rc = CODEC_OK;
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
  /* packed_open checked every entry's chunks against its bytes: the count fits */
  for (i = 0; i < v->h.count; i++)
    if (packed_entry_plane_count(&v->e[i]) > 0) njobs += packed_entry_chunks(v, &v->e[i]);
  if (njobs && !(jobs = codec_malloc(njobs * sizeof(*jobs)))) {
    rc = codec_nomem(err);
    goto done;
  }
  for (i = 0; i < v->h.count && rc == CODEC_OK; i++) {
    const packed_entry *e = &v->e[i];
    emit(dst + pos, v->skeleton.p + skel, e->offset - pos);
    skel += e->offset - pos;
    rc = unpack_entry(&D, e, dst + e->offset, jobs, &n);
    pos = e->offset + e->length;
  }
  if (rc == CODEC_OK) {
    emit(dst + pos, v->skeleton.p + skel, v->h.size - pos);
    rc = unpack_chunks(&D, jobs, n);
  }
  if (rc == CODEC_OK && xxh64(dst, v->h.size, 0) != v->h.hash)
    rc = misfit(&D, "it does not unpack to the bytes it was packed from", 0, NULL);
done:
  codec_free(jobs);
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
