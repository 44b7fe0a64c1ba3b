/* SPDX-License-Identifier: Apache-2.0 */
/*
** test_packed.c — packed records (codec/packed.h): bit-for-bit round trips
** of records holding every .npy of tests/data/npy (every dtype, both byte
** orders, Fortran order, shapes () and 0-length, NaN payloads, -0.0,
** subnormals, infinities, .npy versions 2 and 3, bytes after the payload),
** legacy raw items, raw BF16 items (whole and odd-sized) and items that do
** not read; with and without a base, keys only in the record or only in
** the base, dtypes and shapes changed between them; the empty record; a
** RecordDict; the modes chosen; lossy updates; the errors for a missing or
** wrong base; every truncation and every one-byte change of a packed BLOB
** (an error or the very same record, never another); and allocation
** failures at every step (CODEC_NOMEM, nothing leaked).
*/
#include <dirent.h>
#include <math.h>
#include <stdlib.h>

#include "codec/npy.h"
#include "codec/packed.h"
#include "codec/recorddict.h"
#include "unit.h"

/* --- building records ------------------------------------------------------------ */

static void add_item(buf_t *rec, const char *key, const char *dtype, const char *stype, int ndim, const int64_t *shape,
                     const void *data, uint64_t n) {
  record_item_spec spec;
  memset(&spec, 0, sizeof(spec));
  spec.key.p = (const unsigned char *)key;
  spec.key.n = strlen(key);
  spec.dtype.p = (const unsigned char *)dtype;
  spec.dtype.n = strlen(dtype);
  spec.stype.p = (const unsigned char *)stype;
  spec.stype.n = strlen(stype);
  spec.ndim = ndim;
  spec.shape = shape;
  spec.data.p = data;
  spec.data.n = n;
  record_write_item(rec, &spec);
}

/* An item holding .npy bytes (the record's dtype and shape from its header). */
static void add_npy(buf_t *rec, const char *key, const unsigned char *npy, uint64_t n) {
  npy_array a;
  codec_err err;
  char name[DT_NAME_MAX];
  if (npy_parse(npy, n, &a, &err) != CODEC_OK) {
    add_item(rec, key, "float32", RECORD_STYPE_NUMPY, 0, NULL, npy, n); /* kept as bytes */
    return;
  }
  dt_name(a.dtype, name);
  add_item(rec, key, name, RECORD_STYPE_NUMPY, a.ndim, a.shape, npy, n);
}

/* Every .npy of tests/data/npy as an item (key: the file name), each with
** its payload changed by `delta` every third byte; `skip` leaves out names
** starting with it. */
static int npy_record(buf_t *rec, int delta, const char *skip) {
  DIR *d = opendir("tests/data/npy");
  struct dirent *ent;
  int count = 0;
  if (!d) return 0;
  while ((ent = readdir(d)) != NULL) {
    char rel[300];
    uint64_t n, i;
    unsigned char *p;
    npy_array a;
    codec_err err;
    if (!strstr(ent->d_name, ".npy") || (skip && strncmp(ent->d_name, skip, strlen(skip)) == 0)) continue;
    snprintf(rel, sizeof(rel), "npy/%s", ent->d_name);
    if (!(p = unit_read_file(rel, &n))) continue;
    if (delta && npy_parse(p, n, &a, &err) == CODEC_OK)
      for (i = a.header_len; i < a.header_len + a.nbytes; i += 3) p[i] = (unsigned char)(p[i] + delta);
    add_npy(rec, ent->d_name, p, n);
    free(p);
    count++;
  }
  closedir(d);
  return count;
}

/* Extra items of every other kind packing meets. */
static void odd_items(buf_t *rec, int delta) {
  static const int64_t shape3[] = {3}, shape2x2[] = {2, 2}, shape5[] = {5};
  unsigned char raw[24], bf16[10], trailing[200];
  npy_array a;
  codec_err err;
  buf_t npy;
  int i;
  for (i = 0; i < 24; i++) raw[i] = (unsigned char)(i * 7 + delta);
  for (i = 0; i < 10; i++) bf16[i] = (unsigned char)(i * 13 + delta);
  add_item(rec, "legacy", "float64", "", 1, shape3, raw, 24);                  /* a legacy raw item */
  add_item(rec, "legacy_be", ">i4", "", 2, shape2x2, raw, 16);                 /* big-endian, raw */
  add_item(rec, "bf16", "BF16", "safetensors", 1, shape5, bf16, 10);           /* a dtype NumPy lacks */
  add_item(rec, "bf16_odd", "BF16", "safetensors", 1, shape5, bf16, 9);        /* bytes that are no items */
  add_item(rec, "garbage", "float32", RECORD_STYPE_NUMPY, 1, shape3, raw, 13); /* no .npy */
  add_item(rec, "unknown_dtype", "float8", "", 1, shape3, raw, 3);             /* no NumPy dtype */
  buf_init(&npy, UINT64_MAX);                                                  /* bytes after the payload */
  npy_write(&npy, dt_native(DT_FLOAT32), 1, shape3, raw, 12);
  memcpy(trailing, npy.p, (size_t)npy.n);
  memcpy(trailing + npy.n, "tail", 4);
  if (npy_parse(trailing, npy.n + 4, &a, &err) == CODEC_OK)
    add_item(rec, "trailing", "float32", RECORD_STYPE_NUMPY, 1, shape3, trailing, npy.n + 4);
  buf_free(&npy);
}

/* --- packing and unpacking ----------------------------------------------------------- */

static int pack(buf_t *out, int kind, const buf_t *rec, const buf_t *base, int lossy, codec_err *err) {
  packed_options o;
  packed_options_init(&o);
  o.lossy = lossy;
  return packed_encode(out, kind, buf_at(rec, 0), rec->n, base ? buf_at(base, 0) : NULL, base ? base->n : 0, &o, err);
}

static int unpack(buf_t *out, const buf_t *packed, const buf_t *base, codec_err *err) {
  return packed_decode(out, buf_at(packed, 0), packed->n, base ? buf_at(base, 0) : NULL, base ? base->n : 0, err);
}

static int same(const buf_t *a, const buf_t *b) {
  return a->n == b->n && memcmp(buf_at(a, 0), buf_at(b, 0), a->n) == 0;
}

/* Pack and unpack: the same bytes; returns the packed size (0 on failure). */
static uint64_t round_trip(int kind, const buf_t *rec, const buf_t *base) {
  buf_t packed, back;
  codec_err err;
  uint64_t n = 0;
  buf_init(&packed, UINT64_MAX);
  buf_init(&back, UINT64_MAX);
  if (pack(&packed, kind, rec, base, 0, &err) == CODEC_OK && unpack(&back, &packed, base, &err) == CODEC_OK &&
      same(&back, rec))
    n = packed.n;
  else
    printf("  round trip: %s\n", err.msg);
  buf_free(&packed);
  buf_free(&back);
  return n;
}

/* The mode each array got (by key), from an opened packed BLOB. */
static int mode_of(const buf_t *packed, const char *key) {
  packed_view v;
  codec_err err;
  uint32_t i;
  int mode = -1;
  packed_view_init(&v);
  if (packed_open(&v, packed->p, packed->n, UINT64_MAX, &err) == CODEC_OK)
    for (i = 0; i < v.h.count; i++)
      if (v.e[i].key.n == strlen(key) && memcmp(v.e[i].key.p, key, v.e[i].key.n) == 0) mode = v.e[i].mode;
  packed_view_clear(&v);
  return mode;
}

TEST(packed_round_trips_every_kind_of_array) {
  buf_t rec, base, other, empty;
  buf_init(&rec, UINT64_MAX);
  buf_init(&base, UINT64_MAX);
  buf_init(&other, UINT64_MAX);
  buf_init(&empty, UINT64_MAX);
  CHECK(npy_record(&rec, 0, NULL) > 30);
  odd_items(&rec, 0);
  npy_record(&base, 1, "dtype_le_f8"); /* a key only in the record */
  odd_items(&base, 1);
  add_item(&base, "only_in_base", "uint8", RECORD_STYPE_NUMPY, 0, NULL, NULL, 0);
  npy_record(&other, 0, "dtype_be"); /* the same arrays, some left out */
  CHECK(round_trip(PACKED_RECORD, &rec, NULL));
  CHECK(round_trip(PACKED_RECORD, &rec, &base));
  CHECK(round_trip(PACKED_RECORD, &rec, &rec));
  CHECK(round_trip(PACKED_RECORD, &rec, &other));
  CHECK(round_trip(PACKED_RECORD, &rec, &empty));
  CHECK(round_trip(PACKED_RECORD, &empty, &rec));
  CHECK(round_trip(PACKED_RECORD, &empty, NULL));
  CHECK(round_trip(PACKED_RECORD, &base, &rec));
  buf_free(&rec);
  buf_free(&base);
  buf_free(&other);
  buf_free(&empty);
}

TEST(packed_dtype_and_shape_changes_against_the_base) {
  static const int64_t s6[] = {6}, s23[] = {2, 3}, s32[] = {3, 2}, s3[] = {3};
  float f[6] = {1, 2, 3, 4, 5, 6};
  double d[3] = {1, 2, 3};
  buf_t rec, base, packed;
  codec_err err;
  buf_init(&rec, UINT64_MAX);
  buf_init(&base, UINT64_MAX);
  buf_init(&packed, UINT64_MAX);
  /* as raw items: the same bytes under another shape, and another dtype */
  add_item(&base, "reshaped", "float32", "", 2, s23, f, 24);
  add_item(&rec, "reshaped", "float32", "", 2, s32, f, 24);
  add_item(&base, "retyped", "float32", "", 1, s6, f, 24);
  add_item(&rec, "retyped", "float64", "", 1, s3, d, 24);
  add_item(&base, "longer", "float32", "", 1, s3, f, 12);
  add_item(&rec, "longer", "float32", "", 1, s6, f, 24);
  CHECK(round_trip(PACKED_RECORD, &rec, &base));
  CHECK(pack(&packed, PACKED_RECORD, &rec, &base, 0, &err) == CODEC_OK);
  CHECK(mode_of(&packed, "reshaped") == PACKED_SAME); /* the same bytes: nothing stored */
  CHECK(mode_of(&packed, "retyped") == PACKED_RAW);   /* items of another width: no base */
  CHECK(mode_of(&packed, "longer") == PACKED_RAW);
  buf_free(&rec);
  buf_free(&base);
  buf_free(&packed);
}

/* A float32 model and an update of it, large enough for zstd to pay. */
static void model_pair(buf_t *rec, buf_t *base, uint64_t n) {
  static const int64_t shape_one[] = {1};
  int64_t shape[1];
  float *w = malloc(n * sizeof(float)), *u = malloc(n * sizeof(float)), one = 1;
  uint64_t i;
  buf_t npy;
  buf_init(&npy, UINT64_MAX);
  shape[0] = (int64_t)n;
  for (i = 0; i < n; i++) {
    w[i] = (float)sin((double)i * 0.37) * 0.1f;
    u[i] = w[i] + (float)cos((double)i * 1.3) * 1e-4f;
  }
  npy_write(&npy, dt_native(DT_FLOAT32), 1, shape, w, n * sizeof(float));
  add_npy(base, "w", npy.p, npy.n);
  npy.n = 0;
  npy_write(&npy, dt_native(DT_FLOAT32), 1, shape, u, n * sizeof(float));
  add_npy(rec, "w", npy.p, npy.n);
  npy.n = 0;
  npy_write(&npy, dt_native(DT_FLOAT32), 1, shape_one, &one, 4);
  add_npy(base, "b", npy.p, npy.n);
  add_npy(rec, "b", npy.p, npy.n);
  buf_free(&npy);
  free(w);
  free(u);
}

TEST(packed_modes_and_sizes) {
  buf_t rec, base, packed;
  codec_err err;
  uint64_t with, without;
  buf_init(&rec, UINT64_MAX);
  buf_init(&base, UINT64_MAX);
  buf_init(&packed, UINT64_MAX);
  model_pair(&rec, &base, 200000);
  with = round_trip(PACKED_RECORD, &rec, &base);
  without = round_trip(PACKED_RECORD, &rec, NULL);
  CHECK(with && without && with < without && without < rec.n);
  CHECK(pack(&packed, PACKED_RECORD, &rec, &base, 0, &err) == CODEC_OK);
  CHECK(mode_of(&packed, "w") == PACKED_DIFF || mode_of(&packed, "w") == PACKED_XOR);
  CHECK(mode_of(&packed, "b") == PACKED_SAME);
  packed.n = 0;
  CHECK(pack(&packed, PACKED_RECORD, &rec, NULL, 0, &err) == CODEC_OK);
  CHECK(mode_of(&packed, "w") == PACKED_PLANES && mode_of(&packed, "b") == PACKED_RAW);
  buf_free(&rec);
  buf_free(&base);
  buf_free(&packed);
}

TEST(packed_lossy_keeps_its_error_and_the_rest_exact) {
  buf_t rec, base, packed, back;
  packed_view v;
  codec_err err;
  record_t a, b;
  int i;
  buf_init(&rec, UINT64_MAX);
  buf_init(&base, UINT64_MAX);
  buf_init(&packed, UINT64_MAX);
  buf_init(&back, UINT64_MAX);
  model_pair(&rec, &base, 100000);
  odd_items(&rec, 0);
  odd_items(&base, 1);
  CHECK(pack(&packed, PACKED_RECORD, &rec, NULL, PACKED_FLOAT16, &err) == CODEC_RANGE); /* needs a base */
  CHECK(strstr(err.msg, "needs a base") != NULL);
  CHECK(pack(&packed, PACKED_RECORD, &rec, &base, PACKED_FLOAT16, &err) == CODEC_OK);
  CHECK(unpack(&back, &packed, &base, &err) == CODEC_OK);
  CHECK(mode_of(&packed, "w") == PACKED_LOSSY && mode_of(&packed, "legacy") != PACKED_LOSSY);
  packed_view_init(&v);
  CHECK(packed_open(&v, packed.p, packed.n, UINT64_MAX, &err) == CODEC_OK);
  CHECK(v.h.lossy == PACKED_FLOAT16 && v.h.max_error > 0 && v.h.max_error < 1e-6);
  packed_view_clear(&v);
  /* every array but w unpacks exactly; w within the error */
  record_init(&a);
  record_init(&b);
  CHECK(record_parse(&a, rec.p, rec.n, &err) == CODEC_OK && record_parse(&b, back.p, back.n, &err) == CODEC_OK);
  CHECK(a.n == b.n);
  for (i = 0; i < a.n; i++) {
    if (a.items[i].key.n == 1 && a.items[i].key.p[0] == 'w') continue;
    CHECK(a.items[i].data.n == b.items[i].data.n &&
          memcmp(a.items[i].data.p, b.items[i].data.p, a.items[i].data.n) == 0);
  }
  record_clear(&a);
  record_clear(&b);
  buf_free(&rec);
  buf_free(&base);
  buf_free(&packed);
  buf_free(&back);
}

TEST(packed_record_dict) {
  static const char metrics[] = "{\"num-examples\": 120, \"loss\": 0.25}";
  recorddict_canon c[3];
  buf_t rec, base, rd, packed, back;
  codec_err err;
  codec_span name[3] = {
      {(const unsigned char *)"arrays", 6}, {(const unsigned char *)"metrics", 7}, {(const unsigned char *)"more", 4}};
  int i;
  buf_init(&rec, UINT64_MAX);
  buf_init(&base, UINT64_MAX);
  buf_init(&rd, UINT64_MAX);
  buf_init(&packed, UINT64_MAX);
  buf_init(&back, UINT64_MAX);
  model_pair(&rec, &base, 50000);
  for (i = 0; i < 3; i++) recorddict_canon_init(&c[i], UINT64_MAX);
  CHECK(recorddict_canon_array(&c[0], name[0], rec.p, rec.n, &err) == CODEC_OK);
  CHECK(recorddict_canon_json(&c[1], name[1], 0, (const unsigned char *)metrics, strlen(metrics), "metrics", &err) ==
        CODEC_OK);
  CHECK(recorddict_canon_array(&c[2], name[2], base.p, base.n, &err) == CODEC_OK);
  recorddict_canon_write_all(&rd, c, 3);
  for (i = 0; i < 3; i++) recorddict_canon_clear(&c[i]);
  CHECK(round_trip(PACKED_RECORDDICT, &rd, &base));
  CHECK(round_trip(PACKED_RECORDDICT, &rd, NULL));
  CHECK(pack(&packed, PACKED_RECORDDICT, &rd, &base, 0, &err) == CODEC_OK);
  CHECK(packed.n < rd.n / 2);
  /* a RecordDict is not an ArrayRecord, and the other way round */
  CHECK(pack(&back, PACKED_RECORD, &rd, NULL, 0, &err) == CODEC_CORRUPT);
  CHECK(pack(&back, PACKED_RECORDDICT, &rec, NULL, 0, &err) == CODEC_CORRUPT);
  buf_free(&rec);
  buf_free(&base);
  buf_free(&rd);
  buf_free(&packed);
  buf_free(&back);
}

TEST(packed_needs_the_right_base) {
  buf_t rec, base, other, packed, back;
  codec_err err;
  buf_init(&rec, UINT64_MAX);
  buf_init(&base, UINT64_MAX);
  buf_init(&other, UINT64_MAX);
  buf_init(&packed, UINT64_MAX);
  buf_init(&back, UINT64_MAX);
  model_pair(&rec, &base, 10000);
  buf_append(&other, base.p, base.n);
  other.p[other.n - 1] ^= 1; /* the same size, one bit off */
  CHECK(pack(&packed, PACKED_RECORD, &rec, &base, 0, &err) == CODEC_OK);
  CHECK(unpack(&back, &packed, NULL, &err) == CODEC_RANGE && strstr(err.msg, "needs its base") != NULL);
  CHECK(unpack(&back, &packed, &rec, &err) == CODEC_RANGE &&
        strstr(err.msg, "wrong base: packed against object") != NULL);
  CHECK(unpack(&back, &packed, &other, &err) == CODEC_RANGE && strstr(err.msg, "wrong base") != NULL);
  CHECK(back.n == 0);
  other.n = 5; /* not a record at all */
  CHECK(unpack(&back, &packed, &other, &err) == CODEC_RANGE && strstr(err.msg, "not a record") != NULL);
  /* packed without a base: a base given is not looked at */
  packed.n = 0;
  CHECK(pack(&packed, PACKED_RECORD, &rec, NULL, 0, &err) == CODEC_OK);
  CHECK(unpack(&back, &packed, &other, &err) == CODEC_OK && same(&back, &rec));
  buf_free(&rec);
  buf_free(&base);
  buf_free(&other);
  buf_free(&packed);
  buf_free(&back);
}

TEST(packed_readers_name_it) {
  buf_t rec, base, packed;
  record_t r;
  recorddict_t rd;
  codec_err err;
  buf_init(&rec, UINT64_MAX);
  buf_init(&base, UINT64_MAX);
  buf_init(&packed, UINT64_MAX);
  model_pair(&rec, &base, 1000);
  CHECK(pack(&packed, PACKED_RECORD, &rec, &base, 0, &err) == CODEC_OK);
  record_init(&r);
  recorddict_init(&rd);
  CHECK(record_parse(&r, packed.p, packed.n, &err) == CODEC_CORRUPT);
  CHECK(strstr(err.msg, "got a packed record (") == err.msg && strstr(err.msg, "against base ") &&
        strstr(err.msg, "unpack it with ar_unpack(packed, base) first"));
  CHECK(recorddict_parse(&rd, packed.p, packed.n, &err) == CODEC_CORRUPT);
  CHECK(strstr(err.msg, "not a record dict: unpack it with ar_unpack(packed, base), then wrap it") != NULL);
  CHECK(codec_sniff(packed.p, packed.n) == CODEC_SNIFF_PACKED);
  packed.p[7] = 9; /* another version */
  CHECK(record_parse(&r, packed.p, packed.n, &err) == CODEC_CORRUPT && strstr(err.msg, "a damaged packed record"));
  record_clear(&r);
  recorddict_clear(&rd);
  buf_free(&rec);
  buf_free(&base);
  buf_free(&packed);
}

/* Unpacking a damaged BLOB: an error with a message, or the very record. */
static int damaged_ok(const unsigned char *p, uint64_t n, const buf_t *base, const buf_t *rec) {
  buf_t back;
  codec_err err;
  int rc, ok;
  buf_init(&back, UINT64_MAX);
  err.msg[0] = 0;
  rc = packed_decode(&back, p, n, base ? base->p : NULL, base ? base->n : 0, &err);
  ok = rc == CODEC_OK
           ? same(&back, rec)
           : (rc == CODEC_CORRUPT || rc == CODEC_RANGE || rc == CODEC_UNSUPPORTED) && err.msg[0] && back.n == 0;
  buf_free(&back);
  return ok;
}

TEST(packed_truncations_and_changed_bytes) {
  buf_t rec, base, packed;
  unsigned char *copy;
  codec_err err;
  uint64_t i;
  int bit;
  buf_init(&rec, UINT64_MAX);
  buf_init(&base, UINT64_MAX);
  buf_init(&packed, UINT64_MAX);
  model_pair(&rec, &base, 3000);
  odd_items(&rec, 0);
  odd_items(&base, 2);
  CHECK(pack(&packed, PACKED_RECORD, &rec, &base, 0, &err) == CODEC_OK);
  copy = malloc(packed.n);
  for (i = 0; i < packed.n; i++) {
    memcpy(copy, packed.p, packed.n);
    CHECK(damaged_ok(copy, i, &base, &rec)); /* every prefix */
    for (bit = 0; bit < 8; bit += 3) {
      copy[i] ^= (unsigned char)(1 << bit);
      CHECK(damaged_ok(copy, packed.n, &base, &rec));
      copy[i] ^= (unsigned char)(1 << bit);
    }
  }
  free(copy);
  buf_free(&rec);
  buf_free(&base);
  buf_free(&packed);
}

TEST(packed_allocation_failures) {
  buf_t rec, base, packed, back, want;
  codec_err err;
  int k, lossy, done;
  buf_init(&rec, UINT64_MAX);
  buf_init(&base, UINT64_MAX);
  buf_init(&want, UINT64_MAX);
  model_pair(&rec, &base, 2000);
  odd_items(&rec, 0);
  odd_items(&base, 1);
  for (lossy = 0; lossy <= PACKED_FLOAT16; lossy++) {
    CHECK(pack(&want, PACKED_RECORD, &rec, &base, lossy, &err) == CODEC_OK);
    for (k = 0, done = 0; k < 200 && !done; k++) {
      int rc;
      buf_init(&packed, UINT64_MAX);
      buf_init(&back, UINT64_MAX);
      unit_fail_alloc_once(k);
      rc = pack(&packed, PACKED_RECORD, &rec, &base, lossy, &err);
      unit_fail_alloc_after(-1);
      CHECK(rc == CODEC_OK || rc == CODEC_NOMEM);
      if (rc == CODEC_OK) {
        CHECK(same(&packed, &want));
        unit_fail_alloc_once(k);
        rc = unpack(&back, &packed, &base, &err);
        unit_fail_alloc_after(-1);
        CHECK(rc == CODEC_OK || rc == CODEC_NOMEM);
        done = rc == CODEC_OK && !unit_alloc_failed();
      }
      buf_free(&packed);
      buf_free(&back);
    }
    CHECK(done);
    want.n = 0;
  }
  buf_free(&rec);
  buf_free(&base);
  buf_free(&want);
}
