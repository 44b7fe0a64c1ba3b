/* SPDX-License-Identifier: Apache-2.0 */
/*
** test_npy.c — the .npy codec: header literals in every form NumPy accepts,
** versions and length fields, malformed headers and payloads (with the byte
** each message names), every truncation of every vector, header writing
** byte-identical to numpy.save, and the layout helpers.
*/
#include <stdlib.h>

#include "codec/npy.h"
#include "unit.h"

/* A .npy file: magic, version, header length field, header text, then
** `payload` zero bytes. Returns a malloc'd buffer (free with free()). */
static unsigned char *make_npy(int major, const char *header, uint64_t payload, uint64_t *n) {
  size_t hlen = strlen(header), len_size = major == 1 ? 2 : 4, k;
  unsigned char *p;
  *n = 8 + len_size + hlen + payload;
  p = calloc(1, (size_t)*n + 1);
  memcpy(p, "\x93NUMPY", 6);
  p[6] = (unsigned char)major;
  p[7] = 0;
  for (k = 0; k < len_size; k++) p[8 + k] = (unsigned char)(hlen >> (8 * k));
  memcpy(p + 8 + len_size, header, hlen);
  return p;
}

/* Parse a header; returns the codec rc and fills a/err. */
static int parse_header(int major, const char *header, uint64_t payload, npy_array *a, codec_err *err) {
  uint64_t n;
  unsigned char *p = make_npy(major, header, payload, &n);
  int rc = npy_parse(p, n, a, err);
  free(p);
  return rc;
}

static int is_f4_2x3(const npy_array *a) {
  return a->dtype.type == DT_FLOAT32 && !a->dtype.big && a->ndim == 2 && a->shape[0] == 2 && a->shape[1] == 3 &&
         a->numel == 6 && a->nbytes == 24 && !a->fortran_order;
}

TEST(npy_header_literal_variations_numpy_accepts) {
  /* Each is a header ast.literal_eval reads as the same dict. */
  static const char *variants[] = {
      "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",
      "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)}",
      "{'shape': (2, 3), 'fortran_order': False, 'descr': '<f4'}",
      "{'fortran_order': False, 'descr': '<f4', 'shape': (2, 3), }",
      "{'shape': (2, 3), 'descr': '<f4', 'fortran_order': False}",
      "{'fortran_order': False, 'shape': (2, 3), 'descr': '<f4'}",
      "{'descr':'<f4','fortran_order':False,'shape':(2,3)}",
      "  {  'descr' :\t'<f4' ,\n 'fortran_order'  : False ,\r\n 'shape' : ( 2 ,3 , ) , }   \n",
      "{\"descr\": \"<f4\", \"fortran_order\": False, \"shape\": (2, 3)}",
      "{'descr': \"<f4\", \"fortran_order\": False, 'shape': (2, 3,)}",
      "{'descr': 'float32', 'fortran_order': False, 'shape': (2, 3)}",
      "{'descr': 'f4', 'fortran_order': False, 'shape': (+2, 3)}",
      "{'descr': '<f4', 'fortran_order': False, 'shape': ((2, 3))}",
      "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 0_3)}",
      "{'descr': '<f4', 'fortran_order': True, 'fortran_order': False, 'shape': (2, 3)}",
      ("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"
       "                \n"),
  };
  size_t k;
  for (k = 0; k < sizeof(variants) / sizeof(variants[0]); k++) {
    npy_array a;
    codec_err err;
    int version;
    for (version = 1; version <= 3; version++) {
      int rc = parse_header(version, variants[k], 24, &a, &err);
      if (rc != CODEC_OK) printf("  v%d %s: %s\n", version, variants[k], err.msg);
      CHECK(rc == CODEC_OK);
      CHECK(is_f4_2x3(&a) && a.version == version);
    }
  }
}

TEST(npy_header_long_suffix_only_before_version_3) {
  static const char *h = "{'descr': '<i8', 'fortran_order': False, 'shape': (2L, 3L), }";
  npy_array a;
  codec_err err;
  CHECK(parse_header(1, h, 48, &a, &err) == CODEC_OK && a.ndim == 2 && a.shape[0] == 2 && a.shape[1] == 3);
  CHECK(parse_header(2, h, 48, &a, &err) == CODEC_OK && a.numel == 6);
  CHECK(parse_header(3, h, 48, &a, &err) == CODEC_CORRUPT);
  CHECK(strstr(err.msg, "cannot parse header") != NULL);
  /* lower-case l was never stripped by NumPy */
  CHECK(parse_header(1, "{'descr': '<i8', 'fortran_order': False, 'shape': (2l,)}", 16, &a, &err) == CODEC_CORRUPT);
}

TEST(npy_header_shapes) {
  static const struct {
    const char *shape;
    int ndim;
    int64_t d0;
  } rows[] = {{"()", 0, 0},       {"(5,)", 1, 5}, {"(0,)", 1, 0}, {"( 7 , )", 1, 7}, {"(1, 1, 1, 1, 1, 1, 1, 1)", 8, 1},
              {"(2, 0, 3)", 3, 2}};
  size_t k;
  for (k = 0; k < sizeof(rows) / sizeof(rows[0]); k++) {
    char h[200];
    npy_array a;
    codec_err err;
    snprintf(h, sizeof(h), "{'descr': '|u1', 'fortran_order': False, 'shape': %s, }", rows[k].shape);
    CHECK(parse_header(1, h, 7, &a, &err) == CODEC_OK);
    CHECK(a.ndim == rows[k].ndim);
    if (a.ndim) CHECK(a.shape[0] == rows[k].d0);
  }
}

TEST(npy_header_64_dims_ok_65_rejected) {
  char h[1024];
  int k, n;
  npy_array a;
  codec_err err;
  for (n = 64; n <= 65; n++) {
    size_t len = (size_t)snprintf(h, sizeof(h), "{'descr': '<f8', 'fortran_order': False, 'shape': (");
    for (k = 0; k < n; k++) len += (size_t)snprintf(h + len, sizeof(h) - len, "1, ");
    snprintf(h + len, sizeof(h) - len, "), }");
    if (n == 64) {
      CHECK(parse_header(1, h, 8, &a, &err) == CODEC_OK && a.ndim == 64 && a.numel == 1);
    } else {
      CHECK(parse_header(1, h, 8, &a, &err) == CODEC_UNSUPPORTED);
      CHECK_STR(err.msg, "shape has 65 dimensions (at most 64)");
    }
  }
}

TEST(npy_header_errors_name_the_problem) {
  static const struct {
    const char *header;
    int rc;
    const char *msg;
  } rows[] = {
      /* "(3)" is the integer 3 in Python, not a tuple */
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (3)}", CODEC_CORRUPT,
       "header: shape is not a tuple of integers"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': [2, 3]}", CODEC_CORRUPT,
       "header: shape is not a tuple of integers"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': 3}", CODEC_CORRUPT,
       "header: shape is not a tuple of integers"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2.0,)}", CODEC_CORRUPT,
       "header: shape is not a tuple of integers"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 'x')}", CODEC_CORRUPT,
       "header: shape is not a tuple of integers"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': ((2,), 3)}", CODEC_CORRUPT,
       "header: shape is not a tuple of integers"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (-1,)}", CODEC_CORRUPT, "negative dimension -1 in shape"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,)}", CODEC_CORRUPT,
       "shape dimension does not fit in 64 bits"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (9223372036854775808,)}", CODEC_CORRUPT,
       "shape dimension does not fit in 64 bits"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296)}", CODEC_CORRUPT,
       "shape has more than 2^64 elements"},
      {"{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967295)}", CODEC_CORRUPT,
       "shape has more bytes than fit in 64 bits"},
      {"{'descr': '<f4', 'fortran_order': 0, 'shape': (2,)}", CODEC_CORRUPT,
       "header: fortran_order is not True or False"},
      {"{'descr': '<f4', 'fortran_order': 'False', 'shape': (2,)}", CODEC_CORRUPT,
       "header: fortran_order is not True or False"},
      {"{'descr': '<f4', 'fortran_order': None, 'shape': (2,)}", CODEC_CORRUPT,
       "header: fortran_order is not True or False"},
      {"{'descr': '<f4', 'shape': (2,)}", CODEC_CORRUPT, "header has no 'fortran_order' key"},
      {"{'fortran_order': False, 'shape': (2,)}", CODEC_CORRUPT, "header has no 'descr' key"},
      {"{'descr': '<f4', 'fortran_order': False}", CODEC_CORRUPT, "header has no 'shape' key"},
      {"{}", CODEC_CORRUPT, "header has no 'descr' key"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'extra': 1}", CODEC_CORRUPT,
       "header has unexpected key 'extra'"},
      /* untrusted text in messages is quoted: always printable UTF-8 */
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), '\xff\x01x\xc3\xa9': 1}", CODEC_CORRUPT,
       "header has unexpected key '??x\xc3\xa9'"},
      {"{'descr': '<\xe9"
       "f4', 'fortran_order': False, 'shape': (2,)}",
       CODEC_UNSUPPORTED, "unsupported dtype '<?f4' (not a NumPy numeric dtype)"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 3: 1}", CODEC_CORRUPT,
       "header has a key that is not a string"},
      {"['descr', '<f4']", CODEC_CORRUPT, "header is not a dictionary (byte 10)"},
      {"", CODEC_CORRUPT, "header is not a dictionary (byte 10)"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,)} x", CODEC_CORRUPT,
       "cannot parse header: text after the dictionary at byte 66"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,)", CODEC_CORRUPT,
       "cannot parse header: unexpected end at byte 64"},
      {"{'descr': '<f4, 'fortran_order': False, 'shape': (2,)}", CODEC_CORRUPT,
       "cannot parse header: unexpected character at byte 27"},
      {"{'descr': '<f4' 'fortran_order': False, 'shape': (2,)}", CODEC_CORRUPT,
       "cannot parse header: unexpected character at byte 26"},
      {"{'descr': '<f4', 'fortran_order': false, 'shape': (2,)}", CODEC_CORRUPT,
       "cannot parse header: unexpected character at byte 44"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,),, }", CODEC_CORRUPT,
       "cannot parse header: unexpected character at byte 65"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2 3)}", CODEC_CORRUPT,
       "cannot parse header: unexpected character at byte 63"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (0x10,)}", CODEC_CORRUPT,
       "cannot parse header: unexpected character at byte 62"},
      /* structured dtypes, nested or not, are not numeric arrays */
      {"{'descr': [('a', '<f4'), ('b', '<i8')], 'fortran_order': False, 'shape': (2,)}", CODEC_UNSUPPORTED,
       "unsupported dtype: structured (record) dtypes are not numeric arrays"},
      {"{'descr': [('a', [('x', '<f4'), ('y', '<f4')])], 'fortran_order': False, 'shape': (2,)}", CODEC_UNSUPPORTED,
       "unsupported dtype: structured (record) dtypes are not numeric arrays"},
      {"{'descr': ('<f4', (2,)), 'fortran_order': False, 'shape': (2,)}", CODEC_UNSUPPORTED,
       "unsupported dtype: descr is not a type string"},
      {"{'descr': 4, 'fortran_order': False, 'shape': (2,)}", CODEC_UNSUPPORTED,
       "unsupported dtype: descr is not a type string"},
      {"{'descr': '|O', 'fortran_order': False, 'shape': (2,)}", CODEC_UNSUPPORTED,
       "unsupported dtype '|O' (object arrays hold pickled Python objects, which are never loaded)"},
      {"{'descr': '<U3', 'fortran_order': False, 'shape': (2,)}", CODEC_UNSUPPORTED,
       "unsupported dtype '<U3' (unicode strings are not numeric)"},
      {"{'descr': '<f16', 'fortran_order': False, 'shape': (2,)}", CODEC_UNSUPPORTED,
       "unsupported dtype '<f16' (long double has no portable layout)"},
  };
  size_t k;
  for (k = 0; k < sizeof(rows) / sizeof(rows[0]); k++) {
    npy_array a;
    codec_err err;
    int rc = parse_header(1, rows[k].header, 64, &a, &err);
    if (rc != rows[k].rc || strcmp(err.msg, rows[k].msg) != 0)
      printf("  %s\n    rc %d: %s\n", rows[k].header, rc, rc ? err.msg : "");
    CHECK(rc == rows[k].rc);
    CHECK_STR(err.msg, rows[k].msg);
  }
}

TEST(npy_header_nesting_is_bounded) {
  char h[400];
  size_t len = (size_t)snprintf(h, sizeof(h), "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': ");
  int k;
  npy_array a;
  codec_err err;
  for (k = 0; k < 100; k++) h[len++] = '[';
  h[len] = 0;
  CHECK(parse_header(1, h, 8, &a, &err) == CODEC_CORRUPT);
  CHECK(strstr(err.msg, "nested too deeply") != NULL);
}

TEST(npy_versions_and_length_fields) {
  static const char *h = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
  uint64_t n;
  unsigned char *p;
  npy_array a;
  codec_err err;
  int major;
  /* the same header behind a 2-byte (1.0) and a 4-byte (2.0, 3.0) length */
  for (major = 1; major <= 3; major++) {
    p = make_npy(major, h, 24, &n);
    CHECK(npy_parse(p, n, &a, &err) == CODEC_OK && a.version == major);
    CHECK(a.header_len == (major == 1 ? 10 : 12) + strlen(h));
    CHECK(a.data == p + a.header_len && a.trailing == 0);
    /* the length is little-endian: a byte order mix-up would run past the end */
    p[8] = 0, p[9] = (unsigned char)strlen(h);
    CHECK(npy_parse(p, n, &a, &err) == CODEC_CORRUPT);
    CHECK(strncmp(err.msg, "header truncated at byte", 24) == 0);
    free(p);
  }
  /* versions NumPy does not know */
  {
    static const unsigned char vers[][2] = {{0, 0}, {4, 0}, {1, 1}, {2, 1}, {255, 0}, {9, 0}};
    size_t k;
    for (k = 0; k < sizeof(vers) / sizeof(vers[0]); k++) {
      char want[64];
      p = make_npy(1, h, 24, &n);
      p[6] = vers[k][0], p[7] = vers[k][1];
      CHECK(npy_parse(p, n, &a, &err) == CODEC_UNSUPPORTED);
      snprintf(want, sizeof(want), "unsupported .npy format version %u.%u", vers[k][0], vers[k][1]);
      CHECK_STR(err.msg, want);
      free(p);
    }
  }
  /* a 4-byte length beyond 2^31 is still just "past the end" */
  p = make_npy(2, h, 24, &n);
  p[8] = 0xff, p[9] = 0xff, p[10] = 0xff, p[11] = 0xff;
  CHECK(npy_parse(p, n, &a, &err) == CODEC_CORRUPT);
  CHECK(strstr(err.msg, "header length 4294967295 needs 4294967307 bytes") != NULL);
  free(p);
}

TEST(npy_payload_length_checks) {
  static const char *h = "{'descr': '<i4', 'fortran_order': False, 'shape': (3,), }";
  npy_array a;
  codec_err err;
  CHECK(parse_header(1, h, 11, &a, &err) == CODEC_CORRUPT);
  CHECK(strstr(err.msg, "shape needs 12 payload bytes, blob has 11") != NULL);
  CHECK(parse_header(1, h, 12, &a, &err) == CODEC_OK && a.trailing == 0);
  /* bytes after the payload are ignored, as np.load ignores them */
  CHECK(parse_header(1, h, 20, &a, &err) == CODEC_OK && a.trailing == 8 && a.nbytes == 12);
  /* an empty array needs no payload */
  CHECK(parse_header(1, "{'descr': '<i4', 'fortran_order': False, 'shape': (4, 0), }", 0, &a, &err) == CODEC_OK);
  CHECK(a.numel == 0 && a.nbytes == 0);
}

TEST(npy_short_files) {
  static const struct {
    const char *bytes;
    size_t n;
    const char *msg;
  } rows[] = {
      {"", 0, "empty blob is not a .npy file"},
      {"\x93", 1, "truncated at byte 1: no .npy version"},
      {"\x93NUMPY", 6, "truncated at byte 6: no .npy version"},
      {"\x93NUMPY\x01", 7, "truncated at byte 7: no .npy version"},
      {"\x93NUMPY\x01\x00", 8, "truncated at byte 8: no header length"},
      {"\x93NUMPY\x01\x00\x05", 9, "truncated at byte 9: no header length"},
      {"\x93NUMPY\x02\x00\x05\x00\x00", 11, "truncated at byte 11: no header length"},
      {"\x93NUMPY\x01\x00\x05\x00{", 11, "header truncated at byte 11 (header length 5 needs 15 bytes)"},
      {"\x93NUMPX\x01\x00", 8, "not a .npy file (bad magic)"},
      {"PK\x03\x04", 4, "not a .npy file (bad magic)"},
      {"\x92", 1, "not a .npy file (bad magic)"},
  };
  size_t k;
  for (k = 0; k < sizeof(rows) / sizeof(rows[0]); k++) {
    npy_array a;
    codec_err err;
    CHECK(npy_parse((const unsigned char *)rows[k].bytes, rows[k].n, &a, &err) == CODEC_CORRUPT);
    if (strcmp(err.msg, rows[k].msg)) printf("  got %s\n", err.msg);
    CHECK_STR(err.msg, rows[k].msg);
  }
}

/* Every .npy vector made by numpy.save; `c_order_save` marks those whose
** bytes are what numpy.save writes for the array (all but the hand-made
** header versions). */
static const struct {
  const char *file;
  int c_order_save;
} vectors[] = {
    {"npy/dtype_be_c16.npy", 1},  {"npy/dtype_be_f4.npy", 1},    {"npy/dtype_be_f8.npy", 1},
    {"npy/dtype_be_i2.npy", 1},   {"npy/dtype_be_i4.npy", 1},    {"npy/dtype_be_i8.npy", 1},
    {"npy/dtype_be_u4.npy", 1},   {"npy/dtype_le_c16.npy", 1},   {"npy/dtype_le_c8.npy", 1},
    {"npy/dtype_le_f2.npy", 1},   {"npy/dtype_le_f4.npy", 1},    {"npy/dtype_le_f8.npy", 1},
    {"npy/dtype_le_i2.npy", 1},   {"npy/dtype_le_i4.npy", 1},    {"npy/dtype_le_i8.npy", 1},
    {"npy/dtype_le_u2.npy", 1},   {"npy/dtype_le_u4.npy", 1},    {"npy/dtype_le_u8.npy", 1},
    {"npy/dtype_na_b1.npy", 1},   {"npy/dtype_na_i1.npy", 1},    {"npy/dtype_na_u1.npy", 1},
    {"npy/empty_1d_f4.npy", 1},   {"npy/empty_2x0x3_i8.npy", 1}, {"npy/fortran_2d_f4.npy", 0},
    {"npy/fortran_3d_i2.npy", 0}, {"npy/layer_conv_f4.npy", 1},  {"npy/ndim_8_u1.npy", 1},
    {"npy/scalar_f8.npy", 1},     {"npy/scalar_i4.npy", 1},      {"npy/special_f2.npy", 1},
    {"npy/special_f4.npy", 1},    {"npy/v1_explicit_f8.npy", 1}, {"npy/v2_header_f4.npy", 0},
    {"npy/v3_header_i4.npy", 0},  {"npy/vector_1_f4.npy", 1},
};
#define NVECTORS (sizeof(vectors) / sizeof(vectors[0]))

TEST(npy_writer_byte_identical_to_numpy_save) {
  size_t k;
  for (k = 0; k < NVECTORS; k++) {
    uint64_t n;
    unsigned char *f = unit_read_file(vectors[k].file, &n);
    npy_array a;
    codec_err err;
    buf_t out;
    CHECK(f != NULL);
    CHECK(npy_parse(f, n, &a, &err) == CODEC_OK);
    buf_init(&out, UINT64_MAX);
    /* the header alone, in the file's own order (Fortran files included) */
    npy_write_header(&out, a.dtype, a.ndim, a.shape, a.fortran_order);
    CHECK(out.rc == CODEC_OK);
    if (vectors[k].c_order_save || a.fortran_order) {
      if (out.n != a.header_len || memcmp(out.p, f, (size_t)out.n) != 0) printf("  %s\n", vectors[k].file);
      CHECK(out.n == a.header_len && memcmp(out.p, f, (size_t)out.n) == 0);
      CHECK(npy_header_size(a.dtype, a.ndim, a.shape, a.fortran_order) == a.header_len);
      CHECK(a.header_len % 64 == 0 && f[a.header_len - 1] == '\n');
    } else {
      CHECK(a.version > 1); /* written by hand as 2.0/3.0; we write 1.0 */
      CHECK(out.n % 64 == 0 && out.p[6] == 1);
    }
    if (vectors[k].c_order_save && !a.fortran_order) {
      out.n = 0;
      npy_write(&out, a.dtype, a.ndim, a.shape, a.data, a.nbytes);
      CHECK(out.rc == CODEC_OK && out.n == n && memcmp(out.p, f, (size_t)n) == 0);
    }
    buf_free(&out);
    free(f);
  }
}

TEST(npy_writer_header_sizes_and_growth_axis) {
  /* Growth-axis spaces depend on the digits of the first (C) or last
  ** (Fortran) dimension; header stays 64-aligned for any shape. */
  int64_t shape[NPY_MAX_DIMS];
  int ndim, k;
  dt_dtype d = dt_native(DT_FLOAT64);
  for (ndim = 0; ndim <= NPY_MAX_DIMS; ndim++) {
    for (k = 0; k <= 1; k++) {
      buf_t out;
      npy_array a;
      codec_err err;
      int j;
      /* 19-digit dimensions, and a last 0 so the array needs no payload */
      for (j = 0; j < ndim; j++) shape[j] = j == ndim - 1 ? 0 : INT64_C(9223372036854775807) - j;
      buf_init(&out, UINT64_MAX);
      npy_write_header(&out, d, ndim, shape, k);
      CHECK(out.rc == CODEC_OK && out.n % 64 == 0 && out.p[out.n - 1] == '\n');
      CHECK(out.n == npy_header_size(d, ndim, shape, k));
      CHECK(out.p[6] == 1); /* even 64 dims of 19 digits fit version 1.0 */
      /* what we write, we read back */
      if (ndim > 0) {
        CHECK(npy_parse(out.p, out.n, &a, &err) == CODEC_OK);
        CHECK(a.ndim == ndim && a.fortran_order == k && a.numel == 0 && a.header_len == out.n);
        CHECK(memcmp(a.shape, shape, sizeof(int64_t) * (size_t)ndim) == 0);
      }
      buf_free(&out);
    }
  }
  /* exact text for a few shapes, checked against numpy.save output */
  {
    static const struct {
      int ndim;
      int64_t shape[3];
      int fortran;
      const char *text;
    } rows[] = {
        {0, {0}, 0, "{'descr': '<f8', 'fortran_order': False, 'shape': (), }"},
        {1, {3}, 0, "{'descr': '<f8', 'fortran_order': False, 'shape': (3,), }                    "},
        {2, {12345, 7}, 1, "{'descr': '<f8', 'fortran_order': True, 'shape': (12345, 7), }                    "},
        {2, {12345, 7}, 0, "{'descr': '<f8', 'fortran_order': False, 'shape': (12345, 7), }                "},
    };
    size_t r;
    for (r = 0; r < sizeof(rows) / sizeof(rows[0]); r++) {
      buf_t out;
      size_t tl = strlen(rows[r].text);
      buf_init(&out, UINT64_MAX);
      npy_write_header(&out, d, rows[r].ndim, rows[r].shape, rows[r].fortran);
      CHECK(out.rc == CODEC_OK && out.n >= 10 + tl);
      CHECK(memcmp(out.p, "\x93NUMPY\x01\x00", 8) == 0);
      CHECK((uint64_t)(out.p[8] + 256 * out.p[9]) == out.n - 10);
      CHECK(memcmp(out.p + 10, rows[r].text, tl) == 0);
      /* then only padding spaces and the final newline */
      {
        uint64_t i;
        for (i = 10 + tl; i + 1 < out.n; i++) CHECK(out.p[i] == ' ');
      }
      buf_free(&out);
    }
  }
}

TEST(npy_every_truncation_of_every_vector_is_an_error) {
  size_t k;
  for (k = 0; k < NVECTORS; k++) {
    uint64_t n, cut;
    unsigned char *f = unit_read_file(vectors[k].file, &n);
    npy_array a, full;
    codec_err err;
    CHECK(f != NULL);
    CHECK(npy_parse(f, n, &full, &err) == CODEC_OK);
    for (cut = 0; cut < n; cut++) {
      /* a copy of exactly `cut` bytes, so a read past it is caught by ASan */
      unsigned char *p = malloc(cut ? (size_t)cut : 1);
      int rc;
      memcpy(p, f, (size_t)cut);
      rc = npy_parse(p, cut, &a, &err);
      if (cut < full.header_len + full.nbytes) {
        CHECK(rc == CODEC_CORRUPT);
        CHECK(strstr(err.msg, "truncated") != NULL || strstr(err.msg, "empty blob") != NULL ||
              strstr(err.msg, "cannot parse header") != NULL);
      } else {
        CHECK(rc == CODEC_OK); /* only trailing bytes were cut */
      }
      free(p);
    }
    free(f);
  }
}

TEST(npy_fortran_layout_helpers) {
  uint64_t n, i;
  unsigned char *f = unit_read_file("npy/fortran_3d_i2.npy", &n);
  npy_array a;
  codec_err err;
  unsigned char c[48];
  CHECK(f != NULL);
  CHECK(npy_parse(f, n, &a, &err) == CODEC_OK && a.fortran_order && a.ndim == 3);
  /* np.arange(24).reshape(2,3,4) saved in Fortran order */
  npy_fortran_to_c(a.data, c, a.ndim, a.shape, 2);
  for (i = 0; i < 24; i++) {
    int16_t v;
    memcpy(&v, c + 2 * i, 2);
    CHECK(v == (int16_t)i);
    memcpy(&v, a.data + npy_element_offset(&a, i), 2);
    CHECK(v == (int16_t)i);
  }
  free(f);
  /* C order and 1-d arrays are their own layout */
  f = unit_read_file("npy/dtype_le_i2.npy", &n);
  CHECK(npy_parse(f, n, &a, &err) == CODEC_OK && !a.fortran_order);
  for (i = 0; i < a.numel; i++) CHECK(npy_element_offset(&a, i) == 2 * i);
  free(f);
}

TEST(npy_shape_numel_and_json) {
  int64_t s1[3] = {2, 0, 3}, s2[2] = {INT64_C(4294967296), INT64_C(4294967296)}, s3[3] = {s2[0], s2[1], 0};
  int64_t s4[2] = {3, -2};
  uint64_t numel;
  codec_err err;
  buf_t b;
  CHECK(npy_shape_numel(3, s1, &numel, &err) == CODEC_OK && numel == 0);
  CHECK(npy_shape_numel(0, s1, &numel, &err) == CODEC_OK && numel == 1);
  CHECK(npy_shape_numel(2, s2, &numel, &err) != CODEC_OK);
  CHECK_STR(err.msg, "shape has more than 2^64 elements");
  /* a zero dimension wins over an overflowing product */
  CHECK(npy_shape_numel(3, s3, &numel, &err) == CODEC_OK && numel == 0);
  CHECK(npy_shape_numel(2, s4, &numel, &err) == CODEC_CORRUPT);
  CHECK_STR(err.msg, "negative dimension -2 in shape");
  buf_init(&b, UINT64_MAX);
  npy_shape_json(&b, 3, s1);
  npy_shape_json(&b, 0, s1);
  npy_shape_json(&b, 1, s2);
  buf_putc(&b, 0);
  CHECK(b.rc == CODEC_OK);
  CHECK_STR((const char *)b.p, "[2,0,3][][4294967296]");
  buf_free(&b);
}
