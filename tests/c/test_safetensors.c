/* SPDX-License-Identifier: Apache-2.0 */
/*
** test_safetensors.c — the safetensors codec: files written byte-identical
** to the reference implementation's own test vectors, reading back, the
** raw (BF16/F8) items, conversions, and every validation error.
*/
#include <stdlib.h>

#include "codec/safetensors.h"
#include "unit.h"

/* A one-item record: key, dtype name, shape, stype, data. */
static void one_item(buf_t *out, const char *key, const char *dtype, const char *stype, int ndim, const int64_t *shape,
                     const void *data, uint64_t n, const unsigned char *head, uint64_t head_n) {
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
  spec.data_head.p = head;
  spec.data_head.n = head_n;
  spec.data.p = data;
  spec.data.n = n;
  record_write_item(out, &spec);
}

/* An item holding a numpy.ndarray .npy of little-endian float32. */
static void f32_item(buf_t *out, const char *key, int ndim, const int64_t *shape, const float *v, uint64_t count) {
  buf_t npy;
  unsigned char le[64];
  uint64_t k;
  dt_dtype d = {DT_FLOAT32, 0};
  for (k = 0; k < count; k++) {
    uint32_t bits;
    memcpy(&bits, &v[k], 4);
    le[4 * k] = (unsigned char)bits, le[4 * k + 1] = (unsigned char)(bits >> 8);
    le[4 * k + 2] = (unsigned char)(bits >> 16), le[4 * k + 3] = (unsigned char)(bits >> 24);
  }
  buf_init(&npy, UINT64_MAX);
  npy_write(&npy, d, ndim, shape, le, count * 4);
  one_item(out, key, "float32", RECORD_STYPE_NUMPY, ndim, shape, npy.p, npy.n, NULL, 0);
  buf_free(&npy);
}

static int write_st(const buf_t *recblob, const char *meta, buf_t *out, codec_err *err) {
  record_t rec;
  int rc;
  record_init(&rec);
  rc = record_parse(&rec, recblob->p ? recblob->p : (const unsigned char *)"", recblob->n, err);
  if (!rc) rc = st_from_record(&rec, meta, meta ? strlen(meta) : 0, out, err);
  record_clear(&rec);
  return rc;
}

TEST(st_writes_the_reference_test_vectors) {
  /* safetensors/src/tensor.rs: test_serialization, test_empty,
  ** test_serialization_forced_alignement */
  static const unsigned char serialization[] = {
      64,  0,  0,   0,  0,   0,  0,   0,   123, 34,  97,  116, 116, 110, 46,  48, 34, 58, 123, 34, 100, 116, 121, 112,
      101, 34, 58,  34, 70,  51, 50,  34,  44,  34,  115, 104, 97,  112, 101, 34, 58, 91, 49,  44, 50,  44,  51,  93,
      44,  34, 100, 97, 116, 97, 95,  111, 102, 102, 115, 101, 116, 115, 34,  58, 91, 48, 44,  50, 52,  93,  125, 125,
      0,   0,  0,   0,  0,   0,  128, 63,  0,   0,   0,   64,  0,   0,   64,  64, 0,  0,  128, 64, 0,   0,   160, 64};
  static const unsigned char empty[] = {8, 0, 0, 0, 0, 0, 0, 0, 123, 125, 32, 32, 32, 32, 32, 32};
  static const unsigned char empty_meta[] = {
      40,  0,  0,   0,   0,  0,   0,   0,   123, 34,  95,  95, 109, 101, 116, 97,  100, 97,  116, 97, 95, 95, 34, 58,
      123, 34, 102, 114, 97, 109, 101, 119, 111, 114, 107, 34, 58,  34,  112, 116, 34,  125, 125, 32, 32, 32, 32, 32};
  static const unsigned char aligned[] = {
      72,  0,   0,   0,  0,  0,  0,  0,  123, 34,  97, 116, 116, 110, 48,  34,  58,  123, 34,  100, 116,
      121, 112, 101, 34, 58, 34, 70, 51, 50,  34,  44, 34,  115, 104, 97,  112, 101, 34,  58,  91,  49,
      44,  49,  44,  50, 44, 51, 93, 44, 34,  100, 97, 116, 97,  95,  111, 102, 102, 115, 101, 116, 115,
      34,  58,  91,  48, 44, 50, 52, 93, 125, 125, 32, 32,  32,  32,  32,  32,  32,  0,   0,   0,   0,
      0,   0,   128, 63, 0,  0,  0,  64, 0,   0,   64, 64,  0,   0,   128, 64,  0,   0,   160, 64};
  static const float v[6] = {0, 1, 2, 3, 4, 5};
  static const int64_t s123[3] = {1, 2, 3}, s1123[4] = {1, 1, 2, 3};
  buf_t rec, out;
  codec_err err;
  buf_init(&rec, UINT64_MAX);
  buf_init(&out, UINT64_MAX);
  f32_item(&rec, "attn.0", 3, s123, v, 6);
  CHECK(write_st(&rec, NULL, &out, &err) == CODEC_OK);
  CHECK(out.n == sizeof(serialization) && memcmp(out.p, serialization, sizeof(serialization)) == 0);
  rec.n = out.n = 0;
  CHECK(write_st(&rec, NULL, &out, &err) == CODEC_OK);
  CHECK(out.n == sizeof(empty) && memcmp(out.p, empty, sizeof(empty)) == 0);
  out.n = 0;
  CHECK(write_st(&rec, "{\"framework\": \"pt\"}", &out, &err) == CODEC_OK);
  CHECK(out.n == sizeof(empty_meta) && memcmp(out.p, empty_meta, sizeof(empty_meta)) == 0);
  out.n = 0;
  f32_item(&rec, "attn0", 4, s1123, v, 6);
  CHECK(write_st(&rec, NULL, &out, &err) == CODEC_OK);
  CHECK(out.n == sizeof(aligned) && memcmp(out.p, aligned, sizeof(aligned)) == 0);
  buf_free(&rec);
  buf_free(&out);
}

/* Parse a file and turn it into a record (rc of the first failure). */
static int read_st(const void *file, uint64_t n, buf_t *rec, codec_err *err) {
  st_file f;
  int rc;
  st_file_init(&f);
  rc = st_parse(&f, file, n, err);
  if (!rc) rc = st_to_record(&f, rec, err);
  st_file_free(&f);
  return rc;
}

/* A file from a header text and n data bytes (0, 1, 2, ...). */
static void st_file_of(buf_t *out, const char *header, uint64_t n) {
  unsigned char len8[8];
  uint64_t k, h = strlen(header);
  for (k = 0; k < 8; k++) len8[k] = (unsigned char)(h >> (8 * k));
  buf_append(out, len8, 8);
  buf_append(out, header, h);
  for (k = 0; k < n; k++) buf_putc(out, (char)k);
}

TEST(st_reads_tensors_in_offset_order) {
  buf_t file, rec;
  record_t r;
  codec_err err;
  int64_t shape[RECORD_MAX_DIMS];
  buf_init(&file, UINT64_MAX);
  buf_init(&rec, UINT64_MAX);
  /* header order b, a, c; offsets order a, c, b; a BF16 raw tensor; an
  ** unknown field; escapes in a name */
  st_file_of(&file,
             "{\"b\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[10,12]},"
             "\"a\\u00e9\":{\"dtype\":\"I16\",\"shape\":[2,1],\"data_offsets\":[0,4],\"extra\":{\"x\":[1]}},"
             "\"c\":{\"dtype\":\"BF16\",\"shape\":[3],\"data_offsets\":[4,10]},"
             "\"__metadata__\":{\"format\":\"pt\"}}",
             12);
  CHECK(read_st(file.p, file.n, &rec, &err) == CODEC_OK);
  record_init(&r);
  CHECK(record_parse(&r, rec.p, rec.n, &err) == CODEC_OK);
  CHECK(r.n == 3);
  CHECK(r.items[0].key.n == 3 && memcmp(r.items[0].key.p, "a\xc3\xa9", 3) == 0);
  CHECK(r.items[0].dtype.n == 5 && memcmp(r.items[0].dtype.p, "int16", 5) == 0);
  CHECK(record_item_shape(&r.items[0], shape) == 2 && shape[0] == 2 && shape[1] == 1);
  CHECK(record_item_is_numpy(&r.items[0]));
  CHECK(memcmp(r.items[0].data.p + r.items[0].data.n - 4, "\x00\x01\x02\x03", 4) == 0);
  CHECK(r.items[1].key.n == 1 && r.items[1].key.p[0] == 'c');
  CHECK(r.items[1].stype.n == 11 && memcmp(r.items[1].stype.p, "safetensors", 11) == 0);
  CHECK(r.items[1].dtype.n == 4 && memcmp(r.items[1].dtype.p, "BF16", 4) == 0);
  CHECK(r.items[1].data.n == 6 && memcmp(r.items[1].data.p, "\x04\x05\x06\x07\x08\x09", 6) == 0);
  CHECK(r.items[2].key.p[0] == 'b' && memcmp(r.items[2].dtype.p, "uint8", 5) == 0);
  /* and back: the raw tensor keeps its dtype and bytes */
  {
    buf_t again, rec2;
    buf_init(&again, UINT64_MAX);
    buf_init(&rec2, UINT64_MAX);
    CHECK(st_from_record(&r, NULL, 0, &again, &err) == CODEC_OK);
    CHECK(strstr((const char *)again.p + 8, "\"c\":{\"dtype\":\"BF16\",\"shape\":[3],\"data_offsets\":[4,10]}") !=
          NULL);
    CHECK(read_st(again.p, again.n, &rec2, &err) == CODEC_OK);
    CHECK(rec2.n == rec.n && memcmp(rec2.p, rec.p, (size_t)rec.n) == 0);
    buf_free(&again);
    buf_free(&rec2);
  }
  record_clear(&r);
  buf_free(&file);
  buf_free(&rec);
}

/* Empty names, and an empty one first (its bytes live in a buffer that has
** not allocated yet: the sanitizer build checks no NULL + 0 is made). */
TEST(st_reads_empty_tensor_names) {
  buf_t file, rec;
  record_t r;
  codec_err err;
  buf_init(&file, UINT64_MAX);
  buf_init(&rec, UINT64_MAX);
  st_file_of(&file, "{\"\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}", 1);
  CHECK(read_st(file.p, file.n, &rec, &err) == CODEC_OK);
  record_init(&r);
  CHECK(record_parse(&r, rec.p, rec.n, &err) == CODEC_OK);
  CHECK(r.n == 1 && r.items[0].key.n == 0);
  record_clear(&r);
  file.n = 0;
  st_file_of(&file, "{\"\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]},\"\":{}}", 1);
  CHECK(read_st(file.p, file.n, &rec, &err) == CODEC_CORRUPT);
  CHECK_STR(err.msg, "safetensors header: duplicate tensor '' at byte 60");
  buf_free(&file);
  buf_free(&rec);
}

/* A dtype spelled with JSON escapes is the dtype the escapes spell. */
TEST(st_reads_escaped_dtype_names) {
  buf_t file, rec;
  record_t r;
  codec_err err;
  buf_init(&file, UINT64_MAX);
  buf_init(&rec, UINT64_MAX);
  st_file_of(&file,
             "{\"a\":{\"dtype\":\"F\\u0033\\u0032\",\"shape\":[1],\"data_offsets\":[0,4]},"
             "\"b\":{\"dtype\":\"\\u0042F16\",\"shape\":[1],\"data_offsets\":[4,6]}}",
             6);
  CHECK(read_st(file.p, file.n, &rec, &err) == CODEC_OK);
  record_init(&r);
  CHECK(record_parse(&r, rec.p, rec.n, &err) == CODEC_OK);
  CHECK(r.n == 2 && r.items[0].dtype.n == 7 && memcmp(r.items[0].dtype.p, "float32", 7) == 0);
  CHECK(r.items[1].dtype.n == 4 && memcmp(r.items[1].dtype.p, "BF16", 4) == 0);
  record_clear(&r);
  file.n = 0;
  st_file_of(&file, "{\"a\":{\"dtype\":\"F\\u00332\\u0000\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4);
  CHECK(read_st(file.p, file.n, &rec, &err) == CODEC_CORRUPT);
  CHECK_STR(err.msg, "safetensors header: unknown dtype 'F\\u00332\\u0000' at byte 22");
  buf_free(&file);
  buf_free(&rec);
}

TEST(st_rejects_malformed_files) {
  static const struct {
    const char *header;
    uint64_t data;
    const char *msg;
  } bad[] = {
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_"
       "offsets\":[4,8]}}",
       8, "tensor 'b' has data_offsets [4, 8], expected it to start at 8"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", 12,
       "tensor 'a' has data_offsets [4, 12], expected it to start at 0"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}", 8,
       "tensor 'a' needs 12 bytes for its shape and dtype F32, data_offsets give 8"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 9,
       "the tensors cover 8 bytes but the data section has 9"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,0]}}", 0,
       "tensor 'a' has data_offsets [8, 0], expected it to start at 0"},
      {"{\"a\":{\"dtype\":\"Q8\",\"shape\":[2],\"data_offsets\":[0,2]}}", 2,
       "safetensors header: unknown dtype 'Q8' at byte 22"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2]}}", 0, "tensor 'a' lacks \"data_offsets\""},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8,9]}}", 8,
       "safetensors header: data_offsets must hold two integers at byte 60"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[-2],\"data_offsets\":[0,8]}}", 8,
       "safetensors header: expected a non-negative integer at byte 37"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},\"a\":{\"dtype\":\"F32\",\"shape\":[0],\"data_"
       "offsets\":[8,8]}}",
       8, "safetensors header: duplicate tensor 'a' at byte 62"},
      {"{\"__metadata__\":{\"n\":1}}", 0, "safetensors header: __metadata__ must be an object of strings at byte 29"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296,4294967296],\"data_offsets\":[0,8]}}", 8,
       "shape of tensor 'a' overflows"},
      {"{\"a\":{\"dtype\":\"F4\",\"shape\":[3],\"data_offsets\":[0,1]}}", 1,
       "tensor 'a' of F4 does not fill whole bytes"},
      {"[]", 0, "safetensors header: expected an object at byte 8"},
      {"{\"a\": 1}", 0, "safetensors header: entry of tensor 'a' is not an object at byte 14"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}", 8,
       "safetensors header: unexpected end of JSON at byte 61"},
  };
  size_t k;
  for (k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
    buf_t file, rec;
    codec_err err;
    buf_init(&file, UINT64_MAX);
    buf_init(&rec, UINT64_MAX);
    st_file_of(&file, bad[k].header, bad[k].data);
    CHECK(read_st(file.p, file.n, &rec, &err) == CODEC_CORRUPT);
    if (strcmp(err.msg, bad[k].msg) != 0) printf("  case %zu: got '%s'\n", k, err.msg);
    CHECK_STR(err.msg, bad[k].msg);
    buf_free(&file);
    buf_free(&rec);
  }
}

TEST(st_rejects_bad_header_lengths) {
  unsigned char small[7] = {0}, big[16] = {0x01, 0xe1, 0xf5, 0x05, 0, 0, 0, 0},
                past[10] = {5, 0, 0, 0, 0, 0, 0, 0, '{', '}'};
  buf_t rec;
  codec_err err;
  buf_init(&rec, UINT64_MAX);
  CHECK(read_st(small, sizeof(small), &rec, &err) == CODEC_CORRUPT);
  CHECK_STR(err.msg, "file too short (7 bytes; the header length takes 8)");
  CHECK(read_st(big, sizeof(big), &rec, &err) == CODEC_CORRUPT); /* 100,000,001 */
  CHECK_STR(err.msg, "header length 100000001 exceeds the limit of 100000000 bytes");
  CHECK(read_st(past, sizeof(past), &rec, &err) == CODEC_CORRUPT);
  CHECK_STR(err.msg, "header length 5 runs past the end of the file (10 bytes)");
  past[0] = 2;
  CHECK(read_st(past, sizeof(past), &rec, &err) == CODEC_OK && rec.n == 0);
  buf_free(&rec);
}

TEST(st_writes_big_endian_and_fortran_arrays_little_endian_c_order) {
  /* >i4 [[1, 2, 3], [4, 5, 6]] stored in Fortran order: 1 4 2 5 3 6 */
  static const unsigned char be_f[24] = {0, 0, 0, 1, 0, 0, 0, 4, 0, 0, 0, 2, 0, 0, 0, 5, 0, 0, 0, 3, 0, 0, 0, 6};
  static const int64_t shape[2] = {2, 3};
  buf_t npy, recblob, out;
  record_t rec;
  codec_err err;
  dt_dtype d = {DT_INT32, 1};
  int k;
  buf_init(&npy, UINT64_MAX);
  buf_init(&recblob, UINT64_MAX);
  buf_init(&out, UINT64_MAX);
  npy_write_header(&npy, d, 2, shape, 1);
  buf_append(&npy, be_f, sizeof(be_f));
  one_item(&recblob, "m", ">i4", RECORD_STYPE_NUMPY, 2, shape, npy.p, npy.n, NULL, 0);
  record_init(&rec);
  CHECK(record_parse(&rec, recblob.p, recblob.n, &err) == CODEC_OK);
  CHECK(st_from_record(&rec, NULL, 0, &out, &err) == CODEC_OK);
  CHECK(out.n >= 24);
  for (k = 0; k < 6; k++) {
    const unsigned char *p = out.p + out.n - 24 + 4 * k;
    CHECK(p[0] == k + 1 && p[1] == 0 && p[2] == 0 && p[3] == 0);
  }
  CHECK(strstr((const char *)out.p + 8, "\"m\":{\"dtype\":\"I32\",\"shape\":[2,3],\"data_offsets\":[0,24]}") != NULL);
  record_clear(&rec);
  buf_free(&npy);
  buf_free(&recblob);
  buf_free(&out);
}

TEST(st_write_errors) {
  static const int64_t one[1] = {1};
  buf_t recblob, out;
  codec_err err;
  buf_init(&recblob, UINT64_MAX);
  buf_init(&out, UINT64_MAX);
  one_item(&recblob, "z", "complex128", "", 1, one, "0123456789abcdef", 16, NULL, 0);
  CHECK(write_st(&recblob, NULL, &out, &err) == CODEC_UNSUPPORTED);
  CHECK_STR(err.msg, "complex128 has no safetensors dtype (item 0, key 'z')");
  recblob.n = out.n = 0;
  one_item(&recblob, "__metadata__", "uint8", "", 1, one, "x", 1, NULL, 0);
  CHECK(write_st(&recblob, NULL, &out, &err) == CODEC_UNSUPPORTED);
  CHECK_STR(err.msg, "key '__metadata__' is reserved in safetensors (item 0)");
  recblob.n = out.n = 0;
  one_item(&recblob, "h", "BF16", "safetensors", 1, one, "xyz", 3, NULL, 0);
  CHECK(write_st(&recblob, NULL, &out, &err) == CODEC_CORRUPT);
  CHECK_STR(err.msg, "data has 3 bytes, shape and dtype BF16 need 2 (item 0, key 'h')");
  recblob.n = out.n = 0;
  one_item(&recblob, "h", "F32", "safetensors", 1, one, "xyzw", 4, NULL, 0);
  CHECK(write_st(&recblob, NULL, &out, &err) == CODEC_CORRUPT);
  CHECK_STR(err.msg, "stype 'safetensors' with dtype 'F32', which is not a raw safetensors dtype (item 0, key 'h')");
  recblob.n = out.n = 0;
  CHECK(write_st(&recblob, "{\"a\": 1}", &out, &err) == CODEC_CORRUPT);
  CHECK_STR(err.msg, "argument 2: metadata must be an object of strings at byte 6");
  CHECK(write_st(&recblob, "{\"a\": \"1\", \"a\": \"2\"}", &out, &err) == CODEC_CORRUPT);
  CHECK_STR(err.msg, "argument 2: metadata has a duplicate key at byte 11");
  CHECK(write_st(&recblob, "{} x", &out, &err) == CODEC_CORRUPT);
  CHECK_STR(err.msg, "argument 2: unexpected text after the JSON value at byte 3");
  buf_free(&recblob);
  buf_free(&out);
}

TEST(st_metadata_is_returned_compact) {
  buf_t file, meta;
  st_file f;
  codec_err err;
  buf_init(&file, UINT64_MAX);
  buf_init(&meta, UINT64_MAX);
  st_file_of(&file, "{ \"__metadata__\" : { \"format\" : \"pt\", \"note\": \"caf\\u00e9 \\\"x\\\"\" } }", 0);
  st_file_init(&f);
  CHECK(st_parse(&f, file.p, file.n, &err) == CODEC_OK && f.has_metadata);
  CHECK(st_metadata_json(&f, &meta, &err) == CODEC_OK);
  buf_putc(&meta, 0);
  CHECK_STR((const char *)meta.p, "{\"format\":\"pt\",\"note\":\"caf\xc3\xa9 \\\"x\\\"\"}");
  st_file_free(&f);
  buf_free(&file);
  buf_free(&meta);
}

/* Metadata written under allocation failures: whole, or CODEC_NOMEM, never
** a value cut short (a value over 64 bytes needs the scratch buffer, which
** starts at 64, to grow; the last value, or the next key would notice).
** One allocation fails at a time, as with SQLite,
** so the ones after it succeed. */
TEST(st_metadata_survives_allocation_failures) {
  static const char meta[] =
      "{\"\": \"\", \"k\": \"a value longer than sixty-four bytes, which makes the scratch buffer grow\"}";
  static const char want[] =
      "{\"\":\"\",\"k\":\"a value longer than sixty-four bytes, which makes the scratch buffer grow\"}";
  record_t empty;
  long k;
  int ok = 0;
  record_init(&empty);
  for (k = 0; k < 100; k++) {
    buf_t file, json;
    st_file f;
    codec_err err;
    int rc;
    st_file_init(&f);
    buf_init(&file, UINT64_MAX);
    buf_init(&json, UINT64_MAX);
    unit_fail_alloc_once(k);
    rc = st_from_record(&empty, meta, sizeof(meta) - 1, &file, &err);
    if (!rc) rc = st_parse(&f, file.p, file.n, &err);
    if (!rc) rc = st_metadata_json(&f, &json, &err);
    unit_fail_alloc_after(-1);
    CHECK(rc == CODEC_OK || rc == CODEC_NOMEM);
    if (rc == CODEC_OK) {
      CHECK(json.n == sizeof(want) - 1 && memcmp(json.p, want, sizeof(want) - 1) == 0);
      ok++;
    }
    st_file_free(&f);
    buf_free(&file);
    buf_free(&json);
  }
  CHECK(ok);
}

TEST(st_survives_allocation_failures) {
  uint64_t n;
  unsigned char *blob = unit_read_file("records/mlp_dict.pb", &n);
  long k;
  int ok = 0;
  CHECK(blob != NULL);
  for (k = 0; k < 200 && !ok; k++) {
    record_t rec, back;
    buf_t file, again;
    st_file f;
    codec_err err;
    int rc;
    record_init(&rec);
    record_init(&back);
    st_file_init(&f);
    buf_init(&file, UINT64_MAX);
    buf_init(&again, UINT64_MAX);
    unit_fail_alloc_after(k);
    rc = record_parse(&rec, blob, n, &err);
    if (!rc) rc = st_from_record(&rec, "{\"a\": \"b\", \"c\": \"d\"}", 20, &file, &err);
    if (!rc) rc = st_parse(&f, file.p, file.n, &err);
    if (!rc) rc = st_to_record(&f, &again, &err);
    unit_fail_alloc_after(-1);
    CHECK(rc == CODEC_OK || rc == CODEC_NOMEM);
    if (rc == CODEC_OK) {
      CHECK(again.n == n && memcmp(again.p, blob, (size_t)n) == 0);
      ok = 1;
    }
    st_file_free(&f);
    record_clear(&rec);
    record_clear(&back);
    buf_free(&file);
    buf_free(&again);
  }
  CHECK(ok);
  free(blob);
}
