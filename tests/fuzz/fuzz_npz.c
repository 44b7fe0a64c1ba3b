/* SPDX-License-Identifier: Apache-2.0 */
/*
** fuzz_npz.c — libFuzzer harness for the .npz reader (npz_to_record: the
** ZIP end records, ZIP64, central directory, local headers, stored and
** deflate members, CRC-32, the size limit) and the writer npz_from_record.
**
** Properties: errors are well-formed; an archive that reads gives a record
** that parses, whose items are .npy arrays no larger than the limit; written
** back stored and deflated, both archives read to the very same record
** bytes, and writing is deterministic. A smaller limit only turns results
** into CODEC_TOOBIG. The pipeline runs again with one allocation failing
** (fuzz_oom_check; zlib allocates through the same hooks).
**
** Input: an archive as it is, or, when the first byte is 0xB1, members for
** the harness to pack into a well-formed archive (so deflate streams and
** .npy payloads are reached past the CRC check). Then the input is parts
** separated by "@@@@", one per member:
**   [0] flags: 1 deflate the payload (zlib, level [1] % 10), 2 the payload
**       is a raw deflate stream already (CRC and size of what it inflates
**       to), 4 ZIP64 extra field in the central directory (sizes and offset
**       set to 0xffffffff), 8 write a ZIP64 end record and locator,
**       16 an archive comment, 32 the CRC off by one, 64 the name as given
**       (else ".npy" is appended), 128 the stated size off by one
**   [1] compression level   [2] name length (% 32), then the name, then the
**       payload
**
** Seeds in tests/fuzz/corpus/npz are made by tests/fuzz/gen_seeds.py.
*/
#include <zlib.h>

#include "../host/failalloc.h"
#include "fuzz.h"
#include "codec/npz.h"

#define LIMIT ((uint64_t)1 << 20)
#define MAX_MEMBERS 16

typedef struct input {
  const uint8_t *data;
  size_t size;
} input;

/* --- packing members into an archive -------------------------------------------- */

static void put16(buf_t *b, uint32_t v) {
  unsigned char x[2] = {(unsigned char)v, (unsigned char)(v >> 8)};
  buf_append(b, x, 2);
}
static void put32(buf_t *b, uint32_t v) {
  put16(b, v & 0xffff);
  put16(b, v >> 16);
}
static void put64(buf_t *b, uint64_t v) {
  put32(b, (uint32_t)v);
  put32(b, (uint32_t)(v >> 32));
}

typedef struct member {
  int flags;
  const unsigned char *name;
  size_t name_len;
  unsigned char *stored; /* malloc'd: the bytes in the archive */
  size_t csize, usize;
  uint32_t crc;
  uint64_t local;
} member;

/* Inflate a raw deflate stream (up to 4 MiB) for its size and CRC. */
static void inflated_size(const unsigned char *p, size_t n, size_t *usize, uint32_t *crc) {
  z_stream zs;
  unsigned char chunk[4096];
  uLong c = crc32(0L, Z_NULL, 0);
  int zr = Z_OK;
  memset(&zs, 0, sizeof(zs));
  *usize = 0;
  FUZZ_CHECK(inflateInit2(&zs, -MAX_WBITS) == Z_OK);
  zs.next_in = (Bytef *)(uintptr_t)p;
  zs.avail_in = (uInt)n;
  while (zr == Z_OK && *usize < (4u << 20)) {
    zs.next_out = chunk;
    zs.avail_out = sizeof(chunk);
    zr = inflate(&zs, Z_NO_FLUSH);
    c = crc32(c, chunk, (uInt)(sizeof(chunk) - zs.avail_out));
    *usize += sizeof(chunk) - zs.avail_out;
    if (zs.avail_out == sizeof(chunk) && zr == Z_OK) break; /* no progress */
  }
  inflateEnd(&zs);
  *crc = (uint32_t)c;
}

static void pack_member(member *m, const fuzz_part *part) {
  const unsigned char *p = part->p;
  size_t n = part->n, len, k;
  int level;
  m->flags = n > 0 ? p[0] : 0;
  level = n > 1 ? p[1] % 10 : 6;
  len = n > 2 ? p[2] % 32 : 0;
  p += n > 3 ? 3 : n;
  n -= n > 3 ? 3 : n;
  if (len > n) len = n;
  m->name = p;
  m->name_len = len;
  p += len;
  n -= len;
  m->usize = n;
  m->crc = (uint32_t)crc32(crc32(0L, Z_NULL, 0), p, (uInt)n);
  if (m->flags & 1) {
    z_stream zs;
    uLong bound;
    memset(&zs, 0, sizeof(zs));
    FUZZ_CHECK(deflateInit2(&zs, level, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY) == Z_OK);
    bound = deflateBound(&zs, (uLong)n);
    m->stored = malloc(bound ? bound : 1);
    FUZZ_CHECK(m->stored != NULL);
    zs.next_in = (Bytef *)(uintptr_t)p;
    zs.avail_in = (uInt)n;
    zs.next_out = m->stored;
    zs.avail_out = (uInt)bound;
    FUZZ_CHECK(deflate(&zs, Z_FINISH) == Z_STREAM_END);
    m->csize = zs.total_out;
    deflateEnd(&zs);
  } else {
    m->stored = malloc(n ? n : 1);
    FUZZ_CHECK(m->stored != NULL);
    for (k = 0; k < n; k++) m->stored[k] = p[k];
    m->csize = n;
    if (m->flags & 2) inflated_size(p, n, &m->usize, &m->crc);
  }
  if (m->flags & 32) m->crc++;
  if (m->flags & 128) m->usize++;
}

static int method_of(const member *m) { return m->flags & 3 ? 8 : 0; }

static void name_of(buf_t *b, const member *m) {
  buf_append(b, m->name, m->name_len);
  if (!(m->flags & 64)) buf_append(b, ".npy", 4);
}

static uint32_t name_size(const member *m) { return (uint32_t)m->name_len + (m->flags & 64 ? 0 : 4); }

/* A well-formed archive of the members, as Python's zipfile writes one. */
static void pack(buf_t *zip, const uint8_t *data, size_t size) {
  fuzz_part parts[MAX_MEMBERS];
  member m[MAX_MEMBERS];
  int n = fuzz_split(data, size, parts, MAX_MEMBERS), i, zip64_end = 0, comment = 0;
  uint64_t cd_start, cd_size;
  for (i = 0; i < n; i++) {
    pack_member(&m[i], &parts[i]);
    zip64_end |= m[i].flags & 8;
    comment |= m[i].flags & 16;
    m[i].local = zip->n;
    put32(zip, 0x04034b50u);
    put16(zip, 20);
    put16(zip, 0);
    put16(zip, (uint32_t)method_of(&m[i]));
    put16(zip, 0);
    put16(zip, 0x21);
    put32(zip, m[i].crc);
    put32(zip, (uint32_t)m[i].csize);
    put32(zip, (uint32_t)m[i].usize);
    put16(zip, name_size(&m[i]));
    put16(zip, 0);
    name_of(zip, &m[i]);
    buf_append(zip, m[i].stored, m[i].csize);
  }
  cd_start = zip->n;
  for (i = 0; i < n; i++) {
    int z64 = (m[i].flags & 4) != 0;
    put32(zip, 0x02014b50u);
    put16(zip, 0x0314);
    put16(zip, z64 ? 45 : 20);
    put16(zip, 0);
    put16(zip, (uint32_t)method_of(&m[i]));
    put16(zip, 0);
    put16(zip, 0x21);
    put32(zip, m[i].crc);
    put32(zip, z64 ? 0xffffffffu : (uint32_t)m[i].csize);
    put32(zip, z64 ? 0xffffffffu : (uint32_t)m[i].usize);
    put16(zip, name_size(&m[i]));
    put16(zip, z64 ? 28 : 0);
    put16(zip, 0);
    put16(zip, 0);
    put16(zip, 0);
    put32(zip, 0x01800000u);
    put32(zip, z64 ? 0xffffffffu : (uint32_t)m[i].local);
    name_of(zip, &m[i]);
    if (z64) {
      put16(zip, 1);
      put16(zip, 24);
      put64(zip, m[i].usize);
      put64(zip, m[i].csize);
      put64(zip, m[i].local);
    }
    free(m[i].stored);
  }
  cd_size = zip->n - cd_start;
  if (zip64_end) {
    uint64_t at = zip->n;
    put32(zip, 0x06064b50u);
    put64(zip, 44);
    put16(zip, 45);
    put16(zip, 45);
    put32(zip, 0);
    put32(zip, 0);
    put64(zip, (uint64_t)n);
    put64(zip, (uint64_t)n);
    put64(zip, cd_size);
    put64(zip, cd_start);
    put32(zip, 0x07064b50u);
    put32(zip, 0);
    put64(zip, at);
    put32(zip, 1);
  }
  put32(zip, 0x06054b50u);
  put32(zip, 0);
  put16(zip, zip64_end ? 0xffff : (uint32_t)n);
  put16(zip, zip64_end ? 0xffff : (uint32_t)n);
  put32(zip, zip64_end ? 0xffffffffu : (uint32_t)cd_size);
  put32(zip, zip64_end ? 0xffffffffu : (uint32_t)cd_start);
  put16(zip, comment ? 7 : 0);
  if (comment) buf_append(zip, "comment", 7);
  FUZZ_CHECK(zip->rc == CODEC_OK);
}

/* The archive an input stands for: itself, or packed. */
static void archive(const uint8_t *data, size_t size, buf_t *zip, const uint8_t **p, size_t *n) {
  buf_init(zip, UINT64_MAX);
  if (size > 0 && data[0] == 0xB1) {
    pack(zip, data + 1, size - 1);
    *p = zip->p ? zip->p : (const uint8_t *)"";
    *n = zip->n;
  } else {
    *p = data;
    *n = size;
  }
}

/* --- the pipeline ----------------------------------------------------------------- */

/* Read zip[0..n) into rec (bytes), write it back stored and deflated. */
static int read_write(const uint8_t *zip, size_t n, uint64_t limit, buf_t *rec, buf_t *z0, buf_t *z1, codec_err *err) {
  record_t r;
  int rc = npz_to_record(zip, n, limit, rec, err);
  if (rc != CODEC_OK) return rc;
  record_init(&r);
  rc = record_parse(&r, rec->n ? rec->p : (const unsigned char *)"", rec->n, err);
  if (rc == CODEC_OK) rc = npz_from_record(&r, 0, z0, err);
  if (rc == CODEC_OK) rc = npz_from_record(&r, 1, z1, err);
  record_clear(&r);
  return rc;
}

static int pipeline(const void *arg, buf_t *out) {
  const input *in = arg;
  buf_t rec, z0, z1;
  codec_err err;
  int rc;
  buf_init(&rec, UINT64_MAX);
  buf_init(&z0, UINT64_MAX);
  buf_init(&z1, UINT64_MAX);
  rc = read_write(in->data, in->size, LIMIT, &rec, &z0, &z1, &err);
  buf_append(out, &rc, sizeof(rc));
  buf_append(out, rec.p, rec.n);
  buf_append(out, z0.p, z0.n);
  buf_append(out, z1.p, z1.n);
  buf_free(&rec);
  buf_free(&z0);
  buf_free(&z1);
  return rc == CODEC_OK && out->rc ? out->rc : rc;
}

static void check_properties(const uint8_t *zip, size_t n) {
  buf_t rec, z0, z1, again, small;
  record_t r;
  codec_err err;
  int rc, i;
  buf_init(&rec, UINT64_MAX);
  buf_init(&z0, UINT64_MAX);
  buf_init(&z1, UINT64_MAX);
  buf_init(&again, UINT64_MAX);
  buf_init(&small, UINT64_MAX);
  record_init(&r);
  err.msg[0] = 0;
  rc = read_write(zip, n, LIMIT, &rec, &z0, &z1, &err);
  if (rc != CODEC_OK) {
    fuzz_check_error(rc, &err);
    /* Writing fails only for a key with a NUL, which zip names cannot hold. */
    FUZZ_CHECK(rc == CODEC_CORRUPT || rc == CODEC_UNSUPPORTED || rc == CODEC_TOOBIG);
    if (rc == CODEC_TOOBIG) FUZZ_CHECK(strstr(err.msg, "would be") != NULL);
    goto done;
  }
  FUZZ_CHECK(record_parse(&r, rec.n ? rec.p : (const unsigned char *)"", rec.n, &err) == CODEC_OK);
  for (i = 0; i < r.n; i++) {
    npy_array a;
    FUZZ_CHECK(record_item_is_numpy(&r.items[i]) && r.items[i].data.n <= LIMIT);
    FUZZ_CHECK(npy_parse(r.items[i].data.p, r.items[i].data.n, &a, &err) == CODEC_OK);
  }
  /* Both archives read back to the same record. */
  FUZZ_CHECK(npz_to_record(z0.p, z0.n, LIMIT, &again, &err) == CODEC_OK && fuzz_same_buf(&again, &rec));
  again.n = 0;
  FUZZ_CHECK(npz_to_record(z1.p, z1.n, LIMIT, &again, &err) == CODEC_OK && fuzz_same_buf(&again, &rec));
  /* Writing is deterministic. */
  again.n = 0;
  FUZZ_CHECK(npz_from_record(&r, 0, &again, &err) == CODEC_OK && fuzz_same_buf(&again, &z0));
  /* A limit below the largest member: too big, never another answer. */
  if (r.n > 0) {
    uint64_t largest = 0;
    for (i = 0; i < r.n; i++)
      if (r.items[i].data.n > largest) largest = r.items[i].data.n;
    if (largest > 0) {
      rc = npz_to_record(zip, n, largest - 1, &small, &err);
      FUZZ_CHECK(rc == CODEC_TOOBIG);
    }
  }
done:
  record_clear(&r);
  buf_free(&rec);
  buf_free(&z0);
  buf_free(&z1);
  buf_free(&again);
  buf_free(&small);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  input in;
  buf_t packed;
  fuzz_alloc_setup();
  archive(size ? data : (const uint8_t *)"", size, &packed, &in.data, &in.size);
  check_properties(in.data, in.size);
  fuzz_oom_check(pipeline, &in, fuzz_hash(data, size));
  buf_free(&packed);
  return 0;
}
