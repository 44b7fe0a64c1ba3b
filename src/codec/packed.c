/* SPDX-License-Identifier: Apache-2.0 */
/*
** packed.c — reading the packed format (packed.h): the header, the meta
** section, the checks that make every later step safe, and the short
** description readers of other formats give of a packed BLOB. Packing is
** packed_encode.c, unpacking packed_decode.c.
*/
#include "codec/packed.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "codec/safetensors.h"
#include "codec/sha256.h"
#include "codec/zst.h"

/* What messages call a packed BLOB. */
#define PACKED_BLOB "packed record"

/* --- little-endian fields ------------------------------------------------------- */

uint64_t packed_get64(const unsigned char *p) {
  uint64_t v = 0;
  int k;
  for (k = 7; k >= 0; k--) v = v << 8 | p[k];
  return v;
}

uint32_t packed_get32(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

void packed_put64(unsigned char *p, uint64_t v) {
  int k;
  for (k = 0; k < 8; k++, v >>= 8) p[k] = (unsigned char)v;
}

void packed_put32(unsigned char *p, uint32_t v) {
  int k;
  for (k = 0; k < 4; k++, v >>= 8) p[k] = (unsigned char)v;
}

double packed_get_double(const unsigned char *p) {
  uint64_t bits = packed_get64(p);
  double d;
  memcpy(&d, &bits, sizeof(d));
  return d;
}

void packed_put_double(unsigned char *p, double d) {
  uint64_t bits;
  memcpy(&bits, &d, sizeof(bits));
  packed_put64(p, bits);
}

/* --- names ------------------------------------------------------------------------ */

static const char *const kind_names[] = {"", "arrayrecord", "recorddict"};
static const char *const mode_names[] = {"raw", "planes", "diff", "xor", "same", "lossy"};
static const char *const lossy_names[] = {"", "float16", "bfloat16"};

const char *packed_kind_name(int kind) { return kind_names[kind]; }
const char *packed_mode_name(int mode) { return mode_names[mode]; }
const char *packed_lossy_name(int lossy) { return lossy_names[lossy]; }

int packed_lossy_from_name(const void *s, uint64_t n) {
  int k;
  for (k = PACKED_FLOAT16; k <= PACKED_BFLOAT16; k++)
    if (n == strlen(lossy_names[k]) && memcmp(s, lossy_names[k], (size_t)n) == 0) return k;
  return -1;
}

/* --- payloads ----------------------------------------------------------------------- */

/* packed_item_payload's result, with a raw item whose bytes are not whole
** items taken as bytes. */
static void whole_items(packed_payload *pl) {
  if (pl->bytes.n % (uint64_t)pl->width) pl->width = 1, pl->big = 0, pl->real = 0;
}

void packed_item_payload(const record_item *it, packed_payload *pl) {
  npy_array a;
  codec_err err;
  memset(pl, 0, sizeof(*pl));
  pl->bytes = it->data;
  pl->width = 1;
  if (record_item_is_numpy(it)) {
    if (npy_parse(it->data.p, it->data.n, &a, &err) != CODEC_OK) return;
  } else if (st_is_raw_item(it) && st_is_raw_dtype(it->dtype.p, it->dtype.n)) {
    /* A dtype NumPy lacks (BF16, F8_*): items of its whole bytes, little-endian. */
    int bits = st_dtype_bits(st_dtype_code(it->dtype.p, it->dtype.n));
    pl->width = bits == 16 || bits == 32 || bits == 64 ? bits / 8 : 1;
    whole_items(pl);
    return;
  } else {
    int64_t shape[RECORD_MAX_DIMS];
    uint64_t numel;
    memset(&a, 0, sizeof(a));
    if (dt_parse((const char *)it->dtype.p, it->dtype.n, &a.dtype, &err) != CODEC_OK) return;
    if (npy_shape_numel(record_item_shape(it, shape), shape, &numel, &err) != CODEC_OK) return;
    if (size_mul(numel, dt_size(a.dtype.type), &a.nbytes) || a.nbytes != it->data.n) return;
    a.data = it->data.p;
  }
  pl->bytes.p = a.data;
  pl->bytes.n = a.nbytes;
  pl->width = (int)dt_size(a.dtype.type);
  if (dt_kind(a.dtype.type) == DT_KIND_COMPLEX) pl->width /= 2; /* a complex is two floats */
  pl->big = a.dtype.big && pl->width > 1;
  pl->real = a.dtype.type == DT_FLOAT32 || a.dtype.type == DT_FLOAT64;
}

/* --- the header ---------------------------------------------------------------------- */

int packed_is(const unsigned char *p, uint64_t n) {
  return n >= PACKED_MAGIC_SIZE && memcmp(p, PACKED_MAGIC, PACKED_MAGIC_SIZE) == 0;
}

static int head_error(codec_err *err, const char *what, uint64_t at) {
  return codec_fail(err, CODEC_CORRUPT, PACKED_BLOB " %s at byte %llu (header)", what, (unsigned long long)at);
}

int packed_head_parse(const unsigned char *p, uint64_t n, packed_head *h, codec_err *err) {
  memset(h, 0, sizeof(*h));
  if (!packed_is(p, n)) return codec_fail(err, CODEC_CORRUPT, "not a " PACKED_BLOB " (no magic)");
  if (n < PACKED_HEADER_SIZE) return head_error(err, "truncated", n);
  h->version = p[7];
  if (h->version != PACKED_VERSION)
    return codec_fail(err, CODEC_UNSUPPORTED, PACKED_BLOB " has version %d; this library reads version %d", h->version,
                      PACKED_VERSION);
  h->kind = p[8];
  h->flags = p[9];
  h->lossy = p[10];
  h->chunk_log2 = p[11];
  h->count = packed_get32(p + 12);
  h->size = packed_get64(p + 16);
  h->hash = packed_get64(p + 24);
  h->max_error = packed_get_double(p + 32);
  h->meta_raw = packed_get64(p + 40);
  h->meta_stored = packed_get64(p + 48);
  h->base_size = packed_get64(p + 56);
  h->base_hash = packed_get64(p + 64);
  memcpy(h->base_id, p + 72, PACKED_ID_SIZE);
  if (h->kind != PACKED_RECORD && h->kind != PACKED_RECORDDICT) return head_error(err, "has a bad kind", 8);
  if (h->flags & ~(PACKED_HAS_BASE | PACKED_IS_LOSSY)) return head_error(err, "has bad flags", 9);
  if (h->lossy > PACKED_BFLOAT16 || !(h->flags & PACKED_IS_LOSSY) != !h->lossy ||
      (h->lossy && !(h->flags & PACKED_HAS_BASE)))
    return head_error(err, "has a bad lossy format", 10);
  if (h->chunk_log2 < PACKED_CHUNK_LOG2_MIN || h->chunk_log2 > PACKED_CHUNK_LOG2_MAX)
    return head_error(err, "has a bad chunk size", 11);
  if (!(h->max_error >= 0) || !isfinite(h->max_error) || (!h->lossy && h->max_error != 0))
    return head_error(err, "has a bad max_error", 32);
  if (h->meta_stored > n - PACKED_HEADER_SIZE || h->meta_stored > h->meta_raw)
    return head_error(err, "has a meta section that does not fit", 48);
  if (!(h->flags & PACKED_HAS_BASE)) {
    static const unsigned char zero[PACKED_ID_SIZE];
    if (h->base_size || h->base_hash || memcmp(h->base_id, zero, PACKED_ID_SIZE))
      return head_error(err, "names a base but has none", 56);
  }
  return CODEC_OK;
}

static void size_text(char *out, size_t cap, uint64_t n) { snprintf(out, cap, "%llu", (unsigned long long)n); }

const char *packed_hint(char *out, size_t cap, const unsigned char *p, uint64_t n, int *kind) {
  packed_head h;
  codec_err err;
  char size[24], stored[24], id[SHA256_HEX_SIZE];
  *kind = PACKED_RECORD;
  if (packed_head_parse(p, n, &h, &err) != CODEC_OK) {
    snprintf(out, cap, "a damaged " PACKED_BLOB);
    return out;
  }
  *kind = h.kind;
  size_text(size, sizeof(size), h.size);
  size_text(stored, sizeof(stored), n);
  if (h.flags & PACKED_HAS_BASE) {
    sha256_hex(h.base_id, id);
    id[16] = 0;
  }
  snprintf(out, cap, "a packed %s (%s bytes packed into %s, %s%s%s)",
           h.kind == PACKED_RECORD ? "record" : "record dict", size, stored,
           h.flags & PACKED_HAS_BASE ? "against base " : "no base", h.flags & PACKED_HAS_BASE ? id : "",
           h.flags & PACKED_HAS_BASE ? "..." : "");
  return out;
}

const char *packed_misread(char *out, size_t cap, const unsigned char *p, uint64_t n, int reader) {
  char hint[PACKED_HINT_MAX];
  int kind, based;
  const char *unpack;
  packed_hint(hint, sizeof(hint), p, n, &kind);
  based = strstr(hint, "against base") != NULL;
  unpack = kind == PACKED_RECORD ? (based ? "ar_unpack(packed, base)" : "ar_unpack(packed)")
                                 : (based ? "rd_unpack(packed, base)" : "rd_unpack(packed)");
  if (reader == kind)
    snprintf(out, cap, "got %s: unpack it with %s first", hint, unpack);
  else if (reader == PACKED_RECORD)
    snprintf(out, cap, "got %s, not a record: unpack it with %s, then take its record with rd_array_record(rd)", hint,
             unpack);
  else if (reader == PACKED_RECORDDICT)
    snprintf(out, cap, "got %s, not a record dict: unpack it with %s, then wrap it with rd(name, 'array', rec)", hint,
             unpack);
  else
    snprintf(out, cap, "got %s, not a .npy file: unpack it with %s, then take an array out with %s", hint, unpack,
             kind == PACKED_RECORD ? "ar_get(rec, key)" : "ar_get(rd_array_record(rd), key)");
  return out;
}

/* --- the meta section ----------------------------------------------------------------- */

void packed_view_init(packed_view *v) { memset(v, 0, sizeof(*v)); }

void packed_view_clear(packed_view *v) {
  codec_free(v->e);
  codec_free(v->meta);
  packed_view_init(v);
}

/* at: the byte of the meta section (counted from its start, unpacked)
** where the problem lies. */
static int meta_error(codec_err *err, const char *what, uint64_t at, uint32_t entry) {
  return codec_fail(err, CODEC_CORRUPT, PACKED_BLOB " meta section %s at byte %llu (entry %u)", what,
                    (unsigned long long)at, (unsigned)entry);
}

/* Planes an entry's mode stores per chunk (0: not chunked). */
static int entry_planes(const packed_entry *e) {
  return e->mode == PACKED_LOSSY                                                       ? 2
         : e->mode == PACKED_PLANES || e->mode == PACKED_DIFF || e->mode == PACKED_XOR ? e->width
                                                                                       : 0;
}

uint64_t packed_entry_chunks(const packed_view *v, const packed_entry *e) {
  uint64_t items = e->length / (uint64_t)e->width, chunk = (uint64_t)1 << v->h.chunk_log2;
  return items / chunk + (items % chunk != 0);
}

/* An entry's own checks: its mode, width and stored size, and its frame
** table adding up (data, at e->data in the BLOB, is inside it). */
static int check_entry(const packed_view *v, const packed_entry *e, uint32_t i, uint64_t at, codec_err *err) {
  int planes = entry_planes(e), base = v->h.flags & PACKED_HAS_BASE;
  uint64_t table, frames = 0, k, chunks;
  if (e->mode == PACKED_RAW)
    return e->stored == e->length ? CODEC_OK : meta_error(err, "has a bad stored size", at + 16, i);
  if (e->mode == PACKED_SAME) {
    if (!base) return meta_error(err, "needs a base the header does not name", at + 32, i);
    return e->stored == 0 ? CODEC_OK : meta_error(err, "has a bad stored size", at + 16, i);
  }
  if (e->length % (uint64_t)e->width) return meta_error(err, "has a length that is not whole items", at + 8, i);
  if ((e->mode != PACKED_PLANES && !base) || (e->mode == PACKED_LOSSY && !v->h.lossy))
    return meta_error(err, "needs a base the header does not name", at + 32, i);
  if (e->mode == PACKED_LOSSY && e->width != 4 && e->width != 8) return meta_error(err, "has a bad width", at + 33, i);
  chunks = packed_entry_chunks(v, e);
  table = chunks * (uint64_t)planes * 4; /* chunks <= 2^64 / 2^10: no overflow */
  if (table > e->stored) return meta_error(err, "has a frame table larger than its data", at + 16, i);
  for (k = 0; k < chunks * (uint64_t)planes; k++) {
    uint32_t f = packed_get32(v->blob + e->data + k * 4);
    if (f == 0) return meta_error(err, "has an empty frame", at + 16, i);
    if (f > e->stored - table - frames) break; /* more than the data holds: stop before the sum could wrap */
    frames += f;
  }
  if (frames != e->stored - table) return meta_error(err, "has frames that do not add up to its data", at + 16, i);
  return CODEC_OK;
}

/* The entries of meta[0..n), then the skeleton. */
static int parse_meta(packed_view *v, const unsigned char *meta, uint64_t n, codec_err *err) {
  uint64_t at = 0, end_prev = 0, lengths = 0, data = PACKED_HEADER_SIZE;
  uint64_t data_end = v->n - v->h.meta_stored;
  uint32_t i;
  if (v->h.count > n / PACKED_ENTRY_FIXED) return meta_error(err, "is too short for its entries", n, 0);
  if (v->h.count && !(v->e = codec_malloc((uint64_t)v->h.count * sizeof(*v->e)))) return codec_nomem(err);
  for (i = 0; i < v->h.count; i++) {
    packed_entry *e = &v->e[i];
    const unsigned char *q = meta + at;
    uint64_t start = at;
    uint32_t klen;
    int rc;
    if (n - at < PACKED_ENTRY_FIXED) return meta_error(err, "truncated", n, i);
    e->offset = packed_get64(q);
    e->length = packed_get64(q + 8);
    e->stored = packed_get64(q + 16);
    e->max_error = packed_get_double(q + 24);
    e->mode = q[32];
    e->width = q[33];
    e->big = q[34] & PACKED_BIG;
    klen = packed_get32(q + 36);
    if (n - at - PACKED_ENTRY_FIXED < klen) return meta_error(err, "truncated", n, i);
    e->key.p = q + PACKED_ENTRY_FIXED;
    e->key.n = klen;
    at += PACKED_ENTRY_FIXED + (uint64_t)klen;
    if (e->mode >= PACKED_NMODES) return meta_error(err, "has a bad mode", start + 32, i);
    if (e->width != 1 && e->width != 2 && e->width != 4 && e->width != 8)
      return meta_error(err, "has a bad width", start + 33, i);
    if ((q[34] & ~PACKED_BIG) || q[35]) return meta_error(err, "has bad flags", start + 34, i);
    if (!codec_utf8_valid(e->key.p, e->key.n))
      return meta_error(err, "has a key that is not UTF-8", start + PACKED_ENTRY_FIXED, i);
    if (!(e->max_error >= 0) || !isfinite(e->max_error) || (e->mode != PACKED_LOSSY && e->max_error != 0) ||
        e->max_error > v->h.max_error)
      return meta_error(err, "has a bad max_error", start + 24, i);
    if (e->offset < end_prev || e->length > v->h.size || e->offset > v->h.size - e->length)
      return meta_error(err, "has an array outside the unpacked record or out of order", start, i);
    end_prev = e->offset + e->length;
    lengths += e->length;
    if (e->stored > data_end - data) return meta_error(err, "has more data than the BLOB holds", start + 16, i);
    e->data = data;
    data += e->stored;
    if ((rc = check_entry(v, e, i, start, err)) != CODEC_OK) return rc;
  }
  if (data != data_end) return meta_error(err, "leaves data unused", at, v->h.count);
  if (n - at != v->h.size - lengths) return meta_error(err, "has a skeleton of the wrong size", at, v->h.count);
  v->skeleton.p = meta + at;
  v->skeleton.n = n - at;
  return CODEC_OK;
}

int packed_open(packed_view *v, const unsigned char *p, uint64_t n, uint64_t limit, codec_err *err) {
  const unsigned char *meta;
  int rc;
  packed_view_clear(v);
  v->blob = p;
  v->n = n;
  if ((rc = packed_head_parse(p, n, &v->h, err)) != CODEC_OK) return rc;
  if (v->h.size > limit)
    return codec_fail(err, CODEC_TOOBIG, "the unpacked record (%llu bytes) would be larger than the limit",
                      (unsigned long long)v->h.size);
  /* The meta section holds the skeleton (at most the unpacked size) and
  ** the entries (keys included, each a part of the skeleton too). */
  {
    uint64_t most;
    if (size_add(v->h.size, v->h.size, &most) || size_add(most, (uint64_t)PACKED_ENTRY_FIXED * v->h.count, &most) ||
        v->h.meta_raw > most)
      return head_error(err, "has a meta section larger than its record", 40);
  }
  meta = p + n - v->h.meta_stored;
  if (v->h.meta_stored < v->h.meta_raw) {
    ZSTD_DCtx *d = zst_dctx();
    if (!d) return codec_nomem(err);
    if (!(v->meta = codec_malloc(v->h.meta_raw))) {
      ZSTD_freeDCtx(d);
      return codec_nomem(err);
    }
    rc = zst_decompress_exact(d, v->meta, v->h.meta_raw, meta, v->h.meta_stored, err);
    ZSTD_freeDCtx(d);
    if (rc == CODEC_CORRUPT) {
      char why[sizeof(err->msg)];
      memcpy(why, err->msg, sizeof(why));
      return codec_fail(err, CODEC_CORRUPT, PACKED_BLOB " corrupt at byte %llu (meta section): %s",
                        (unsigned long long)(n - v->h.meta_stored), why);
    }
    if (rc != CODEC_OK) return rc;
    meta = v->meta;
  }
  return parse_meta(v, meta, v->h.meta_raw, err);
}

int packed_entry_planes(const packed_view *v, const packed_entry *e, uint64_t *planes) {
  int np = entry_planes(e), k;
  uint64_t c, chunks;
  for (k = 0; k < 8; k++) planes[k] = 0;
  if (!np) return 0;
  chunks = packed_entry_chunks(v, e);
  for (c = 0; c < chunks; c++)
    for (k = 0; k < np; k++) planes[k] += 4 + packed_get32(v->blob + e->data + (c * (uint64_t)np + (uint64_t)k) * 4);
  return np;
}

int packed_entry_plane_count(const packed_entry *e) { return entry_planes(e); }
