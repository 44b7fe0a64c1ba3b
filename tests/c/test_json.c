/* SPDX-License-Identifier: Apache-2.0 */
/*
** test_json.c — JSON output (shortest float digits per precision, Python
** repr layout, NaN/Inf strings, nested lists, empty axes, complex pairs,
** string escapes) and input (nested numeric arrays with dtype inference,
** range checks, ragged and malformed text with byte offsets, shapes).
*/
#include <math.h>
#include <stdlib.h>

#include "codec/json.h"
#include "unit.h"

TEST(json_float_shortest_digits_per_precision) {
  static const struct {
    double v;
    int bits;
    const char *text;
  } rows[] = {
      {0.1, 64, "0.1"},
      {(double)0.1f, 32, "0.1"},
      {(double)0.1f, 64, "0.10000000149011612"},
      {0.0999755859375 /* half(0.1) */, 16, "0.1"},
      {1.0 / 3, 64, "0.3333333333333333"},
      {(double)(1.0f / 3), 32, "0.33333334"},
      {100, 64, "100.0"},
      {-0.0, 64, "-0.0"},
      {0.0, 16, "0.0"},
      {1e16, 64, "1e+16"},
      {9999999999999998.0, 64, "9999999999999998.0"},
      {1e-4, 64, "0.0001"},
      {1e-5, 64, "1e-05"},
      {1.5e-7, 64, "1.5e-07"},
      {123456789012345680000.0, 64, "1.2345678901234568e+20"},
      {1e300, 64, "1e+300"},
      {5e-324, 64, "5e-324"},
      {1.7976931348623157e308, 64, "1.7976931348623157e+308"},
      {2.2250738585072014e-308, 64, "2.2250738585072014e-308"},
      {(double)1e-45f, 32, "1e-45"},
      {(double)3.4028234663852886e38f, 32, "3.4028235e+38"},
      {(double)16777216.0f, 32, "16777216.0"},
      {(double)1e16f, 32, "1e+16"},
      {(double)1.17549435e-38f, 32, "1.1754944e-38"},
      {65504, 16, "65500.0"},    /* shortest digits padded with zeros, as NumPy's repr */
      {0.015625, 16, "0.01563"}, /* 2^-6: the nearest 4 digits (0.01562) miss, the other side reads back */
      {0x1p-14, 16, "6.104e-05"},
      {0x1p-126, 32, "1.1754944e-38"},
      {0x1p-1022, 64, "2.2250738585072014e-308"},
      {9.5, 16, "9.5"},
      {(double)123456789.0f, 32, "123456790.0"},
      {(double)1e10f, 32, "10000000000.0"},
      {(double)9.999999e15f, 32, "9999999000000000.0"},
      {(double)0.0001f, 32, "1e-04"}, /* 9.9999997e-05: below 1e-4, so exponent form */
      {(double)0.00011f, 32, "0.00011"},
      {1234.0, 16, "1234.0"},
      {-0.000123, 64, "-0.000123"},
      {-123.456, 64, "-123.456"},
      {1e15, 64, "1000000000000000.0"},
      {5.960464477539063e-08 /* smallest half */, 16, "6e-08"},
      {6.103515625e-05 /* smallest normal half */, 16, "6.104e-05"},
      {0.333251953125 /* half(1/3) */, 16, "0.3333"},
      {2048, 16, "2048.0"},
      {9.5, 64, "9.5"},
      {0.3, 64, "0.3"},
      {2.0 / 3, 32, "0.6666667"}, /* digits of float32(v) */
  };
  size_t k;
  for (k = 0; k < sizeof(rows) / sizeof(rows[0]); k++) {
    char out[40];
    json_format_float(out, rows[k].v, rows[k].bits);
    if (strcmp(out, rows[k].text)) printf("  %.17g/%d: %s\n", rows[k].v, rows[k].bits, out);
    CHECK_STR(out, rows[k].text);
  }
}

TEST(json_float_round_trips_at_each_precision) {
  uint64_t seed = 99;
  int k;
  for (k = 0; k < 100000; k++) {
    char out[40];
    uint64_t bits;
    double d;
    float f;
    seed = seed * UINT64_C(6364136223846793005) + UINT64_C(1442695040888963407);
    bits = seed;
    memcpy(&d, &bits, 8);
    if (d != d || isinf(d)) continue;
    json_format_float(out, d, 64);
    CHECK(strtod(out, NULL) == d);
    CHECK(strchr(out, '.') || strchr(out, 'e'));
    f = (float)ldexp((double)(seed >> 40), (int)(seed % 200) - 100);
    json_format_float(out, f, 32);
    CHECK((float)strtod(out, NULL) == f);
  }
  for (k = 0; k < 65536; k++) {
    char out[40];
    double h = dt_half_to_double((uint16_t)k);
    if (h != h || isinf(h)) continue;
    json_format_float(out, h, 16);
    CHECK(dt_double_to_half(strtod(out, NULL)) == (uint16_t)k || (h == 0 && strtod(out, NULL) == 0));
  }
}

static const char *put(buf_t *b, void (*fn)(buf_t *, const void *), const void *arg) {
  b->n = 0;
  fn(b, arg);
  buf_putc(b, 0);
  return b->rc ? "(error)" : (const char *)b->p;
}

static void put_nonfinite(buf_t *b, const void *arg) {
  (void)arg;
  json_put_float(b, NAN, 64);
  json_put_float(b, HUGE_VAL, 32);
  json_put_float(b, -HUGE_VAL, 16);
  json_put_float(b, 2.5, 16);
}

static void put_strings(buf_t *b, const void *arg) {
  (void)arg;
  json_put_string(b, (const unsigned char *)"a\"b\\c\n\r\t\x01\x1f\x7f\xc3\xa9/", 14);
  json_put_string(b, (const unsigned char *)"", 0);
  json_put_string(b, (const unsigned char *)"x\0y", 3);
}

TEST(json_output_scalars_and_strings) {
  buf_t b;
  char out[40];
  buf_init(&b, UINT64_MAX);
  CHECK_STR(put(&b, put_nonfinite, NULL), "\"NaN\"\"Infinity\"\"-Infinity\"2.5");
  CHECK_STR(put(&b, put_strings, NULL), "\"a\\\"b\\\\c\\n\\r\\t\\u0001\\u001f\x7f\xc3\xa9/\"\"\"\"x\\u0000y\"");
  json_format_float(out, NAN, 64);
  CHECK_STR(out, "nan");
  json_format_float(out, -HUGE_VAL, 64);
  CHECK_STR(out, "-inf");
  buf_free(&b);
}

/* json_put_array over a payload given as doubles converted to dtype d */
static const char *array_json(buf_t *b, dt_type t, int ndim, const int64_t *shape, const double *vals, size_t n) {
  unsigned char payload[256];
  dt_dtype d = dt_native(t);
  size_t k, sz = dt_size(t);
  for (k = 0; k < n; k++) {
    dt_value v;
    dt_value_double(&v, vals[k]);
    if (dt_kind(t) == 'i') dt_value_int(&v, (int64_t)vals[k]);
    dt_store(payload + k * sz, d, &v);
  }
  b->n = 0;
  json_put_array(b, payload, d, ndim, shape);
  buf_putc(b, 0);
  return (const char *)b->p;
}

TEST(json_output_nested_arrays) {
  static const double v6[6] = {1, 2, 3, 4, 5, 6};
  static const double sp[4] = {0.5, -0.0, NAN, -HUGE_VAL};
  int64_t s23[2] = {2, 3}, s32[2] = {3, 2}, s6[1] = {6}, s1111[4] = {1, 1, 1, 1}, s3[1] = {3};
  int64_t e203[3] = {2, 0, 3}, e0[1] = {0}, e320[3] = {3, 2, 0}, e02[2] = {0, 2}, s121[3] = {1, 2, 1};
  buf_t b;
  buf_init(&b, UINT64_MAX);
  CHECK_STR(array_json(&b, DT_INT64, 2, s23, v6, 6), "[[1,2,3],[4,5,6]]");
  CHECK_STR(array_json(&b, DT_INT8, 2, s32, v6, 6), "[[1,2],[3,4],[5,6]]");
  CHECK_STR(array_json(&b, DT_FLOAT32, 1, s6, v6, 6), "[1.0,2.0,3.0,4.0,5.0,6.0]");
  CHECK_STR(array_json(&b, DT_BOOL, 1, s3, sp, 3), "[true,false,true]");
  CHECK_STR(array_json(&b, DT_FLOAT64, 0, NULL, v6, 1), "1.0");
  CHECK_STR(array_json(&b, DT_INT32, 0, NULL, v6 + 4, 1), "5");
  CHECK_STR(array_json(&b, DT_FLOAT16, 4, s1111, v6, 1), "[[[[1.0]]]]");
  CHECK_STR(array_json(&b, DT_FLOAT64, 3, s121, v6, 2), "[[[1.0],[2.0]]]");
  CHECK_STR(array_json(&b, DT_FLOAT32, 1, s3, sp, 3), "[0.5,-0.0,\"NaN\"]");
  /* empty arrays: np.zeros(shape).tolist() */
  CHECK_STR(array_json(&b, DT_FLOAT64, 3, e203, v6, 0), "[[],[]]");
  CHECK_STR(array_json(&b, DT_FLOAT64, 1, e0, v6, 0), "[]");
  CHECK_STR(array_json(&b, DT_FLOAT64, 3, e320, v6, 0), "[[[],[]],[[],[]],[[],[]]]");
  CHECK_STR(array_json(&b, DT_FLOAT64, 2, e02, v6, 0), "[]");
  {
    /* complex as [re, im]; integer extremes exactly */
    unsigned char p[32];
    float c[4] = {1.5f, -2.0f, (float)NAN, 0.1f};
    int64_t i2[2] = {INT64_MIN, INT64_MAX};
    uint64_t u1 = UINT64_MAX;
    int64_t two[1] = {2}, one[1] = {1};
    memcpy(p, c, 16);
    b.n = 0;
    json_put_array(&b, p, dt_native(DT_COMPLEX64), 1, two);
    buf_putc(&b, 0);
    CHECK_STR((const char *)b.p, "[[1.5,-2.0],[\"NaN\",0.1]]");
    memcpy(p, i2, 16);
    b.n = 0;
    json_put_array(&b, p, dt_native(DT_INT64), 1, two);
    buf_putc(&b, 0);
    CHECK_STR((const char *)b.p, "[-9223372036854775808,9223372036854775807]");
    memcpy(p, &u1, 8);
    b.n = 0;
    json_put_array(&b, p, dt_native(DT_UINT64), 1, one);
    buf_putc(&b, 0);
    CHECK_STR((const char *)b.p, "[18446744073709551615]");
  }
  buf_free(&b);
}

TEST(json_output_respects_the_size_limit) {
  static const double v6[6] = {1, 2, 3, 4, 5, 6};
  int64_t s6[1] = {6}, huge[3] = {INT64_C(1) << 40, INT64_C(1) << 40, 0};
  buf_t b;
  buf_init(&b, 10);
  array_json(&b, DT_FLOAT64, 1, s6, v6, 6);
  CHECK(b.rc == CODEC_TOOBIG);
  buf_free(&b);
  /* an empty array with huge leading axes stops at the limit too */
  buf_init(&b, 1000);
  json_put_array(&b, (const unsigned char *)"", dt_native(DT_FLOAT32), 3, huge);
  CHECK(b.rc == CODEC_TOOBIG);
  buf_free(&b);
}

/* --- input ----------------------------------------------------------------- */

typedef struct parsed {
  int rc;
  dt_dtype d;
  int ndim;
  int64_t shape[NPY_MAX_DIMS];
  buf_t payload;
  codec_err err;
} parsed;

static void parse_json(parsed *p, const char *text, const char *dtype) {
  codec_err err;
  buf_init(&p->payload, UINT64_MAX);
  p->d = dt_native(DT_FLOAT64);
  if (dtype) CHECK(dt_parse(dtype, strlen(dtype), &p->d, &err) == CODEC_OK);
  p->err.msg[0] = 0;
  p->rc = json_parse_array(text, strlen(text), dtype != NULL, &p->d, &p->ndim, p->shape, &p->payload, &p->err);
}

/* The payload as text via json_put_array, for compact expectations. */
static const char *as_json(parsed *p, char *out, size_t cap) {
  buf_t b;
  buf_init(&b, UINT64_MAX);
  json_put_array(&b, p->payload.p ? p->payload.p : (const unsigned char *)"", p->d, p->ndim, p->shape);
  buf_putc(&b, 0);
  snprintf(out, cap, "%s", b.rc ? "(error)" : (const char *)b.p);
  buf_free(&b);
  return out;
}

TEST(json_parse_arrays_infer_dtype_like_np_array) {
  static const struct {
    const char *text, *dtype, *back;
  } rows[] = {
      {"[1, 2, 3]", "int64", "[1,2,3]"},
      {"[1, 2.5]", "float64", "[1.0,2.5]"},
      {"[true, false]", "bool", "[true,false]"},
      {"[true, 1]", "int64", "[1,1]"},
      {"[true, 1.5]", "float64", "[1.0,1.5]"},
      {"[]", "float64", "[]"},
      {"[[]]", "float64", "[[]]"},
      {"[[], []]", "float64", "[[],[]]"},
      {"7", "int64", "7"},
      {"-0", "int64", "0"},
      {"-0.0", "float64", "-0.0"},
      {"[\"NaN\", \"Infinity\", \"-Infinity\", null]", "float64", "[\"NaN\",\"Infinity\",\"-Infinity\",\"NaN\"]"},
      {"[\"nan\", \"inf\", \"-inf\", \"+Infinity\"]", "float64", "[\"NaN\",\"Infinity\",\"-Infinity\",\"Infinity\"]"},
      {"[9223372036854775807, -9223372036854775808]", "int64", "[9223372036854775807,-9223372036854775808]"},
      /* all integers beyond int64 but within uint64: uint64, as np.array */
      {"[9223372036854775808, 18446744073709551615]", "uint64", "[9223372036854775808,18446744073709551615]"},
      {"[true, 9223372036854775808]", "uint64", "[1,9223372036854775808]"},
      /* mixed with int64 values, or beyond uint64: float64 */
      {"[1, 9223372036854775808]", "float64", "[1.0,9.223372036854776e+18]"},
      {"[18446744073709551616]", "float64", "[1.8446744073709552e+19]"},
      {" [ [ 1 , 2 ] ,\n\t[ 3 , 4 ] ] ", "int64", "[[1,2],[3,4]]"},
      {"[[[[[[[[1]]]]]]]]", "int64", "[[[[[[[[1]]]]]]]]"},
      {"[1e2, 1E-2, 0.5e+1]", "float64", "[100.0,0.01,5.0]"},
  };
  size_t k;
  for (k = 0; k < sizeof(rows) / sizeof(rows[0]); k++) {
    parsed p;
    char out[200], name[DT_NAME_MAX];
    parse_json(&p, rows[k].text, NULL);
    if (p.rc) printf("  %s: %s\n", rows[k].text, p.err.msg);
    CHECK(p.rc == CODEC_OK);
    dt_name(p.d, name);
    if (strcmp(name, rows[k].dtype) || strcmp(as_json(&p, out, sizeof(out)), rows[k].back))
      printf("  %s: %s %s\n", rows[k].text, name, as_json(&p, out, sizeof(out)));
    CHECK_STR(name, rows[k].dtype);
    CHECK_STR(as_json(&p, out, sizeof(out)), rows[k].back);
    buf_free(&p.payload);
  }
}

TEST(json_parse_arrays_with_dtype) {
  static const struct {
    const char *text, *dtype, *back, *shape;
  } rows[] = {
      {"[1, 2]", "float32", "[1.0,2.0]", "[2]"},
      {"[0.1]", "float16", "[0.1]", "[1]"},
      {"[70000, -70000, 1e-8]", "float16", "[\"Infinity\",\"-Infinity\",0.0]", "[3]"},
      {"[1e39]", "float32", "[\"Infinity\"]", "[1]"},
      {"[1, 0, 2.5, -1, true, false]", "bool", "[true,false,true,true,true,false]", "[6]"},
      {"[\"NaN\"]", "bool", "[true]", "[1]"},
      {"[-128, 127]", "int8", "[-128,127]", "[2]"},
      {"[0, 255]", "uint8", "[0,255]", "[2]"},
      {"[-32768, 32767]", "<i2", "[-32768,32767]", "[2]"},
      {"[0, 65535]", ">u2", "[0,65535]", "[2]"},
      {"[-2147483648, 2147483647]", "int32", "[-2147483648,2147483647]", "[2]"},
      {"[0, 4294967295]", "uint32", "[0,4294967295]", "[2]"},
      {"[-9223372036854775808, 9223372036854775807]", ">i8", "[-9223372036854775808,9223372036854775807]", "[2]"},
      {"[0, 18446744073709551615]", "uint64", "[0,18446744073709551615]", "[2]"},
      {"[1.0, -2.0, 1e3, true]", "int16", "[1,-2,1000,1]", "[4]"},
      {"[[1, 2], [3.5, -4]]", "complex64", "[[1.0,2.0],[3.5,-4.0]]", "[2]"},
      {"[[1, 2], [\"NaN\", \"-Infinity\"]]", ">c16", "[[1.0,2.0],[\"NaN\",\"-Infinity\"]]", "[2]"},
      {"[[[1, 0]], [[0, 1]]]", "complex128", "[[[1.0,0.0]],[[0.0,1.0]]]", "[2,1]"},
      {"[1, 2]", "complex64", "[1.0,2.0]", "[]"},
      {"[]", "complex64", "[]", "[0]"},
      {"[[]]", "int8", "[[]]", "[1,0]"},
      {"[[true, false]]", "complex64", "[[1.0,0.0]]", "[1]"},
      {"5", "uint8", "5", "[]"},
  };
  size_t k;
  for (k = 0; k < sizeof(rows) / sizeof(rows[0]); k++) {
    parsed p;
    char out[200];
    buf_t sh;
    parse_json(&p, rows[k].text, rows[k].dtype);
    if (p.rc) printf("  %s %s: %s\n", rows[k].text, rows[k].dtype, p.err.msg);
    CHECK(p.rc == CODEC_OK);
    buf_init(&sh, UINT64_MAX);
    npy_shape_json(&sh, p.ndim, p.shape);
    buf_putc(&sh, 0);
    if (strcmp(as_json(&p, out, sizeof(out)), rows[k].back)) printf("  %s %s: %s\n", rows[k].text, rows[k].dtype, out);
    CHECK_STR(as_json(&p, out, sizeof(out)), rows[k].back);
    CHECK_STR((const char *)sh.p, rows[k].shape);
    buf_free(&sh);
    buf_free(&p.payload);
  }
}

TEST(json_parse_range_and_type_errors) {
  static const struct {
    const char *text, *dtype;
    int rc;
    const char *msg;
  } rows[] = {
      {"[-129]", "int8", CODEC_RANGE, "value at byte 1 is out of range for int8"},
      {"[1, 128]", "int8", CODEC_RANGE, "value at byte 4 is out of range for int8"},
      {"[256]", "uint8", CODEC_RANGE, "value at byte 1 is out of range for uint8"},
      {"[-1]", "uint8", CODEC_RANGE, "value at byte 1 is out of range for uint8"},
      {"[-1]", "uint64", CODEC_RANGE, "value at byte 1 is out of range for uint64"},
      {"[65536]", "uint16", CODEC_RANGE, "value at byte 1 is out of range for uint16"},
      {"[-32769]", "int16", CODEC_RANGE, "value at byte 1 is out of range for int16"},
      {"[2147483648]", "int32", CODEC_RANGE, "value at byte 1 is out of range for int32"},
      {"[4294967296]", "uint32", CODEC_RANGE, "value at byte 1 is out of range for uint32"},
      {"[9223372036854775808]", "int64", CODEC_RANGE, "value at byte 1 is out of range for int64"},
      {"[-9223372036854775809]", "int64", CODEC_RANGE, "value at byte 1 is out of range for int64"},
      {"[18446744073709551616]", "uint64", CODEC_RANGE, "value at byte 1 is out of range for uint64"},
      {"[1e20]", "int64", CODEC_RANGE, "value at byte 1 is out of range for int64"},
      {"[-1.0]", "uint32", CODEC_RANGE, "value at byte 1 is out of range for uint32"},
      {"[1.5]", "int32", CODEC_RANGE, "value at byte 1 is not an integer, dtype is int32"},
      {"[\"NaN\"]", "int8", CODEC_RANGE, "value at byte 1 is not an integer, dtype is int8"},
      {"[null]", "uint8", CODEC_RANGE, "value at byte 1 is not an integer, dtype is uint8"},
      {"[\"Infinity\"]", "int64", CODEC_RANGE, "value at byte 1 is not an integer, dtype is int64"},
      {"[[1, 2, 3]]", "complex64", CODEC_CORRUPT,
       "complex values must be [re, im] pairs (innermost lists of length 2)"},
      {"[1]", "complex64", CODEC_CORRUPT, "complex values must be [re, im] pairs (innermost lists of length 2)"},
      {"1", "complex128", CODEC_CORRUPT, "complex values must be [re, im] pairs (innermost lists of length 2)"},
  };
  size_t k;
  for (k = 0; k < sizeof(rows) / sizeof(rows[0]); k++) {
    parsed p;
    parse_json(&p, rows[k].text, rows[k].dtype);
    if (p.rc != rows[k].rc || strcmp(p.err.msg, rows[k].msg))
      printf("  %s %s: %d %s\n", rows[k].text, rows[k].dtype, p.rc, p.err.msg);
    CHECK(p.rc == rows[k].rc);
    CHECK_STR(p.err.msg, rows[k].msg);
    buf_free(&p.payload);
  }
}

TEST(json_parse_syntax_errors_with_offsets) {
  static const struct {
    const char *text, *msg;
  } rows[] = {
      {"", "unexpected end of JSON at byte 0"},
      {"   ", "unexpected end of JSON at byte 3"},
      {"[1, 2", "unexpected end of JSON at byte 5"},
      {"[1, 2,]", "unexpected ']' at byte 6"},
      {"[,1]", "unexpected ',' at byte 1"},
      {"[1,,2]", "unexpected ',' at byte 3"},
      {"]", "unexpected ']' at byte 0"},
      {",", "unexpected ',' at byte 0"},
      {"[1 2]", "expected ',' or ']' at byte 3"},
      {"[1][2]", "text after the JSON value at byte 3"},
      {"1 2", "text after the JSON value at byte 2"},
      {"[1, [2]]", "ragged nested lists (a list where a number belongs) at byte 4"},
      {"[[1], 2]", "ragged nested lists (a number where a list belongs) at byte 6"},
      {"[[1], [2, 3]]", "ragged nested lists (lengths differ) at byte 11"},
      {"[[1, 2], [3]]", "ragged nested lists (lengths differ) at byte 11"},
      {"[[], [1]]", "ragged nested lists (lengths differ) at byte 7"},
      {"[[1], []]", "ragged nested lists (lengths differ) at byte 7"},
      {"[[], [[]]]", "ragged nested lists (a list where a number belongs) at byte 6"},
      {"[\"a\"]", "unexpected string (only \"NaN\", \"Infinity\", \"-Infinity\" are numbers) at byte 1"},
      {"[nan]", "expected a number at byte 1"},
      {"[NaN]", "expected a number at byte 1"},
      {"[Infinity]", "expected a number at byte 1"},
      {"[+1]", "expected a number at byte 1"},
      {"[-]", "expected a number at byte 1"},
      {"[.5]", "expected a number at byte 1"},
      {"[01]", "number with a leading zero at byte 1"},
      {"[-01]", "number with a leading zero at byte 1"},
      {"[1.]", "expected a digit after '.' at byte 1"},
      {"[1e]", "expected a digit in the exponent at byte 1"},
      {"[1e+]", "expected a digit in the exponent at byte 1"},
      {"[tru]", "expected a number at byte 1"},
      {"{\"a\": 1}", "expected a number at byte 0"},
      {"[1]x", "text after the JSON value at byte 3"},
  };
  size_t k;
  for (k = 0; k < sizeof(rows) / sizeof(rows[0]); k++) {
    parsed p;
    parse_json(&p, rows[k].text, NULL);
    if (p.rc != CODEC_CORRUPT || strcmp(p.err.msg, rows[k].msg)) printf("  %s: %d %s\n", rows[k].text, p.rc, p.err.msg);
    CHECK(p.rc == CODEC_CORRUPT);
    CHECK_STR(p.err.msg, rows[k].msg);
    buf_free(&p.payload);
  }
}

TEST(json_parse_depth_limits) {
  char text[300];
  int depth;
  for (depth = 64; depth <= 66; depth++) {
    parsed p;
    int k, n = 0;
    for (k = 0; k < depth; k++) text[n++] = '[';
    text[n++] = '1';
    for (k = 0; k < depth; k++) text[n++] = ']';
    text[n] = 0;
    parse_json(&p, text, NULL);
    if (depth == 64)
      CHECK(p.rc == CODEC_OK && p.ndim == 64);
    else
      CHECK(p.rc == CODEC_CORRUPT);
    if (depth == 65) CHECK_STR(p.err.msg, "more than 64 dimensions");
    if (depth == 66) CHECK_STR(p.err.msg, "JSON nested too deeply at byte 65");
    buf_free(&p.payload);
  }
  {
    /* 65 levels with complex pairs innermost: 64 dimensions */
    parsed p;
    int k, n = 0;
    for (k = 0; k < 65; k++) text[n++] = '[';
    memcpy(text + n, "1,2", 3);
    n += 3;
    for (k = 0; k < 65; k++) text[n++] = ']';
    text[n] = 0;
    parse_json(&p, text, "complex64");
    CHECK(p.rc == CODEC_OK && p.ndim == 64);
    buf_free(&p.payload);
  }
  {
    parsed p;
    memset(text, '[', 200);
    text[200] = 0;
    parse_json(&p, text, NULL);
    CHECK(p.rc == CODEC_CORRUPT);
    CHECK(strstr(p.err.msg, "nested too deeply") != NULL);
    buf_free(&p.payload);
  }
}

TEST(json_parse_shapes) {
  static const struct {
    const char *text;
    int ndim;
    int64_t d0;
  } ok[] = {{"[2,3]", 2, 2}, {"[]", 0, 0},  {" [ 7 , 1 ] ", 2, 7},
            {"5", 1, 5},     {" 0 ", 1, 0}, {"[9223372036854775807]", 1, INT64_C(9223372036854775807)},
            {"[0]", 1, 0}};
  static const char *bad[] = {
      "[-1]",  "[2.0]", "[2,]", "abc",  "", "[2", "[[2]]", "-3", "[true]", "[\"2\"]", "[9223372036854775808]",
      "[1] x", "[,]",   "1e3",  "[1 2]"};
  size_t k;
  for (k = 0; k < sizeof(ok) / sizeof(ok[0]); k++) {
    int ndim;
    int64_t shape[NPY_MAX_DIMS];
    codec_err err;
    CHECK(json_parse_shape(ok[k].text, strlen(ok[k].text), &ndim, shape, &err) == CODEC_OK);
    CHECK(ndim == ok[k].ndim && (ndim == 0 || shape[0] == ok[k].d0));
  }
  for (k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
    int ndim;
    int64_t shape[NPY_MAX_DIMS];
    codec_err err;
    if (json_parse_shape(bad[k], strlen(bad[k]), &ndim, shape, &err) != CODEC_CORRUPT) printf("  %s\n", bad[k]);
    CHECK(json_parse_shape(bad[k], strlen(bad[k]), &ndim, shape, &err) == CODEC_CORRUPT);
    CHECK_STR(err.msg, "shape must be a JSON array of non-negative integers");
  }
  {
    char text[400];
    int ndim, k2, n = 0;
    int64_t shape[NPY_MAX_DIMS];
    codec_err err;
    text[n++] = '[';
    for (k2 = 0; k2 < 65; k2++) n += snprintf(text + n, sizeof(text) - (size_t)n, k2 ? ",1" : "1");
    text[n++] = ']';
    CHECK(json_parse_shape(text, (uint64_t)n, &ndim, shape, &err) == CODEC_CORRUPT);
    CHECK_STR(err.msg, "shape has more than 64 dimensions");
    /* 64 is fine */
    memcpy(text + n - 3, "]", 1);
    CHECK(json_parse_shape(text, (uint64_t)(n - 2), &ndim, shape, &err) == CODEC_OK && ndim == 64);
  }
}
