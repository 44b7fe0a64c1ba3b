/* SPDX-License-Identifier: Apache-2.0 */
/*
** fuzz_packed.c — libFuzzer harness for packed records (codec/packed.h):
** unpacking hostile BLOBs, and packing fuzzed records and unpacking them.
**
** Input, by its first byte:
**   0x50 'P'  pack: the rest is parts separated by "@@@@": [0] a control
**             block, then the record's items and, after an empty part, the
**             base's (each part an item: its first byte picks a dtype, the
**             rest is the payload, made into a .npy of that dtype; keys
**             k0, k1, ... in order on both sides, so arrays meet their
**             base). control[0]: bit 0 no base, bit 1 lossy (bit 2:
**             bfloat16), bit 3 pack a RecordDict holding the record and a
**             metric record, bit 4 take the record's parts as raw bytes
**             (parsed as an ArrayRecord as they are); control[1] % 3 + 10:
**             chunk_log2; control[2..] positions and bits to change in the
**             packed BLOB, and control[last] a length to cut it to.
**   anything  unpack: the input is a packed BLOB, unpacked with no base and
**             with a fixed base record (three small float arrays).
**
** Properties: errors are well-formed (and CODEC_CORRUPT, RANGE or
** UNSUPPORTED, or NOMEM / TOOBIG); packing is deterministic; a lossless
** BLOB unpacks to the record, bit for bit, a lossy one to a record of the
** same size whose non-float arrays are exact; packed_open of what packing
** wrote succeeds and its entries add up; a changed or cut BLOB unpacks to
** the very same bytes or fails, never to another record. Pack and unpack
** run again with one allocation failing (fuzz_oom_check: zstd allocates
** through the same hooks).
**
** seeds: tests/fuzz/corpus/packed
*/
#include "../host/failalloc.h"
#include "codec/npy.h"
#include "codec/packed.h"
#include "codec/recorddict.h"
#include "fuzz.h"

#define LIMIT ((uint64_t)1 << 22)
#define MAX_PARTS 24

static const dt_type dtypes[] = {DT_FLOAT32, DT_FLOAT64, DT_FLOAT16,   DT_INT8,
                                 DT_INT64,   DT_UINT16,  DT_COMPLEX64, DT_BOOL};

/* An item from one part: dtype by its first byte, payload the rest (cut to
** whole items); the same dtype big-endian when bit 3 is set, Fortran order
** (shape [2, n/2]) when bit 4 is. */
static void add_part(buf_t *rec, int index, const fuzz_part *part) {
  dt_dtype d;
  int64_t shape[2];
  char key[16], name[DT_NAME_MAX];
  record_item_spec spec;
  npy_array a;
  codec_err err;
  buf_t npy;
  unsigned flags = part->n ? part->p[0] : 0;
  uint64_t size, n;
  int ndim = 1;
  d.type = (unsigned char)dtypes[flags % 8];
  d.big = (flags & 8) && dt_size(d.type) > 1;
  size = dt_size(d.type);
  n = part->n > 1 ? (part->n - 1) / size : 0;
  shape[0] = (int64_t)n;
  if ((flags & 16) && n % 2 == 0 && n) ndim = 2, shape[0] = 2, shape[1] = (int64_t)n / 2;
  buf_init(&npy, UINT64_MAX);
  npy_write_header(&npy, d, ndim, shape, (flags & 16) && ndim == 2);
  buf_append(&npy, part->n > 1 ? part->p + 1 : (const unsigned char *)"", n * size);
  FUZZ_CHECK(npy.rc == CODEC_OK && npy_parse(npy.p, npy.n, &a, &err) == CODEC_OK);
  snprintf(key, sizeof(key), "k%d", index);
  dt_name(d, name);
  memset(&spec, 0, sizeof(spec));
  spec.key.p = (const unsigned char *)key;
  spec.key.n = strlen(key);
  spec.dtype.p = (const unsigned char *)name;
  spec.dtype.n = strlen(name);
  spec.stype.p = (const unsigned char *)RECORD_STYPE_NUMPY;
  spec.stype.n = strlen(RECORD_STYPE_NUMPY);
  spec.ndim = ndim;
  spec.shape = shape;
  spec.data.p = npy.p;
  spec.data.n = npy.n;
  record_write_item(rec, &spec);
  buf_free(&npy);
}

typedef struct job {
  const unsigned char *rec, *base; /* base NULL: none */
  uint64_t rec_n, base_n;
  int kind;
  packed_options o;
} job;

/* pack, then unpack what it made: both results, for fuzz_oom_check */
static int pack_unpack(const void *arg, buf_t *out) {
  const job *j = arg;
  buf_t packed;
  codec_err err;
  int rc;
  buf_init(&packed, LIMIT);
  rc = packed_encode(&packed, j->kind, j->rec, j->rec_n, j->base, j->base_n, &j->o, &err);
  if (rc == CODEC_OK) rc = packed_decode(out, buf_at(&packed, 0), packed.n, j->base, j->base_n, &err);
  buf_append(out, &rc, sizeof(rc));
  buf_append(out, buf_at(&packed, 0), packed.n);
  buf_free(&packed);
  return rc == CODEC_OK && out->rc ? out->rc : rc;
}

static void check_error(int rc, const codec_err *err) {
  fuzz_check_error(rc, err);
  FUZZ_CHECK(rc == CODEC_CORRUPT || rc == CODEC_RANGE || rc == CODEC_UNSUPPORTED || rc == CODEC_NOMEM ||
             rc == CODEC_TOOBIG);
}

/* Unpack p[0..n): an error, or (want not NULL) exactly want. */
static void unpack_check(const unsigned char *p, uint64_t n, const buf_t *base, const buf_t *want) {
  buf_t out;
  codec_err err;
  int rc;
  buf_init(&out, LIMIT);
  err.msg[0] = 0;
  rc = packed_decode(&out, p, n, base ? buf_at(base, 0) : NULL, base ? base->n : 0, &err);
  if (rc != CODEC_OK) {
    check_error(rc, &err);
    FUZZ_CHECK(out.n == 0);
  } else if (want) {
    FUZZ_CHECK(fuzz_same_buf(&out, want));
  } else {
    packed_view v;
    packed_view_init(&v);
    FUZZ_CHECK(packed_open(&v, p, n, LIMIT, &err) == CODEC_OK && v.h.size == out.n);
    packed_view_clear(&v);
  }
  buf_free(&out);
}

/* Is every array that is not float32/float64 the same in a and b? */
static void check_exact_but_floats(const buf_t *a, const buf_t *b, int kind) {
  record_t ra, rb;
  codec_err err;
  int i;
  if (kind != PACKED_RECORD) return;
  record_init(&ra);
  record_init(&rb);
  if (record_parse(&ra, buf_at(a, 0), a->n, &err) == CODEC_OK &&
      record_parse(&rb, buf_at(b, 0), b->n, &err) == CODEC_OK) {
    FUZZ_CHECK(ra.n == rb.n);
    for (i = 0; i < ra.n; i++) {
      packed_payload pa;
      packed_item_payload(&ra.items[i], &pa);
      FUZZ_CHECK(ra.items[i].data.n == rb.items[i].data.n);
      if (!pa.real) FUZZ_CHECK(memcmp(ra.items[i].data.p, rb.items[i].data.p, ra.items[i].data.n) == 0);
    }
  }
  record_clear(&ra);
  record_clear(&rb);
}

static void fuzz_pack(const uint8_t *data, size_t size) {
  fuzz_part parts[MAX_PARTS];
  int n = fuzz_split(data, size, parts, MAX_PARTS), i, j, base_at = n, rc;
  const unsigned char *ctl = parts[0].p;
  size_t nctl = parts[0].n;
  unsigned flags = nctl ? ctl[0] : 0;
  buf_t rec, base, wrapped, packed, again, back;
  job jb;
  codec_err err;
  buf_init(&rec, UINT64_MAX);
  buf_init(&base, UINT64_MAX);
  buf_init(&wrapped, UINT64_MAX);
  buf_init(&packed, LIMIT);
  buf_init(&again, LIMIT);
  buf_init(&back, LIMIT);
  for (i = 1; i < n; i++)
    if (parts[i].n == 0) {
      base_at = i;
      break;
    }
  if (flags & 16) {
    if (n > 1) buf_append(&rec, parts[1].p, parts[1].n);
  } else {
    for (i = 1, j = 0; i < base_at; i++) add_part(&rec, j++, &parts[i]);
  }
  for (i = base_at + 1, j = 0; i < n; i++) add_part(&base, j++, &parts[i]);
  memset(&jb, 0, sizeof(jb));
  packed_options_init(&jb.o);
  jb.o.chunk_log2 = 10 + (nctl > 1 ? ctl[1] % 3 : 0);
  jb.o.lossy = flags & 2 ? (flags & 4 ? PACKED_BFLOAT16 : PACKED_FLOAT16) : PACKED_LOSSLESS;
  jb.kind = PACKED_RECORD;
  jb.rec = buf_at(&rec, 0);
  jb.rec_n = rec.n;
  if (!(flags & 1)) jb.base = buf_at(&base, 0), jb.base_n = base.n;
  if (flags & 8) { /* a RecordDict: the record and a metric record */
    recorddict_canon c[2];
    codec_span names[2] = {{(const unsigned char *)"arrays", 6}, {(const unsigned char *)"metrics", 7}};
    recorddict_canon_init(&c[0], UINT64_MAX);
    recorddict_canon_init(&c[1], UINT64_MAX);
    if (recorddict_canon_array(&c[0], names[0], jb.rec, jb.rec_n, &err) == CODEC_OK &&
        recorddict_canon_json(&c[1], names[1], 0, (const unsigned char *)"{\"n\": 3}", 8, "m", &err) == CODEC_OK) {
      recorddict_canon_write_all(&wrapped, c, 2);
      jb.kind = PACKED_RECORDDICT;
      jb.rec = buf_at(&wrapped, 0);
      jb.rec_n = wrapped.n;
    }
    recorddict_canon_clear(&c[0]);
    recorddict_canon_clear(&c[1]);
  }
  err.msg[0] = 0;
  rc = packed_encode(&packed, jb.kind, jb.rec, jb.rec_n, jb.base, jb.base_n, &jb.o, &err);
  if (rc != CODEC_OK) {
    check_error(rc, &err);
    FUZZ_CHECK(rc != CODEC_RANGE || (jb.o.lossy && !jb.base));
    goto done;
  }
  /* deterministic, and it opens */
  FUZZ_CHECK(packed_encode(&again, jb.kind, jb.rec, jb.rec_n, jb.base, jb.base_n, &jb.o, &err) == CODEC_OK &&
             fuzz_same_buf(&again, &packed));
  unpack_check(packed.p, packed.n, NULL, NULL);
  /* the record back */
  rc = packed_decode(&back, packed.p, packed.n, jb.base, jb.base_n, &err);
  FUZZ_CHECK(rc == CODEC_OK && back.n == jb.rec_n);
  if (!jb.o.lossy) {
    FUZZ_CHECK(memcmp(buf_at(&back, 0), jb.rec, (size_t)jb.rec_n) == 0);
  } else {
    buf_t orig;
    orig.p = (unsigned char *)(uintptr_t)jb.rec;
    orig.n = jb.rec_n;
    check_exact_but_floats(&orig, &back, jb.kind);
  }
  /* changed and cut: the same record, or an error */
  {
    unsigned char *copy = malloc(packed.n ? (size_t)packed.n : 1);
    const buf_t *b = jb.base ? &base : NULL;
    size_t k;
    FUZZ_CHECK(copy != NULL);
    memcpy(copy, packed.p, (size_t)packed.n);
    for (k = 2; k + 1 < nctl; k += 2) {
      uint64_t at = ((uint64_t)ctl[k] << 8 | ctl[k + 1]) % packed.n;
      copy[at] ^= (unsigned char)(1u << (ctl[k] % 8));
    }
    unpack_check(copy, packed.n, b, &back);
    if (nctl > 2) unpack_check(packed.p, packed.n * ctl[nctl - 1] / 256, b, &back);
    free(copy);
  }
  fuzz_oom_check(pack_unpack, &jb, fuzz_hash(data, size));
done:
  buf_free(&rec);
  buf_free(&base);
  buf_free(&wrapped);
  buf_free(&packed);
  buf_free(&again);
  buf_free(&back);
}

/* pack_unpack's counterpart for a hostile BLOB: unpack only */
typedef struct blob {
  const unsigned char *p, *base;
  uint64_t n, base_n;
} blob;

static int unpack_only(const void *arg, buf_t *out) {
  const blob *b = arg;
  codec_err err;
  return packed_decode(out, b->p, b->n, b->base, b->base_n, &err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const fuzz_part base_parts[3] = {{(const unsigned char *)"\0abcdefgh", 9},
                                          {(const unsigned char *)"\1ABCDEFGHIJKLMNOP", 17},
                                          {(const unsigned char *)"\2xy", 3}};
  buf_t base;
  blob b;
  int i;
  fuzz_alloc_setup();
  if (size > 0 && data[0] == 'P') {
    fuzz_pack(data + 1, size - 1);
    return 0;
  }
  buf_init(&base, UINT64_MAX);
  for (i = 0; i < 3; i++) add_part(&base, i, &base_parts[i]);
  unpack_check(size ? data : (const uint8_t *)"", size, NULL, NULL);
  unpack_check(size ? data : (const uint8_t *)"", size, &base, NULL);
  b.p = size ? data : (const uint8_t *)"";
  b.n = size;
  b.base = base.p;
  b.base_n = base.n;
  fuzz_oom_check(unpack_only, &b, fuzz_hash(data, size));
  buf_free(&base);
  return 0;
}
