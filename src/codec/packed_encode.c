/* SPDX-License-Identifier: Apache-2.0 */
/*
** packed_encode.c — packing an ArrayRecord or a RecordDict (packed.h).
**
** One pass over the arrays, in the BLOB's order: each payload's mode is
** chosen from estimates (math/planes.h's bp_estimate: the order-0 entropy
** of each candidate's planes on a sample of the array), the chosen one is
** written into the result, and it falls back to raw when it came out no
** smaller. The meta section goes last, so the data needs no copy. A large
** payload's chunks (exact modes) are compressed among the pool's threads
** (math/pool.h), each into a slot of its own, then laid out in order: every
** chunk is one zstd frame per plane made alone, so the bytes are the same
** on any number of threads.
*/
#include <string.h>

#include "codec/flower_object.h"
#include "codec/packed.h"
#include "codec/recorddict.h"
#include "codec/xxh64.h"
#include "codec/zst.h"
#include "math/planes.h"
#include "math/pool.h"

/* One array payload of the BLOB being packed. */
typedef struct span {
  codec_span key;
  packed_payload pl;
} span;

typedef struct spans {
  span *s;
  uint32_t n, cap;
} spans;

typedef struct encoder {
  buf_t *out;
  uint64_t start; /* where the packed BLOB starts in out */
  const packed_options *opt;
  codec_err *err;
  const unsigned char *blob;
  record_t base;
  int has_base;
  ZSTD_CCtx *cctx;
  unsigned char *tmp; /* 8 planes of a chunk, then a chunk of items */
  buf_t meta, skel;   /* the meta section's entries, and its skeleton */
  double max_error;
  xxh64_state hash; /* of what the BLOB unpacks to, so far */
} encoder;

/* The record's payloads that hold bytes (an empty one, which a record may
** point at a constant for, stays in the skeleton: nothing to cut). */
static int push_record(spans *sp, const record_t *rec, const unsigned char *blob, uint64_t n) {
  int i;
  for (i = 0; i < rec->n; i++) {
    packed_payload pl;
    uintptr_t at, start = (uintptr_t)blob;
    packed_item_payload(&rec->items[i], &pl);
    at = (uintptr_t)pl.bytes.p;
    if (pl.bytes.n == 0 || at < start || at - start > n || pl.bytes.n > n - (at - start)) continue;
    if (sp->n == sp->cap && buf_grow(&sp->s, &sp->cap, sizeof(*sp->s))) return CODEC_NOMEM;
    sp->s[sp->n].key = rec->items[i].key;
    sp->s[sp->n++].pl = pl;
  }
  return CODEC_OK;
}

/* Every array payload of the BLOB, in order. */
static int collect(spans *sp, int kind, const unsigned char *blob, uint64_t n, codec_err *err) {
  record_t rec;
  int rc, i;
  record_init(&rec);
  if (kind == PACKED_RECORD) {
    if ((rc = record_parse(&rec, blob, n, err)) == CODEC_OK && push_record(sp, &rec, blob, n)) rc = codec_nomem(err);
  } else {
    recorddict_t rd;
    recorddict_init(&rd);
    rc = recorddict_parse(&rd, blob, n, err);
    for (i = 0; rc == CODEC_OK && i < rd.n; i++) {
      const recorddict_item *it = &rd.items[i];
      /* A record written in several pieces stays in the skeleton as it is. */
      if (it->kind != RECORDDICT_ARRAY || recorddict_item_merged(it, blob)) continue;
      if ((rc = record_parse(&rec, it->record.p, it->record.n, err)) != CODEC_OK) {
        char label[CODEC_QUOTE_MAX + 32], why[sizeof(err->msg)];
        memcpy(why, err->msg, sizeof(why));
        recorddict_item_label(label, sizeof(label), it->name, it->kind);
        codec_fail(err, rc, "%s (at byte %llu): %s", label, (unsigned long long)it->record_at, why);
      } else if (push_record(sp, &rec, blob, n)) {
        rc = codec_nomem(err);
      }
    }
    recorddict_clear(&rd);
  }
  record_clear(&rec);
  return rc;
}

/* The base's payload for a key, when it can serve as one: same length,
** item width and byte order. NULL otherwise. */
static const unsigned char *base_payload(const encoder *E, const span *s, int *real) {
  packed_payload b;
  int i;
  if (!E->has_base || (i = record_find(&E->base, s->key.p, s->key.n)) < 0) return NULL;
  packed_item_payload(&E->base.items[i], &b);
  if (b.bytes.n != s->pl.bytes.n || b.width != s->pl.width || b.big != s->pl.big) return NULL;
  *real = b.real && s->pl.real;
  return b.bytes.p;
}

/* The chunks of one payload in an exact mode, compressed in parallel:
** chunk c's planes go to slot + c * stride, their sizes to size[c * planes
** + k]. A part that fails (memory) sets rc. */
typedef struct plane_work {
  const span *s;
  const unsigned char *base;
  int mode, level; /* the payload's width is its plane count (exact modes only) */
  uint64_t chunk, chunks, stride;
  unsigned char *slot;
  uint64_t *size;
  ZSTD_CCtx *cctx;    /* the encoder's, for a part that is the whole payload */
  unsigned char *tmp; /* the encoder's, likewise */
  int rc;
} plane_work;

static void plane_part(void *ctx, uint64_t begin, uint64_t end, unsigned char *scratch) {
  static const int bp_mode[] = {0, BP_PLAIN, BP_DIFF, BP_XOR};
  plane_work *W = (plane_work *)ctx;
  const span *s = W->s;
  int width = s->pl.width, k, whole = begin == 0 && end == W->chunks * W->chunk;
  uint64_t items = s->pl.bytes.n / (uint64_t)width, c;
  ZSTD_CCtx *cctx = whole ? W->cctx : zst_cctx(W->level);
  unsigned char *tmp = whole ? W->tmp : codec_malloc((uint64_t)8 * W->chunk), *pl[8];
  (void)scratch;
  if (!cctx || !tmp) {
    W->rc = CODEC_NOMEM;
  } else {
    for (k = 0; k < 8; k++) pl[k] = tmp + (uint64_t)k * W->chunk;
    for (c = begin / W->chunk; c < end / W->chunk; c++) {
      uint64_t first = c * W->chunk, m = items - first < W->chunk ? items - first : W->chunk, at = 0;
      bp_split(s->pl.bytes.p + first * (uint64_t)width, W->base ? W->base + first * (uint64_t)width : NULL, m, width,
               s->pl.big, bp_mode[W->mode], pl);
      for (k = 0; k < width; k++) {
        size_t got = ZSTD_compress2(cctx, W->slot + c * W->stride + at, W->stride - at, pl[k], (size_t)m);
        if (ZSTD_isError(got)) { /* the bound holds: only memory can fail */
          W->rc = CODEC_NOMEM;
          break;
        }
        W->size[c * (uint64_t)width + (uint64_t)k] = got;
        at += got;
      }
    }
  }
  if (!whole) {
    ZSTD_freeCCtx(cctx);
    codec_free(tmp);
  }
}

/* An exact mode's planes of a payload large enough to split: compressed
** among the pool's threads, then written as write_planes writes them. */
static int write_planes_parallel(encoder *E, const span *s, const unsigned char *base, int mode, uint64_t *stored) {
  buf_t *out = E->out;
  plane_work W;
  int width = s->pl.width, k;
  uint64_t items = s->pl.bytes.n / (uint64_t)width, chunk = (uint64_t)1 << E->opt->chunk_log2;
  uint64_t chunks = items / chunk + (items % chunk != 0), at = out->n, table = out->n, c, total, sizes;
  memset(&W, 0, sizeof(W));
  W.s = s, W.base = base, W.mode = mode, W.level = E->opt->level, W.chunk = chunk, W.chunks = chunks;
  W.stride = (uint64_t)width * ZSTD_compressBound((size_t)chunk);
  W.cctx = E->cctx, W.tmp = E->tmp;
  if (size_mul(chunks, W.stride, &total) || size_mul(chunks * (uint64_t)width, sizeof(uint64_t), &sizes) ||
      !(W.slot = codec_malloc(total)) || !(W.size = codec_malloc(sizes))) {
    codec_free(W.slot);
    return codec_nomem(E->err);
  }
  pool_run(chunks * chunk, chunk, plane_part, &W, NULL);
  if (W.rc != CODEC_OK) {
    codec_free(W.slot);
    codec_free(W.size);
    return codec_nomem(E->err);
  }
  xxh64_update(&E->hash, s->pl.bytes.p, s->pl.bytes.n);
  if (buf_extend(out, chunks * (uint64_t)width * 4)) {
    for (c = 0; c < chunks && out->rc == CODEC_OK; c++) {
      uint64_t from = 0;
      for (k = 0; k < width; k++) {
        uint64_t got = W.size[c * (uint64_t)width + (uint64_t)k];
        packed_put32(out->p + table + (c * (uint64_t)width + (uint64_t)k) * 4, (uint32_t)got);
        buf_append(out, W.slot + c * W.stride + from, got);
        from += got;
      }
    }
  }
  codec_free(W.slot);
  codec_free(W.size);
  *stored = out->n - at;
  return out->rc;
}

/* Write the planes of one payload (mode PACKED_PLANES, DIFF, XOR or LOSSY)
** into the result: its frame table, then its frames; what they unpack to
** goes into the hash. Returns CODEC_OK, CODEC_RANGE when a lossy update
** does not fit (nothing kept), or the buffer's error. *stored: bytes
** written; stops early (returning CODEC_OK with *stored >= limit) once it
** cannot beat `limit`. The caller restores the hash when it drops them. */
static int write_planes(encoder *E, const span *s, const unsigned char *base, int mode, uint64_t limit,
                        double *max_error, uint64_t *stored) {
  buf_t *out = E->out;
  int width = s->pl.width, planes = mode == PACKED_LOSSY ? 2 : width, k;
  uint64_t items = s->pl.bytes.n / (uint64_t)width, chunk = (uint64_t)1 << E->opt->chunk_log2;
  uint64_t chunks = items / chunk + (items % chunk != 0), at = out->n, table = out->n, c;
  static const int bp_mode[] = {0, BP_PLAIN, BP_DIFF, BP_XOR};
  unsigned char *pl[8];
  for (k = 0; k < 8; k++) pl[k] = E->tmp + (uint64_t)k * chunk;
  if (!buf_extend(out, chunks * (uint64_t)planes * 4)) return out->rc;
  for (c = 0; c < chunks; c++) {
    uint64_t first = c * chunk, m = items - first < chunk ? items - first : chunk;
    const unsigned char *src = s->pl.bytes.p + first * (uint64_t)width,
                        *b = base ? base + first * (uint64_t)width : NULL;
    if (mode == PACKED_LOSSY) {
      /* what unpacking will give, for the hash */
      unsigned char *items_out = E->tmp + 8 * chunk;
      if (bp_lossy_split(src, b, m, width, s->pl.big, E->opt->lossy, pl, max_error)) {
        out->n = at;
        return CODEC_RANGE;
      }
      bp_lossy_merge((const unsigned char *const *)pl, b, m, width, s->pl.big, E->opt->lossy, items_out);
      xxh64_update(&E->hash, items_out, m * (uint64_t)width);
    } else {
      bp_split(src, b, m, width, s->pl.big, bp_mode[mode], pl);
      xxh64_update(&E->hash, src, m * (uint64_t)width);
    }
    for (k = 0; k < planes; k++) {
      size_t bound = ZSTD_compressBound((size_t)m), got;
      if (buf_reserve(out, bound)) return out->rc;
      got = ZSTD_compress2(E->cctx, out->p + out->n, bound, pl[k], (size_t)m);
      if (ZSTD_isError(got)) return codec_nomem(E->err); /* the bound holds: only memory can fail */
      out->n += got;
      packed_put32(out->p + table + (c * (uint64_t)planes + (uint64_t)k) * 4, (uint32_t)got);
    }
    if (out->n - at >= limit) break;
  }
  *stored = out->n - at;
  return CODEC_OK;
}

/* The exact mode the estimates favour for a payload of n bytes (raw when
** none promises to beat it), and its estimate in *best. */
static int exact_candidate(const span *s, const unsigned char *base, uint64_t chunk, uint64_t *best) {
  static const int bp_of[] = {0, BP_PLAIN, BP_DIFF, BP_XOR};
  int width = s->pl.width, m, cand = PACKED_RAW;
  uint64_t items = s->pl.bytes.n / (uint64_t)width;
  /* per frame: its header and block header, and its table entry */
  uint64_t overhead = (items / chunk + 1) * (uint64_t)width * 16;
  *best = s->pl.bytes.n;
  for (m = PACKED_PLANES; m <= (base ? PACKED_XOR : PACKED_PLANES); m++) {
    uint64_t est = bp_estimate(s->pl.bytes.p, base, items, width, s->pl.big, bp_of[m]) + overhead;
    if (est < *best) *best = est, cand = m;
  }
  return cand;
}

/* Pack one payload into the result and its entry into the meta section. */
static int pack_span(encoder *E, const span *s) {
  buf_t *out = E->out;
  const unsigned char *base = NULL;
  uint64_t n = s->pl.bytes.n, at = out->n, stored = n, best;
  int mode = PACKED_RAW, real = 0, rc, width = s->pl.width, cand;
  double max_error = 0;
  unsigned char fixed[PACKED_ENTRY_FIXED];
  xxh64_state before = E->hash;
  if (n) base = base_payload(E, s, &real);
  if (base && memcmp(base, s->pl.bytes.p, (size_t)n) == 0) {
    mode = PACKED_SAME;
    stored = 0;
  } else if (n) {
    cand = exact_candidate(s, base, (uint64_t)1 << E->opt->chunk_log2, &best);
    if (base && real && E->opt->lossy) {
      /* lossy when the update fits it and it beats the exact forms (as estimated) */
      rc = write_planes(E, s, base, PACKED_LOSSY, best, &max_error, &stored);
      if (rc != CODEC_OK && rc != CODEC_RANGE) return rc;
      if (rc == CODEC_OK && stored < best) {
        mode = PACKED_LOSSY;
      } else {
        out->n = at;
        E->hash = before;
        max_error = 0;
      }
    }
    if (mode == PACKED_RAW && cand != PACKED_RAW) {
      /* large payloads among the pool's threads (the same bytes: chunks are
      ** compressed alone); small ones here, stopping once raw is smaller */
      if (pool_threads() > 1 && n / (uint64_t)width >= pool_min_elements() &&
          n / (uint64_t)width >= ((uint64_t)2 << E->opt->chunk_log2))
        rc = write_planes_parallel(E, s, base, cand, &stored);
      else
        rc = write_planes(E, s, base, cand, n, &max_error, &stored);
      if (rc != CODEC_OK) return rc;
      if (stored < n)
        mode = cand;
      else
        out->n = at, E->hash = before;
    }
    if (mode == PACKED_RAW) {
      buf_append(out, s->pl.bytes.p, n);
      xxh64_update(&E->hash, s->pl.bytes.p, n);
      stored = n;
    }
  }
  if (mode == PACKED_SAME) xxh64_update(&E->hash, s->pl.bytes.p, n);
  if (max_error > E->max_error) E->max_error = max_error;
  packed_put64(fixed, (uint64_t)(s->pl.bytes.p - E->blob));
  packed_put64(fixed + 8, n);
  packed_put64(fixed + 16, stored);
  packed_put_double(fixed + 24, max_error);
  fixed[32] = (unsigned char)mode;
  fixed[33] = (unsigned char)width;
  fixed[34] = s->pl.big ? PACKED_BIG : 0;
  fixed[35] = 0;
  packed_put32(fixed + 36, (uint32_t)s->key.n);
  buf_append(&E->meta, fixed, sizeof(fixed));
  buf_append(&E->meta, s->key.p, s->key.n);
  return out->rc ? out->rc : E->meta.rc;
}

/* A piece of the skeleton (the BLOB without the payloads), blob[from..to):
** kept in the meta section, and hashed in its place. */
static void add_skeleton(encoder *E, uint64_t from, uint64_t to) {
  buf_append(&E->skel, E->blob + from, to - from);
  xxh64_update(&E->hash, E->blob + from, to - from);
}

/* The meta section, compressed when that is smaller; returns its stored size. */
static int write_meta(encoder *E, uint64_t *stored) {
  buf_t *out = E->out;
  size_t bound = ZSTD_compressBound((size_t)E->meta.n), got;
  if (E->meta.rc) return E->meta.rc;
  *stored = E->meta.n;
  if (E->meta.n && buf_reserve(out, bound) == CODEC_OK) {
    got = ZSTD_compress2(E->cctx, out->p + out->n, bound, E->meta.p, (size_t)E->meta.n);
    if (ZSTD_isError(got)) return codec_nomem(E->err);
    if (got < E->meta.n) {
      out->n += got;
      *stored = got;
      return CODEC_OK;
    }
  }
  buf_append(out, buf_at(&E->meta, 0), E->meta.n);
  return out->rc;
}

/* The base: parsed, its object id and hash into the header. */
static int open_base(encoder *E, const unsigned char *base, uint64_t base_n, unsigned char *head) {
  fo_tree t;
  int rc;
  char why[sizeof(E->err->msg)];
  if ((rc = record_parse(&E->base, base, base_n, E->err)) != CODEC_OK) {
    memcpy(why, E->err->msg, sizeof(why));
    return rc == CODEC_NOMEM ? rc : codec_fail(E->err, rc, "base: %s", why);
  }
  E->has_base = 1;
  fo_tree_init(&t);
  rc = fo_deflate(&t, &E->base, FO_CHUNK_SIZE, E->err);
  if (rc == CODEC_OK) memcpy(head + 72, t.obj[t.n - 1].id, PACKED_ID_SIZE);
  fo_tree_free(&t);
  packed_put64(head + 56, base_n);
  packed_put64(head + 64, xxh64(base, base_n, 0));
  return rc;
}

void packed_options_init(packed_options *o) {
  o->level = PACKED_LEVEL;
  o->lossy = PACKED_LOSSLESS;
  o->chunk_log2 = PACKED_CHUNK_LOG2;
}

int packed_encode(buf_t *out, int kind, const unsigned char *blob, uint64_t n, const unsigned char *base,
                  uint64_t base_n, const packed_options *opt, codec_err *err) {
  encoder E;
  spans sp = {NULL, 0, 0};
  unsigned char head[PACKED_HEADER_SIZE];
  uint64_t meta_stored = 0;
  uint32_t i;
  int rc;
  if (opt->lossy && !base) return codec_fail(err, CODEC_RANGE, "lossy packing needs a base");
  memset(&E, 0, sizeof(E));
  memset(head, 0, sizeof(head));
  E.out = out;
  E.start = out->n;
  E.opt = opt;
  E.err = err;
  E.blob = blob;
  record_init(&E.base);
  buf_init(&E.meta, out->limit);
  buf_init(&E.skel, out->limit);
  if ((rc = collect(&sp, kind, blob, n, err)) != CODEC_OK) goto done;
  if (base && (rc = open_base(&E, base, base_n, head)) != CODEC_OK) goto done;
  if (!(E.cctx = zst_cctx(opt->level)) || !(E.tmp = codec_malloc((uint64_t)16 << opt->chunk_log2))) {
    rc = codec_nomem(err);
    goto done;
  }
  buf_append(out, head, sizeof(head));
  xxh64_init(&E.hash, 0);
  for (i = 0; i < sp.n && out->rc == CODEC_OK; i++) {
    uint64_t off = (uint64_t)(sp.s[i].pl.bytes.p - blob);
    add_skeleton(&E, i ? (uint64_t)(sp.s[i - 1].pl.bytes.p - blob) + sp.s[i - 1].pl.bytes.n : 0, off);
    if ((rc = pack_span(&E, &sp.s[i])) != CODEC_OK) goto done;
  }
  add_skeleton(&E, sp.n ? (uint64_t)(sp.s[sp.n - 1].pl.bytes.p - blob) + sp.s[sp.n - 1].pl.bytes.n : 0, n);
  if ((rc = E.skel.rc) != CODEC_OK) goto done;
  buf_append(&E.meta, buf_at(&E.skel, 0), E.skel.n); /* the skeleton follows the entries */
  if ((rc = out->rc) != CODEC_OK || (rc = write_meta(&E, &meta_stored)) != CODEC_OK) goto done;
  memcpy(head, PACKED_MAGIC, PACKED_MAGIC_SIZE);
  head[7] = PACKED_VERSION;
  head[8] = (unsigned char)kind;
  head[9] = (unsigned char)((E.has_base ? PACKED_HAS_BASE : 0) | (opt->lossy ? PACKED_IS_LOSSY : 0));
  head[10] = (unsigned char)opt->lossy;
  head[11] = (unsigned char)opt->chunk_log2;
  packed_put32(head + 12, sp.n);
  packed_put64(head + 16, n);
  packed_put64(head + 24, xxh64_digest(&E.hash));
  packed_put_double(head + 32, E.max_error);
  packed_put64(head + 40, E.meta.n);
  packed_put64(head + 48, meta_stored);
  memcpy(out->p + E.start, head, sizeof(head));
done:
  if (rc == CODEC_OK) rc = out->rc;
  if (rc == CODEC_NOMEM || rc == CODEC_TOOBIG) codec_fail_rc(err, rc);
  if (rc != CODEC_OK) out->n = E.start;
  ZSTD_freeCCtx(E.cctx);
  codec_free(E.tmp);
  codec_free(sp.s);
  buf_free(&E.meta);
  buf_free(&E.skel);
  record_clear(&E.base);
  return rc;
}
