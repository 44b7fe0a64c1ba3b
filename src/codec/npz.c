/* SPDX-License-Identifier: Apache-2.0 */
/*
** npz.c — .npz (ZIP) reader and writer (see npz.h). Every offset read from
** the archive is checked against the BLOB before it is followed.
*/
#include "codec/npz.h"

#include <stdio.h>
#include <string.h>
#include <zlib.h>

#include "codec/array.h"
#include "codec/keyset.h"

#define SIG_LOCAL 0x04034b50u
#define SIG_CENTRAL 0x02014b50u
#define SIG_EOCD 0x06054b50u
#define SIG_EOCD64 0x06064b50u
#define SIG_LOCATOR64 0x07064b50u

#define LOCAL_SIZE 30
#define CENTRAL_SIZE 46
#define EOCD_SIZE 22
#define EOCD64_SIZE 56
#define LOCATOR64_SIZE 20

static uint32_t rd16(const unsigned char *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8; }
static uint32_t rd32(const unsigned char *p) { return rd16(p) | rd16(p + 2) << 16; }
static uint64_t rd64(const unsigned char *p) { return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32; }

static void wr16(unsigned char *p, uint32_t v) {
  p[0] = (unsigned char)v;
  p[1] = (unsigned char)(v >> 8);
}
static void wr32(unsigned char *p, uint32_t v) {
  wr16(p, v & 0xffff);
  wr16(p + 2, v >> 16);
}
static void wr64(unsigned char *p, uint64_t v) {
  wr32(p, (uint32_t)v);
  wr32(p + 4, (uint32_t)(v >> 32));
}

/* zlib allocates through the codec hooks. */
static voidpf z_alloc(voidpf opaque, uInt items, uInt size) {
  (void)opaque;
  return codec_malloc((uint64_t)items * size); /* uInt x uInt fits in 64 bits */
}
static void z_free(voidpf opaque, voidpf p) {
  (void)opaque;
  codec_free(p);
}

static uint32_t crc_of(const unsigned char *p, uint64_t n) {
  uLong crc = crc32(0L, Z_NULL, 0);
  while (n) { /* crc32 takes a uInt length */
    uInt piece = n > 0x40000000u ? 0x40000000u : (uInt)n;
    crc = crc32(crc, p, piece);
    p += piece;
    n -= piece;
  }
  return (uint32_t)crc;
}

/* --- reading ------------------------------------------------------------------- */

typedef struct zip_entry {
  uint32_t flags, method, crc;
  uint64_t csize, usize, local;
  const unsigned char *name;
  uint32_t name_len;
} zip_entry;

/* The end of central directory: where the directory is and how many entries. */
static int find_directory(const unsigned char *blob, uint64_t n, uint64_t *cd_off, uint64_t *cd_size, uint64_t *count,
                          codec_err *err) {
  uint64_t pos, lowest, end_limit;
  int found = 0;
  if (n < EOCD_SIZE) return codec_fail(err, CODEC_CORRUPT, "not a zip archive (%llu bytes)", (unsigned long long)n);
  /* Search backwards over the longest possible comment (64 KiB). */
  lowest = n - EOCD_SIZE > 65535 ? n - EOCD_SIZE - 65535 : 0;
  for (pos = n - EOCD_SIZE + 1; pos-- > lowest;) {
    if (rd32(blob + pos) == SIG_EOCD && pos + EOCD_SIZE + rd16(blob + pos + 20) <= n) {
      found = 1;
      break;
    }
  }
  if (!found) return codec_fail(err, CODEC_CORRUPT, "not a zip archive (no end of central directory record)");
  if (rd16(blob + pos + 4) != 0 || rd16(blob + pos + 6) != 0)
    return codec_fail(err, CODEC_UNSUPPORTED, "multi-disk zip archives are not supported");
  *count = rd16(blob + pos + 10);
  *cd_size = rd32(blob + pos + 12);
  *cd_off = rd32(blob + pos + 16);
  end_limit = pos;
  if (pos >= LOCATOR64_SIZE && rd32(blob + pos - LOCATOR64_SIZE) == SIG_LOCATOR64) {
    /* ZIP64: the locator points at the ZIP64 end record, which holds the
    ** 64-bit counts and offsets. */
    const unsigned char *loc = blob + pos - LOCATOR64_SIZE;
    uint64_t rec = rd64(loc + 8);
    if (rd32(loc + 4) != 0 || rd32(loc + 16) > 1)
      return codec_fail(err, CODEC_UNSUPPORTED, "multi-disk zip archives are not supported");
    if (rec > pos - LOCATOR64_SIZE || pos - LOCATOR64_SIZE - rec < EOCD64_SIZE || rd32(blob + rec) != SIG_EOCD64)
      return codec_fail(err, CODEC_CORRUPT, "bad ZIP64 end of central directory record");
    if (rd32(blob + rec + 16) != 0 || rd32(blob + rec + 20) != 0)
      return codec_fail(err, CODEC_UNSUPPORTED, "multi-disk zip archives are not supported");
    *count = rd64(blob + rec + 32);
    *cd_size = rd64(blob + rec + 40);
    *cd_off = rd64(blob + rec + 48);
    end_limit = rec;
  } else if (*count == 0xffff || *cd_size == 0xffffffffu || *cd_off == 0xffffffffu) {
    return codec_fail(err, CODEC_CORRUPT, "zip archive needs a ZIP64 end record but has none");
  }
  if (*cd_off > end_limit || *cd_size > end_limit - *cd_off)
    return codec_fail(err, CODEC_CORRUPT, "central directory (%llu bytes at %llu) lies outside the archive",
                      (unsigned long long)*cd_size, (unsigned long long)*cd_off);
  return CODEC_OK;
}

static const char *member_name(const zip_entry *e, char *q) {
  return codec_quote(q, CODEC_QUOTE_MAX, e->name, e->name_len);
}

/* ZIP64 extra field (id 1) of a central directory entry: the 64-bit values
** of the fields set to all ones, in the order usize, csize, local offset. */
static int zip64_extra(const unsigned char *x, uint32_t len, zip_entry *e, codec_err *err) {
  char q[CODEC_QUOTE_MAX];
  while (len >= 4) {
    uint32_t id = rd16(x), size = rd16(x + 2);
    if (size > len - 4) break;
    if (id == 1) {
      const unsigned char *v = x + 4;
      uint32_t left = size;
      uint64_t *fields[3] = {&e->usize, &e->csize, &e->local};
      int k;
      for (k = 0; k < 3; k++) {
        if (*fields[k] != 0xffffffffu) continue;
        if (left < 8)
          return codec_fail(err, CODEC_CORRUPT, "member '%s' has a short ZIP64 extra field", member_name(e, q));
        *fields[k] = rd64(v);
        v += 8;
        left -= 8;
      }
      return CODEC_OK;
    }
    x += 4 + size;
    len -= 4 + size;
  }
  return CODEC_OK;
}

/* The inflated or stored bytes of one member: a view (stored) or scratch. */
static int member_data(const unsigned char *blob, uint64_t n, const zip_entry *e, uint64_t limit, buf_t *scratch,
                       const unsigned char **data, codec_err *err) {
  char q[CODEC_QUOTE_MAX];
  const unsigned char *lh;
  uint64_t start;
  if (e->local > n || n - e->local < LOCAL_SIZE || rd32(blob + e->local) != SIG_LOCAL)
    return codec_fail(err, CODEC_CORRUPT, "member '%s': no local header at byte %llu", member_name(e, q),
                      (unsigned long long)e->local);
  lh = blob + e->local;
  start = e->local + LOCAL_SIZE + rd16(lh + 26) + rd16(lh + 28);
  if (start > n || e->csize > n - start)
    return codec_fail(err, CODEC_CORRUPT, "member '%s' is truncated (%llu bytes at byte %llu)", member_name(e, q),
                      (unsigned long long)e->csize, (unsigned long long)start);
  if (e->usize > limit)
    return codec_fail(err, CODEC_TOOBIG, "member '%s' would be %llu bytes", member_name(e, q),
                      (unsigned long long)e->usize);
  if (e->method == 0) {
    if (e->usize != e->csize)
      return codec_fail(err, CODEC_CORRUPT, "stored member '%s' has sizes %llu and %llu", member_name(e, q),
                        (unsigned long long)e->csize, (unsigned long long)e->usize);
    *data = blob + start;
    return CODEC_OK;
  }
  {
    z_stream zs;
    int zr, overflow = 0;
    scratch->n = 0;
    if (!buf_extend(scratch, e->usize ? e->usize : 1)) return codec_fail_rc(err, scratch->rc);
    memset(&zs, 0, sizeof(zs));
    zs.zalloc = z_alloc;
    zs.zfree = z_free;
    if (inflateInit2(&zs, -MAX_WBITS) != Z_OK) return codec_nomem(err);
    /* Sizes below 4 GiB here: the BLOB and the limit are below 2 GiB. */
    zs.next_in = (Bytef *)(uintptr_t)(blob + start);
    zs.avail_in = (uInt)e->csize;
    zs.next_out = scratch->p;
    zs.avail_out = (uInt)e->usize;
    zr = inflate(&zs, Z_FINISH);
    if (zr != Z_STREAM_END && zs.avail_out == 0) {
      /* The stated size is reached: one more byte tells whether the stream
      ** holds more than it says (a zip bomb lying about its size). */
      unsigned char probe[1];
      zs.next_out = probe;
      zs.avail_out = 1;
      zr = inflate(&zs, Z_FINISH);
      overflow = zs.avail_out == 0;
    }
    inflateEnd(&zs);
    if (overflow)
      return codec_fail(err, CODEC_CORRUPT, "member '%s' inflates to more than its stated %llu bytes",
                        member_name(e, q), (unsigned long long)e->usize);
    if (zr == Z_MEM_ERROR) return codec_nomem(err);
    if (zr != Z_STREAM_END)
      return codec_fail(err, CODEC_CORRUPT, "member '%s' has corrupt or truncated deflate data", member_name(e, q));
    if (zs.total_out != e->usize)
      return codec_fail(err, CODEC_CORRUPT, "member '%s' inflates to %llu bytes, its header says %llu",
                        member_name(e, q), (unsigned long long)zs.total_out, (unsigned long long)e->usize);
    *data = scratch->p;
  }
  return CODEC_OK;
}

/* Append one member as an item. */
static int member_item(const zip_entry *e, const unsigned char *data, buf_t *out, codec_err *err) {
  char q[CODEC_QUOTE_MAX], dtname[DT_NAME_MAX];
  npy_array a;
  record_item_spec spec;
  codec_span key, bytes;
  int rc, big;
  if ((rc = npy_parse(data, e->usize, &a, err)) != CODEC_OK) {
    char msg[sizeof(err->msg)];
    memcpy(msg, err->msg, sizeof(msg));
    return codec_fail(err, rc, "member '%s': %s", member_name(e, q), msg);
  }
  if ((big = array_dim_over_int32(a.ndim, a.shape)) >= 0)
    return codec_fail(err, CODEC_UNSUPPORTED, "member '%s': dimension %lld does not fit Flower's int32 shape",
                      member_name(e, q), (long long)a.shape[big]);
  key.p = e->name;
  key.n = e->name_len - 4; /* without ".npy" */
  bytes.p = data;
  bytes.n = a.header_len + a.nbytes; /* bytes after the payload are not stored, as ar() does */
  array_numpy_spec(&spec, key, &a, bytes, dtname);
  record_write_item(out, &spec);
  if (out->rc) return codec_fail_rc(err, out->rc);
  return CODEC_OK;
}

/* One central directory entry at p (left bytes); *size gets its length. */
static int central_entry(const unsigned char *p, uint64_t left, zip_entry *e, uint64_t *size, codec_err *err) {
  char q[CODEC_QUOTE_MAX];
  uint32_t extra_len, comment_len;
  int rc;
  if (left < CENTRAL_SIZE || rd32(p) != SIG_CENTRAL)
    return codec_fail(err, CODEC_CORRUPT, "bad central directory entry");
  memset(e, 0, sizeof(*e));
  e->flags = rd16(p + 8);
  e->method = rd16(p + 10);
  e->crc = rd32(p + 16);
  e->csize = rd32(p + 20);
  e->usize = rd32(p + 24);
  e->name_len = rd16(p + 28);
  extra_len = rd16(p + 30);
  comment_len = rd16(p + 32);
  e->local = rd32(p + 42);
  *size = (uint64_t)CENTRAL_SIZE + e->name_len + extra_len + comment_len;
  if (*size > left) return codec_fail(err, CODEC_CORRUPT, "bad central directory entry");
  e->name = p + CENTRAL_SIZE;
  if ((rc = zip64_extra(p + CENTRAL_SIZE + e->name_len, extra_len, e, err)) != CODEC_OK) return rc;
  if (!codec_utf8_valid(e->name, e->name_len)) return codec_fail(err, CODEC_UNSUPPORTED, "member name is not UTF-8");
  if (e->flags & 0x41) return codec_fail(err, CODEC_UNSUPPORTED, "member '%s' is encrypted", member_name(e, q));
  if (e->method != 0 && e->method != 8)
    return codec_fail(err, CODEC_UNSUPPORTED,
                      "member '%s' uses compression method %u (only stored and deflate are read)", member_name(e, q),
                      e->method);
  if (e->name_len < 4 || memcmp(e->name + e->name_len - 4, ".npy", 4) != 0)
    return codec_fail(err, CODEC_UNSUPPORTED, "member '%s' is not a .npy file", member_name(e, q));
  return CODEC_OK;
}

int npz_to_record(const unsigned char *blob, uint64_t n, uint64_t limit, buf_t *out, codec_err *err) {
  uint64_t cd_off = 0, cd_size = 0, count = 0, i, pos;
  keyset_t keys;
  buf_t scratch;
  int rc;
  if ((rc = find_directory(blob, n, &cd_off, &cd_size, &count, err)) != CODEC_OK) return rc;
  if (count > cd_size / CENTRAL_SIZE)
    return codec_fail(err, CODEC_CORRUPT, "central directory claims %llu entries in %llu bytes",
                      (unsigned long long)count, (unsigned long long)cd_size);
  keyset_init(&keys);
  buf_init(&scratch, limit ? limit : 1);
  for (i = 0, pos = cd_off; i < count; i++) {
    zip_entry e;
    uint64_t size = 0;
    const unsigned char *data = NULL;
    char q[CODEC_QUOTE_MAX];
    if ((rc = central_entry(blob + pos, cd_off + cd_size - pos, &e, &size, err)) != CODEC_OK) break;
    pos += size;
    if (keyset_get(&keys, e.name, e.name_len) >= 0) {
      rc = codec_fail(err, CODEC_CORRUPT, "duplicate member '%s'", member_name(&e, q));
      break;
    }
    if (keyset_put(&keys, e.name, e.name_len, (int)i)) {
      rc = codec_nomem(err);
      break;
    }
    if ((rc = member_data(blob, n, &e, limit, &scratch, &data, err)) != CODEC_OK) break;
    if (crc_of(data, e.usize) != e.crc) {
      rc = codec_fail(err, CODEC_CORRUPT, "member '%s' fails its CRC-32 check", member_name(&e, q));
      break;
    }
    if ((rc = member_item(&e, data, out, err)) != CODEC_OK) break;
  }
  buf_free(&scratch);
  keyset_free(&keys);
  return rc;
}

/* --- writing ------------------------------------------------------------------- */

/* What np.savez writes (Python's zipfile with force_zip64): version 2.0,
** DOS date 1980-01-01 00:00, made by Unix with mode 0600, a ZIP64 extra
** field in each local header. */
#define ZIP_VERSION 20
#define ZIP_MADE_BY 0x0314
#define ZIP_DOS_DATE 0x0021
#define ZIP_EXT_ATTR 0x01800000u
#define ZIP64_LOCAL_EXTRA 20

typedef struct zip_written {
  uint64_t local;
  uint32_t crc, flags;
  uint64_t csize, usize;
} zip_written;

/* Deflate src into out as Python's zlib.compressobj(-1, DEFLATED, -15). */
static int deflate_into(buf_t *out, const unsigned char *src, uint64_t n, uint64_t *csize, codec_err *err) {
  z_stream zs;
  uLong bound;
  unsigned char *dst;
  int zr;
  memset(&zs, 0, sizeof(zs));
  zs.zalloc = z_alloc;
  zs.zfree = z_free;
  if (deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    return codec_nomem(err);
  bound = deflateBound(&zs, (uLong)n);
  if (buf_reserve(out, bound) != CODEC_OK) {
    deflateEnd(&zs);
    return codec_fail_rc(err, out->rc);
  }
  dst = out->p + out->n;
  zs.next_in = (Bytef *)(uintptr_t)src;
  zs.avail_in = (uInt)n;
  zs.next_out = dst;
  zs.avail_out = (uInt)bound;
  zr = deflate(&zs, Z_FINISH);
  *csize = zs.total_out;
  deflateEnd(&zs);
  if (zr != Z_STREAM_END) return codec_fail(err, zr == Z_MEM_ERROR ? CODEC_NOMEM : CODEC_CORRUPT, "deflate failed");
  out->n += *csize;
  return CODEC_OK;
}

static int is_ascii(const unsigned char *p, uint64_t n) {
  uint64_t k;
  for (k = 0; k < n; k++)
    if (p[k] >= 0x80) return 0;
  return 1;
}

static void put_local_header(unsigned char *h, const zip_written *w, int method, uint32_t name_len) {
  wr32(h, SIG_LOCAL);
  wr16(h + 4, ZIP_VERSION);
  wr16(h + 6, w->flags);
  wr16(h + 8, (uint32_t)method);
  wr16(h + 10, 0);
  wr16(h + 12, ZIP_DOS_DATE);
  wr32(h + 14, w->crc);
  wr32(h + 18, (uint32_t)w->csize);
  wr32(h + 22, (uint32_t)w->usize);
  wr16(h + 26, name_len);
  wr16(h + 28, ZIP64_LOCAL_EXTRA);
}

static void put_zip64_extra(unsigned char *x, const zip_written *w) {
  wr16(x, 1);
  wr16(x + 2, 16);
  wr64(x + 4, w->usize);
  wr64(x + 12, w->csize);
}

int npz_from_record(const record_t *rec, int compress, buf_t *out, codec_err *err) {
  zip_written *w;
  buf_t npy;
  uint64_t cd_start;
  int i, rc = CODEC_OK, method = compress ? 8 : 0;
  if (rec->n > 0xffff)
    return codec_fail(err, CODEC_UNSUPPORTED, "more than 65535 arrays need ZIP64, which is not written");
  w = codec_malloc((uint64_t)(rec->n ? rec->n : 1) * sizeof(zip_written));
  if (!w) return codec_nomem(err);
  buf_init(&npy, out->limit);
  for (i = 0; i < rec->n && rc == CODEC_OK; i++) {
    const record_item *it = &rec->items[i];
    const unsigned char *data;
    uint64_t head_at, name_len = it->key.n + 4;
    unsigned char *h;
    npy_array a;
    if ((rc = array_open(it, i, &a, err)) != CODEC_OK) break;
    if (name_len > 0xffff || memchr(it->key.p, 0, (size_t)it->key.n)) {
      /* Python's zipfile cuts a member name at its first NUL. */
      char q[CODEC_QUOTE_MAX];
      rc = codec_fail(err, CODEC_UNSUPPORTED, "key '%s' cannot be a zip member name (%s, item %d)",
                      codec_quote(q, sizeof(q), it->key.p, it->key.n),
                      name_len > 0xffff ? "too long" : "it holds a NUL", i);
      break;
    }
    if (record_item_is_numpy(it)) {
      data = it->data.p;
      w[i].usize = it->data.n;
    } else { /* a raw legacy item: its .npy, as numpy.save writes it */
      npy.n = 0;
      array_write_npy(&npy, it, &a);
      if (npy.rc) {
        rc = codec_fail_rc(err, npy.rc);
        break;
      }
      data = npy.p;
      w[i].usize = npy.n;
    }
    w[i].crc = crc_of(data, w[i].usize);
    w[i].flags = is_ascii(it->key.p, it->key.n) ? 0 : 0x800; /* UTF-8 name */
    w[i].local = out->n;
    head_at = out->n;
    /* Header first (sizes patched in once the data is written). */
    if (!buf_extend(out, LOCAL_SIZE)) break;
    buf_append(out, it->key.p, it->key.n);
    buf_append(out, ".npy", 4);
    if (!buf_extend(out, ZIP64_LOCAL_EXTRA)) break;
    if (compress) {
      if ((rc = deflate_into(out, data, w[i].usize, &w[i].csize, err)) != CODEC_OK) break;
    } else {
      buf_append(out, data, w[i].usize);
      w[i].csize = w[i].usize;
    }
    if (out->rc) break;
    h = out->p + head_at;
    put_local_header(h, &w[i], method, (uint32_t)name_len);
    put_zip64_extra(h + LOCAL_SIZE + name_len, &w[i]);
  }
  cd_start = out->n;
  for (i = 0; i < rec->n && rc == CODEC_OK && !out->rc; i++) {
    const record_item *it = &rec->items[i];
    unsigned char *c = buf_extend(out, CENTRAL_SIZE);
    if (!c) break;
    wr32(c, SIG_CENTRAL);
    wr16(c + 4, ZIP_MADE_BY);
    wr16(c + 6, ZIP_VERSION);
    wr16(c + 8, w[i].flags);
    wr16(c + 10, (uint32_t)method);
    wr16(c + 12, 0);
    wr16(c + 14, ZIP_DOS_DATE);
    wr32(c + 16, w[i].crc);
    wr32(c + 20, (uint32_t)w[i].csize);
    wr32(c + 24, (uint32_t)w[i].usize);
    wr16(c + 28, (uint32_t)(it->key.n + 4));
    memset(c + 30, 0, 8); /* extra, comment, disk, internal attributes */
    wr32(c + 38, ZIP_EXT_ATTR);
    wr32(c + 42, (uint32_t)w[i].local);
    buf_append(out, it->key.p, it->key.n);
    buf_append(out, ".npy", 4);
  }
  if (rc == CODEC_OK && !out->rc) {
    unsigned char *e = buf_extend(out, EOCD_SIZE);
    if (e) {
      uint64_t cd_size = out->n - EOCD_SIZE - cd_start;
      wr32(e, SIG_EOCD);
      wr32(e + 4, 0);
      wr16(e + 8, (uint32_t)rec->n);
      wr16(e + 10, (uint32_t)rec->n);
      wr32(e + 12, (uint32_t)cd_size);
      wr32(e + 16, (uint32_t)cd_start);
      wr16(e + 20, 0);
      /* Offsets and sizes beyond 32 bits would need ZIP64 records. */
      if (out->n > 0xffffffffu)
        rc = codec_fail(err, CODEC_TOOBIG, "archive over 4 GiB needs ZIP64, which is not written");
    }
  }
  if (rc == CODEC_OK && out->rc) rc = codec_fail_rc(err, out->rc);
  buf_free(&npy);
  codec_free(w);
  return rc;
}
